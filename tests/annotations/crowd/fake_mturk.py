"""A fake MTurk requester endpoint that speaks the real wire protocol.

A threaded HTTP server on 127.0.0.1 answering AWS JSON 1.1 requests
(``X-Amz-Target: MTurkRequesterServiceV20170117.<Operation>``), so production code
talks to it through an unmodified boto3 client with only ``endpoint_url`` changed.

What keeps it honest:

* every request body is checked against the operation's input shape in botocore's
  own service model — required members, JSON types, enums, and the ``min``/``max``
  and ``pattern`` limits that botocore's client-side validator does not check — plus
  the limits the API reference documents but the model omits (``EXTRA_LIMITS``);
* every response, including error bodies, is checked against the output (or error)
  shape before it is sent, so the fake cannot drift from the real API unnoticed
  (a drift is answered with ``FakeDriftError`` and recorded in ``internal_errors``);
* HITs and assignments follow MTurk's state machine, money moves like a prepaid
  account (rewards and fees held when a HIT is posted, paid on approval, released
  on rejection or expiry), and ``UniqueRequestToken``s are remembered for 24 hours.

Test hooks are plain Python methods: ``worker_accepts``, ``worker_returns``,
``worker_submits``,
``inject``, ``set_balance``, ``set_worker``, ``advance``, and the ``calls`` log.
``returns_accepted = True`` makes it list and get work still in progress too (status
"Accepted", no answer), which MTurk never does: every status then reaches the client.
Use as ``with FakeMTurk() as fake: make_client(fake.endpoint_url)``.
"""

from __future__ import annotations

import base64
import json
import re
import secrets
import socket
import string
import threading
import time
import traceback
import uuid
import xml.etree.ElementTree as ET
from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import ROUND_HALF_UP, Decimal
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit
from xml.sax.saxutils import escape

import botocore.session
from botocore.model import Shape, StructureShape

TARGET_PREFIX = "MTurkRequesterServiceV20170117."
CONTENT_TYPE = "application/x-amz-json-1.1"
MODEL = botocore.session.get_session().get_service_model("mturk")

# MTurk's published namespaces and system qualification ids (facts, not behaviour).
from annotations.crowd.mturk import (  # noqa: E402
    ANSWER_NS,
    EXTERNAL_QUESTION_NS,
    QUAL_APPROVAL_RATE,
    QUAL_LOCALE,
    QUAL_NUMBER_APPROVED,
)

# Limits from the MTurk API reference (2014-08-15 edition, the last to list them)
# that the 2017 JSON model does not encode: (input shape, member) -> constraint.
_HIT_LIMITS: dict[str, dict[str, Any]] = {
    "Title": {"max_chars": 128},
    "Description": {"max_chars": 2000},
    "Keywords": {"max_chars": 1000},
    "RequesterAnnotation": {"max_chars": 255},
    "Question": {"max_bytes": 65535},
    "LifetimeInSeconds": {"range": (30, 31_536_000)},
    "AssignmentDurationInSeconds": {"range": (30, 31_536_000)},
    "AutoApprovalDelayInSeconds": {"range": (0, 2_592_000)},
    "MaxAssignments": {"range": (1, 1_000_000_000)},
    "QualificationRequirements": {"max_items": 10},
}
EXTRA_LIMITS: dict[str, dict[str, dict[str, Any]]] = {
    "CreateHITTypeRequest": _HIT_LIMITS,
    "CreateHITRequest": _HIT_LIMITS,
    "CreateHITWithHITTypeRequest": _HIT_LIMITS,
}

TOKEN_LIFETIME = 24 * 3600  # MTurk forgets UniqueRequestTokens after 24 hours
OVERRIDE_REJECTION_WINDOW = 30 * 24 * 3600
DEFAULT_PAGE_SIZE = 10
# How long a simulated worker takes over a HIT unless told otherwise: above our minimum
# work time for any HIT the tests build (docs/internals/crowd.md, too-fast work).
WORK_SECONDS = 60.0

# Injected error code -> HTTP status, as the real front end would send it.
_INJECT_STATUS = {
    "ThrottlingException": 400,
    "ServiceFault": 500,
    "ServiceUnavailable": 503,
    "InternalFailure": 500,
}


class WorkerCannotAccept(Exception):
    """A simulated worker was refused a HIT (not available, not qualified, done it)."""


class _Fault(Exception):
    """An error answer: HTTP status, ``__type`` and message."""

    def __init__(self, status: int, code: str, message: str,
                 turk_code: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.turk_code = turk_code


def _request_error(message: str, turk_code: str | None = None) -> _Fault:
    return _Fault(400, "RequestError", message, turk_code)


# --------------------------------------------------------------------- shape validation


def _fmt(value: Any) -> str:
    text = json.dumps(value) if not isinstance(value, str) else value
    return text if len(text) <= 80 else text[:77] + "..."


def validate_shape(shape: Shape, value: Any, path: str = "",
                   extra: Mapping[str, dict[str, Any]] | None = None) -> list[str]:
    """Violations of ``value`` (decoded JSON) against a botocore shape.

    Messages follow the AWS front end's style ("Value 'x' at 'reward' failed to
    satisfy constraint: ..."). Unlike botocore's ParamValidator this checks enums,
    ``max`` and ``pattern`` too, and refuses members the shape does not define.
    """
    errors: list[str] = []
    _check(shape, value, path, errors, extra or {})
    return errors


def _where(path: str) -> str:
    return path or "body"


def _check(shape: Shape, value: Any, path: str, errors: list[str],
           extra: Mapping[str, dict[str, Any]]) -> None:
    kind = shape.type_name
    at = _where(path)
    if kind == "structure":
        assert isinstance(shape, StructureShape)
        if not isinstance(value, dict):
            errors.append(f"Value {_fmt(value)} at '{at}' must be an object")
            return
        for name in shape.required_members:
            if value.get(name) is None:
                errors.append(f"Value null at '{_join(path, name)}' failed to satisfy "
                              "constraint: Member must not be null")
        for name, member_value in value.items():
            if name not in shape.members:
                errors.append(f"Member '{_join(path, name)}' is not part of {shape.name}")
                continue
            if member_value is None:
                continue
            member_path = _join(path, name)
            _check(shape.members[name], member_value, member_path, errors, {})
            if name in extra:
                _check_extra(extra[name], member_value, member_path, errors)
    elif kind == "list":
        if not isinstance(value, list):
            errors.append(f"Value {_fmt(value)} at '{at}' must be a list")
            return
        _check_range(shape, len(value), at, "have length", errors)
        for i, item in enumerate(value, start=1):
            _check(shape.member, item, f"{at}.{i}.member", errors, {})
    elif kind == "map":
        if not isinstance(value, dict):
            errors.append(f"Value {_fmt(value)} at '{at}' must be an object")
            return
        for key, item in value.items():
            _check(shape.key, key, f"{at}.key", errors, {})
            _check(shape.value, item, f"{at}.{key}", errors, {})
    elif kind == "string":
        if not isinstance(value, str):
            errors.append(f"Value {_fmt(value)} at '{at}' must be a string")
            return
        enum = shape.enum
        if enum and value not in enum:
            errors.append(f"Value '{_fmt(value)}' at '{at}' failed to satisfy constraint: "
                          f"Member must satisfy enum value set: [{', '.join(enum)}]")
        _check_range(shape, len(value), at, "have length", errors)
        pattern = shape.metadata.get("pattern")
        if pattern and not re.search(pattern, value):
            errors.append(f"Value '{_fmt(value)}' at '{at}' failed to satisfy constraint: "
                          f"Member must satisfy regular expression pattern: {pattern}")
    elif kind in {"integer", "long"}:
        if isinstance(value, bool) or not isinstance(value, int):
            errors.append(f"Value {_fmt(value)} at '{at}' must be an integer")
            return
        _check_range(shape, value, at, "have value", errors)
    elif kind in {"float", "double"}:
        if isinstance(value, bool) or not isinstance(value, int | float):
            errors.append(f"Value {_fmt(value)} at '{at}' must be a number")
    elif kind == "boolean":
        if not isinstance(value, bool):
            errors.append(f"Value {_fmt(value)} at '{at}' must be a boolean")
    elif kind == "timestamp":
        # JSON 1.1 carries timestamps as epoch seconds.
        if isinstance(value, bool) or not isinstance(value, int | float):
            errors.append(f"Value {_fmt(value)} at '{at}' must be epoch seconds")
    elif kind == "blob":
        if not isinstance(value, str):
            errors.append(f"Value {_fmt(value)} at '{at}' must be base64 text")
    else:  # pragma: no cover - the mturk model uses none of the other types
        errors.append(f"'{at}' has unsupported shape type {kind}")


def _join(path: str, name: str) -> str:
    member = name[:1].lower() + name[1:]
    return f"{path}.{member}" if path else member


def _check_range(shape: Shape, size: int, at: str, what: str, errors: list[str]) -> None:
    lo, hi = shape.metadata.get("min"), shape.metadata.get("max")
    if lo is not None and size < lo:
        errors.append(f"Value at '{at}' failed to satisfy constraint: Member must {what} "
                      f"greater than or equal to {lo}")
    if hi is not None and size > hi:
        errors.append(f"Value at '{at}' failed to satisfy constraint: Member must {what} "
                      f"less than or equal to {hi}")


def _check_extra(rule: dict[str, Any], value: Any, at: str, errors: list[str]) -> None:
    if "max_chars" in rule and isinstance(value, str) and len(value) > rule["max_chars"]:
        errors.append(f"The value of '{at}' is {len(value)} characters long; "
                      f"the limit is {rule['max_chars']}")
    if ("max_bytes" in rule and isinstance(value, str)
            and len(value.encode()) > rule["max_bytes"]):
        errors.append(f"The value of '{at}' is larger than {rule['max_bytes']} bytes")
    if "range" in rule and isinstance(value, int) and not isinstance(value, bool):
        lo, hi = rule["range"]
        if not lo <= value <= hi:
            errors.append(f"The value {value} of '{at}' is not between {lo} and {hi}")
    if "max_items" in rule and isinstance(value, list) and len(value) > rule["max_items"]:
        errors.append(f"'{at}' has {len(value)} items; the limit is {rule['max_items']}")


# --------------------------------------------------------------------- state


def _new_id(length: int = 30, prefix: str = "") -> str:
    alphabet = string.ascii_uppercase + string.digits
    return prefix + "".join(secrets.choice(alphabet) for _ in range(length - len(prefix)))


def _money(value: Decimal) -> str:
    return f"{value.quantize(Decimal('0.01'))}"


def _fee(amount: Decimal, rate: Decimal) -> Decimal:
    # Independent of annotations.crowd.mturk on purpose: the tests compare the two.
    fee = (amount * rate).quantize(Decimal("0.01"), rounding=ROUND_HALF_UP)
    return max(fee, Decimal("0.01"))


@dataclass
class _HitType:
    id: str
    title: str
    description: str
    reward: Decimal
    keywords: str | None
    duration: int
    auto_approval_delay: int
    requirements: list[dict[str, Any]]
    key: str  # canonical properties: equal properties mean the same HIT type


@dataclass
class _Hit:
    id: str
    group_id: str
    type: _HitType
    question: str
    annotation: str | None
    max_assignments: int
    created: float
    expiration: float
    unit_cost: Decimal  # reward + fee for one assignment
    open_slots_held: int  # slots whose money is held but no worker has taken
    assignment_ids: list[str] = field(default_factory=list)


@dataclass
class _Assignment:
    id: str
    hit_id: str
    worker_id: str
    status: str  # Accepted (internal only), Submitted, Approved, Rejected
    accept_time: float
    deadline: float
    submit_time: float | None = None
    auto_approval_time: float | None = None
    approval_time: float | None = None
    rejection_time: float | None = None
    answer: str | None = None
    feedback: str | None = None


@dataclass
class _QualType:
    id: str
    name: str
    description: str
    keywords: str | None
    status: str
    created: float
    auto_granted: bool
    auto_granted_value: int | None
    grants: dict[str, tuple[int, float]] = field(default_factory=dict)


@dataclass
class _Worker:
    approval_rate: int = 99
    country: str = "US"
    approved_hits: int = 5000


# --------------------------------------------------------------------- the fake


class FakeMTurk:
    """The fake endpoint; see the module docstring."""

    def __init__(self, balance: Decimal | str = "10000.00", *,
                 duplicate_hit_message: str = "with_hit_id") -> None:
        if duplicate_hit_message not in {"with_hit_id", "token_only"}:
            raise ValueError("duplicate_hit_message is 'with_hit_id' or 'token_only'")
        # The docs promise the HIT id in the message; "token_only" mimics the generic
        # text seen in the wild, to prove the client recovers without it.
        self.duplicate_hit_message = duplicate_hit_message
        # MTurk lists and gets only submitted work. True: this fake also returns
        # assignments still in progress ("Accepted", no answer), whatever the status
        # filter, so the client's own status check can be tested (every status reachable).
        self.returns_accepted = False
        self.available = Decimal(str(balance))
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.internal_errors: list[str] = []
        self.access_key_ids: set[str] = set()
        self.hit_types: dict[str, _HitType] = {}
        self.hits: dict[str, _Hit] = {}
        self.assignments: dict[str, _Assignment] = {}
        self.qual_types: dict[str, _QualType] = {}
        self.bonuses: list[dict[str, Any]] = []
        self.workers: dict[str, _Worker] = {}
        self._tokens: dict[tuple[str, str], tuple[str, float]] = {}
        self._injections: list[dict[str, Any]] = []
        self._offset = 0.0
        self._lock = threading.RLock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # ----------------------------------------------------------------- lifecycle

    def start(self) -> FakeMTurk:
        fake = self

        class Handler(_Handler):
            pass

        Handler.fake = fake
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        # A short poll interval keeps stop() (and so each test's teardown) fast.
        self._thread = threading.Thread(target=self._server.serve_forever,
                                        kwargs={"poll_interval": 0.02},
                                        name="fake-mturk", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> FakeMTurk:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def endpoint_url(self) -> str:
        if self._server is None:
            raise RuntimeError("the fake is not running; call start()")
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    # ----------------------------------------------------------------- test hooks

    def now(self) -> float:
        return time.time() + self._offset

    def advance(self, seconds: float) -> None:
        """Move the fake's clock forward (expiry, auto-approval, token lifetime)."""
        with self._lock:
            self._offset += seconds
            self._tick()

    def set_balance(self, amount: Decimal | str) -> None:
        with self._lock:
            self.available = Decimal(str(amount))

    @property
    def balance(self) -> Decimal:
        with self._lock:
            self._tick()
            return self.available

    def set_worker(self, worker_id: str, *, approval_rate: int = 99, country: str = "US",
                   approved_hits: int = 5000) -> None:
        """Give a simulated worker the system qualifications HITs may require."""
        self._check_worker_id(worker_id)
        with self._lock:
            self.workers[worker_id] = _Worker(approval_rate, country, approved_hits)

    def inject(self, operation: str, error_code: str, times: int = 1, *,
               after: bool = False) -> None:
        """Answer the next ``times`` calls of ``operation`` with ``error_code``.

        ``after=True`` performs the operation first and then loses the answer, as
        when a response times out: the retry meets the state the first call left.
        """
        if operation not in MODEL.operation_names:
            raise ValueError(f"unknown operation {operation!r}")
        with self._lock:
            self._injections.append({"operation": operation, "code": error_code,
                                     "times": times, "after": after})

    def calls_of(self, operation: str) -> list[dict[str, Any]]:
        return [params for op, params in self.calls if op == operation]

    def external_url(self, hit_id: str) -> str:
        """The task-page URL MTurk frames for this HIT (its ExternalQuestion's
        ExternalURL): what a worker's browser opens, with MTurk's parameters added."""
        with self._lock:
            question = self.hits[hit_id].question
        return ET.fromstring(question).findtext(f"{{{EXTERNAL_QUESTION_NS}}}ExternalURL") or ""

    def worker_accepts(self, hit_id: str, worker_id: str) -> str:
        """A worker accepts the HIT on MTurk; returns the assignment id."""
        self._check_worker_id(worker_id)
        with self._lock:
            self._tick()
            hit = self.hits.get(hit_id)
            if hit is None:
                raise WorkerCannotAccept(f"no HIT {hit_id}")
            status = self._hit_status(hit)
            if status != "Assignable":
                raise WorkerCannotAccept(f"HIT {hit_id} is {status}")
            for aid in hit.assignment_ids:
                if self.assignments[aid].worker_id == worker_id:
                    raise WorkerCannotAccept(f"{worker_id} already took HIT {hit_id}")
            self._check_qualified(hit.type, worker_id)
            now = self.now()
            assignment = _Assignment(id=_new_id(), hit_id=hit_id, worker_id=worker_id,
                                     status="Accepted", accept_time=now,
                                     deadline=now + hit.type.duration)
            self.assignments[assignment.id] = assignment
            hit.assignment_ids.append(assignment.id)
            hit.open_slots_held -= 1
            return assignment.id

    def worker_returns(self, hit_id: str, worker_id: str) -> str:
        """A worker returns an accepted assignment without submitting it; as on MTurk the
        assignment is gone (no list shows it) and its slot is back on the market."""
        with self._lock:
            self._tick()
            hit = self.hits.get(hit_id)
            mine = [a for a in (hit.assignment_ids if hit else [])
                    if self.assignments[a].worker_id == worker_id
                    and self.assignments[a].status == "Accepted"]
            if not mine:
                raise WorkerCannotAccept(f"{worker_id} holds no accepted assignment of "
                                         f"HIT {hit_id}")
            hit.assignment_ids.remove(mine[0])
            del self.assignments[mine[0]]
            hit.open_slots_held += 1
            return mine[0]

    def worker_submits(self, hit_id: str, worker_id: str,
                       answers: Mapping[str, str | list[str]], *,
                       seconds: float = WORK_SECONDS) -> str:
        """A worker answers through MTurk only (externalSubmit); returns the assignment id.

        Our server never sees this answer; only ListAssignmentsForHIT can find it. The
        worker took ``seconds`` since accepting (accepting here if not yet): SubmitTime −
        AcceptTime is at least that. The accept is dated back rather than the fake's
        clock moved on, which would part it from our server's clock (HIT extensions).
        """
        with self._lock:
            self._tick()
            hit = self.hits.get(hit_id)
            if hit is None:
                raise WorkerCannotAccept(f"no HIT {hit_id}")
            mine = [self.assignments[a] for a in hit.assignment_ids
                    if self.assignments[a].worker_id == worker_id]
            if mine and mine[0].status != "Accepted":
                raise WorkerCannotAccept(f"{worker_id} already submitted HIT {hit_id}")
            aid = mine[0].id if mine else self.worker_accepts(hit_id, worker_id)
            assignment = self.assignments[aid]
            now = self.now()
            if now - assignment.accept_time < seconds:
                shift = seconds - (now - assignment.accept_time)
                if assignment.deadline - shift < now:
                    raise WorkerCannotAccept(f"{seconds} s of work overrun the assignment's "
                                             "duration")
                assignment.accept_time -= shift
                assignment.deadline -= shift
            assignment.status = "Submitted"
            assignment.submit_time = now
            assignment.auto_approval_time = now + hit.type.auto_approval_delay
            assignment.answer = answer_xml(answers)
            self._tick()
            return aid

    def hit_status(self, hit_id: str) -> str:
        with self._lock:
            self._tick()
            return self._hit_status(self.hits[hit_id])

    def assignment_status(self, assignment_id: str) -> str:
        with self._lock:
            self._tick()
            return self.assignments[assignment_id].status

    # ----------------------------------------------------------------- HTTP entry

    def handle(self, headers: Mapping[str, str], body: bytes) -> tuple[int, dict[str, Any]]:
        """One request as the server sees it: (HTTP status, JSON body)."""
        target = headers.get("X-Amz-Target", "")
        if not target.startswith(TARGET_PREFIX):
            return self._error(_Fault(400, "UnknownOperationException",
                                      f"Unknown target {target!r}"))
        operation = target[len(TARGET_PREFIX):]
        if operation not in MODEL.operation_names:
            return self._error(_Fault(400, "UnknownOperationException",
                                      f"Unknown operation {operation!r}"))
        if headers.get("Content-Type", "").split(";")[0].strip() != CONTENT_TYPE:
            return self._error(_Fault(400, "SerializationException",
                                      f"Content-Type must be {CONTENT_TYPE}"))
        auth = headers.get("Authorization", "")
        match = re.match(r"AWS4-HMAC-SHA256 Credential=([^/]+)/", auth)
        if not match:
            return self._error(_Fault(400, "MissingAuthenticationTokenException",
                                      "Request is missing Authentication Token"))
        try:
            params = json.loads(body or b"{}")
        except ValueError:
            return self._error(_Fault(400, "SerializationException", "Body is not JSON"))
        with self._lock:
            self.access_key_ids.add(match.group(1))
            self.calls.append((operation, params))
            injected = self._take_injection(operation)
            if injected and not injected["after"]:
                return self._error(self._injected_fault(injected))
            try:
                result = self._dispatch(operation, params)
            except _Fault as fault:
                return self._error(fault, operation)
            except Exception:  # a bug in the fake must fail the test, not hang it
                self.internal_errors.append(traceback.format_exc())
                return self._error(_Fault(400, "FakeInternalError",
                                          f"fake crashed on {operation}; see internal_errors"))
            if injected:
                return self._error(self._injected_fault(injected))
            return 200, result

    def _dispatch(self, operation: str, params: Any) -> dict[str, Any]:
        op_model = MODEL.operation_model(operation)
        shape = op_model.input_shape
        problems = validate_shape(shape, params, "",
                                  EXTRA_LIMITS.get(shape.name if shape else "", {}))
        if problems:
            # Model constraints are checked by the AWS front end (ValidationException);
            # MTurk's own documented limits answer ParameterValidationError.
            model_only = validate_shape(shape, params)
            code = "ValidationException" if model_only else "ParameterValidationError"
            count = len(problems)
            noun = "error" if count == 1 else "errors"
            raise _Fault(400, code, f"{count} validation {noun} detected: "
                         + "; ".join(problems))
        handler = getattr(self, f"_op_{operation}", None)
        if handler is None:
            raise _Fault(501, "NotImplementedByFake",
                         f"{operation} is in the model but not implemented by the fake")
        self._tick()
        result = handler(params)
        out_shape = op_model.output_shape
        drift = validate_shape(out_shape, result) if out_shape else []
        if self.returns_accepted:  # the one declared departure from the model's enum
            drift = [d for d in drift if not (d.startswith("Value 'Accepted'")
                                              and "assignmentstatus'" in d.lower())]
        if drift:
            self.internal_errors.append(f"{operation} response drifted: {drift}")
            raise _Fault(400, "FakeDriftError", f"fake response invalid: {drift}")
        return result

    def _take_injection(self, operation: str) -> dict[str, Any] | None:
        for spec in self._injections:
            if spec["operation"] == operation and spec["times"] > 0:
                spec["times"] -= 1
                return spec
        return None

    @staticmethod
    def _injected_fault(spec: dict[str, Any]) -> _Fault:
        code = spec["code"]
        status = _INJECT_STATUS.get(code, 400)
        text = {"ThrottlingException": "Rate exceeded",
                "ServiceFault": "Amazon Mechanical Turk is temporarily unable to process "
                                "your request. Try your call again."}.get(code, code)
        return _Fault(status, code, text)

    def _error(self, fault: _Fault, operation: str | None = None) -> tuple[int, dict[str, Any]]:
        stamp = int(self.now() * 1000)
        body: dict[str, Any] = {"__type": fault.code, "Message": f"{fault.message} ({stamp} s)"}
        if fault.turk_code:
            body["TurkErrorCode"] = fault.turk_code
        if fault.code in MODEL.shape_names and operation is not None:
            body_fields = {k: v for k, v in body.items() if k != "__type"}
            drift = validate_shape(MODEL.shape_for(fault.code), body_fields)
            if drift:
                self.internal_errors.append(f"error body drifted: {drift}")
        return fault.status, body

    # ----------------------------------------------------------------- clock-driven state

    def _tick(self) -> None:
        now = self.now()
        for assignment in list(self.assignments.values()):
            hit = self.hits[assignment.hit_id]
            if assignment.status == "Accepted" and now > assignment.deadline:
                # Abandoned: the slot goes back on the market (if the HIT is alive).
                hit.assignment_ids.remove(assignment.id)
                del self.assignments[assignment.id]
                hit.open_slots_held += 1
            elif (assignment.status == "Submitted" and assignment.auto_approval_time is not None
                  and now >= assignment.auto_approval_time):
                assignment.status = "Approved"
                assignment.approval_time = assignment.auto_approval_time
        for token_key, (_, seen) in list(self._tokens.items()):
            if now - seen > TOKEN_LIFETIME:
                del self._tokens[token_key]
        for hit in self.hits.values():
            if now >= hit.expiration and hit.open_slots_held > 0:
                # Unused slots of an expired HIT are no longer a liability.
                self.available += hit.unit_cost * hit.open_slots_held
                hit.open_slots_held = 0

    def _hit_status(self, hit: _Hit) -> str:
        states = [self.assignments[a].status for a in hit.assignment_ids]
        pending = states.count("Accepted")
        done = len(states) - pending
        if done >= hit.max_assignments:
            return "Reviewable"
        if self.now() >= hit.expiration:
            return "Unassignable" if pending else "Reviewable"
        if done + pending >= hit.max_assignments:
            return "Unassignable"
        return "Assignable"

    def _on_hold(self) -> Decimal:
        total = Decimal("0")
        for hit in self.hits.values():
            live = sum(1 for a in hit.assignment_ids
                       if self.assignments[a].status in {"Accepted", "Submitted"})
            total += hit.unit_cost * (hit.open_slots_held + live)
        return total

    # ----------------------------------------------------------------- helpers

    @staticmethod
    def _check_worker_id(worker_id: str) -> None:
        if not re.fullmatch(r"A[A-Z0-9]{1,63}", worker_id):
            raise ValueError(f"not a worker id (^A[A-Z0-9]+$): {worker_id!r}")

    def _check_qualified(self, hit_type: _HitType, worker_id: str) -> None:
        worker = self.workers.get(worker_id, _Worker())
        for req in hit_type.requirements:
            qid, comparator = req["QualificationTypeId"], req["Comparator"]
            ints = req.get("IntegerValues", [])
            if qid == QUAL_APPROVAL_RATE:
                ok = _compare(comparator, worker.approval_rate, ints)
            elif qid == QUAL_NUMBER_APPROVED:
                ok = _compare(comparator, worker.approved_hits, ints)
            elif qid == QUAL_LOCALE:
                countries = [loc["Country"] for loc in req.get("LocaleValues", [])]
                ok = _compare(comparator, worker.country, countries)
            else:
                qual = self.qual_types.get(qid)
                grant = qual.grants.get(worker_id) if qual else None
                ok = _compare(comparator, grant[0] if grant else None, ints)
            if not ok:
                raise WorkerCannotAccept(f"{worker_id} does not meet {qid} {comparator} {ints}")

    def _remember_token(self, scope: str, token: str | None, result_id: str) -> None:
        if token:
            self._tokens[(scope, token)] = (result_id, self.now())

    def _page(self, items: list[Any], params: dict[str, Any],
              scope: str) -> tuple[list[Any], dict[str, Any]]:
        size = params.get("MaxResults", DEFAULT_PAGE_SIZE)
        offset = 0
        if params.get("NextToken"):
            try:
                decoded = json.loads(base64.urlsafe_b64decode(params["NextToken"]))
                if decoded["s"] != scope:
                    raise ValueError
                offset = int(decoded["o"])
            except (ValueError, KeyError, TypeError) as exc:
                raise _request_error("The pagination token is invalid.") from exc
        page = items[offset:offset + size]
        extra: dict[str, Any] = {"NumResults": len(page)}
        if offset + size < len(items):
            raw = json.dumps({"s": scope, "o": offset + size}).encode()
            extra["NextToken"] = base64.urlsafe_b64encode(raw).decode()
        return page, extra

    def _hit_json(self, hit: _Hit) -> dict[str, Any]:
        states = [self.assignments[a].status for a in hit.assignment_ids]
        status = self._hit_status(hit)
        pending = states.count("Accepted")
        available = 0
        if status == "Assignable":
            available = hit.max_assignments - len(states)
        data: dict[str, Any] = {
            "HITId": hit.id, "HITTypeId": hit.type.id, "HITGroupId": hit.group_id,
            "CreationTime": hit.created, "Title": hit.type.title,
            "Description": hit.type.description, "Question": hit.question,
            "HITStatus": status, "MaxAssignments": hit.max_assignments,
            "Reward": _money(hit.type.reward),
            "AutoApprovalDelayInSeconds": hit.type.auto_approval_delay,
            "Expiration": hit.expiration,
            "AssignmentDurationInSeconds": hit.type.duration,
            "QualificationRequirements": hit.type.requirements,
            "HITReviewStatus": "NotReviewed",
            "NumberOfAssignmentsPending": pending,
            "NumberOfAssignmentsAvailable": available,
            "NumberOfAssignmentsCompleted": states.count("Approved") + states.count("Rejected"),
        }
        if hit.type.keywords is not None:
            data["Keywords"] = hit.type.keywords
        if hit.annotation is not None:
            data["RequesterAnnotation"] = hit.annotation
        return data

    def _assignment_json(self, a: _Assignment) -> dict[str, Any]:
        data: dict[str, Any] = {
            "AssignmentId": a.id, "WorkerId": a.worker_id, "HITId": a.hit_id,
            "AssignmentStatus": a.status, "AcceptTime": a.accept_time, "Deadline": a.deadline,
        }
        optional = {"SubmitTime": a.submit_time, "AutoApprovalTime": a.auto_approval_time,
                    "ApprovalTime": a.approval_time, "RejectionTime": a.rejection_time,
                    "Answer": a.answer, "RequesterFeedback": a.feedback}
        data.update({k: v for k, v in optional.items() if v is not None})
        return data

    def _get_hit(self, hit_id: str) -> _Hit:
        hit = self.hits.get(hit_id)
        if hit is None:
            raise _request_error(f'Hit {hit_id} does not exist.')
        return hit

    def _get_submitted(self, assignment_id: str) -> _Assignment:
        a = self.assignments.get(assignment_id)
        if a is None or a.status == "Accepted":
            # Real MTurk cannot see an assignment before it is submitted either.
            raise _request_error(f"Assignment {assignment_id} does not exist.")
        return a

    # ----------------------------------------------------------------- operations

    def _op_GetAccountBalance(self, params: dict[str, Any]) -> dict[str, Any]:
        return {"AvailableBalance": _money(self.available),
                "OnHoldBalance": _money(self._on_hold())}

    def _make_hit_type(self, params: dict[str, Any]) -> _HitType:
        reward = Decimal(params["Reward"])
        requirements = params.get("QualificationRequirements", [])
        for req in requirements:
            qid = req["QualificationTypeId"]
            system = {QUAL_APPROVAL_RATE, QUAL_LOCALE, QUAL_NUMBER_APPROVED}
            if qid not in system and qid not in self.qual_types:
                raise _request_error(f"QualificationType {qid} does not exist.")
            if req["Comparator"] in {"Exists", "DoesNotExist"}:
                if req.get("IntegerValues") or req.get("LocaleValues"):
                    raise _request_error("Exists and DoesNotExist take no values.")
            elif qid == QUAL_LOCALE:
                if not req.get("LocaleValues"):
                    raise _request_error("A locale requirement needs LocaleValues.")
            elif not req.get("IntegerValues"):
                raise _request_error(f"{req['Comparator']} needs IntegerValues.")
        key_fields = ("Title", "Description", "Reward", "Keywords",
                      "AssignmentDurationInSeconds", "AutoApprovalDelayInSeconds",
                      "QualificationRequirements")
        key = json.dumps({k: params.get(k) for k in key_fields}, sort_keys=True)
        for existing in self.hit_types.values():
            if existing.key == key:
                return existing  # same properties: same HIT type, as on MTurk
        hit_type = _HitType(
            id=_new_id(), title=params["Title"], description=params["Description"],
            reward=reward, keywords=params.get("Keywords"),
            duration=params["AssignmentDurationInSeconds"],
            auto_approval_delay=params.get("AutoApprovalDelayInSeconds", 2_592_000),
            requirements=requirements, key=key,
        )
        self.hit_types[hit_type.id] = hit_type
        return hit_type

    def _op_CreateHITType(self, params: dict[str, Any]) -> dict[str, Any]:
        return {"HITTypeId": self._make_hit_type(params).id}

    def _op_CreateHIT(self, params: dict[str, Any]) -> dict[str, Any]:
        self._check_hit_token(params.get("UniqueRequestToken"))
        hit_type = self._make_hit_type(params)
        return self._create_hit(hit_type, params)

    def _op_CreateHITWithHITType(self, params: dict[str, Any]) -> dict[str, Any]:
        self._check_hit_token(params.get("UniqueRequestToken"))
        hit_type = self.hit_types.get(params["HITTypeId"])
        if hit_type is None:
            raise _request_error(f"HITType {params['HITTypeId']} does not exist.")
        return self._create_hit(hit_type, params)

    def _check_hit_token(self, token: str | None) -> None:
        if not token or ("hit", token) not in self._tokens:
            return
        hit_id = self._tokens[("hit", token)][0]
        if self.duplicate_hit_message == "with_hit_id":
            message = (f'The HIT with ID "{hit_id}" already exists for UniqueRequestToken '
                       f'"{token}".')
            raise _request_error(message, "AWS.MechanicalTurk.HitAlreadyExists")
        raise _request_error(f'The idempotency token "{token}" has already been processed.')

    def _create_hit(self, hit_type: _HitType, params: dict[str, Any]) -> dict[str, Any]:
        if "Question" not in params:
            raise _request_error("Question is required (HIT layouts are not supported here).")
        _check_question(params["Question"])
        max_assignments = params.get("MaxAssignments", 1)
        rate = Decimal("0.40") if max_assignments >= 10 else Decimal("0.20")
        unit_cost = hit_type.reward + _fee(hit_type.reward, rate)
        total = unit_cost * max_assignments
        if total > self.available:
            raise _request_error(
                "This Requester has insufficient funds in their account to complete this "
                f"transaction (needs {_money(total)}, has {_money(self.available)}).",
                "AWS.MechanicalTurk.InsufficientFunds")
        self.available -= total
        now = self.now()
        hit = _Hit(id=_new_id(), group_id=hit_type.id, type=hit_type,
                   question=params["Question"], annotation=params.get("RequesterAnnotation"),
                   max_assignments=max_assignments, created=now,
                   expiration=now + params["LifetimeInSeconds"], unit_cost=unit_cost,
                   open_slots_held=max_assignments)
        self.hits[hit.id] = hit
        self._remember_token("hit", params.get("UniqueRequestToken"), hit.id)
        return {"HIT": self._hit_json(hit)}

    def _op_CreateAdditionalAssignmentsForHIT(self, params: dict[str, Any]) -> dict[str, Any]:
        token = params.get("UniqueRequestToken")
        if token and ("extra", token) in self._tokens:
            raise _request_error(f'The idempotency token "{token}" has already been processed.')
        hit = self._get_hit(params["HITId"])
        count = params["NumberOfAdditionalAssignments"]
        if count < 1:
            raise _request_error("NumberOfAdditionalAssignments must be a positive integer.")
        if hit.max_assignments < 10 <= hit.max_assignments + count:
            raise _request_error(
                "HITs created with fewer than 10 assignments cannot be extended to have 10 "
                "or more assignments.", "AWS.MechanicalTurk.InvalidMaximumAssignmentsIncrease")
        if self.now() < hit.expiration:
            # Live HIT: the new slots are held now (an expired one holds them when extended).
            cost = hit.unit_cost * count
            if cost > self.available:
                raise _request_error("This Requester has insufficient funds in their account "
                                     "to complete this transaction.",
                                     "AWS.MechanicalTurk.InsufficientFunds")
            self.available -= cost
            hit.open_slots_held += count
        hit.max_assignments += count
        self._remember_token("extra", token, hit.id)
        return {}

    def _op_GetHIT(self, params: dict[str, Any]) -> dict[str, Any]:
        return {"HIT": self._hit_json(self._get_hit(params["HITId"]))}

    def _op_ListHITs(self, params: dict[str, Any]) -> dict[str, Any]:
        hits = sorted(self.hits.values(), key=lambda h: h.created)
        page, extra = self._page(hits, params, "hits")
        return {"HITs": [self._hit_json(h) for h in page], **extra}

    def _op_UpdateExpirationForHIT(self, params: dict[str, Any]) -> dict[str, Any]:
        hit = self._get_hit(params["HITId"])
        expire_at = float(params["ExpireAt"])
        now = self.now()
        if expire_at <= now:
            hit.expiration = min(hit.expiration, now)
            self._tick()
            return {}
        if hit.expiration <= now:
            # Reviving an expired HIT puts its unused slots back on hold.
            used = len(hit.assignment_ids)
            slots = hit.max_assignments - used
            cost = hit.unit_cost * slots
            if cost > self.available:
                raise _request_error("This Requester has insufficient funds in their account "
                                     "to extend this HIT.",
                                     "AWS.MechanicalTurk.InsufficientFunds")
            self.available -= cost
            hit.open_slots_held += slots
        hit.expiration = expire_at
        return {}

    def _op_ListAssignmentsForHIT(self, params: dict[str, Any]) -> dict[str, Any]:
        hit = self._get_hit(params["HITId"])
        statuses = set(params.get("AssignmentStatuses") or ["Submitted", "Approved",
                                                            "Rejected"])
        if self.returns_accepted:
            statuses.add("Accepted")
        items = [self.assignments[a] for a in hit.assignment_ids
                 if self.assignments[a].status in statuses]
        page, extra = self._page(items, params, f"assignments:{hit.id}:{sorted(statuses)}")
        return {"Assignments": [self._assignment_json(a) for a in page], **extra}

    def _op_GetAssignment(self, params: dict[str, Any]) -> dict[str, Any]:
        a = self.assignments.get(params["AssignmentId"])
        if a is None or a.status != "Accepted" or not self.returns_accepted:
            a = self._get_submitted(params["AssignmentId"])
        return {"Assignment": self._assignment_json(a),
                "HIT": self._hit_json(self.hits[a.hit_id])}

    def _op_ApproveAssignment(self, params: dict[str, Any]) -> dict[str, Any]:
        a = self._get_submitted(params["AssignmentId"])
        hit = self.hits[a.hit_id]
        now = self.now()
        if a.status == "Rejected" and params.get("OverrideRejection"):
            if a.submit_time is None or now - a.submit_time > OVERRIDE_REJECTION_WINDOW:
                raise _request_error("A rejection can only be overridden within 30 days of "
                                     "submission.")
            if hit.unit_cost > self.available:
                raise _request_error("This Requester has insufficient funds in their account "
                                     "to complete this transaction.",
                                     "AWS.MechanicalTurk.InsufficientFunds")
            self.available -= hit.unit_cost  # the hold was released at rejection
        elif a.status != "Submitted":
            raise _request_error(f"This operation can be called with a status of: Submitted "
                                 f"(assignment {a.id} is {a.status}).")
        a.status = "Approved"
        a.approval_time = now
        a.rejection_time = None
        if params.get("RequesterFeedback"):
            a.feedback = params["RequesterFeedback"]
        return {}

    def _op_RejectAssignment(self, params: dict[str, Any]) -> dict[str, Any]:
        a = self._get_submitted(params["AssignmentId"])
        if a.status != "Submitted":
            raise _request_error(f"This operation can be called with a status of: Submitted "
                                 f"(assignment {a.id} is {a.status}).")
        if not params["RequesterFeedback"].strip():
            raise _request_error("RequesterFeedback must not be empty when rejecting.")
        a.status = "Rejected"
        a.rejection_time = self.now()
        a.feedback = params["RequesterFeedback"]
        self.available += self.hits[a.hit_id].unit_cost
        return {}

    def _op_SendBonus(self, params: dict[str, Any]) -> dict[str, Any]:
        token = params.get("UniqueRequestToken")
        if token and ("bonus", token) in self._tokens:
            raise _request_error(f'The idempotency token "{token}" has already been processed.')
        a = self._get_submitted(params["AssignmentId"])
        if a.worker_id != params["WorkerId"]:
            raise _request_error(f"Assignment {a.id} does not belong to worker "
                                 f"{params['WorkerId']}.")
        amount = Decimal(params["BonusAmount"])
        if amount <= 0:
            raise _request_error("The bonus amount must be positive.")
        if not params["Reason"].strip():
            raise _request_error("A bonus needs a reason.")
        total = amount + _fee(amount, Decimal("0.20"))
        if total > self.available:
            raise _request_error("This Requester has insufficient funds in their account to "
                                 "complete this transaction.",
                                 "AWS.MechanicalTurk.InsufficientFunds")
        self.available -= total
        self.bonuses.append({"WorkerId": a.worker_id, "BonusAmount": _money(amount),
                             "AssignmentId": a.id, "Reason": params["Reason"],
                             "GrantTime": self.now(), "_hit": a.hit_id})
        self._remember_token("bonus", token, a.id)
        return {}

    def _op_ListBonusPayments(self, params: dict[str, Any]) -> dict[str, Any]:
        if bool(params.get("HITId")) == bool(params.get("AssignmentId")):
            raise _request_error("Specify exactly one of HITId and AssignmentId.")
        if params.get("AssignmentId"):
            key, value = "AssignmentId", params["AssignmentId"]
        else:
            key, value = "_hit", params["HITId"]
        items = [b for b in self.bonuses if b[key] == value]
        page, extra = self._page(items, params, f"bonus:{key}:{value}")
        public = [{k: v for k, v in b.items() if not k.startswith("_")} for b in page]
        return {"BonusPayments": public, **extra}

    def _op_CreateQualificationType(self, params: dict[str, Any]) -> dict[str, Any]:
        if any(q.name == params["Name"] for q in self.qual_types.values()):
            raise _request_error("You have already created a QualificationType with this "
                                 "name. A QualificationType's name must be unique among all "
                                 "of the QualificationTypes created by the same user.")
        qual = _QualType(id=_new_id(), name=params["Name"], description=params["Description"],
                         keywords=params.get("Keywords"),
                         status=params["QualificationTypeStatus"], created=self.now(),
                         auto_granted=bool(params.get("AutoGranted", False)),
                         auto_granted_value=params.get("AutoGrantedValue"))
        self.qual_types[qual.id] = qual
        return {"QualificationType": self._qual_type_json(qual)}

    def _qual_type_json(self, qual: _QualType) -> dict[str, Any]:
        data: dict[str, Any] = {
            "QualificationTypeId": qual.id, "CreationTime": qual.created, "Name": qual.name,
            "Description": qual.description, "QualificationTypeStatus": qual.status,
            "IsRequestable": False, "AutoGranted": qual.auto_granted,
        }
        if qual.keywords is not None:
            data["Keywords"] = qual.keywords
        if qual.auto_granted_value is not None:
            data["AutoGrantedValue"] = qual.auto_granted_value
        return data

    def _op_ListQualificationTypes(self, params: dict[str, Any]) -> dict[str, Any]:
        if not params.get("MustBeOwnedByCaller"):
            raise _request_error("The fake only knows the caller's own qualification types.")
        query = (params.get("Query") or "").lower()
        items = [q for q in self.qual_types.values()
                 if query in q.name.lower() or query in q.description.lower()]
        if params["MustBeRequestable"]:
            items = []  # none of ours is requestable: no test, not auto-granted on request
        page, extra = self._page(items, params, f"quals:{query}")
        return {"QualificationTypes": [self._qual_type_json(q) for q in page], **extra}

    def _own_qual(self, qual_id: str) -> _QualType:
        qual = self.qual_types.get(qual_id)
        if qual is None:
            raise _request_error(f"QualificationType {qual_id} does not exist.")
        return qual

    def _op_AssociateQualificationWithWorker(self, params: dict[str, Any]) -> dict[str, Any]:
        qual = self._own_qual(params["QualificationTypeId"])
        qual.grants[params["WorkerId"]] = (params.get("IntegerValue", 1), self.now())
        return {}

    def _op_DisassociateQualificationFromWorker(self, params: dict[str, Any]) -> dict[str, Any]:
        qual = self._own_qual(params["QualificationTypeId"])
        if params["WorkerId"] not in qual.grants:
            raise _request_error(f"You requested a Qualification that does not exist "
                                 f"for worker {params['WorkerId']}.")
        del qual.grants[params["WorkerId"]]
        return {}

    def _op_ListWorkersWithQualificationType(self, params: dict[str, Any]) -> dict[str, Any]:
        qual = self._own_qual(params["QualificationTypeId"])
        if params.get("Status", "Granted") != "Granted":
            items: list[tuple[str, tuple[int, float]]] = []  # revocations are not kept
        else:
            items = sorted(qual.grants.items())
        page, extra = self._page(items, params, f"workers:{qual.id}")
        quals = [{"QualificationTypeId": qual.id, "WorkerId": worker, "GrantTime": granted,
                  "IntegerValue": value, "Status": "Granted"}
                 for worker, (value, granted) in page]
        return {"Qualifications": quals, **extra}


def _compare(comparator: str, actual: Any, values: list[Any]) -> bool:
    if comparator == "Exists":
        return actual is not None
    if comparator == "DoesNotExist":
        return actual is None
    if actual is None:
        return False
    first = values[0] if values else None
    return {
        "LessThan": lambda: actual < first,
        "LessThanOrEqualTo": lambda: actual <= first,
        "GreaterThan": lambda: actual > first,
        "GreaterThanOrEqualTo": lambda: actual >= first,
        "EqualTo": lambda: actual == first,
        "NotEqualTo": lambda: actual != first,
        "In": lambda: actual in values,
        "NotIn": lambda: actual not in values,
    }[comparator]()


def _check_question(question: str) -> None:
    """The parts of MTurk's XSD check that matter for ExternalQuestion."""
    try:
        root = ET.fromstring(question)
    except ET.ParseError as exc:
        raise _Fault(400, "ParameterValidationError",
                     f"The value of Question is not well-formed XML: {exc}") from exc
    tag = root.tag
    if tag == f"{{{EXTERNAL_QUESTION_NS}}}ExternalQuestion":
        url = root.findtext(f"{{{EXTERNAL_QUESTION_NS}}}ExternalURL") or ""
        height = root.findtext(f"{{{EXTERNAL_QUESTION_NS}}}FrameHeight") or ""
        if urlsplit(url).scheme != "https":
            raise _Fault(400, "ParameterValidationError",
                         f"ExternalURL must be an https URL: {url!r}")
        if not height.strip().isdigit():
            raise _Fault(400, "ParameterValidationError",
                         f"FrameHeight must be a non-negative integer: {height!r}")
        return
    local = tag.rsplit("}", 1)[-1]
    if local in {"HTMLQuestion", "QuestionForm"} and tag.startswith("{http://mechanical"):
        return
    raise _Fault(400, "ParameterValidationError",
                 f"Question must be an ExternalQuestion, HTMLQuestion or QuestionForm, "
                 f"not <{tag}>")


def answer_xml(answers: Mapping[str, str | list[str]]) -> str:
    """The QuestionFormAnswers document MTurk stores for an externalSubmit."""
    parts = ['<?xml version="1.0" encoding="UTF-8" standalone="no"?>',
             f'<QuestionFormAnswers xmlns="{ANSWER_NS}">']
    for name, value in answers.items():
        for item in [value] if isinstance(value, str) else value:
            parts.append(f"<Answer><QuestionIdentifier>{escape(name)}</QuestionIdentifier>"
                         f"<FreeText>{escape(item)}</FreeText></Answer>")
    parts.append("</QuestionFormAnswers>")
    return "".join(parts)


class _Handler(BaseHTTPRequestHandler):
    fake: FakeMTurk
    protocol_version = "HTTP/1.1"

    def setup(self) -> None:
        super().setup()
        # Headers and body go out in two writes; without this Nagle's algorithm and
        # delayed ACKs add ~40 ms to every call.
        self.request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length)
        status, payload = self.fake.handle(self.headers, body)
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", CONTENT_TYPE)
        self.send_header("Content-Length", str(len(data)))
        self.send_header("x-amzn-RequestId", str(uuid.uuid4()))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        pass  # keep test output clean
