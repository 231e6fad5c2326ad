"""Core models: corpora of documents split into sentences and tokens, and profiles."""

from __future__ import annotations

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import RegexValidator, slug_re
from django.db import models
from django.db.models import Q

from .schemas import DEFAULT as DEFAULT_SCHEMA
from .schemas import SCHEMA_CHOICES, RelationSchema, get_schema

# A tag is part of every page URL of its corpus (Django's <slug:...> converter, whose
# characters `slug_re` gives): one outside it makes those URLs unbuildable (NoReverseMatch).
# The same pattern for the database's check (on Postgres `~`, where \Z ends the text).
TAG_PATTERN = slug_re.pattern
TAG_INVALID = ("Corpus tag “%(value)s” is not allowed: use only ASCII letters, digits, "
               "hyphens and underscores (the tag is part of the corpus's URLs), "
               "e.g. “tac2015-v2”.")


class Corpus(models.Model):
    """A fixed, versioned set of documents that submissions refer to by offsets."""

    tag = models.SlugField(
        max_length=64, unique=True, error_messages={"invalid": TAG_INVALID},
        help_text="Short identifier used in URLs and commands, e.g. 'demo' or 'kbp2016': "
                  "ASCII letters, digits, hyphens and underscores only.")
    description = models.TextField(blank=True)
    # What the corpus evaluates (kbpo.core.schemas): fixed at creation, since every
    # submission and label on it is stated in that schema's relations.
    schema = models.CharField(
        max_length=32, choices=SCHEMA_CHOICES, default=DEFAULT_SCHEMA,
        help_text="Relation schema the corpus is evaluated on (fixed once loaded).")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["tag"]
        verbose_name_plural = "corpora"
        # The same rule in the database, for what skips save() (bulk_create, update, raw
        # SQL). Added NOT VALID (migration 0004): a row stored before it stays readable
        # until renamed, and any write to it must give it a routable tag.
        constraints = [models.CheckConstraint(
            condition=Q(tag__regex=TAG_PATTERN), name="corpus_tag_routable",
            violation_error_message="This corpus tag is not allowed in URLs: rename it "
                                    "(ASCII letters, digits, hyphens and underscores only).")]

    def __str__(self) -> str:
        return self.tag

    def save(self, *args: object, **kwargs: object) -> None:
        # Every creation path (commands, admin, fixtures, code) goes through here, so a
        # tag the pages cannot route never reaches the table.
        check_tag(self.tag)
        super().save(*args, **kwargs)  # type: ignore[arg-type]

    @property
    def relation_schema(self) -> RelationSchema:
        """The corpus's relation schema (`kbpo.core.schemas`)."""
        return get_schema(self.schema)

    @property
    def routable(self) -> bool:
        """Whether the tag fits the URLs; False only for a row stored before tags were
        checked (docs/internals/corpus-loading.md), whose pages are unreachable until it is
        renamed."""
        return slug_re.match(self.tag) is not None


def check_tag(tag: str) -> None:
    """Raise ValidationError naming `tag` unless it can be a corpus tag."""
    field = Corpus._meta.get_field("tag")
    if tag in field.empty_values:
        raise ValidationError("A corpus tag is required (ASCII letters, digits, hyphens "
                              "and underscores, e.g. “tac2015-v2”).")
    field.run_validators(tag)


class Document(models.Model):
    """One document; its text never changes once loaded (offsets depend on it)."""

    corpus = models.ForeignKey(Corpus, on_delete=models.CASCADE, related_name="documents")
    doc_id = models.CharField(
        max_length=200,
        # The same characters a submission's provenance (DOCID:begin-end, several
        # separated by commas) cannot carry in a document id.
        validators=[RegexValidator(
            r"\A[^\s:,]+\Z",  # \Z: "$" would let a trailing newline through
            "Document ids contain no spaces, colons or commas (provenance is written "
            "DOCID:begin-end, several separated by commas).")])
    title = models.TextField(blank=True)
    text = models.TextField()
    date = models.DateField(null=True, blank=True)
    text_sha256 = models.CharField(max_length=64)
    length = models.PositiveIntegerField()

    class Meta:
        ordering = ["corpus", "doc_id"]
        constraints = [
            models.UniqueConstraint(fields=["corpus", "doc_id"], name="document_unique_id"),
        ]

    def __str__(self) -> str:
        return self.doc_id


class Sentence(models.Model):
    """A sentence span `[begin, end)` of its document, with its token spans.

    Tokens are stored inline as a flat list `[b0, e0, b1, e1, ...]` of absolute
    character offsets: millions of token rows would cost far more than they give.
    """

    document = models.ForeignKey(Document, on_delete=models.CASCADE, related_name="sentences")
    index = models.PositiveIntegerField()
    begin = models.PositiveIntegerField()
    end = models.PositiveIntegerField()
    tokens = models.JSONField(default=list)

    class Meta:
        ordering = ["document", "index"]
        constraints = [
            models.UniqueConstraint(fields=["document", "index"], name="sentence_unique_index"),
        ]

    def __str__(self) -> str:
        return f"{self.document_id}#{self.index}"

    def token_spans(self) -> list[tuple[int, int]]:
        """Token spans as (begin, end) pairs."""
        t = self.tokens
        return [(t[i], t[i + 1]) for i in range(0, len(t), 2)]


class Profile(models.Model):
    """What a researcher tells us about themselves."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="profile")
    affiliation = models.CharField(max_length=200, blank=True)
    homepage = models.URLField(blank=True)
    # Registration sets False until the mailed link is opened (kbpo/core/accounts.py);
    # accounts made otherwise, and those made before confirmation existed, are confirmed.
    email_confirmed = models.BooleanField(default=True)

    def __str__(self) -> str:
        return f"profile of {self.user}"


class DocumentEntity(models.Model):
    """An entity of a DocRED-schema document (its vertexSet entry), with all its mentions.

    Predictions and gold name entities by `index`, so every entry is kept in order.
    `anchor_begin/anchor_end` is the span that stands for the entity in a pair's
    key (kbpo.core.docred_docs): unique among the document's entities.
    """

    document = models.ForeignKey(Document, on_delete=models.CASCADE, related_name="entities")
    index = models.PositiveIntegerField()
    type = models.CharField(max_length=8)
    name = models.CharField(max_length=300)
    # Flat [sentence index, begin, end, ...], character offsets, half-open, text order.
    mentions = models.JSONField(default=list)
    anchor_begin = models.PositiveIntegerField()
    anchor_end = models.PositiveIntegerField()

    class Meta:
        ordering = ["document", "index"]
        constraints = [
            models.UniqueConstraint(fields=["document", "index"], name="entity_unique_index"),
        ]

    def __str__(self) -> str:
        return f"{self.document_id}#{self.index} {self.name} ({self.type})"

    def mention_spans(self) -> list[tuple[int, int, int]]:
        """(sentence index, begin, end) of every mention."""
        m = self.mentions
        return [(m[i], m[i + 1], m[i + 2]) for i in range(0, len(m), 3)]
