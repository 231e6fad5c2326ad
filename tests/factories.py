"""Small builders for test data that skip file ingestion (shared by the test suites)."""

from __future__ import annotations

from decimal import Decimal

from django.contrib.auth.models import User

from annotations.models import Backend, Hit, HitQuestion, HitState, Question, TaskKind
from kbpo.core.corpus import split_text
from kbpo.core.models import Corpus, Document, Sentence
from submissions.models import (
    MentionPair,
    RelationInstance,
    State,
    Submission,
    SubmissionEntity,
)

# The crowd hands a fully labelled submission to scoring; the scoring app may already
# have scored it by the time a test looks.
AFTER_CROWD = frozenset({State.SCORING, State.SCORED})

TEXT = ("Ada Byron was born in London. Ada Byron married Tom King in Paris. "
        "Tom King works for Acme. Acme is based in London.")


def make_corpus(tag: str = "t", texts: dict[str, str] | None = None) -> Corpus:
    """A corpus whose documents are split like real ones."""
    corpus, _ = Corpus.objects.get_or_create(tag=tag)
    for doc_id, text in (texts or {"D1": TEXT}).items():
        doc = Document.objects.create(corpus=corpus, doc_id=doc_id, text=text,
                                      text_sha256=doc_id, length=len(text))
        Sentence.objects.bulk_create(
            Sentence(document=doc, index=i, begin=b, end=e, tokens=t)
            for i, (b, e, t) in enumerate(split_text(text)))
    return corpus


def span(doc: Document, text: str, nth: int = 0) -> tuple[int, int]:
    """Offsets of the nth occurrence of `text` in the document."""
    start = -1
    for _ in range(nth + 1):
        start = doc.text.index(text, start + 1)
    return start, start + len(text)


def make_pair(doc: Document, subj: tuple[int, int], subj_type: str, obj: tuple[int, int],
              obj_type: str) -> MentionPair:
    sentence = Sentence.objects.get(document=doc, begin__lte=subj[0], end__gte=obj[1])
    pair, _ = MentionPair.objects.get_or_create(
        document=doc, subject_begin=subj[0], subject_end=subj[1], object_begin=obj[0],
        object_end=obj[1], defaults={"sentence": sentence, "subject_type": subj_type,
                                     "object_type": obj_type})
    return pair


def make_user(name: str = "ada", staff: bool = False) -> User:
    user, created = User.objects.get_or_create(username=name,
                                               defaults={"email": f"{name}@example.org"})
    if created:
        user.set_password("pw-for-tests-123")
        user.is_staff = staff
        user.save()
    return user


def make_submission(corpus: Corpus, instances: list[tuple[MentionPair, str]],
                    owner: User | None = None, name: str = "sys",
                    state: str = State.INGESTED) -> Submission:
    """A submission already ingested, predicting `predicate` on each pair."""
    sub = Submission.objects.create(owner=owner or make_user(), corpus=corpus, name=name,
                                    state=state, file="submissions/test.kb",
                                    n_relations=len(instances))
    for i, (pair, predicate) in enumerate(instances):
        entity = SubmissionEntity.objects.create(
            submission=sub, node=f":E{i}", type=pair.subject_type)
        RelationInstance.objects.create(submission=sub, pair=pair, predicate=predicate,
                                        subject_entity=entity, line=i + 2)
    return sub


def make_hit(corpus: Corpus, pairs: list[MentionPair], backend: str = Backend.SIMULATED,
             state: str = HitState.POSTED, submission: Submission | None = None) -> Hit:
    """A posted HIT with one open relation question per pair."""
    hit = Hit.objects.create(corpus=corpus, kind=TaskKind.RELATION, backend=backend,
                             state=state, reward=Decimal("0.25"), submission=submission)
    for i, pair in enumerate(pairs):
        question = Question.objects.create(corpus=corpus, pair=pair, kind=TaskKind.RELATION,
                                           requested_by=submission)
        HitQuestion.objects.create(hit=hit, question=question, position=i)
    return hit
