"""The relation task on a DocRED corpus without a browser: the whole document, both
entities' mentions, the cited evidence, the schema's relations (usual ones first), and
answers in the schema's relation ids through the shared intake."""

from __future__ import annotations

import json

import pytest
from django.test import Client

from annotations.models import Backend, PagePost, Response
from kbpo.core.schemas import DOCRED, get_schema
from tests.annotations.interfaces.builders import annotator, docred_relation_hit
from tests.annotations.interfaces.test_task_views import SANDBOX, mturk_body, page_url, post


def task_data(response) -> dict:
    html = response.content.decode()
    marker = 'id="task-data" type="application/json">'
    start = html.index(marker) + len(marker)
    return json.loads(html[start:html.index("</script>", start)])


def answers(hit, choices) -> list[dict]:
    return [{"question": i, "choices": c, "extra": {"subject_ok": True, "object_ok": True,
                                                   "link_ok": None}, "seconds": 2.0}
            for i, c in enumerate(choices)]


@pytest.mark.django_db
def test_a_docred_question_shows_the_document_its_entities_and_the_schema(client) -> None:
    hit = docred_relation_hit()
    response = client.get(page_url(hit, assignmentId="A1", hitId=hit.external_id,
                                   workerId="W1", turkSubmitTo=SANDBOX))
    assert response.status_code == 200
    html = response.content.decode()
    assert "js/annotate-relation-document.js" in html and "rel-filter" in html
    assert "script-src 'self'" in response["Content-Security-Policy"]
    father, country = task_data(response)["questions"]
    assert father["document_level"] and father["title"] == "Ada Byron: a life"
    # the whole document, sentence by sentence, the system's evidence sentence flagged
    assert [s["evidence"] for s in father["sentences"]] == [False, True]
    assert father["sentences"][1]["text"].startswith("Her father, Lord Byron")
    assert [s["evidence"] for s in country["sentences"]] == [False, False]
    # every mention of each entity, not only its anchor
    assert (father["head"]["name"], father["head"]["type"]) == ("Ada Byron", "PER")
    assert [m["text"] for m in father["head"]["mentions"]] == ["Ada Byron"]
    assert [m["text"] for m in father["tail"]["mentions"]] == ["Byron", "Lord Byron"]
    # all 96 relations with definitions, the usual ones for PER → PER first, then none
    options = father["options"]
    schema = get_schema(DOCRED)
    assert len(options) == len(schema.relations) + 1 and options[-1]["value"] == "no_relation"
    usual = {r.id for r in schema.candidates("PER", "PER")}
    n = len(usual)
    assert {o["value"] for o in options[:n]} == usual and "P22" in usual
    assert all(o["candidate"] for o in options[:n]) and not any(o["candidate"]
                                                                for o in options[n:-1])
    p22 = next(o for o in options if o["value"] == "P22")
    assert (p22["label"], p22["description"]) == ("father", schema.relation("P22").definition)
    assert "P17" in {o["value"] for o in country["options"][:len(
        schema.candidates("LOC", "LOC"))]}


@pytest.mark.django_db
def test_a_tac_question_keeps_its_sentence_page(client) -> None:
    from tests.annotations.interfaces.builders import relation_hit

    hit = relation_hit()
    response = client.get(page_url(hit, assignmentId="A1", hitId=hit.external_id,
                                   workerId="W1", turkSubmitTo=SANDBOX))
    assert "js/annotate-relation.js" in response.content.decode()
    assert "document_level" not in task_data(response)["questions"][0]


@pytest.mark.django_db
def test_docred_answers_flow_through_the_intake(client) -> None:
    hit = docred_relation_hit(backend=Backend.LOCAL, external_id=None)
    user = annotator()
    local = Client(enforce_csrf_checks=False)
    local.force_login(user)
    # a relation of the schema the types do not usually take is still an answer
    response = post(local, hit, {"answers": answers(hit, [["P22"], ["P131", "P17"]])})
    assert response.status_code == 200, response.content
    stored = {r.question.pair.subject_type: r.choices
              for r in Response.objects.select_related("question__pair")}
    assert stored == {"PER": ["P22"], "LOC": ["P131", "P17"]}  # sorted by the intake


@pytest.mark.django_db
def test_a_tac_relation_is_no_answer_on_a_docred_pair(client) -> None:
    hit = docred_relation_hit()
    response = post(client, hit, mturk_body(hit, answers(hit, [["per:parents"], ["P17"]])))
    assert response.status_code == 400
    assert response.json()["field"] == "answers[0].choices"
    assert not PagePost.objects.exists()


@pytest.mark.django_db
def test_the_try_page_on_a_docred_corpus_shows_document_questions(client) -> None:
    from submissions.models import Submission

    hit = docred_relation_hit()
    response = client.get("/annotate/try/relation/?seed=1")
    assert response.status_code == 200
    # the system is private: its pairs are not shown, the built-in example is
    assert "document_level" not in task_data(response)["questions"][0]
    Submission.objects.filter(pk=hit.submission_id).update(public=True)
    data = task_data(client.get("/annotate/try/relation/?seed=1"))
    assert data["source"] == "corpus redocred"
    assert {q["head"]["name"] for q in data["questions"]} == {"Ada Byron", "London"}
    cited = {q["head"]["name"]: [s["evidence"] for s in q["sentences"]]
             for q in data["questions"]}
    assert cited == {"Ada Byron": [False, True], "London": [False, False]}


@pytest.mark.django_db
def test_a_pair_without_its_entities_is_a_misconfigured_task(client) -> None:
    from kbpo.core.models import DocumentEntity

    hit = docred_relation_hit()
    DocumentEntity.objects.filter(document__doc_id="Ada_Byron_a_life", index=3).delete()
    response = client.get(page_url(hit, assignmentId="A1", hitId=hit.external_id,
                                   workerId="W1", turkSubmitTo=SANDBOX))
    assert response.status_code == 500
    assert "no entity of Ada_Byron_a_life is anchored" in response.content.decode()
