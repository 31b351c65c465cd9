"""Properties of the packer for any candidates and budget (Hypothesis): the rendered block
never over budget, exactly one decision per candidate in the order given, the packet's facts
in that order and its episodes in reading order, greedy skip-and-continue, blocked facts never
served, and the floor only on gated rows."""

import uuid
from datetime import UTC, datetime, timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from haki.assembler.candidates import EpisodeCandidate, FactCandidate, Ranked
from haki.assembler.packing import EXPIRING, Packer
from haki.assembler.render import render_packet

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
    speaker = draw(st.sampled_from([{}, {"role": "user"}, {"role": "assistant", "name": "Bo"}]))
    return EpisodeCandidate(
        id=uuid.uuid4(), kind="conversation.message",
        payload={"text": draw(_texts)} | speaker,
        occurred_at=_NOW + timedelta(minutes=draw(st.integers(0, 4000))),
        distance=draw(st.floats(0, 2)),
        thread_id=draw(st.sampled_from([None, "t1", "a thread\nwith a break"])),
        seq=draw(st.integers(0, 10**6)))


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
    # Never over budget; what was used is the included rows' tokens, the block's estimate.
    included = [d for d in decisions if d.action == "included"]
    assert packer.tokens_used == sum(d.tokens or 0 for d in included) <= budget
    packet = packer.packet(missing_purpose=False)
    assert len(render_packet(packet)) // 4 == packer.tokens_used
    # The packet holds the included rows: facts in decision order, episodes in reading order.
    assert [f.id for f in packet.facts] == [d.fact_id for d in included if d.fact_id]
    assert sorted(e.event_id for e in packet.episodes) == \
        sorted(d.event_id for d in included if d.event_id)
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


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(["facts", "episodes", "mixed"]), st.data(), st.integers(30, 900))
def test_the_rendered_block_stays_within_the_budget(
        kind: str, data: st.DataObject, budget: int) -> None:
    """For facts only, episodes only and both mixed: the block the packet renders to is
    within the budget by the budget's own estimate, and ``token_count`` is that estimate."""
    item = {"facts": facts(), "episodes": episodes(), "mixed": st.one_of(facts(), episodes())}
    items = data.draw(st.lists(item[kind], min_size=1, max_size=120))
    packer = Packer(budget=budget)
    packer.add_fused([Ranked(i, 1, None, 1.0 - n / 1000) for n, i in enumerate(items)])
    packet = packer.packet(missing_purpose=False)
    block = render_packet(packet)
    assert len(block) // 4 <= budget
    assert packer.tokens_used == (len(block) // 4 if block else 0)
    # Each group's episodes are together and in the order said; each group has one header.
    said = {i.id: (i.occurred_at, i.seq) for i in items if isinstance(i, EpisodeCandidate)}
    groups = [(e.occurred_at.date(), e.thread_id) for e in packet.episodes]
    runs = [g for n, g in enumerate(groups) if n == 0 or groups[n - 1] != g]
    assert len(runs) == len(set(groups)) == block.count("\n## ")
    for n in range(1, len(groups)):
        if groups[n] == groups[n - 1]:
            assert said[packet.episodes[n - 1].event_id] <= said[packet.episodes[n].event_id]
