"""Issue 41, hostile input on the task pages and the answer endpoint: task pages cannot
be walked, a preview shows one question, and an anonymous post cannot park a blob in
the database (each kind's `extra` is checked against what its page sends)."""

from __future__ import annotations

import json

import pytest

from annotations.models import Hit, HitState, PagePost, TaskKind
from tests.annotations.interfaces.builders import document_hit, relation_hit
from tests.annotations.interfaces.test_task_views import (
    SANDBOX,
    config,
    mturk_body,
    page_url,
    post,
    relation_answers,
)
from tests.factories import span

pytestmark = pytest.mark.django_db
BLOB = "x" * 190_000  # 190 KB: issue 41's posts kept 200,000 characters per answer


@pytest.fixture(autouse=True)
def _no_rate_limits(settings) -> None:
    settings.KBPO_ANSWER_RATE_PER_IP = 10**6
    settings.KBPO_ANSWER_RATE_PER_WORKER = 10**6


def test_walking_sequential_ids_finds_no_task_page(client) -> None:
    hits = [relation_hit(), document_hit(TaskKind.ENTITY, external_id="HIT-E"),
             document_hit(TaskKind.EXHAUSTIVE, external_id="HIT-X")]
    top = max(h.pk for h in hits) + 50
    found = [n for n in range(1, top) if client.get(f"/annotate/hit/{n}/").status_code != 404]
    posts = [n for n in range(1, top) if client.post(
        f"/annotate/hit/{n}/answers/", data="{}", content_type="application/json"
    ).status_code != 404]
    assert (found, posts) == ([], [])
    # The pages are there, under keys nobody can count to.
    assert all(client.get(page_url(h)).status_code == 200 for h in hits)
    assert len({h.url_key for h in hits}) == len(hits)
    assert all(len(h.url_key) >= 32 and not h.url_key.isdigit() for h in hits)
    assert all(str(h.pk) not in config(client.get(page_url(h))).values() for h in hits)


def test_a_preview_shows_one_question_and_accepting_shows_all(client) -> None:
    hit = relation_hit()
    preview = client.get(page_url(hit, assignmentId="ASSIGNMENT_ID_NOT_AVAILABLE",
                                  hitId=hit.external_id))
    accepted = client.get(page_url(hit, assignmentId="A1", hitId=hit.external_id,
                                   workerId="W1", turkSubmitTo=SANDBOX))
    assert (config(preview)["mode"], config(accepted)["mode"]) == ("preview", "mturk")

    def shown(response) -> list[dict]:
        html = response.content.decode()
        start = html.index('id="task-data" type="application/json">') + len(
            'id="task-data" type="application/json">')
        return json.loads(html[start:html.index("</script>", start)])["questions"]

    assert (len(shown(preview)), len(shown(accepted))) == (1, 2)
    # The second question's entity link (a system's output) is not on the preview.
    assert "Ada_Lovelace" not in preview.content.decode()
    assert "Ada_Lovelace" in accepted.content.decode()
    # Nor once the HIT is closed.
    Hit.objects.filter(pk=hit.pk).update(state=HitState.EXPIRED)
    closed = client.get(page_url(hit))
    assert config(closed)["mode"] == "closed" and len(shown(closed)) == 1


def _entity_answer(hit, **extra) -> list[dict]:
    doc = hit.items.get().question.document
    b, e = span(doc, "Ada Byron")
    mention = {"begin": b, "end": e, "type": "PER", "entity": "E1", "canonical": True,
               "link": ""}
    return [{"question": 0, "choices": ["done"], "extra": {"mentions": [mention], **extra}}]


def _exhaustive_answer(hit, **extra) -> list[dict]:
    from annotations.interfaces.candidates import document_pairs

    doc = hit.items.get().question.document
    relations = [{"subject": [p.subject.begin, p.subject.end],
                  "object": [p.object.begin, p.object.end], "choices": ["no_relation"]}
                 for p in document_pairs(doc)]
    return [{"question": 0, "choices": ["done"], "extra": {"relations": relations, **extra}}]


def _relation_blob(hit) -> list[dict]:
    answers = relation_answers(hit)
    for a in answers:
        a["extra"]["note"] = BLOB
    return answers


@pytest.mark.parametrize("kind", [TaskKind.RELATION, TaskKind.ENTITY, TaskKind.EXHAUSTIVE])
def test_a_190_kb_extra_is_refused_and_nothing_is_kept(client, kind) -> None:
    if kind == TaskKind.RELATION:
        hit = relation_hit()
        good, blob = relation_answers(hit), _relation_blob(hit)
    elif kind == TaskKind.ENTITY:
        hit = document_hit(kind)
        good, blob = _entity_answer(hit), _entity_answer(hit, note=BLOB)
    else:
        hit = document_hit(kind)
        good, blob = _exhaustive_answer(hit), _exhaustive_answer(hit, note=BLOB)
    refused = post(client, hit, mturk_body(hit, blob))
    assert 400 <= refused.status_code < 500 and refused.json()["field"] == "answers[0].extra"
    assert not PagePost.objects.exists()
    # The page's own answer passes, and what is kept is small.
    ok = post(client, hit, mturk_body(hit, good))
    assert ok.status_code == 200, ok.json()
    assert len(json.dumps(PagePost.objects.get().payload)) < 5_000


@pytest.mark.parametrize(("kind", "extra", "field"), [
    (TaskKind.RELATION, {"note": "x" * 1000}, "answers[0].extra"),
    (TaskKind.RELATION, {"subject_ok": "x" * 1000}, "answers[0].extra.subject_ok"),
    (TaskKind.ENTITY, {"note": "x"}, "answers[0].extra"),
    (TaskKind.EXHAUSTIVE, {"note": "x"}, "answers[0].extra"),
])
def test_fields_the_page_never_sends_are_refused(client, kind, extra, field) -> None:
    if kind == TaskKind.RELATION:
        hit = relation_hit()
        answers = relation_answers(hit)
        answers[0]["extra"].update(extra)
    else:
        hit = document_hit(kind)
        answers = (_entity_answer if kind == TaskKind.ENTITY else _exhaustive_answer)(
            hit, **extra)
    refused = post(client, hit, mturk_body(hit, answers))
    assert (refused.status_code, refused.json()["field"]) == (400, field)
    assert "unknown field" in refused.json()["error"] or "true, false" in \
        refused.json()["error"]
    assert not PagePost.objects.exists()


@pytest.mark.parametrize(("where", "value"), [
    ("entity", "E" * 65), ("link", "Wikipedia:" + "T" * 300), ("pad", "x")])
def test_entity_mentions_hold_only_short_page_fields(client, where, value) -> None:
    hit = document_hit(TaskKind.ENTITY)
    answers = _entity_answer(hit)
    answers[0]["extra"]["mentions"][0][where] = value
    refused = post(client, hit, mturk_body(hit, answers))
    assert refused.status_code == 400
    assert refused.json()["field"].startswith("answers[0].extra.mentions[0]")
    assert not PagePost.objects.exists()


def test_more_mentions_than_tokens_are_refused(client) -> None:
    hit = document_hit(TaskKind.ENTITY)
    answers = _entity_answer(hit)
    answers[0]["extra"]["mentions"] *= 200
    refused = post(client, hit, mturk_body(hit, answers))
    assert (refused.status_code, refused.json()["field"]) == (400,
                                                              "answers[0].extra.mentions")
