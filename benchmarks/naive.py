"""The scale benchmark's naive baseline: a context call without an index.

Every active fact of the scope gets its exact cosine distance to the question — the served
vector arm over facts (``haki.assembler.arms.nearest_facts``: the same filters, and the same
per-fact rules for conflicts and volatility) planned with index scans off, so no HNSW graph is
searched: the scope is read through its btree bitmap or sequentially, and every row is scored
and sorted. The nearest :data:`DEPTH` facts, by similarity, are packed by the core's packer
and traced by its trace write, so a naive call's packet and trace have a served call's shape.
It lives in the benchmarks only, never in the deployed code.
"""

import time
from dataclasses import replace

import numpy as np
import psycopg

from haki.assembler import Assembly, RetrievalConfig, arms
from haki.assembler.assemble import Embed, respond, summarize
from haki.assembler.candidates import FactCandidate, Ranked
from haki.assembler.packing import Packer
from haki.db import Database
from haki.models import ContextRequest

#: Facts ranked and traced per call (the served arm's deepest list).
DEPTH = 256

#: Index scans off for the rest of the transaction: no HNSW graph, no ordered index read.
NO_INDEX_SCANS = "SELECT set_config('enable_indexscan', 'off', true)"


def nearest_facts_exact(conn: psycopg.Connection, request: ContextRequest,
                        config: RetrievalConfig, vector: np.ndarray,
                        depth: int = DEPTH) -> arms.Cursor:
    """Send the nearest ``depth`` active facts of the scope, every one of them scored (in a
    transaction of ``conn``: the planner setting lasts until it ends)."""
    conn.execute(NO_INDEX_SCANS)
    exact = replace(config, vector_top_k=depth, vector_top_k_min=depth, use_vector_arm=True)
    return arms.nearest_facts(conn, request, exact, vector)


def ranked(rows: arms.Rows) -> list[Ranked]:
    """The rows in their order, each scored by its cosine similarity."""
    return [Ranked(FactCandidate.from_row(row), rank, None, 1.0 - row["distance"])
            for rank, row in enumerate(rows, start=1)]


def assemble_naive(request: ContextRequest, embed: Embed, *, db: Database,
                   config: RetrievalConfig) -> Assembly:
    """One context call the naive way, its trace written as a served call's is. The
    question is embedded first: nothing overlaps."""
    started = time.perf_counter()
    vector = embed()
    timings = {"embed": round((time.perf_counter() - started) * 1000.0, 3)}
    packer = Packer(budget=request.budget_tokens, max_distance=config.recall_max_distance)
    with db.transaction(request.project_id, pipeline=True,
                        durable=config.trace_durable_commit) as conn:
        packer.add_fused(ranked(nearest_facts_exact(conn, request, config, vector).fetchall()))
        response = respond(conn, request, packer, started=started, timings_ms=timings)
    return summarize(response, packer, started=started, timings_ms=timings)
