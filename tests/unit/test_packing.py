"""The packer's decisions, without a database: one decision per candidate of the fused list,
greedy budget."""

from datetime import UTC, datetime
from uuid import UUID, uuid4

from haki.assembler.candidates import EpisodeCandidate, FactCandidate, Ranked
from haki.assembler.packing import Packer
from haki.assembler.render import render_packet


def fact(value: str, *, distance: float = 0.1, conflict: bool = False,
         volatility: str = "stable", horizon_passed: bool = False) -> FactCandidate:
    return FactCandidate(
        id=uuid4(), predicate="note", value=value, confidence=None, valid_from=None,
        source_event_ids=[], volatility=volatility, distance=distance, text_rank=0.0,
        conflict_open=conflict, horizon_passed=horizon_passed)


def episode(text: str, distance: float = 0.1, *, at: datetime = datetime(2026, 1, 1, tzinfo=UTC),
            seq: int = 0, thread_id: str | None = None, role: str | None = None
            ) -> EpisodeCandidate:
    payload = {"text": text} | ({"role": role} if role else {})
    return EpisodeCandidate(id=uuid4(), kind="conversation.message", payload=payload,
                            occurred_at=at, distance=distance, thread_id=thread_id, seq=seq)


def block(packer: Packer) -> str:
    return render_packet(packer.packet(missing_purpose=False))


def reasons(packer: Packer) -> list[tuple[UUID | None, str]]:
    return [(d.fact_id or d.event_id, d.reason_code) for d in packer.decisions]


def ranked(item: FactCandidate | EpisodeCandidate, score: float, *, vector_rank: int | None = 1,
           text_arm_rank: int | None = None, expanded_from: UUID | None = None) -> Ranked:
    return Ranked(item, vector_rank, text_arm_rank, score, expanded_from)


def test_greedy_skip_and_continue() -> None:
    big, small = fact("x" * 100), fact("tiny")
    alone = len("<haki_memory>\n[f1] note: tiny\n</haki_memory>") // 4
    packer = Packer(budget=alone + 5)
    packer.add_fused([ranked(big, 0.9), ranked(small, 0.5)])
    assert reasons(packer) == [(big.id, "over_budget"), (small.id, "top_score")]
    assert packer.tokens_used == alone == len(block(packer)) // 4


def test_the_budget_bounds_the_block_tags_and_headers_included() -> None:
    turn = episode("I moved to Lyon", role="user")
    line = "[e1] user: I moved to Lyon"
    whole = len(f"<haki_memory>\n## 2026-01-01\n{line}\n</haki_memory>") // 4
    short = Packer(budget=whole - 1)
    short.add_fused([ranked(turn, 0.9)])
    assert reasons(short) == [(turn.id, "over_budget")] and block(short) == ""
    assert short.tokens_used == 0
    exact = Packer(budget=whole)
    exact.add_fused([ranked(turn, 0.9)])
    assert block(exact).split("\n")[1:3] == ["## 2026-01-01", line]
    assert exact.decisions[0].tokens == exact.tokens_used == whole


def test_the_first_episode_of_a_group_carries_its_header() -> None:
    day = datetime(2026, 11, 20, 10, 7, tzinfo=UTC)
    first, second = episode("a" * 40, at=day), episode("b" * 40, at=day)
    other = episode("c" * 40, at=day, thread_id="t-2")
    packer = Packer(budget=900)
    packer.add_fused([ranked(first, 0.9), ranked(second, 0.8), ranked(other, 0.7)])
    costs = [d.tokens for d in packer.decisions]
    line = len("[e1] " + "a" * 40) + 1
    tags, header, thread_header = 28, len("## 2026-11-20") + 1, len("## 2026-11-20 · t-2") + 1
    assert sum(costs) == packer.tokens_used == (tags + header + thread_header + 3 * line) // 4
    assert costs[1] <= line // 4 + 1 < costs[2]


def test_each_reason_and_warning() -> None:
    blocked = fact("in conflict", conflict=True)
    expired = fact("old news", volatility="ephemeral", horizon_passed=True)
    unconfirmed = fact("slow and old", volatility="slow", horizon_passed=True)
    far = fact("far", distance=0.9)
    ep = episode("hello")
    packer = Packer(budget=900, max_distance=0.5)
    packer.add_fused([ranked(c, 0.5 - i / 10)
                      for i, c in enumerate([blocked, expired, unconfirmed, far, ep])])
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


def test_empty_reasons() -> None:
    assert Packer(budget=10).packet(missing_purpose=False).empty_reason == "no_memory"
    gated = Packer(budget=10, max_distance=0.2)
    gated.add_fused([ranked(fact("far", distance=0.9), 0.5)])
    assert gated.packet(missing_purpose=False).empty_reason == "no_relevant_memory"
    blocked = Packer(budget=10)
    blocked.add_fused([ranked(fact("c", conflict=True), 0.5)])
    assert blocked.packet(missing_purpose=False).empty_reason == "all_filtered"


def test_episode_excerpt_with_its_kind() -> None:
    packer = Packer(budget=1000, excerpt_chars=20, excerpt_with_kind=True)
    packer.add_fused([ranked(episode("y" * 100), 0.5)])
    assert packer.packet(missing_purpose=False).episodes[0].excerpt == \
        ("conversation.message: " + "y" * 100)[:20]


def test_fused_packs_facts_and_episodes_in_one_order_under_one_budget() -> None:
    ep, f = episode("the reply that carries it"), fact("a fact ranked below")
    budget = len("<haki_memory>\n## 2026-01-01\n[e1] the reply that carries it\n"
                 "</haki_memory>") // 4
    packer = Packer(budget=budget, excerpt_with_kind=False)
    packer.add_fused([ranked(ep, 0.9), ranked(f, 0.5)])
    # The episode ranked first takes the budget, though a fact comes after it.
    assert reasons(packer) == [(ep.id, "episode_match"), (f.id, "over_budget")]
    assert [d.rank for d in packer.decisions] == [1, 2]


def test_fused_budget_not_a_count_bounds_the_episodes() -> None:
    episodes = [episode(f"turn {i}") for i in range(20)]
    packer = Packer(budget=10_000, excerpt_with_kind=False)
    packer.add_fused([ranked(e, 1.0 - i / 100) for i, e in enumerate(episodes)])
    assert len(packer.packet(missing_purpose=False).episodes) == 20


def test_fused_excerpt_is_the_text_alone_cut_at_the_length() -> None:
    packer = Packer(budget=1000, excerpt_chars=20, excerpt_with_kind=False)
    packer.add_fused([ranked(episode("y" * 100), 0.5)])
    assert packer.packet(missing_purpose=False).episodes[0].excerpt == "y" * 20
    assert packer.decisions[0].tokens == len(block(packer)) // 4
    assert block(packer).endswith("[e1] " + "y" * 20 + "\n</haki_memory>")


def test_a_conversation_reads_in_the_order_it_was_said() -> None:
    """Decided by score, shown by group (day, thread) and, within one, in the order said:
    the turns of one batch share a time and keep their written order."""
    at = datetime(2026, 11, 20, 10, 7, tzinfo=UTC)
    question = episode("Where do I live?", at=at, seq=10, role="user")
    answer = episode("In Lyon.", at=at, seq=11, role="assistant")
    thread = episode("Other talk", at=at, seq=5, thread_id="support-42", role="user")
    earlier = episode("Day before", at=datetime(2026, 11, 19, 23, 0, tzinfo=UTC), seq=99)
    packer = Packer(budget=900)
    packer.add_fused([ranked(answer, 0.9), ranked(earlier, 0.8), ranked(question, 0.7),
                      ranked(thread, 0.6)])
    packet = packer.packet(missing_purpose=False)
    assert [e.event_id for e in packet.episodes] == [
        earlier.id, thread.id, question.id, answer.id]
    assert block(packer).split("\n")[1:-1] == [
        "## 2026-11-19", "[e1] Day before",
        "## 2026-11-20 · support-42", "[e2] user: Other talk",
        "## 2026-11-20", "[e3] user: Where do I live?", "[e4] assistant: In Lyon."]
    assert packer.tokens_used == len(block(packer)) // 4


def test_neighbour_only_episodes_are_expansion_and_never_gated() -> None:
    source, far_neighbour, far_ranked = episode("q", 0.1), episode("n", 0.95), episode("r", 0.9)
    packer = Packer(budget=900, max_distance=0.5, excerpt_with_kind=False)
    packer.add_fused([
        ranked(source, 0.9),
        ranked(far_neighbour, 0.3, vector_rank=None, expanded_from=source.id),
        ranked(far_ranked, 0.2, vector_rank=40)])
    assert reasons(packer) == [(source.id, "episode_match"),
                               (far_neighbour.id, "neighbour_expansion"),
                               (far_ranked.id, "below_relevance_floor")]
    assert packer.decisions[1].expanded_from == source.id


def test_fused_trace_carries_arm_ranks_and_the_fused_score() -> None:
    f, blocked = fact("kept"), fact("in conflict", conflict=True)
    packer = Packer(budget=900)
    packer.add_fused([ranked(f, 0.07, vector_rank=3, text_arm_rank=1),
                      ranked(blocked, 0.05, vector_rank=None, text_arm_rank=2)])
    kept, hidden = packer.decisions
    assert (kept.score, kept.vector_rank, kept.text_arm_rank) == (0.07, 3, 1)
    assert kept.similarity == f.similarity
    assert (hidden.action, hidden.score, hidden.text_arm_rank) == ("blocked", None, 2)


def test_fused_keeps_the_fact_rules() -> None:
    expired = fact("old news", volatility="ephemeral", horizon_passed=True)
    unconfirmed = fact("slow and old", volatility="slow", horizon_passed=True)
    far = fact("far", distance=0.9)
    packer = Packer(budget=900, max_distance=0.5)
    packer.add_fused([ranked(expired, 0.3), ranked(unconfirmed, 0.2), ranked(far, 0.1)])
    assert [r for _, r in reasons(packer)] == [
        "volatility_expired", "top_score", "below_relevance_floor"]
    packet = packer.packet(missing_purpose=False)
    assert [f.unconfirmed for f in packet.facts] == [True]
    assert packet.warnings[0].startswith("volatility_expired: 1 fact(s)")

