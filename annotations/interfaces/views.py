"""Annotation pages: HIT task pages (MTurk and in-house), the answer intake endpoint,
the in-house "next task" queue and the "try it" pages that store nothing.

Identity inside MTurk comes from MTurk's query parameters, never from a session
cookie (third-party cookies are blocked in most browsers' iframes); answers are checked
and kept by the intake before the page forwards the worker to MTurk, and only to a
`turkSubmitTo` host we know. An MTurk page's post is provisional
(`intake.receive_page_post`): it counts once MTurk confirms the assignment. The answer
endpoint is rate limited per client address and per worker (HTTP 429). A HIT's pages
are found by its random `url_key`, never its id, and a page opened without an accepted
assignment (an MTurk preview) shows only the first question, so nobody can walk the
task pages and collect what a private system predicted.
"""

from __future__ import annotations

import json
import random
from typing import Any

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import RequestDataTooBig
from django.db.models import Count, Exists, F, OuterRef, QuerySet
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.middleware.csrf import get_token
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.clickjacking import xframe_options_exempt
from django.views.decorators.csrf import csrf_exempt, csrf_protect
from django.views.decorators.http import require_POST, require_safe

from annotations.models import (
    Backend,
    CrowdWorker,
    GoldMention,
    Hit,
    HitState,
    Question,
    TaskKind,
)
from kbpo.core import security
from kbpo.core.models import Corpus, Document, DocumentEntity
from kbpo.core.schemas import TAC_KBP
from submissions.models import (
    MentionPair,
    RelationInstance,
    Submission,
    SubmissionEntity,
    SubmissionMention,
)

from . import taskdata
from .candidates import MentionSpan, document_pairs
from .caps import relation_cap
from .document_items import document_relation_item, is_document_level
from .intake import (
    IntakeError,
    from_page,
    parse_answers,
    receive_page_post,
    submit_assignment,
    valid_external_id,
    worker_for,
)

PREVIEW_ASSIGNMENT = "ASSIGNMENT_ID_NOT_AVAILABLE"
# The only places MTurk's ExternalQuestion frames our page from and posts back to.
MTURK_WORKER_HOSTS: tuple[str, ...] = ("https://www.mturk.com", "https://workersandbox.mturk.com")
LOCAL_PERMISSION = "annotations.annotate_locally"

_CSP_BASE = ("default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
             "connect-src 'self'; base-uri 'none'; object-src 'none'; "
             f"form-action 'self' {' '.join(MTURK_WORKER_HOSTS)}")
TASK_PAGE_CSP = f"{_CSP_BASE}; frame-ancestors 'self' {' '.join(MTURK_WORKER_HOSTS)}"
TRY_PAGE_CSP = f"{_CSP_BASE}; frame-ancestors 'none'"

# A relation HIT on document-level pairs (DocRED) has a page of its own.
DOCUMENT_RELATION = ("annotations/relation_document.html", "js/annotate-relation-document.js")
# An exhaustive HIT on a DocRED document: facts added one by one for its head entities.
DOCUMENT_FACTS = ("annotations/exhaustive_document.html", "js/annotate-exhaustive-document.js")
TEMPLATES = {TaskKind.RELATION: "annotations/relation.html",
             TaskKind.ENTITY: "annotations/entity.html",
             TaskKind.EXHAUSTIVE: "annotations/exhaustive.html"}
SCRIPTS = {TaskKind.RELATION: "js/annotate-relation.js",
           TaskKind.ENTITY: "js/annotate-entity.js",
           TaskKind.EXHAUSTIVE: "js/annotate-exhaustive.js"}


def mturk_submit_url(turk_submit_to: object) -> str | None:
    """MTurk's externalSubmit URL for a known worker host, else None (no open redirect)."""
    if not isinstance(turk_submit_to, str):  # a JSON body may hold anything here
        return None
    host = turk_submit_to.strip().rstrip("/")
    if host not in MTURK_WORKER_HOSTS:
        return None
    return f"{host}/mturk/externalSubmit"


def local_worker_id(user: Any) -> str:
    return f"user-{user.pk}"


def local_assignment_id(hit: Hit, user: Any) -> str:
    return f"local-{hit.pk}-{user.pk}"


BLOCKED_MESSAGE = ("An operator blocked your in-house annotations: these tasks no longer "
                   "take your answers. Ask an operator if you think this is a mistake.")


def local_worker_blocked(user: Any) -> bool:
    """Whether the user's in-house worker is blocked: the intake refuses its answers, so
    its pages are read-only and the queue offers it nothing (no work done in vain)."""
    return CrowdWorker.objects.filter(backend=Backend.LOCAL, external_id=local_worker_id(user),
                                      blocked=True).exists()


# --- Building page data -----------------------------------------------------------------


def _entity_info(submission_id: int | None, pair: MentionPair, begin: int,
                 end: int, among: QuerySet | None = None) -> taskdata.EntityInfo | None:
    """The canonical mention and link a submission gave the entity of a span: the
    requesting submission's (`submission_id`), else another's — only a public, active
    one (HIT pages are open to any worker with the link: a private or withdrawn
    system's output must not reach them) and only among `among`, when given."""
    mentions = SubmissionMention.objects.filter(document=pair.document, begin=begin, end=end,
                                                entity__isnull=False)
    if among is not None:
        mentions = mentions.filter(submission__in=among)
    mention = None
    if submission_id is not None:
        mention = mentions.filter(submission_id=submission_id).first()
    mention = mention or mentions.filter(submission__in=_shown_systems()).order_by("pk").first()
    if mention is None:
        return None
    entity: SubmissionEntity = mention.entity
    if entity.canonical_document is None or entity.canonical_begin is None:
        return None
    doc = entity.canonical_document
    return taskdata.EntityInfo(doc.text[entity.canonical_begin:entity.canonical_end],
                               doc.doc_id, entity.canonical_begin, entity.canonical_end,
                               entity.link)


def relation_items(questions: list[Question], among: QuerySet | None = None,
                   ids: list[int] | None = None) -> list[dict]:
    """The page's items for these questions, numbered by `ids` (default: their pks)."""
    views: dict[int, taskdata.DocView] = {}
    out = []
    for n, q in enumerate(questions):
        pair = q.pair
        if pair is None:
            raise ValueError(f"relation question {q.pk} has no mention pair")
        if pair.document_id not in views:
            views[pair.document_id] = taskdata.DocView.from_document(pair.document)
        qid = q.pk if ids is None else ids[n]
        if is_document_level(pair):
            out.append(document_relation_item(qid, q, views[pair.document_id], among))
            continue
        sub = q.requested_by_id
        out.append(taskdata.relation_item(
            qid, views[pair.document_id],
            (pair.subject_begin, pair.subject_end, pair.subject_type),
            (pair.object_begin, pair.object_end, pair.object_type),
            _entity_info(sub, pair, pair.subject_begin, pair.subject_end, among),
            _entity_info(sub, pair, pair.object_begin, pair.object_end, among)))
    return out


def task_data(kind: str, questions: list[Question]) -> dict:
    """The JSON a task page renders, for the questions of one HIT in page order
    (`intake.page_order`).

    Relation questions are numbered 0, 1, … in that order, never by their ids: a
    control question's id would give it away (`intake.from_page` maps answers back).
    """
    if kind == TaskKind.RELATION:
        return {"questions": relation_items(questions, ids=list(range(len(questions))))}
    if len(questions) != 1 or questions[0].document is None:
        raise ValueError("a document task HIT holds exactly one question with a document")
    q = questions[0]
    doc = taskdata.DocView.from_document(q.document)
    if kind == TaskKind.EXHAUSTIVE and q.head_entities is not None:
        return _fact_data(q, doc)
    if kind == TaskKind.ENTITY:
        return {"question": q.pk, "document": taskdata.document_data(doc)}
    mentions = [MentionSpan(m.begin, m.end, m.type, m.entity)
                for m in GoldMention.objects.filter(document=q.document)]
    return {"question": q.pk,
            "document": taskdata.exhaustive_data(doc, mentions, document_pairs(q.document))}


def _fact_data(q: Question, doc: taskdata.DocView) -> dict:
    """A DocRED exhaustive question: the document's entities, the task's head entities."""
    rows = list(DocumentEntity.objects.filter(document=q.document).order_by("index"))
    if [e.index for e in rows] != list(range(len(rows))):
        raise ValueError(f"{q.document.doc_id}: the entities are not numbered 0 to "
                         f"{len(rows) - 1}")
    entities = [taskdata.EntityView(e.name, e.type, [(b, end) for _, b, end in
                                                     e.mention_spans()]) for e in rows]
    heads = [h for h in q.head_entities if isinstance(h, int) and 0 <= h < len(rows)]
    if not heads:
        raise ValueError(f"question {q.pk} names no entity of {q.document.doc_id} as a head")
    return taskdata.fact_task_data(q.pk, doc, entities, heads, q.corpus.schema)


def _render_task(request: HttpRequest, kind: str, data: dict, config: dict, *,
                 status: int = 200, csp: str = TASK_PAGE_CSP) -> HttpResponse:
    # Document-level questions (DocRED) name their schema; the others are TAC KBP's.
    schema = next((q["schema"] for q in data.get("questions", ()) if "schema" in q),
                  data.get("schema", TAC_KBP))
    # The page stops the relation checkboxes at the intake's cap (intake refuses more).
    config = {"kind": kind, "max_relations": relation_cap(schema), **config}
    template, script = TEMPLATES[kind], SCRIPTS[kind]
    if schema != TAC_KBP:
        template, script = DOCUMENT_FACTS if kind == TaskKind.EXHAUSTIVE else DOCUMENT_RELATION
    response = render(request, template, {
        "kind": kind, "kind_label": TaskKind(kind).label, "task_data": data,
        "task_config": config, "script": script, "mode": config["mode"],
        "max_relations": config["max_relations"],
        "message": config.get("message", "")}, status=status)
    response["Content-Security-Policy"] = csp
    return response


def _error_page(request: HttpRequest, title: str, message: str, status: int) -> HttpResponse:
    response = render(request, "annotations/error.html", {"title": title, "message": message},
                      status=status)
    response["Content-Security-Policy"] = TASK_PAGE_CSP
    return response


# --- The HIT task page --------------------------------------------------------------------


@xframe_options_exempt  # framed by MTurk; the CSP frame-ancestors below restricts who may
@require_safe
def hit_task(request: HttpRequest, key: str) -> HttpResponse:
    hit = get_object_or_404(Hit, url_key=key)
    config: dict[str, Any] = {"answers_url": reverse("annotate-answers", args=[hit.url_key])}
    preview = False
    if hit.backend == Backend.MTURK:
        params = {k: request.GET.get(k, "") for k in
                  ("assignmentId", "hitId", "workerId", "turkSubmitTo")}
        if not params["assignmentId"] or params["assignmentId"] == PREVIEW_ASSIGNMENT:
            preview = True
            config.update(mode="preview",
                          message="This is a preview. Accept the HIT to start working: the "
                                  "Submit button stays disabled until you do.")
        else:
            if mturk_submit_url(params["turkSubmitTo"]) is None:
                return _error_page(request, "Unknown MTurk site",
                                   "turkSubmitTo must be https://www.mturk.com or "
                                   "https://workersandbox.mturk.com. Open this HIT from "
                                   "Mechanical Turk.", 400)
            if not params["workerId"]:
                return _error_page(request, "Missing worker id",
                                   "workerId is missing. Open this HIT from Mechanical Turk.",
                                   400)
            config.update(mode="mturk", mturk=params)
    elif hit.backend == Backend.LOCAL:
        if not request.user.is_authenticated:
            return redirect_to_login(request.get_full_path())
        if not request.user.has_perm(LOCAL_PERMISSION):
            return _error_page(request, "Not an in-house annotator",
                               "Your account may not take in-house tasks. Ask an operator "
                               "to grant the “Can take in-house annotation tasks” "
                               "permission.", 403)
        config.update(mode="local", csrf=get_token(request), next_url=reverse("annotate-next"))
        if local_worker_blocked(request.user):
            config.update(mode="closed", message=BLOCKED_MESSAGE)
        elif hit.assignments.filter(worker__user=request.user).exists():
            config.update(mode="closed", message="You already answered this task. "
                                                 "Take the next one from “Next task”.")
        elif hit.assignments.filter(refusal="").count() >= hit.max_assignments:
            config.update(mode="closed", message="This task already has all the answers it "
                                                 "needs. Take the next one from “Next task”.")
    else:
        if not request.user.is_authenticated:
            return redirect_to_login(request.get_full_path())
        if not (request.user.is_staff or request.user.has_perm(LOCAL_PERMISSION)):
            return _error_page(request, "Not available",
                               "Simulated HITs are answered by the simulated crowd.", 403)
        config.update(mode="closed", message="This HIT belongs to the simulated crowd: it is "
                                             "shown read-only and takes no answers here.")
    if hit.state != HitState.POSTED and config["mode"] != "closed":
        config.update(mode="closed", message=f"This HIT is {hit.get_state_display()} and "
                                             "takes no more answers.")
    questions = [hq.question for hq in hit.items.select_related(
        "question__pair__document__corpus", "question__pair__sentence",
        "question__document")
        .order_by("position", "pk")]  # intake.page_order
    if preview:  # also once the HIT is closed
        # Anyone on MTurk may preview any HIT: a preview shows one question, so walking
        # previews does not harvest a (possibly private) system's pairs and links.
        questions = questions[:1]
    try:
        data = task_data(hit.kind, questions)
    except ValueError as exc:
        return _error_page(request, "This task is misconfigured", str(exc), 500)
    return _render_task(request, hit.kind, data, config)


# --- The answer intake endpoint ------------------------------------------------------------


def _json_error(message: str, field: str, status: int) -> JsonResponse:
    return JsonResponse({"error": message, "field": field}, status=status)


def _too_many(who: str, retry_after: int) -> JsonResponse:
    response = _json_error(
        f"too many answers from {who}: wait {retry_after} seconds, then press Submit "
        "again (your answers are still on the page)", "rate", 429)
    response["Retry-After"] = str(max(1, retry_after))
    return response


def _rate_limited(request: HttpRequest, hit: Hit, body: dict) -> JsonResponse | None:
    """Per client address, then per worker: a 429 answer, or None to go on."""
    window = settings.KBPO_ANSWER_RATE_WINDOW
    ip = security.client_ip(request) or "unknown"
    verdict = security.take(f"answers-ip:{ip}", settings.KBPO_ANSWER_RATE_PER_IP, window)
    if not verdict.allowed:
        return _too_many("your network address", verdict.retry_after)
    if hit.backend == Backend.MTURK:
        worker = body.get("workerId")
        # An id we would refuse anyway makes no cache key (NUL, control characters).
        worker = worker if isinstance(worker, str) and valid_external_id(worker) else ""
        # A claimed workerId proves nothing until MTurk confirms the assignment: counted
        # with the address, so nobody who knows a worker's id can hold that worker at 429
        # from elsewhere (a flood from many addresses meets each one's own limit).
        worker = f"{worker[:64]}@{ip}" if worker else ""
    else:
        worker = f"user-{request.user.pk}" if request.user.is_authenticated else ""
    if worker:
        verdict = security.take(f"answers-worker:{hit.backend}:{worker[:128]}",
                                settings.KBPO_ANSWER_RATE_PER_WORKER, window)
        if not verdict.allowed:
            return _too_many("this worker id", verdict.retry_after)
    return None


@csrf_exempt  # MTurk posts carry no session; local posts are CSRF-checked below
@require_POST
def hit_answers(request: HttpRequest, key: str) -> HttpResponse:
    hit = Hit.objects.filter(url_key=key).first()
    if hit is None:
        return _json_error("no task has this address; open the task from Mechanical Turk "
                           "or from “Next task”", "hitId", 404)
    try:
        raw = request.body
    except RequestDataTooBig:
        return _json_error(f"the request body is larger than "
                           f"{settings.DATA_UPLOAD_MAX_MEMORY_SIZE:,} bytes", "body", 413)
    try:
        body = json.loads(raw or b"null")
    except (ValueError, UnicodeDecodeError, RecursionError):  # deep nesting: RecursionError
        body = None
    limited = _rate_limited(request, hit, body if isinstance(body, dict) else {})
    if limited is not None:
        return limited
    if body is None:
        return _json_error("the request body must be JSON", "body", 400)
    if not isinstance(body, dict):
        return _json_error('expected a JSON object {"answers": [...], ...}', "body", 400)
    if hit.backend == Backend.MTURK:
        return _mturk_answers(request, hit, body)
    if hit.backend == Backend.LOCAL:
        return csrf_protect(_local_answers)(request, hit, body)
    return _json_error("simulated HITs are answered by the simulated crowd, not through "
                       "the web", "hitId", 403)


def _mturk_answers(request: HttpRequest, hit: Hit, body: dict) -> JsonResponse:
    assignment_id = body.get("assignmentId")
    worker_id = body.get("workerId")
    if not isinstance(assignment_id, str) or not assignment_id:
        return _json_error("assignmentId is missing", "assignmentId", 400)
    if assignment_id == PREVIEW_ASSIGNMENT:
        return _json_error("this is a preview: accept the HIT before submitting",
                           "assignmentId", 400)
    submit_url = mturk_submit_url(body.get("turkSubmitTo"))
    if submit_url is None:
        return _json_error("turkSubmitTo must be https://www.mturk.com or "
                           "https://workersandbox.mturk.com", "turkSubmitTo", 400)
    if not hit.external_id or body.get("hitId") != hit.external_id:
        return _json_error("hitId does not match this HIT", "hitId", 400)
    try:
        # Provisional: the ids above are only claims until MTurk confirms them.
        receive_page_post(hit=hit, worker_id=worker_id if isinstance(worker_id, str) else "",
                          assignment_id=assignment_id, payload=body,
                          client_ip=security.client_ip(request))
    except IntakeError as exc:
        return JsonResponse(exc.as_dict(), status=exc.status)
    return JsonResponse({"ok": True, "submit_to": submit_url})


def _local_answers(request: HttpRequest, hit: Hit, body: dict) -> JsonResponse:
    user = request.user
    if not user.is_authenticated:
        return _json_error("log in to answer in-house tasks", "user", 401)
    if not user.has_perm(LOCAL_PERMISSION):
        return _json_error("your account may not take in-house tasks", "user", 403)
    try:
        worker = worker_for(Backend.LOCAL, local_worker_id(user), user)
        answers = from_page(hit, parse_answers(body))
        submit_assignment(hit=hit, worker=worker, assignment_id=local_assignment_id(hit, user),
                          answers=answers, source="intake")
    except IntakeError as exc:
        return JsonResponse(exc.as_dict(), status=exc.status)
    return JsonResponse({"ok": True, "next": reverse("annotate-next")})


# --- In-house queue -------------------------------------------------------------------------


def next_local_hit(user: Any) -> Hit | None:
    """The oldest open local HIT this user has not answered and that still needs answers.

    A HIT holding a question the user answered elsewhere (a re-grouped question) is
    skipped: the intake refuses a second answer to a question, so offering it would
    send the user back to the same refused task on every "Next task".
    """
    return (Hit.objects.filter(backend=Backend.LOCAL, state=HitState.POSTED)
            .exclude(assignments__worker__user=user)
            .exclude(items__question__responses__worker__user=user)
            .annotate(n_done=Count("assignments"))
            .filter(n_done__lt=F("max_assignments"))
            .order_by("created_at", "pk").first())


@login_required
@require_safe
def next_task(request: HttpRequest) -> HttpResponse:
    if not request.user.has_perm(LOCAL_PERMISSION):
        return render(request, "annotations/index.html", {"forbidden": True}, status=403)
    if local_worker_blocked(request.user):
        return render(request, "annotations/index.html", {"blocked": BLOCKED_MESSAGE},
                      status=403)
    hit = next_local_hit(request.user)
    if hit is not None:
        return redirect("annotate-hit", key=hit.url_key)
    return render(request, "annotations/index.html", {"no_tasks": True})


@require_safe
def index(request: HttpRequest) -> HttpResponse:
    can_annotate = request.user.is_authenticated and request.user.has_perm(LOCAL_PERMISSION)
    return render(request, "annotations/index.html", {"can_annotate": can_annotate})


# --- "Try it": realistic tasks, nothing stored ------------------------------------------------


def _shown_systems() -> QuerySet:
    """The submissions a try page may draw on: public and active, whose reports anyone
    may read; a private or withdrawn system's output never reaches these public pages."""
    return Submission.objects.active().filter(public=True).values("pk")


def _try_corpus() -> Corpus | None:
    return Corpus.objects.filter(tag="demo").first() or Corpus.objects.order_by("pk").first()


def _random_row(qs: Any, rng: random.Random) -> Any:
    n = qs.count()
    return qs.order_by("pk")[rng.randrange(n)] if n else None


def _try_relation(corpus: Corpus | None, rng: random.Random) -> dict:
    shown = _shown_systems()
    pairs = (MentionPair.objects.filter(document__corpus=corpus).filter(Exists(
        RelationInstance.objects.filter(pair=OuterRef("pk"), submission__in=shown)))
        if corpus else None)
    chosen: list[MentionPair] = []
    if pairs is not None and pairs.exists():
        for _ in range(12):
            p = _random_row(pairs, rng)
            if p.pk not in {c.pk for c in chosen}:
                chosen.append(p)
            if len(chosen) == 3:
                break
    if not chosen:
        return {"questions": taskdata.example_relation_items(), "source": "built-in example"}
    questions = [Question(pk=i + 1, kind=TaskKind.RELATION, pair=p) for i, p in
                 enumerate(chosen)]
    return {"questions": relation_items(questions, among=shown),
            "source": f"corpus {corpus.tag}"}


def _try_document(corpus: Corpus | None, rng: random.Random) -> Document | None:
    if corpus is None:
        return None
    return _random_row(Document.objects.filter(corpus=corpus, length__lte=2500), rng) or \
        _random_row(Document.objects.filter(corpus=corpus), rng)


def _try_exhaustive(corpus: Corpus | None, rng: random.Random) -> dict:
    if corpus is not None:
        gold_docs = Document.objects.filter(corpus=corpus, gold_mentions__isnull=False).distinct()
        doc = _random_row(gold_docs, rng)
        if doc is not None:
            q = Question(pk=1, kind=TaskKind.EXHAUSTIVE, document=doc)
            return {**task_data(TaskKind.EXHAUSTIVE, [q]), "source": f"corpus {corpus.tag}"}
        # No exhaustive gold yet: a system's mentions of one document stand in for it.
        some = _random_row(SubmissionMention.objects.filter(
            document__corpus=corpus, submission__in=_shown_systems()), rng)
        if some is not None:
            doc = some.document
            rows = SubmissionMention.objects.filter(submission_id=some.submission_id,
                                                    document=doc)
            mentions = [MentionSpan(m.begin, m.end, m.type,
                                    f"e{m.entity_id}" if m.entity_id else f"m{m.pk}")
                        for m in rows]
            view = taskdata.DocView.from_document(doc)
            return {"question": 1, "document": taskdata.exhaustive_data(view, mentions),
                    "source": f"corpus {corpus.tag}, a system's mentions"}
    return {"question": 1, "source": "built-in example",
            "document": taskdata.exhaustive_data(taskdata.EXAMPLE_DOC,
                                                 taskdata.example_mentions())}


@xframe_options_exempt  # the CSP below says frame-ancestors 'none'
@require_safe
def try_task(request: HttpRequest, kind: str) -> HttpResponse:
    if kind not in TEMPLATES:
        raise Http404("unknown task kind")
    # Public and unauthenticated, and each page draws rows at random from the corpus:
    # counted per client address so it cannot be used to load the server.
    verdict = security.take(f"try-ip:{security.client_ip(request) or 'unknown'}",
                            settings.KBPO_TRY_RATE_PER_IP, settings.KBPO_TRY_RATE_WINDOW)
    if not verdict.allowed:
        wait = max(1, verdict.retry_after)
        response = _error_page(request, "Too many try-it pages",
                               f"This address opened more try-it pages than we serve in "
                               f"{settings.KBPO_TRY_RATE_WINDOW} seconds. Wait {wait} seconds, "
                               "then reload.", 429)
        response["Retry-After"] = str(wait)
        response["X-Frame-Options"] = "DENY"
        return response
    seed = request.GET.get("seed", "")
    rng = random.Random(seed if seed else None)
    corpus = _try_corpus()
    if kind == TaskKind.RELATION:
        data = _try_relation(corpus, rng)
    elif kind == TaskKind.ENTITY:
        doc = _try_document(corpus, rng)
        view = (taskdata.DocView.from_document(doc) if doc is not None
                else taskdata.EXAMPLE_DOC)
        data = {"question": 1, "document": taskdata.document_data(view),
                "source": f"corpus {corpus.tag}" if doc is not None else "built-in example"}
    else:
        data = _try_exhaustive(corpus, rng)
    config = {"mode": "try", "message": f"Try-it mode ({data['source']}): this is exactly what "
                                        "a worker sees. Nothing you do here is stored."}
    response = _render_task(request, kind, data, config, csp=TRY_PAGE_CSP)
    response["X-Frame-Options"] = "DENY"
    return response


