"""Text shapes shared by embedding, budgeting and the prompt block."""

from datetime import UTC, datetime
from uuid import uuid4

from haki.assembler.render import render_packet
from haki.models import ContextPacket, PacketEpisode, PacketFact
from haki.text import estimate_tokens, event_text, fact_text


def test_token_estimate() -> None:
    assert [estimate_tokens(t) for t in ("", "abc", "abcd", "a" * 41)] == [1, 1, 1, 10]


def test_fact_and_event_text() -> None:
    assert fact_text("preferred_language", "fr") == "preferred language: fr"
    assert fact_text("address", {"city": "Lyon", "zip": 69003}) == \
        'address: {"city": "Lyon", "zip": 69003}'
    assert event_text("call", {"text": "hello"}) == "call: hello"
    assert event_text("call", {"duration": 3}) == 'call: {"duration": 3}'


def test_render_empty_packet_is_empty_string() -> None:
    empty = ContextPacket(facts=[], episodes=[], warnings=["x"], status="degraded",
                          empty_reason="no_memory")
    assert render_packet(empty) == ""


def test_render_block() -> None:
    packet = ContextPacket(
        facts=[PacketFact(id=uuid4(), predicate="preferred_language", value="fr",
                          confidence=0.9, valid_from=datetime(2025, 3, 1, tzinfo=UTC),
                          source_event_ids=[], unconfirmed=True)],
        episodes=[PacketEpisode(event_id=uuid4(), kind="call",
                                occurred_at=datetime(2026, 1, 2, tzinfo=UTC),
                                excerpt="call: asked for a refund")],
        warnings=[], status="ok", empty_reason=None)
    assert render_packet(packet).splitlines() == [
        "<haki_memory>",
        "Facts:",
        "- preferred language: fr (since 2025-03-01, confidence 0.90, unconfirmed)",
        "Episodes:",
        "- [2026-01-02T00:00:00+00:00] call: asked for a refund",
        "</haki_memory>",
    ]
