"""Every rule of the assembler (docs/spec.md §4) on a real PostgreSQL + pgvector.

Facts are seeded with chosen embeddings and the query vector is given directly, so each test
controls which candidate wins and why. The real embedder is exercised in
``test_assembler_language.py``.
"""

from dataclasses import replace
from datetime import timedelta
from uuid import UUID

import numpy as np
import psycopg
import pytest

from haki.assembler import DEFAULT_CONFIG, Assembly, RetrievalConfig, sql
from haki.assembler.retrieval import query_parameters
from haki.db import Database
from haki.errors import BudgetExceeded, MissingScope, ValidationFailed
from haki.models import ContextRequest
from haki.text import estimate_tokens, fact_text
from haki.validation import parse
from tests.integration.conftest import NOW, Asker, Seeder, blend, trace_rows, unit_vector

Q = unit_vector(1)


def close(seed: int, weight: float = 0.2) -> np.ndarray:
    """A vector near the query (cosine falls as ``weight`` grows)."""
    return blend(Q, unit_vector(1000 + seed), weight)


def served(assembly: Assembly) -> list[UUID]:
    return [f.id for f in assembly.response.packet.facts]


def decisions_by_fact(conn: psycopg.Connection, assembly: Assembly) -> dict[UUID, dict]:
    return {r["fact_id"]: r for r in trace_rows(conn, assembly.response.trace_id)
            if r["fact_id"] is not None}


# ----------------------------------------------------------------- hard filters


def test_only_active_facts_are_candidates(seed: Seeder, ask: Asker,
                                          owner_conn: psycopg.Connection) -> None:
    active = seed.fact("note", "the active one", close(1))
    others = [seed.fact("note", f"a {status} one", close(2), status=status)
              for status in ("candidate", "superseded", "disputed", "disabled", "deleted")]
    result = ask("note", Q)
    assert served(result) == [active]
    traced = decisions_by_fact(owner_conn, result)
    assert not set(others) & set(traced), "filtered before phase 1, so never traced"


def test_exact_scope_only(seed: Seeder, ask: Asker, owner_conn: psycopg.Connection) -> None:
    mine = seed.fact("note", "alice's own", close(1))
    for subject in ("alice ", "Alice", "alice2", "alic"):
        seed.fact("note", f"belongs to {subject!r}", close(2), subject_id=subject)
    other_project = Seeder(owner_conn, seed.project_id + "-other")
    other_project.fact("note", "same subject, other project", close(3))
    result = ask("note", Q)
    assert served(result) == [mine]
    assert len(decisions_by_fact(owner_conn, result)) == 1


def test_valid_to_past_is_filtered_future_and_null_are_served(seed: Seeder, ask: Asker) -> None:
    past = seed.fact("note", "expired yesterday", close(1), valid_to=NOW - timedelta(days=1))
    future = seed.fact("note", "valid until next year", close(2),
                       valid_to=NOW + timedelta(days=365))
    open_ended = seed.fact("note", "no end", close(3))
    result = ask("note", Q)
    assert set(served(result)) == {future, open_ended}
    assert past not in served(result)


def test_open_conflict_is_blocked_resolved_is_served(
    seed: Seeder, ask: Asker, owner_conn: psycopg.Connection
) -> None:
    a = seed.fact("city", "lives in Lyon", close(1))
    b = seed.fact("city", "lives in Nantes", close(2))
    c = seed.fact("job", "works as a nurse", close(3))
    d = seed.fact("job", "works as a teacher", close(4))
    seed.conflict([a, b], status="open")
    seed.conflict([c, d], status="resolved")
    result = ask("where", Q)
    assert set(served(result)) == {c, d}
    traced = decisions_by_fact(owner_conn, result)
    for blocked in (a, b):
        row = traced[blocked]
        assert (row["action"], row["reason_code"]) == ("blocked", "conflict_open")
        assert row["score"] is None and row["tokens"] is None, "never scored nor packed"
    packet = result.response.packet
    assert "open_conflict: 2 fact(s) hidden pending conflict resolution" in packet.warnings
    assert packet.status == "degraded"


# ----------------------------------------------------------------- scoring


def test_full_text_alone_decides_between_equals(
    seed: Seeder, ask: Asker, owner_conn: psycopg.Connection
) -> None:
    same = blend(Q, unit_vector(77), 0.5)
    loser = seed.fact("forecast", "sunny weather tomorrow", same)
    winner = seed.fact("invoice_language", "French", same)
    result = ask("which language for the invoice?", Q)
    assert served(result)[:2] == [winner, loser]
    traced = decisions_by_fact(owner_conn, result)
    assert traced[winner]["text_rank"] > 0 and traced[loser]["text_rank"] == 0
    assert traced[winner]["similarity"] == pytest.approx(traced[loser]["similarity"])


def test_recency_alone_decides_between_equals(
    seed: Seeder, ask: Asker, owner_conn: psycopg.Connection
) -> None:
    same = blend(Q, unit_vector(78), 0.5)
    old = seed.fact("note", "same words", same, recorded_from=NOW - timedelta(days=300))
    new = seed.fact("note", "same words", same, recorded_from=NOW - timedelta(days=2))
    result = ask("unrelated", Q)
    assert served(result)[:2] == [new, old]
    traced = decisions_by_fact(owner_conn, result)
    assert traced[new]["recency"] == pytest.approx(2.718281828 ** (-2 / 30), rel=1e-3)
    assert traced[old]["recency"] < 1e-3


def test_score_is_the_documented_blend(seed: Seeder, ask: Asker,
                                       owner_conn: psycopg.Connection) -> None:
    seed.fact("invoice_language", "French", close(1))
    seed.fact("note", "nothing shared", close(2, 0.6), recorded_from=NOW - timedelta(days=40))
    result = ask("invoice language", Q)
    config = RetrievalConfig()
    for row in decisions_by_fact(owner_conn, result).values():
        expected = (config.weight_similarity * row["similarity"]
                    + config.weight_text * row["text_rank"]
                    + config.weight_recency * row["recency"])
        assert row["score"] == pytest.approx(expected, abs=1e-5)


def test_fact_in_neither_top_k_is_never_served(
    seed: Seeder, ask: Asker, owner_conn: psycopg.Connection
) -> None:
    """The documented trade-off: recency alone cannot bring a fact in."""
    for i in range(70):
        seed.fact("note", f"filler entry {i}", close(i, 0.3),
                  recorded_from=NOW - timedelta(days=400))
    fresh_but_far = seed.fact("note", "just recorded", unit_vector(999), recorded_from=NOW)
    result = ask("zzz", Q, budget=5000)
    traced = decisions_by_fact(owner_conn, result)
    assert len(traced) == 64
    assert fresh_but_far not in traced and fresh_but_far not in served(result)


def test_candidates_are_the_union_of_both_arms(
    seed: Seeder, ask: Asker, owner_conn: psycopg.Connection
) -> None:
    for i in range(70):
        seed.fact("note", f"filler entry {i}", close(i, 0.3))
    by_text = seed.fact("invoice_language", "French", unit_vector(555))
    result = ask("invoice language", Q, budget=5000)
    traced = decisions_by_fact(owner_conn, result)
    assert len(traced) == 65 and by_text in traced


# ----------------------------------------------------------------- budget


def test_budget_exact_fit_and_one_short(seed: Seeder, ask: Asker,
                                        owner_conn: psycopg.Connection) -> None:
    value = "French, for every invoice and letter"
    fact = seed.fact("preferred_language", value, close(1))
    tokens = estimate_tokens(fact_text("preferred_language", value))
    fits = ask("x", Q, budget=tokens)
    assert served(fits) == [fact] and fits.response.token_count == tokens
    short = ask("x", Q, budget=tokens - 1)
    assert served(short) == []
    row = decisions_by_fact(owner_conn, short)[fact]
    assert (row["action"], row["reason_code"], row["tokens"]) == ("excluded", "over_budget", tokens)
    assert short.response.packet.empty_reason == "all_filtered"


def test_budget_one_packs_nothing_bigger(seed: Seeder, ask: Asker,
                                         owner_conn: psycopg.Connection) -> None:
    seed.fact("note", "a fact of several tokens", close(1))
    seed.event("conversation.message", {"text": "a long enough message"}, close(2))
    result = ask("x", Q, budget=1)
    packet = result.response.packet
    assert packet.facts == [] and packet.episodes == [] and result.response.token_count == 0
    rows = trace_rows(owner_conn, result.response.trace_id)
    assert {r["reason_code"] for r in rows} == {"over_budget"} and len(rows) == 2


def test_a_fact_that_does_not_fit_does_not_stop_smaller_ones(
    seed: Seeder, ask: Asker
) -> None:
    big = seed.fact("biography", "x" * 400, close(1, 0.1))
    small = seed.fact("age", "42", close(2, 0.3))
    result = ask("x", Q, budget=20)
    assert served(result) == [small] and big not in served(result)


@pytest.mark.parametrize("budget", [0, -5, 1.5, "100", True, 100_001, None])
def test_invalid_budget_is_budget_exceeded(budget: object) -> None:
    body = {"project_id": "p", "subject_id": "s", "query": "q", "budget_tokens": budget}
    with pytest.raises(BudgetExceeded) as info:
        parse(ContextRequest, body)
    assert info.value.code == "budget_exceeded" and info.value.status == 422


def test_request_validation_codes() -> None:
    with pytest.raises(MissingScope):
        parse(ContextRequest, {"project_id": "p", "query": "q"})
    with pytest.raises(MissingScope):  # empty is absent, as over HTTP
        parse(ContextRequest, {"project_id": "", "subject_id": "s", "query": "q"})
    with pytest.raises(ValidationFailed):
        parse(ContextRequest, {"project_id": "p", "subject_id": "s", "query": ""})
    with pytest.raises(ValidationFailed):
        parse(ContextRequest, {"project_id": "p", "subject_id": "s", "query": "q", "x": 1})
    assert parse(ContextRequest,
        {"project_id": "p", "subject_id": "s", "query": "q"}).budget_tokens == 900


# ----------------------------------------------------------------- recall floor


def test_floor_off_serves_far_facts(seed: Seeder, ask: Asker) -> None:
    far = seed.fact("note", "far away", unit_vector(500))
    assert served(ask("x", Q)) == [far]


def test_floor_on_excludes_far_facts_and_episodes(
    seed: Seeder, ask: Asker, owner_conn: psycopg.Connection
) -> None:
    near = seed.fact("note", "near", close(1, 0.1))
    far = seed.fact("note", "far away", unit_vector(500))
    far_event = seed.event("conversation.message", {"text": "far"}, unit_vector(501))
    result = ask("x", Q, config=replace(DEFAULT_CONFIG, recall_max_distance=0.3))
    assert served(result) == [near]
    rows = trace_rows(owner_conn, result.response.trace_id)
    gated = {r["fact_id"] or r["event_id"] for r in rows
             if r["reason_code"] == "below_relevance_floor"}
    assert gated == {far, far_event}


def test_all_gated_gives_no_relevant_memory_with_status_ok(seed: Seeder, ask: Asker) -> None:
    seed.fact("note", "far away", unit_vector(500))
    seed.fact("note", "also far", unit_vector(501))
    packet = ask("x", Q, config=replace(DEFAULT_CONFIG, recall_max_distance=0.3)).response.packet
    assert packet.facts == [] and packet.empty_reason == "no_relevant_memory"
    assert packet.status == "ok" and packet.warnings == []


def test_empty_scope_is_no_memory(ask: Asker) -> None:
    packet = ask("anything", Q).response.packet
    assert packet.empty_reason == "no_memory" and packet.status == "ok"


# ----------------------------------------------------------------- multi-hop


def _multi_hop_scope(seed: Seeder) -> tuple[UUID, UUID]:
    """64 close fillers (no names), a close fact naming Bernard, a far fact about Bernard."""
    for i in range(64):
        seed.fact("note", f"filler entry {i}", close(i, 0.3))
    manager = seed.fact("manager", "her manager is Bernard", close(900, 0.1))
    linked = seed.fact("phone", "Bernard answers on 0612", unit_vector(901))
    return manager, linked


def test_multi_hop_brings_a_fact_linked_by_an_entity(
    seed: Seeder, ask: Asker, owner_conn: psycopg.Connection
) -> None:
    manager, linked = _multi_hop_scope(seed)
    result = ask("who is the manager", Q, budget=5000)
    assert manager in served(result) and linked in served(result)
    row = decisions_by_fact(owner_conn, result)[linked]
    assert (row["action"], row["reason_code"]) == ("included", "multi_hop_expansion")


def test_multi_hop_is_not_gated_by_the_floor(seed: Seeder, ask: Asker) -> None:
    _, linked = _multi_hop_scope(seed)
    result = ask("who is the manager", Q, budget=5000,
                 config=replace(DEFAULT_CONFIG, recall_max_distance=0.5))
    assert linked in served(result)


def test_multi_hop_skips_entities_named_in_the_query(seed: Seeder, ask: Asker) -> None:
    """With the full-text arm off (it would find Bernard by name), only multi-hop could bring
    the linked fact — and it must not expand on a word the query already contains."""
    _, linked = _multi_hop_scope(seed)
    vector_only = RetrievalConfig(use_text_arm=False)
    assert linked in served(ask("who is the manager", Q, budget=5000, config=vector_only))
    assert linked not in served(ask("is bernard the manager", Q, budget=5000,
                                    config=vector_only))


def test_multi_hop_off_and_without_budget(seed: Seeder, ask: Asker) -> None:
    manager, linked = _multi_hop_scope(seed)
    assert linked not in served(ask("who is the manager", Q, budget=5000,
                                    config=RetrievalConfig(use_multi_hop=False)))
    tight = ask("who is the manager", Q, budget=estimate_tokens("manager: her manager is Bernard"))
    assert served(tight) == [manager]


def test_multi_hop_limits_two_entities_five_facts(
    seed: Seeder, ask: Asker, owner_conn: psycopg.Connection
) -> None:
    for i in range(64):
        seed.fact("note", f"filler entry {i}", close(i, 0.3))
    seed.fact("meeting", "Bernard met Claire, then Bernard and Claire called Zoe",
              close(900, 0.05))
    linked = {name: [seed.fact("contact", f"{name} contact number {i}", unit_vector(2000 + i))
                     for i in range(7)] for name in ("Bernard", "Claire", "Zoe")}
    result = ask("what happened at the meeting", Q, budget=5000)
    hops = [r for r in trace_rows(owner_conn, result.response.trace_id)
            if r["reason_code"] == "multi_hop_expansion"]
    hop_ids = {r["fact_id"] for r in hops}
    assert len(hops) == 10
    assert len(hop_ids & set(linked["Bernard"])) == 5
    assert len(hop_ids & set(linked["Claire"])) == 5
    assert not hop_ids & set(linked["Zoe"])


# ----------------------------------------------------------------- episodes


def test_episodes_come_after_facts_in_the_same_budget(
    seed: Seeder, ask: Asker, owner_conn: psycopg.Connection
) -> None:
    fact = seed.fact("note", "a fact of some length here", close(1))
    event = seed.event("conversation.message", {"text": "an episode of some length"}, close(2))
    fact_tokens = estimate_tokens(fact_text("note", "a fact of some length here"))
    both = ask("x", Q, budget=1000)
    assert [e.event_id for e in both.response.packet.episodes] == [event]
    only_fact = ask("x", Q, budget=fact_tokens)
    assert served(only_fact) == [fact] and only_fact.response.packet.episodes == []
    row = next(r for r in trace_rows(owner_conn, only_fact.response.trace_id) if r["event_id"])
    assert row["reason_code"] == "over_budget"


def test_at_most_eight_episodes_with_300_character_excerpts(
    seed: Seeder, ask: Asker, owner_conn: psycopg.Connection
) -> None:
    for i in range(10):
        seed.event("conversation.message", {"text": "word " * 200}, close(i))
    result = ask("x", Q, budget=100_000)
    episodes = result.response.packet.episodes
    assert len(episodes) == 8
    assert all(len(e.excerpt) == 300 for e in episodes)
    assert episodes[0].excerpt.startswith("conversation.message: word")
    assert len([r for r in trace_rows(owner_conn, result.response.trace_id)
                if r["event_id"]]) == 8


# ----------------------------------------------------------------- volatility, warnings


def test_volatility_horizons(seed: Seeder, ask: Asker, owner_conn: psycopg.Connection) -> None:
    long_ago = NOW - timedelta(days=400)
    stable = seed.fact("a", "stable and old", close(1), volatility="stable",
                       recorded_from=long_ago)
    slow = seed.fact("b", "slow and old", close(2), volatility="slow", recorded_from=long_ago)
    volatile = seed.fact("c", "volatile and old", close(3), volatility="volatile",
                         recorded_from=NOW - timedelta(days=61))
    ephemeral = seed.fact("d", "ephemeral and old", close(4), volatility="ephemeral",
                          recorded_from=NOW - timedelta(days=8))
    reinforced = seed.fact("e", "volatile but reinforced", close(5), volatility="volatile",
                           recorded_from=long_ago, last_reinforced_at=NOW - timedelta(days=3))
    result = ask("x", Q)
    packet = result.response.packet
    assert set(served(result)) == {stable, slow, reinforced}
    assert {f.id for f in packet.facts if f.unconfirmed} == {slow}
    traced = decisions_by_fact(owner_conn, result)
    for expired in (volatile, ephemeral):
        assert traced[expired]["reason_code"] == "volatility_expired"
    assert packet.warnings == [
        "volatility_expired: 2 fact(s) past their volatility horizon were not served"]
    assert packet.status == "degraded"


def test_horizons_are_configurable(seed: Seeder, ask: Asker) -> None:
    fact = seed.fact("c", "volatile, 10 days old", close(1), volatility="volatile",
                     recorded_from=NOW - timedelta(days=10))
    assert served(ask("x", Q)) == [fact]
    shorter = replace(DEFAULT_CONFIG, volatility_horizon_volatile_days=5)
    assert served(ask("x", Q, config=shorter)) == []


def test_missing_purpose_degrades(seed: Seeder, ask: Asker) -> None:
    seed.fact("note", "something", close(1))
    with_purpose = ask("x", Q).response.packet
    without = ask("x", Q, purpose=None).response.packet
    assert (with_purpose.status, with_purpose.warnings) == ("ok", [])
    assert without.status == "degraded"
    assert [w.split(":")[0] for w in without.warnings] == ["missing_purpose"]


# ----------------------------------------------------------------- trace


def test_trace_covers_every_candidate_and_stores_the_packet(
    seed: Seeder, ask: Asker, owner_conn: psycopg.Connection
) -> None:
    a = seed.fact("a", "included one", close(1))
    b = seed.fact("b", "x" * 200, close(2))
    c = seed.fact("c", "blocked one", close(3))
    d = seed.fact("d", "blocked two", close(4))
    seed.conflict([c, d])
    e = seed.event("conversation.message", {"text": "hello"}, close(5))
    result = ask("x", Q, budget=30)
    rows = trace_rows(owner_conn, result.response.trace_id)
    assert [r["ordinal"] for r in rows] == list(range(len(rows)))
    assert {r["fact_id"] or r["event_id"] for r in rows} == {a, b, c, d, e}
    assert result.candidates == len(rows) == 5
    actions = sorted((r["action"], r["reason_code"]) for r in rows)
    assert actions == sorted([("included", "top_score"), ("excluded", "over_budget"),
                              ("blocked", "conflict_open"), ("blocked", "conflict_open"),
                              ("included", "episode_match")])
    call = owner_conn.execute(
        "SELECT packet, token_count, facts_served, candidates FROM context_calls "
        "WHERE trace_id = %s", (result.response.trace_id,)).fetchone()
    assert call is not None
    assert call[0] == result.response.packet.model_dump(mode="json")
    assert call[1:] == (result.response.token_count, 1, 5)


# ----------------------------------------------------------------- hostile input


@pytest.mark.parametrize("query", [
    'the "invoice language" -french or english',
    "'; DROP TABLE facts; --",
    "a & b | !c <-> d :* (e",
    "x" * 10_000,
    "?!?!... ;;; ---",
    "🙂🚀 café naïve 東京",
    "or or or - - \"\"",
    "\\\\ \\' '' \"",
])
def test_hostile_queries_never_error(seed: Seeder, ask: Asker, query: str) -> None:
    fact = seed.fact("invoice_language", "French", close(1))
    result = ask(query, Q)
    assert served(result) == [fact]


def test_text_arm_ranks_at_most_the_cap(
    seed: Seeder, ask: Asker, owner_conn: psycopg.Connection
) -> None:
    for i in range(20):
        seed.fact("invoice_note", f"invoice number {i}", unit_vector(3000 + i))
    text_only = RetrievalConfig(use_vector_arm=False)
    assert len(decisions_by_fact(owner_conn, ask("invoice", Q, budget=5000,
                                                 config=text_only))) == 20
    capped = RetrievalConfig(use_vector_arm=False, text_rank_cap=5)
    assert len(decisions_by_fact(owner_conn, ask("invoice", Q, budget=5000,
                                                 config=capped))) == 5


def test_text_arm_always_ranks_facts_holding_every_term(
    seed: Seeder, ask: Asker, owner_conn: psycopg.Connection
) -> None:
    for i in range(20):
        seed.fact("invoice_note", f"invoice number {i}", unit_vector(3000 + i))
    precise = seed.fact("invoice_language", "French", unit_vector(4000))
    capped = RetrievalConfig(use_vector_arm=False, text_rank_cap=5)
    result = ask("invoice language", Q, budget=5000, config=capped)
    traced = decisions_by_fact(owner_conn, result)
    assert precise in traced and traced[precise]["rank"] == 1
    assert len(traced) == 6


def test_hnsw_breadth_follows_the_table_size(
    seed: Seeder, app_db: Database, owner_conn: psycopg.Connection, project_id: str
) -> None:
    for i in range(300):
        seed.fact("note", f"entry {i}", close(i, 0.5))
    owner_conn.execute("ANALYZE facts")
    rows = owner_conn.execute(
        "SELECT reltuples::int FROM pg_class WHERE oid = 'facts'::regclass").fetchone()
    assert rows is not None and rows[0] >= 300
    default = RetrievalConfig()  # a small table: the minimum breadth
    per_fact = RetrievalConfig(hnsw_rows_per_ef=1)  # pgvector's maximum is 1000
    capped = RetrievalConfig(hnsw_rows_per_ef=1, hnsw_ef_search_max=200)
    for config, expected in ((default, 100), (per_fact, min(rows[0], 1000)), (capped, 200)):
        params = query_parameters(
            ContextRequest(project_id=project_id, subject_id="alice", query="q"), Q, config)
        with app_db.transaction(project_id) as conn:
            conn.execute(sql.PLANNER_SETTINGS, params)
            assert conn.execute("SHOW hnsw.ef_search").fetchone() == (str(expected),)
