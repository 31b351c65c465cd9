"""Every rule of the assembler (docs/spec.md §4) on a real PostgreSQL + pgvector.

Facts are seeded with chosen embeddings and the query vector is given directly, so each test
controls which candidate wins and why. The real embedder is exercised in
``test_assembler_language.py``. First the rules any ranking keeps (hard filters, budget,
recall floor, volatility, trace, hostile input), then the fused ranking's own (one list, idf
text arm over facts and events, neighbours, trace ranks).
"""

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from datetime import timedelta
from uuid import UUID

import numpy as np
import psycopg
import pytest

from haki.assembler import DEFAULT_CONFIG, Assembly, RetrievalConfig, arms
from haki.assembler.fusion import rrf_score
from haki.db import Database
from haki.errors import BudgetExceeded, MissingScope, ValidationFailed
from haki.models import ContextRequest
from haki.text import fact_text
from haki.validation import parse
from haki_local.protocol import count_protocol
from tests.integration.conftest import NOW, Asker, Seeder, blend, trace_rows, unit_vector

Q = unit_vector(1)
FUSED = DEFAULT_CONFIG


def block_tokens(*lines: str) -> int:
    """The estimate of a block holding ``lines`` (a header is as long on any day)."""
    return len("\n".join(["<haki_memory>", *lines, "</haki_memory>"])) // 4


def close(seed: int, weight: float = 0.2) -> np.ndarray:
    """A vector near the query (cosine falls as ``weight`` grows)."""
    return blend(Q, unit_vector(1000 + seed), weight)


def served(assembly: Assembly) -> list[UUID]:
    return [f.id for f in assembly.response.packet.facts]


def decisions_by_fact(conn: psycopg.Connection, assembly: Assembly) -> dict[UUID, dict]:
    return {r["fact_id"]: r for r in trace_rows(conn, assembly.response.trace_id)
            if r["fact_id"] is not None}


# ----------------------------------------------------------------- hard filters


def test_only_active_facts_are_candidates(
    seed: Seeder, ask: Asker, owner_conn: psycopg.Connection,
) -> None:
    active = seed.fact("note", "the active one", close(1))
    others = [seed.fact("note", f"a {status} one", close(2), status=status)
              for status in ("candidate", "superseded", "disputed", "disabled", "deleted")]
    result = ask("note", Q)
    assert served(result) == [active]
    traced = decisions_by_fact(owner_conn, result)
    assert not set(others) & set(traced), "filtered before phase 1, so never traced"


def test_exact_scope_only(
    seed: Seeder, ask: Asker, owner_conn: psycopg.Connection
) -> None:
    mine = seed.fact("note", "alice's own", close(1))
    for subject in ("alice ", "Alice", "alice2", "alic"):
        seed.fact("note", f"belongs to {subject!r}", close(2), subject_id=subject)
    other_project = Seeder(owner_conn, seed.project_id + "-other")
    other_project.fact("note", "same subject, other project", close(3))
    result = ask("note", Q)
    assert served(result) == [mine]
    assert len(decisions_by_fact(owner_conn, result)) == 1


def test_valid_to_past_is_filtered_future_and_null_are_served(
    seed: Seeder, ask: Asker
) -> None:
    past = seed.fact("note", "expired yesterday", close(1), valid_to=NOW - timedelta(days=1))
    future = seed.fact("note", "valid until next year", close(2),
                       valid_to=NOW + timedelta(days=365))
    open_ended = seed.fact("note", "no end", close(3))
    result = ask("note", Q)
    assert set(served(result)) == {future, open_ended}
    assert past not in served(result)


def test_open_conflict_is_blocked_resolved_is_served(
    seed: Seeder, ask: Asker, owner_conn: psycopg.Connection) -> None:
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


# ----------------------------------------------------------------- budget


def test_budget_exact_fit_and_one_short(
    seed: Seeder, ask: Asker, owner_conn: psycopg.Connection,
) -> None:
    value = "French, for every invoice and letter"
    fact = seed.fact("preferred_language", value, close(1))
    tokens = block_tokens(f"[f1] {fact_text('preferred_language', value)}")
    fits = ask("x", Q, budget=tokens)
    assert served(fits) == [fact] and fits.response.token_count == tokens
    short = ask("x", Q, budget=tokens - 1)
    assert served(short) == []
    row = decisions_by_fact(owner_conn, short)[fact]
    assert (row["action"], row["reason_code"], row["tokens"]) == ("excluded", "over_budget", tokens)
    assert short.response.packet.empty_reason == "all_filtered"


def test_budget_one_packs_nothing_bigger(
    seed: Seeder, ask: Asker, owner_conn: psycopg.Connection,
) -> None:
    seed.fact("note", "a fact of several tokens", close(1))
    seed.event("conversation.message", {"text": "a long enough message"}, close(2))
    result = ask("x", Q, budget=1)
    packet = result.response.packet
    assert packet.facts == [] and packet.episodes == [] and result.response.token_count == 0
    rows = trace_rows(owner_conn, result.response.trace_id)
    assert {r["reason_code"] for r in rows} == {"over_budget"} and len(rows) == 2


def test_a_fact_that_does_not_fit_does_not_stop_smaller_ones(
    seed: Seeder, ask: Asker) -> None:
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
    seed: Seeder, ask: Asker, owner_conn: psycopg.Connection) -> None:
    near = seed.fact("note", "near", close(1, 0.1))
    far = seed.fact("note", "far away", unit_vector(500))
    far_event = seed.event("conversation.message", {"text": "far"}, unit_vector(501))
    result = ask("x", Q, config=replace(FUSED, recall_max_distance=0.3))
    assert served(result) == [near]
    rows = trace_rows(owner_conn, result.response.trace_id)
    gated = {r["fact_id"] or r["event_id"] for r in rows
             if r["reason_code"] == "below_relevance_floor"}
    assert gated == {far, far_event}


def test_all_gated_gives_no_relevant_memory_with_status_ok(
    seed: Seeder, ask: Asker
) -> None:
    seed.fact("note", "far away", unit_vector(500))
    seed.fact("note", "also far", unit_vector(501))
    packet = ask("x", Q, config=replace(FUSED, recall_max_distance=0.3)).response.packet
    assert packet.facts == [] and packet.empty_reason == "no_relevant_memory"
    assert packet.status == "ok" and packet.warnings == []


def test_empty_scope_is_no_memory(ask: Asker) -> None:
    packet = ask("anything", Q).response.packet
    assert packet.empty_reason == "no_memory" and packet.status == "ok"


# ----------------------------------------------------------------- volatility, warnings


def test_volatility_horizons(
    seed: Seeder, ask: Asker, owner_conn: psycopg.Connection
) -> None:
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
    shorter = replace(FUSED, volatility_horizon_volatile_days=5)
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
    seed: Seeder, ask: Asker, owner_conn: psycopg.Connection) -> None:
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
def test_hostile_queries_never_error(
    seed: Seeder, ask: Asker, query: str
) -> None:
    fact = seed.fact("invoice_language", "French", close(1))
    result = ask(query, Q)
    assert served(result) == [fact]


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
    request = ContextRequest(project_id=project_id, subject_id="alice", query="q")
    for config, expected in ((default, 100), (per_fact, min(rows[0], 1000)), (capped, 200)):
        with app_db.transaction(project_id) as conn:
            arms.nearest_facts(conn, request, config, Q).fetchall()
            assert conn.execute("SHOW hnsw.ef_search").fetchone() == (str(expected),)


def test_fused_nearest_rows_come_back_once_with_their_current_columns(
    seed: Seeder, ask: Asker, owner_conn: psycopg.Connection,
) -> None:
    """A row rewritten since it was inserted (new tuple versions, the dead ones not yet
    vacuumed) comes back once, with its current columns."""
    fact = seed.fact("note", "first wording", close(1, 0.1))
    event = seed.event("conversation.message", {"text": "first turn"}, close(2, 0.1))
    for i in range(3):
        owner_conn.execute("UPDATE facts SET value = %s, confidence = %s WHERE id = %s",
                           (f'"wording {i}"', 0.25 * (i + 1), fact))
        owner_conn.execute("UPDATE events SET payload = %s WHERE id = %s",
                           (f'{{"text": "turn {i}"}}', event))
    assembly = ask("x", Q, config=FUSED)
    packet = assembly.response.packet
    assert [(f.id, f.value, f.confidence) for f in packet.facts] == [(fact, "wording 2", 0.75)]
    assert [(e.event_id, e.excerpt) for e in packet.episodes] == [(event, "turn 2")]
    assert sorted(d["fact_id"] or d["event_id"] for d in trace_rows(
        owner_conn, assembly.response.trace_id)) == sorted([fact, event])


# ----------------------------------------------------------------- fused ranking


def decisions_by_event(conn: psycopg.Connection, assembly: Assembly) -> dict[UUID, dict]:
    return {r["event_id"]: r for r in trace_rows(conn, assembly.response.trace_id)
            if r["event_id"] is not None}


def test_fused_an_episode_can_outrank_a_fact_in_one_budget(
    seed: Seeder, ask: Asker, owner_conn: psycopg.Connection
) -> None:
    fact = seed.fact("note", "a fact of some length here", close(1, 0.4))
    event = seed.event("conversation.message", {"text": "an episode of some length"},
                       close(2, 0.1))
    budget = block_tokens("## 2026-01-01", "[e1] an episode of some length")
    fused = ask("x", Q, budget=budget, config=FUSED)
    assert [e.event_id for e in fused.response.packet.episodes] == [event]
    assert served(fused) == []
    assert decisions_by_fact(owner_conn, fused)[fact]["reason_code"] == "over_budget"


def test_fused_budget_not_a_count_bounds_the_episodes(seed: Seeder, ask: Asker) -> None:
    for i in range(20):
        seed.event("conversation.message", {"text": "word " * 200}, close(i))
    episodes = ask("x", Q, budget=100_000, config=FUSED).response.packet.episodes
    assert len(episodes) == 20
    # Text only (the packet has the kind), cut at 300 characters.
    assert all(e.excerpt == ("word " * 200)[:300] for e in episodes)


def test_fused_vector_depth_follows_the_budget(
    seed: Seeder, ask: Asker, owner_conn: psycopg.Connection
) -> None:
    """The nearest facts and events ranked per call: 96 for a small budget, more for a large
    one (``RetrievalConfig.vector_depth``), merged from both kinds by distance."""
    facts = [seed.fact("note", f"fact {i}", close(i, 0.05 + 0.002 * i)) for i in range(120)]
    events = [seed.event("conversation.message", {"text": f"turn {i}"},
                         close(500 + i, 0.06 + 0.002 * i)) for i in range(60)]
    depths = {}
    for budget in (900, 3000):
        rows = trace_rows(owner_conn, ask("x", Q, budget=budget, config=FUSED).response.trace_id)
        ranks = sorted(r["vector_rank"] for r in rows if r["vector_rank"] is not None)
        assert ranks == list(range(1, len(ranks) + 1))
        depths[budget] = len(ranks)
    # 96 at 900 tokens; at 3,000 the depth (192) exceeds the scope: every fact and event.
    assert depths == {900: 96, 3000: len(facts) + len(events)}


def test_text_arm_knows_term_rarity(seed: Seeder, ask: Asker,
                                owner_conn: psycopg.Connection) -> None:
    """Ten facts say "invoice" twice, one event says "zanzibar" once. For the question
    "invoice zanzibar" a rank without term rarity puts the facts first (two hits, higher
    term frequency, as ts_rank_cd does); idf puts the rare word first."""
    for i in range(10):
        seed.fact("invoice_note", f"invoice {i} invoice", unit_vector(3000 + i))
    rare = seed.event("conversation.message", {"text": "back from zanzibar"},
                      unit_vector(4000))
    text_only = replace(FUSED, use_vector_arm=False, use_neighbours=False)
    result = ask("invoice zanzibar", Q, budget=5000, config=text_only)
    row = decisions_by_event(owner_conn, result)[rare]
    assert (row["rank"], row["text_arm_rank"], row["vector_rank"]) == (1, 1, None)
    facts = decisions_by_fact(owner_conn, result).values()
    assert len(facts) == 10 and all(r["text_arm_rank"] > 1 for r in facts)


def test_text_arm_reaches_events_the_vector_arm_misses(
    seed: Seeder, ask: Asker, owner_conn: psycopg.Connection
) -> None:
    seed.event("conversation.message", {"text": "nothing in common"}, close(1, 0.1))
    by_text = seed.event("conversation.message", {"text": "the parcel got soaked"},
                         unit_vector(600))
    config = replace(FUSED, vector_top_k=1, use_neighbours=False)
    result = ask("why was the parcel soaked?", Q, config=config)
    assert by_text in [e.event_id for e in result.response.packet.episodes]
    row = decisions_by_event(owner_conn, result)[by_text]
    assert (row["reason_code"], row["vector_rank"], row["text_arm_rank"]) == (
        "episode_match", None, 1)
    assert without_text_arm_misses(ask, config, by_text)


def test_a_question_naming_a_speaker_finds_their_messages(
    seed: Seeder, ask: Asker, owner_conn: psycopg.Connection
) -> None:
    """The speaker's name is searched with a message's text; a record's own ``name`` field is
    searched as before; a name that is not a message's speaker is not invented."""
    ana = seed.event("conversation.message",
                     {"role": "user", "name": "Ana", "text": "I finally went hiking"},
                     unit_vector(700))
    seed.event("conversation.message", {"role": "user", "name": "Ben", "text": "me too"},
               unit_vector(701))
    record = seed.event("crm.contact", {"role": "CTO", "name": "Ana"}, unit_vector(702))
    untagged = seed.event("ticket.opened", {"name": "Ana", "text": "printer jam"},
                          unit_vector(703))
    text_only = replace(FUSED, use_vector_arm=False, use_neighbours=False)
    rows = decisions_by_event(owner_conn, ask("what did Ana say", Q, config=text_only))
    assert {ana, record} <= set(rows) and untagged not in rows
    assert all(row["text_arm_rank"] is not None for row in rows.values())


def test_a_question_finds_other_forms_of_its_words_in_short_texts(
    seed: Seeder, ask: Asker, owner_conn: psycopg.Connection
) -> None:
    """A chat turn is stemmed, so "hikes" finds "hiking"; a long text keeps its words as
    written, so it is found by the word itself and not by its other forms."""
    turn = seed.event("conversation.message", {"role": "user", "text": "we went hiking"},
                      unit_vector(720))
    long_text = "hiking " + "logs " * 120
    document = seed.event("conversation.message", {"role": "assistant", "text": long_text},
                          unit_vector(721))
    text_only = replace(FUSED, use_vector_arm=False, use_neighbours=False)
    assert set(decisions_by_event(owner_conn, ask("how often do they hike?", Q,
                                                  config=text_only))) == {turn}
    assert set(decisions_by_event(owner_conn, ask("any hiking lately?", Q,
                                                  config=text_only))) == {turn, document}


def without_text_arm_misses(ask: Asker, config: RetrievalConfig, event: UUID) -> bool:
    result = ask("why was the parcel soaked?", Q, config=replace(config, use_text_arm=False))
    return event not in [e.event_id for e in result.response.packet.episodes]


def test_idf_statistics_follow_every_write(
    seed: Seeder, owner_conn: psycopg.Connection, app_db: Database, project_id: str
) -> None:
    def stats() -> tuple[tuple | None, dict[str, tuple[int, int]]]:
        scope = owner_conn.execute(
            "SELECT fact_docs, event_docs FROM text_scope_stats "
            "WHERE project_id = %s AND subject_id = 'alice'", (project_id,)).fetchone()
        terms = owner_conn.execute(
            "SELECT term, fact_docs, event_docs FROM text_term_stats "
            "WHERE project_id = %s AND subject_id = 'alice'", (project_id,)).fetchall()
        return scope, {t: (f, e) for t, f, e in terms}

    kept = seed.fact("pet", "cat", close(1))
    dropped = seed.fact("pet", "dog", close(2))
    seed.event("conversation.message", {"text": "my cat sleeps"}, close(3))
    scope, terms = stats()
    # Documents per scope; per lexeme, the facts ("pet" + value) and events holding it.
    assert scope == (2, 1)
    assert terms["cat"] == (1, 1) and terms["pet"] == (2, 0) and terms["dog"] == (1, 0)
    owner_conn.execute("UPDATE facts SET status = 'disabled' WHERE id = %s", (dropped,))
    scope, terms = stats()
    assert scope == (1, 1) and "dog" not in terms and terms["pet"] == (1, 0)
    owner_conn.execute("UPDATE facts SET value = '\"kitten\"' WHERE id = %s", (kept,))
    _, terms = stats()
    assert terms["kitten"] == (1, 0) and terms["cat"] == (0, 1)
    owner_conn.execute("DELETE FROM events WHERE project_id = %s", (project_id,))
    owner_conn.execute("DELETE FROM facts WHERE project_id = %s", (project_id,))
    assert stats() == (None, {}), "forgetting a scope leaves none of its words behind"
    denied = pytest.raises(psycopg.errors.InsufficientPrivilege)
    with app_db.transaction(project_id) as conn, denied:
        conn.execute("SELECT count(*) FROM text_term_stats")


def _turns(seed: Seeder, count: int, *, best: int) -> list[UUID]:
    """``count`` events a minute apart; only turn ``best`` is near the query."""
    return [seed.event("conversation.message", {"text": f"turn {i}"},
                       close(i, 0.1) if i == best else unit_vector(700 + i),
                       occurred_at=NOW - timedelta(minutes=count - i))
            for i in range(count)]


def test_neighbours_come_in_around_the_best_episode(
    seed: Seeder, ask: Asker, owner_conn: psycopg.Connection
) -> None:
    turns = _turns(seed, 7, best=3)
    # The neighbour share alone (the turns share a session, whose share is tested apart).
    config = replace(FUSED, vector_top_k=1, use_text_arm=False, session_share=0.0)
    result = ask("x", Q, config=config)
    # Decided best first; shown in the order they were said.
    assert [e.event_id for e in result.response.packet.episodes] == turns[1:6]
    rows = decisions_by_event(owner_conn, result)
    assert sorted(rows, key=lambda event: rows[event]["ordinal"]) == [
        turns[3], *sorted([turns[2], turns[4]]), *sorted([turns[1], turns[5]])]
    source = rows[turns[3]]
    assert (source["reason_code"], source["vector_rank"]) == ("episode_match", 1)
    for offset in (1, 2):
        for neighbour in (turns[3 - offset], turns[3 + offset]):
            row = rows[neighbour]
            assert (row["reason_code"], row["expanded_from"]) == (
                "neighbour_expansion", turns[3])
            assert row["vector_rank"] is None and row["text_arm_rank"] is None
            assert row["score"] == pytest.approx(
                config.neighbour_share * source["score"] / offset, rel=1e-5)
    assert turns[0] not in rows and turns[6] not in rows, "two turns each side, no more"
    off = ask("x", Q, config=replace(config, use_neighbours=False))
    assert [e.event_id for e in off.response.packet.episodes] == [turns[3]]


def test_the_trace_provenance_is_a_forest(
    seed: Seeder, ask: Asker, owner_conn: psycopg.Connection
) -> None:
    """Adjacent turns that are all near the query are each other's neighbours and all
    sources: each recorded ``expanded_from`` points up the order, never round a cycle."""
    turns = [seed.event("conversation.message", {"text": f"near turn {i}"},
                        close(i, 0.1 + i / 20), occurred_at=NOW - timedelta(minutes=5 - i))
             for i in range(4)]
    config = replace(FUSED, neighbour_sources=4, use_text_arm=False)
    result = ask("x", Q, budget=5000, config=config)
    parent = {r["event_id"]: r["expanded_from"] for r in trace_rows(
        owner_conn, result.response.trace_id) if r["event_id"] is not None}
    assert set(turns) <= set(parent) and any(parent.values())
    for start in parent:
        path = [start]
        while parent.get(path[-1]) is not None:
            path.append(parent[path[-1]])
            assert len(set(path)) == len(path), f"expanded_from cycle: {path}"


def test_neighbours_of_a_source_beyond_the_nearest_events(
    seed: Seeder, ask: Asker, owner_conn: psycopg.Connection
) -> None:
    """The turns around every episode that can be a neighbour source come before the fusion
    picks its sources: around the ``neighbour_sources`` nearest events (with the nearest
    events) and around the text arm's episodes (with the text arm). Here the second source is
    a text-arm episode that is not among the nearest events, and the turn after the first
    source is a nearest event cut from the vector arm's top (so sent without its payload):
    both bring their turns in, whole."""
    at = [NOW - timedelta(minutes=60 - i) for i in range(8)]
    best = seed.event("conversation.message", {"text": "the best turn"}, close(1, 0.1), at[0])
    after_best = seed.event("conversation.message", {"text": "the turn after the best"},
                            close(2, 0.5), at[1])
    pads = [seed.event("conversation.message", {"text": f"pad {i}"}, unit_vector(700 + i),
                       at[2 + i]) for i in range(3)]
    before = seed.event("conversation.message", {"text": "the turn before"}, unit_vector(720),
                        at[5])
    zebra = seed.event("conversation.message", {"text": "a zebra crossing"}, close(4, 0.6),
                       at[6])
    after = seed.event("conversation.message", {"text": "the turn after"}, unit_vector(710),
                       at[7])
    seed.fact("note", "a close fact", close(3, 0.2))
    # The vector arm keeps 2 rows (the best turn, the fact); the events statement's nearest 2
    # are the best turn and the one after it; 2 sources: the best turn, then the zebra turn.
    config = replace(FUSED, vector_top_k=2, neighbour_sources=2, recall_max_distance=0.0)
    result = ask("zebra", Q, budget=5000, config=config)
    rows = decisions_by_event(owner_conn, result)
    assert (rows[best]["vector_rank"], rows[zebra]["vector_rank"]) == (1, None)
    assert rows[zebra]["text_arm_rank"] == 1
    for neighbour, source in ((after_best, best), (pads[0], best), (before, zebra),
                              (pads[2], zebra), (after, zebra)):
        assert (rows[neighbour]["reason_code"], rows[neighbour]["expanded_from"]) == (
            "neighbour_expansion", source)
    excerpts = {e.event_id: e.excerpt for e in result.response.packet.episodes}
    assert excerpts[after_best] == "the turn after the best"
    assert excerpts[before] == "the turn before" and excerpts[after] == "the turn after"
    # Without the text arm the zebra turn is no candidate, and lends nothing.
    alone = decisions_by_event(owner_conn, ask("zebra", Q, budget=5000,
                                               config=replace(config, use_text_arm=False)))
    assert zebra not in alone and after not in alone and after_best in alone


@pytest.mark.parametrize("durable", [False, True])
def test_the_trace_waits_for_its_flush_only_when_configured(
    seed: Seeder, ask: Asker, app_db: Database, owner_conn: psycopg.Connection,
    monkeypatch: pytest.MonkeyPatch, durable: bool,
) -> None:
    """``trace_durable_commit`` (``HAKI_TRACE_DURABLE_COMMIT``, off by default) is what the
    server applies to the call's own transaction; the trace is committed either way."""
    seed.fact("note", "her manager is Bernard", close(1))
    real = app_db.transaction
    seen: list[str] = []

    @contextmanager
    def observed(*args: object, **kwargs: object) -> Iterator[psycopg.Connection]:
        with real(*args, **kwargs) as conn:  # type: ignore[arg-type]
            yield conn
            seen.append(conn.execute("SHOW synchronous_commit").fetchone()[0])

    monkeypatch.setattr(app_db, "transaction", observed)
    config = FUSED if not durable else replace(FUSED, trace_durable_commit=True)
    assert FUSED.trace_durable_commit is False
    assembly = ask("who is the manager", Q, config=config)
    assert seen == ["on" if durable else "off"]
    assert trace_rows(owner_conn, assembly.response.trace_id)


def test_neighbours_are_not_gated_and_gated_episodes_lend_nothing(
    seed: Seeder, ask: Asker
) -> None:
    turns = _turns(seed, 3, best=1)
    config = replace(FUSED, vector_top_k=1, use_text_arm=False, recall_max_distance=0.3)
    packet = ask("x", Q, config=config).response.packet
    # The far turns around a relevant one come in: expansion is never gated by the floor.
    assert {e.event_id for e in packet.episodes} == set(turns)
    # Asked from far away, the best turn is gated, and its neighbours with it.
    far = ask("x", unit_vector(9999), config=config).response.packet
    assert far.episodes == [] and far.empty_reason == "no_relevant_memory"


def test_fused_trace_ranks_explain_the_fused_score(
    seed: Seeder, ask: Asker, owner_conn: psycopg.Connection
) -> None:
    for i in range(5):
        seed.fact("invoice_note", f"invoice number {i}", close(i, 0.2 + i / 10))
        seed.event("conversation.message", {"text": f"about the invoice {i}"},
                   close(10 + i, 0.3), occurred_at=NOW - timedelta(days=i))
    result = ask("invoice", Q, budget=5000, config=FUSED)
    rows = trace_rows(owner_conn, result.response.trace_id)
    assert len(rows) == 10 and [r["rank"] for r in rows] == list(range(1, 11))
    for r in rows:
        assert r["vector_rank"] is not None and r["text_arm_rank"] is not None
        # Each event is said on a day of its own, so each item is alone in its session and
        # gains the session's share of its own score.
        own = rrf_score(r["vector_rank"], r["text_arm_rank"], FUSED) * (1 + FUSED.session_share)
        if r["expanded_from"] is None:
            assert r["score"] == pytest.approx(own, rel=1e-5)
        else:  # raised by a neighbour's share
            assert r["score"] > own
    assert [r["score"] for r in rows] == sorted((r["score"] for r in rows), reverse=True)


def test_statements_per_call(seed: Seeder, ask: Asker, app_db: Database) -> None:
    for i in range(3):
        seed.fact("note", f"her manager is Bernard {i}", close(i))
        seed.event("conversation.message", {"text": f"Bernard called {i}"}, close(10 + i))
    with (count_protocol(app_db.connection()) as counts,
          count_protocol(app_db.sibling().connection()) as beside):
        ask("who is the manager", Q)
    # The scope, the text arm, the nearest events with their neighbours (their graph's breadth
    # set inside their SQL functions) and the trace; beside it (sibling connection): the scope
    # and the nearest facts.
    assert (counts.statements, beside.statements) == (4, 2)
    # BEGIN, the scope and the text arm (sent before the vector is awaited, read once it is
    # ready), the nearest events with the neighbours, the trace with COMMIT; the facts beside
    # it in one round trip, BEGIN to COMMIT, while the events' is in flight.
    assert counts.round_trips == 3
    assert (beside.round_trips, beside.transaction_control) == (1, 2)
