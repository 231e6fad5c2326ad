"""A simulated crowd for entity and exhaustive-relation tasks, answering from gold.jsonl.

Answers go through `intake.submit_assignment`, the path real answers take, so the
whole workflow (aggregation, follow-up tasks, completion) runs as in production.

Honest workers keep each gold mention with probability equal to their accuracy;
otherwise they make one of the errors real annotators make: miss the mention, mark
only its first word, give it a wrong type, or split it off its entity. Spammers mark
random gold mentions with random types. Relation answers per pair come from
`annotations.crowd.simulation.simulate_answer` (a wrong option, uniformly, when wrong).
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from django.conf import settings

from annotations.crowd.simulation import (
    GoldKey,
    SimWorker,
    _rng,
    assign_workers,
    make_pool,
    simulate_answer,
)
from annotations.interfaces.intake import AnswerIn, IntakeError, submit_assignment, worker_for
from annotations.models import Backend, Hit, HitState, QuestionState, TaskKind
from kbpo.core.models import Corpus
from kbpo.core.schema import ENTITY_TYPES, NO_RELATION
from kbpo.core.schemas import DOCRED, get_schema

from . import docred_facts
from .workflow import DOCUMENT_KINDS, exhaustive_candidate_pairs


def entity_answer(worker: SimWorker, text: str, gold_mentions: list[dict], seed: int,
                  question_id: int) -> list[dict]:
    """One simulated worker's `mentions` for a document (deterministic per seed)."""
    rng = _rng(seed, worker.worker_id, question_id, "entities")
    longest: dict[str, tuple[int, int]] = {}
    for m in gold_mentions:
        b, e = m["span"]
        cur = longest.get(m["entity"])
        if cur is None or (e - b, -b) > (cur[1] - cur[0], -cur[0]):
            longest[m["entity"]] = (b, e)
    out: list[dict] = []
    spam_types = {k: rng.choice(ENTITY_TYPES) for k in range(5)}
    for m in gold_mentions:
        (b, e), typ, entity = m["span"], m["type"], str(m["entity"])
        canonical = longest[m["entity"]] == (b, e)
        link = m.get("link") or ""
        if worker.spammer:
            if rng.random() < 0.5:
                k = rng.randrange(5)
                out.append({"begin": b, "end": e, "type": spam_types[k], "entity": f"s{k}",
                            "canonical": False, "link": ""})
            continue
        if rng.random() >= worker.accuracy:
            error = rng.choice(("miss", "first-word", "type", "split"))
            if error == "miss":
                continue
            if error == "first-word" and " " in text[b:e]:
                e = b + text[b:e].index(" ")
            elif error == "type":  # a mistyped mention becomes an entity of its own
                typ = rng.choice([t for t in ENTITY_TYPES if t != typ])
                entity, canonical = f"{entity}#type{b}", True
            elif error == "split":
                entity, canonical = f"{entity}#split{b}", True
        out.append({"begin": b, "end": e, "type": typ, "entity": entity,
                    "canonical": canonical, "link": link})
    return _well_formed(out)


def _well_formed(mentions: list[dict]) -> list[dict]:
    """Make an answer one the task page could have produced.

    The page gives every entity exactly one canonical mention and one link; a worker's
    mistakes (a missed canonical mention, a spammer's clusters) must not break that.
    """
    clusters: dict[str, list[dict]] = {}
    for m in mentions:
        clusters.setdefault(m["entity"], []).append(m)
    for members in clusters.values():
        head = next((m for m in members if m["canonical"]), None) or max(
            members, key=lambda m: (m["end"] - m["begin"], -m["begin"]))
        link = next((m["link"] for m in members if m["link"]), "")
        for m in members:
            m["canonical"] = m is head
            m["link"] = link
    return mentions


def facts_answer(worker: SimWorker, doc_id: str, entities: list[docred_facts.Entity],
                 heads: list[int], key: GoldKey, relations: list[str], seed: int,
                 question_id: int) -> list[dict]:
    """One simulated worker's `facts` for a DocRED head group (deterministic per seed).

    An honest worker lists each true fact of the group's heads with probability equal to
    their accuracy; otherwise they miss it or give the pair a wrong relation (half and
    half), the errors people make on a page where they add facts themselves. At their
    error rate they also add one false fact on a pair holding none (a reversed true
    pair when there is one). A spammer adds a few random facts."""
    rng = _rng(seed, worker.worker_id, question_id, "facts")
    n = len(entities)
    cap = get_schema(DOCRED).max_relations_per_answer or settings.KBPO_MAX_RELATIONS_PER_ANSWER
    pairs = [(h, t) for h in heads for t in range(n) if t != h]
    out: set[tuple[int, int, str]] = set()
    if worker.spammer:
        for _ in range(rng.randint(0, 3)):
            h, t = rng.choice(pairs)
            out.add((h, t, rng.choice(relations)))
        return _capped(out, cap)
    error = 1.0 - worker.accuracy
    true_pairs = []
    for h, t in pairs:
        truth = sorted(key.truth((doc_id, *entities[h].anchor, *entities[t].anchor))
                       - {NO_RELATION})
        if truth:
            true_pairs.append((h, t))
        for r in truth:
            if rng.random() < worker.accuracy:
                out.add((h, t, r))
            elif rng.random() < 0.5:
                out.add((h, t, rng.choice([x for x in relations if x not in truth])))
    if pairs and rng.random() < error:
        reversed_true = [(t, h) for h, t in true_pairs if t in heads and (t, h) not in true_pairs]
        h, t = rng.choice(reversed_true) if reversed_true else rng.choice(pairs)
        out.add((h, t, rng.choice(relations)))
    return _capped(out, cap)


def _capped(facts: set[tuple[int, int, str]], cap: int) -> list[dict]:
    """The facts as the page sends them, at most `cap` relations per pair (as the page
    allows)."""
    per_pair: Counter = Counter()
    out = []
    for h, t, r in sorted(facts):
        per_pair[(h, t)] += 1
        if per_pair[(h, t)] <= cap:
            out.append({"h": h, "t": t, "r": r})
    return out


def exhaustive_answer(worker: SimWorker, doc_id: str, pairs: list, key: GoldKey, seed: int,
                      question_id: int) -> list[dict]:
    """One simulated worker's `relations`: a choice for every candidate pair."""
    out = []
    for i, c in enumerate(pairs):
        # When the aggregated types differ from gold, the page cannot offer the gold
        # relation; a careful worker then answers "no relation".
        truth = frozenset(p for p in key.truth((doc_id, *c.subject, *c.object))
                          if p in c.options) or frozenset({NO_RELATION})
        choices = simulate_answer(worker, truth, c.options, seed, question_id * 100_000 + i,
                                  settings.KBPO_MAX_RELATIONS_PER_ANSWER)
        out.append({"subject": list(c.subject), "object": list(c.object), "choices": choices})
    return out


@dataclass
class SimulationReport:
    assignments: int = 0
    rounds: int = 0
    refused: Counter = field(default_factory=Counter)
    kinds: Counter = field(default_factory=Counter)

    def summary(self) -> str:
        kinds = ", ".join(f"{n} {k}" for k, n in sorted(self.kinds.items())) or "none"
        text = f"{self.assignments} simulated assignments ({kinds}) in {self.rounds} rounds"
        if self.refused:
            text += "; refused: " + ", ".join(f"{n} × {r}" for r, n in self.refused.items())
        return text


def _open_hits(corpus: Corpus) -> list[Hit]:
    return list(Hit.objects.filter(corpus=corpus, kind__in=DOCUMENT_KINDS,
                                   backend=Backend.SIMULATED, state=HitState.POSTED)
                .order_by("pk"))


def simulate_exhaustive(corpus: Corpus, gold_path: Path, error_rate: float = 0.1,
                        seed: int = 0, n_workers: int = 10, spammer_fraction: float = 0.1,
                        wait_seconds: float = 0.0, max_rounds: int = 100) -> SimulationReport:
    """Answer every posted simulated entity/exhaustive HIT of the corpus until none is left.

    Each round answers the HITs open now; aggregation then opens the next tasks (at once
    with eager Celery; with real workers we poll for up to `wait_seconds` between rounds).
    """
    key = GoldKey.load(gold_path)
    pool = make_pool(n_workers, error_rate, seed, spammer_fraction)
    report = SimulationReport()
    idle_since = time.monotonic()
    while report.rounds < max_rounds:
        hits = _open_hits(corpus)
        if not hits:
            if time.monotonic() - idle_since >= wait_seconds:
                break
            time.sleep(0.5)
            continue
        report.rounds += 1
        progressed = False
        for hit in hits:
            progressed |= _answer_hit(hit, key, pool, seed, report)
        if progressed:
            idle_since = time.monotonic()
        elif time.monotonic() - idle_since >= wait_seconds:
            break
        elif wait_seconds:
            time.sleep(0.5)
    return report


def _answer_hit(hit: Hit, key: GoldKey, pool: list[SimWorker], seed: int,
                report: SimulationReport) -> bool:
    item = hit.items.select_related("question__document").first()
    if item is None or item.question.state != QuestionState.OPEN:
        return False
    question = item.question
    doc = question.document
    assert doc is not None
    done = set(hit.assignments.values_list("worker__external_id", flat=True))
    need = hit.max_assignments - len(done)
    if need <= 0:
        return False
    gold = key.mentions.get(doc.doc_id)
    if gold is None:
        report.refused["document not in the gold file"] += 1
        return False
    facts = question.head_entities is not None
    pairs = (exhaustive_candidate_pairs(doc) if question.kind == TaskKind.EXHAUSTIVE
             and not facts else [])
    entities = docred_facts.document_entities(doc) if facts else []
    relations = list(get_schema(doc.corpus.schema).relations) if facts else []
    progressed = False
    for worker in assign_workers(pool, need, seed, question.pk, exclude=done):
        if facts:
            extra = {"facts": facts_answer(worker, doc.doc_id, entities,
                                           list(question.head_entities), key, relations, seed,
                                           question.pk)}
        elif question.kind == TaskKind.ENTITY:
            extra = {"mentions": entity_answer(worker, doc.text, gold, seed, question.pk)}
        else:
            extra = {"relations": exhaustive_answer(worker, doc.doc_id, pairs, key, seed,
                                                    question.pk)}
        try:
            submit_assignment(
                hit=hit, worker=worker_for(Backend.SIMULATED, worker.worker_id),
                assignment_id=f"sim-{hit.pk}-{worker.worker_id}",
                answers=[AnswerIn(question.pk, ("done",), extra)], source="simulated")
        except IntakeError as exc:
            report.refused[exc.message] += 1
            continue
        report.assignments += 1
        report.kinds[question.kind] += 1
        progressed = True
    return progressed


__all__ = ["SimulationReport", "entity_answer", "exhaustive_answer", "facts_answer",
           "simulate_exhaustive"]
