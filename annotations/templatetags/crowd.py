"""`{% crowd_budget sub %}`: the crowd-work and money card of a submission page."""

from __future__ import annotations

from django import template

from annotations.crowd import budget, live
from annotations.models import Hit, HitState, PairLabel, SampleDraw

register = template.Library()


@register.inclusion_tag("annotations/budget_card.html")
def crowd_budget(submission: object) -> dict:
    draws = SampleDraw.objects.filter(submission=submission)
    pair_ids = set(draws.values_list("instance__pair_id", flat=True))
    labelled = PairLabel.objects.filter(pair_id__in=pair_ids).count() if pair_ids else 0
    hits = Hit.objects.filter(submission=submission)
    held = hits.filter(state=HitState.PENDING).exclude(post_error="")
    first_held = held.order_by("pk").values_list("post_error", flat=True).first()
    return {"crowd": {
        "draws": draws.count(), "pairs": len(pair_ids), "labelled": labelled,
        "percent": round(100 * labelled / len(pair_ids)) if pair_ids else 100,
        "hits_posted": hits.filter(state=HitState.POSTED).count(),
        "hits_complete": hits.filter(state=HitState.COMPLETE).count(),
        "hits_held": held.count(), "hold_reason": first_held or "",
        "spend": budget.spend(submission),
        # Who answers, while any HIT of this submission is open (the demo's crowd).
        "who": live.describe() if hits.filter(state=HitState.POSTED).exists() else "",
    }}
