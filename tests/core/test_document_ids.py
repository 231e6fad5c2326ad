"""Document ids: the model refuses every character provenance syntax reserves."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError

from kbpo.core.models import Document
from submissions.kbformat import SyntaxProblem, parse_provenance

FIELD = Document._meta.get_field("doc_id")


@pytest.mark.parametrize("doc_id", ["a,b", "NYT,2001", "a:b", "a b", "tab\there", "x\n"])
def test_reserved_characters_are_refused_with_a_clear_message(doc_id: str) -> None:
    with pytest.raises(ValidationError) as exc:
        FIELD.run_validators(doc_id)
    assert "no spaces, colons or commas" in str(exc.value)


@pytest.mark.parametrize("doc_id", ["a,b", "a:b", "a b", "NYT_ENG_2001-01.x", "é-1", "a;b"])
def test_the_validator_accepts_exactly_the_ids_provenance_reads_back(doc_id: str) -> None:
    try:
        FIELD.run_validators(doc_id)
        accepted = True
    except ValidationError:
        accepted = False
    try:
        spans = parse_provenance(f"{doc_id}:0-3,{doc_id}:5-9")
        parsed = [s[0] for s in spans] == [doc_id, doc_id]
    except SyntaxProblem:
        parsed = False
    assert accepted == parsed, doc_id
