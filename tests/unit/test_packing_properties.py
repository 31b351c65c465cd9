"""Properties of the packer for any candidates and budget (Hypothesis): never over budget,
exactly one decision per candidate in the order given, the packet in that order, greedy
skip-and-continue, blocked facts never served, and the floor only on gated rows."""

import uuid
from datetime import UTC, datetime

from hypothesis import given, settings
from hypothesis import strategies as st

from haki.assembler.candidates import EpisodeCandidate, FactCandidate, Ranked
from haki.assembler.packing import EXPIRING, Packer

_NOW = datetime(2026, 1, 1, tzinfo=UTC)
_texts = st.text(alphabet=st.characters(min_codepoint=32, max_codepoint=0x2FF), max_size=400)


@st.composite
def facts(draw: st.DrawFn) -> FactCandidate:
    return FactCandidate(
        id=uuid.uuid4(), predicate=draw(st.sampled_from(["note", "city", "plan"])),
        value=draw(_texts), confidence=None, valid_from=None, source_event_ids=[],
        volatility=draw(st.sampled_from(["stable", "slow", "volatile", "ephemeral"])),
        distance=draw(st.floats(0, 2)), text_rank=None,
        conflict_open=draw(st.booleans()), horizon_passed=draw(st.booleans()))


@st.composite
def episodes(draw: st.DrawFn) -> EpisodeCandidate:
    return EpisodeCandidate(id=uuid.uuid4(), kind="conversation.message",
                            payload={"text": draw(_texts)}, occurred_at=_NOW,
                            distance=draw(st.floats(0, 2)))


@st.composite
def ranked_lists(draw: st.DrawFn) -> list[Ranked]:
    items = draw(st.lists(st.one_of(facts(), episodes()), max_size=40))
    ranked = []
    for item in items:
        arms = draw(st.sampled_from([(1, None), (None, 2), (3, 4), (None, None)]))
        ranked.append(Ranked(item, arms[0], arms[1], draw(st.floats(0, 1))))
    return ranked


@settings(max_examples=300, deadline=None)
@given(ranked_lists(), st.integers(1, 3000), st.sampled_from([0.0, 0.3, 1.0]))
def test_fused_packing_properties(candidates: list[Ranked], budget: int, floor: float) -> None:
    packer = Packer(budget=budget, max_distance=floor, excerpt_chars=300,
                    excerpt_with_kind=False)
    packer.add_fused(candidates)
    decisions = packer.decisions
    # One decision per candidate, in the order given, numbered.
    assert [d.fact_id or d.event_id for d in decisions] == [c.id for c in candidates]
    assert [d.ordinal for d in decisions] == list(range(len(candidates)))
    # Never over budget; what was used is the included rows' tokens.
    included = [d for d in decisions if d.action == "included"]
    assert packer.tokens_used == sum(d.tokens or 0 for d in included) <= budget
    # The packet holds the included rows, in decision order.
    assert [f.id for f in packer.facts] == [d.fact_id for d in included if d.fact_id]
    assert [e.event_id for e in packer.episodes] == [d.event_id for d in included if d.event_id]
    remaining = budget
    for ranked, decision in zip(candidates, decisions, strict=True):
        item = ranked.item
        if isinstance(item, FactCandidate) and item.conflict_open:
            assert (decision.action, decision.reason_code) == ("blocked", "conflict_open")
            continue
        if isinstance(item, FactCandidate) and item.horizon_passed and \
                item.volatility in EXPIRING:
            assert decision.reason_code == "volatility_expired"
            continue
        gated = not (isinstance(item, EpisodeCandidate) and ranked.neighbour_only)
        if gated and floor > 0 and item.distance > floor:
            assert decision.reason_code == "below_relevance_floor"
            continue
        # Greedy, skip and continue: in exactly when it fits what is left at that point.
        assert decision.tokens is not None
        fits = decision.tokens <= remaining
        assert (decision.action == "included") == fits, decision
        if fits:
            remaining -= decision.tokens
        else:
            assert decision.reason_code == "over_budget"
    assert remaining == budget - packer.tokens_used
