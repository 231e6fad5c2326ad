"""API for what a submission's report page shows: scores, per-predicate scores, score
history, judged samples and progress. Readable by whoever may read the report."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from django.conf import settings
from django.core.paginator import EmptyPage, PageNotAnInteger, Paginator
from django.db.models import QuerySet
from django.utils.cache import patch_vary_headers
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from kbpo.core.schemas import RelationSchema, get_schema
from submissions.models import Submission

from . import leaderboard as lb
from . import report, stored_pages
from .models import KINDS, METRICS, ScoreRun, SystemScore, is_exact

SAMPLES_PER_PAGE = 50
CENT = Decimal("0.01")
NOT_FOUND = "No such submission (or you may not see it)."


def report_visible(sub: Submission, user: object) -> bool:
    """A public submission's report is for everyone; a private one for owner and staff."""
    return bool(sub.public or sub.can_view(user))


def visible_submission(pk: int, user: object) -> Submission | None:
    sub = Submission.objects.select_related("corpus", "owner").filter(pk=pk).first()
    return sub if sub is not None and report_visible(sub, user) else None


def _interval(score: SystemScore, metric: str, kind: str) -> dict[str, float | None]:
    est, lo, hi = score.interval(metric, kind)
    return {"estimate": est, "lo": lo, "hi": hi, "exact": is_exact(lo, hi)}


def scheme_scores(score: SystemScore) -> dict[str, Any]:
    return {m: {k: _interval(score, m, k) for k in KINDS} for m in METRICS}


def correction(score: SystemScore) -> dict[str, Any] | None:
    """Per metric: the hard-label joint estimate and how far soft labels moved it."""
    if all(score.correction(m)[0] is None for m in METRICS):
        return None
    return {m: dict(zip(("hard", "shift"), score.correction(m), strict=True)) for m in METRICS}


def run_info(run: ScoreRun | None) -> dict[str, Any] | None:
    if run is None:
        return None
    return {"id": run.pk, "finished_at": run.finished_at, "confidence": run.confidence,
            "draw_scheme": run.draw_scheme, "estimator": run.estimator,
            "labels": run.n_labels, "generation": run.generation}


def stamp(score: SystemScore) -> dict[str, Any]:
    """The label generation a scheme's row reflects, and whether it is still updating."""
    g = score.reflects()
    return {"generation": g, "updating": g < score.run.generation}


class IntervalSerializer(serializers.Serializer):
    estimate = serializers.FloatField(allow_null=True, help_text="null: not estimable yet.")
    lo = serializers.FloatField(allow_null=True)
    hi = serializers.FloatField(allow_null=True)
    exact = serializers.BooleanField(
        help_text="true: known exactly from the labels (every prediction of the system is "
                  "labelled), so lo == hi == estimate.")


class KindsSerializer(serializers.Serializer):
    joint = IntervalSerializer(help_text="Using every label on the corpus.")
    simple = IntervalSerializer(help_text="Using this submission's own draws only.")


class MetricsSerializer(serializers.Serializer):
    precision = KindsSerializer()
    recall = KindsSerializer()
    f1 = KindsSerializer()


class ShiftSerializer(serializers.Serializer):
    hard = serializers.FloatField(allow_null=True,
                                  help_text="Joint estimate from the 0/1 stored (hard) labels.")
    shift = serializers.FloatField(allow_null=True,
                                   help_text="Reported (soft-label) estimate minus `hard`.")


class CorrectionSerializer(serializers.Serializer):
    precision = ShiftSerializer()
    recall = ShiftSerializer()
    f1 = ShiftSerializer()


class SchemeScoresSerializer(MetricsSerializer):
    scheme = serializers.ChoiceField(choices=list(lb.BOARD_SCHEMES))
    generation = serializers.IntegerField(
        help_text="The label generation these scores reflect.")
    updating = serializers.BooleanField(
        help_text="true: from an earlier label generation than the run's draw scheme; "
                  "being recomputed.")
    reweighted = serializers.BooleanField(
        help_text="true: reweighted from the draw scheme's draws.")
    reliable = serializers.BooleanField(
        help_text="false for reweighted figures: not headline figures; their intervals can "
                  "miss more often than they say and are not corrected for a biased crowd.")
    correction = CorrectionSerializer(
        allow_null=True, help_text="How far the crowd-noise correction (soft labels) moved "
        "each joint score; null when the run used hard labels.")


class ShareSerializer(serializers.Serializer):
    estimate = serializers.FloatField(allow_null=True, help_text="null: no answers yet.")
    lo = serializers.FloatField(allow_null=True)
    hi = serializers.FloatField(allow_null=True)
    answers = serializers.IntegerField()
    workers = serializers.IntegerField()
    effective_answers = serializers.FloatField(
        help_text="Answers divided by the design effect of clustering by worker.")


class ReweightedSerializer(serializers.Serializer):
    estimate = serializers.FloatField(
        allow_null=True, help_text="null: not measurable (no control answers of one kind, "
        "or no posteriors on the labelled pairs).")
    lo = serializers.FloatField(allow_null=True)
    hi = serializers.FloatField(allow_null=True)
    relation_share = serializers.FloatField(
        allow_null=True, help_text="Estimated share of the tested pairs holding a relation: "
        "the mean of 1 - P(no relation) over the labelled pairs' posteriors.")
    relation_share_se = serializers.FloatField(allow_null=True,
                                               help_text="Its standard error.")
    pairs = serializers.IntegerField(help_text="Labelled pairs the share is measured on.")
    workers = serializers.IntegerField()
    effective_answers = serializers.FloatField(
        help_text="Answers' worth of the interval (sampling clustered by worker, and the "
        "mix's uncertainty).")


class ControlsSerializer(serializers.Serializer):
    accuracy = ShareSerializer(help_text="Share of answers to control questions equal to "
                               "the known answer (from the exhaustive gold): accuracy "
                               "against the truth. estimate null: no control answers.")
    on_relation = ShareSerializer(help_text="The same on controls whose known answer is a "
                                  "relation.")
    on_no_relation = ShareSerializer(help_text="The same on controls whose known answer is "
                                     "no relation (a crowd answering no relation to "
                                     "everything is right on all of these).")
    relation_answers = serializers.IntegerField(
        help_text="Every answer to a relation question on the corpus, controls included.")
    share_of_answers = serializers.FloatField(
        allow_null=True, help_text="Control answers / relation_answers: the controls' part "
        "of the crowd work. null: no relation answers.")
    reweighted = ReweightedSerializer(
        allow_null=True, help_text="Accuracy on controls with the two parts (on_relation, "
        "on_no_relation) weighted to the tested pairs' estimated mix: how often an answer "
        "to a question under test is right. null: the run predates this figure.")


class BiasedWorkerSerializer(serializers.Serializer):
    worker = serializers.CharField(help_text="The worker's external id.")
    false_yes = serializers.FloatField(help_text="Their rate of naming the relation where "
                                       "it does not hold.")


class WeakRelationSerializer(serializers.Serializer):
    relation = serializers.CharField()
    false_yes = serializers.FloatField(help_text="The median worker's rate of naming it "
                                       "where it does not hold.")
    workers = BiasedWorkerSerializer(many=True)


class CrowdSerializer(serializers.Serializer):
    agreement = ShareSerializer(help_text="Share of answers equal to their pair's aggregated "
                                "label: agreement with the crowd, not accuracy.")
    controls = ControlsSerializer(
        allow_null=True, help_text="Answers to control questions against their known "
        "answers. null: the run predates this figure (not available until the next "
        "recompute).")
    accuracy = ShareSerializer(help_text="Mean probability that an answer is right under "
                               "the worker model of the quality pass; the interval covers "
                               "sampling of answers and workers, not model misfit.")
    majority_agreement = ShareSerializer(help_text="Share of answers equal to their pair's "
                                         "majority vote (the same figure as agreement, "
                                         "against the other aggregator).")
    aggregator = serializers.ChoiceField(
        choices=["lopsided", "one_coin", "majority"],
        help_text="What decides the stored labels after the quality pass "
        "(KBPO_LABEL_AGGREGATION).")
    labels = serializers.IntegerField(help_text="Labelled pairs with crowd answers.")
    differs_from_majority = serializers.IntegerField(
        help_text="Labelled pairs whose stored label is not their majority vote.")
    soft_labels = serializers.BooleanField(help_text="Scores use soft labels.")
    weak_relations = WeakRelationSerializer(
        many=True, required=False, help_text="Relations the crowd names on at least 10% "
        "of the pairs holding none that offer them (median worker, under the crowd "
        "model's false-yes rates per worker and relation), worst first, with the workers "
        "most biased on each. Absent: the run predates this figure.")


class ScoreRunInfoSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    finished_at = serializers.DateTimeField()
    confidence = serializers.FloatField()
    draw_scheme = serializers.CharField()
    estimator = serializers.ChoiceField(
        choices=["distinct", "importance"],
        help_text="The joint estimator of the run's scores: \"distinct\" counts each "
                  "labelled mention pair once (Horvitz-Thompson over the distinct drawn "
                  "pairs, the default), \"importance\" every draw (runs before it existed).")
    labels = serializers.IntegerField(help_text="Distinct labelled pairs the run used.")
    generation = serializers.IntegerField(
        help_text="The label generation the run reflects (its draw scheme, computed live).")


class PredicateSerializer(serializers.Serializer):
    predicate = serializers.CharField()
    label = serializers.CharField(help_text="The relation schema's readable name of the "
                                  "predicate (DocRED: 'father' for P22).")
    instances = serializers.IntegerField(help_text="Predictions with this predicate.")
    draws = serializers.IntegerField()
    labelled = serializers.IntegerField(help_text="Draws with a crowd label.")
    correct = serializers.IntegerField()
    precision = IntervalSerializer(
        help_text="Simple precision: correct / labelled draws; null without labelled draws "
                  "of its own (a system scored jointly from other systems' labels).")
    labelled_instances = serializers.IntegerField(
        help_text="Its instances with a label from any submission's sample.")
    correct_instances = serializers.IntegerField(
        help_text="Of those, the ones the label confirms (not a random sample of its "
                  "instances: labels follow the samples that drew them).")
    exhaustive = serializers.IntegerField(
        help_text="True instances of the predicate in the exhaustive sample.")
    found = serializers.IntegerField(help_text="Of those, how many this submission predicted.")
    recall = IntervalSerializer(help_text="Simple recall: found / exhaustive.")


class ScoresSerializer(serializers.Serializer):
    submission = serializers.IntegerField()
    name = serializers.CharField()
    state = serializers.CharField()
    run = ScoreRunInfoSerializer(allow_null=True, help_text="null: not scored yet.")
    labels_used = serializers.IntegerField(allow_null=True)
    draws = serializers.IntegerField(allow_null=True, help_text="Draws with a label.")
    pending_draws = serializers.IntegerField(allow_null=True)
    cost_usd = serializers.CharField(allow_null=True)
    control_cost_usd = serializers.CharField(
        help_text="Part of the committed crowd cost spent on control questions.")
    schemes = SchemeScoresSerializer(many=True)
    predicates = PredicateSerializer(many=True)
    crowd = CrowdSerializer(help_text="The crowd's measured accuracy on this corpus, as "
                            "the run (`run`) measured it, like the scores.")


class HistoryPointSerializer(MetricsSerializer):
    run = serializers.IntegerField()
    finished_at = serializers.DateTimeField()
    labels = serializers.IntegerField(help_text="Labelled pairs on the corpus at that run.")


class HistorySerializer(serializers.Serializer):
    submission = serializers.IntegerField()
    scheme = serializers.CharField()
    points = HistoryPointSerializer(many=True)


class SampleSerializer(serializers.Serializer):
    instance = serializers.IntegerField()
    predicate = serializers.CharField()
    predicate_label = serializers.CharField(help_text="The schema's readable name of the "
                                            "predicate.")
    subject = serializers.CharField()
    object = serializers.CharField()
    sentence = serializers.CharField()
    document = serializers.CharField()
    times_drawn = serializers.IntegerField()
    verdict = serializers.ChoiceField(choices=["correct", "wrong", "pending"])
    label = serializers.ListField(child=serializers.CharField(), allow_null=True,
                                  help_text="The crowd's relation(s) for the pair.")


class SamplesSerializer(serializers.Serializer):
    submission = serializers.IntegerField()
    verdict = serializers.CharField()
    count = serializers.IntegerField()
    page = serializers.IntegerField()
    pages = serializers.IntegerField()
    next = serializers.IntegerField(allow_null=True, help_text="Next page number, or null.")
    results = SampleSerializer(many=True)


class ProgressSerializer(serializers.Serializer):
    submission = serializers.IntegerField()
    state = serializers.CharField()
    drawn_pairs = serializers.IntegerField()
    labelled_pairs = serializers.IntegerField()
    draws = serializers.IntegerField()
    answers_needed = serializers.IntegerField()
    answers_received = serializers.IntegerField()
    open_questions = serializers.IntegerField()
    percent = serializers.IntegerField(help_text="Labelled share of the drawn pairs.")
    spend_usd = serializers.CharField(help_text="Crowd cost committed to this submission "
                                      "so far, in US dollars (as the report page shows it).")
    budget_usd = serializers.CharField(help_text="Its budget cap, in US dollars.")
    run = serializers.IntegerField(allow_null=True, help_text="Newest run that scored it.")


def predicate_dicts(sub: Submission, confidence: float,
                    scores: dict[str, SystemScore] | None = None) -> list[dict[str, Any]]:
    return [{"predicate": p.predicate, "label": p.label, "instances": p.instances, "draws": p.draws,
             "labelled": p.labelled, "correct": p.correct,
             "precision": {"estimate": p.precision, "lo": p.lo, "hi": p.hi,
                           "exact": is_exact(p.lo, p.hi)},
             "labelled_instances": p.labelled_instances,
             "correct_instances": p.correct_instances,
             "exhaustive": p.exhaustive, "found": p.found,
             "recall": {"estimate": p.recall, "lo": p.r_lo, "hi": p.r_hi,
                        "exact": is_exact(p.r_lo, p.r_hi)}}
            for p in report.per_predicate(sub, confidence, scores)]


class ViewerAPIView(APIView):
    """An API view whose responses to a signed-in or token caller are marked private
    (stored_pages.keep_private): they may hold that caller's private submissions. Every
    response varies on Authorization: a cache must not answer a token caller with what
    it kept for an anonymous one (their private systems would be missing)."""

    permission_classes = [AllowAny]

    def finalize_response(self, request: Request, response: Any, *args: Any,
                          **kwargs: Any) -> Any:
        response = super().finalize_response(request, response, *args, **kwargs)
        patch_vary_headers(response, ["Authorization"])
        return stored_pages.keep_private(request, response)


class _SubmissionAPIView(ViewerAPIView):

    def submission(self, request: Request, pk: int) -> Submission | None:
        return visible_submission(pk, request.user)


def _missing() -> Response:
    return Response({"detail": NOT_FOUND}, status=404)


def _scheme(request: Request) -> tuple[str | None, Response | None]:
    scheme = request.query_params.get("scheme", settings.KBPO_SAMPLING_SCHEME)
    if scheme not in lb.BOARD_SCHEMES:
        return None, Response({"scheme": [str(lb.BadParameter("scheme", scheme,
                                                             list(lb.BOARD_SCHEMES)))]},
                              status=400)
    return scheme, None


class ScoresAPIView(_SubmissionAPIView):
    @extend_schema(operation_id="submission_scores", summary="A submission's latest scores: "
                   "every scheme, joint and simple, with intervals; per-predicate precision "
                   "and recall", responses={200: ScoresSerializer,
                                            404: OpenApiResponse(description=NOT_FOUND)})
    def get(self, request: Request, pk: int) -> Response:
        sub = self.submission(request, pk)
        if sub is None:
            return _missing()
        run, scores = report.latest_scores(sub)
        first = next(iter(scores.values()), None)
        confidence = run.confidence if run else settings.KBPO_CONFIDENCE
        return Response(ScoresSerializer({
            "submission": sub.pk, "name": sub.name, "state": sub.state, "run": run_info(run),
            "labels_used": first.labels_used if first else None,
            "draws": first.draws if first else None,
            "pending_draws": first.pending if first else None,
            "cost_usd": str(first.cost_usd.quantize(Decimal("0.01"))) if first else None,
            "control_cost_usd": str(report.control_cost(sub)),
            "schemes": [{"scheme": s, **scheme_scores(scores[s]), **stamp(scores[s]),
                         **lb.reliability(s, scores[s].run.draw_scheme),
                         "correction": correction(scores[s])}
                        for s in lb.BOARD_SCHEMES if s in scores],
            "predicates": predicate_dicts(sub, confidence, scores),
            "crowd": report.crowd(sub, confidence, scores, run)}).data)


class HistoryAPIView(_SubmissionAPIView):
    @extend_schema(operation_id="submission_score_history",
                   summary="Every score run of a submission, oldest first (joint and simple)",
                   parameters=[OpenApiParameter("scheme", OpenApiTypes.STR,
                                                enum=list(lb.BOARD_SCHEMES))],
                   responses={200: HistorySerializer, 400: OpenApiResponse(
                       description="Unknown scheme."), 404: OpenApiResponse(
                       description=NOT_FOUND)})
    def get(self, request: Request, pk: int) -> Response:
        sub = self.submission(request, pk)
        if sub is None:
            return _missing()
        scheme, bad = _scheme(request)
        if bad is not None:
            return bad
        qs = (SystemScore.objects.filter(submission=sub, scheme=scheme,
                                         run__status=ScoreRun.Status.COMPLETE)
              .select_related("run").order_by("run__finished_at", "run_id"))
        points = [{"run": s.run_id, "finished_at": s.run.finished_at, "labels": s.run.n_labels,
                   **scheme_scores(s)} for s in qs]
        return Response(HistorySerializer({"submission": sub.pk, "scheme": scheme,
                                           "points": points}).data)


def _sample_dict(s: report.Sample, schema: RelationSchema) -> dict[str, Any]:
    inst, pair = s.instance, s.instance.pair
    text = pair.document.text
    verdict = s.verdict
    return {"instance": inst.pk, "predicate": inst.predicate,
            "predicate_label": schema.label(inst.predicate),
            "subject": text[pair.subject_begin:pair.subject_end],
            "object": text[pair.object_begin:pair.object_end],
            "sentence": "".join(seg for seg, _ in s.segments),
            "document": pair.document.doc_id, "times_drawn": s.times_drawn,
            "verdict": "pending" if verdict is None else ("correct" if verdict else "wrong"),
            "label": list(s.label.predicates) if s.label else None}


class SamplesAPIView(_SubmissionAPIView):
    @extend_schema(operation_id="submission_samples",
                   summary="The submission's judged (and pending) sampled predictions, paged",
                   parameters=[OpenApiParameter("verdict", OpenApiTypes.STR,
                                                enum=list(report.VERDICTS), default="all"),
                               OpenApiParameter("page", OpenApiTypes.INT, default=1)],
                   responses={200: SamplesSerializer, 400: OpenApiResponse(
                       description="Unknown verdict or page."), 404: OpenApiResponse(
                       description=NOT_FOUND)})
    def get(self, request: Request, pk: int) -> Response:
        sub = self.submission(request, pk)
        if sub is None:
            return _missing()
        verdict = request.query_params.get("verdict", "all")
        if verdict not in report.VERDICTS:
            return Response({"verdict": [f"verdict={lb.shown(verdict)} is not offered; use "
                                         f"one of: {', '.join(report.VERDICTS)}"]}, status=400)
        qs: QuerySet = report.sample_queryset(sub, verdict)
        paginator = Paginator(qs, SAMPLES_PER_PAGE)
        try:
            page = paginator.page(request.query_params.get("page", 1))
        except (EmptyPage, PageNotAnInteger):
            return Response({"page": [f"page must be a whole number from 1 to "
                                      f"{paginator.num_pages}"]}, status=400)
        return Response(SamplesSerializer({
            "submission": sub.pk, "verdict": verdict, "count": paginator.count,
            "page": page.number, "pages": paginator.num_pages,
            "next": page.next_page_number() if page.has_next() else None,
            "results": [_sample_dict(s, get_schema(sub.corpus.schema))
                        for s in report.samples(list(page.object_list))],
        }).data)


class ProgressAPIView(_SubmissionAPIView):
    @extend_schema(operation_id="submission_progress",
                   summary="Labelling progress of a submission (what decides `scored`)",
                   responses={200: ProgressSerializer,
                              404: OpenApiResponse(description=NOT_FOUND)})
    def get(self, request: Request, pk: int) -> Response:
        sub = self.submission(request, pk)
        if sub is None:
            return _missing()
        run, _ = report.latest_scores(sub)
        spent = report.spend(sub)
        return Response(ProgressSerializer({"submission": sub.pk, "state": sub.state,
                                            **report.progress(sub).as_dict(),
                                            "spend_usd": str(spent.committed.quantize(CENT)),
                                            "budget_usd": str(spent.cap.quantize(CENT)),
                                            "run": run.pk if run else None}).data)
