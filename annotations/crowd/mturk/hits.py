"""HIT types and HITs: create (idempotently), find, extend, expire, add assignments."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from .client import (
    MAX_ANNOTATION_LENGTH,
    MAX_TOKEN_LENGTH,
    QUAL_APPROVAL_RATE,
    QUAL_LOCALE,
    QUAL_NUMBER_APPROVED,
    MTurkClient,
    MTurkError,
    call,
    format_amount,
    looks_like_token_reuse,
    paginate,
)
from .fees import DEFAULT_FEES, FeeSchedule, hit_cost

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
    return call(client, "create_hit_type", **config.create_hit_type_params())["HITTypeId"]


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
        response = call(
            client, "create_hit_with_hit_type",
            HITTypeId=hit_type_id, Question=question_xml, MaxAssignments=max_assignments,
            LifetimeInSeconds=lifetime_seconds, RequesterAnnotation=annotation,
            UniqueRequestToken=token,
        )
    except MTurkError as err:
        if not looks_like_token_reuse(err, token):
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
        call(client, "create_additional_assignments_for_hit", HITId=hit_id,
              NumberOfAdditionalAssignments=count, UniqueRequestToken=token)
    except MTurkError as err:
        if looks_like_token_reuse(err, token):
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
    return call(client, "get_hit", HITId=hit_id)["HIT"]


def iter_hits(client: MTurkClient) -> Iterator[dict[str, Any]]:
    """Every HIT of the account (not yet deleted), page by page."""
    return paginate(client, "list_hits", "HITs")


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
    call(client, "update_expiration_for_hit", HITId=hit_id,
          ExpireAt=datetime(2015, 1, 1, tzinfo=UTC))


def extend_hit(client: MTurkClient, hit_id: str, new_expiry: datetime) -> None:
    """Move the HIT's expiry to ``new_expiry`` (aware, in the future)."""
    if new_expiry.tzinfo is None:
        raise ValueError("new_expiry must be timezone-aware")
    if new_expiry <= datetime.now(UTC):
        raise ValueError("new_expiry is in the past; use expire_hit to expire")
    call(client, "update_expiration_for_hit", HITId=hit_id, ExpireAt=new_expiry)


