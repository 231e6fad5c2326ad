"""The operator dashboard: staff only; spend, HITs by state, waiting work, flagged
workers and recent recomputations."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.test import Client
from django.urls import reverse

from annotations.models import BudgetSettings, CrowdWorker, Hit, HitState
from estimation import scoring
from estimation.models import ScoreRun
from tests.estimation.scoring.scoring_world import World, label
from tests.factories import make_hit, make_user


@pytest.mark.django_db
def test_only_staff_see_the_dashboard(world: World) -> None:
    url = reverse("operator-dashboard")
    assert Client().get(url).status_code == 302  # to the admin login
    c = Client()
    c.force_login(world.a.owner)
    assert c.get(url).status_code == 302
    assert c.post(url).status_code in (302, 405)


@pytest.mark.django_db
def test_dashboard_shows_spend_hits_waiting_workers_and_runs(world: World) -> None:
    BudgetSettings.objects.update_or_create(pk=1, defaults={
        "cap_usd": Decimal("100.00"), "per_submission_default_usd": Decimal("10.00")})
    hit = make_hit(world.corpus, [world.pairs["born"]])
    Hit.objects.filter(pk=hit.pk).update(state=HitState.POSTED, submission=world.a,
                                         cost_estimate=Decimal("9.00"))
    CrowdWorker.objects.create(backend="simulated", external_id="W-SPAMMY", flagged=True,
                               agreement=0.2, n_answers=40)
    label(world.pairs["born"], "per:place_of_birth")
    scoring.recompute(world.corpus, trigger="test run")
    ScoreRun.objects.create(corpus=world.corpus, generation=9, status="failed",
                            draw_scheme="instance", confidence=0.9,
                            started_at=ScoreRun.objects.first().started_at,
                            error="ValueError: <b>boom</b>")
    c = Client()
    c.force_login(make_user("root", staff=True))
    html = c.get(reverse("operator-dashboard")).content.decode()
    assert "$100.00" in html and "Alpha" in html
    assert "posted: 1" in html
    assert "W-SPAMMY" in html and "flagged" in html
    assert "test run" in html and "failed" in html
    assert "&lt;b&gt;boom&lt;/b&gt;" in html  # errors are escaped
    assert reverse("admin:annotations_hit_waiting") in html
