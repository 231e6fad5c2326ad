"""The sentence boundaries of a corpus, for teams aligning their provenance.

Relations are judged within one sentence, so a provenance span must lie inside one of
the corpus's sentences: the source's own when the corpus file gave them, else the
splitter's. Both views need a signed-in user (corpora are shared with researchers, not
the public); the TSV streams, the API pages through documents.
"""

from __future__ import annotations

from collections.abc import Iterator

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, StreamingHttpResponse
from django.shortcuts import get_object_or_404
from django.views.decorators.http import require_GET
from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from .models import Corpus, Document, Sentence
from .security import csv_safe

MAX_DOCUMENTS = 1000
# Far beyond any corpus, well inside the bigint a query's OFFSET takes.
MAX_OFFSET = 10**12
CHUNK = 5000


def _rows(corpus: Corpus) -> Iterator[str]:
    yield "doc_id\tsentence\tbegin\tend\n"
    qs = (Sentence.objects.filter(document__corpus=corpus)
          .order_by("document__doc_id", "index")
          .values_list("document__doc_id", "index", "begin", "end"))
    for doc_id, index, begin, end in qs.iterator(chunk_size=CHUNK):
        yield f"{csv_safe(doc_id)}\t{index}\t{begin}\t{end}\n"


@login_required
@require_GET
def sentences_tsv(request: HttpRequest, tag: str) -> StreamingHttpResponse:
    """Every sentence of a corpus: doc_id, index, begin, end (half-open offsets)."""
    corpus = get_object_or_404(Corpus, tag=tag)
    resp = StreamingHttpResponse(_rows(corpus), content_type="text/tab-separated-values")
    resp["Content-Disposition"] = f'attachment; filename="{corpus.tag}-sentences.tsv"'
    return resp


class CorpusSentencesView(APIView):
    """Sentence boundaries of a corpus's documents, a page of documents at a time."""

    @extend_schema(
        summary="Sentence boundaries of a corpus (half-open character offsets)",
        parameters=[
            OpenApiParameter("doc", str, description="Only this document id."),
            OpenApiParameter("offset", int, description="Skip this many documents "
                                                        "(ordered by id)."),
            OpenApiParameter("limit", int, description=f"At most this many documents "
                                                       f"(default and maximum {MAX_DOCUMENTS})."),
        ],
        responses={200: inline_serializer("CorpusSentences", {
            "corpus": serializers.CharField(),
            "documents_total": serializers.IntegerField(),
            "offset": serializers.IntegerField(),
            "documents": serializers.ListField(child=inline_serializer("DocumentSentences", {
                "doc": serializers.CharField(),
                "sentences": serializers.ListField(child=serializers.ListField(
                    child=serializers.IntegerField(), min_length=2, max_length=2)),
            })),
        })})
    def get(self, request: Request, tag: str) -> Response:
        corpus = Corpus.objects.filter(tag=tag).first()
        if corpus is None:
            raise NotFound(f"no corpus tagged {tag!r}")
        docs = Document.objects.filter(corpus=corpus).order_by("doc_id")
        doc = request.query_params.get("doc")
        if doc:
            if "\x00" in doc:  # Postgres cannot compare it: a 500, not "no document"
                raise ValidationError({"doc": "must not contain a NUL character"})
            docs = docs.filter(doc_id=doc)
        offset = self._int(request, "offset", 0, 0, MAX_OFFSET)
        limit = self._int(request, "limit", MAX_DOCUMENTS, 1, MAX_DOCUMENTS)
        page = list(docs.values_list("pk", "doc_id")[offset:offset + limit])
        spans: dict[int, list[list[int]]] = {pk: [] for pk, _ in page}
        for doc, begin, end in (Sentence.objects.filter(document_id__in=spans)
                                .order_by("document_id", "index")
                                .values_list("document_id", "begin", "end")):
            spans[doc].append([begin, end])
        return Response({"corpus": corpus.tag, "documents_total": docs.count(),
                         "offset": offset,
                         "documents": [{"doc": d, "sentences": spans[pk]} for pk, d in page]})

    @staticmethod
    def _int(request: Request, name: str, default: int, low: int,
             high: int | None = None) -> int:
        raw = request.query_params.get(name)
        if raw in (None, ""):
            return default
        try:
            value = int(raw)
        except ValueError:
            raise ValidationError({name: f"must be an integer, got {raw[:20]!r}"}) from None
        if value < low or (high is not None and value > high):
            bound = f"between {low} and {high}" if high is not None else f">= {low}"
            raise ValidationError({name: f"must be {bound}, got {value}"})
        return value
