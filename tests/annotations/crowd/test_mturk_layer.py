"""The MTurk requester layer against the fake endpoint (no network, no database).

Runs with or without pytest-django:
    python -m pytest tests/test_mturk_layer.py -q -p no:django
"""

from __future__ import annotations

import inspect
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
from botocore.config import Config
from botocore.exceptions import ClientError
from hypothesis import given, settings
from hypothesis import strategies as st

from annotations.crowd import mturk
from annotations.crowd.mturk import HitTypeConfig, MTurkError
from tests import ROOT
from tests.annotations.crowd.fake_mturk import MODEL, FakeMTurk, WorkerCannotAccept, validate_shape

ACCESS_KEY = "AKIDKBPOTESTKEY"
TASK_URL = "https://kbpo.example.org/annotate/relation?batch=7&hit=3"


@pytest.fixture(autouse=True)
def aws_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Credentials only through the environment, and never a real AWS profile or proxy."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", ACCESS_KEY)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "not-a-real-secret")
    for name in ("AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_RETRY_MODE",
                 "AWS_MAX_ATTEMPTS", "HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent/aws-config")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent/aws-credentials")
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")


@pytest.fixture
def fake() -> Iterator[FakeMTurk]:
    with FakeMTurk() as server:
        yield server
    assert not server.internal_errors, server.internal_errors


@pytest.fixture(scope="module")
def boto_session():
    """One session for the module: loading the service model per client is slow."""
    import boto3

    return boto3.session.Session()


@pytest.fixture
def client(fake: FakeMTurk, boto_session):
    return mturk.make_client(fake.endpoint_url, session=boto_session)


@pytest.fixture
def raw_client(fake: FakeMTurk, boto_session):
    """A client that skips botocore's own parameter checks, to reach the fake's."""
    return boto_session.client(
        "mturk", endpoint_url=fake.endpoint_url, region_name="us-east-1",
        config=Config(parameter_validation=False, retries={"mode": "standard",
                                                           "max_attempts": 1}))


def config(**overrides) -> HitTypeConfig:
    values = dict(title="Is this relation expressed in the sentence?",
                  description="Read one sentence and say how two highlighted mentions relate.",
                  reward=Decimal("0.15"), keywords=("nlp", "relations"),
                  max_assignments=3, lifetime_seconds=3600)
    values.update(overrides)
    return HitTypeConfig(**values)


def post_hit(client, cfg: HitTypeConfig | None = None, row_id: int = 1, **kw) -> str:
    cfg = cfg or config()
    hit_type = mturk.ensure_hit_type(client, cfg)
    return mturk.create_hit(
        client, hit_type, mturk.external_question_xml(TASK_URL, 700),
        mturk.unique_request_token("hit", row_id),
        max_assignments=kw.pop("max_assignments", cfg.max_assignments),
        lifetime_seconds=cfg.lifetime_seconds, **kw)


def worker(i: int) -> str:
    return f"AW{i:08d}"


# ------------------------------------------------------------------ pure helpers


def test_module_does_not_need_django() -> None:
    code = ("import sys, annotations.crowd.mturk; "
            "assert not [m for m in sys.modules if m.split('.')[0] == 'django']")
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True)


def test_external_question_xml_is_valid_and_escaped() -> None:
    xml = mturk.external_question_xml(TASK_URL, 700)
    root = ET.fromstring(xml)
    ns = mturk.EXTERNAL_QUESTION_NS
    assert root.tag == f"{{{ns}}}ExternalQuestion"
    assert root.findtext(f"{{{ns}}}ExternalURL") == TASK_URL
    assert root.findtext(f"{{{ns}}}FrameHeight") == "700"
    assert "&amp;" in xml and "&hit" not in xml
    assert mturk.external_question_xml("http://localhost:8000/t", 0)
    with pytest.raises(ValueError, match="https"):
        mturk.external_question_xml("http://kbpo.example.org/t", 600)
    with pytest.raises(ValueError):
        mturk.external_question_xml("https://kbpo.example.org/t", -1)


def test_unique_request_token_is_deterministic_and_short() -> None:
    assert mturk.unique_request_token("hit", 42) == mturk.unique_request_token("hit", "42")
    assert mturk.unique_request_token("hit", 42) != mturk.unique_request_token("bonus", 42)
    assert mturk.unique_request_token("hit", 42, "staging") != mturk.unique_request_token(
        "hit", 42)
    long_id = "x" * 200
    assert len(mturk.unique_request_token("hit", long_id)) <= 64
    with pytest.raises(ValueError):
        mturk.unique_request_token("Bad Kind", 1)


@given(kind=st.sampled_from(["hit", "bonus", "more-assignments"]),
       our_id=st.one_of(st.integers(min_value=0, max_value=10**30),
                        st.text(min_size=1, max_size=300)))
def test_tokens_always_fit_the_model(kind: str, our_id: int | str) -> None:
    token = mturk.unique_request_token(kind, our_id)
    assert validate_shape(MODEL.shape_for("IdempotencyToken"), token) == []
    assert token == mturk.unique_request_token(kind, our_id)


@given(st.integers(min_value=0, max_value=10**9))
def test_tokens_of_distinct_rows_differ(n: int) -> None:
    assert mturk.unique_request_token("hit", n) != mturk.unique_request_token("hit", n + 1)


@settings(max_examples=200)
@given(st.decimals(min_value=0, max_value=10**6, places=2))
def test_amounts_match_the_currency_pattern(amount: Decimal) -> None:
    text = mturk.format_amount(amount)
    assert validate_shape(MODEL.shape_for("CurrencyAmount"), text) == []
    assert Decimal(text) == amount


def test_amount_refuses_sub_cent_and_negative() -> None:
    for bad in (Decimal("0.155"), Decimal("-1"), "abc", Decimal("NaN")):
        with pytest.raises(ValueError):
            mturk.format_amount(bad)


def test_hit_cost_follows_the_fee_schedule() -> None:
    assert mturk.hit_cost(Decimal("0.15"), 3) == Decimal("0.54")  # 20%
    assert mturk.hit_cost(Decimal("0.15"), 10) == Decimal("2.10")  # 40% from 10 up
    assert mturk.hit_cost(Decimal("0.02"), 3) == Decimal("0.09")  # $0.01 minimum fee
    assert mturk.hit_cost(Decimal("1.00"), 2, fee_rate=Decimal("0.45")) == Decimal("2.90")
    cheap = mturk.FeeSchedule(base_rate=Decimal("0.10"), large_hit_extra_rate=Decimal("0"))
    assert mturk.hit_cost(Decimal("1.00"), 20, fees=cheap) == Decimal("22.00")
    assert mturk.bonus_cost(Decimal("0.50")) == Decimal("0.60")
    with pytest.raises(ValueError):
        mturk.hit_cost(Decimal("0.15"), 0)


def test_hit_type_config_builds_the_requirements() -> None:
    cfg = config(countries=("US", "CA"), min_approval_rate=97, min_approved_hits=500,
                 block_qualification_id="3BLOCKQUALIFICATION0")
    reqs = {r["QualificationTypeId"]: r for r in cfg.qualification_requirements()}
    assert reqs[mturk.QUAL_APPROVAL_RATE]["IntegerValues"] == [97]
    assert reqs[mturk.QUAL_LOCALE]["Comparator"] == "In"
    assert reqs[mturk.QUAL_LOCALE]["LocaleValues"] == [{"Country": "US"}, {"Country": "CA"}]
    assert reqs[mturk.QUAL_NUMBER_APPROVED]["IntegerValues"] == [500]
    assert reqs["3BLOCKQUALIFICATION0"]["Comparator"] == "DoesNotExist"
    params = cfg.create_hit_type_params()
    assert params["Reward"] == "0.15" and params["Keywords"] == "nlp,relations"
    shape = MODEL.operation_model("CreateHITType").input_shape
    assert validate_shape(shape, params) == []
    with pytest.raises(ValueError):
        config(title="t" * 129)
    with pytest.raises(ValueError):
        config(countries=("usa",))


def test_parse_answer_xml() -> None:
    ns = mturk.ANSWER_NS
    xml = (f'<?xml version="1.0" encoding="ASCII"?><QuestionFormAnswers xmlns="{ns}">'
           "<Answer><QuestionIdentifier>relation</QuestionIdentifier>"
           "<FreeText>per:spouse</FreeText></Answer>"
           "<Answer><QuestionIdentifier>checks</QuestionIdentifier>"
           "<SelectionIdentifier>subj</SelectionIdentifier>"
           "<SelectionIdentifier>obj</SelectionIdentifier></Answer>"
           "<Answer><QuestionIdentifier>comment</QuestionIdentifier><FreeText/></Answer>"
           "<Answer><QuestionIdentifier>relation</QuestionIdentifier>"
           "<FreeText>A &amp; B</FreeText></Answer>"
           "</QuestionFormAnswers>")
    assert mturk.parse_answer_xml(xml) == {"relation": ["per:spouse", "A & B"],
                                           "checks": ["subj", "obj"], "comment": [""]}
    for bad in ("<QuestionFormAnswers>", "<Other/>",
                '<!DOCTYPE x [<!ENTITY a "b">]><QuestionFormAnswers/>'):
        with pytest.raises(ValueError):
            mturk.parse_answer_xml(bad)


def test_make_client_retries_and_takes_no_credentials(fake: FakeMTurk, client) -> None:
    assert client.meta.config.retries["mode"] == "standard"
    assert client.meta.endpoint_url == fake.endpoint_url
    params = inspect.signature(mturk.make_client).parameters
    assert not {p for p in params if "key" in p or "secret" in p}
    mturk.get_balance(client)
    assert fake.access_key_ids == {ACCESS_KEY}  # signed with the environment's key


# ------------------------------------------------------------------ HITs


def test_create_hit_posts_the_external_question(fake: FakeMTurk, client) -> None:
    cfg = config()
    hit_id = post_hit(client, cfg)
    sent = fake.calls_of("CreateHITWithHITType")[0]
    assert sent["UniqueRequestToken"] == mturk.unique_request_token("hit", 1)
    assert sent["RequesterAnnotation"] == sent["UniqueRequestToken"]
    hit = mturk.get_hit(client, hit_id)
    assert hit["HITStatus"] == "Assignable"
    assert hit["Reward"] == "0.15" and hit["MaxAssignments"] == 3
    assert hit["Question"] == mturk.external_question_xml(TASK_URL, 700)
    assert hit["QualificationRequirements"] == cfg.qualification_requirements()
    # Same properties, same HIT type (CreateHITType is idempotent by content).
    assert mturk.ensure_hit_type(client, cfg) == hit["HITTypeId"]


@pytest.mark.parametrize("message", ["with_hit_id", "token_only"])
def test_retried_create_returns_the_original_hit(message: str, boto_session) -> None:
    with FakeMTurk(duplicate_hit_message=message) as fake:
        client = mturk.make_client(fake.endpoint_url, session=boto_session)
        first = post_hit(client, row_id=7)
        again = post_hit(client, row_id=7)
        assert again == first
        assert len(fake.hits) == 1
        assert len(fake.calls_of("CreateHITWithHITType")) == 2
        assert not fake.internal_errors


def test_lost_create_response_is_retried_without_a_duplicate(fake: FakeMTurk, client) -> None:
    # MTurk creates the HIT but the answer is lost; botocore retries the same request.
    fake.inject("CreateHITWithHITType", "ServiceFault", times=1, after=True)
    hit_id = post_hit(client, row_id=9)
    assert list(fake.hits) == [hit_id]
    assert len(fake.calls_of("CreateHITWithHITType")) == 2


def test_reused_token_never_maps_to_another_hit(fake: FakeMTurk, client) -> None:
    post_hit(client, row_id=3)
    with pytest.raises(MTurkError, match="not creating another"):
        post_hit(client, row_id=3, annotation="some other row")
    assert len(fake.hits) == 1


def test_concurrent_retries_of_one_task_make_one_hit(fake: FakeMTurk, client) -> None:
    from concurrent.futures import ThreadPoolExecutor

    hit_type = mturk.ensure_hit_type(client, config())
    question = mturk.external_question_xml(TASK_URL, 700)
    token = mturk.unique_request_token("hit", 99)

    def attempt(_: int) -> str:
        return mturk.create_hit(client, hit_type, question, token, max_assignments=3,
                                lifetime_seconds=3600)

    with ThreadPoolExecutor(max_workers=8) as pool:
        ids = set(pool.map(attempt, range(16)))
    assert len(ids) == 1 and list(fake.hits) == list(ids)


def test_create_hit_operation_shares_the_token_memory(fake: FakeMTurk, client) -> None:
    # CreateHIT (type inline) is what other tools use; its tokens collide with ours.
    params = config().create_hit_type_params()
    response = client.create_hit(**params, LifetimeInSeconds=3600, MaxAssignments=1,
                                 Question=mturk.external_question_xml(TASK_URL, 600),
                                 UniqueRequestToken="shared-token")
    hit_id = response["HIT"]["HITId"]
    with pytest.raises(MTurkError, match=hit_id):
        mturk.create_hit(client, response["HIT"]["HITTypeId"],
                         mturk.external_question_xml(TASK_URL, 600), "shared-token",
                         max_assignments=1, lifetime_seconds=3600, annotation="ours")
    assert len(fake.hits) == 1


def test_tokens_expire_after_24_hours_on_mturk(fake: FakeMTurk, client) -> None:
    # Why our own row must store the HIT id: MTurk forgets tokens after a day.
    post_hit(client, row_id=5)
    fake.advance(25 * 3600)
    post_hit(client, row_id=5)
    assert len(fake.hits) == 2


def test_throttling_is_retried_transparently(fake: FakeMTurk, client) -> None:
    fake.inject("GetAccountBalance", "ThrottlingException", times=2)
    assert mturk.get_balance(client) == Decimal("10000.00")
    assert len(fake.calls_of("GetAccountBalance")) == 3


def test_service_unavailable_is_retried(fake: FakeMTurk, client) -> None:
    fake.inject("CreateHITType", "ServiceUnavailable", times=2)
    assert mturk.ensure_hit_type(client, config())


def test_service_fault_surfaces_after_retries(fake: FakeMTurk, boto_session) -> None:
    client = mturk.make_client(fake.endpoint_url, max_attempts=4, session=boto_session)
    fake.inject("GetAccountBalance", "ServiceFault", times=100)
    with pytest.raises(MTurkError) as info:
        mturk.get_balance(client)
    err = info.value
    assert err.code == "ServiceFault" and err.operation == "GetAccountBalance"
    assert "retried" in str(err) and "GetAccountBalance" in str(err)
    assert len(fake.calls_of("GetAccountBalance")) == 4


def test_validation_errors_are_not_retried(fake: FakeMTurk, client) -> None:
    with pytest.raises(MTurkError) as info:
        mturk.get_hit(client, "lowercase-id")
    assert info.value.code == "ValidationException"
    assert len(fake.calls_of("GetHIT")) == 1


# ------------------------------------------------------------------ assignments


def test_pagination_over_100_assignments(fake: FakeMTurk, client) -> None:
    hit_id = post_hit(client, config(max_assignments=250))
    for i in range(250):
        fake.worker_submits(hit_id, worker(i), {"relation": f"r{i}"})
    records = mturk.list_all_assignments(client, hit_id)
    assert len(records) == 250
    assert {r.worker_id for r in records} == {worker(i) for i in range(250)}
    pages = fake.calls_of("ListAssignmentsForHIT")
    assert len(pages) == 3 and all(p["MaxResults"] == 100 for p in pages)
    assert "NextToken" not in pages[0] and "NextToken" in pages[1]


def test_answers_seen_only_by_mturk_are_found_and_parsed(fake: FakeMTurk, client) -> None:
    hit_id = post_hit(client)
    aid = fake.worker_submits(hit_id, worker(1), {"relation": "per:spouse",
                                                  "comment": "Tom & Jerry <3",
                                                  "checks": ["subj", "obj"]})
    fake.worker_accepts(hit_id, worker(2))  # accepted, not submitted: invisible
    [record] = mturk.list_all_assignments(client, hit_id)
    assert record.assignment_id == aid and record.status == "Submitted"
    assert record.answers == {"relation": ["per:spouse"], "comment": ["Tom & Jerry <3"],
                              "checks": ["subj", "obj"]}
    assert isinstance(record.submit_time, datetime)
    assert mturk.list_all_assignments(client, hit_id, ["Approved"]) == []
    with pytest.raises(ValueError):
        mturk.list_all_assignments(client, hit_id, ["Pending"])


def test_approve_is_idempotent_and_pays_once(fake: FakeMTurk, client) -> None:
    hit_id = post_hit(client)
    aid = fake.worker_submits(hit_id, worker(1), {"relation": "no_relation"})
    balance = mturk.get_balance(client)
    assert mturk.approve(client, aid, "Thanks!") is True
    assert mturk.approve(client, aid) is False
    assert fake.assignment_status(aid) == "Approved"
    assert mturk.get_balance(client) == balance  # paid from the hold taken at posting
    # A lost approval answer: the retry meets an approved assignment.
    aid2 = fake.worker_submits(hit_id, worker(2), {"relation": "no_relation"})
    fake.inject("ApproveAssignment", "ServiceFault", after=True)
    assert mturk.approve(client, aid2) is False
    assert fake.assignment_status(aid2) == "Approved"


def test_auto_approved_assignment_counts_as_approved(fake: FakeMTurk, client) -> None:
    hit_id = post_hit(client, config(auto_approval_delay_seconds=3600))
    aid = fake.worker_submits(hit_id, worker(1), {"relation": "x"})
    fake.advance(3601)
    assert mturk.approve(client, aid) is False


def test_reject_needs_a_reason_and_releases_the_hold(fake: FakeMTurk, client) -> None:
    hit_id = post_hit(client)
    aid = fake.worker_submits(hit_id, worker(1), {"relation": "asdf"})
    for reason in ("", "   "):
        with pytest.raises(ValueError):
            mturk.reject(client, aid, reason)
    assert not fake.calls_of("RejectAssignment")
    before = mturk.get_balance(client)
    assert mturk.reject(client, aid, "Random answers to every question.") is True
    assert mturk.reject(client, aid, "again") is False
    assert mturk.get_balance(client) == before + Decimal("0.18")
    # Approving a rejection needs an explicit override, within 30 days.
    with pytest.raises(MTurkError):
        mturk.approve(client, aid)
    assert mturk.approve(client, aid, override_rejection=True) is True
    assert mturk.get_balance(client) == before


def test_override_rejection_window(fake: FakeMTurk, client) -> None:
    hit_id = post_hit(client)
    aid = fake.worker_submits(hit_id, worker(1), {"relation": "asdf"})
    mturk.reject(client, aid, "spam")
    fake.advance(31 * 24 * 3600)
    with pytest.raises(MTurkError, match="30 days"):
        mturk.approve(client, aid, override_rejection=True)


# ------------------------------------------------------------------ money


def test_posting_holds_exactly_the_estimated_cost(fake: FakeMTurk, client) -> None:
    for n, row in ((3, 1), (10, 2)):
        before = mturk.get_balance(client)
        post_hit(client, config(max_assignments=n), row_id=row)
        assert before - mturk.get_balance(client) == mturk.hit_cost(Decimal("0.15"), n)


def test_bonus_is_not_paid_twice(fake: FakeMTurk, client) -> None:
    hit_id = post_hit(client)
    aid = fake.worker_submits(hit_id, worker(1), {"relation": "x"})
    mturk.approve(client, aid)
    token = mturk.unique_request_token("bonus", 11)
    before = mturk.get_balance(client)
    assert mturk.send_bonus(client, worker(1), aid, Decimal("0.50"), "Great work", token)
    assert not mturk.send_bonus(client, worker(1), aid, Decimal("0.50"), "Great work", token)
    assert before - mturk.get_balance(client) == mturk.bonus_cost(Decimal("0.50"))
    assert len(fake.bonuses) == 1
    # The answer of a paid bonus is lost; botocore's retry must not pay again.
    fake.inject("SendBonus", "ServiceFault", after=True)
    token2 = mturk.unique_request_token("bonus", 12)
    mturk.send_bonus(client, worker(1), aid, Decimal("0.25"), "Extra", token2)
    assert len(fake.bonuses) == 2
    assert before - mturk.get_balance(client) == Decimal("0.60") + Decimal("0.30")


def test_bonus_only_for_the_assignments_worker(fake: FakeMTurk, client) -> None:
    hit_id = post_hit(client)
    aid = fake.worker_submits(hit_id, worker(1), {"relation": "x"})
    with pytest.raises(MTurkError, match="does not belong"):
        mturk.send_bonus(client, worker(2), aid, Decimal("0.50"), "r",
                         mturk.unique_request_token("bonus", 1))
    with pytest.raises(ValueError):
        mturk.send_bonus(client, worker(1), aid, Decimal("0.50"), " ",
                         mturk.unique_request_token("bonus", 1))
    assert not fake.bonuses


def test_insufficient_balance_is_refused(fake: FakeMTurk, client) -> None:
    hit_id = post_hit(client)
    aid = fake.worker_submits(hit_id, worker(1), {"relation": "x"})
    fake.set_balance("0.50")
    assert mturk.get_balance(client) == Decimal("0.50")
    with pytest.raises(MTurkError) as info:
        post_hit(client, row_id=2)
    assert "balance is too low" in str(info.value)
    with pytest.raises(MTurkError, match="insufficient funds"):
        mturk.send_bonus(client, worker(1), aid, Decimal("0.50"), "r",
                         mturk.unique_request_token("bonus", 2))
    assert len(fake.hits) == 1 and not fake.bonuses
    assert mturk.get_balance(client) == Decimal("0.50")


# ------------------------------------------------------------------ HIT states


def test_hit_state_machine(fake: FakeMTurk, client) -> None:
    hit_id = post_hit(client, config(max_assignments=2))
    fake.worker_accepts(hit_id, worker(1))
    assert mturk.get_hit(client, hit_id)["HITStatus"] == "Assignable"
    fake.worker_accepts(hit_id, worker(2))
    hit = mturk.get_hit(client, hit_id)
    assert hit["HITStatus"] == "Unassignable" and hit["NumberOfAssignmentsPending"] == 2
    with pytest.raises(WorkerCannotAccept):
        fake.worker_accepts(hit_id, worker(3))
    fake.worker_submits(hit_id, worker(1), {"relation": "x"})
    assert fake.hit_status(hit_id) == "Unassignable"
    fake.worker_submits(hit_id, worker(2), {"relation": "y"})
    assert mturk.get_hit(client, hit_id)["HITStatus"] == "Reviewable"
    with pytest.raises(WorkerCannotAccept):
        fake.worker_submits(hit_id, worker(2), {"relation": "y"})


def test_abandoned_assignment_frees_its_slot(fake: FakeMTurk, client) -> None:
    hit_id = post_hit(client, config(max_assignments=1, assignment_duration_seconds=60))
    fake.worker_accepts(hit_id, worker(1))
    assert fake.hit_status(hit_id) == "Unassignable"
    fake.advance(61)
    assert fake.hit_status(hit_id) == "Assignable"


def test_expire_and_extend(fake: FakeMTurk, client) -> None:
    hit_id = post_hit(client, config(max_assignments=3))
    fake.worker_accepts(hit_id, worker(1))
    before = mturk.get_balance(client)
    mturk.expire_hit(client, hit_id)
    # A worker already at work may still submit; nobody new can take it.
    assert mturk.get_hit(client, hit_id)["HITStatus"] == "Unassignable"
    with pytest.raises(WorkerCannotAccept):
        fake.worker_accepts(hit_id, worker(2))
    # The two never-taken slots are no longer held.
    assert mturk.get_balance(client) == before + 2 * Decimal("0.18")
    fake.worker_submits(hit_id, worker(1), {"relation": "x"})
    assert mturk.get_hit(client, hit_id)["HITStatus"] == "Reviewable"
    mturk.extend_hit(client, hit_id, datetime.now(UTC) + timedelta(hours=2))
    assert mturk.get_hit(client, hit_id)["HITStatus"] == "Assignable"
    assert mturk.get_balance(client) == before
    with pytest.raises(ValueError):
        mturk.extend_hit(client, hit_id, datetime.now(UTC) - timedelta(hours=1))


def test_blocking_through_a_qualification(fake: FakeMTurk, client) -> None:
    qual = mturk.create_block_qualification(client, "kbpo-blocked")
    assert mturk.create_block_qualification(client, "kbpo-blocked") == qual
    hit_id = post_hit(client, config(block_qualification_id=qual))
    mturk.block_worker(client, worker(1), qual, "agreement 0.21 over 40 answers")
    assert mturk.list_blocked_workers(client, qual) == [worker(1)]
    with pytest.raises(WorkerCannotAccept):
        fake.worker_accepts(hit_id, worker(1))
    fake.worker_accepts(hit_id, worker(2))
    mturk.unblock(client, worker(1), qual, "appeal accepted")
    assert mturk.list_blocked_workers(client, qual) == []
    fake.worker_accepts(hit_id, worker(1))
    with pytest.raises(MTurkError):
        mturk.unblock(client, worker(1), qual, "not blocked any more")


def test_system_qualifications_are_enforced(fake: FakeMTurk, client) -> None:
    hit_id = post_hit(client, config(min_approval_rate=98, countries=("US", "GB")))
    fake.set_worker(worker(1), approval_rate=90)
    fake.set_worker(worker(2), country="FR")
    fake.set_worker(worker(3), country="GB")
    for w in (worker(1), worker(2)):
        with pytest.raises(WorkerCannotAccept):
            fake.worker_accepts(hit_id, w)
    fake.worker_accepts(hit_id, worker(3))


# ------------------------------------------------------------------ the fake bites


TITLE = "Is this relation expressed?"


@pytest.mark.parametrize(("operation", "params", "code"), [
    ("CreateHITType", {"Title": TITLE, "Description": "d", "Reward": "0.155",
                       "AssignmentDurationInSeconds": 600}, "ValidationException"),
    ("CreateHITType", {"Title": TITLE, "Description": "d", "Reward": "$1",
                       "AssignmentDurationInSeconds": 600}, "ValidationException"),
    ("CreateHITType", {"Title": "t" * 129, "Description": "d", "Reward": "0.15",
                       "AssignmentDurationInSeconds": 600}, "ParameterValidationError"),
    ("CreateHITType", {"Title": TITLE, "Description": "d",
                       "AssignmentDurationInSeconds": 600}, "ValidationException"),
    ("CreateHITType", {"Title": TITLE, "Description": "d", "Reward": "0.15",
                       "AssignmentDurationInSeconds": "ten minutes"}, "ValidationException"),
    ("CreateHITType", {"Title": TITLE, "Description": "d", "Reward": "0.15",
                       "AssignmentDurationInSeconds": 10}, "ParameterValidationError"),
    ("CreateHITType", {"Title": TITLE, "Description": "d", "Reward": "0.15",
                       "AssignmentDurationInSeconds": 600, "QualificationRequirements": [
                           {"QualificationTypeId": "000000000000000000L0",
                            "Comparator": "AtLeast", "IntegerValues": [95]}]},
     "ValidationException"),
    ("ListHITs", {"MaxResults": 101}, "ValidationException"),
    ("GetHIT", {"HITId": "not-an-id"}, "ValidationException"),
    ("SendBonus", {"WorkerId": "bob", "BonusAmount": "1", "AssignmentId": "ABC",
                   "Reason": "r"}, "ValidationException"),
    ("SendBonus", {"WorkerId": "AW1", "BonusAmount": "1", "AssignmentId": "ABC",
                   "Reason": "r", "UniqueRequestToken": "t" * 65}, "ValidationException"),
    ("RejectAssignment", {"AssignmentId": "ABC"}, "ValidationException"),
])
def test_fake_rejects_invalid_requests(fake: FakeMTurk, raw_client, operation: str,
                                       params: dict, code: str) -> None:
    method = raw_client.meta.method_to_api_mapping
    name = next(m for m, op in method.items() if op == operation)
    with pytest.raises(ClientError) as info:
        getattr(raw_client, name)(**params)
    assert info.value.response["Error"]["Code"] == code
    assert info.value.response["ResponseMetadata"]["HTTPStatusCode"] == 400
    assert not fake.hit_types and not fake.bonuses


def test_fake_catches_what_botocore_lets_through(fake: FakeMTurk, client) -> None:
    """With botocore's own validation on, pattern and max limits still reach the wire."""
    with pytest.raises(ClientError) as info:
        client.create_hit_type(Title=TITLE, Description="d", Reward="0.155",
                               AssignmentDurationInSeconds=600)
    assert "regular expression pattern" in info.value.response["Error"]["Message"]
    with pytest.raises(ClientError):
        client.list_hits(MaxResults=500)
    assert len(fake.calls) == 2


def raw_post(fake: FakeMTurk, operation: str, body: bytes, *, signed: bool = True,
             content_type: str = "application/x-amz-json-1.1") -> tuple[int, dict]:
    """A request botocore would never send, straight to the fake's socket."""
    import json
    import urllib.error
    import urllib.request

    headers = {"X-Amz-Target": f"MTurkRequesterServiceV20170117.{operation}",
               "Content-Type": content_type}
    if signed:
        headers["Authorization"] = ("AWS4-HMAC-SHA256 Credential=AKIDRAW/20240101/us-east-1/"
                                    "mturk-requester/aws4_request, Signature=0")
    request = urllib.request.Request(fake.endpoint_url, data=body, headers=headers)
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(request, timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def test_fake_rejects_malformed_wire_requests(fake: FakeMTurk) -> None:
    ok = b'{"Title": "t", "Description": "d", "Reward": "0.15", ' \
         b'"AssignmentDurationInSeconds": 600}'
    assert raw_post(fake, "CreateHITType", ok)[0] == 200
    unknown = ok[:-1] + b', "Colour": "blue"}'
    cases = [
        (raw_post(fake, "CreateHITType", unknown), "ValidationException"),
        (raw_post(fake, "CreateHITType", ok, signed=False),
         "MissingAuthenticationTokenException"),
        (raw_post(fake, "CreateHITType", ok, content_type="application/json"),
         "SerializationException"),
        (raw_post(fake, "CreateHITType", b"{not json"), "SerializationException"),
        (raw_post(fake, "LaunchRocket", b"{}"), "UnknownOperationException"),
    ]
    for (status, body), code in cases:
        assert (status, body["__type"]) == (400, code)
    assert len(fake.hit_types) == 1


def test_fake_refuses_a_plain_http_question(fake: FakeMTurk, client) -> None:
    hit_type = mturk.ensure_hit_type(client, config())
    question = mturk.external_question_xml("http://localhost:8000/task", 600)
    with pytest.raises(MTurkError) as info:
        mturk.create_hit(client, hit_type, question, "tok", max_assignments=1,
                         lifetime_seconds=3600)
    assert info.value.code == "ParameterValidationError"
    assert not fake.hits


def test_fake_checks_its_own_responses(fake: FakeMTurk, client, monkeypatch) -> None:
    hit_id = post_hit(client)
    original = fake._hit_json

    def drifted(hit):
        return {**original(hit), "HITStatus": "Sleeping"}

    monkeypatch.setattr(fake, "_hit_json", drifted)
    with pytest.raises(MTurkError) as info:
        mturk.get_hit(client, hit_id)
    assert info.value.code == "FakeDriftError"
    errors, fake.internal_errors[:] = list(fake.internal_errors), []
    assert errors and "Sleeping" in errors[0]


def test_every_call_the_layer_made_was_valid(fake: FakeMTurk, client) -> None:
    hit_id = post_hit(client)
    aid = fake.worker_submits(hit_id, worker(1), {"relation": "x"})
    mturk.list_all_assignments(client, hit_id)
    mturk.approve(client, aid, "ok")
    mturk.send_bonus(client, worker(1), aid, Decimal("0.10"), "r",
                     mturk.unique_request_token("bonus", 1))
    mturk.expire_hit(client, hit_id)
    for operation, params in fake.calls:
        shape = MODEL.operation_model(operation).input_shape
        assert validate_shape(shape, params) == [], operation
    assert re.fullmatch(r"[A-Z0-9]{30}", hit_id)
