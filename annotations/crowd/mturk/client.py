"""Connecting to MTurk: endpoints, errors that tell an operator what to do, one call
with its error mapping and pagination, and the values every call shares (amounts,
ExternalQuestion XML, idempotency tokens)."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator
from decimal import Decimal, InvalidOperation
from typing import Any
from urllib.parse import urlsplit
from xml.sax.saxutils import escape

import boto3
from botocore.client import BaseClient
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError

SANDBOX_ENDPOINT = "https://mturk-requester-sandbox.us-east-1.amazonaws.com"
PRODUCTION_ENDPOINT = "https://mturk-requester.us-east-1.amazonaws.com"
SANDBOX_WORKER_URL = "https://workersandbox.mturk.com"
PRODUCTION_WORKER_URL = "https://worker.mturk.com"

EXTERNAL_QUESTION_NS = (
    "http://mechanicalturk.amazonaws.com/AWSMechanicalTurkDataSchemas/2006-07-14/"
    "ExternalQuestion.xsd"
)
ANSWER_NS = (
    "http://mechanicalturk.amazonaws.com/AWSMechanicalTurkDataSchemas/2005-10-01/"
    "QuestionFormAnswers.xsd"
)

# System qualification type ids (the same in sandbox and production).
QUAL_APPROVAL_RATE = "000000000000000000L0"
QUAL_LOCALE = "00000000000000000071"
QUAL_NUMBER_APPROVED = "00000000000000000040"

ASSIGNMENT_STATUSES = ("Submitted", "Approved", "Rejected")
MAX_TOKEN_LENGTH = 64  # IdempotencyToken max in the service model
MAX_ANNOTATION_LENGTH = 255  # RequesterAnnotation limit in the API reference
CENT = Decimal("0.01")

MTurkClient = BaseClient


# --------------------------------------------------------------------------- errors


class MTurkError(Exception):
    """A failed MTurk call, with what an operator needs to act on it."""

    def __init__(
        self,
        operation: str,
        code: str,
        message: str,
        *,
        turk_code: str | None = None,
        request_id: str | None = None,
        http_status: int | None = None,
    ) -> None:
        self.operation = operation
        self.code = code
        self.message = message
        self.turk_code = turk_code
        self.request_id = request_id
        self.http_status = http_status
        super().__init__(str(self))

    def __str__(self) -> str:
        code = f"{self.code}/{self.turk_code}" if self.turk_code else self.code
        text = f"MTurk {self.operation} failed ({code}): {self.message}"
        if self.request_id:
            text += f" [request id {self.request_id}]"
        hint = self.hint
        return f"{text} — {hint}" if hint else text

    @property
    def hint(self) -> str:
        """What to do about it, for the errors whose remedy is known."""
        low = self.message.lower()
        if self.code in {"UnrecognizedClientException", "InvalidClientTokenId",
                         "InvalidSignatureException", "NoCredentialsError",
                         "MissingAuthenticationTokenException"}:
            return "check AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY in the environment"
        if "insufficient funds" in low or "insufficientfunds" in (self.turk_code or "").lower():
            return "the prepaid MTurk balance is too low; add funds or lower the batch size"
        if self.code in {"ServiceFault", "ServiceUnavailable", "ThrottlingException"}:
            return "MTurk is overloaded or down; the call was retried and can be retried later"
        if self.code in {"ValidationException", "ParameterValidationError",
                         "ParamValidationError"}:
            return "a parameter was refused; this is a bug in the caller, not a transient fault"
        return ""

    @classmethod
    def from_client_error(cls, exc: ClientError) -> MTurkError:
        response: dict[str, Any] = getattr(exc, "response", {}) or {}
        error = response.get("Error", {})
        meta = response.get("ResponseMetadata", {})
        return cls(
            operation=getattr(exc, "operation_name", "?"),
            code=str(error.get("Code") or "Unknown"),
            message=str(error.get("Message") or ""),
            turk_code=response.get("TurkErrorCode") or error.get("TurkErrorCode"),
            request_id=meta.get("RequestId"),
            http_status=meta.get("HTTPStatusCode"),
        )


def call(client: MTurkClient, method: str, **params: Any) -> dict[str, Any]:
    """One API call; every botocore failure becomes an MTurkError."""
    try:
        return getattr(client, method)(**params)
    except ClientError as exc:
        raise MTurkError.from_client_error(exc) from exc
    except BotoCoreError as exc:
        operation = client.meta.method_to_api_mapping.get(method, method)
        raise MTurkError(operation, type(exc).__name__, str(exc)) from exc


def paginate(client: MTurkClient, method: str, result_key: str,
              **params: Any) -> Iterator[dict[str, Any]]:
    """Items of a paginated operation, following NextToken with botocore's paginator."""
    paginator = client.get_paginator(method)
    try:
        for page in paginator.paginate(**params, PaginationConfig={"PageSize": 100}):
            yield from page.get(result_key, [])
    except ClientError as exc:
        raise MTurkError.from_client_error(exc) from exc
    except BotoCoreError as exc:
        operation = client.meta.method_to_api_mapping.get(method, method)
        raise MTurkError(operation, type(exc).__name__, str(exc)) from exc


def looks_like_token_reuse(err: MTurkError, token: str) -> bool:
    """Whether an error is MTurk refusing a UniqueRequestToken it has already seen.

    The documented forms: CreateHIT* answers ``AWS.MechanicalTurk.HitAlreadyExists``
    with the HIT id in the message; other operations answer an error whose message
    contains the request id; observed in the wild: ``The idempotency token "..." has
    already been processed.`` We accept any of these and then verify against
    MTurk's own state, so a misread message can never be taken as success.
    """
    if err.code != "RequestError":
        return False
    low = err.message.lower()
    return (
        "alreadyexists" in (err.turk_code or "").lower()
        or token.lower() in low
        or "already been processed" in low
        or "idempotency" in low
        or "already exists" in low
    )


# --------------------------------------------------------------------------- client


def make_client(
    endpoint_url: str,
    region: str = "us-east-1",
    max_attempts: int = 8,
    retry_mode: str = "standard",
    session: boto3.session.Session | None = None,
) -> MTurkClient:
    """A boto3 ``mturk`` client for ``endpoint_url`` with botocore's own retries.

    ``standard`` retries throttling (``ThrottlingException``) with exponential
    backoff and jitter and transient faults (HTTP 500/502/503/504 such as
    ``ServiceFault`` and ``ServiceUnavailable``); ``adaptive`` adds client-side rate
    limiting, worth it when many workers share one account. ``max_attempts`` is the
    total number of requests per call, first one included. No credentials here.
    """
    if retry_mode not in {"standard", "adaptive"}:
        raise ValueError("retry_mode must be 'standard' or 'adaptive'")
    if max_attempts < 1:
        raise ValueError("max_attempts must be at least 1")
    # ``total_max_attempts`` counts the first try; botocore's ``max_attempts`` key
    # counts retries only, which would make "8 attempts" mean 9 requests.
    config = Config(
        region_name=region,
        retries={"mode": retry_mode, "total_max_attempts": max_attempts},
        connect_timeout=10,
        read_timeout=30,
    )
    # A fresh session by default: boto3 sessions are not safe to share across threads.
    session = session or boto3.session.Session()
    return session.client("mturk", endpoint_url=endpoint_url, config=config)


# --------------------------------------------------------------------------- values


def format_amount(amount: Decimal | int | str) -> str:
    """Dollars as MTurk's CurrencyAmount string ("0.15"); refuses sub-cent amounts."""
    try:
        value = Decimal(str(amount))
    except InvalidOperation as exc:
        raise ValueError(f"not an amount: {amount!r}") from exc
    if not value.is_finite() or value < 0:
        raise ValueError(f"amount must be a non-negative number of dollars: {amount!r}")
    if value != value.quantize(CENT):
        # Rounding money silently would pay something other than what was budgeted.
        raise ValueError(f"amount has sub-cent precision: {amount!r}")
    return f"{value.quantize(CENT)}"


def external_question_xml(url: str, frame_height: int) -> str:
    """The ExternalQuestion document that frames our task page inside MTurk.

    MTurk only frames HTTPS pages; plain http is allowed for localhost so a developer
    can point the sandbox preview at a local server through a tunnel-less setup.
    """
    parts = urlsplit(url)
    local = parts.hostname in {"localhost", "127.0.0.1", "::1"}
    if parts.scheme != "https" and not (parts.scheme == "http" and local):
        raise ValueError(f"ExternalQuestion URL must be https (except localhost): {url!r}")
    if not parts.netloc:
        raise ValueError(f"ExternalQuestion URL has no host: {url!r}")
    if not isinstance(frame_height, int) or isinstance(frame_height, bool):
        raise TypeError("frame_height must be an int")
    if frame_height < 0:
        raise ValueError("frame_height must be >= 0 (0 lets MTurk size the frame)")
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        f'<ExternalQuestion xmlns="{EXTERNAL_QUESTION_NS}">'
        f"<ExternalURL>{escape(url)}</ExternalURL>"
        f"<FrameHeight>{frame_height}</FrameHeight>"
        "</ExternalQuestion>"
    )


_KIND_RE = re.compile(r"^[a-z][a-z0-9-]{0,15}$")


def unique_request_token(kind: str, our_id: int | str, namespace: str = "kbpo") -> str:
    """A deterministic UniqueRequestToken for one of our rows (<= 64 chars).

    The same row always yields the same token, so a task that is retried after a
    crash or a lost response sends the same token and MTurk refuses to act twice.
    ``namespace`` keeps deployments that share one MTurk account (staging and
    production databases both have a HIT row 1) from colliding.
    """
    if not _KIND_RE.match(kind):
        raise ValueError(f"kind must be short lowercase ascii: {kind!r}")
    if not re.fullmatch(r"[A-Za-z0-9-]{1,24}", namespace):
        raise ValueError(f"namespace must be 1-24 ascii letters, digits or '-': {namespace!r}")
    ident = str(our_id)
    if not ident:
        raise ValueError("our_id must not be empty")
    token = f"{namespace}-{kind}-{ident}"
    if len(token) <= MAX_TOKEN_LENGTH and re.fullmatch(r"[A-Za-z0-9._-]+", ident):
        return token
    digest = hashlib.sha256(ident.encode()).hexdigest()[:32]
    return f"{namespace}-{kind}-h{digest}"
