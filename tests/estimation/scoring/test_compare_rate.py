"""Fresh comparisons are rate-limited per client address; cached ones never are."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from tests.estimation.scoring.scoring_world import World


@pytest.mark.django_db
def test_fresh_comparisons_past_the_limit_get_429_and_cached_ones_do_not(
        scored: World, settings) -> None:
    settings.KBPO_COMPARE_RATE_PER_IP = 2
    # One fixed window for the whole test (fresh comparisons take seconds on a busy
    # machine: a 60 s window can end mid-test, and the third comparison is not refused).
    settings.KBPO_COMPARE_RATE_WINDOW = 10**9
    page, api = reverse("compare", args=["t"]), reverse("api-compare", args=["t"])
    a, b = scored.a.pk, scored.b.pk
    client = Client(REMOTE_ADDR="203.0.113.7")
    assert client.get(page, {"a": a, "b": b}).status_code == 200  # fresh: 1 of 2
    for _ in range(5):  # the same comparison again is cached: not counted
        assert client.get(page, {"a": a, "b": b}).status_code == 200
    assert client.get(api, {"a": b, "b": a}).status_code == 200  # fresh: 2 of 2

    refused = client.get(page, {"a": a, "b": b, "scheme": "predicate"})
    assert refused.status_code == 429
    wait = int(refused["Retry-After"])
    assert 1 <= wait <= 10**9
    html = refused.content.decode()
    assert "Too many new comparisons from your network address" in html
    assert f"Try again in {wait} seconds" in html
    assert 'id="compare-result"' not in html  # the form is still there, no result

    api_refused = client.get(api, {"a": b, "b": a, "scheme": "predicate"})
    assert api_refused.status_code == 429 and "Retry-After" in api_refused
    assert "Too many new comparisons" in api_refused.json()["detail"]

    # Cached answers stay open to the throttled client, on the page and the API.
    assert client.get(page, {"a": a, "b": b}).status_code == 200
    assert client.get(api, {"a": b, "b": a}).status_code == 200
    # Another address has its own budget.
    other = Client(REMOTE_ADDR="198.51.100.9")
    assert other.get(page, {"a": a, "b": b, "scheme": "predicate"}).status_code == 200


@pytest.mark.django_db
def test_a_limit_of_zero_turns_the_limit_off(scored: World, settings) -> None:
    settings.KBPO_COMPARE_RATE_PER_IP = 0
    page = reverse("compare", args=["t"])
    client = Client()
    for scheme in ("instance", "predicate"):
        for a, b in ((scored.a.pk, scored.b.pk), (scored.b.pk, scored.a.pk)):
            assert client.get(page, {"a": a, "b": b, "scheme": scheme}).status_code == 200
