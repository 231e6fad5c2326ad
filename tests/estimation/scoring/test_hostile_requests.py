"""Requests a script or a prober may send to the score pages and APIs (each gets a clear
answer with the right status, never a 500), and hostile names on what shows scores."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command
from django.test import Client
from django.urls import reverse
from rest_framework.authtoken.models import Token

from estimation import snapshot
from estimation.models import BoardBody, BoardSnapshot, SystemScore
from estimation.templatetags import scores as scores_tags
from submissions.models import Submission
from tests.estimation.scoring.scoring_world import World
from tests.factories import make_user

SUBMISSION_URLS = ("submission-evaluation", "submission-evaluation-progress",
                   "submission-predicates-csv", "api-submission-scores",
                   "api-submission-history", "api-submission-samples",
                   "api-submission-progress")


def _clients() -> dict[str, Client]:
    user, staff = Client(), Client()
    user.force_login(make_user("eve"))
    staff.force_login(make_user("root", staff=True))
    return {"anonymous": Client(), "user": user, "staff": staff}


@pytest.mark.django_db
def test_an_id_beyond_bigint_is_not_found(scored: World) -> None:
    """The URL takes any digits; ids are bigints, and the report's raw queries failed
    on a larger one ("bigint out of range": a 500)."""
    for who, client in _clients().items():
        for pk in (2**63 - 1, 2**63, 10**20):
            for name in SUBMISSION_URLS:
                resp = client.get(reverse(name, args=[pk]))
                assert resp.status_code == 404, (who, pk, name, resp.status_code)
        # The database connection is still usable: a real report is served.
        assert client.get(reverse("submission-evaluation", args=[scored.a.pk])).status_code \
            == 200


@pytest.mark.django_db
def test_head_is_answered_like_get_and_other_methods_get_405(scored: World) -> None:
    """HEAD is part of every GET resource (link checkers, `curl -I`, uptime probes): the
    pages answered it 405 while their APIs answered 200."""
    tag, a = scored.corpus.tag, scored.a.pk
    pages = [reverse("leaderboard-index"), reverse("leaderboard", args=[tag]),
             reverse("leaderboard-csv", args=[tag]), reverse("compare", args=[tag]),
             reverse("submission-evaluation", args=[a]),
             reverse("submission-evaluation-progress", args=[a]),
             reverse("submission-predicates-csv", args=[a]), reverse("operator-dashboard")]
    staff = _clients()["staff"]
    for url in pages:
        got = staff.get(url)
        head = staff.head(url)
        assert head.status_code == got.status_code == 200, (url, head.status_code)
        assert head["Content-Type"] == got["Content-Type"], url
        assert head.content == b"", url
        post = staff.post(url)
        assert post.status_code == 405, (url, post.status_code)
        assert set(post["Allow"].split(", ")) == {"GET", "HEAD"}, url


@pytest.mark.django_db
def test_scores_command_prints_control_characters_of_a_name_escaped(scored: World) -> None:
    """A system name is the uploader's text: printed raw, an escape sequence runs in the
    operator's terminal and a newline or bidi override breaks the table."""
    Submission.objects.filter(pk=scored.a.pk).update(name="A\x1b[2J\nB\u202e")
    out = io.StringIO()
    call_command("scores", "--corpus", "t", stdout=out)
    text = out.getvalue()
    assert "\x1b" not in text and "\u202e" not in text
    rows = [line for line in text.splitlines() if line[:3].strip().isdigit()]
    assert len(rows) == 2  # one line per system, the name's newline included
    assert any(r"A\x1b[2J\nB\u202e" in row for row in rows), rows


@pytest.mark.django_db
def test_compare_takes_ids_as_ascii_digits_only(scored: World) -> None:
    """int() read other scripts' digits, underscores, signs and spaces as an id ("١" was
    submission 1), and echoed a 5,000-digit value back whole in its error."""
    url = reverse("api-compare", args=[scored.corpus.tag])
    b = scored.b.pk
    for value in ("\u0661", "\uff11", "1_0", " 1", "+1", "1.0", "0x1"):
        resp = Client().get(url, {"a": value, "b": b})
        assert resp.status_code == 400, (value, resp.status_code)
        assert "is not a submission id" in resp.json()["a"][0], value
    long = Client().get(url, {"a": "9" * 5000, "b": b})
    assert long.status_code == 404 and len(long.content) < 300, long.content[:100]
    assert Client().get(url, {"a": f"000{scored.a.pk}", "b": b}).status_code == 200


@pytest.mark.django_db
def test_progress_json_answers_not_found_in_json(scored: World) -> None:
    """progress.json is read by scripts and the report's poller: a missing or private
    submission is a JSON 404 (it was Django's HTML error page), alike for both."""
    Submission.objects.filter(pk=scored.b.pk).update(public=False)
    bodies = set()
    for pk in (scored.b.pk, 999_999):
        resp = Client().get(reverse("submission-evaluation-progress", args=[pk]))
        assert resp.status_code == 404 and resp["Content-Type"] == "application/json"
        bodies.add(resp.content)
    assert len(bodies) == 1 and b"No such submission" in bodies.pop()


def _urls(w: World) -> list[str]:
    tag, a, b = w.corpus.tag, w.a.pk, w.b.pk
    return [reverse("leaderboard-index"), reverse("leaderboard", args=[tag]),
            reverse("leaderboard-csv", args=[tag]), reverse("api-leaderboard", args=[tag]),
            reverse("compare", args=[tag]) + f"?a={a}&b={b}",
            reverse("api-compare", args=[tag]) + f"?a={a}&b={b}",
            *(reverse(name, args=[b]) for name in SUBMISSION_URLS)]


@pytest.mark.django_db
def test_what_a_signed_in_viewer_gets_is_kept_out_of_shared_caches(scored: World) -> None:
    """Beta is private: its owner's report, progress.json, CSV and API answers, and their
    leaderboard (Beta ranked in it), carried only Vary: Cookie, which a shared cache
    that ignores Vary does not honour. Each is sent `Cache-Control: private`, stored
    bodies included (every URL is asked twice); anonymous answers stay cacheable."""
    Submission.objects.filter(pk=scored.b.pk).update(public=False)
    owner = Client()
    owner.force_login(scored.b.owner)
    key = Token.objects.create(user=scored.b.owner).key
    token = Client(HTTP_AUTHORIZATION=f"Token {key}")
    for url in [*_urls(scored), reverse("operator-dashboard")]:
        for _ in range(2):
            resp = owner.get(url)
            assert resp.status_code in (200, 302), (url, resp.status_code)
            assert "private" in resp.get("Cache-Control", ""), url
    for url in [u for u in _urls(scored) if u.startswith("/api/")]:
        resp = token.get(url)
        assert resp.status_code == 200 and "private" in resp.get("Cache-Control", ""), url
        # What a cache kept for an anonymous caller is not a token caller's answer.
        for _ in range(2):  # rendered, then the stored anonymous body
            anonymous = Client().get(url)
            assert "Authorization" in anonymous.get("Vary", ""), url
    Submission.objects.filter(pk=scored.b.pk).update(public=True)
    for url in _urls(scored):
        for _ in range(2):
            resp = Client().get(url)
            assert resp.status_code == 200, url
            assert "private" not in resp.get("Cache-Control", ""), url


@pytest.mark.django_db
def test_compare_and_index_say_exact_and_tell_narrow_ends_apart(scored: World) -> None:
    """Every prediction labelled: Alpha's precision is exactly 1, Beta's exactly 1/2.
    The compare page printed "1.000–1.000" (docs: pages say "exact"), and the index
    printed three decimals of a narrow interval, where 0.0006–0.0014 reads 0.001–0.001."""
    html = Client().get(reverse("compare", args=["t"]),
                        {"a": scored.a.pk, "b": scored.b.pk}).content.decode()
    assert html.count('class="ci exact"') == 2  # both precisions
    assert "1.000–1.000" not in html and "0.500–0.500" not in html
    SystemScore.objects.filter(submission=scored.a).update(f1_joint=0.8, f1_joint_lo=0.8,
                                                           f1_joint_hi=0.8)
    SystemScore.objects.filter(submission=scored.b).update(
        f1_joint=0.001, f1_joint_lo=0.0006, f1_joint_hi=0.0014)
    snapshot.refresh_corpus(scored.corpus.pk)
    index = Client().get(reverse("leaderboard-index")).content.decode()
    assert "F1 0.800 <span class=\"muted\">(exact)</span>" in index, index
    Submission.objects.filter(pk=scored.a.pk).update(public=False)
    index = Client().get(reverse("leaderboard-index")).content.decode()
    assert "(0.0006–0.0014)" in index and "0.001–0.001" not in index


@pytest.mark.django_db
def test_report_for_a_scheme_the_run_did_not_store(world: World, settings) -> None:
    """With KBPO_SCORE_SCHEMES=instance (a documented configuration), ?scheme=entity
    rendered the history panels with nothing in them, and `score` of the "" a template
    gives for a missing value raised a ValueError: a 500. It now shows the draw
    scheme's scores, as for an unknown scheme."""
    from estimation import scoring
    from tests.estimation.scoring.scoring_world import label

    settings.KBPO_SCORE_SCHEMES = ["instance"]
    label(world.pairs["born"], "per:place_of_birth")
    scoring.recompute(world.corpus)
    url = reverse("submission-evaluation", args=[world.a.pk])
    for query in ("?scheme=entity", "?scheme=entity_relation&verdict=correct"):
        resp = Client().get(url + query)
        assert resp.status_code == 200, query
        html = resp.content.decode()
        assert '<tr class="current"><th scope="row"><a href="?scheme=instance">' in html
    assert scores_tags.score("") == scores_tags.pct("") == scores_tags.signed("") == "—"
    assert scores_tags.score(float("nan")) == "—" and scores_tags.ci(float("nan"), 1.0) == ""


@pytest.mark.django_db
@pytest.mark.usefixtures("needs_postgres")  # stored bodies: Postgres SQL
def test_asking_for_a_scheme_the_run_did_not_store_writes_nothing(world: World,
                                                                  settings) -> None:
    """With KBPO_SCORE_SCHEMES=instance, every anonymous GET of a board under another
    scheme (page, API or CSV) took the missing board for scores from before stored
    boards, and rewrote every board of the corpus, dropping all its stored bodies."""
    from estimation import scoring
    from tests.estimation.scoring.scoring_world import label

    settings.KBPO_SCORE_SCHEMES = ["instance"]
    label(world.pairs["born"], "per:place_of_birth")
    scoring.recompute(world.corpus)
    tag = world.corpus.tag
    Client().get(reverse("leaderboard", args=[tag]))  # stores the page's body
    boards = set(BoardSnapshot.objects.values_list("pk", flat=True))
    bodies = set(BoardBody.objects.values_list("pk", flat=True))
    assert boards and bodies
    for name in ("leaderboard", "api-leaderboard", "leaderboard-csv"):
        # Not computed here, so not offered: a 400 naming what is (the page shows the
        # default board under that notice), never a board "without scores yet".
        resp = Client().get(reverse(name, args=[tag]), {"scheme": "entity"})
        assert resp.status_code == 400, name
        assert "is not offered; use one of: instance" in resp.content.decode(), name
    assert set(BoardSnapshot.objects.values_list("pk", flat=True)) == boards
    assert set(BoardBody.objects.values_list("pk", flat=True)) == bodies
    page = Client().get(reverse("leaderboard", args=[tag])).content.decode()
    assert 'data-scheme="instance"' in page
    assert all(f'data-scheme="{s}"' not in page
               for s in ("predicate", "entity", "entity_relation"))


@pytest.mark.django_db
def test_a_long_bad_value_is_not_echoed_back_whole(scored: World) -> None:
    """A 400 names the parameter and quotes its value: cut to 40 characters (a
    10,000-character value came back whole, on the page, the CSV and the APIs)."""
    long = "x" * 10_000
    tag, a = scored.corpus.tag, scored.a.pk
    for url, param in [(reverse("leaderboard", args=[tag]), "scheme"),
                       (reverse("leaderboard-csv", args=[tag]), "kind"),
                       (reverse("api-leaderboard", args=[tag]), "sort"),
                       (reverse("api-submission-history", args=[a]), "scheme"),
                       (reverse("api-submission-samples", args=[a]), "verdict"),
                       (reverse("api-compare", args=[tag]) + f"?b={a}", "a")]:
        resp = Client().get(url, {param: long})
        assert resp.status_code == 400, url
        body = resp.content.decode()
        assert "x" * 40 + "…" in body and "x" * 41 not in body, url


@pytest.mark.django_db
def test_compare_shows_a_rename_at_once(scored: World) -> None:
    """The comparison is cached per label generation, which a rename does not move: the
    old name (one its owner may have withdrawn for a reason) stayed for five minutes."""
    url = reverse("api-compare", args=[scored.corpus.tag])
    query = {"a": scored.a.pk, "b": scored.b.pk}
    first = Client().get(url, query).json()
    Submission.objects.filter(pk=scored.a.pk).update(name="Alpha renamed")
    again = Client().get(url, query).json()
    assert again["a"]["name"] == "Alpha renamed" and again["b"]["name"] == "Beta"
    assert {**again, "a": {**again["a"], "name": "Alpha"}} == first  # the numbers, cached
    page = Client().get(reverse("compare", args=[scored.corpus.tag]), query).content.decode()
    assert "<strong><bdi>Alpha renamed</bdi></strong> is better" in page
