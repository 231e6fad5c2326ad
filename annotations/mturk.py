"""A thin requester layer over the boto3 ``mturk`` client.

Pure Python (no Django): the crowd app calls these functions with a client from
``make_client``. The code is the same for the sandbox, production and the test fake;
only the endpoint URL differs. Credentials come from the boto3 default chain
(environment, shared config, instance role), never from this code.

Every call that can create a HIT or move money carries a ``UniqueRequestToken``
derived from our own database row, and every "already done" answer from MTurk is
checked against MTurk's own state before it is treated as success. See
``docs/mturk.md`` for what was and was not verified against the real service.
"""

from __future__ import annotations

import hashlib
import re
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
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
_CENT = Decimal("0.01")

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


def _call(client: MTurkClient, method: str, **params: Any) -> dict[str, Any]:
    """One API call; every botocore failure becomes an MTurkError."""
    try:
        return getattr(client, method)(**params)
    except ClientError as exc:
        raise MTurkError.from_client_error(exc) from exc
    except BotoCoreError as exc:
        operation = client.meta.method_to_api_mapping.get(method, method)
        raise MTurkError(operation, type(exc).__name__, str(exc)) from exc


def _paginate(client: MTurkClient, method: str, result_key: str,
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


def _looks_like_token_reuse(err: MTurkError, token: str) -> bool:
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
    if value != value.quantize(_CENT):
        # Rounding money silently would pay something other than what was budgeted.
        raise ValueError(f"amount has sub-cent precision: {amount!r}")
    return f"{value.quantize(_CENT)}"


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


# --------------------------------------------------------------------------- fees


@dataclass(frozen=True)
class FeeSchedule:
    """MTurk's commission, as published on requester.mturk.com/pricing.

    20% of reward and bonus; HITs with 10 or more assignments pay another 20% on the
    reward (not the bonus); at least $0.01 per assignment and per bonus. Fees are
    rounded half-up to the cent. Configurable because Amazon has changed them before
    (2015) and Masters qualifications add 5%.
    """

    base_rate: Decimal = Decimal("0.20")
    large_hit_extra_rate: Decimal = Decimal("0.20")
    large_hit_threshold: int = 10
    minimum_fee: Decimal = Decimal("0.01")

    def assignment_fee(self, reward: Decimal, assignments: int) -> Decimal:
        rate = self.base_rate
        if assignments >= self.large_hit_threshold:
            rate += self.large_hit_extra_rate
        return self._fee(reward, rate)

    def bonus_fee(self, amount: Decimal) -> Decimal:
        return self._fee(amount, self.base_rate)

    def _fee(self, amount: Decimal, rate: Decimal) -> Decimal:
        fee = (Decimal(amount) * rate).quantize(_CENT, rounding=ROUND_HALF_UP)
        return max(fee, self.minimum_fee)


DEFAULT_FEES = FeeSchedule()


def hit_cost(
    reward: Decimal,
    assignments: int,
    fee_rate: Decimal | None = None,
    fees: FeeSchedule = DEFAULT_FEES,
) -> Decimal:
    """What posting one HIT can cost at most: (reward + fee) per assignment.

    ``fee_rate`` overrides the schedule's rate (e.g. Decimal("0.45") with Masters);
    the minimum fee per assignment still applies.
    """
    if assignments < 1:
        raise ValueError("assignments must be >= 1")
    reward = Decimal(format_amount(reward))
    if fee_rate is None:
        fee = fees.assignment_fee(reward, assignments)
    else:
        fee = max((reward * Decimal(fee_rate)).quantize(_CENT, ROUND_HALF_UP), fees.minimum_fee)
    return (reward + fee) * assignments


def bonus_cost(amount: Decimal, fees: FeeSchedule = DEFAULT_FEES) -> Decimal:
    """A bonus plus MTurk's fee on it."""
    amount = Decimal(format_amount(amount))
    return amount + fees.bonus_fee(amount)


# --------------------------------------------------------------------------- HIT types


@dataclass(frozen=True)
class HitTypeConfig:
    """Everything that defines a HIT type, plus the per-HIT defaults for it.

    Workers see title, description, keywords and reward. Qualification
    requirements: approval rate >= ``min_approval_rate`` percent, locale in
    ``countries``, at least ``min_approved_hits`` approved HITs, and not holding our
    block qualification. ``None`` or empty disables a requirement.
    """

    title: str
    description: str
    reward: Decimal
    keywords: tuple[str, ...] = ()
    assignment_duration_seconds: int = 30 * 60
    auto_approval_delay_seconds: int = 3 * 24 * 3600
    lifetime_seconds: int = 3 * 24 * 3600
    max_assignments: int = 3
    min_approval_rate: int | None = 95
    countries: tuple[str, ...] = ("US",)
    min_approved_hits: int | None = 100
    block_qualification_id: str | None = None
    # Who fails a requirement may still see the HIT but not take it; blocked workers
    # do not even see it.
    actions_guarded: str = "PreviewAndAccept"

    def __post_init__(self) -> None:
        format_amount(self.reward)
        if not self.title.strip() or not self.description.strip():
            raise ValueError("title and description are required")
        if len(self.title) > 128 or len(self.description) > 2000:
            raise ValueError("title is limited to 128 and description to 2000 characters")
        if len(",".join(self.keywords)) > 1000:
            raise ValueError("keywords are limited to 1000 characters")
        if not 30 <= self.assignment_duration_seconds <= 31_536_000:
            raise ValueError("assignment duration must be 30 s .. 365 days")
        if not 0 <= self.auto_approval_delay_seconds <= 2_592_000:
            raise ValueError("auto-approval delay must be 0 .. 30 days")
        if not 30 <= self.lifetime_seconds <= 31_536_000:
            raise ValueError("lifetime must be 30 s .. 365 days")
        if self.max_assignments < 1:
            raise ValueError("max_assignments must be >= 1")
        if self.min_approval_rate is not None and not 0 <= self.min_approval_rate <= 100:
            raise ValueError("min_approval_rate is a percentage")
        for country in self.countries:
            if not re.fullmatch(r"[A-Z]{2}", country):
                raise ValueError(f"countries are ISO 3166 alpha-2 codes: {country!r}")

    def qualification_requirements(self) -> list[dict[str, Any]]:
        reqs: list[dict[str, Any]] = []
        guard = self.actions_guarded
        if self.min_approval_rate is not None:
            reqs.append({"QualificationTypeId": QUAL_APPROVAL_RATE,
                         "Comparator": "GreaterThanOrEqualTo",
                         "IntegerValues": [self.min_approval_rate], "ActionsGuarded": guard})
        if self.countries:
            comparator = "EqualTo" if len(self.countries) == 1 else "In"
            reqs.append({"QualificationTypeId": QUAL_LOCALE, "Comparator": comparator,
                         "LocaleValues": [{"Country": c} for c in self.countries],
                         "ActionsGuarded": guard})
        if self.min_approved_hits is not None:
            reqs.append({"QualificationTypeId": QUAL_NUMBER_APPROVED,
                         "Comparator": "GreaterThanOrEqualTo",
                         "IntegerValues": [self.min_approved_hits], "ActionsGuarded": guard})
        if self.block_qualification_id:
            reqs.append({"QualificationTypeId": self.block_qualification_id,
                         "Comparator": "DoesNotExist",
                         "ActionsGuarded": "DiscoverPreviewAndAccept"})
        return reqs

    def create_hit_type_params(self) -> dict[str, Any]:
        params: dict[str, Any] = {
            "Title": self.title,
            "Description": self.description,
            "Reward": format_amount(self.reward),
            "AssignmentDurationInSeconds": self.assignment_duration_seconds,
            "AutoApprovalDelayInSeconds": self.auto_approval_delay_seconds,
            "QualificationRequirements": self.qualification_requirements(),
        }
        if self.keywords:
            params["Keywords"] = ",".join(self.keywords)
        return params

    def cost_per_hit(self, fees: FeeSchedule = DEFAULT_FEES) -> Decimal:
        return hit_cost(self.reward, self.max_assignments, fees=fees)


def ensure_hit_type(client: MTurkClient, config: HitTypeConfig) -> str:
    """The HIT type id for ``config``.

    CreateHITType is idempotent by content: registering the same properties again
    returns the existing HITTypeId, so no lookup table is needed on our side.
    """
    return _call(client, "create_hit_type", **config.create_hit_type_params())["HITTypeId"]


# --------------------------------------------------------------------------- HITs

_HIT_ID_RE = re.compile(r"\b[A-Z0-9]{20,64}\b")


def create_hit(
    client: MTurkClient,
    hit_type_id: str,
    question_xml: str,
    token: str,
    *,
    max_assignments: int,
    lifetime_seconds: int,
    annotation: str | None = None,
) -> str:
    """Create one HIT and return its id; a retry with the same token never duplicates.

    ``token`` must come from ``unique_request_token`` and be stored with our HIT row
    before this call. If MTurk says the token was already used (the HIT was created
    but we never saw the answer), the existing HIT is found — from the id in the
    error message when MTurk includes one, else by ``RequesterAnnotation`` (which
    defaults to the token) — and returned.
    """
    if not 1 <= len(token) <= MAX_TOKEN_LENGTH:
        raise ValueError("token must be 1..64 characters")
    annotation = token if annotation is None else annotation
    if len(annotation) > MAX_ANNOTATION_LENGTH:
        raise ValueError("annotation is limited to 255 characters")
    try:
        response = _call(
            client, "create_hit_with_hit_type",
            HITTypeId=hit_type_id, Question=question_xml, MaxAssignments=max_assignments,
            LifetimeInSeconds=lifetime_seconds, RequesterAnnotation=annotation,
            UniqueRequestToken=token,
        )
    except MTurkError as err:
        if not _looks_like_token_reuse(err, token):
            raise
        existing = _recover_hit(client, err, annotation)
        if existing is None:
            raise MTurkError(
                err.operation, err.code,
                f"{err.message} (token {token!r} was used before, but no HIT with "
                f"annotation {annotation!r} was found; not creating another)",
                turk_code=err.turk_code, request_id=err.request_id,
            ) from err
        return existing
    return response["HIT"]["HITId"]


def add_assignments(client: MTurkClient, hit_id: str, count: int, token: str) -> bool:
    """Raise a HIT's MaxAssignments by ``count`` once per token (ties need another answer).

    True if added now, False if MTurk says this token was already used. Callers verify
    the result against ``get_hit(...)["MaxAssignments"]`` rather than trusting either.
    MTurk refuses to take a HIT from under 10 assignments to 10 or more.
    """
    if count < 1:
        raise ValueError("count must be at least 1")
    if not 1 <= len(token) <= MAX_TOKEN_LENGTH:
        raise ValueError("token must be 1..64 characters")
    try:
        _call(client, "create_additional_assignments_for_hit", HITId=hit_id,
              NumberOfAdditionalAssignments=count, UniqueRequestToken=token)
    except MTurkError as err:
        if _looks_like_token_reuse(err, token):
            return False
        raise
    return True


def _recover_hit(client: MTurkClient, err: MTurkError, annotation: str) -> str | None:
    for candidate in _HIT_ID_RE.findall(err.message):
        try:
            hit = get_hit(client, candidate)
        except MTurkError:
            continue
        if hit.get("RequesterAnnotation") == annotation:
            return candidate
    return find_hit_by_annotation(client, annotation)


def get_hit(client: MTurkClient, hit_id: str) -> dict[str, Any]:
    return _call(client, "get_hit", HITId=hit_id)["HIT"]


def iter_hits(client: MTurkClient) -> Iterator[dict[str, Any]]:
    """Every HIT of the account (not yet deleted), page by page."""
    return _paginate(client, "list_hits", "HITs")


def find_hit_by_annotation(client: MTurkClient, annotation: str) -> str | None:
    """The HIT carrying ``annotation`` (our token), scanning ListHITs."""
    for hit in iter_hits(client):
        if hit.get("RequesterAnnotation") == annotation:
            return hit["HITId"]
    return None


def expire_hit(client: MTurkClient, hit_id: str) -> None:
    """Stop new workers from taking the HIT now; submitted work stays reviewable.

    MTurk expires a HIT immediately when ExpireAt is in the past.
    """
    _call(client, "update_expiration_for_hit", HITId=hit_id,
          ExpireAt=datetime(2015, 1, 1, tzinfo=UTC))


def extend_hit(client: MTurkClient, hit_id: str, new_expiry: datetime) -> None:
    """Move the HIT's expiry to ``new_expiry`` (aware, in the future)."""
    if new_expiry.tzinfo is None:
        raise ValueError("new_expiry must be timezone-aware")
    if new_expiry <= datetime.now(UTC):
        raise ValueError("new_expiry is in the past; use expire_hit to expire")
    _call(client, "update_expiration_for_hit", HITId=hit_id, ExpireAt=new_expiry)


# --------------------------------------------------------------------------- assignments


@dataclass(frozen=True)
class AssignmentRecord:
    """An assignment as MTurk reports it, with the answer already parsed."""

    assignment_id: str
    worker_id: str
    hit_id: str
    status: str
    submit_time: datetime | None
    answers: dict[str, list[str]] = field(default_factory=dict)
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_api(cls, data: dict[str, Any]) -> AssignmentRecord:
        answer = data.get("Answer") or ""
        return cls(
            assignment_id=data["AssignmentId"], worker_id=data["WorkerId"],
            hit_id=data["HITId"], status=data["AssignmentStatus"],
            submit_time=data.get("SubmitTime"),
            answers=parse_answer_xml(answer) if answer.strip() else {}, raw=data,
        )


def list_all_assignments(
    client: MTurkClient, hit_id: str, statuses: Iterable[str] = ASSIGNMENT_STATUSES,
) -> list[AssignmentRecord]:
    """Every assignment of ``hit_id`` in ``statuses``, across all pages."""
    wanted = list(statuses)
    unknown = set(wanted) - set(ASSIGNMENT_STATUSES)
    if unknown or not wanted:
        raise ValueError(f"statuses must be a non-empty subset of {ASSIGNMENT_STATUSES}")
    items = _paginate(client, "list_assignments_for_hit", "Assignments",
                      HITId=hit_id, AssignmentStatuses=wanted)
    return [AssignmentRecord.from_api(a) for a in items]


def get_assignment(client: MTurkClient, assignment_id: str) -> dict[str, Any]:
    return _call(client, "get_assignment", AssignmentId=assignment_id)["Assignment"]


def approve(
    client: MTurkClient,
    assignment_id: str,
    feedback: str | None = None,
    *,
    override_rejection: bool = False,
) -> bool:
    """Approve (pay) an assignment. True if approved now, False if it already was.

    An error from ApproveAssignment is checked with GetAssignment: if the assignment
    is Approved (by us earlier, by a lost-response retry, or by auto-approval) that is
    success, whatever the error text said.
    """
    params: dict[str, Any] = {"AssignmentId": assignment_id}
    if feedback:
        params["RequesterFeedback"] = feedback
    if override_rejection:
        params["OverrideRejection"] = True
    try:
        _call(client, "approve_assignment", **params)
    except MTurkError as err:
        if err.code == "RequestError" and _status_of(client, assignment_id) == "Approved":
            return False
        raise
    return True


def _status_of(client: MTurkClient, assignment_id: str) -> str | None:
    """The assignment's status, or None if MTurk will not tell (the original error wins)."""
    try:
        return get_assignment(client, assignment_id)["AssignmentStatus"]
    except MTurkError:
        return None


def reject(client: MTurkClient, assignment_id: str, reason: str) -> bool:
    """Reject an assignment; the worker sees ``reason``. False if already rejected.

    Rejections hurt a worker's approval rate, so only clear spam is rejected and a
    reason is mandatory.
    """
    if not reason or not reason.strip():
        raise ValueError("a rejection needs a reason the worker can read")
    try:
        _call(client, "reject_assignment", AssignmentId=assignment_id,
              RequesterFeedback=reason.strip())
    except MTurkError as err:
        if err.code == "RequestError" and _status_of(client, assignment_id) == "Rejected":
            return False
        raise
    return True


# --------------------------------------------------------------------------- money


def send_bonus(
    client: MTurkClient,
    worker_id: str,
    assignment_id: str,
    amount: Decimal,
    reason: str,
    token: str,
) -> bool:
    """Pay a bonus once. True if paid now, False if this token was already paid.

    ``token`` comes from ``unique_request_token("bonus", bonus_row_id)``. When MTurk
    refuses the token as already used, the payment is confirmed in
    ListBonusPayments before it counts as done.
    """
    if not reason or not reason.strip():
        raise ValueError("a bonus needs a reason; the worker sees it")
    if not 1 <= len(token) <= MAX_TOKEN_LENGTH:
        raise ValueError("token must be 1..64 characters")
    value = format_amount(amount)
    if Decimal(value) <= 0:
        raise ValueError("a bonus must be positive")
    try:
        _call(client, "send_bonus", WorkerId=worker_id, AssignmentId=assignment_id,
              BonusAmount=value, Reason=reason.strip(), UniqueRequestToken=token)
    except MTurkError as err:
        if not _looks_like_token_reuse(err, token):
            raise
        if _bonus_exists(client, worker_id, assignment_id, Decimal(value)):
            return False
        raise
    return True


def _bonus_exists(client: MTurkClient, worker_id: str, assignment_id: str,
                  amount: Decimal) -> bool:
    return any(
        bonus.get("WorkerId") == worker_id and Decimal(bonus.get("BonusAmount", "0")) == amount
        for bonus in _paginate(client, "list_bonus_payments", "BonusPayments",
                               AssignmentId=assignment_id)
    )


def get_balance(client: MTurkClient) -> Decimal:
    """The prepaid balance available for new HITs and bonuses."""
    return Decimal(_call(client, "get_account_balance")["AvailableBalance"])


# --------------------------------------------------------------------------- blocking


def create_block_qualification(
    client: MTurkClient,
    name: str,
    description: str = "Workers whose answers disagreed too often with the majority.",
) -> str:
    """Our "blocked" qualification type (HITs require that workers do NOT have it).

    Names are unique per requester, so an existing type of that name is reused.
    """
    try:
        response = _call(client, "create_qualification_type", Name=name,
                         Description=description, QualificationTypeStatus="Active")
        return response["QualificationType"]["QualificationTypeId"]
    except MTurkError as err:
        if err.code != "RequestError":
            raise
        existing = _find_qualification_type(client, name)
        if existing is None:
            raise
        return existing


def _find_qualification_type(client: MTurkClient, name: str) -> str | None:
    for qual in _paginate(client, "list_qualification_types", "QualificationTypes",
                          Query=name, MustBeRequestable=False, MustBeOwnedByCaller=True):
        if qual.get("Name") == name:
            return qual["QualificationTypeId"]
    return None


def block_worker(client: MTurkClient, worker_id: str, qual_id: str, reason: str) -> None:
    """Grant the block qualification, hiding our HITs from the worker.

    AssociateQualificationWithWorker has no reason field; ``reason`` is required so
    the caller records it (and it is sent to MTurk when the block is lifted).
    Unlike CreateWorkerBlock this is invisible to the worker and does not count
    against their standing on MTurk.
    """
    if not reason or not reason.strip():
        raise ValueError("blocking a worker needs a reason for our records")
    _call(client, "associate_qualification_with_worker", QualificationTypeId=qual_id,
          WorkerId=worker_id, IntegerValue=1, SendNotification=False)


def unblock_worker(client: MTurkClient, worker_id: str, qual_id: str, reason: str) -> None:
    """Revoke the block qualification; an error if the worker was not blocked."""
    _call(client, "disassociate_qualification_from_worker", QualificationTypeId=qual_id,
          WorkerId=worker_id, Reason=reason or "unblocked")


unblock = unblock_worker


def list_blocked_workers(client: MTurkClient, qual_id: str) -> list[str]:
    """Workers currently holding the block qualification."""
    return [q["WorkerId"] for q in _paginate(
        client, "list_workers_with_qualification_type", "Qualifications",
        QualificationTypeId=qual_id, Status="Granted")]


# --------------------------------------------------------------------------- answers


def parse_answer_xml(xml: str) -> dict[str, list[str]]:
    """QuestionFormAnswers XML (``Assignment.Answer``) as {field: [values]}.

    ExternalQuestion answers arrive as one FreeText per posted form field; a field
    posted twice, or a multi-select, gives several values in order.
    """
    if "<!DOCTYPE" in xml or "<!ENTITY" in xml:
        raise ValueError("answer XML must not contain a DTD")
    try:
        root = ET.fromstring(xml)
    except ET.ParseError as exc:
        raise ValueError(f"answer XML is not well-formed: {exc}") from exc
    if _local(root.tag) != "QuestionFormAnswers":
        raise ValueError(f"not a QuestionFormAnswers document: <{_local(root.tag)}>")
    out: dict[str, list[str]] = {}
    for answer in root:
        if _local(answer.tag) != "Answer":
            continue
        qid: str | None = None
        values: list[str] = []
        for child in answer.iter():
            name = _local(child.tag)
            if name == "QuestionIdentifier":
                qid = (child.text or "").strip()
            elif name in {"FreeText", "SelectionIdentifier", "OtherSelectionText",
                          "UploadedFileKey"}:
                values.append(child.text or "")
        if not qid:
            raise ValueError("an Answer without a QuestionIdentifier")
        out.setdefault(qid, []).extend(values)
    return out


def _local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]
