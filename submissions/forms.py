"""The upload form."""

from __future__ import annotations

from typing import Any

from django import forms
from django.conf import settings

from kbpo.core.models import Corpus

from .docred_format import check_upload
from .kbformat import UploadCheck, inspect_upload
from .models import DESCRIPTION_MAX_CHARS, METHOD_MAX_CHARS, Submission


class SubmissionForm(forms.ModelForm):
    corpus = forms.ModelChoiceField(
        queryset=Corpus.objects.order_by("tag"), to_field_name="tag", empty_label=None,
        help_text="The corpus your system read; offsets refer to its documents.")
    paper_url = forms.URLField(required=False, assume_scheme="https",
                               label="Paper or code URL")
    description = forms.CharField(required=False, max_length=DESCRIPTION_MAX_CHARS,
                                  widget=forms.Textarea(attrs={"rows": 3}))
    method_description = forms.CharField(
        required=False, max_length=METHOD_MAX_CHARS, label="Method",
        widget=forms.Textarea(attrs={"rows": 4}),
        help_text=Submission._meta.get_field("method_description").help_text)
    file = forms.FileField(
        help_text="TAC KBP Cold Start KB format, plain text or gzip (.gz), whose first line "
                  "is your run id; for a DocRED corpus, the DocRED result format (a JSON "
                  "list). The format is recognised from the content. See the <a "
                  "href=\"/submissions/format/\">format and validation rules</a>.")

    drop_invalid = forms.BooleanField(
        required=False, label="Drop invalid lines",
        help_text="Accept the valid lines of a file that has errors: every invalid line is "
                  "dropped and listed in the report (an entity whose type line is invalid "
                  "is dropped with its mentions and relations). Unchecked, a file with any "
                  "error is rejected whole.")

    class Meta:
        model = Submission
        fields = ("name", "corpus", "file", "description", "method_description", "paper_url",
                  "public", "drop_invalid")
        labels = {"public": "Public"}
        # Said here, not on the model field (that would need a migration for a text).
        help_texts = {"public": (
            "Public: anyone, signed in or not, sees this system on the leaderboard (name, "
            "owner, description, method, paper) and reads its evaluation report, with "
            "judged samples of its predictions; signed-in users also see its submission "
            "page and validation report. Private: only you and the operators.")}

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.check: UploadCheck | None = None

    def clean_file(self) -> Any:
        upload = self.cleaned_data["file"]
        limit = settings.KBPO_SUBMISSION_MAX_BYTES
        if upload.size > limit:
            raise forms.ValidationError(
                f"The file is {upload.size:,} bytes; the limit is {limit:,} bytes "
                "uncompressed. Compress it with gzip or split it.", code="file_too_large")
        check = inspect_upload(upload, limit)
        if check.code:
            raise forms.ValidationError(check.message, code=check.code.lower())
        corpus = self.cleaned_data.get("corpus")
        if corpus is not None:
            problem = check_upload(upload, check, corpus.schema, corpus.tag)
            if problem:
                raise forms.ValidationError(problem, code="wrong_format")
        self.check = check
        return upload
