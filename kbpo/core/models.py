"""Core models: corpora of documents split into sentences and tokens, and profiles."""

from __future__ import annotations

from django.conf import settings
from django.core.validators import RegexValidator
from django.db import models


class Corpus(models.Model):
    """A fixed, versioned set of documents that submissions refer to by offsets."""

    tag = models.SlugField(
        max_length=64, unique=True,
        help_text="Short identifier used in URLs and commands, e.g. 'demo' or 'kbp2016'.")
    description = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["tag"]
        verbose_name_plural = "corpora"

    def __str__(self) -> str:
        return self.tag


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

    def __str__(self) -> str:
        return f"profile of {self.user}"
