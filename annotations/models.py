"""Crowd work: questions, HITs, assignments, answers, labels, draws, money.

Every row that must not be lost is written before its side effect: a `Hit` row (with
its idempotency token) exists before MTurk is called, a `PagePost` is kept before the
page forwards the worker to MTurk (its answers count once MTurk confirms them), a
`Bonus` row before the payment.
"""

from __future__ import annotations

import secrets
from decimal import Decimal

from django.conf import settings
from django.db import models
from django.db.models import Q


class Backend(models.TextChoices):
    SIMULATED = "simulated", "simulated crowd"
    LOCAL = "local", "in-house annotators"
    MTURK = "mturk", "Mechanical Turk"


class TaskKind(models.TextChoices):
    RELATION = "relation", "relation verification"
    ENTITY = "entity", "entity detection & linking"
    EXHAUSTIVE = "exhaustive", "exhaustive relations"


class CrowdWorker(models.Model):
    """A person (or simulated worker) who answers questions on one backend."""

    backend = models.CharField(max_length=16, choices=Backend.choices)
    external_id = models.CharField(
        max_length=64, help_text="MTurk WorkerId, 'user-<id>' or 'sim-<n>'.")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True,
                             on_delete=models.SET_NULL, related_name="crowd_workers")
    flagged = models.BooleanField(default=False,
                                  help_text="Agreement with other workers fell below threshold.")
    blocked = models.BooleanField(default=False)
    blocked_reason = models.CharField(max_length=500, blank=True)
    agreement = models.FloatField(
        null=True, blank=True, help_text="Share of answers equal to the other workers' plurality.")
    accuracy_ds = models.FloatField(null=True, blank=True,
                                    help_text="Accuracy estimated by Dawid–Skene.")
    n_answers = models.PositiveIntegerField(default=0)
    control_answers = models.PositiveIntegerField(default=0,
                                                  help_text="Answers to control questions.")
    control_right = models.PositiveIntegerField(
        default=0, help_text="Of those, how many equal the known answer.")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["backend", "external_id"],
                                               name="worker_unique_external")]
        # Staff grant this to in-house annotators (the `local` backend's queue).
        permissions = [("annotate_locally", "Can take in-house annotation tasks")]

    def __str__(self) -> str:
        return f"{self.backend}:{self.external_id}"


class QuestionState(models.TextChoices):
    OPEN = "open", "open"
    COMPLETE = "complete", "complete"
    CANCELLED = "cancelled", "cancelled"


class Question(models.Model):
    """One thing to be judged: a mention pair (relation) or a document (entity/exhaustive)."""

    corpus = models.ForeignKey("kbpo.Corpus", on_delete=models.CASCADE, related_name="questions")
    kind = models.CharField(max_length=16, choices=TaskKind.choices, default=TaskKind.RELATION)
    pair = models.ForeignKey("submissions.MentionPair", null=True, blank=True,
                             on_delete=models.CASCADE, related_name="questions")
    document = models.ForeignKey("kbpo.Document", null=True, blank=True,
                                 on_delete=models.CASCADE, related_name="questions")
    state = models.CharField(max_length=16, choices=QuestionState.choices,
                             default=QuestionState.OPEN, db_index=True)
    answers_needed = models.PositiveSmallIntegerField(default=3)
    requested_by = models.ForeignKey(
        "submissions.Submission", null=True, blank=True, on_delete=models.SET_NULL,
        related_name="questions", help_text="The submission whose sample first needed it.")
    created_at = models.DateTimeField(auto_now_add=True)
    completed_at = models.DateTimeField(null=True, blank=True)
    # A control question's known answer (sorted predicates or ['no_relation'], from the
    # exhaustive gold); null for a pair under test. Controls measure the workers and
    # anchor the worker model; they never become a PairLabel.
    control_answer = models.JSONField(null=True, blank=True,
                                      help_text="Known answer of a control question.")
    # A recount is owed (crowd/discount.py): set with `Response.counted = False` in the
    # rejecting transaction, cleared under the row lock by the recount that relabels it
    # (`labels.recount`). The backstop looks for it (`labels.stale_labels`), not at
    # answer counts, which a late answer can make look complete. On the question, not
    # the label: a discount may land before the label is made or after it was removed.
    recount_pending_since = models.DateTimeField(
        null=True, blank=True,
        help_text="Since when a rejection's discounted answers await a recount of its label.")
    # An exhaustive question on a DocRED-schema document asks for every fact whose head
    # is one of these entities (their vertexSet indexes); null on every other question.
    head_entities = models.JSONField(
        null=True, blank=True,
        help_text="DocRED exhaustive question: the entity indexes whose facts it asks for.")

    class Meta:
        # The few questions owed a recount, found without a scan (`labels.stale_labels`).
        indexes = [models.Index(fields=["recount_pending_since"],
                                condition=Q(recount_pending_since__isnull=False),
                                name="question_recount_pending")]
        constraints = [
            # One open question per pair: a second submission drawing it waits for it.
            # Controls are outside it: they ask about pairs under no test, never for a label.
            models.UniqueConstraint(fields=["pair"],
                                    condition=Q(state="open", kind="relation",
                                                control_answer__isnull=True),
                                    name="question_one_open_per_pair"),
        ]

    def __str__(self) -> str:
        return f"Q{self.pk} {self.kind}"


class HitState(models.TextChoices):
    PENDING = "pending", "pending (not yet posted)"
    POSTED = "posted", "posted"
    COMPLETE = "complete", "complete"
    EXPIRED = "expired", "expired"
    CANCELLED = "cancelled", "cancelled"


class HitBatch(models.Model):
    """The HITs one planning run created for one submission (agreement is kept per batch)."""

    corpus = models.ForeignKey("kbpo.Corpus", on_delete=models.CASCADE, related_name="batches")
    submission = models.ForeignKey("submissions.Submission", null=True, blank=True,
                                   on_delete=models.SET_NULL, related_name="batches")
    kind = models.CharField(max_length=16, choices=TaskKind.choices, default=TaskKind.RELATION)
    n_questions = models.PositiveIntegerField(default=0)
    cost_estimate = models.DecimalField(max_digits=10, decimal_places=2, default=Decimal("0"))
    alpha = models.FloatField(null=True, blank=True,
                              help_text="Krippendorff's alpha (nominal) over the batch's answers.")
    n_answers = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name_plural = "HIT batches"

    def __str__(self) -> str:
        return f"batch {self.pk} ({self.n_questions} questions)"


def new_url_key() -> str:
    """A HIT's task-page key: 192 random bits, so task pages cannot be walked."""
    return secrets.token_urlsafe(24)


class Hit(models.Model):
    """A unit of crowd work grouping one or more questions (an MTurk HIT)."""

    corpus = models.ForeignKey("kbpo.Corpus", on_delete=models.CASCADE, related_name="hits")
    kind = models.CharField(max_length=16, choices=TaskKind.choices, default=TaskKind.RELATION)
    backend = models.CharField(max_length=16, choices=Backend.choices)
    state = models.CharField(max_length=16, choices=HitState.choices, default=HitState.PENDING,
                             db_index=True)
    questions = models.ManyToManyField(Question, through="HitQuestion", related_name="hits")
    batch = models.ForeignKey(HitBatch, null=True, blank=True, on_delete=models.SET_NULL,
                              related_name="hits")
    submission = models.ForeignKey("submissions.Submission", null=True, blank=True,
                                   on_delete=models.SET_NULL, related_name="hits",
                                   help_text="Budget the cost is charged to.")
    max_assignments = models.PositiveSmallIntegerField(default=3)
    reward = models.DecimalField(max_digits=8, decimal_places=2)
    cost_estimate = models.DecimalField(max_digits=10, decimal_places=2, default=Decimal("0"))
    request_token = models.CharField(max_length=64, unique=True, null=True, blank=True)
    external_id = models.CharField(max_length=64, unique=True, null=True, blank=True,
                                   help_text="MTurk HITId once posted.")
    hit_type_id = models.CharField(max_length=64, blank=True)
    post_error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    posted_at = models.DateTimeField(null=True, blank=True)
    expires_at = models.DateTimeField(null=True, blank=True)
    last_synced_at = models.DateTimeField(null=True, blank=True)
    url_key = models.CharField(max_length=43, unique=True, default=new_url_key, editable=False,
                               help_text="The task page's path key (/annotate/hit/<key>/).")

    def __str__(self) -> str:
        return f"HIT {self.pk} ({self.kind}, {self.state})"


class HitQuestion(models.Model):
    hit = models.ForeignKey(Hit, on_delete=models.CASCADE, related_name="items")
    question = models.ForeignKey(Question, on_delete=models.CASCADE, related_name="hit_items")
    position = models.PositiveSmallIntegerField()

    class Meta:
        ordering = ["hit", "position"]
        constraints = [models.UniqueConstraint(fields=["hit", "question"],
                                               name="hitquestion_unique")]


class AssignmentState(models.TextChoices):
    SUBMITTED = "submitted", "submitted"
    APPROVED = "approved", "approved"
    REJECTED = "rejected", "rejected"


class Refusal(models.TextChoices):
    NONE = "", "counted"
    REJECT = "reject", "refused: rejected (the worker's fault)"
    PAY = "pay", "refused: paid, not counted (our fault)"


class Assignment(models.Model):
    """One worker's completion of one HIT.

    For MTurk HITs a row exists only once MTurk has confirmed the assignment (same
    AssignmentId, HITId and WorkerId, status Submitted or later); what the task page
    posts before that is a `PagePost`.
    """

    hit = models.ForeignKey(Hit, on_delete=models.CASCADE, related_name="assignments")
    worker = models.ForeignKey(CrowdWorker, on_delete=models.PROTECT, related_name="assignments")
    external_id = models.CharField(max_length=64, unique=True,
                                   help_text="MTurk AssignmentId (or a local id).")
    state = models.CharField(max_length=16, choices=AssignmentState.choices,
                             default=AssignmentState.SUBMITTED, db_index=True)
    source = models.CharField(max_length=16, default="intake",
                              help_text="'intake' (posted to us) or 'sync' (found on MTurk).")
    submitted_at = models.DateTimeField(auto_now_add=True)
    reviewed_at = models.DateTimeField(null=True, blank=True)
    feedback = models.CharField(max_length=1000, blank=True)
    paid = models.DecimalField(max_digits=8, decimal_places=2, default=Decimal("0"))
    refusal = models.CharField(
        max_length=8, choices=Refusal.choices, blank=True, default=Refusal.NONE,
        help_text="Set when MTurk holds work we could not count: it has no responses and "
                  "is rejected (the worker's fault) or paid (ours).")
    refusal_reason = models.CharField(max_length=1000, blank=True)
    # The intake's IntakeError code (invalid, closed, repeat, blocked, too_fast): lets the
    # operator filter refusals, and counts a worker's too-fast work toward a block.
    refusal_code = models.CharField(max_length=16, blank=True, default="", db_default="",
                                    help_text="Why the work was refused (the intake's code).")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["hit", "worker"],
                                               name="assignment_one_per_worker")]

    def __str__(self) -> str:
        return f"{self.external_id} ({self.state})"


class PagePostState(models.TextChoices):
    WAITING = "waiting", "waiting for MTurk to confirm"
    CONFIRMED = "confirmed", "confirmed by MTurk"
    FORGED = "forged", "refused: MTurk says the assignment is another worker's or HIT's"
    EXPIRED = "expired", "expired: MTurk never confirmed it"


class PagePost(models.Model):
    """Answers an MTurk task page posted to us: provisional until MTurk confirms them.

    Anyone can post anything to the answer endpoint, so these rows reach nothing —
    not aggregation, worker quality, review, payment or the budget. The sync promotes
    the assignment from MTurk's own record (its Answer XML wins), marks posts naming
    an assignment MTurk gives to another worker or HIT as forged, and expires the
    rest after `KBPO_PAGE_POST_TTL` seconds.
    """

    hit = models.ForeignKey(Hit, on_delete=models.CASCADE, related_name="page_posts")
    assignment_external_id = models.CharField(max_length=64, db_index=True)
    worker_external_id = models.CharField(max_length=64)
    payload = models.JSONField(help_text='The validated {"answers": [...]} as posted.')
    state = models.CharField(max_length=16, choices=PagePostState.choices,
                             default=PagePostState.WAITING, db_index=True)
    note = models.CharField(max_length=500, blank=True)
    client_ip = models.GenericIPAddressField(null=True, blank=True)
    received_at = models.DateTimeField(auto_now_add=True, db_index=True)
    resolved_at = models.DateTimeField(null=True, blank=True)
    assignment = models.ForeignKey("Assignment", null=True, blank=True,
                                   on_delete=models.SET_NULL, related_name="page_posts")

    class Meta:
        constraints = [models.UniqueConstraint(
            fields=["hit", "assignment_external_id", "worker_external_id"],
            name="pagepost_unique_claim")]

    def __str__(self) -> str:
        return f"{self.assignment_external_id} by {self.worker_external_id} ({self.state})"


class Response(models.Model):
    """One worker's answer to one question, stored on arrival."""

    assignment = models.ForeignKey(Assignment, on_delete=models.CASCADE,
                                   related_name="responses")
    question = models.ForeignKey(Question, on_delete=models.CASCADE, related_name="responses")
    worker = models.ForeignKey(CrowdWorker, on_delete=models.PROTECT, related_name="responses")
    choices = models.JSONField(help_text="Sorted predicates, or ['no_relation'].")
    extra = models.JSONField(default=dict, blank=True,
                             help_text="Mention/link checks; spans for document tasks.")
    seconds = models.FloatField(null=True, blank=True, help_text="Time the worker spent.")
    created_at = models.DateTimeField(auto_now_add=True)
    # False once the assignment is rejected (review, admin or MTurk's site): the row is
    # kept for audit, but no label, worker fit, accuracy or score reads it
    # (crowd/discount.py). Only the review of the assignment itself (`spam_reason`) does.
    counted = models.BooleanField(
        default=True, db_default=True,
        help_text="Counts in labels, worker quality and scores; false once its assignment "
                  "is rejected.")
    # Set by a database trigger on every insert and update (migration 0011): the
    # scoring's kept answers read only rows written since (estimation/correction.py).
    changed_xid = models.BigIntegerField(null=True, blank=True, editable=False, db_index=True,
                                         help_text="Transaction that last wrote the row "
                                                   "(set by the database).")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["question", "worker"],
                                               name="response_one_per_worker")]
        # The few discounted answers, found without a scan (audit; migration 0013).
        indexes = [models.Index(fields=["question"], condition=models.Q(counted=False),
                                name="response_not_counted")]


class PairLabel(models.Model):
    """The aggregated crowd verdict on a mention pair, shared by every submission."""

    pair = models.OneToOneField("submissions.MentionPair", on_delete=models.CASCADE,
                                related_name="label")
    predicates = models.JSONField(help_text="The stored label: predicates, or ['no_relation'].")
    # How `predicates` was decided: "majority"/"plurality" when the answers came in,
    # then the quality pass's aggregator ("lopsided", "one_coin") if it moved the label.
    method = models.CharField(max_length=16, default="majority")
    majority = models.JSONField(default=list, blank=True,
                                help_text="The majority (or plurality) vote of the answers, "
                                          "kept when the quality pass moves the label.")
    support = models.FloatField(help_text="Share of workers who gave exactly this answer.")
    n_answers = models.PositiveSmallIntegerField()
    question = models.ForeignKey(Question, null=True, blank=True, on_delete=models.SET_NULL,
                                 related_name="+")
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    # Soft label (quality.workers): P(each answer is the truth) from the workers'
    # measured rates, the crowd-wide answer shares, the shares of the pair's type (with
    # which the posterior was computed), and P(the stored label is right). Empty/None
    # until the quality pass has run.
    posterior = models.JSONField(default=dict, blank=True,
                                 help_text="P(truth) per predicate (and no_relation).")
    prior = models.JSONField(default=dict, blank=True,
                             help_text="Crowd-wide share of each answer in the posterior.")
    type_prior = models.JSONField(
        default=dict, blank=True,
        help_text="Share of each answer among pairs of this pair's entity types: the "
                  "prior the posterior was computed with.")
    p_correct = models.FloatField(null=True, blank=True,
                                  help_text="Probability that the stored label is right.")
    # Set by a database trigger on every insert and update, whatever path writes the row
    # (migration 0011): the id of the writing transaction, so a reader can take only the
    # rows written since it last read (annotations/quality/label_table.py).
    changed_xid = models.BigIntegerField(null=True, blank=True, editable=False, db_index=True,
                                         help_text="Transaction that last wrote the row "
                                                   "(set by the database).")

    def __str__(self) -> str:
        return f"{self.pair_id}: {'|'.join(self.predicates)}"


class SampleDraw(models.Model):
    """One i.i.d. draw from a submission's sampling distribution, kept forever."""

    submission = models.ForeignKey("submissions.Submission", on_delete=models.CASCADE,
                                   related_name="draws")
    scheme = models.CharField(max_length=16)
    index = models.PositiveIntegerField()
    instance = models.ForeignKey("submissions.RelationInstance", on_delete=models.CASCADE,
                                 related_name="draws")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["submission", "index"]
        constraints = [models.UniqueConstraint(fields=["submission", "index"],
                                               name="draw_unique_index")]


class DrawLabelStamp(models.Model):
    """A counter per corpus that moves whenever one of its sample draws or pair labels
    is written or deleted, so a stored report or progress.json can tell in one indexed
    read that the draws and labels it shows are unchanged (estimation/stored_pages.py).

    Kept by Postgres triggers (migration 0009), deferred to commit: each committing
    transaction that wrote draws or labels of a corpus adds 1, in that transaction, so
    any reader that sees the new rows also sees the new counter. Nothing else writes
    it. Off Postgres stored pages are not used and the counter is not kept.
    """

    corpus = models.OneToOneField("kbpo.Corpus", on_delete=models.CASCADE, primary_key=True,
                                  related_name="+")
    version = models.BigIntegerField(default=0)

    def __str__(self) -> str:
        return f"{self.corpus_id}: {self.version}"


class Bonus(models.Model):
    """A bonus payment; the row (and its token) exists before the money moves."""

    assignment = models.ForeignKey(Assignment, on_delete=models.PROTECT, related_name="bonuses")
    amount = models.DecimalField(max_digits=8, decimal_places=2)
    reason = models.CharField(max_length=1000)
    token = models.CharField(max_length=64, unique=True)
    paid_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name_plural = "bonuses"  # Django's default would say "Bonuss"


class BudgetSettings(models.Model):
    """The global spending cap in dollars (a single row, editable by operators)."""

    cap_usd = models.DecimalField(max_digits=10, decimal_places=2,
                                  help_text="Nothing is posted once total spend would pass it.")
    per_submission_default_usd = models.DecimalField(
        max_digits=10, decimal_places=2,
        help_text="Cap for a submission without its own budget row.")
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name = verbose_name_plural = "budget settings"
        constraints = [models.CheckConstraint(condition=Q(pk=1), name="budget_settings_singleton"),
                       models.CheckConstraint(condition=Q(cap_usd__gte=0),
                                              name="budget_cap_not_negative")]

    def __str__(self) -> str:
        return f"global cap ${self.cap_usd}"

    @classmethod
    def current(cls) -> BudgetSettings:
        obj, _ = cls.objects.get_or_create(pk=1, defaults={
            "cap_usd": Decimal(str(settings.KBPO_BUDGET_GLOBAL_USD)),
            "per_submission_default_usd": Decimal(str(settings.KBPO_BUDGET_PER_SUBMISSION_USD))})
        return obj


class SubmissionBudget(models.Model):
    """A submission's own spending cap, when it differs from the default."""

    submission = models.OneToOneField("submissions.Submission", on_delete=models.CASCADE,
                                      related_name="budget")
    cap_usd = models.DecimalField(max_digits=10, decimal_places=2)

    class Meta:
        constraints = [models.CheckConstraint(condition=Q(cap_usd__gte=0),
                                              name="submission_budget_not_negative")]

    def __str__(self) -> str:
        return f"${self.cap_usd} for {self.submission}"


# --- Exhaustive annotation: the unbiased sample of true instances (recall) ------------


class ExhaustiveStage(models.TextChoices):
    SEED = "seed", "stage 1: uniform seed documents"
    MATCHED = "matched", "stage 2: documents mentioning seed entities"
    IMPORTED = "imported", "imported gold annotation"


class ExhaustiveDocument(models.Model):
    """A document chosen for exhaustive annotation, and how far its annotation got."""

    class State(models.TextChoices):
        PLANNED = "planned", "planned"
        ENTITIES = "entities", "entity annotation under way"
        RELATIONS = "relations", "relation annotation under way"
        COMPLETE = "complete", "complete"

    corpus = models.ForeignKey("kbpo.Corpus", on_delete=models.CASCADE,
                               related_name="exhaustive_documents")
    document = models.ForeignKey("kbpo.Document", on_delete=models.CASCADE,
                                 related_name="exhaustive")
    stage = models.CharField(max_length=16, choices=ExhaustiveStage.choices)
    state = models.CharField(max_length=16, choices=State.choices, default=State.PLANNED,
                             db_index=True)
    matched_entity = models.CharField(
        max_length=300, blank=True, help_text="Stage 2: the seed entity name that matched.")
    sample_seed = models.BigIntegerField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    completed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["document"],
                                               name="exhaustive_document_once")]

    def __str__(self) -> str:
        return f"{self.document} ({self.stage}, {self.state})"


class GoldMention(models.Model):
    """An aggregated (or imported) true mention of an exhaustively annotated document."""

    document = models.ForeignKey("kbpo.Document", on_delete=models.CASCADE,
                                 related_name="gold_mentions")
    begin = models.PositiveIntegerField()
    end = models.PositiveIntegerField()
    type = models.CharField(max_length=8)
    entity = models.CharField(max_length=300, help_text="Entity cluster label in the document.")
    canonical = models.BooleanField(default=False)
    link = models.CharField(max_length=500, blank=True)
    source = models.CharField(max_length=16, default="crowd", help_text="crowd or import.")

    class Meta:
        ordering = ["document", "begin"]
        constraints = [models.UniqueConstraint(fields=["document", "begin", "end"],
                                               name="gold_mention_unique_span")]


class GoldRelation(models.Model):
    """A true relation instance found by exhaustive annotation: an element of Ŷ0."""

    document = models.ForeignKey("kbpo.Document", on_delete=models.CASCADE,
                                 related_name="gold_relations")
    subject_begin = models.PositiveIntegerField()
    subject_end = models.PositiveIntegerField()
    object_begin = models.PositiveIntegerField()
    object_end = models.PositiveIntegerField()
    predicate = models.CharField(max_length=64, help_text="Canonical predicate.")
    subject_entity = models.CharField(max_length=300, blank=True)
    sentence = models.ForeignKey("kbpo.Sentence", null=True, blank=True,
                                 on_delete=models.SET_NULL, related_name="+")
    source = models.CharField(max_length=16, default="crowd", help_text="crowd or import.")

    class Meta:
        constraints = [models.UniqueConstraint(
            fields=["document", "subject_begin", "subject_end", "object_begin", "object_end",
                    "predicate"], name="gold_relation_unique")]

    @property
    def pair_key(self) -> str:
        return (f"{self.document.doc_id}:{self.subject_begin}-{self.subject_end}:"
                f"{self.object_begin}-{self.object_end}")
