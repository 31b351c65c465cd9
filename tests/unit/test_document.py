"""Memory documents: JSON and JSON Lines, and errors that name the record and the field."""

import pytest

from haki.errors import ValidationFailed
from haki_local.documents import parse_document_text

FACT = ('{"project_id": "p", "subject_id": "s", "predicate": "lang", "value": "fr"}')


def test_json_document() -> None:
    doc = parse_document_text(
        '{"facts": [' + FACT + '], "events": [{"project_id": "p", "subject_id": "s", '
        '"kind": "k"}]}')
    assert len(doc.facts) == 1 and len(doc.events) == 1 and doc.facts[0].status == "active"


def test_json_lines_document() -> None:
    text = ('{"type": "fact", ' + FACT[1:] + '\n\n{"type": "event", "project_id": "p", '
            '"subject_id": "s", "kind": "k"}\n')
    doc = parse_document_text(text, jsonl=True)
    assert len(doc.facts) == 1 and len(doc.events) == 1


@pytest.mark.parametrize(("text", "jsonl", "message"), [
    ('{"facts": [' + FACT + ', {"project_id": "p", "subject_id": "s", "value": 1}]}', False,
     "facts[1]: field 'predicate'"),
    ('{"facts": [{"project_id": "p", "subject_id": "s", "predicate": "x", "value": 1, '
     '"volatility": "often"}]}', False, "facts[0]: field 'volatility'"),
    ('{"type": "fact", ' + FACT[1:] + '\n{"type": "fact", "oops"', True,
     "line 2: invalid JSON"),
    ('{"type": "memo"}', True, "line 1: field 'type'"),
    ('{"conflicts": [{"project_id": "p", "subject_id": "s", "fact_ids": '
     '["00000000-0000-4000-8000-000000000001"]}]}', False, "conflicts[0]: field 'fact_ids'"),
    ('{"facts": [], "extra": []}', False, "unknown section"),
    ('[1, 2]', False, "expected a JSON object"),
])
def test_errors_name_record_and_field(text: str, jsonl: bool, message: str) -> None:
    with pytest.raises(ValidationFailed) as info:
        parse_document_text(text, jsonl=jsonl)
    assert message in info.value.message
