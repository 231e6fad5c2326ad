"""Score history: one `ScoreRun` per recomputation, one `SystemScore` per system × scheme.

`ScoringState` is the per-corpus bookkeeping that makes recomputation debounced,
deduplicated and free of lost updates (see `estimation/scoring.py` for the protocol).
"""

from __future__ import annotations

from decimal import Decimal

from django.db import models

from .core.intervals import rounded_outward

METRICS = ("precision", "recall", "f1")
KINDS = ("joint", "simple")
BOUNDS = ("", "_lo", "_hi")
# Short column stems: p_joint, p_joint_lo, ... f1_simple_hi.
METRIC_COLUMNS = {"precision": "p", "recall": "r", "f1": "f1"}
# What pages say about a zero-width interval (docs/internals/estimation.md §4.1).
EXACT_NOTE = "known exactly: every prediction of the system has a crowd label"


def is_exact(lo: float | None, hi: float | None) -> bool:
    """Whether an interval is a single point: the labels decide the value exactly.

    The estimators give a zero-width interval only then (docs/internals/estimation.md §4.1), so
    pages show "exact" instead of an interval that would look like a bug.
    """
    return lo is not None and hi is not None and hi - lo <= 1e-12


def interval_ends(lo: float, hi: float, decimals: int = 3) -> tuple[str, str]:
    """The two ends as text, rounded outward (lo down, hi up) so that the printed
    interval still contains whatever the exact one does, with more decimals (up to 6)
    where three would round both to one number: a recall of 0.0008–0.0017 reads as
    "0.0008–0.0017", not "0.000–0.002"."""
    for d in range(decimals, 7):
        if f"{lo:.{d}f}" != f"{hi:.{d}f}":
            break
    return tuple(f"{x:.{d}f}" for x in rounded_outward(lo, hi, d))  # type: ignore[return-value]


class ScoringState(models.Model):
    """Per corpus: how many label changes were announced and how many were scored.

    `generation` goes up by one per `labels_changed`; a run records the generation
    it read (`ScoreRun.generation`) and sets `scored_generation` when it finishes.
    `scheduled` is true while a recompute task is queued and has not yet started,
    so a burst of label changes enqueues one task. `lease_until` marks a run in
    progress (a crashed worker's lease simply expires).
    """

    corpus = models.OneToOneField("kbpo.Corpus", on_delete=models.CASCADE,
                                  related_name="scoring_state")
    generation = models.BigIntegerField(default=0)
    scored_generation = models.BigIntegerField(default=-1)
    scheduled = models.BooleanField(default=False)
    scheduled_at = models.DateTimeField(null=True, blank=True)
    lease_until = models.DateTimeField(null=True, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"{self.corpus_id}: gen {self.generation}, scored {self.scored_generation}"

    @property
    def up_to_date(self) -> bool:
        return self.scored_generation >= self.generation


class ScoreRun(models.Model):
    """One recomputation of every active system's scores on a corpus."""

    class Status(models.TextChoices):
        RUNNING = "running", "running"
        COMPLETE = "complete", "complete"
        FAILED = "failed", "failed"

    corpus = models.ForeignKey("kbpo.Corpus", on_delete=models.CASCADE,
                               related_name="score_runs")
    generation = models.BigIntegerField(help_text="Label-change generation this run read.")
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.RUNNING)
    trigger = models.CharField(max_length=200, blank=True)
    draw_scheme = models.CharField(max_length=16)
    # The joint estimator of the run's headline scores (KBPO_JOINT_ESTIMATOR); runs from
    # before the choice existed used importance weighting.
    estimator = models.CharField(max_length=16, default="importance")
    confidence = models.FloatField()
    started_at = models.DateTimeField()
    finished_at = models.DateTimeField(null=True, blank=True)
    duration_s = models.FloatField(null=True, blank=True)
    n_systems = models.PositiveIntegerField(default=0)
    n_labels = models.PositiveIntegerField(default=0, help_text="Distinct labelled pairs.")
    n_draws = models.PositiveIntegerField(default=0)
    n_exhaustive_documents = models.PositiveIntegerField(default=0)
    n_exhaustive_instances = models.PositiveIntegerField(default=0)
    # The report's crowd section as the run measured it (annotations/quality/accuracy.py
    # `CrowdAccuracy.as_dict`), so a report request reads it instead of every label and
    # answer of the corpus. Null for runs that predate it: the report measures it live.
    crowd = models.JSONField(null=True, blank=True)
    error = models.TextField(blank=True)

    class Meta:
        ordering = ["-started_at", "-id"]
        indexes = [models.Index(fields=["corpus", "status", "-finished_at"],
                                name="scorerun_latest")]

    def __str__(self) -> str:
        return f"run {self.pk} on {self.corpus_id} ({self.status})"

    def stamp(self, scheme_generation: int | None) -> dict[str, object]:
        """What a board or an API answer says about the label generation it reflects:
        the run's (its draw scheme, computed live), the scheme's (a reweighted scheme's
        rows may be carried from an older run while its follow-up is queued), and
        whether that scheme is therefore still updating (never shown as fresh)."""
        g = self.generation if scheme_generation is None else scheme_generation
        return {"generation": self.generation, "scheme_generation": g,
                "updating": g < self.generation}

    def scheme_generations(self) -> dict[str, int]:
        """Per scheme of the run: the oldest label generation its rows reflect."""
        out: dict[str, int] = {}
        for scheme, g in self.scores.values_list("scheme", "generation"):
            g = self.generation if g is None else g
            out[scheme] = min(out.get(scheme, g), g)
        return out

    @classmethod
    def latest(cls, corpus: object) -> ScoreRun | None:
        """The newest complete run of a corpus (instance or id)."""
        return (cls.objects.filter(corpus=corpus, status=cls.Status.COMPLETE)
                .order_by("-finished_at", "-id").first())


def _score_field() -> models.FloatField:
    return models.FloatField(null=True, blank=True)


class SystemScore(models.Model):
    """One system's precision, recall and F1 under one scheme in one run.

    Estimates are null when not estimable (the interval is then still honest bounds).
    """

    run = models.ForeignKey(ScoreRun, on_delete=models.CASCADE, related_name="scores")
    submission = models.ForeignKey("submissions.Submission", on_delete=models.CASCADE,
                                   related_name="scores")
    scheme = models.CharField(max_length=16)
    p_joint = _score_field()
    p_joint_lo = _score_field()
    p_joint_hi = _score_field()
    r_joint = _score_field()
    r_joint_lo = _score_field()
    r_joint_hi = _score_field()
    f1_joint = _score_field()
    f1_joint_lo = _score_field()
    f1_joint_hi = _score_field()
    p_simple = _score_field()
    p_simple_lo = _score_field()
    p_simple_hi = _score_field()
    r_simple = _score_field()
    r_simple_lo = _score_field()
    r_simple_hi = _score_field()
    f1_simple = _score_field()
    f1_simple_lo = _score_field()
    f1_simple_hi = _score_field()
    labels_used = models.PositiveIntegerField(default=0)
    draws = models.PositiveIntegerField(default=0, help_text="Draws with a label.")
    pending = models.PositiveIntegerField(default=0, help_text="Draws still unlabelled.")
    cost_usd = models.DecimalField(max_digits=10, decimal_places=2, default=Decimal("0"))
    # With soft labels on: the joint estimates the hard (0/1) labels give, so the report
    # can show how far the noise correction moved each score. Null when soft labels are off.
    p_joint_hard = _score_field()
    r_joint_hard = _score_field()
    f1_joint_hard = _score_field()
    # On the run's draw-scheme row only: {predicate: [true instances in the exhaustive
    # sample, of which this system predicted]}, so the report reads its per-predicate
    # recall instead of reloading the exhaustive sample. Null on runs that predate it.
    exhaustive_found = models.JSONField(null=True, blank=True)
    # The label generation (`ScoringState.generation`) these numbers reflect. A live run
    # computes its draw scheme and carries the reweighted schemes' rows of the previous
    # run, stamped with their own (older) generation, until the queued follow-up
    # replaces them (estimation/scoring.py). Null on rows from before: the run's.
    generation = models.BigIntegerField(null=True, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["run", "submission", "scheme"],
                                               name="systemscore_unique")]
        indexes = [models.Index(fields=["submission", "scheme", "run"],
                                name="systemscore_history")]

    def __str__(self) -> str:
        return f"{self.submission_id} {self.scheme} in run {self.run_id}"

    def reflects(self) -> int:
        """The label generation these numbers reflect (the run's for rows from before)."""
        return self.run.generation if self.generation is None else self.generation

    def interval(self, metric: str, kind: str = "joint") -> tuple[float | None, ...]:
        """(estimate, lo, hi) of one metric."""
        stem = f"{METRIC_COLUMNS[metric]}_{kind}"
        return tuple(getattr(self, stem + b) for b in BOUNDS)

    def correction(self, metric: str) -> tuple[float | None, float | None]:
        """(hard-label joint estimate, soft minus hard); (None, None) without soft labels."""
        hard = getattr(self, f"{METRIC_COLUMNS[metric]}_joint_hard")
        soft = getattr(self, f"{METRIC_COLUMNS[metric]}_joint")
        if hard is None or soft is None:
            return hard, None
        return hard, soft - hard


class BoardSnapshot(models.Model):
    """The leaderboard of one corpus × scheme × estimator × sort metric, ready to serve.

    Written after every score run (and when a submission's displayed fields change) by
    `estimation/snapshot.py`, so a request reads one row and does no estimation and
    almost no formatting. Only what decides visibility and ranking among the visible
    rows (public flag, owner, state, name) is read live at request time.
    """

    corpus = models.ForeignKey("kbpo.Corpus", on_delete=models.CASCADE,
                               related_name="board_snapshots")
    run = models.ForeignKey(ScoreRun, on_delete=models.CASCADE, related_name="snapshots")
    scheme = models.CharField(max_length=16)
    kind = models.CharField(max_length=8)
    metric = models.CharField(max_length=16)
    built_at = models.DateTimeField(auto_now=True)
    head = models.JSONField(default=dict, help_text="Run facts shown above the table.")
    rows = models.JSONField(default=list, help_text="Per system: ids, sort keys, pending.")
    html = models.JSONField(default=list, help_text="Pre-rendered HTML pieces per row.")
    api = models.JSONField(default=list, help_text="JSON API fields per row.")
    csv = models.JSONField(default=list, help_text="Formatted CSV cells per row.")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["corpus", "scheme", "kind", "metric"],
                                               name="boardsnapshot_unique")]

    def __str__(self) -> str:
        return f"{self.corpus_id} {self.scheme}/{self.kind}/{self.metric} (run {self.run_id})"


class BoardBody(models.Model):
    """A whole response body of one stored board as an anonymous visitor gets it.

    Stored by the first anonymous request after the board is written
    (`estimation/stored_pages.py`) and served from then on without rendering. `key` is
    an MD5 over everything else the body shows (the corpus's live submission rows, its
    description, whether a recompute is pending, the templates' version): a request
    whose key differs renders afresh. A new score run replaces the board and with it
    (cascade) its bodies.
    """

    board = models.ForeignKey(BoardSnapshot, on_delete=models.CASCADE, related_name="bodies")
    part = models.CharField(max_length=8, help_text="html, csv or api")
    # Who the body is for: "" anonymous, "user" anyone logged in who owns no active
    # submission on the corpus, "staff" such a staff member, "u<id>"/"s<id>" an owner.
    viewer = models.CharField(max_length=24, default="", blank=True)
    key = models.CharField(max_length=32)
    body = models.TextField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["board", "part", "viewer"],
                                               name="boardbody_unique_viewer")]

    def __str__(self) -> str:
        return f"{self.board_id} {self.part} {self.viewer}"


class ReportBody(models.Model):
    """A submission's report page as rendered, shared by everyone allowed to see it.

    `view` is the query (scheme, verdict, samples page). `key` is an MD5 over what
    the page shows, read live (`estimation/stored_pages.py`): a request whose key
    differs renders afresh. The per-viewer bits (navigation, messages, "3 minutes
    ago") are left out as markers and filled in per request.
    """

    submission = models.ForeignKey("submissions.Submission", on_delete=models.CASCADE,
                                   related_name="+")
    view = models.CharField(max_length=64)
    key = models.CharField(max_length=32)
    body = models.TextField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["submission", "view"],
                                               name="reportbody_unique")]

    def __str__(self) -> str:
        return f"{self.submission_id} {self.view}"


class InstanceCache(models.Model):
    """One active submission's relation instances as packed arrays, ready to estimate.

    Instance rows of an ingested submission never change (re-ingestion passes through
    a new `ingested` event), so loading them once per submission instead of once per
    recompute is safe. `ingest_key` (the id of the submission's latest `ingested`
    event, 0 without one) and `watermark` (the highest relation-instance id when the
    row was checked) tell `estimation/instance_cache.py` when a row is stale;
    `token` changes whenever the arrays are rewritten, so a worker's in-memory copy
    can be checked against it without reading the arrays.
    """

    corpus = models.ForeignKey("kbpo.Corpus", on_delete=models.CASCADE, related_name="+")
    submission = models.OneToOneField("submissions.Submission", on_delete=models.CASCADE,
                                      related_name="+")
    ingest_key = models.BigIntegerField(default=0)
    watermark = models.BigIntegerField(default=0)
    token = models.BigIntegerField()
    n_instances = models.PositiveIntegerField(default=0)
    # Little-endian int64 instance ids (ascending) and pair ids, int16 predicate codes,
    # int64 subject entity ids.
    ids = models.BinaryField()
    pairs = models.BinaryField()
    predicates = models.BinaryField()
    subjects = models.BinaryField()
    built_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"instances of {self.submission_id} ({self.n_instances})"


class CorrectionFit(models.Model):
    """The noise correction's bootstrap replicates of the crowd model's parameters, as
    last refitted for a corpus (estimation/correction.py).

    Refitting them takes most of a recompute; they are refitted only when the relation
    answers grew by more than KBPO_SOFT_LABEL_REFIT_GROWTH since, or changed otherwise
    (`digest`: the first `n_answers` answers in id order), or brought an answer the fit
    does not know or a worker it does not know with more than
    KBPO_SOFT_LABEL_NEW_WORKER_ANSWERS answers. In between, each replicate's posterior of
    the current answers is computed under its stored parameters. Every recompute (incremental or
    full, in any worker) reads the same row, so they give the same scores.
    """

    corpus = models.OneToOneField("kbpo.Corpus", on_delete=models.CASCADE, related_name="+")
    n_answers = models.PositiveIntegerField()
    n_workers = models.PositiveIntegerField()
    digest = models.CharField(max_length=64)
    categories = models.JSONField()  # the answer keys, index = the parameters' columns
    none_index = models.IntegerField()
    # np.savez of each replicate's rates, class shares and shares per stratum.
    params = models.BinaryField()
    fitted_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"correction fit of corpus {self.corpus_id} ({self.n_answers} answers)"
