"""Crowd backends: where a HIT goes once its rows are stored.

`simulated` and `local` HITs are "posted" by opening them on our own site (the
simulated crowd and in-house annotators answer them through the intake); `mturk`
HITs are created on Mechanical Turk through `annotations.crowd.mturk`.

Every posting first reserves the HIT's full cost under the budget lock
(`budget.check_and_lock`); an MTurk HIT also gets its `UniqueRequestToken` stored in
that same transaction, before MTurk is called, and its HIT id after. A retried post
therefore reuses the token and finds the HIT MTurk already made: never a second one.
"""

from __future__ import annotations

import datetime as dt
import logging
import threading
from decimal import Decimal

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from annotations.models import Backend, BudgetSettings, CrowdWorker, Hit, HitState
from kbpo.core.schemas import TAC_KBP

from . import mturk
from .budget import BudgetExceeded, check_and_lock

logger = logging.getLogger(__name__)


class ProductionNotAllowed(BudgetExceeded):
    """Production MTurk was asked for without the settings that allow real spending."""


class InsufficientBalance(BudgetExceeded):
    """The prepaid MTurk balance cannot cover the HIT."""


def task_path(hit: Hit) -> str:
    """The path of a HIT's task page (also the MTurk ExternalQuestion target): keyed by
    the HIT's random `url_key`, never its id, so nobody can walk the task pages."""
    return f"/annotate/hit/{hit.url_key}/"


def task_url(hit: Hit) -> str:
    """Absolute URL of a HIT's task page on the public site."""
    return settings.KBPO_PUBLIC_URL.rstrip("/") + task_path(hit)


def current_backend() -> str:
    return settings.KBPO_CROWD_BACKEND


def open_on_site(hit: Hit) -> Hit:
    """Post a simulated or local HIT: it becomes answerable on our own site."""
    with transaction.atomic():
        locked = Hit.objects.select_for_update().get(pk=hit.pk)
        if locked.state == HitState.PENDING:
            locked.state = HitState.POSTED
            locked.posted_at = timezone.now()
            locked.save(update_fields=["state", "posted_at"])
    return locked


def post_hit(hit: Hit) -> Hit:
    """Make a pending HIT available to its crowd (idempotent).

    Raises `BudgetExceeded` (with the reason) when the HIT's cost does not fit under
    the caps, `mturk.MTurkError` when MTurk refuses; the HIT then stays pending with
    the reason in `post_error`, and the periodic re-drive tries again.
    """
    if hit.backend in (Backend.SIMULATED, Backend.LOCAL):
        return _post_on_site(hit)
    if hit.backend == Backend.MTURK:
        return _post_mturk(hit)
    raise ValueError(f"HIT {hit.pk}: unknown backend {hit.backend!r}")


def _note(hit_id: int, error: str) -> None:
    Hit.objects.filter(pk=hit_id).update(post_error=error[:5000])


def _post_on_site(hit: Hit) -> Hit:
    try:
        with transaction.atomic():
            locked = Hit.objects.select_for_update().get(pk=hit.pk)
            if locked.state != HitState.PENDING:
                return locked
            check_and_lock(locked.cost_estimate, locked.submission, f"HIT {locked.pk}")
            locked = open_on_site(locked)
            if locked.post_error:
                locked.post_error = ""
                locked.save(update_fields=["post_error"])
            return locked
    except BudgetExceeded as exc:
        _note(hit.pk, f"Held: {exc}")
        raise


# --------------------------------------------------------------------------- MTurk

_clients: dict[tuple[str, int], mturk.MTurkClient] = {}
_block_quals: dict[tuple[str, str], str] = {}
_lock = threading.Lock()


def check_production() -> None:
    """Production MTurk needs MTURK_USE_PRODUCTION *and* a positive global budget."""
    endpoint = settings.MTURK_ENDPOINT_URL.rstrip("/")
    if endpoint == mturk.PRODUCTION_ENDPOINT and not settings.MTURK_USE_PRODUCTION:
        raise ProductionNotAllowed(
            "MTURK_ENDPOINT_URL points at production MTurk but MTURK_USE_PRODUCTION is not "
            "set; set it to 1 to spend real money, or use the sandbox.")
    if settings.MTURK_USE_PRODUCTION and BudgetSettings.current().cap_usd <= 0:
        raise ProductionNotAllowed(
            "MTURK_USE_PRODUCTION is set but the global budget is $0; set a positive cap "
            "under Budget settings in the admin (or KBPO_BUDGET_GLOBAL_USD) first.")


def client() -> mturk.MTurkClient:
    """The requester client for the configured endpoint (one per process and thread)."""
    key = (settings.MTURK_ENDPOINT_URL, threading.get_ident())
    with _lock:
        if key not in _clients:
            _clients[key] = mturk.make_client(
                settings.MTURK_ENDPOINT_URL, region=settings.AWS_DEFAULT_REGION,
                max_attempts=settings.KBPO_MTURK_MAX_ATTEMPTS)
        return _clients[key]


def block_qualification_id() -> str:
    """Our "blocked" qualification type: configured, or created (reused) by name."""
    if settings.KBPO_MTURK_BLOCK_QUALIFICATION_ID:
        return settings.KBPO_MTURK_BLOCK_QUALIFICATION_ID
    key = (settings.MTURK_ENDPOINT_URL, settings.KBPO_MTURK_BLOCK_QUALIFICATION_NAME)
    if key not in _block_quals:
        _block_quals[key] = mturk.create_block_qualification(
            client(), settings.KBPO_MTURK_BLOCK_QUALIFICATION_NAME)
    return _block_quals[key]


def hit_type_config(kind: str, reward: Decimal, max_assignments: int,
                    schema: str = TAC_KBP) -> mturk.HitTypeConfig:
    """The HIT type of a task kind on a corpus of ``schema``, from the KBPO_MTURK_*
    settings: a document-level schema's relation and exhaustive questions are on whole
    articles, and MTurk's listing says so (KBPO_MTURK_DOCUMENT_HIT_TYPES)."""
    texts = settings.KBPO_MTURK_HIT_TYPES[kind]
    if schema != TAC_KBP:
        texts = settings.KBPO_MTURK_DOCUMENT_HIT_TYPES.get(kind, texts)
    return mturk.HitTypeConfig(
        title=texts["title"], description=texts["description"], reward=Decimal(reward),
        keywords=tuple(texts["keywords"]),
        assignment_duration_seconds=settings.KBPO_MTURK_ASSIGNMENT_DURATION,
        auto_approval_delay_seconds=settings.KBPO_MTURK_AUTO_APPROVAL_DELAY,
        lifetime_seconds=settings.KBPO_MTURK_LIFETIME, max_assignments=max_assignments,
        min_approval_rate=settings.KBPO_MTURK_MIN_APPROVAL_RATE or None,
        countries=tuple(settings.KBPO_MTURK_COUNTRIES),
        min_approved_hits=settings.KBPO_MTURK_MIN_APPROVED_HITS or None,
        block_qualification_id=block_qualification_id())


def _post_mturk(hit: Hit) -> Hit:
    hit = Hit.objects.get(pk=hit.pk)
    if hit.state != HitState.PENDING:
        return hit
    try:
        check_production()
        c = client()
        if hit.request_token is None:
            balance = mturk.get_balance(c)
            if balance < hit.cost_estimate:
                raise InsufficientBalance(
                    f"HIT {hit.pk} would cost ${hit.cost_estimate} but the MTurk account "
                    f"balance is ${balance}; add funds to the requester account.")
            with transaction.atomic():
                locked = Hit.objects.select_for_update().get(pk=hit.pk)
                if locked.state != HitState.PENDING:
                    return locked
                if locked.request_token is None:
                    check_and_lock(locked.cost_estimate, locked.submission, f"HIT {locked.pk}")
                    # Stored (and committed) before MTurk is called: a retry reuses it.
                    locked.request_token = mturk.unique_request_token(
                        "hit", locked.pk, settings.KBPO_MTURK_TOKEN_NAMESPACE)
                    locked.save(update_fields=["request_token"])
            hit = locked
            hit_id = None
        else:
            # A retry of a post that may have reached MTurk: MTurk forgets tokens after
            # 24 hours, so look for the HIT carrying our token before creating one.
            hit_id = mturk.find_hit_by_annotation(c, hit.request_token)
        cfg = hit_type_config(hit.kind, hit.reward, hit.max_assignments, hit.corpus.schema)
        hit_type_id = mturk.ensure_hit_type(c, cfg)
        if hit_id is None:
            question = mturk.external_question_xml(task_url(hit),
                                                   settings.KBPO_MTURK_FRAME_HEIGHT)
            hit_id = mturk.create_hit(c, hit_type_id, question, hit.request_token,
                                      max_assignments=hit.max_assignments,
                                      lifetime_seconds=cfg.lifetime_seconds)
    except (BudgetExceeded, mturk.MTurkError, ValueError) as exc:
        _note(hit.pk, f"Held: {exc}" if isinstance(exc, BudgetExceeded) else str(exc))
        raise
    now = timezone.now()
    with transaction.atomic():
        locked = Hit.objects.select_for_update().get(pk=hit.pk)
        if locked.state == HitState.PENDING:
            locked.external_id = hit_id
            locked.hit_type_id = hit_type_id
            locked.state = HitState.POSTED
            locked.posted_at = now
            locked.expires_at = now + dt.timedelta(seconds=cfg.lifetime_seconds)
            locked.post_error = ""
            locked.save(update_fields=["external_id", "hit_type_id", "state", "posted_at",
                                       "expires_at", "post_error"])
    logger.info("posted HIT %s as MTurk HIT %s", hit.pk, hit_id)
    return locked


def ensure_assignments(hit: Hit) -> int:
    """Make MTurk's MaxAssignments match ours (a tie raised ours); extend if expired.

    Idempotent: it compares with MTurk's own count, and the token is derived from the
    target count. Returns the number of assignments added now.
    """
    if hit.backend != Backend.MTURK or not hit.external_id:
        return 0
    c = client()
    remote = mturk.get_hit(c, hit.external_id)
    missing = hit.max_assignments - int(remote["MaxAssignments"])
    if missing > 0:
        token = mturk.unique_request_token("extra", f"{hit.pk}-{hit.max_assignments}",
                                           settings.KBPO_MTURK_TOKEN_NAMESPACE)
        mturk.add_assignments(c, hit.external_id, missing, token)
    expiration = remote.get("Expiration")
    if isinstance(expiration, dt.datetime) and expiration <= timezone.now() and missing > 0:
        extend(hit)
    return max(missing, 0)


def expire(hit: Hit) -> None:
    """Stop new work on a HIT now (MTurk: UpdateExpirationForHIT in the past)."""
    if hit.backend == Backend.MTURK and hit.external_id:
        mturk.expire_hit(client(), hit.external_id)
    Hit.objects.filter(pk=hit.pk).update(expires_at=timezone.now())


def extend(hit: Hit, seconds: int | None = None) -> dt.datetime:
    """Give a HIT more time (MTurk: UpdateExpirationForHIT in the future)."""
    until = timezone.now() + dt.timedelta(seconds=seconds or settings.KBPO_MTURK_EXTEND_SECONDS)
    if hit.backend == Backend.MTURK and hit.external_id:
        mturk.extend_hit(client(), hit.external_id, until)
    Hit.objects.filter(pk=hit.pk).update(expires_at=until)
    return until


def block_on_backend(worker: CrowdWorker, reason: str) -> None:
    if worker.backend == Backend.MTURK:
        mturk.block_worker(client(), worker.external_id, block_qualification_id(), reason)


def unblock_on_backend(worker: CrowdWorker, reason: str) -> None:
    if worker.backend == Backend.MTURK:
        mturk.unblock_worker(client(), worker.external_id, block_qualification_id(), reason)
