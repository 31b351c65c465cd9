"""The packer's decisions, without a database: one decision per candidate, greedy budget."""

from datetime import UTC, datetime
from uuid import UUID, uuid4

from haki.assembler.candidates import EpisodeCandidate, FactCandidate
from haki.assembler.packing import Packer
from haki.text import estimate_tokens


def fact(value: str, *, distance: float = 0.1, score: float = 0.5, conflict: bool = False,
         volatility: str = "stable", horizon_passed: bool = False) -> FactCandidate:
    return FactCandidate(
        id=uuid4(), predicate="note", value=value, confidence=None, valid_from=None,
        source_event_ids=[], volatility=volatility, distance=distance, text_rank=0.0,
        recency=1.0, conflict_open=conflict, horizon_passed=horizon_passed, score=score)


def episode(text: str, distance: float = 0.1) -> EpisodeCandidate:
    return EpisodeCandidate(id=uuid4(), kind="conversation.message", payload={"text": text},
                            occurred_at=datetime(2026, 1, 1, tzinfo=UTC), distance=distance)


def reasons(packer: Packer) -> list[tuple[UUID | None, str]]:
    return [(d.fact_id or d.event_id, d.reason_code) for d in packer.decisions]


def test_greedy_skip_and_continue() -> None:
    big, small = fact("x" * 100), fact("tiny")
    packer = Packer(budget=estimate_tokens("note: tiny") + 5)
    packer.add_ranked_facts([big, small])
    assert reasons(packer) == [(big.id, "over_budget"), (small.id, "top_score")]
    assert packer.tokens_used == estimate_tokens("note: tiny")


def test_each_reason_and_warning() -> None:
    blocked = fact("in conflict", conflict=True)
    expired = fact("old news", volatility="ephemeral", horizon_passed=True)
    unconfirmed = fact("slow and old", volatility="slow", horizon_passed=True)
    far = fact("far", distance=0.9)
    ep = episode("hello")
    packer = Packer(budget=900, max_distance=0.5)
    packer.add_ranked_facts([blocked, expired, unconfirmed, far])
    packer.add_episodes([ep])
    assert reasons(packer) == [
        (blocked.id, "conflict_open"), (expired.id, "volatility_expired"),
        (unconfirmed.id, "top_score"), (far.id, "below_relevance_floor"),
        (ep.id, "episode_match")]
    packet = packer.packet(missing_purpose=False)
    assert [f.unconfirmed for f in packet.facts] == [True]
    assert [w.split(":")[0] for w in packet.warnings] == ["open_conflict", "volatility_expired"]
    assert packet.status == "degraded"
    blocked_decision = packer.decisions[0]
    assert blocked_decision.action == "blocked" and blocked_decision.score is None


def test_multi_hop_is_exempt_from_the_floor() -> None:
    far = fact("far but linked", distance=0.95)
    packer = Packer(budget=900, max_distance=0.3)
    packer.add_multi_hop_facts([far])
    assert reasons(packer) == [(far.id, "multi_hop_expansion")]


def test_empty_reasons() -> None:
    assert Packer(budget=10).packet(missing_purpose=False).empty_reason == "no_memory"
    gated = Packer(budget=10, max_distance=0.2)
    gated.add_ranked_facts([fact("far", distance=0.9)])
    assert gated.packet(missing_purpose=False).empty_reason == "no_relevant_memory"
    blocked = Packer(budget=10)
    blocked.add_ranked_facts([fact("c", conflict=True)])
    assert blocked.packet(missing_purpose=False).empty_reason == "all_filtered"


def test_episode_excerpt_is_cut_at_the_configured_length() -> None:
    packer = Packer(budget=1000, excerpt_chars=20)
    packer.add_episodes([episode("y" * 100)])
    assert packer.episodes[0].excerpt == ("conversation.message: " + "y" * 100)[:20]
