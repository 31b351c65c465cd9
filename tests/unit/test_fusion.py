"""The fused ranking's scores without a database: reciprocal-rank fusion of the two arms, one
list of facts and episodes, and the neighbour share of the best episodes."""

from dataclasses import replace
from datetime import UTC, datetime
from uuid import UUID, uuid4

import pytest

from haki.assembler import DEFAULT_CONFIG
from haki.assembler.candidates import EpisodeCandidate, FactCandidate, Ranked
from haki.assembler.fusion import (
    ArmHit,
    NeighbourLink,
    fuse,
    neighbour_sources,
    propagate,
    rrf_score,
    weigh_sessions,
    weigh_speakers,
)

CONFIG = DEFAULT_CONFIG


def fact(distance: float = 0.1) -> FactCandidate:
    return FactCandidate(
        id=uuid4(), predicate="note", value="v", confidence=None, valid_from=None,
        source_event_ids=[], volatility="stable", distance=distance, text_rank=None,
        conflict_open=False, horizon_passed=False)


def episode(distance: float = 0.1, at: datetime = datetime(2026, 1, 1, tzinfo=UTC),
            thread_id: str | None = None, **speaker: str) -> EpisodeCandidate:
    return EpisodeCandidate(id=uuid4(), kind="conversation.message",
                            payload={"text": "t", **speaker}, occurred_at=at,
                            distance=distance, thread_id=thread_id)


def test_rrf_weights_each_arm_by_its_rank() -> None:
    k, wv, wt = CONFIG.rrf_k, CONFIG.rrf_weight_vector, CONFIG.rrf_weight_text
    assert rrf_score(1, 3, CONFIG) == pytest.approx(wv / (k + 1) + wt / (k + 3))
    assert rrf_score(None, 2, CONFIG) == pytest.approx(wt / (k + 2))
    assert rrf_score(None, None, CONFIG) == 0.0
    # The vector arm counts double: its 1st beats the text arm's 1st.
    assert rrf_score(1, None, CONFIG) > rrf_score(None, 1, CONFIG)
    even = replace(CONFIG, rrf_weight_vector=1.0)
    assert rrf_score(1, None, even) == rrf_score(None, 1, even)


def test_one_list_of_facts_and_episodes_by_fused_score() -> None:
    f1, e1, f2, e2 = fact(), episode(), fact(), episode()
    hits = [ArmHit(f1, 3, None), ArmHit(e1, 1, 5), ArmHit(f2, None, 1), ArmHit(e2, 2, None)]
    ranked = fuse(hits, CONFIG)
    # e1 (both arms) > e2 (vector 2nd) > f1 (vector 3rd) > f2 (text 1st only, weight 1).
    assert [r.id for r in ranked] == [e1.id, e2.id, f1.id, f2.id]
    assert ranked[0].score == pytest.approx(rrf_score(1, 5, CONFIG))
    assert (ranked[0].vector_rank, ranked[0].text_arm_rank) == (1, 5)


def test_equal_scores_are_ordered_by_id() -> None:
    a, b = episode(), episode()
    ranked = fuse([ArmHit(a, None, 4), ArmHit(b, None, 4)], CONFIG)
    assert [r.id for r in ranked] == sorted([a.id, b.id])


def test_sources_are_the_best_episodes_passing_the_floor() -> None:
    near, far, f = episode(0.1), episode(0.9), fact()
    ranked = fuse([ArmHit(far, 1, None), ArmHit(f, 2, None), ArmHit(near, 3, None)], CONFIG)
    assert neighbour_sources(ranked, CONFIG) == [far.id, near.id]
    floored = replace(CONFIG, recall_max_distance=0.5)
    assert neighbour_sources(ranked, floored) == [near.id]
    assert neighbour_sources(ranked, replace(CONFIG, neighbour_sources=1)) == [far.id]


def test_neighbours_get_a_share_of_their_source_by_distance() -> None:
    source, candidate = episode(), episode()
    before, two_after = episode(), episode()
    ranked = fuse([ArmHit(source, 1, None), ArmHit(candidate, 20, None)], CONFIG)
    base = {r.id: r.score for r in ranked}
    links = [NeighbourLink(source.id, -1, before.id, before),
             NeighbourLink(source.id, 1, candidate.id, None),
             NeighbourLink(source.id, 2, two_after.id, two_after)]
    result = {r.id: r for r in propagate(ranked, links, CONFIG)}
    share = CONFIG.neighbour_share * base[source.id]
    assert result[before.id].score == pytest.approx(share)
    assert result[two_after.id].score == pytest.approx(share / 2)
    # A candidate neighbour keeps its own score and adds the share.
    assert result[candidate.id].score == pytest.approx(base[candidate.id] + share)
    assert result[candidate.id].vector_rank == 20
    for neighbour in (before.id, two_after.id, candidate.id):
        assert result[neighbour].expanded_from == source.id
    assert result[before.id].neighbour_only and not result[candidate.id].neighbour_only
    assert result[source.id].score == base[source.id]
    assert result[source.id].expanded_from is None


def test_a_neighbour_takes_its_best_source_and_shares_do_not_chain() -> None:
    strong, weak, between = episode(), episode(), episode()
    ranked = fuse([ArmHit(strong, 1, None), ArmHit(weak, 30, None)], CONFIG)
    base = {r.id: r.score for r in ranked}
    links = [NeighbourLink(weak.id, 1, between.id, between),
             NeighbourLink(strong.id, -1, between.id, between),
             # strong is weak's neighbour too, but outranks it: no share flows up.
             NeighbourLink(weak.id, 2, strong.id, None)]
    result = {r.id: r for r in propagate(ranked, links, CONFIG)}
    assert result[between.id].expanded_from == strong.id
    assert result[between.id].score == pytest.approx(CONFIG.neighbour_share * base[strong.id])
    assert result[strong.id].score == base[strong.id]
    assert result[strong.id].expanded_from is None


def _roots(ranked: list[Ranked]) -> dict[UUID, UUID]:
    """Each row's root, following ``expanded_from`` (fails on a cycle)."""
    parent = {r.id: r.expanded_from for r in ranked}
    roots = {}
    for start in parent:
        seen, node = [start], start
        while parent.get(node) is not None:
            node = parent[node]  # type: ignore[assignment]
            assert node not in seen, f"expanded_from cycle: {[*seen, node]}"
            seen.append(node)
        roots[start] = node
    return roots


def test_adjacent_sources_do_not_name_each_other() -> None:
    """Two sources next to each other: the weaker takes the stronger's share, the stronger
    takes nothing from the weaker, so the provenance is a forest."""
    first, second, third = episode(), episode(), episode()
    ranked = fuse([ArmHit(first, 1, None), ArmHit(second, 2, None), ArmHit(third, 3, None)],
                  CONFIG)
    links = [NeighbourLink(a.id, offset, b.id, None)
             for a, b, offset in ((first, second, 1), (second, first, -1),
                                  (second, third, 1), (third, second, -1),
                                  (first, third, 2), (third, first, -2))]
    result = propagate(ranked, links, CONFIG)
    by_id = {r.id: r for r in result}
    assert by_id[first.id].expanded_from is None
    assert by_id[second.id].expanded_from == first.id
    assert by_id[third.id].expanded_from in {first.id, second.id}
    assert set(_roots(result).values()) == {first.id}


def test_propagation_returns_the_list_best_first() -> None:
    source = episode()
    others = [episode() for _ in range(3)]
    ranked = fuse([ArmHit(source, 1, None)] + [ArmHit(e, 40 + i, None)
                                                for i, e in enumerate(others)], CONFIG)
    neighbour = episode()
    result = propagate(ranked, [NeighbourLink(source.id, 1, neighbour.id, neighbour)], CONFIG)
    scores = [r.score for r in result]
    assert scores == sorted(scores, reverse=True) and len(result) == 5
    assert result[0].id == source.id


def test_the_assistants_messages_are_weighed_down() -> None:
    config = replace(CONFIG, assistant_weight=0.5)
    reply, question, note = episode(role="assistant"), episode(role="user"), episode()
    data = episode(role="assistant-bot")  # not a message's role: a record's own field
    ranked = fuse([ArmHit(reply, 1, 1), ArmHit(question, 2, 2), ArmHit(note, 3, 3),
                   ArmHit(data, 4, 4)], config)
    weighed = {r.id: r.score for r in weigh_speakers(ranked, config)}
    fused = {r.id: r.score for r in ranked}
    assert weighed[reply.id] == pytest.approx(fused[reply.id] / 2)
    for other in (question, note, data):
        assert weighed[other.id] == fused[other.id]
    # Best first again: the reply, first by its ranks, falls behind the user's question.
    order = [r.id for r in weigh_speakers(ranked, config)]
    assert order[0] == question.id and order.index(reply.id) > order.index(question.id)


def test_a_session_lends_its_best_score_to_its_turns() -> None:
    config = replace(CONFIG, session_share=0.5)
    morning, evening = datetime(2026, 3, 2, 8, tzinfo=UTC), datetime(2026, 3, 2, 21, tzinfo=UTC)
    best, weak = episode(at=morning), episode(at=evening)  # one day: one session
    other_day = episode(at=datetime(2026, 3, 3, 8, tzinfo=UTC))
    other_thread = episode(at=morning, thread_id="support-7")  # same day, another thread
    note = fact()
    ranked = [Ranked(best, 1, None, 1.0), Ranked(note, 2, None, 0.5),
              Ranked(other_day, 3, None, 0.45), Ranked(other_thread, 4, None, 0.44),
              Ranked(weak, 5, None, 0.2)]
    weighed = {r.id: r.score for r in weigh_sessions(ranked, config)}
    assert weighed[best.id] == pytest.approx(1.5)
    assert weighed[weak.id] == pytest.approx(0.2 + 0.5 * 1.0)
    # Alone in their sessions, the others gain half their own score, as the fact does.
    for alone, score in ((other_day, 0.45), (other_thread, 0.44), (note, 0.5)):
        assert weighed[alone.id] == pytest.approx(1.5 * score)
    # The weak turn of the strong session now stands above the lone ones; best first again.
    order = [r.id for r in weigh_sessions(ranked, config)]
    assert order == [best.id, note.id, weak.id, other_day.id, other_thread.id]


def test_no_session_share_leaves_the_order() -> None:
    ranked = [Ranked(episode(), 1, None, 1.0), Ranked(episode(), 2, None, 0.2)]
    assert weigh_sessions(ranked, replace(CONFIG, session_share=0.0)) == ranked


def test_a_turn_the_floor_excludes_vouches_for_nothing() -> None:
    config = replace(CONFIG, session_share=0.5, recall_max_distance=0.3)
    far, near = episode(distance=0.4), episode(distance=0.2)  # one day: one session
    ranked = [Ranked(far, 1, None, 1.0), Ranked(near, 2, None, 0.2)]
    weighed = {r.id: r.score for r in weigh_sessions(ranked, config)}
    # The near turn is the session's best that counts; the far one gains its own share.
    assert weighed[near.id] == pytest.approx(0.2 * 1.5)
    assert weighed[far.id] == pytest.approx(1.0 + 0.5 * 0.2)
