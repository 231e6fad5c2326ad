"""Annotation test data: HITs of each kind on the factories' corpus (also for the browser tests)."""

from __future__ import annotations

from decimal import Decimal

from annotations.models import Backend, GoldMention, Hit, HitQuestion, HitState, Question, TaskKind
from kbpo.core.models import Document
from submissions.models import SubmissionEntity, SubmissionMention
from tests.factories import make_corpus, make_hit, make_pair, make_submission, span

# (text, occurrence, type, entity) of the factories' TEXT:
# "Ada Byron was born in London. Ada Byron married Tom King in Paris.
#  Tom King works for Acme. Acme is based in London."
GOLD = [("Ada Byron", 0, "PER", "ada"), ("London", 0, "GPE", "london"),
        ("Ada Byron", 1, "PER", "ada"), ("Tom King", 0, "PER", "tom"), ("Paris", 0, "GPE", "paris"),
        ("Tom King", 1, "PER", "tom"), ("Acme", 0, "ORG", "acme"), ("Acme", 1, "ORG", "acme"),
        ("London", 1, "GPE", "london")]


def document(tag: str = "t") -> Document:
    existing = Document.objects.filter(corpus__tag=tag, doc_id="D1").first()
    return existing or Document.objects.get(corpus=make_corpus(tag), doc_id="D1")


def relation_hit(backend: str = Backend.MTURK, external_id: str | None = "HIT-REL-1",
                 state: str = HitState.POSTED) -> Hit:
    """Two pairs: Ada Byron/London (PER-GPE) and Ada Byron (2nd)/Tom King (PER-PER).

    The second Ada Byron's entity names the first as canonical and links Ada Lovelace,
    so the page shows the mention and link checks for question 2.
    """
    doc = document()
    p1 = make_pair(doc, span(doc, "Ada Byron"), "PER", span(doc, "London"), "GPE")
    p2 = make_pair(doc, span(doc, "Ada Byron", 1), "PER", span(doc, "Tom King"), "PER")
    sub = make_submission(doc.corpus, [(p1, "per:place_of_birth"), (p2, "per:spouse")])
    b0, e0 = span(doc, "Ada Byron")
    b1, e1 = span(doc, "Ada Byron", 1)
    ent = SubmissionEntity.objects.create(
        submission=sub, node=":Ada", type="PER", link="Wikipedia:Ada_Lovelace",
        canonical_document=doc, canonical_begin=b0, canonical_end=e0)
    SubmissionMention.objects.create(submission=sub, entity=ent, document=doc, begin=b1, end=e1,
                                     type="PER")
    hit = make_hit(doc.corpus, [p1, p2], backend=backend, state=state, submission=sub)
    if external_id:
        hit.external_id = external_id
        hit.save(update_fields=["external_id"])
    return hit


def document_hit(kind: str, backend: str = Backend.MTURK, external_id: str | None = "HIT-DOC-1",
                 gold: bool = True) -> Hit:
    doc = document()
    if gold and kind == TaskKind.EXHAUSTIVE:
        for text, nth, type_, entity in GOLD:
            b, e = span(doc, text, nth)
            GoldMention.objects.create(document=doc, begin=b, end=e, type=type_, entity=entity,
                                       canonical=nth == 0)
    hit = Hit.objects.create(corpus=doc.corpus, kind=kind, backend=backend,
                             state=HitState.POSTED, reward=Decimal("1.00"),
                             external_id=external_id)
    q = Question.objects.create(corpus=doc.corpus, kind=kind, document=doc)
    HitQuestion.objects.create(hit=hit, question=q, position=0)
    return hit


def local_hits() -> list[Hit]:
    """Two in-house relation HITs on different pairs (oldest first)."""
    first = relation_hit(backend=Backend.LOCAL, external_id=None)
    doc = Document.objects.get(corpus=first.corpus, doc_id="D1")
    pair = make_pair(doc, span(doc, "Tom King", 1), "PER", span(doc, "Acme"), "ORG")
    return [first, make_hit(doc.corpus, [pair], backend=Backend.LOCAL)]


def annotator(name: str = "anna"):
    """A user with the in-house annotator permission."""
    from django.contrib.auth.models import Permission

    from tests.factories import make_user

    user = make_user(name)
    user.user_permissions.add(Permission.objects.get(codename="annotate_locally"))
    return user


def docred_pairs(*pairs: tuple[int, int]) -> list:
    """Load tests/core/test_docred_load.DOCS as the DocRED corpus "redocred" and make one
    document-level MentionPair per (head, tail) entity index of its first document
    ("Ada_Byron_a_life": 0 Ada Byron, 1 1815, 2 London, 3 Lord Byron, 4 England)."""
    import json
    import tempfile
    from pathlib import Path

    from kbpo.core.docred_load import load_docred_corpus
    from kbpo.core.models import DocumentEntity
    from submissions.models import MentionPair
    from tests.core.test_docred_load import DOCS

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "dev.json"
        path.write_text(json.dumps(DOCS))
        load_docred_corpus("redocred", path)
    ents = {e.index: e for e in DocumentEntity.objects.filter(document__doc_id="Ada_Byron_a_life")}

    def pair(h: int, t: int) -> MentionPair:
        head, tail = ents[h], ents[t]
        return MentionPair.objects.create(
            document=head.document, sentence=head.document.sentences.first(),
            subject_begin=head.anchor_begin, subject_end=head.anchor_end,
            object_begin=tail.anchor_begin, object_end=tail.anchor_end,
            subject_type=head.type, object_type=tail.type)

    return [pair(h, t) for h, t in pairs]


def docred_relation_hit(backend: str = Backend.MTURK,
                        external_id: str | None = "HIT-DOCRED-1") -> Hit:
    """Two document-level questions on a DocRED corpus (tests/core/test_docred_load.DOCS):
    Ada Byron (X) → Lord Byron (Y), PER-PER, predicted P22 with evidence sentence 1 (index
    from 0); London (X) → England (Y), LOC-LOC, predicted P17 without evidence."""
    from submissions.models import InstanceEvidence

    father, country = docred_pairs((0, 3), (2, 4))
    corpus = father.document.corpus
    sub = make_submission(corpus, [(father, "P22"), (country, "P17")])
    InstanceEvidence.objects.create(instance=sub.instances.get(pair=father), sentences=[1])
    hit = make_hit(corpus, [father, country], backend=backend, submission=sub)
    if external_id:
        hit.external_id = external_id
        hit.save(update_fields=["external_id"])
    return hit


def docred_fact_hit(heads: tuple[int, ...] = (0, 1, 2), backend: str = Backend.MTURK,
                    external_id: str | None = "HIT-DOCRED-FACTS") -> Hit:
    """A DocRED exhaustive HIT (one head group) on tests/core/test_docred_load.DOCS's
    first document: 0 Ada Byron PER, 1 1815 TIME, 2 London LOC, 3 Lord Byron PER (also
    "Byron" inside "Ada Byron"), 4 England LOC, 5 England again (DocRED's duplicate)."""
    import json
    import tempfile
    from pathlib import Path

    from kbpo.core.docred_load import load_docred_corpus
    from kbpo.core.models import Corpus
    from tests.core.test_docred_load import DOCS

    if not Corpus.objects.filter(tag="redocred").exists():
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "dev.json"
            path.write_text(json.dumps(DOCS))
            load_docred_corpus("redocred", path)
    doc = Document.objects.get(corpus__tag="redocred", doc_id="Ada_Byron_a_life")
    hit = Hit.objects.create(corpus=doc.corpus, kind=TaskKind.EXHAUSTIVE, backend=backend,
                             state=HitState.POSTED, reward=Decimal("1.00"),
                             external_id=external_id)
    q = Question.objects.create(corpus=doc.corpus, kind=TaskKind.EXHAUSTIVE, document=doc,
                                head_entities=list(heads))
    HitQuestion.objects.create(hit=hit, question=q, position=0)
    return hit
