"""Named mutations — plausible bugs in the estimators, the crowd pipeline, money,
validation, visibility and limits — and which of the mirroring tests catch each.

Run it through scripts/mutation_check.sh (the header there says how it works). This file
is both the driver (`python scripts/mutation_check.py ...`) and, imported by the
`sitecustomize.py` the driver writes, the code that applies a hook mutation inside every
Python process of a test run (pytest, its Celery worker, CLI subprocesses).

Hook mutations act on stable, public entry points only: the results of
`estimation.core`'s `estimate()`, `estimation.core.intervals.z_value`,
`estimation.data.load_exhaustive`, the `estimate` that `estimation.scoring` calls, and
`submissions.kbformat`'s `Report.add` and `inspect_upload` (one validation rule
silenced). The ρ mutations recompute ρ from the public `Population`/`Evidence` API.
Edit mutations change one exact piece of source in the copy; if the text is gone, the
run says the mutation could not be applied instead of counting it as caught
(tests/test_ci_guards.py checks that every edit still applies).
"""

from __future__ import annotations

import argparse
import importlib.abc
import importlib.machinery
import os
import shutil
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ENV_NAME = "KBPO_MUTATION"
ENV_LOG = "KBPO_MUTATION_LOG"
DEFAULT_TESTS = ["tests/estimation", "tests/annotations/exhaustive", "tests/demo"]

# --------------------------------------------------------------------------------------
# Inside the test processes: applying one mutation.
# --------------------------------------------------------------------------------------


def _log(event: str) -> None:
    """Record (once per process and event) that the mutation was exercised or broke."""
    path = os.environ.get(ENV_LOG)
    key = f"{os.getpid()}:{event}"
    if path and key not in _LOGGED:
        _LOGGED.add(key)
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(f"{key}\n")


_LOGGED: set[str] = set()


def _rebind(original: object, replacement: object,
            packages: tuple[str, ...] = ("estimation",)) -> None:
    """Point every loaded module's reference to `original` (in `packages`) at the mutant."""
    for name, module in list(sys.modules.items()):
        if module is None or not any(name == p or name.startswith(p + ".") for p in packages):
            continue
        for attr, value in list(vars(module).items()):
            if value is original:
                setattr(module, attr, replacement)


def _map_intervals(results: dict, fn: Callable, schemes: tuple[str, ...] | None = None,
                   metrics: tuple[str, ...] | None = None,
                   kinds: tuple[str, ...] | None = None) -> None:
    """Replace each selected Interval's (estimate, lo, hi) by fn(estimate, lo, hi)."""
    for scheme, by_metric in results.items():
        if schemes and scheme not in schemes:
            continue
        for metric, by_kind in by_metric.items():
            if metrics and metric not in metrics:
                continue
            for kind, iv in by_kind.items():
                if kinds and kind not in kinds:
                    continue
                iv.estimate, iv.lo, iv.hi = fn(iv.estimate, iv.lo, iv.hi)


def _rho(pop: object, ev: object):
    """ρ_i = share of Ŷ0 that system i found on pairs no drawn system predicted."""
    import numpy as np

    m, y_pairs, y_preds = len(pop), np.asarray(ev.y_pairs), np.asarray(ev.y_preds)
    n0 = len(y_pairs)
    rho = np.zeros(m)
    if n0 == 0 or m == 0:
        return rho
    reached = np.zeros(pop.n_pairs, dtype=bool)
    for j in np.flatnonzero(np.asarray(ev.n) > 0):
        reached[pop.system_instances(int(j))[0]] = True
    known = y_pairs >= 0
    covered = np.zeros(n0, dtype=bool)
    covered[known] = reached[y_pairs[known]]
    for i in range(m):
        pairs, preds, _ = pop.system_instances(i)
        mine = set(zip(pairs.tolist(), preds.tolist(), strict=True))
        found = [bool(k) and (int(p), int(c)) in mine
                 for k, p, c in zip(known, y_pairs, y_preds, strict=True)]
        rho[i] = float(np.sum(np.asarray(found) & ~covered)) / n0
    return rho


def _mutate_estimate(post: Callable[[object, tuple, dict], bool]) -> Callable[[], None]:
    """A mutation that post-processes every `estimate()` result.

    post(result, args, kwargs) changes the result in place and says whether it changed
    anything (which is logged, so a run shows the mutation was exercised).
    """

    def install() -> None:
        import estimation.core as core

        original = core.estimate

        def estimate(*args: object, **kwargs: object) -> object:
            result = original(*args, **kwargs)
            try:
                changed = post(result, args, kwargs)
            except Exception as exc:  # the mutation itself broke: say so, loudly
                _log(f"broken {type(exc).__name__}: {exc}")
                raise
            if changed:
                _log("applied")
            return result

        estimate.__wrapped__ = original  # type: ignore[attr-defined]
        _rebind(original, estimate)
        sys.modules[original.__module__].estimate = estimate  # type: ignore[attr-defined]

    return install


def _scale(factor: float) -> Callable:
    import numpy as np

    return lambda e, lo, hi: (np.asarray(e) * factor, np.asarray(lo) * factor,
                              np.asarray(hi) * factor)


def _halve(result: object, args: tuple, kwargs: dict) -> bool:
    _map_intervals(result.results, _scale(0.5))
    return bool(result.results)


def _unit_intervals(result: object, args: tuple, kwargs: dict) -> bool:
    import numpy as np

    _map_intervals(result.results, lambda e, lo, hi: (e, np.zeros_like(lo), np.ones_like(hi)))
    return bool(result.results)


def _shift_rho(sign: float) -> Callable:
    def post(result: object, args: tuple, kwargs: dict) -> bool:
        import numpy as np

        if "instance" not in result.results:
            return False
        pop = args[0] if args else kwargs["pop"]
        ev = args[1] if len(args) > 1 else kwargs["ev"]
        rho = _rho(pop, ev)
        if not np.any(rho > 0):
            return False

        def shift(e, lo, hi):
            d = sign * rho
            return (np.clip(e + d, 0, 1), np.clip(lo + d, 0, 1), np.clip(hi + d, 0, 1))

        _map_intervals(result.results, shift, ("instance",), ("recall",), ("joint",))
        return True

    return post


def _joint_recall_up(result: object, args: tuple, kwargs: dict) -> bool:
    import numpy as np

    _map_intervals(result.results, lambda e, lo, hi: tuple(
        np.clip(np.asarray(x) * 1.03, 0, 1) for x in (e, lo, hi)),
        ("instance",), ("recall",), ("joint",))
    return "instance" in result.results


def _scale_z(factor: float) -> Callable[[], None]:
    def install() -> None:
        from estimation.core import intervals

        original = intervals.z_value

        def z_value(confidence: float) -> float:
            _log("applied")
            return factor * original(confidence)

        _rebind(original, z_value)
        intervals.z_value = z_value

    return install


def _scoring_stores_scheme(wrong: str) -> Callable[[], None]:
    """The scoring path stores another scheme's numbers under the draw scheme."""

    def install() -> None:
        import estimation.scoring as scoring

        original = scoring.estimate

        def estimate(pop: object, ev: object, *args: object, **kwargs: object) -> object:
            schemes = kwargs.get("schemes")
            if schemes == ["instance"]:
                result = original(pop, ev, *args, **{**kwargs, "schemes": [wrong]})
                if wrong in result.results:  # absent when there is no system at all
                    result.results = {"instance": result.results[wrong]}
                    _log("applied")
                    return result
            return original(pop, ev, *args, **kwargs)

        scoring.estimate = estimate

    return install


def _scoring_drops_exhaustive() -> None:
    """The scoring path loads no exhaustive sample (recall is never estimated)."""
    import numpy as np

    from estimation import data

    original = data.load_exhaustive

    def load_exhaustive(*args: object, **kwargs: object) -> tuple:
        pairs, _, _, _ = original(*args, **kwargs)
        if len(pairs):
            _log("applied")
        empty = np.zeros(0, np.int64)
        return empty, empty, empty, 0

    _rebind(original, load_exhaustive)
    data.load_exhaustive = load_exhaustive


@dataclass(frozen=True)
class Mutation:
    """One named bug. Either `install` (an import hook wraps a public entry point once
    `after` is imported) or `edits` (exact source replacements made in the copy for the
    run, each old text found exactly once or the mutation is NOT APPLIED)."""

    name: str
    what: str
    area: str  # one of AREAS
    tests: tuple[str, ...]  # the tests that mirror the mutated code: only these run
    after: str = ""
    install: Callable[[], None] | None = None
    edits: tuple[tuple[str, str, str], ...] = ()  # (path, old, new)


AREAS = ("estimators", "crowd", "money", "validation", "visibility", "limits")
# The statistical tests: the only ones that can see a biased or miscalibrated estimator.
STATISTICAL = tuple(DEFAULT_TESTS)


def _hook(name: str, what: str, after: str, install: Callable[[], None],
          area: str = "estimators", tests: tuple[str, ...] = STATISTICAL) -> Mutation:
    return Mutation(name, what, area, tests, after=after, install=install)


def _edit(name: str, what: str, area: str, tests: str | tuple[str, ...], path: str,
          *pairs: tuple[str, str]) -> Mutation:
    tests = (tests,) if isinstance(tests, str) else tests
    return Mutation(name, what, area, tests, edits=tuple((path, o, n) for o, n in pairs))


_ESTIMATORS = [
    _hook("halve_estimates", "every estimate and interval end × 0.5",
          "estimation.core", _mutate_estimate(_halve)),
    _hook("unit_intervals", "every interval forced to [0, 1]",
          "estimation.core", _mutate_estimate(_unit_intervals)),
    _hook("drop_rho", "joint recall without its ρ term (systems with no draws)",
          "estimation.core", _mutate_estimate(_shift_rho(-1.0))),
    _hook("double_rho", "joint recall with ρ counted twice",
          "estimation.core", _mutate_estimate(_shift_rho(+1.0))),
    _hook("z_times_0.9", "every interval's z scaled by 0.9 (too narrow)",
          "estimation.core", _scale_z(0.9)),
    _hook("z_times_1.1", "every interval's z scaled by 1.1 (too wide)",
          "estimation.core", _scale_z(1.1)),
    _hook("joint_recall_plus_3pct", "joint recall (instance) × 1.03",
          "estimation.core", _mutate_estimate(_joint_recall_up)),
    _hook("scoring_stores_entity_as_instance",
          "recompute stores the entity scheme's scores as the instance scheme's",
          "estimation.scoring", _scoring_stores_scheme("entity")),
    _hook("scoring_drops_exhaustive", "recompute loads no exhaustive sample Ŷ0",
          "estimation.data", _scoring_drops_exhaustive),
]

# --------------------------------------------------------------------------------------
# Trust and money: one plausible bug per mutation, as an exact source edit. Each names
# the test files that mirror the edited module; a bug caught only by a test somewhere
# else does not count.
# --------------------------------------------------------------------------------------

T_SYNC = "tests/annotations/crowd/test_sync.py"
T_INTAKE = "tests/annotations/interfaces/test_intake.py"
T_BUDGET = "tests/annotations/crowd/test_budget.py"
T_REVIEW = "tests/annotations/crowd/test_review.py"
T_VERDICTS = "tests/annotations/crowd/test_verdicts.py"
T_AGGREGATION = "tests/annotations/quality/test_aggregation.py"
T_LABELS = "tests/annotations/crowd/test_labels.py"
T_LEADERBOARD = "tests/estimation/scoring/test_leaderboard.py"
T_SNAPSHOT = "tests/estimation/scoring/test_snapshot.py"
T_REPORT_API = "tests/estimation/scoring/test_report_api.py"
T_PROGRESS = "tests/estimation/scoring/test_progress_json.py"
T_SUBMISSIONS_API = "tests/submissions/test_pages_api.py"
T_SECURITY = "tests/core/test_security.py"
T_VALIDATION = "tests/submissions/test_validation.py"
T_DOCRED = "tests/submissions/test_docred_predictions.py"
T_DOCRED_HOSTILE = "tests/submissions/test_docred_hostile.py"

_TRUST = [
    # Answer confirmation: MTurk must confirm the worker, the HIT and a finished status.
    _edit("sync_accepts_any_status", "an MTurk assignment counts in any status (Accepted)",
          "crowd", T_SYNC, "annotations/crowd/sync.py",
          (" or record.status not in CONFIRMED_STATUSES:", ":")),
    _edit("sync_accepts_other_hit", "an MTurk assignment of another HIT is stored here",
          "crowd", T_SYNC, "annotations/crowd/sync.py",
          ("if record.hit_id != hit.external_id or record.status",
           "if record.status")),
    _edit("sync_confirms_other_workers_post",
          "a page post is confirmed whoever MTurk says did the work", "crowd", T_SYNC,
          "annotations/crowd/sync.py",
          ("post.hit_id == hit.pk and post.worker_external_id == record.worker_id",
           "post.hit_id == hit.pk")),
    _edit("sync_copied_rejection_keeps_answers",
          "a rejection made on MTurk's site leaves the answers counted", "money", T_SYNC,
          "annotations/crowd/sync.py",
          ("            if copied and not approved:\n"
           "                discount(assignment.pk)", "            pass")),
    # Intake: slots and who may answer.
    _edit("intake_one_slot_too_many", "an on-site HIT takes one answer past its slots",
          "crowd", T_INTAKE, "annotations/interfaces/intake.py",
          ("refusal=Refusal.NONE).count() >= locked.max_assignments):",
           "refusal=Refusal.NONE).count() > locked.max_assignments):")),
    _edit("intake_closed_hit_open", "a HIT no longer posted still takes answers",
          "crowd", T_INTAKE, "annotations/interfaces/intake.py",
          ("        _check_open(locked)\n        if worker.blocked:",
           "        if worker.blocked:")),
    _edit("intake_blocked_worker_answers", "a blocked worker's answers are taken",
          "crowd", T_INTAKE, "annotations/interfaces/intake.py",
          ("        _check_open(locked)\n        if worker.blocked:",
           "        _check_open(locked)\n        if False:")),
    _edit("intake_worker_answers_twice", "a worker answers the same HIT twice",
          "crowd", T_INTAKE, "annotations/interfaces/intake.py",
          ("        if Assignment.objects.filter(hit=locked, worker=worker).exists():\n"
           '            raise IntakeError("this worker already answered',
           "        if False:\n"
           '            raise IntakeError("this worker already answered')),
    # Budget: spent and committed.
    _edit("budget_finished_unreviewed_uncommitted",
          "a finished HIT's unreviewed work is not committed", "money", T_BUDGET,
          "annotations/crowd/budget.py",
          ("            committed += unit * n_live\n",
           "            committed += unit * n_approved\n")),
    _edit("budget_live_rejected_still_committed",
          "a posted HIT keeps rejected work's price committed", "money", T_BUDGET,
          "annotations/crowd/budget.py",
          ("max(estimate - unit * n_rejected, unit * n_live)", "estimate")),
    _edit("budget_spent_counts_unreviewed", "submitted, unreviewed work counts as spent",
          "money", T_BUDGET, "annotations/crowd/budget.py",
          ("        spent += unit * n_approved\n", "        spent += unit * n_live\n")),
    _edit("budget_paid_bonus_not_spent", "a paid bonus is not counted as spent", "money",
          T_BUDGET, "annotations/crowd/budget.py",
          ("        if paid_at is not None:\n            spent += cost\n", "")),
    _edit("budget_no_submission_cap", "only the global cap is checked", "money", T_BUDGET,
          "annotations/crowd/budget.py",
          ("    if submission is not None:\n        own = spend(submission)",
           "    if False:\n        own = spend(submission)")),
    # Reviews, rejections, bonuses and payments.
    _edit("pay_bonus_skips_recheck", "a bonus is paid on work rejected after the grant",
          "money", T_REVIEW, "annotations/crowd/review.py",
          ("        _check_bonusable(a)  # it may have been rejected since the bonus was "
           "granted\n", "")),
    _edit("bonus_on_unreviewed_work", "a bonus may be granted on unreviewed work",
          "money", T_REVIEW, "annotations/crowd/review.py",
          ("if a.state != AssignmentState.APPROVED or a.refusal:",
           "if a.state == AssignmentState.REJECTED or a.refusal:")),
    _edit("bonus_skips_budget", "a bonus is granted without the budget check", "money",
          T_REVIEW, "annotations/crowd/review.py",
          ("        budget.check_and_lock(budget.bonus_cost", "        (budget.bonus_cost")),
    _edit("review_approves_spam", "clear spam is approved and paid", "money", T_REVIEW,
          "annotations/crowd/review.py",
          ("        if reason:\n            rejected +=",
           "        if None:\n            rejected +=")),
    _edit("reject_keeps_answers_counted", "a rejected assignment's answers still count",
          "money", T_VERDICTS, "annotations/crowd/verdicts.py",
          ("        discount(a.pk)  # its answers", "        # discount(a.pk)  # its answers")),
    _edit("approve_pays_again", "a retried approval pays (and records) the work again",
          "money", T_VERDICTS, "annotations/crowd/verdicts.py",
          ("""             .get(pk=assignment.pk))
        if a.state != AssignmentState.SUBMITTED:
            return False
        if a.hit.backend == Backend.MTURK:
            # Idempotent""", """             .get(pk=assignment.pk))
        if a.hit.backend == Backend.MTURK:
            # Idempotent""")),
    # Aggregation.
    _edit("majority_even_tie_wins", "a 50/50 split counts as a majority", "crowd",
          T_AGGREGATION, "annotations/quality/aggregation.py",
          ("if 2 * k > n)", "if 2 * k >= n)")),
    _edit("majority_odd_tie_takes_first", "an odd tie takes the first answer", "crowd",
          T_AGGREGATION, "annotations/quality/aggregation.py",
          ("    if not winners:\n        return MajorityResult(frozenset(), True, 0.0)",
           "    if not winners:\n        return MajorityResult(sets[0], False, 1 / n)")),
    _edit("aggregate_counts_discounted", "discounted (uncounted) answers are voted",
          "crowd", T_LABELS, "annotations/crowd/labels.py",
          ("""            hits.update(q.hit_items.values_list("hit_id", flat=True))
            answers = [list(c) for c in q.responses.filter(counted=True)""",
           """            hits.update(q.hit_items.values_list("hit_id", flat=True))
            answers = [list(c) for c in q.responses.all()""")),
    # Visibility and state filters.
    _edit("leaderboard_keeps_withdrawn", "build drops the ACTIVE_STATES filter",
          "visibility", T_LEADERBOARD, "estimation/leaderboard.py",
          ("SystemScore.objects.filter(run=run, scheme=scheme,\n"
           "                                     submission__state__in=ACTIVE_STATES)",
           "SystemScore.objects.filter(run=run, scheme=scheme)")),
    _edit("leaderboard_private_to_all_users",
          "every signed-in user sees private systems (build)", "visibility", T_LEADERBOARD,
          "estimation/leaderboard.py",
          ("""        q |= Q(**{f"{prefix}owner_id": user.pk})""", "        q = Q()")),
    _edit("can_see_any_signed_in", "every signed-in user sees private systems (snapshot "
          "boards)", "visibility", T_LEADERBOARD, "estimation/leaderboard.py",
          ("(viewer_id is not None and viewer_id == owner_id)", "(viewer_id is not None)")),
    _edit("snapshot_keeps_withdrawn", "a stored board shows withdrawn and rejected systems",
          "visibility", T_SNAPSHOT, "estimation/snapshot.py",
          ('states = ", ".join(["%s"] * len(ACTIVE_STATES))',
           'states = ", ".join(["%s"] * len(State.values))'),
          ("cur.execute(sql, [*ACTIVE_STATES, tag", "cur.execute(sql, [*State.values, tag")),
    _edit("report_private_to_all_users", "any signed-in user opens a private report "
          "(API)", "visibility", T_REPORT_API, "estimation/api_reports.py",
          ("return bool(sub.public or sub.can_view(user))",
           "return bool(sub.public or getattr(user, 'is_authenticated', False))")),
    _edit("progress_private_to_all_users", "any signed-in user polls a private report's "
          "progress", "visibility", T_PROGRESS, "estimation/report_progress.py",
          ("(me is not None and me == owner)", "(me is not None)")),
    _edit("submissions_api_private_to_all", "the submissions API lists everyone's private "
          "submissions", "visibility", T_SUBMISSIONS_API, "submissions/models.py",
          ("return self.filter(Q(owner=user) | Q(public=True))", "return self")),
    # Rate limits and the client address.
    _edit("rate_limit_one_extra", "a rate limit lets one request too many through",
          "limits", T_SECURITY, "kbpo/core/security.py",
          ("return Verdict(count <= limit, start", "return Verdict(count <= limit + 1, start")),
    _edit("rate_limit_peek_one_late", "peek says allowed when the limit is already used",
          "limits", T_SECURITY, "kbpo/core/security.py",
          ("return Verdict(count < limit, start", "return Verdict(count <= limit, start")),
    _edit("client_ip_first_forwarded", "the client address is the first X-Forwarded-For "
          "entry (the client writes it)", "limits", T_SECURITY, "kbpo/core/security.py",
          ("and _is_ip(hops[-proxies]):\n            return hops[-proxies]",
           "and _is_ip(hops[0]):\n            return hops[0]")),
    _edit("client_ip_trusts_unconfigured_proxy", "X-Forwarded-For is believed with no "
          "trusted proxy configured", "limits", T_SECURITY, "kbpo/core/security.py",
          ("proxies = settings.KBPO_TRUSTED_PROXY_COUNT",
           "proxies = max(1, settings.KBPO_TRUSTED_PROXY_COUNT)")),
    # DocRED result files: the prediction rules, and the stream's caps.
    _edit("docred_self_relation_accepted", "a DocRED prediction with h_idx = t_idx is taken",
          "validation", T_DOCRED, "submissions/docred_format.py",
          ("    if h == t:\n", "    if h == t and h < 0:\n")),
    _edit("docred_entity_index_off_by_one", "h_idx/t_idx may equal the document's entity count",
          "validation", T_DOCRED, "submissions/docred_format.py",
          ("if not 0 <= value < doc.n_entities:", "if not 0 <= value <= doc.n_entities:")),
    _edit("docred_unknown_relation_accepted", "a DocRED relation id outside the schema is taken",
          "validation", T_DOCRED, "submissions/docred_format.py",
          ("    if not schema.is_relation(r):\n", "    if not r:\n")),
    _edit("docred_prediction_cap_one_late", "a DocRED file may hold MAX_PREDICTIONS + 1",
          "limits", T_DOCRED_HOSTILE, "kbpo/core/jsonstream.py",
          ("if index >= max_items:", "if index > max_items:")),
    _edit("docred_no_prediction_length_cap", "one DocRED prediction may be any length (a "
          "50 MB string is read whole)", "limits", T_DOCRED_HOSTILE, "kbpo/core/jsonstream.py",
          ("if self.offset - self.mark > self.max_item:",
           "if self.offset - self.mark > self.max_item * 10**9:")),
    # Validation: text at the offsets (the rules themselves are _RULES below).
    _edit("same_text_casefold", "a mention's quoted text matches case-insensitively",
          "validation", T_VALIDATION, "submissions/kbformat.py",
          ('a, t = " ".join(actual.split()), " ".join(text.split())',
           'a, t = " ".join(actual.split()).casefold(), " ".join(text.split()).casefold()')),
]


# Every rule of the upload formats (TAC KB and DocRED result files share the codes),
# switched off one at a time: the problem is never recorded (Report.add) nor refused at
# upload (inspect_upload).
_RULE_TESTS = {
    "GZIP_TRAILING_BYTES": "tests/submissions/test_gzip_trailing.py",
    "UNSUPPORTED_ARCHIVE": "tests/submissions/test_archives.py",
    "CR_LINE_ENDINGS": "tests/submissions/test_archives.py",
    "SENTIMENT_NOT_EVALUATED": "tests/submissions/test_sentiment.py",
    "DROPPED_WITH_ENTITY": "tests/submissions/test_drop_invalid.py",
    "TOO_MANY_INVALID_LINES": "tests/submissions/test_drop_invalid.py",
    # Rules that main's hostile-upload work adds (a mapping for an absent rule is unused).
    "BAD_LINK": "tests/submissions/test_hostile_uploads.py",
    "TOO_MANY_ERRORS": "tests/submissions/test_hostile_uploads.py",
    "TOO_MANY_LINES": "tests/submissions/test_hostile_uploads.py",
    **dict.fromkeys(("MALFORMED_JSON", "MALFORMED_PREDICTION", "UNKNOWN_TITLE",
                     "ENTITY_INDEX_OUT_OF_RANGE", "SELF_RELATION", "UNKNOWN_RELATION",
                     "BAD_EVIDENCE", "DUPLICATE_PREDICTION"), T_DOCRED),
    **dict.fromkeys(("TOO_MANY_PREDICTIONS", "PREDICTION_TOO_LONG"), T_DOCRED_HOSTILE),
}


def _rule_off(code: str) -> Callable[[], None]:
    def install() -> None:
        from submissions import kbformat

        if code not in kbformat.CODES:
            raise LookupError(f"no rule {code} in submissions.kbformat.CODES")
        add, inspect = kbformat.Report.add, kbformat.inspect_upload

        def silenced_add(self: object, line: int, got: str, *args: object, **kw: object) -> None:
            if got == code:
                _log("applied")
                return None
            return add(self, line, got, *args, **kw)

        def silenced_inspect(*args: object, **kw: object) -> object:
            check = inspect(*args, **kw)
            if check.code == code:
                _log("applied")
                # What a clean file gets: the run id is read by the ingestion instead.
                return kbformat.UploadCheck(check.compressed, check.uncompressed_bytes, "")
            return check

        kbformat.Report.add = silenced_add
        _rebind(inspect, silenced_inspect, ("submissions",))
        kbformat.inspect_upload = silenced_inspect

    return install


def _rule_mutations() -> list[Mutation]:
    # The codes are read from the source, not imported: the driver imports no Django.
    import ast

    source = (Path(__file__).resolve().parent.parent / "submissions" / "kbformat.py").read_text()
    tree = ast.parse(source)
    codes: list[str] = []
    for node in tree.body:
        if isinstance(node, ast.AnnAssign) and getattr(node.target, "id", "") == "CODES":
            codes = [k.value for k in node.value.keys]  # type: ignore[union-attr]
    return [_hook(f"tac_rule_off:{c}", f"the TAC rule {c} never fires", "submissions.kbformat",
                  _rule_off(c), area="validation",
                  tests=(_RULE_TESTS.get(c, T_VALIDATION),)) for c in codes]


_RULES = _rule_mutations()

MUTATIONS = {m.name: m for m in [*_ESTIMATORS, *_TRUST, *_RULES]}


class _InstallAfterImport(importlib.abc.MetaPathFinder):
    """Runs the mutation right after its module has been executed (imported)."""

    def __init__(self, mutation: Mutation) -> None:
        self.mutation = mutation

    def find_spec(self, fullname: str, path: object, target: object = None) -> object:
        if fullname != self.mutation.after:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or spec.loader is None:
            return None
        run = spec.loader.exec_module
        mutation = self.mutation

        def exec_module(module: object) -> None:
            run(module)
            try:
                mutation.install()
            except Exception as exc:
                _log(f"broken {type(exc).__name__}: {exc}")
                raise

        spec.loader.exec_module = exec_module  # this spec's own loader instance
        return spec


def activate(name: str) -> None:
    """Called by the generated sitecustomize.py in every process of a mutation run."""
    sys.meta_path.insert(0, _InstallAfterImport(MUTATIONS[name]))


# --------------------------------------------------------------------------------------
# The driver.
# --------------------------------------------------------------------------------------

SITECUSTOMIZE = f'''"""Written by scripts/mutation_check.py: applies ${ENV_NAME} in this process."""
import os
if os.environ.get("{ENV_NAME}"):
    import mutation_check
    mutation_check.activate(os.environ["{ENV_NAME}"])
'''


def _copy_repo(src: Path, dst: Path) -> None:
    """Tracked and untracked (not ignored) files: the tree as it is, without .venv."""
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=src,
                           check=True, capture_output=True).stdout.split(b"\0")
    for rel in filter(None, files):
        path = src / rel.decode()
        if path.is_file():
            target = dst / rel.decode()
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, target)


def _failures(junit: Path) -> tuple[set[str], int]:
    """(ids of the failed or erroring tests, number of tests) from a JUnit XML report."""
    if not junit.exists():
        return set(), 0
    failed, total = set(), 0
    for case in ET.parse(junit).getroot().iter("testcase"):
        total += 1
        if case.find("failure") is not None or case.find("error") is not None:
            module = case.get("classname", "").rsplit(".", 1)[-1]
            failed.add(f"{module}::{case.get('name', '')}")
    return failed, total


def _apply_edits(copy: Path, mutation: Mutation) -> tuple[dict[Path, str], str]:
    """Make the mutation's source edits in the copy; (originals to restore, error)."""
    originals: dict[Path, str] = {}
    for rel, old, new in mutation.edits:
        path = copy / rel
        text = path.read_text(encoding="utf-8") if path.exists() else ""
        originals.setdefault(path, text)
        found = text.count(old)
        if found != 1:
            return originals, f"{rel}: the text to change occurs {found} times, not once"
        path.write_text(text.replace(old, new), encoding="utf-8")
        _drop_bytecode(path)
    return originals, ""


def _restore(originals: dict[Path, str]) -> None:
    for path, text in originals.items():
        path.write_text(text, encoding="utf-8")
        _drop_bytecode(path)


def _drop_bytecode(path: Path) -> None:
    # An edit within the same second and of the same size would pass the pyc check.
    for pyc in (path.parent / "__pycache__").glob(f"{path.stem}.*.pyc"):
        pyc.unlink()


def _run(copy: Path, hook: Path, python: str, tests: list[str], name: str | None,
         out: Path, extra: list[str]) -> tuple[set[str], int, list[str], float]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(hook), str(copy / "scripts"), str(copy)])
    env.pop(ENV_NAME, None)
    log = out / f"{name or 'baseline'}.log"
    log.write_text("")
    mutation = MUTATIONS[name] if name else None
    originals: dict[Path, str] = {}
    if mutation is not None:
        if mutation.install is not None:
            env[ENV_NAME] = name
            env[ENV_LOG] = str(log)
        else:
            originals, error = _apply_edits(copy, mutation)
            with open(log, "a", encoding="utf-8") as fh:
                fh.write(f"edit:broken {error}\n" if error else "edit:applied\n")
            if error:
                _restore(originals)
                return set(), 0, log.read_text().splitlines(), 0.0
    junit = out / f"{name or 'baseline'}.xml"
    # The baseline creates the test database; the mutation runs reuse it (no migrations).
    db = ["--create-db"] if mutation is None else ["--reuse-db"]
    started = time.monotonic()
    try:
        with open(out / f"{name or 'baseline'}.out", "w") as stdout:
            subprocess.run([python, "-m", "pytest", *tests, "-q", "-p", "no:randomly",
                            "-p", "no:cacheprovider", f"--junitxml={junit}", *db, *extra],
                           cwd=copy, env=env, stdout=stdout, stderr=subprocess.STDOUT,
                           check=False)
    finally:
        _restore(originals)
    failed, total = _failures(junit)
    return failed, total, log.read_text().splitlines(), time.monotonic() - started


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="scripts/mutation_check.sh",
        description="Apply named mutations to a copy of the repository and report which "
                    "tests catch each.")
    parser.add_argument("--only", action="append", choices=sorted(MUTATIONS),
                        help="run this mutation (repeatable; default: all)")
    parser.add_argument("--area", action="append", choices=AREAS,
                        help="run the mutations of this area (repeatable; default: all)")
    parser.add_argument("--tests", nargs="+", default=None,
                        help="pytest paths to run for every mutation (default: each "
                             "mutation's own mirroring tests)")
    parser.add_argument("--out", type=Path, default=None,
                        help="keep reports here (default: a temporary directory)")
    parser.add_argument("--list", action="store_true", help="list the mutations and exit")
    parser.add_argument("pytest_args", nargs="*", help="extra pytest arguments (after --)")
    args = parser.parse_args(argv)
    selected = [m for m in MUTATIONS.values()
                if (not args.only or m.name in args.only)
                and (not args.area or m.area in args.area)]
    if args.list:
        for m in selected:
            print(f"{m.name:40} {m.area:11} {m.what}  [{' '.join(m.tests)}]")
        print(f"{len(selected)} mutations")
        return 0
    if not selected:
        print("no mutation selected", file=sys.stderr)
        return 2
    repo = Path(__file__).resolve().parent.parent
    python = str(repo / ".venv" / "bin" / "python")
    work = Path(tempfile.mkdtemp(prefix="kbpo-mutation-"))
    out = args.out or work / "reports"
    out.mkdir(parents=True, exist_ok=True)
    copy, hook = work / "repo", work / "hook"
    _copy_repo(repo, copy)
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(SITECUSTOMIZE)
    # A database of its own, so a run never meets the developer's test database.
    if os.environ.get("DATABASE_URL", "").startswith("postgres"):
        os.environ["DATABASE_URL"] = os.environ["DATABASE_URL"].rstrip("/") + "_mut"
    print(f"copy of the repository: {copy}; reports: {out}", flush=True)
    try:
        return _check(copy, hook, python, args, selected, out)
    finally:
        # the copy and the hook go; the reports stay (in `work` unless --out elsewhere)
        shutil.rmtree(copy, ignore_errors=True)
        shutil.rmtree(hook, ignore_errors=True)
        if args.out:
            shutil.rmtree(work, ignore_errors=True)


def _tests_of(m: Mutation, args: argparse.Namespace) -> list[str]:
    return list(args.tests or m.tests)


def _check(copy: Path, hook: Path, python: str, args: argparse.Namespace,
           selected: list[Mutation], out: Path) -> int:
    started = time.monotonic()
    union = sorted({t for m in selected for t in _tests_of(m, args)})
    baseline, total, _, secs = _run(copy, hook, python, union, None, out, args.pytest_args)
    print(f"baseline: {total} tests in {len(union)} paths, {len(baseline)} failing without "
          f"a mutation ({secs:.0f} s){': ' + ', '.join(sorted(baseline)) if baseline else ''}",
          flush=True)
    if total == 0:
        print("the baseline ran no test: see baseline.out", file=sys.stderr)
        return 2
    rows, status = [], 0
    for m in selected:
        failed, n, events, secs = _run(copy, hook, python, _tests_of(m, args), m.name, out,
                                       args.pytest_args)
        broken = sorted({e.split(":", 1)[1] for e in events if ":broken" in e})
        applied = any(e.endswith(":applied") for e in events)
        caught = sorted(failed - baseline)
        if broken or not applied:
            verdict = "NOT APPLIED: " + ("; ".join(broken) or "entry point never called")
            status = 1
        elif caught:
            verdict = f"caught by {len(caught)}"
        else:
            verdict = "NOT CAUGHT"
            status = 1
        rows.append((m, verdict, caught))
        print(f"{m.name}: {verdict} ({n} tests, {secs:.0f} s)", flush=True)
    n_caught = sum(1 for _, v, _ in rows if v.startswith("caught"))
    print(f"\n{n_caught} of {len(rows)} mutations caught by their mirroring tests in "
          f"{time.monotonic() - started:.0f} s")
    print("\n| mutation | area | what | tests run | verdict | tests that fail |\n"
          "|---|---|---|---|---|---|")
    for m, verdict, caught in rows:
        shown = ", ".join(caught[:4])
        more = f" (+{len(caught) - 4} more)" if len(caught) > 4 else ""
        run = ", ".join(t.rsplit("/", 1)[-1] for t in _tests_of(m, args))
        print(f"| {m.name} | {m.area} | {m.what} | {run} | {verdict} | {shown}{more} |")
    return status

if __name__ == "__main__":
    sys.exit(main())
