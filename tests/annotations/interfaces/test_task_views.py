"""Task pages and the intake endpoint without a browser: headers, modes, who may answer."""

from __future__ import annotations

import json
from urllib.parse import urlencode

import pytest
from django.test import Client

from annotations.models import (
    Assignment,
    Backend,
    CrowdWorker,
    HitQuestion,
    HitState,
    PagePost,
    Response,
    TaskKind,
)
from submissions.models import Submission, SubmissionEntity
from tests.annotations.interfaces.builders import annotator, document_hit, local_hits, relation_hit
from tests.factories import make_user, span

SANDBOX = "https://workersandbox.mturk.com"
# Rate-limit windows are fixed; one this long (~31 years) is never crossed by a test.
WINDOW = 10**9


def page_url(hit, **params) -> str:
    return f"/annotate/hit/{hit.url_key}/" + (f"?{urlencode(params)}" if params else "")


def post(client: Client, hit, body: object, **extra):
    return client.post(f"/annotate/hit/{hit.url_key}/answers/", data=json.dumps(body),
                       content_type="application/json", **extra)


def mturk_body(hit, answers, worker="W1", assignment="A1", submit_to=SANDBOX) -> dict:
    return {"assignmentId": assignment, "workerId": worker, "hitId": hit.external_id,
            "turkSubmitTo": submit_to, "answers": answers}


def relation_answers(hit, choices=(["per:place_of_birth"], ["per:spouse"])) -> list[dict]:
    qids = [hq.question_id for hq in hit.items.order_by("position")]
    return [{"question": q, "choices": c, "extra": {"subject_ok": True, "object_ok": True,
                                                    "link_ok": None}, "seconds": 3.5}
            for q, c in zip(qids, choices, strict=True)]


def config(response) -> dict:
    html = response.content.decode()
    start = html.index('id="task-config" type="application/json">') + len(
        'id="task-config" type="application/json">')
    return json.loads(html[start:html.index("</script>", start)])


# --- Headers ---------------------------------------------------------------------------


@pytest.mark.django_db
def test_task_page_may_be_framed_by_mturk_only(client) -> None:
    hit = relation_hit()
    response = client.get(page_url(hit, assignmentId="A1", hitId=hit.external_id,
                                   workerId="W1", turkSubmitTo=SANDBOX))
    assert response.status_code == 200
    assert "X-Frame-Options" not in response
    csp = response["Content-Security-Policy"]
    assert "frame-ancestors 'self' https://www.mturk.com https://workersandbox.mturk.com" in csp
    assert "script-src 'self'" in csp


@pytest.mark.django_db
@pytest.mark.parametrize("path", ["/", "/annotate/", "/annotate/try/relation/",
                                  "/accounts/login/"])
def test_other_pages_refuse_framing(client, path) -> None:
    response = client.get(path)
    assert response.status_code == 200
    assert response["X-Frame-Options"] == "DENY"
    csp = response.get("Content-Security-Policy", "")
    assert "frame-ancestors" not in csp or "frame-ancestors 'none'" in csp


# --- MTurk modes and intake ------------------------------------------------------------------


@pytest.mark.django_db
@pytest.mark.parametrize("params", [{}, {"assignmentId": "ASSIGNMENT_ID_NOT_AVAILABLE",
                                         "hitId": "HIT-REL-1"}])
def test_preview_mode(client, params) -> None:
    hit = relation_hit()
    response = client.get(page_url(hit, **params))
    assert response.status_code == 200
    assert config(response)["mode"] == "preview"
    assert "Accept the HIT" in response.content.decode()


@pytest.mark.django_db
def test_preview_assignment_cannot_post(client) -> None:
    hit = relation_hit()
    response = post(client, hit, mturk_body(hit, relation_answers(hit),
                                            assignment="ASSIGNMENT_ID_NOT_AVAILABLE"))
    assert response.status_code == 400
    assert response.json()["field"] == "assignmentId"
    assert not Assignment.objects.exists()


@pytest.mark.django_db
@pytest.mark.parametrize("submit_to", [
    "https://evil.example", "https://www.mturk.com.evil.example", "http://www.mturk.com",
    "https://evil.example/?https://www.mturk.com", "//www.mturk.com", "javascript:alert(1)", ""])
def test_forged_turk_submit_to_is_refused(client, submit_to) -> None:
    hit = relation_hit()
    page = client.get(page_url(hit, assignmentId="A1", hitId=hit.external_id, workerId="W1",
                               turkSubmitTo=submit_to))
    assert page.status_code == 400
    response = post(client, hit, mturk_body(hit, relation_answers(hit), submit_to=submit_to))
    assert response.status_code == 400
    assert response.json()["field"] == "turkSubmitTo"
    assert not Assignment.objects.exists()


@pytest.mark.django_db
def test_mturk_answers_are_kept_provisionally_then_forwarded(client) -> None:
    hit = relation_hit()
    body = mturk_body(hit, relation_answers(hit), submit_to="https://www.mturk.com/")
    response = post(client, hit, body, REMOTE_ADDR="198.51.100.7")
    assert response.status_code == 200, response.content
    assert response.json() == {"ok": True,
                               "submit_to": "https://www.mturk.com/mturk/externalSubmit"}
    assert post(client, hit, body).status_code == 200          # a retry is idempotent
    # Nothing counts until MTurk confirms the assignment: no assignment, no answer.
    assert not Assignment.objects.exists() and not Response.objects.exists()
    post_row = PagePost.objects.get()
    assert (post_row.assignment_external_id, post_row.worker_external_id,
            post_row.state, post_row.client_ip) == ("A1", "W1", "waiting", "198.51.100.7")
    assert [a["choices"] for a in post_row.payload["answers"]] == [
        ["per:place_of_birth"], ["per:spouse"]]
    assert {a["seconds"] for a in post_row.payload["answers"]} == {3.5}


@pytest.mark.django_db
def test_claims_on_one_assignment_wait_for_mturk_to_decide(client) -> None:
    hit = relation_hit()
    assert post(client, hit, mturk_body(hit, relation_answers(hit))).status_code == 200
    # A second claim on A1 cannot be told apart from the first yet: both wait, neither
    # counts, and neither blocks the other (a forger cannot lock an honest worker out).
    assert post(client, hit, mturk_body(hit, relation_answers(hit), worker="W2")
                ).status_code == 200
    assert sorted(PagePost.objects.values_list("worker_external_id", flat=True)) == [
        "W1", "W2"]
    assert not Assignment.objects.exists()
    # Once MTurk has confirmed A1 as W1's, another worker's claim is refused outright.
    Assignment.objects.create(hit=hit, worker=CrowdWorker.objects.create(
        backend="mturk", external_id="W1"), external_id="A1")
    response = post(client, hit, mturk_body(hit, relation_answers(hit), worker="W3"))
    assert response.status_code == 403
    assert response.json()["field"] == "assignmentId"
    assert post(client, hit, mturk_body(hit, relation_answers(hit))).status_code == 200


@pytest.mark.django_db
def test_hit_id_must_match(client) -> None:
    hit = relation_hit()
    body = mturk_body(hit, relation_answers(hit))
    body["hitId"] = "SOME-OTHER-HIT"
    response = post(client, hit, body)
    assert (response.status_code, response.json()["field"]) == (400, "hitId")


@pytest.mark.django_db
def test_bad_requests_get_clear_errors(client) -> None:
    hit = relation_hit()
    bad_json = client.post(f"/annotate/hit/{hit.url_key}/answers/", data=b"{not json",
                           content_type="application/json")
    assert (bad_json.status_code, bad_json.json()["field"]) == (400, "body")
    assert post(client, hit, [1, 2]).status_code == 400
    wrong = post(client, hit, mturk_body(hit, relation_answers(
        hit, (["per:spouse"], ["per:spouse"]))))
    assert (wrong.status_code, wrong.json()["field"]) == (400, "answers[0].choices")
    assert "not an option" in wrong.json()["error"]
    assert client.get(f"/annotate/hit/{hit.url_key}/answers/").status_code == 405
    assert post(client, type("H", (), {"url_key": "999999"})(), {}).status_code == 404
    assert client.get("/annotate/hit/999999/").status_code == 404
    # The sequential id no longer opens the page: only the random key does.
    assert client.get(f"/annotate/hit/{hit.pk}/").status_code == 404
    assert post(client, type("H", (), {"url_key": str(hit.pk)})(), {}).status_code == 404


@pytest.mark.django_db
def test_closed_hit_is_read_only(client) -> None:
    hit = relation_hit(state=HitState.EXPIRED)
    response = client.get(page_url(hit, assignmentId="A1", hitId=hit.external_id,
                                   workerId="W1", turkSubmitTo=SANDBOX))
    assert config(response)["mode"] == "closed"
    refused = post(client, hit, mturk_body(hit, relation_answers(hit)))
    assert refused.status_code == 409


# --- Simulated and local HITs ----------------------------------------------------------------


@pytest.mark.django_db
def test_simulated_hits_take_no_web_answers(client) -> None:
    hit = relation_hit(backend=Backend.SIMULATED, external_id=None)
    assert client.get(page_url(hit)).status_code == 302           # login first
    response = post(client, hit, mturk_body(hit, relation_answers(hit)))
    assert response.status_code == 403
    client.force_login(make_user("op", staff=True))
    assert config(client.get(page_url(hit)))["mode"] == "closed"


@pytest.mark.django_db
def test_local_hits_need_an_in_house_annotator(client) -> None:
    first, _ = local_hits()
    assert client.get(page_url(first)).status_code == 302
    assert post(client, first, {"answers": relation_answers(first)}).status_code == 401
    client.force_login(make_user("researcher"))
    assert client.get(page_url(first)).status_code == 403
    assert post(client, first, {"answers": relation_answers(first)}).status_code == 403
    assert not Assignment.objects.exists()


@pytest.mark.django_db
def test_local_answers_need_the_csrf_token() -> None:
    first, _ = local_hits()
    user = annotator()
    client = Client(enforce_csrf_checks=True)
    client.force_login(user)
    page = client.get(page_url(first))
    assert config(page)["mode"] == "local"
    refused = post(client, first, {"answers": relation_answers(first)})
    assert refused.status_code == 403
    ok = post(client, first, {"answers": relation_answers(first)},
              HTTP_X_CSRFTOKEN=config(page)["csrf"])
    assert ok.status_code == 200, ok.content
    assert ok.json()["next"] == "/annotate/next/"
    assignment = Assignment.objects.get()
    assert assignment.worker.user == user
    assert assignment.worker.backend == Backend.LOCAL
    assert config(client.get(page_url(first)))["mode"] == "closed"   # answered already


@pytest.mark.django_db
def test_local_hit_takes_no_more_answers_than_its_slots() -> None:
    """An annotator who opens a full in-house HIT by its URL (the queue no longer offers
    it) cannot add a counted, paid answer beyond `max_assignments`."""
    first, _ = local_hits()
    first.max_assignments = 1
    first.save(update_fields=["max_assignments"])
    statuses = []
    for name in ("anna", "bert"):
        client = Client()
        client.force_login(annotator(name))
        statuses.append(post(client, first, {"answers": relation_answers(first)}))
    assert [r.status_code for r in statuses] == [200, 409]
    assert statuses[1].json()["field"] == "hitId"
    assert Assignment.objects.filter(hit=first).count() == 1
    assert Response.objects.filter(assignment__hit=first).count() == 2   # anna's two
    assert config(client.get(page_url(first)))["mode"] == "closed"


@pytest.mark.django_db
def test_next_task_skips_a_hit_with_a_question_already_answered(client) -> None:
    """A question re-grouped into a new in-house HIT: who answered it in the first HIT
    cannot answer it again, so the queue must not send them there (it did, forever)."""
    first, second = local_hits()
    HitQuestion.objects.create(hit=second, question=first.items.order_by("position")[0]
                               .question, position=1)
    client.force_login(annotator())
    assert post(client, first, {"answers": relation_answers(first)}).status_code == 200
    response = client.get("/annotate/next/")
    assert response.status_code == 200
    assert "No in-house task is waiting" in response.content.decode()


@pytest.mark.django_db
def test_a_blocked_in_house_annotator_gets_no_tasks(client) -> None:
    """Blocked, the intake refuses the annotator's answers; the queue sent them to one
    task after another all the same, each answered in vain."""
    first, _ = local_hits()
    user = annotator()
    CrowdWorker.objects.create(backend=Backend.LOCAL, external_id=f"user-{user.pk}",
                               user=user, blocked=True, blocked_reason="spam")
    client.force_login(user)
    response = client.get("/annotate/next/")
    assert response.status_code == 403
    assert "blocked your in-house annotations" in response.content.decode()
    assert config(client.get(page_url(first)))["mode"] == "closed"
    assert post(client, first, {"answers": relation_answers(first)}).status_code == 403


@pytest.mark.django_db
def test_next_task_queue(client) -> None:
    first, second = local_hits()
    client.force_login(make_user("researcher"))
    assert client.get("/annotate/next/").status_code == 403
    client.force_login(annotator())
    assert client.get("/annotate/next/")["Location"] == f"/annotate/hit/{first.url_key}/"
    page = client.get(page_url(first))
    assert post(client, first, {"answers": relation_answers(first)},
                HTTP_X_CSRFTOKEN=config(page)["csrf"]).status_code == 200
    assert client.get("/annotate/next/")["Location"] == f"/annotate/hit/{second.url_key}/"
    second.max_assignments = 0     # full: nobody else needs to answer it
    second.save()
    response = client.get("/annotate/next/")
    assert response.status_code == 200
    assert "No in-house task is waiting" in response.content.decode()


# --- Try-it pages -----------------------------------------------------------------------------


@pytest.mark.django_db
@pytest.mark.parametrize("kind", ["relation", "entity", "exhaustive"])
def test_try_pages_work_without_a_corpus(client, kind) -> None:
    response = client.get(f"/annotate/try/{kind}/")
    assert response.status_code == 200
    assert config(response)["mode"] == "try"
    assert "built-in example" in config(response)["message"]
    assert client.get("/annotate/try/nonsense/").status_code == 404


@pytest.mark.django_db
@pytest.mark.parametrize("kind", ["relation", "entity", "exhaustive"])
def test_try_pages_use_the_corpus_and_store_nothing(client, kind) -> None:
    relation_hit()                                  # a corpus with pairs and system mentions
    document_hit(TaskKind.EXHAUSTIVE, external_id="X")     # and gold mentions
    Submission.objects.update(public=True)          # only public systems are shown
    before = (Assignment.objects.count(), Response.objects.count())
    response = client.get(f"/annotate/try/{kind}/?seed=3")
    assert response.status_code == 200
    assert "corpus t" in config(response)["message"]
    assert (Assignment.objects.count(), Response.objects.count()) == before


@pytest.mark.django_db
@pytest.mark.parametrize("kind", ["relation", "exhaustive"])
def test_try_pages_never_show_private_or_withdrawn_systems(client, kind) -> None:
    """The try pages are public: a private system's pairs, canonical mentions and links
    (relation) or its mentions and entity clusters (exhaustive, without gold) stay
    hidden, as its report does (404); a public one's may be shown."""
    relation_hit()                                  # a private system's pairs and links
    SubmissionEntity.objects.update(link="Wikipedia:Private_Link")
    for who in (None, make_user("eve")):
        if who is not None:
            client.force_login(who)
        for seed in range(4):
            response = client.get(f"/annotate/try/{kind}/?seed={seed}")
            html = response.content.decode()
            assert "built-in example" in config(response)["message"]
            assert "Private_Link" not in html
    Submission.objects.update(public=True, state="withdrawn")
    assert "built-in example" in config(client.get(f"/annotate/try/{kind}/"))["message"]
    Submission.objects.update(state="ingested")
    response = client.get(f"/annotate/try/{kind}/?seed=1")
    assert "corpus t" in config(response)["message"]
    if kind == "relation":
        assert "Private_Link" in response.content.decode()


@pytest.mark.django_db
def test_document_text_is_escaped(client) -> None:
    from kbpo.core.models import Corpus
    from tests.factories import make_corpus

    evil = 'Ada Byron wrote </script><script>alert("x")</script> in London.'
    make_corpus("demo", {"EVIL": evil})
    assert Corpus.objects.filter(tag="demo").exists()
    response = client.get("/annotate/try/entity/")
    html = response.content.decode()
    assert "<script>alert" not in html
    assert "\\u003C/script\\u003E" in html


@pytest.mark.django_db
def test_home_links_to_the_try_pages(client) -> None:
    html = client.get("/").content.decode()
    for kind in ("relation", "entity", "exhaustive"):
        assert f'href="/annotate/try/{kind}/"' in html


# --- Rate limits --------------------------------------------------------------------------


@pytest.mark.django_db
def test_answer_endpoint_limits_each_worker(client, settings) -> None:
    """Per MTurk worker id and address: beyond the limit a 429 naming the worker id;
    another worker at the same address is not held back, and neither is the same
    worker id from another address — a claimed id proves nothing before MTurk confirms
    it, so posts made with a worker's id elsewhere cannot lock that worker out."""
    settings.KBPO_ANSWER_RATE_PER_WORKER = 3
    settings.KBPO_ANSWER_RATE_WINDOW = WINDOW   # no test run straddles two windows
    hit = relation_hit()
    codes = [post(client, hit, mturk_body(hit, relation_answers(hit), assignment=f"A{i}"),
                  REMOTE_ADDR="203.0.113.1").status_code for i in range(5)]
    assert codes == [200, 200, 200, 429, 429]
    refused = post(client, hit, mturk_body(hit, relation_answers(hit), assignment="A9"),
                   REMOTE_ADDR="203.0.113.1")
    assert refused.status_code == 429 and refused.json()["field"] == "rate"
    assert "too many answers from this worker id" in refused.json()["error"]
    assert 1 <= int(refused["Retry-After"]) <= WINDOW
    # Another worker is not held back by this one.
    other = post(client, hit, mturk_body(hit, relation_answers(hit), worker="W2",
                                         assignment="B1"), REMOTE_ADDR="203.0.113.1")
    assert other.status_code == 200
    # The same worker id from another address: its own count.
    victim = post(client, hit, mturk_body(hit, relation_answers(hit), assignment="C1"),
                  REMOTE_ADDR="198.51.100.7")
    assert victim.status_code == 200
    assert PagePost.objects.count() == 5


@pytest.mark.django_db
def test_answer_endpoint_limits_each_address(client, settings) -> None:
    settings.KBPO_ANSWER_RATE_PER_IP = 4
    settings.KBPO_ANSWER_RATE_WINDOW = WINDOW
    hit = relation_hit()
    codes = [post(client, hit, mturk_body(hit, relation_answers(hit), worker=f"W{i}",
                                          assignment=f"A{i}"),
                  REMOTE_ADDR="192.0.2.1").status_code for i in range(6)]
    assert codes == [200, 200, 200, 200, 429, 429]
    # Invented worker ids do not get around it; garbage bodies count too.
    garbage = client.post(f"/annotate/hit/{hit.url_key}/answers/", data=b"{not json",
                          content_type="application/json", REMOTE_ADDR="192.0.2.1")
    assert garbage.status_code == 429
    assert "your network address" in garbage.json()["error"]
    assert post(client, hit, mturk_body(hit, relation_answers(hit), worker="WX",
                                        assignment="AX"),
                REMOTE_ADDR="192.0.2.2").status_code == 200


@pytest.mark.django_db
def test_client_address_behind_trusted_proxies(client, settings) -> None:
    settings.KBPO_ANSWER_RATE_PER_IP = 1
    settings.KBPO_ANSWER_RATE_WINDOW = WINDOW
    settings.KBPO_TRUSTED_PROXY_COUNT = 1
    hit = relation_hit()

    def send(i: int, forwarded: str) -> int:
        return post(client, hit, mturk_body(hit, relation_answers(hit), worker=f"W{i}",
                                            assignment=f"A{i}"),
                    REMOTE_ADDR="10.0.0.1", HTTP_X_FORWARDED_FOR=forwarded).status_code

    assert send(1, "198.51.100.1") == 200
    # A client writing its own X-Forwarded-For entry is still seen at its real address.
    assert send(2, "1.2.3.4, 198.51.100.1") == 429
    assert send(3, "198.51.100.2") == 200
    # Garbage where an address should be: the proxy's own address, and no error.
    assert send(4, "not-an-address") == 200
    assert send(5, "<script>") == 429
    assert PagePost.objects.get(worker_external_id="W4").client_ip == "10.0.0.1"


@pytest.mark.django_db
def test_hit_pages_show_no_private_or_withdrawn_systems_entity_data(client) -> None:
    """A HIT page shows the requesting system's canonical mention and link for a span;
    where it gave none, another system's — but a HIT page is open to any worker with
    its link, so never a private or withdrawn system's (a public active one's is fine)."""
    from submissions.models import SubmissionMention
    from tests.factories import make_submission

    hit = relation_hit()
    SubmissionMention.objects.all().delete()  # the requesting system says nothing
    doc = hit.items.first().question.pair.document
    other = make_submission(doc.corpus, [], name="other")
    Submission.objects.filter(pk=other.pk).update(public=False)
    b0, e0 = span(doc, "Ada Byron")
    b1, e1 = span(doc, "Ada Byron", 1)
    ent = SubmissionEntity.objects.create(
        submission=other, node=":Ada", type="PER", link="Wikipedia:Private_Link",
        canonical_document=doc, canonical_begin=b0, canonical_end=e0)
    SubmissionMention.objects.create(submission=other, entity=ent, document=doc, begin=b1,
                                     end=e1, type="PER")

    def shown() -> bool:
        page = client.get(page_url(hit, assignmentId="A1", hitId=hit.external_id,
                                   workerId="W1", turkSubmitTo=SANDBOX))
        assert page.status_code == 200
        return "Private_Link" in page.content.decode()

    assert not shown()
    Submission.objects.filter(pk=other.pk).update(public=True)
    assert shown()
    Submission.objects.filter(pk=other.pk).update(state="withdrawn")
    assert not shown()


@pytest.mark.django_db
def test_try_pages_are_rate_limited_per_address(client, settings) -> None:
    """Public and unauthenticated, each drawing rows at random: past the limit an address
    gets a 429 page with the wait in Retry-After; another address is served."""
    from django.core.cache import cache

    cache.clear()
    settings.KBPO_TRY_RATE_PER_IP, settings.KBPO_TRY_RATE_WINDOW = 3, WINDOW
    for _ in range(3):
        assert client.get("/annotate/try/relation/").status_code == 200
    refused = client.get("/annotate/try/entity/")
    assert refused.status_code == 429 and int(refused["Retry-After"]) > 0
    assert "Too many try-it pages" in refused.content.decode()
    other = client.get("/annotate/try/relation/", REMOTE_ADDR="203.0.113.9")
    assert other.status_code == 200
