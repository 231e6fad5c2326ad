"""Crowd backends: where a HIT goes once its rows are stored.

`simulated` and `local` HITs are "posted" by opening them on our own site (the
simulated crowd and in-house annotators answer them through the intake); `mturk`
HITs are created on Mechanical Turk through `annotations.mturk`.
"""

from __future__ import annotations

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from .models import Backend, Hit, HitState


def task_path(hit_id: int) -> str:
    """The path of a HIT's task page (also the MTurk ExternalQuestion target)."""
    return f"/annotate/hit/{hit_id}/"


def task_url(hit_id: int) -> str:
    """Absolute URL of a HIT's task page on the public site."""
    return settings.KBPO_PUBLIC_URL.rstrip("/") + task_path(hit_id)


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
    """Make a pending HIT available to its crowd (idempotent)."""
    if hit.backend in (Backend.SIMULATED, Backend.LOCAL):
        return open_on_site(hit)
    raise ValueError(f"HIT {hit.pk}: backend {hit.backend!r} is posted by the crowd pipeline")
