"""The scale benchmark end to end on tiny data (seconds), so the harness cannot rot: loading,
every probe, the results file and the plots; the naive baseline ranks the exact nearest facts
of the scope."""

import json
import time
import zlib
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import psycopg
import pytest

from benchmarks.loader import database_name, ensure_dataset, prewarm
from benchmarks.naive import nearest_facts_exact
from benchmarks.plans import SMOKE
from benchmarks.scale import run_plan
from benchmarks.synthetic import Generator
from haki.assembler import DEFAULT_CONFIG
from haki.assembler.arms import cosine_distance
from haki.db import Database, Role
from haki.db.connection import connect
from haki.models import ContextRequest
from haki.settings import Settings
from haki_local.admin import tenant_keys
from haki_local.embedded import embedded_role_url


@pytest.fixture(scope="module")
def results(pg_superuser_url: str, tmp_path_factory: pytest.TempPathFactory) -> dict:
    out = tmp_path_factory.mktemp("bench")
    run_plan(SMOKE, superuser_url=pg_superuser_url, settings=Settings(), embedder=None,
             reuse=False, out_dir=out, progress=False)
    return {"dir": out, "json": json.loads((out / "scale-smoke.json").read_text())}


def test_results_file_and_plots_are_written(results: dict) -> None:
    out: Path = results["dir"]
    for name in ("latency_vs_facts-smoke.png", "latency_distribution-smoke.png"):
        assert (out / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    doc = results["json"]
    assert "SYNTHETIC" in doc["data"]
    assert [s["name"] for s in doc["scenarios"]] == [s.name for s in SMOKE.scenarios]
    assert doc["table"][0].startswith("| scenario |")
    assert len(doc["table"]) == 2 + len(SMOKE.scenarios)
    assert len(doc["cpu_table"]) == 2 + len(SMOKE.scenarios)


def test_every_probe_measured_something(results: dict) -> None:
    for s in results["json"]["scenarios"]:
        assert s["ours"]["e2e"]["n"] == s["queries"]
        assert s["naive"]["e2e"]["n"] == s["naive_queries"]
        assert s["ours"]["sql_only"]["p50"] > 0 and s["naive"]["sql_only"]["p50"] > 0
        # Counted on the wire: at least scope, the text arm, the nearest events and the trace
        # (the nearest facts beside them); one BEGIN and one COMMIT; every call waits on the
        # network at least twice.
        assert s["per_call"]["statements_mean"] >= 4
        assert s["per_call"]["transaction_control_mean"] == 2
        assert s["per_call"]["round_trips_mean"] >= 2
        # The edge's key lookup: one round trip for a key new to the process, none cached.
        pc = s["per_call"]
        assert pc["request_round_trips_warm_mean"] == pc["round_trips_mean"] <= 3
        assert pc["request_round_trips_cold_mean"] == pc["round_trips_mean"] + 1
        # One decision row per candidate, written with the call.
        assert s["per_call"]["trace_rows_mean"] == s["per_call"]["candidates_mean"] > 0
        # Tiny scopes are scanned exactly: the vector arm returns the true top-k.
        assert s["vector_recall"]["mean"] == 1.0
        assert s["throughput"]["concurrent"]["calls"] == SMOKE.throughput_calls
        # CPU per call: the calling thread's, and the server's read from /proc (local server).
        cpu = s["ours"]["cpu"]
        assert cpu["client"] > 0 and cpu["database"] is not None and cpu["database"] >= 0
        assert cpu["total"] == pytest.approx(
            cpu["client"] + cpu["embedding"] + cpu["database"], abs=0.02)
        assert cpu["cores_busy"] == pytest.approx(cpu["total"] / cpu["e2e_mean"], abs=0.01)


def test_warm_up_calls_ask_other_questions_than_the_timed_ones(
    pg_superuser_url: str, results: dict
) -> None:
    scenario = SMOKE.scenarios[0]
    doc = results["json"]["scenarios"][0]
    assert doc["warmup_queries"] == scenario.warmup_queries == 2
    database = database_name(scenario.dataset)
    owner = embedded_role_url(pg_superuser_url, Role.OWNER, database)
    with connect(owner) as conn:
        queries = [row[0] for row in conn.execute(
            "SELECT query FROM context_calls ORDER BY created_at").fetchall()]
    # The table is emptied before the scenario: its first calls are the warm-up's, then the
    # plan's warm-up (the first timed question, untimed), then the timed loop.
    timed = [q.text for q in Generator(scenario.dataset, now=datetime.now(UTC)).queries(
        scenario.target_scopes(), scenario.queries, salt=zlib.crc32(scenario.name.encode()))]
    warm, first = scenario.warmup_queries, scenario.warmup_queries + SMOKE.warmup
    assert queries[warm:first] == timed[:SMOKE.warmup]
    assert queries[first:first + scenario.queries] == timed
    assert queries[:warm] != timed[:warm]


def test_a_loaded_data_set_is_reused_only_when_its_spec_matches(
    pg_superuser_url: str, results: dict
) -> None:
    spec = SMOKE.scenarios[0].dataset
    now = datetime.now(UTC)
    assert ensure_dataset(pg_superuser_url, spec, reuse=True, now=now, progress=False).reused
    changed = replace(spec, seed=spec.seed + 1)
    report = ensure_dataset(pg_superuser_url, changed, reuse=True, now=now, progress=False)
    assert not report.reused and report.facts == changed.total_facts


def test_naive_baseline_ranks_the_exact_nearest_facts_of_the_scope(
    pg_superuser_url: str, results: dict
) -> None:
    scenario = SMOKE.scenarios[1]
    url = embedded_role_url(pg_superuser_url, Role.APP, database_name(scenario.dataset))
    owner_url = embedded_role_url(pg_superuser_url, Role.OWNER, database_name(scenario.dataset))
    question = Generator(scenario.dataset, now=datetime.now(UTC)).queries(
        scenario.target_scopes(), 1, salt=99)[0]
    request = ContextRequest(project_id=question.project_id, subject_id=question.subject_id,
                             query=question.text)
    owner = Database(owner_url)
    try:
        key_hash = tenant_keys(owner, [question.project_id], org_id="o", label="t")[
            question.project_id]
    finally:
        owner.close()
    with connect(url) as conn, conn.transaction():
        conn.execute("SELECT set_config('haki.key_hash', %s, true)", (key_hash,))
        naive = [(r["id"], r["distance"]) for r in nearest_facts_exact(
            conn, request, DEFAULT_CONFIG, question.vector, depth=50).fetchall()]
    # Every active fact of the scope, its cosine distance computed here.
    with connect(owner_url) as conn:
        rows = conn.execute(
            "SELECT id, embedding FROM facts WHERE project_id = %s AND subject_id = %s "
            "AND status = 'active' AND (valid_to IS NULL OR valid_to > now())",
            (question.project_id, question.subject_id)).fetchall()
    query = np.asarray(question.vector, dtype=np.float64)
    exact = sorted((cosine_distance(query, embedding.to_numpy()), fact_id)
                   for fact_id, embedding in rows)
    assert len(rows) > 50 and len(naive) == 50
    assert [fact_id for fact_id, _ in naive] == [fact_id for _, fact_id in exact[:50]]
    assert [d for _, d in naive] == pytest.approx([d for d, _ in exact[:50]], abs=1e-6)


def test_prewarm_reads_rows_and_indexes_through_shared_buffers(
        results: dict, pg_superuser_url: str) -> None:
    spec = SMOKE.scenarios[0].dataset
    owner_url = embedded_role_url(pg_superuser_url, Role.OWNER, database_name(spec))
    tables = ["facts", "events"]
    indexes = ["facts_scope_idx", "events_scope_idx", "facts_pkey", "events_pkey",
               "facts_search_vector_gin", "events_search_vector_gin", "text_term_stats_pkey"]

    def blocks(conn: psycopg.Connection) -> dict[str, int]:
        """Pages read or found in shared buffers so far, per table's heap and per index."""
        heap = conn.execute(
            "SELECT relname, coalesce(heap_blks_read, 0) + coalesce(heap_blks_hit, 0) "
            "FROM pg_statio_user_tables WHERE relname = ANY (%s)", (tables,)).fetchall()
        index = conn.execute(
            "SELECT indexrelname, coalesce(idx_blks_read, 0) + coalesce(idx_blks_hit, 0) "
            "FROM pg_statio_user_indexes WHERE indexrelname = ANY (%s)", (indexes,)).fetchall()
        return dict(heap + index)

    with connect(owner_url) as conn:
        pages = dict(conn.execute(
            "SELECT relname, pg_relation_size(oid) / current_setting('block_size')::int "
            "FROM pg_class WHERE relname = ANY (%s)", (tables + indexes,)).fetchall())
        before = blocks(conn)
        prewarm_s = prewarm(owner_url)

        def read_enough(after: dict[str, int]) -> bool:
            # Every heap page at least once; at least half of each index's pages (a full
            # scan reads the leaves, not every inner page; a heap scan would read none).
            return (all(after[t] - before[t] >= pages[t] for t in tables)
                    and all(after[i] - before[i] >= pages[i] // 2 for i in indexes))

        # Its backend's counters reach the statistics when it exits, just after the close.
        deadline = time.monotonic() + 5
        while True:
            conn.execute("SELECT pg_stat_clear_snapshot()")
            after = blocks(conn)
            if read_enough(after) or time.monotonic() > deadline:
                break
            time.sleep(0.05)
    assert prewarm_s > 0
    assert all(pages[name] > 0 for name in tables + indexes)
    assert read_enough(after), {name: (after[name] - before[name], pages[name])
                                for name in tables + indexes}
    assert all(s["dataset"]["prewarm_s"] >= 0 for s in results["json"]["scenarios"])
