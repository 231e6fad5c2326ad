"""A thin requester layer over the boto3 ``mturk`` client.

Pure Python (no Django): the crowd app calls these functions with a client from
``make_client``. The code is the same for the sandbox, production and the test fake;
only the endpoint URL differs. Credentials come from the boto3 default chain
(environment, shared config, instance role), never from this code.

Every call that can create a HIT or move money carries a ``UniqueRequestToken``
derived from our own database row, and every "already done" answer from MTurk is
checked against MTurk's own state before it is treated as success. See
``docs/internals/mturk.md`` for what was and was not verified against the real service.

Modules: ``client`` (connection, errors, shared values), ``fees``, ``hits``,
``assignments``, ``payments`` and ``workers``; this package re-exports their public
names so callers write ``mturk.create_hit(...)``.
"""

from .assignments import (
    AssignmentRecord,
    approve,
    get_assignment,
    list_all_assignments,
    parse_answer_xml,
    reject,
)
from .client import (
    ANSWER_NS,
    ASSIGNMENT_STATUSES,
    EXTERNAL_QUESTION_NS,
    MAX_ANNOTATION_LENGTH,
    MAX_TOKEN_LENGTH,
    PRODUCTION_ENDPOINT,
    PRODUCTION_WORKER_URL,
    QUAL_APPROVAL_RATE,
    QUAL_LOCALE,
    QUAL_NUMBER_APPROVED,
    SANDBOX_ENDPOINT,
    SANDBOX_WORKER_URL,
    MTurkClient,
    MTurkError,
    external_question_xml,
    format_amount,
    make_client,
    unique_request_token,
)
from .fees import DEFAULT_FEES, FeeSchedule, bonus_cost, hit_cost
from .hits import (
    HitTypeConfig,
    add_assignments,
    create_hit,
    ensure_hit_type,
    expire_hit,
    extend_hit,
    find_hit_by_annotation,
    get_hit,
    iter_hits,
)
from .payments import get_balance, send_bonus
from .workers import (
    block_worker,
    create_block_qualification,
    list_blocked_workers,
    unblock,
    unblock_worker,
)

__all__ = [
    "ANSWER_NS",
    "ASSIGNMENT_STATUSES",
    "DEFAULT_FEES",
    "EXTERNAL_QUESTION_NS",
    "MAX_ANNOTATION_LENGTH",
    "MAX_TOKEN_LENGTH",
    "PRODUCTION_ENDPOINT",
    "PRODUCTION_WORKER_URL",
    "QUAL_APPROVAL_RATE",
    "QUAL_LOCALE",
    "QUAL_NUMBER_APPROVED",
    "SANDBOX_ENDPOINT",
    "SANDBOX_WORKER_URL",
    "AssignmentRecord",
    "FeeSchedule",
    "HitTypeConfig",
    "MTurkClient",
    "MTurkError",
    "add_assignments",
    "approve",
    "block_worker",
    "bonus_cost",
    "create_block_qualification",
    "create_hit",
    "ensure_hit_type",
    "expire_hit",
    "extend_hit",
    "external_question_xml",
    "find_hit_by_annotation",
    "format_amount",
    "get_assignment",
    "get_balance",
    "get_hit",
    "hit_cost",
    "iter_hits",
    "list_all_assignments",
    "list_blocked_workers",
    "make_client",
    "parse_answer_xml",
    "reject",
    "send_bonus",
    "unblock",
    "unblock_worker",
    "unique_request_token",
]
