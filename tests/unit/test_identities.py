"""One identity per name (``haki.identities``): identifiers in NFC, invisible and control
characters refused, predicates in one script."""

import unicodedata

import pytest
from pydantic import ValidationError

from haki.errors import ValidationFailed
from haki.identities import canonical_identifier, canonical_predicate
from haki.memory.api import EventsRequest, FactsRequest
from haki.models import ContextRequest
from haki.validation import parse

NFD = unicodedata.normalize("NFD", "amélie-øre")


def test_both_spellings_of_a_name_are_one_identifier() -> None:
    assert NFD != "amélie-øre"
    assert canonical_identifier(NFD) == "amélie-øre"
    assert canonical_predicate(unicodedata.normalize("NFD", "préférence")) == "préférence"


@pytest.mark.parametrize("char", [
    "\u200b", "\u200c", "\u200d", "\u2060", "\ufeff", "\u00ad",  # zero-width, BOM, soft hyphen
    "\u202e", "\u2066", "\u200f",                                 # bidi override, isolate, RLM
    "\U000e0041", "\U000e007f",                                   # tag characters
    "\x85", "\x9b", "\x7f", "\x01",                               # C1, DEL, C0
    "\u2028", "\u2029",                                           # line, paragraph separators
])
def test_invisible_and_control_characters_are_refused(char: str) -> None:
    with pytest.raises(ValueError, match=f"U\\+{ord(char):04X}"):
        canonical_identifier(f"ci{char}ty")


@pytest.mark.parametrize("predicate", ["сity", "cіty", "α_beta", "cit\u0443"])
def test_a_predicate_mixing_look_alike_scripts_is_refused(predicate: str) -> None:
    with pytest.raises(ValueError, match="scripts"):
        canonical_predicate(predicate)


@pytest.mark.parametrize("predicate", ["city", "ville_préférée", "город", "住所", "住所_city",
                                       "ひらがな_カタカナ_漢字", "주소", "home-2"])
def test_a_predicate_in_one_script_or_east_asian_writing_is_kept(predicate: str) -> None:
    assert canonical_predicate(predicate) == predicate


def test_requests_carry_the_canonical_spelling_of_every_identifier() -> None:
    context = ContextRequest(project_id=unicodedata.normalize("NFD", "projé"), subject_id=NFD,
                             query="q")
    assert (context.project_id, context.subject_id) == ("projé", "amélie-øre")
    events = parse(EventsRequest, {"project_id": "p", "events": [
        {"subject_id": NFD, "kind": NFD, "idempotency_key": NFD}]})
    assert events.events is not None
    assert {events.events[0].subject_id, events.events[0].kind,
            events.events[0].idempotency_key} == {"amélie-øre"}
    messages = parse(EventsRequest, {"project_id": "p", "subject_id": NFD, "messages": [
        {"role": "user", "content": "hi", "message_id": NFD, "name": NFD}]})
    assert messages.subject_id == "amélie-øre"
    assert messages.messages is not None and messages.messages[0].message_id == "amélie-øre"
    facts = parse(FactsRequest, {"project_id": "p", "facts": [
        {"subject_id": NFD, "predicate": unicodedata.normalize("NFD", "lieu_né"),
         "value": "x"}]})
    assert facts.facts[0].predicate == "lieu_né"


def test_a_zero_width_space_in_a_subject_is_a_validation_error() -> None:
    with pytest.raises(ValidationFailed, match="U\\+200B"):
        parse(FactsRequest, {"project_id": "p", "facts": [
            {"subject_id": "ali\u200bce", "predicate": "city", "value": "Lyon"}]})
    with pytest.raises(ValidationError):
        ContextRequest(project_id="p", subject_id="alice\u202e", query="q")
