"""``GET /v1/calls/{trace_id}``: one call as the console draws it — the trace as inspect reads
it (with its feedback), the current text of the facts and events it and its feedback name, and
the packet as the rendered block."""

from collections.abc import Sequence
from uuid import UUID

from psycopg.rows import dict_row

from haki.assembler.config import RetrievalConfig
from haki.assembler.render import render_packet
from haki.assembler.trace import load_trace
from haki.calls.models import CallDetail, Ranking
from haki.db import Database
from haki.text import event_text, fact_text

#: The current text of the facts and events a trace names, by primary key within the scope.
SELECT_FACT_TEXTS = """
SELECT id, predicate, value FROM facts
WHERE project_id = %(project_id)s AND subject_id = %(subject_id)s AND id = ANY(%(ids)s)
"""
SELECT_EVENT_TEXTS = """
SELECT id, kind, payload FROM events
WHERE project_id = %(project_id)s AND subject_id = %(subject_id)s AND id = ANY(%(ids)s)
"""


def candidate_texts(
    db: Database, *, project_id: str, subject_id: str, fact_ids: Sequence[UUID],
    event_ids: Sequence[UUID],
) -> dict[UUID, str]:
    """The current text (as embedded and served) of the facts and events a trace names; an
    erased one is absent."""
    params = {"project_id": project_id, "subject_id": subject_id}
    with db.transaction(project_id) as conn, conn.pipeline():
        facts = conn.cursor(row_factory=dict_row).execute(
            SELECT_FACT_TEXTS, {**params, "ids": list(fact_ids)})
        events = conn.cursor(row_factory=dict_row).execute(
            SELECT_EVENT_TEXTS, {**params, "ids": list(event_ids)})
    texts = {row["id"]: fact_text(row["predicate"], row["value"]) for row in facts.fetchall()}
    texts.update({row["id"]: event_text(row["kind"], row["payload"])
                  for row in events.fetchall()})
    return texts


def call_detail(
    db: Database, *, project_id: str, subject_id: str | None, trace_id: UUID,
    config: RetrievalConfig, reader: Database | None = None,
) -> CallDetail:
    """The call ``trace_id`` of this exact scope (the same not found as inspect otherwise);
    ``subject_id`` may be left out, as in inspect."""
    trace = load_trace(db, project_id=project_id, subject_id=subject_id, trace_id=trace_id,
                       reader=reader)
    # The items its feedback names too: memory reported missing may never have been a
    # candidate (either kind: a lookup by id in each table).
    named = [i for f in trace.feedback for i in (*f.used, *f.missing)]
    texts = candidate_texts(
        reader or db, project_id=project_id, subject_id=trace.subject_id,
        fact_ids=[d.fact_id for d in trace.decisions if d.fact_id is not None] + named,
        event_ids=[d.event_id for d in trace.decisions if d.event_id is not None] + named)
    ranking = Ranking(rrf_k=config.rrf_k, rrf_weight_vector=config.rrf_weight_vector,
                      rrf_weight_text=config.rrf_weight_text)
    return CallDetail(trace=trace, texts={str(k): v for k, v in texts.items()},
                      rendered=render_packet(trace.packet), ranking=ranking)
