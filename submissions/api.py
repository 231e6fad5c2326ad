"""REST API: upload, list, read and withdraw submissions (token or session auth)."""

from __future__ import annotations

from django.core.exceptions import RequestDataTooBig
from django.db.models import QuerySet
from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_view
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import NotFound
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.serializers import BaseSerializer

from kbpo.core.accounts import UNCONFIRMED_MESSAGE, email_confirmed

from .models import DESCRIPTION_MAX_CHARS, METHOD_MAX_CHARS, State, Submission
from .serializers import (
    SubmissionCreateSerializer,
    SubmissionDetailSerializer,
    SubmissionSerializer,
)
from .services import (
    DuplicateUpload,
    LimitExceeded,
    SubmissionBusy,
    TransitionError,
    create_submission,
    withdraw,
)
from .uploads import upload_refused_message


@extend_schema_view(
    list=extend_schema(summary="Your submissions, newest first"),
    retrieve=extend_schema(summary="One submission: state, timeline, report and statistics"),
)
class SubmissionViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin,
                        viewsets.GenericViewSet):
    queryset = Submission.objects.none()
    parser_classes = [MultiPartParser, FormParser]

    def get_queryset(self) -> QuerySet[Submission]:
        base = Submission.objects.select_related("corpus", "owner")
        if self.action == "list":
            return base.filter(owner=self.request.user)
        # Private submissions of others are indistinguishable from missing ones (404).
        return base.visible_to(self.request.user).prefetch_related("events")

    def get_serializer_class(self) -> type[BaseSerializer]:
        if self.action == "create":
            return SubmissionCreateSerializer
        if self.action == "list":
            return SubmissionSerializer
        return SubmissionDetailSerializer

    @extend_schema(
        summary="Upload a KB file (multipart)",
        request={"multipart/form-data": SubmissionCreateSerializer},
        description=(
            "Validation runs right after the upload. Without a separate worker it finishes "
            "inside this request: a file it rejects is answered **422** with the "
            "submission (state `rejected`, the line-by-line `report` and `report_counts`). "
            "With a worker it runs asynchronously: the answer is **201** with state "
            "`uploaded`; poll `GET /api/submissions/{id}/` (every few seconds) until "
            "`state` leaves `uploaded`/`validating` — `rejected` carries the same report, "
            "`ingested` and later states mean the file was accepted. An identical file "
            "(same uncompressed content) already submitted by you to the same corpus and "
            "not withdrawn is refused with **409** before it uses a slot."),
        responses={201: SubmissionDetailSerializer,
                   400: OpenApiResponse(description="Field errors, keyed by field name."),
                   413: OpenApiResponse(description="The file is over the size limit "
                                                    "(as sent or uncompressed): `file` says "
                                                    "which."),
                   409: OpenApiResponse(description="Duplicate of one of your submissions "
                                                    "(`duplicate_of` gives its id)."),
                   422: OpenApiResponse(SubmissionDetailSerializer,
                                        description="Rejected by validation; the body is "
                                                    "the submission with its line report."),
                   403: OpenApiResponse(description="The account's e-mail address is "
                                                    "not confirmed yet."),
                   429: OpenApiResponse(description="Submission limit reached.")})
    def create(self, request: Request) -> Response:
        if not email_confirmed(request.user):
            return Response({"detail": UNCONFIRMED_MESSAGE, "code": "email_unconfirmed"},
                            status=status.HTTP_403_FORBIDDEN)
        try:
            payload = request.data  # parsing runs the upload handlers
        except RequestDataTooBig:
            # The text fields together passed DATA_UPLOAD_MAX_MEMORY_SIZE: Django's
            # answer would be an empty HTML page, not the JSON the API promises.
            return Response({"detail": "The text fields are too large; a description "
                                       f"holds at most {DESCRIPTION_MAX_CHARS:,} characters "
                                       f"and a method {METHOD_MAX_CHARS:,}.",
                             "code": "fields_too_large"},
                            status=status.HTTP_413_REQUEST_ENTITY_TOO_LARGE)
        refused = upload_refused_message(request._request)
        if refused:
            return Response({"file": [refused]},
                            status=status.HTTP_413_REQUEST_ENTITY_TOO_LARGE)
        ser = SubmissionCreateSerializer(data=payload, context={"request": request})
        if not ser.is_valid():
            # Over the size cap (as sent, or once decompressed) is 413, so a script can
            # tell "split the file" from "fix a field".
            too_large = any(getattr(e, "code", "") == "file_too_large"
                            for e in ser.errors.get("file", []))
            return Response(ser.errors, status=(status.HTTP_413_REQUEST_ENTITY_TOO_LARGE
                                                if too_large else status.HTTP_400_BAD_REQUEST))
        data = ser.validated_data
        check = ser.context["check"]
        try:
            sub = create_submission(
                owner=request.user, corpus=data["corpus"], name=data["name"],
                file=data["file"], original_name=data["file"].name,
                compressed=check.compressed, description=data.get("description", ""),
                method_description=data.get("method_description", ""),
                paper_url=data.get("paper_url", ""), public=data.get("public", False),
                run_id=check.run_id, drop_invalid=data.get("drop_invalid", False))
        except DuplicateUpload as exc:
            return Response({"detail": str(exc), "code": "duplicate",
                             "duplicate_of": exc.existing.pk}, status=status.HTTP_409_CONFLICT)
        except LimitExceeded as exc:
            limited = Response({"detail": str(exc), "code": "limit_exceeded"},
                               status=status.HTTP_429_TOO_MANY_REQUESTS)
            if exc.retry_after:
                limited["Retry-After"] = str(exc.retry_after)
            return limited
        sub.refresh_from_db()
        rejected = sub.state == State.REJECTED
        return Response(SubmissionDetailSerializer(sub).data,
                        status=(status.HTTP_422_UNPROCESSABLE_ENTITY if rejected
                                else status.HTTP_201_CREATED))

    @extend_schema(summary="Withdraw a submission (owner or staff)", request=None,
                   responses={200: SubmissionDetailSerializer,
                              409: OpenApiResponse(description="Already withdrawn "
                                                               "(`already_withdrawn`), or being "
                                                               "validated right now (`busy`).")})
    @action(detail=True, methods=["post"])
    def withdraw(self, request: Request, pk: str | None = None) -> Response:
        sub = self.get_object()
        if not sub.can_manage(request.user):
            raise NotFound()
        try:
            withdraw(sub, by=request.user, wait=False)
        except SubmissionBusy as exc:
            return Response({"detail": str(exc), "code": "busy"},
                            status=status.HTTP_409_CONFLICT)
        except TransitionError:
            return Response({"detail": "This submission is already withdrawn.",
                             "code": "already_withdrawn"}, status=status.HTTP_409_CONFLICT)
        sub.refresh_from_db()
        return Response(SubmissionDetailSerializer(sub).data)
