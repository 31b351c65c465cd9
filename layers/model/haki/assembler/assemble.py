"""``assemble``: one context call, from the question to the packet and its persisted trace.

Read top to bottom: the call's transaction sends BEGIN, the scope and the text arm (which
needs no vector), and the question is embedded while the server runs them; the text arm's
rows are read once the vector is there. Then both vector arms leave together: the nearest
facts on the handle's second connection, in a read-only transaction of their own under the
same key, and the nearest events on the call's connection; the server searches both at once,
and the call reads the facts when their transaction commits, then the events. The rows are
merged and fused, the packet is packed under the budget, and the trace leaves with the
COMMIT. That is three round trips on the call's connection and one beside it, and no thread.
A call that found no candidate at all asks, in one more round trip, whether the subject is
disabled (every arm serves nothing of a disabled subject), to say so in the packet.
"""

import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import psycopg

from haki.assembler import arms
from haki.assembler.candidates import Ranked
from haki.assembler.config import RetrievalConfig
from haki.assembler.fusion import (
    fuse,
    neighbour_sources,
    propagate,
    weigh_sessions,
    weigh_speakers,
)
from haki.assembler.packing import Packer
from haki.assembler.trace import new_trace_id, write_trace
from haki.db import Database
from haki.models import ContextRequest, ContextResponse

#: Computes the question's vector (the embedder's ``embed_query`` bound to the question).
Embed = Callable[[], np.ndarray]

@dataclass(frozen=True)
class Assembly:
    """The response served, and what it took (for metrics, benchmarks and tests)."""

    response: ContextResponse
    #: Decisions traced (facts and episodes considered).
    candidates: int
    facts_served: int
    episodes_served: int
    #: ``embed`` (the embedding's own time, while the text arm runs), ``retrieval`` (from the
    #: start to the packet), ``trace`` (the trace write with the commit), ``total``.
    timings_ms: dict[str, float]


def assemble(request: ContextRequest, embed: Embed, *, db: Database,
             config: RetrievalConfig) -> Assembly:
    """Answer one context request (docs/spec.md §4) and persist its trace in the same
    transaction. Every knob comes from ``config``."""
    started = time.perf_counter()
    with db.transaction(request.project, pipeline=True,
                        durable=config.trace_durable_commit) as conn:
        text = arms.text_arm(conn, request, config)
        vector, embed_ms = _timed(embed)
        text_rows = text.fetchall()
        with db.sibling().transaction(request.project, pipeline=True,
                                      read_only=True) as side:
            facts = arms.nearest_facts(side, request, config, vector)
            events = arms.nearest_events(conn, request, config, vector)
        candidates = arms.merge(facts.fetchall(), events.fetchall(), text_rows, vector,
                                config.vector_depth(request.budget_tokens))
        disabled = not candidates.hits and arms.subject_disabled(conn, request)
        packer = Packer(budget=request.budget_tokens, max_distance=config.recall_max_distance,
                        excerpt_chars=config.excerpt_chars,
                        excerpt_with_kind=config.excerpt_with_kind,
                        subject_disabled=disabled)
        packer.add_fused(_rank(candidates, config))
        timings = {"embed": embed_ms}
        response = respond(conn, request, packer, started=started, timings_ms=timings)
    return summarize(response, packer, started=started, timings_ms=timings)


def _rank(candidates: arms.Candidates, config: RetrievalConfig) -> list[Ranked]:
    """The fused order, then the best episodes' share passed to the turns around them, then
    the speakers weighed, then each session's best score shared with its turns."""
    ranked = fuse(candidates.hits, config)
    sources = neighbour_sources(ranked, config) if config.use_neighbours else []
    if sources:
        links = candidates.neighbourhood.links(sources, {r.id for r in ranked})
        ranked = propagate(ranked, links, config)
    return weigh_sessions(weigh_speakers(ranked, config), config)


def respond(conn: psycopg.Connection, request: ContextRequest, packer: Packer, *,
            started: float, timings_ms: dict[str, float]) -> ContextResponse:
    """The packet the packer holds, as the response, and its trace written on ``conn`` (the
    call's transaction, which commits it). Adds ``retrieval`` and a provisional ``total`` to
    ``timings_ms`` (the call row records them)."""
    timings_ms["retrieval"] = timings_ms["total"] = _ms(started, time.perf_counter())
    response = ContextResponse(
        packet=packer.packet(missing_purpose=request.purpose is None),
        token_count=packer.tokens_used, trace_id=new_trace_id())
    write_trace(conn, request, response, packer.decisions, timings_ms=timings_ms)
    return response


def summarize(response: ContextResponse, packer: Packer, *, started: float,
              timings_ms: dict[str, float]) -> Assembly:
    """After the commit: the trace's and the call's own times."""
    finished = time.perf_counter()
    timings_ms["trace"] = round(_ms(started, finished) - timings_ms["retrieval"], 3)
    timings_ms["total"] = _ms(started, finished)
    return Assembly(response=response, candidates=len(packer.decisions),
                    facts_served=len(response.packet.facts),
                    episodes_served=len(response.packet.episodes), timings_ms=timings_ms)


def _timed(embed: Embed) -> tuple[np.ndarray, float]:
    started = time.perf_counter()
    vector = embed()
    return vector, _ms(started, time.perf_counter())


def _ms(start: float, end: float) -> float:
    return round((end - start) * 1000.0, 3)
