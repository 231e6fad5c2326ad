"""Submissions, their state timeline, and the instances they predict.

`MentionPair` is shared by all submissions on a corpus: it is the unit the crowd
judges, so one label serves every system that predicted anything for that pair.
Everything else belongs to one submission and disappears with it.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q

from kbpo.core.models import Corpus, Document, Sentence
from kbpo.core.schema import ENTITY_TYPES

from .kbformat import NODE_MAX_CHARS

# Longest description and method text: a page shows them whole, and a longer text is
# more likely a pasted file than prose.
DESCRIPTION_MAX_CHARS = 5_000
METHOD_MAX_CHARS = 20_000


class State(models.TextChoices):
    UPLOADED = "uploaded", "uploaded"
    VALIDATING = "validating", "validating"
    INGESTED = "ingested", "ingested"
    PLANNING = "planning", "planning"
    ANNOTATING = "annotating", "annotating"
    SCORING = "scoring", "scoring"
    SCORED = "scored", "scored"
    REJECTED = "rejected", "rejected"
    FAILED = "failed", "failed"
    WITHDRAWN = "withdrawn", "withdrawn"


# States in which nothing happens any more without a person acting.
FINAL_STATES = frozenset({State.SCORED, State.REJECTED, State.FAILED, State.WITHDRAWN})
# States whose data counts for estimation and label reuse (withdrawn/rejected never do).
ACTIVE_STATES = frozenset({State.INGESTED, State.PLANNING, State.ANNOTATING, State.SCORING,
                           State.SCORED})

# CSS badge class per state (templates/submissions).
STATE_BADGES = {
    State.UPLOADED: "badge-info", State.VALIDATING: "badge-info", State.INGESTED: "badge-ok",
    State.PLANNING: "badge-info", State.ANNOTATING: "badge-info", State.SCORING: "badge-info",
    State.SCORED: "badge-ok", State.REJECTED: "badge-danger", State.FAILED: "badge-danger",
    State.WITHDRAWN: "",
}

TYPE_CHOICES = [(t, t) for t in ENTITY_TYPES]


class SubmissionQuerySet(models.QuerySet):
    def active(self) -> SubmissionQuerySet:
        """Submissions whose instances count (ingested or later, not withdrawn)."""
        return self.filter(state__in=ACTIVE_STATES)

    def visible_to(self, user: object) -> SubmissionQuerySet:
        """What a user may see: their own, public ones, everything for staff."""
        if getattr(user, "is_staff", False):
            return self
        if not getattr(user, "is_authenticated", False):
            return self.none()
        return self.filter(Q(owner=user) | Q(public=True))

    def counting_towards_limits(self) -> SubmissionQuerySet:
        """Rejected uploads do not count against a user's limits; all others do."""
        return self.exclude(state=State.REJECTED)


class Submission(models.Model):
    """One uploaded knowledge base (system output) on one corpus."""

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE,
                              related_name="submissions")
    corpus = models.ForeignKey(Corpus, on_delete=models.PROTECT, related_name="submissions")
    name = models.CharField(max_length=100, help_text="System name shown on the leaderboard.")
    # Capped on the model, so every form of it (the upload form, the admin) refuses more.
    description = models.TextField(blank=True, max_length=DESCRIPTION_MAX_CHARS)
    method_description = models.TextField(
        blank=True, max_length=METHOD_MAX_CHARS,
        help_text="How the system works (models, training data, resources).")
    paper_url = models.URLField(blank=True, help_text="Paper or code describing the system.")
    public = models.BooleanField(
        default=False, help_text="Public submissions are visible to every signed-in user.")
    is_baseline = models.BooleanField(default=False, help_text="Set by staff only.")
    run_id = models.CharField(max_length=200, blank=True,
                              help_text="The first line of the file.")
    file = models.FileField(upload_to="submissions/%Y/%m/", max_length=300)
    original_name = models.CharField(max_length=255, blank=True)
    compressed = models.BooleanField(default=False)
    file_size = models.BigIntegerField(default=0, help_text="Stored (possibly gzip) bytes.")
    content_sha256 = models.CharField(
        max_length=64, blank=True, db_index=True,
        help_text="SHA-256 of the uncompressed KB: identical re-uploads are refused.")
    state = models.CharField(max_length=16, choices=State.choices, default=State.UPLOADED,
                             db_index=True)
    state_changed_at = models.DateTimeField(auto_now_add=True)
    error = models.TextField(blank=True, help_text="Internal error when failed.")
    redrives = models.PositiveSmallIntegerField(
        default=0, help_text="Automatic re-queues since the last operator action.")
    top_ups = models.PositiveSmallIntegerField(
        default=0, help_text="Rounds of extra draws after the interval came out wider "
                             "than planned (estimation/planning.py `top_up`).")
    report = models.JSONField(default=list, blank=True,
                              help_text="Problems: {line, code, severity, message, hint}.")
    report_counts = models.JSONField(default=dict, blank=True,
                                     help_text="Problem count per code (uncapped).")
    stats = models.JSONField(default=dict, blank=True)
    n_mentions = models.PositiveIntegerField(default=0)
    n_entities = models.PositiveIntegerField(default=0)
    n_relations = models.PositiveIntegerField(default=0)
    n_warnings = models.PositiveIntegerField(default=0)
    n_errors = models.PositiveIntegerField(default=0)
    drop_invalid = models.BooleanField(
        default=False, help_text="Accept the valid lines of a file with errors, dropping "
                                 "the invalid ones (every dropped line is listed).")
    n_dropped = models.PositiveIntegerField(default=0, help_text="Lines dropped as invalid.")
    dropped = models.JSONField(default=list, blank=True,
                               help_text="Every dropped line: [line, code, message].")
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    objects = SubmissionQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["owner", "corpus", "created_at"])]

    def __str__(self) -> str:
        return f"#{self.pk} {self.name}"

    @property
    def is_final(self) -> bool:
        return self.state in FINAL_STATES

    @property
    def state_badge(self) -> str:
        return STATE_BADGES.get(self.state, "")

    @property
    def is_active(self) -> bool:
        return self.state in ACTIVE_STATES

    def can_view(self, user: object) -> bool:
        return bool(getattr(user, "is_staff", False)
                    or (self.public and getattr(user, "is_authenticated", False))
                    or getattr(user, "pk", None) == self.owner_id)

    def can_manage(self, user: object) -> bool:
        """Owner or staff: may download the file and withdraw."""
        return bool(getattr(user, "is_staff", False) or getattr(user, "pk", None) == self.owner_id)


class SubmissionEvent(models.Model):
    """One state transition: the submission's timeline."""

    submission = models.ForeignKey(Submission, on_delete=models.CASCADE, related_name="events")
    from_state = models.CharField(max_length=16, choices=State.choices, blank=True)
    to_state = models.CharField(max_length=16, choices=State.choices)
    message = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["created_at", "id"]

    def __str__(self) -> str:
        return f"{self.submission_id}: {self.from_state or '∅'} → {self.to_state}"


class MentionPair(models.Model):
    """A (subject span, object span) pair in one sentence, canonical direction.

    Spans are half-open character offsets into the document. Shared across all
    submissions on the corpus; the crowd's label for it is reused by every one.
    Types are those of the first submission that created the pair.
    """

    # Indexed by the unique constraint below, which starts with it.
    document = models.ForeignKey(Document, on_delete=models.CASCADE, related_name="pairs",
                                 db_index=False)
    sentence = models.ForeignKey(Sentence, on_delete=models.CASCADE, related_name="pairs")
    subject_begin = models.PositiveIntegerField()
    subject_end = models.PositiveIntegerField()
    object_begin = models.PositiveIntegerField()
    object_end = models.PositiveIntegerField()
    subject_type = models.CharField(max_length=8, choices=TYPE_CHOICES)
    object_type = models.CharField(max_length=8, choices=TYPE_CHOICES)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["document", "subject_begin", "subject_end", "object_begin",
                        "object_end"], name="mentionpair_unique_spans"),
        ]

    def __str__(self) -> str:
        return self.pair_key

    @property
    def pair_key(self) -> str:
        return (f"{self.document.doc_id}:{self.subject_begin}-{self.subject_end}:"
                f"{self.object_begin}-{self.object_end}")


class SubmissionEntity(models.Model):
    """An entity node (`:E1`) of one submission."""

    # Bulk rows (entities, mentions, instances) are written only by `ingest_sql`, in
    # the transaction that holds the submission's row lock and creates the entities
    # they point to: their submission and entity keys are valid by construction, so
    # the database does not check them row by row (that was half of a 1M-line
    # ingestion's database time). Deletion still cascades (Django's collector, or
    # `processing.delete_rows`). The composite unique/indexes cover `submission`.
    submission = models.ForeignKey(Submission, on_delete=models.CASCADE,
                                   related_name="entities", db_constraint=False,
                                   db_index=False)
    node = models.CharField(max_length=NODE_MAX_CHARS)
    type = models.CharField(max_length=8, choices=TYPE_CHOICES)
    link = models.CharField(max_length=500, blank=True)
    # Not checked row by row either: `ingest_sql.insert_rows` locks the documents its
    # rows cite in one statement (FOR KEY SHARE, what each row's check would take).
    canonical_document = models.ForeignKey(Document, on_delete=models.CASCADE,
                                           null=True, related_name="+",
                                           db_constraint=False)
    canonical_begin = models.PositiveIntegerField(null=True)
    canonical_end = models.PositiveIntegerField(null=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["submission", "node"], name="entity_unique_node"),
        ]

    def __str__(self) -> str:
        return f"{self.node} ({self.type})"


class SubmissionMention(models.Model):
    """A typed span of one submission; string fillers (DATE/TITLE) have no entity."""

    # Keys checked by construction, not by the database: see SubmissionEntity.
    submission = models.ForeignKey(Submission, on_delete=models.CASCADE,
                                   related_name="mentions", db_constraint=False,
                                   db_index=False)
    entity = models.ForeignKey(SubmissionEntity, on_delete=models.CASCADE, null=True,
                               related_name="mentions", db_constraint=False)
    # Locked, not checked per row: see SubmissionEntity.canonical_document.
    document = models.ForeignKey(Document, on_delete=models.CASCADE, related_name="+",
                                 db_constraint=False)
    begin = models.PositiveIntegerField()
    end = models.PositiveIntegerField()
    type = models.CharField(max_length=8, choices=TYPE_CHOICES)
    is_canonical = models.BooleanField(default=False)

    class Meta:
        indexes = [models.Index(fields=["submission", "document", "begin"])]

    def __str__(self) -> str:
        return f"{self.document_id}:{self.begin}-{self.end} {self.type}"


class RelationInstance(models.Model):
    """One predicted relation, canonical direction, deduplicated per pair and predicate."""

    # Submission and entity keys checked by construction: see SubmissionEntity. The
    # pair is shared with other submissions, so its key stays checked (and locked).
    submission = models.ForeignKey(Submission, on_delete=models.CASCADE,
                                   related_name="instances", db_constraint=False,
                                   db_index=False)
    pair = models.ForeignKey(MentionPair, on_delete=models.PROTECT, related_name="instances")
    predicate = models.CharField(max_length=64)
    subject_entity = models.ForeignKey(SubmissionEntity, on_delete=models.CASCADE,
                                       related_name="+", db_constraint=False)
    object_entity = models.ForeignKey(SubmissionEntity, on_delete=models.CASCADE, null=True,
                                      related_name="+", db_constraint=False)
    confidence = models.FloatField(default=1.0)
    line = models.PositiveIntegerField(help_text="First line of the file stating it.")

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["submission", "pair", "predicate"],
                                    name="instance_unique_pair_predicate"),
        ]

    def __str__(self) -> str:
        return f"{self.predicate} @ {self.pair_id}"


class InstanceEvidence(models.Model):
    """The evidence sentences a DocRED prediction gave (indices into its document's
    sentences), for the crowd page to emphasise; predictions without evidence have none."""

    instance = models.OneToOneField(RelationInstance, on_delete=models.CASCADE,
                                    related_name="evidence")
    sentences = models.JSONField(default=list)

    def __str__(self) -> str:
        return f"evidence {self.sentences} of {self.instance_id}"
