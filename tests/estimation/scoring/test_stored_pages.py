"""Stored bodies of the leaderboard page and CSV: served byte for byte once stored
(a signed-in viewer's with their own navigation filled in), each only to its kind of
viewer, and never after anything they show has changed."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.conf import settings
from django.contrib.auth.models import User
from django.contrib.messages import constants
from django.contrib.messages.storage.cookie import CookieStorage
from django.http import HttpResponse
from django.test import Client, RequestFactory
from django.urls import reverse

from annotations.models import PairLabel
from estimation import scoring, stored_pages
from estimation.models import BoardBody, ScoringState
from kbpo.core.models import Corpus
from submissions.models import State, Submission
from tests.estimation.scoring.scoring_world import World
from tests.factories import make_submission, make_user

PAGE = reverse("leaderboard", args=["t"])
CSV = reverse("leaderboard-csv", args=["t"])


@pytest.fixture
def scored(scored: World) -> World:
    """The package's scored world with Beta private."""
    Submission.objects.filter(pk=scored.b.pk).update(public=False)
    return scored


def _poison(part: str, viewer: str = "") -> None:
    """Mark the stored body, so a test can tell a stored answer from a fresh one."""
    body = BoardBody.objects.get(part=part, viewer=viewer)
    BoardBody.objects.filter(pk=body.pk).update(body=body.body.replace("Alpha", "STORED"))


@pytest.mark.django_db
@pytest.mark.usefixtures("needs_postgres")  # stored bodies: Postgres SQL
def test_anonymous_page_is_stored_once_and_served_as_rendered(scored: World) -> None:
    first = Client().get(PAGE)
    assert first.status_code == 200 and BoardBody.objects.filter(part="html").count() == 1
    second = Client().get(PAGE)
    assert second.content == first.content
    assert second["Content-Type"] == "text/html; charset=utf-8"
    # Middleware still runs: security headers are there, and caches are told the
    # answer depends on the cookie.
    for h in ("Content-Security-Policy", "X-Frame-Options", "X-Content-Type-Options"):
        assert second.has_header(h), h
    assert "Cookie" in second["Vary"]
    assert not second.cookies and b"csrfmiddlewaretoken" not in second.content
    page = second.content.decode()
    assert "Alpha" in page and "Beta" not in page and "Log in" in page
    _poison("html")
    assert "STORED" in Client().get(PAGE).content.decode()
    # Another sort is another board, stored separately.
    assert "STORED" not in Client().get(PAGE + "?sort=recall").content.decode()
    assert BoardBody.objects.filter(part="html").count() == 2


@pytest.mark.django_db
@pytest.mark.usefixtures("needs_postgres")  # stored bodies: Postgres SQL
def test_logged_in_visitors_never_get_the_anonymous_body(scored: World) -> None:
    Client().get(PAGE)
    _poison("html")
    owner = Submission.objects.get(pk=scored.b.pk).owner
    for user, sees_beta in ((owner, True), (make_user("carol"), False),
                            (make_user("staff", staff=True), True)):
        c = Client()
        c.force_login(user)
        page = c.get(PAGE).content.decode()
        assert "STORED" not in page and "Alpha" in page, user.username
        assert ("Beta" in page) == sees_beta and user.username in page, user.username
        assert "Log out" in page and "csrfmiddlewaretoken" in page
    # A session cookie alone (logged out, say) takes the per-viewer path too.
    c = Client()
    c.cookies[settings.SESSION_COOKIE_NAME] = "no-such-session"
    assert "STORED" not in c.get(PAGE).content.decode()


@pytest.mark.django_db
@pytest.mark.parametrize("change", ["private", "rename", "withdraw", "description",
                                    "recomputing", "public"])
@pytest.mark.usefixtures("needs_postgres")  # stored bodies: Postgres SQL
def test_a_change_of_what_the_page_shows_is_never_served_stale(
        scored: World, change: str) -> None:
    Client().get(PAGE)
    _poison("html")
    assert "STORED" in Client().get(PAGE).content.decode()
    subs = Submission.objects.filter(pk=scored.a.pk)
    if change == "private":
        subs.update(public=False)
    elif change == "rename":
        subs.update(name="Alpha two")
    elif change == "withdraw":
        subs.update(state=State.WITHDRAWN)
    elif change == "description":
        Corpus.objects.filter(pk=scored.corpus.pk).update(description="New text")
    elif change == "recomputing":
        ScoringState.objects.update_or_create(corpus=scored.corpus, defaults={
            "generation": 5, "scored_generation": 4})
    elif change == "public":
        Submission.objects.filter(pk=scored.b.pk).update(public=True)
    page = Client().get(PAGE).content.decode()
    assert "STORED" not in page
    expect = {"private": ("Alpha" not in page and "Beta" not in page),
              "rename": "Alpha two" in page, "withdraw": "Alpha" not in page,
              "description": "New text" in page, "recomputing": 'id="recomputing"' in page,
              "public": "Beta" in page}
    assert expect[change], page
    # The fresh body is stored under the new key and served from then on.
    assert Client().get(PAGE).content.decode() == page


@pytest.mark.django_db
@pytest.mark.usefixtures("needs_postgres")  # stored bodies: Postgres SQL
def test_a_new_score_run_replaces_the_stored_bodies(scored: World) -> None:
    Client().get(PAGE)
    Client().get(CSV)
    assert BoardBody.objects.count() == 2
    PairLabel.objects.filter(pair=scored.pairs["born"]).update(predicates=["per:spouse"])
    scoring.recompute(scored.corpus)
    assert BoardBody.objects.count() == 0
    assert Client().get(PAGE).status_code == 200 and BoardBody.objects.count() == 1


@pytest.mark.django_db
@pytest.mark.usefixtures("needs_postgres")  # stored bodies: Postgres SQL
def test_anonymous_csv_is_stored_and_keeps_private_rows_out(scored: World) -> None:
    first = Client().get(CSV)
    second = Client().get(CSV)
    assert second.content == first.content and b"Beta" not in second.content
    assert second["Content-Disposition"] == \
        'attachment; filename="leaderboard-t-instance-joint.csv"'
    assert second["Content-Type"] == "text/csv; charset=utf-8"
    _poison("csv")
    assert b"STORED" in Client().get(CSV).content
    owner = Submission.objects.get(pk=scored.b.pk).owner
    c = Client()
    c.force_login(owner)
    body = c.get(CSV).content
    assert b"STORED" not in body and b"Beta" in body
    Submission.objects.filter(pk=scored.b.pk).update(public=True)
    assert b"Beta" in Client().get(CSV).content


@pytest.mark.django_db
def test_bad_parameters_and_unknown_corpora_are_not_stored(scored: World) -> None:
    assert Client().get(PAGE + "?sort=nope").status_code == 400
    assert Client().get(reverse("leaderboard", args=["nope"])).status_code == 404
    assert Client().get(reverse("leaderboard-csv", args=["nope"])).status_code == 404
    assert not BoardBody.objects.exists()


@pytest.mark.django_db
@pytest.mark.usefixtures("needs_postgres")  # stored bodies: Postgres SQL
def test_anonymous_json_is_stored_only_for_plain_json(scored: World) -> None:
    api = reverse("api-leaderboard", args=["t"])
    first = Client().get(api)
    assert BoardBody.objects.filter(part="api").count() == 1
    second = Client().get(api)
    assert second.content == first.content and second["Content-Type"] == "application/json"
    assert [s["name"] for s in second.json()["systems"]] == ["Alpha"]
    assert second.json()["run"]["systems"] == 1
    _poison("api")
    assert b"STORED" in Client().get(api, HTTP_ACCEPT="application/json").content
    # The browsable API, an indent, a signed-in visitor or a token: never the stored body.
    assert b"STORED" not in Client().get(api, HTTP_ACCEPT="text/html").content
    assert b"STORED" not in Client().get(
        api, HTTP_ACCEPT="application/json; indent=2").content
    c = Client()
    c.force_login(Submission.objects.get(pk=scored.b.pk).owner)
    body = c.get(api).json()
    assert sorted(s["name"] for s in body["systems"]) == ["Alpha", "Beta"]
    Submission.objects.filter(pk=scored.a.pk).update(name="Alpha two")
    assert Client().get(api).json()["systems"][0]["name"] == "Alpha two"


@pytest.mark.django_db
def test_stored_json_is_one_query_and_errors_stay_errors(
        scored: World, django_assert_num_queries, needs_postgres: None) -> None:
    api = reverse("api-leaderboard", args=["t"])
    Client().get(api)
    Client().get(api)  # the lookup is prepared on this connection by now
    with django_assert_num_queries(1):
        assert Client().get(api).status_code == 200
    assert Client().get(reverse("api-leaderboard", args=["nope"])).status_code == 404
    assert Client().get(reverse("api-leaderboard", args=["nope"]) + "?sort=x").status_code \
        == 404
    bad = Client().get(api + "?sort=nope")
    assert bad.status_code == 400 and "sort" in bad.json()


@pytest.mark.django_db
@pytest.mark.usefixtures("needs_postgres")  # stored bodies: Postgres SQL
def test_a_deploy_changes_every_key(scored: World, monkeypatch) -> None:
    from estimation import stored_pages

    assert len(stored_pages.render_version()) == 32
    Client().get(PAGE)
    _poison("html")
    assert "STORED" in Client().get(PAGE).content.decode()
    monkeypatch.setattr(stored_pages, "render_version", lambda: "templates of a new deploy")
    assert "STORED" not in Client().get(PAGE).content.decode()



def test_the_key_covers_every_static_file_the_stored_pages_link() -> None:
    """In production a static URL carries the file's hash, so a stored body links one
    version of each file. The report's script was not in the key: a deploy changing
    only it left stored reports loading a script the new image does not serve."""
    from django.template.loader import get_template

    linked = set()
    for name in stored_pages._TEMPLATES:
        source = Path(get_template(name).origin.name).read_text()
        linked |= set(re.findall(r"""{%\s*static\s+['"]([^'"]+)['"]\s*%}""", source))
    assert "js/leaderboard_report.js" in linked  # the search finds what it should
    assert linked <= set(stored_pages._STATIC), linked - set(stored_pages._STATIC)


TOKEN = re.compile(r'name="csrfmiddlewaretoken" value="[^"]+"')


def _login(user, **kwargs) -> Client:
    c = Client(**kwargs)
    c.force_login(user)
    return c


def _fresh(client: Client, url: str, monkeypatch) -> str:
    """The page as rendered without any stored body."""
    with monkeypatch.context() as m:
        m.setattr(stored_pages, "viewer_class", lambda request: None)
        return client.get(url).content.decode()


@pytest.mark.django_db
@pytest.mark.usefixtures("needs_postgres")  # stored bodies: Postgres SQL
def test_each_kind_of_signed_in_viewer_gets_its_own_stored_body(
        scored: World, monkeypatch) -> None:
    owner_b = Submission.objects.get(pk=scored.b.pk).owner  # owns the private Beta
    owner_a = Submission.objects.get(pk=scored.a.pk).owner  # owns the public Alpha
    carol, dave = make_user("carol"), make_user("dave")
    staff = make_user("staff", staff=True)
    expect = {carol: ("user", False), dave: ("user", False), staff: ("staff", True),
              owner_b: (f"u{owner_b.pk}", True), owner_a: (f"u{owner_a.pk}", False)}
    for user, (viewer, sees_beta) in expect.items():
        c = _login(user)
        fresh = _fresh(c, PAGE, monkeypatch)
        first = c.get(PAGE).content.decode()  # renders, stores, fills in
        assert BoardBody.objects.filter(part="html", viewer=viewer).exists(), user.username
        second = c.get(PAGE).content.decode()  # the stored body, filled in
        assert TOKEN.sub("", first) == TOKEN.sub("", second) == TOKEN.sub("", fresh)
        assert ("Beta" in second) == sees_beta and user.username in second
        assert "Log out" in second and TOKEN.search(second)
        assert ('class="leader mine"' in second) == (user == owner_a)
    assert BoardBody.objects.filter(part="html").count() == 4  # carol and dave share one
    # A stored body holds no viewer's navigation or token: markers stand in for them.
    for body in BoardBody.objects.filter(part="html").exclude(viewer=""):
        assert body.body.count(stored_pages.SLOTS["nav"]) == 1
        assert "Log out" not in body.body and "csrfmiddlewaretoken" not in body.body
    for viewer in ("user", "staff", f"u{owner_b.pk}", f"u{owner_a.pk}"):
        _poison("html", viewer)
    # Each gets their own; none gets another's (the private row stays with its owner).
    for user, (_, sees_beta) in expect.items():
        page = _login(user).get(PAGE).content.decode()
        assert "STORED" in page and ("Beta" in page) == sees_beta, user.username
        assert user.username in page
    assert "STORED" not in Client().get(PAGE).content.decode()


@pytest.mark.django_db
@pytest.mark.usefixtures("needs_postgres")  # stored bodies: Postgres SQL
def test_a_viewer_who_becomes_staff_or_an_owner_changes_body(scored: World) -> None:
    carol = make_user("carol")
    _login(carol).get(PAGE)
    _poison("html", "user")
    assert "STORED" in _login(carol).get(PAGE).content.decode()
    User.objects.filter(pk=carol.pk).update(is_staff=True)
    page = _login(User.objects.get(pk=carol.pk)).get(PAGE).content.decode()
    assert "STORED" not in page and "Beta" in page and "Operator" in page
    User.objects.filter(pk=carol.pk).update(is_staff=False)
    make_submission(scored.corpus, [(scored.pairs["wed"], "per:spouse")], owner=carol,
                    name="Gamma", state=State.SCORING)
    _login(User.objects.get(pk=carol.pk)).get(PAGE)
    assert BoardBody.objects.filter(viewer=f"u{carol.pk}").exists()


@pytest.mark.django_db
def test_messages_and_csrf_on_a_stored_signed_in_page(scored: World) -> None:
    c = _login(make_user("carol"), enforce_csrf_checks=True)
    c.get(PAGE)
    storage = CookieStorage(RequestFactory().get("/"))
    storage.add(constants.SUCCESS, "Welcome back.")
    resp = HttpResponse()
    storage.update(resp)
    c.cookies["messages"] = resp.cookies["messages"].value
    page = c.get(PAGE)
    assert "Welcome back." in page.content.decode()
    c.cookies.pop("messages", None)
    text = c.get(PAGE).content.decode()
    assert "Welcome back." not in text
    token = TOKEN.search(text).group(0).split('value="')[1][:-1]
    assert c.post(reverse("logout"), {"csrfmiddlewaretoken": token}).status_code == 302
    assert "Log in" in c.get(PAGE).content.decode()


@pytest.mark.django_db
def test_a_name_spelling_a_marker_stays_text(scored: World) -> None:
    marker = stored_pages.SLOTS["nav"]
    Submission.objects.filter(pk=scored.a.pk).update(name=f"Alpha {marker}")
    c = _login(make_user("carol"))
    for _ in range(2):  # rendered and stored, then served from the stored body
        page = c.get(PAGE).content.decode()
        assert "Alpha &lt;!--live:nav--&gt;" in page and page.count("Log out") == 1
        body = c.get(CSV).content.decode()
        assert f"Alpha {marker}" in body and "Log out" not in body


@pytest.mark.django_db
@pytest.mark.parametrize("change", ["private", "rename", "withdraw", "public"])
def test_prepared_lookups_are_never_stale_under_a_generic_plan(
        scored: World, change: str, needs_postgres: None) -> None:
    """The lookup is a prepared statement (kbpo/core/prepared.py); Postgres may run it
    with one plan for every parameter value. Forced here (for this test's transaction),
    a change still reaches the page, and a private system stays out of it."""
    from django.db import connection

    with connection.cursor() as cur:
        cur.execute("SET LOCAL plan_cache_mode = force_generic_plan")
    for _ in range(3):
        Client().get(PAGE)
    test_a_change_of_what_the_page_shows_is_never_served_stale(scored, change)
    assert "Beta" not in Client().get(PAGE).content.decode() or change == "public"


@pytest.mark.django_db
@pytest.mark.parametrize("who", ["anonymous", "user", "staff", "odd name"])
def test_navigation_rendered_once_per_class_is_the_templates(who: str) -> None:
    """stored_pages.nav fills the user name and CSRF token into a navigation rendered
    once per viewer class: the same HTML as the template rendered for the request
    (the token aside, masked afresh per call), with a token that passes the CSRF check."""
    from django.contrib.auth.models import AnonymousUser
    from django.middleware.csrf import _does_token_match, _unmask_cipher_token
    from django.template.loader import get_template

    user: object = AnonymousUser()
    if who != "anonymous":
        user = User.objects.create(username={"odd name": "a<b>&\"c"}.get(who, who),
                                   is_staff=who == "staff")
    stored_pages._NAV.clear()
    for _ in range(2):  # rendered for the class, then from the cache
        request = RequestFactory().get("/")
        request.user = user
        got = stored_pages.nav(request)
        want = get_template("includes/viewer_nav.html").render(None, request)
        assert TOKEN.sub("", got) == TOKEN.sub("", want)
        assert "kbpo:" not in got
        if who != "anonymous":
            token = TOKEN.search(got).group(0).split('value="')[1][:-1]
            secret = _unmask_cipher_token(TOKEN.search(want).group(0).split('value="')[1][:-1])
            assert _does_token_match(token, secret)
    if who == "odd name":
        assert "a&lt;b&gt;&amp;&quot;c" in got and "a<b>" not in got


@pytest.mark.django_db
def test_non_ascii_names_survive_the_stored_bytes(scored: World, monkeypatch) -> None:
    """Stored bodies are served as the UTF-8 bytes read, markers filled in on bytes: a
    name and a user name outside ASCII come back exactly as rendered."""
    Submission.objects.filter(pk=scored.a.pk).update(name="Ålpha – β ✓")
    c = _login(make_user("zoë"))
    fresh = _fresh(c, PAGE, monkeypatch)
    c.get(PAGE)  # renders and stores
    served = c.get(PAGE)
    assert served["Content-Type"] == "text/html; charset=utf-8"
    text = served.content.decode("utf-8")
    assert "Ålpha – β ✓" in text and "zoë" in text
    assert TOKEN.sub("", text) == TOKEN.sub("", fresh)
    anonymous = [Client().get(PAGE).content for _ in range(2)]
    assert anonymous[0] == anonymous[1] and "Ålpha – β ✓".encode() in anonymous[1]
