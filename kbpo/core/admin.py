"""Operator views of corpora and accounts."""

from django import forms
from django.contrib import admin
from django.db import models
from django.db.models import Count, QuerySet
from django.http import HttpRequest

from .models import DEFAULT_SCHEMA, TAG_INVALID, Corpus, Document, Profile, Sentence


class CorpusForm(forms.ModelForm):
    class Meta:
        model = Corpus
        fields = "__all__"
        # The form's slug check runs before the model's: give it the message naming the tag.
        error_messages = {"tag": {"invalid": TAG_INVALID}}

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        if "schema" in self.fields:  # left out, a new corpus is TAC KBP (the default)
            self.fields["schema"].required = False

    def clean_schema(self) -> str:
        return self.cleaned_data.get("schema") or DEFAULT_SCHEMA


@admin.register(Corpus)
class CorpusAdmin(admin.ModelAdmin):
    form = CorpusForm
    list_display = ("tag", "description", "schema", "n_documents", "created_at")
    list_filter = ("schema",)
    search_fields = ("tag", "description")

    def get_readonly_fields(self, request: HttpRequest, obj: object = None) -> tuple[str, ...]:
        # Submissions and labels are stated in the schema's relations: fixed once created.
        return ("schema",) if obj is not None else ()

    def get_queryset(self, request: HttpRequest) -> QuerySet:
        return super().get_queryset(request).annotate(_n=Count("documents"))

    @admin.display(description="documents", ordering="_n")
    def n_documents(self, obj: Corpus) -> int:
        return obj._n  # type: ignore[attr-defined]


class ReadOnlyInline(admin.TabularInline):
    """A history or child list shown on a parent's page: operators look, never edit."""

    extra = 0
    can_delete = False

    def get_readonly_fields(self, request: HttpRequest, obj: object = None) -> list[str]:
        return list(self.fields or ())

    def has_add_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False


class SentenceInline(ReadOnlyInline):
    model = Sentence
    fields = ("index", "begin", "end")


@admin.register(Document)
class DocumentAdmin(admin.ModelAdmin):
    list_display = ("doc_id", "corpus", "title", "date", "length")
    list_filter = ("corpus",)
    search_fields = ("doc_id", "title")
    # Texts are immutable: submissions refer to their offsets.
    readonly_fields = ("corpus", "doc_id", "text", "text_sha256", "length")
    inlines = [SentenceInline]


@admin.register(Profile)
class ProfileAdmin(admin.ModelAdmin):
    # Links typed without a scheme are taken as https (Django 6 behaviour, today).
    formfield_overrides = {models.URLField: {"assume_scheme": "https"}}
    list_display = ("user", "affiliation", "homepage")
    search_fields = ("user__username", "user__email", "affiliation")
