"""Aggregating k workers' entity annotations of one document by token-level majority.

Pure Python (no Django). Every worker's answer is a list of mentions
`{"begin", "end", "type", "entity", "canonical", "link"}` with character offsets and a
worker-local cluster id (`entity`). The aggregate is built in four steps, each by a
strict majority of the k workers (more than k/2):

1. **Spans.** Each mention is snapped to the tokens it overlaps. A token is *inside*
   a mention when a majority marked it. A run of inside tokens is cut where the
   majority type changes, and where a majority of the workers marking the token start
   a mention there (two adjacent names such as "Acme Paris" stay two mentions; one
   worker splitting "Ada Byron" in two does not split it). Partial overlaps therefore
   resolve token by token: "Nolda University" marked by two workers and "Nolda" by the
   third gives "Nolda University".
2. **Types.** A mention's type is the plurality of the workers' votes over its tokens
   (ties go to the type ranked first in the schema, so the result is deterministic).
3. **Clusters.** Each aggregated mention is mapped, per worker, to the worker mention
   overlapping it most. Two aggregated mentions of the same type co-refer when a
   majority of workers put their mapped mentions in one cluster; clusters are the
   connected components of that relation.
4. **Canonical mention and link.** In each cluster the mention most workers marked
   canonical (ties: the longest, then the earliest) is canonical; the link is the one a
   majority of workers gave the cluster, else none.

Malformed items in an answer (bad offsets, unknown types) are ignored and counted, so
one careless worker cannot stop a document.
"""

from __future__ import annotations

import bisect
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from kbpo.core.schema import ENTITY_TYPES, TYPE_RANK

TokenSpan = tuple[int, int]


@dataclass(frozen=True)
class WorkerMention:
    """One validated mention of one worker, snapped to token indices [first, last]."""

    first: int
    last: int
    type: str
    entity: str
    canonical: bool
    link: str


@dataclass(frozen=True)
class AggregatedMention:
    begin: int
    end: int
    type: str
    entity: str
    canonical: bool
    link: str
    support: float  # mean share of workers marking each of its tokens


@dataclass
class AggregationResult:
    mentions: list[AggregatedMention]
    ignored: Counter = field(default_factory=Counter)  # reason -> count of dropped items

    @property
    def entities(self) -> int:
        return len({m.entity for m in self.mentions})


def parse_mentions(items: object, tokens: Sequence[TokenSpan], length: int,
                   ignored: Counter) -> list[WorkerMention]:
    """Validate one worker's `mentions` list and snap each mention to token indices."""
    out: list[WorkerMention] = []
    if not isinstance(items, list):
        ignored["answer without a mentions list"] += 1
        return out
    starts = [b for b, _ in tokens]
    for item in items:
        if not isinstance(item, dict):
            ignored["mention is not an object"] += 1
            continue
        b, e, typ = item.get("begin"), item.get("end"), item.get("type")
        if (not isinstance(b, int) or not isinstance(e, int) or isinstance(b, bool)
                or isinstance(e, bool) or not 0 <= b < e <= length):
            ignored["offsets outside the document"] += 1
            continue
        if typ not in ENTITY_TYPES:
            ignored["unknown type"] += 1
            continue
        # tokens overlapping [b, e): the first token ending after b up to the last
        # token starting before e
        first = bisect.bisect_right(starts, b) - 1
        if first < 0 or tokens[first][1] <= b:
            first += 1
        last = bisect.bisect_left(starts, e) - 1
        if first >= len(tokens) or last < first:
            ignored["span covers no token"] += 1
            continue
        entity = item.get("entity")
        link = item.get("link") or ""
        out.append(WorkerMention(
            first, last, typ, str(entity) if entity not in (None, "") else f"_m{b}-{e}",
            item.get("canonical") is True, link if isinstance(link, str) else ""))
    return out


def _rank_winner(counts: Counter, previous: str | None = None) -> str:
    """The plurality key; ties go to `previous`, then to schema order."""
    best = max(counts.values())
    tied = [t for t, c in counts.items() if c == best]
    if previous in tied:
        return previous  # type: ignore[return-value]
    return min(tied, key=lambda t: (TYPE_RANK.get(t, 99), t))


def aggregate_mentions(tokens: Sequence[TokenSpan], answers: Sequence[object],
                       length: int | None = None) -> AggregationResult:
    """Aggregate the workers' `mentions` lists (one per worker) over the document tokens.

    `tokens` are the document's token spans in text order (character offsets);
    `length` bounds the offsets (defaults to the end of the last token).
    """
    ignored: Counter = Counter()
    k = len(answers)
    if k == 0 or not tokens:
        return AggregationResult([], ignored)
    length = length if length is not None else tokens[-1][1]
    workers = [parse_mentions(a, tokens, length, ignored) for a in answers]
    n_tok = len(tokens)
    # Per worker and token: the mention covering it (the first one given, if several).
    cover: list[list[int | None]] = []
    for mentions in workers:
        row: list[int | None] = [None] * n_tok
        for idx, m in enumerate(mentions):
            for t in range(m.first, m.last + 1):
                if row[t] is None:
                    row[t] = idx
        cover.append(row)

    # 1-2. spans and types by token-level majority
    runs: list[list[int]] = []
    token_type: list[str | None] = [None] * n_tok
    inside_votes: list[int] = [0] * n_tok
    prev_type: str | None = None
    for t in range(n_tok):
        marks = [(w, cover[w][t]) for w in range(k) if cover[w][t] is not None]
        inside_votes[t] = len(marks)
        if 2 * len(marks) <= k:
            prev_type = None
            continue
        types = Counter(workers[w][i].type for w, i in marks)  # type: ignore[index]
        typ = _rank_winner(types, prev_type)
        starts = sum(1 for w, i in marks if workers[w][i].first == t)  # type: ignore[index]
        if prev_type is None or typ != prev_type or 2 * starts > len(marks):
            runs.append([t])
        else:
            runs[-1].append(t)
        token_type[t] = typ
        prev_type = typ

    spans: list[tuple[int, int, str, float]] = []
    for run in runs:
        votes = Counter()
        for t in run:
            for w in range(k):
                i = cover[w][t]
                if i is not None:
                    votes[workers[w][i].type] += 1
        typ = _rank_winner(votes)
        support = sum(inside_votes[t] for t in run) / (k * len(run))
        spans.append((run[0], run[-1], typ, support))

    # 3. clusters: per worker, the mention overlapping each aggregated span most
    mapped: list[list[int | None]] = []
    for w in range(k):
        row: list[int | None] = []
        for first, last, _typ, _s in spans:
            overlap = Counter(cover[w][t] for t in range(first, last + 1)
                              if cover[w][t] is not None)
            row.append(min(overlap, key=lambda i: (-overlap[i], i)) if overlap else None)
        mapped.append(row)
    parent = list(range(len(spans)))

    def find(a: int) -> int:
        while parent[a] != a:
            parent[a] = parent[parent[a]]
            a = parent[a]
        return a

    for a in range(len(spans)):
        for b in range(a + 1, len(spans)):
            if spans[a][2] != spans[b][2]:
                continue
            same = 0
            for w in range(k):
                ia, ib = mapped[w][a], mapped[w][b]
                if (ia is not None and ib is not None and ia != ib
                        and workers[w][ia].entity == workers[w][ib].entity):
                    same += 1
            if 2 * same > k:
                parent[find(b)] = find(a)
    clusters: dict[int, list[int]] = {}
    for a in range(len(spans)):
        clusters.setdefault(find(a), []).append(a)

    # 4. canonical mention and link per cluster; labels E1, E2, ... in text order
    canonical: set[int] = set()
    links: dict[int, str] = {}
    label: dict[int, str] = {}
    for n, (root, members) in enumerate(sorted(clusters.items(), key=lambda kv: kv[1][0])):
        label[root] = f"E{n + 1}"

        def canon_votes(a: int) -> int:
            return sum(1 for w in range(k) if mapped[w][a] is not None
                       and workers[w][mapped[w][a]].canonical)  # type: ignore[index]

        def width(a: int) -> int:
            return tokens[spans[a][1]][1] - tokens[spans[a][0]][0]

        canonical.add(min(members, key=lambda a: (-canon_votes(a), -width(a), a)))
        per_worker: Counter = Counter()
        for w in range(k):
            given = {workers[w][mapped[w][a]].link for a in members  # type: ignore[index]
                     if mapped[w][a] is not None} - {""}
            if len(given) == 1:
                per_worker[given.pop()] += 1
        best = per_worker.most_common(1)
        links[root] = best[0][0] if best and 2 * best[0][1] > k else ""

    out = []
    for a, (first, last, typ, support) in enumerate(spans):
        root = find(a)
        out.append(AggregatedMention(tokens[first][0], tokens[last][1], typ, label[root],
                                     a in canonical, links[root], round(support, 4)))
    return AggregationResult(out, ignored)


def document_tokens(sentences: Sequence[Sequence[int]]) -> list[TokenSpan]:
    """Flatten sentences' inline token lists `[b0, e0, b1, e1, ...]` into token spans."""
    out: list[TokenSpan] = []
    for flat in sentences:
        out.extend((flat[i], flat[i + 1]) for i in range(0, len(flat), 2))
    return out


__all__ = ["AggregatedMention", "AggregationResult", "WorkerMention", "aggregate_mentions",
           "document_tokens", "parse_mentions"]
