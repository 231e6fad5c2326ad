"""API serializers."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from rest_framework import serializers

from kbpo.core.models import Corpus

from .docred_format import FORMATS, check_upload
from .kbformat import UploadCheck, inspect_upload
from .models import DESCRIPTION_MAX_CHARS, METHOD_MAX_CHARS, Submission, SubmissionEvent
from .services import NEXT_STEP


class EventSerializer(serializers.ModelSerializer):
    # Plain strings: one enum for `state` in the schema is enough (no duplicate enums).
    from_state = serializers.CharField(read_only=True, help_text="State before (empty "
                                       "for the upload itself).")
    to_state = serializers.CharField(read_only=True, help_text="State after.")

    class Meta:
        model = SubmissionEvent
        fields = ("from_state", "to_state", "message", "created_at")


class SubmissionSerializer(serializers.ModelSerializer):
    corpus = serializers.SlugRelatedField(slug_field="tag", read_only=True)
    owner = serializers.SlugRelatedField(slug_field="username", read_only=True)
    next_step = serializers.SerializerMethodField()

    class Meta:
        model = Submission
        fields = ("id", "name", "owner", "corpus", "description", "method_description",
                  "paper_url", "public", "is_baseline", "run_id", "original_name",
                  "compressed", "file_size", "state", "state_changed_at", "next_step",
                  "n_entities", "n_mentions", "n_relations", "n_warnings", "n_errors",
                  "drop_invalid", "n_dropped", "created_at")
        read_only_fields = fields

    def get_next_step(self, obj: Submission) -> str:
        return NEXT_STEP.get(obj.state, "")


class SubmissionDetailSerializer(SubmissionSerializer):
    events = EventSerializer(many=True, read_only=True)

    class Meta(SubmissionSerializer.Meta):
        fields = (*SubmissionSerializer.Meta.fields, "report", "report_counts", "stats",
                  "dropped", "events")
        read_only_fields = fields


class SubmissionCreateSerializer(serializers.ModelSerializer):
    corpus = serializers.SlugRelatedField(slug_field="tag", queryset=Corpus.objects.all(),
                                          help_text="Corpus tag, e.g. `demo`.")
    file = serializers.FileField(help_text="TAC KB file, or DocRED result file (JSON list) "
                                           "for a DocRED corpus; plain or gzip.")
    format = serializers.ChoiceField(
        choices=FORMATS, required=False, write_only=True,
        help_text="`tac` or `docred`; left out, the format is recognised from the content. "
                  "It must be the corpus's: a DocRED corpus takes DocRED result files.")
    description = serializers.CharField(required=False, allow_blank=True,
                                        max_length=DESCRIPTION_MAX_CHARS)
    method_description = serializers.CharField(required=False, allow_blank=True,
                                               max_length=METHOD_MAX_CHARS)
    drop_invalid = serializers.BooleanField(
        required=False, default=False,
        help_text="Accept the valid lines of a file with errors; every dropped line is "
                  "listed in `dropped`. Without it a file with any error is rejected whole.")

    class Meta:
        model = Submission
        fields = ("name", "corpus", "file", "format", "description", "method_description",
                  "paper_url", "public", "drop_invalid")

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        check = self.context.get("check")
        problem = check_upload(attrs["file"], check, attrs["corpus"].schema,
                               attrs["corpus"].tag, attrs.pop("format", None))
        if problem:
            raise serializers.ValidationError({"file": [problem]}, code="wrong_format")
        return attrs

    def validate_file(self, upload: Any) -> Any:
        limit = settings.KBPO_SUBMISSION_MAX_BYTES
        if upload.size > limit:
            raise serializers.ValidationError(
                f"The file is {upload.size:,} bytes; the limit is {limit:,} bytes "
                "uncompressed.", code="file_too_large")
        check: UploadCheck = inspect_upload(upload, limit)
        if check.code:
            raise serializers.ValidationError(check.message, code=check.code.lower())
        self.context["check"] = check
        return upload
