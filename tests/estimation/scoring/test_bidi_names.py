"""A system name holding bidi controls cannot reorder the text after it: names are
isolated (<bdi>, or FSI ... PDI where only text may go) wherever text follows them."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from submissions.models import Submission
from submissions.services import DuplicateUpload
from tests.estimation.scoring.scoring_world import World
from tests.factories import make_hit, make_user

RLO = "\u202e"
FSI, PDI = "\u2068", "\u2069"


@pytest.mark.django_db
def test_names_with_bidi_controls_are_isolated(scored: World) -> None:
    a_name, b_name = f"Alpha{RLO}evil", f"{RLO}Beta"
    Submission.objects.filter(pk=scored.a.pk).update(name=a_name)
    Submission.objects.filter(pk=scored.b.pk).update(name=b_name)
    client = Client()
    client.force_login(make_user("root", staff=True))

    html = client.get(reverse("compare", args=["t"]),
                      {"a": scored.a.pk, "b": scored.b.pk}).content.decode()
    # Alpha is better on precision (tests/estimation/scoring/test_compare_pages.py).
    assert f"<strong><bdi>{a_name}</bdi></strong> is better" in html
    assert f"<bdi>{a_name}</bdi></a> − <a" in html and f"<bdi>{b_name}</bdi></a></h2>" in html
    owner = scored.a.owner.get_username()
    assert f">{FSI}{a_name}{PDI} ({FSI}{owner}{PDI}, submission {scored.a.pk})</option>" in html
    assert f">{a_name} " not in html  # no bare name followed by text

    html = client.get(reverse("submission-evaluation", args=[scored.a.pk])).content.decode()
    assert f'<h1><bdi>{a_name}</bdi> <span class="badge' in html
    assert f"<title>Evaluation · {FSI}{a_name}{PDI} · KBPO</title>" in html

    Submission.objects.filter(pk=scored.a.pk).update(original_name=f"kb{RLO}vsg.tsv")
    html = client.get(reverse("submission-detail", args=[scored.a.pk])).content.decode()
    assert f'<h1><bdi>{a_name}</bdi> <span class="badge' in html
    assert f"<td><bdi>kb{RLO}vsg.tsv</bdi> (" in html
    assert f"({FSI}{a_name}{PDI}, " in str(DuplicateUpload(
        Submission.objects.get(pk=scored.a.pk)))
    assert f"<title>{FSI}{a_name}{PDI} · submission" in html

    make_hit(scored.corpus, [scored.pairs["born"]], submission=scored.a)  # listed with HITs
    html = client.get(reverse("operator-dashboard")).content.decode()
    assert f"<bdi>{a_name}</bdi></a> <code>" in html

    html = client.get(reverse("leaderboard-index")).content.decode()
    assert f"Leader: <strong><bdi>{a_name}</bdi></strong>" in html

    owner = Client()
    owner.force_login(scored.a.owner)
    html = owner.get(reverse("submission-list")).content.decode()
    assert f"<bdi>{a_name}</bdi></a>" in html
    html = owner.get(reverse("submission-withdraw", args=[scored.a.pk])).content.decode()
    assert f"<h1>Withdraw “<bdi>{a_name}</bdi>”?</h1>" in html
    resp = owner.post(reverse("submission-withdraw", args=[scored.a.pk]), follow=True)
    assert f"Submission “{FSI}{a_name}{PDI}” was withdrawn." in resp.content.decode()


def test_left_to_right_text_gets_no_invisible_isolates() -> None:
    """JSON errors, logs and plain-text mail carry names through `isolated`: only text
    that can reorder its neighbours gets FSI ... PDI, plain names stay as they are."""
    from kbpo.core.security import isolated

    assert isolated("sys01_baseline") == "sys01_baseline"
    assert isolated("Grace's extractor (v2)") == "Grace's extractor (v2)"
    assert isolated(f"Alpha{RLO}evil") == f"{FSI}Alpha{RLO}evil{PDI}"
    assert isolated("نظام") == f"{FSI}نظام{PDI}"  # right-to-left letters
