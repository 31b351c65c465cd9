"""Retrieval quality on a labelled data set (``haki eval``), with ablations.

A labelled set is a memory document (``haki load`` format, JSON) plus ``queries``: each names
its scope, the question and the ids that a good packet must cover. Coverage rules:

- an expected **fact** is covered when it is a fact of the packet;
- an expected **event** is covered when it is an episode of the packet, or cited in the
  ``source_event_ids`` of a packet fact (the fact carries the episode's evidence).

Both are measured on what the model reads: the packet is what its ``<haki_memory>`` block
holds, and the budget bounds that block, tags, headers and every line counted
(``haki.assembler.packing``); each run also counts the blocks whose estimate exceeds the
budget (``blocks_over_budget``, 0 by construction) and reports their mean estimate
(``mean_tokens``).

Recall counts ids; the **content** measure checks that what was served still holds the evidence,
so that shorter excerpts cannot buy recall by dropping it. For an expected event, the evidence
is the sentence of its text (cut in pieces of at most :data:`EVIDENCE_CHARS`) that shares the
most words with the question and its reference ``answer`` (when the set has one); the event's
evidence is carried when its line of the block holds that sentence, or when a packet fact
cites the event. An expected fact is carried when served. ``content_recall`` is the share
carried.

A query with no expected id is a *negative* query (nothing in memory answers it): it does not
count in the recall figures; the share of negatives that still received facts is reported, and
is what a recall floor should bring down. A query may name a ``category`` (e.g. multi-hop,
temporal): recall is also reported per category.

The set is loaded into a scratch database (created on the given server, migrated, dropped
afterwards), so an evaluation never mixes with other data. Each question is embedded once; for
every budget asked, the served ranking and every ablation of it (among them ``dense_only``,
the simple baseline) reuse that vector, so each call's latency is the assembler's own time.
The served run also reports where the expected items stood in the candidate list its trace
records (``gold_ranks``): an item never listed was lost by retrieval, one listed but not
covered by packing (the budget ran out above it).
"""

import json
import re
import sys
import uuid
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any
from uuid import UUID

import numpy as np
import psycopg
from psycopg import sql
from pydantic import BaseModel, ConfigDict, Field, StrictInt, ValidationError
from tqdm import tqdm

from haki.assembler import RetrievalConfig, assemble
from haki.assembler.assemble import Embed
from haki.assembler.config import STOPWORDS
from haki.assembler.render import render_packet, said
from haki.assembler.trace import load_trace
from haki.db import Database, Role
from haki.db.connection import acting_for
from haki.db.migrate import apply_migrations
from haki.embedding import Embedder
from haki.errors import ValidationFailed
from haki.models import (
    DEFAULT_BUDGET_TOKENS,
    MAX_BUDGET_TOKENS,
    PURPOSE_MAX_CHARS,
    SCOPE_MAX_CHARS,
    ContextPacket,
    ContextRequest,
    InspectResponse,
)
from haki.settings import Settings
from haki.text import event_body
from haki_local.admin import tenant_keys
from haki_local.documents import MemoryDocument, parse_document_text
from haki_local.embedded import embedded_role_url
from haki_local.writer import MemoryWriter

#: Each part of the served ranking switched off in turn (``RetrievalConfig`` switches).
ABLATIONS: dict[str, dict[str, Any]] = {
    "no_vector_arm": {"use_vector_arm": False},
    "no_text_arm": {"use_text_arm": False},
    "no_neighbours": {"use_neighbours": False},
    # Facts alone: what pooling episodes with facts in one list is worth.
    "no_episodes": {"use_episodes": False},
    "kind_in_excerpt": {"excerpt_with_kind": True},
    "equal_arm_weights": {"rrf_weight_vector": 1.0},
    # The assistant's messages weigh as much as the user's.
    "equal_speakers": {"assistant_weight": 1.0},
    # No session lends its best score to its other turns.
    "no_sessions": {"session_share": 0.0},
    # The vector arm's depth fixed at 128 whatever the budget.
    "fixed_vector_depth": {"vector_top_k": 128, "vector_top_k_min": 128},
    # The simple baseline: the nearest facts and episodes by cosine alone, every speaker
    # alike, packed the same way.
    "dense_only": {"use_text_arm": False, "use_neighbours": False, "assistant_weight": 1.0,
                   "session_share": 0.0},
}
#: What each ablation leaves out or changes, in plain words (the table and progress bars).
ABLATION_LABELS: dict[str, str] = {
    "no_vector_arm": "without vector search",
    "no_text_arm": "without keyword search",
    "no_neighbours": "without the neighbouring messages",
    "no_episodes": "facts only, no episodes",
    "kind_in_excerpt": "event kind written into excerpts",
    "equal_arm_weights": "vector and keyword results weighed alike",
    "equal_speakers": "assistant messages weighed like the user's",
    "no_sessions": "without the session's share",
    "fixed_vector_depth": "vector search depth fixed at 128",
    "dense_only": "cosine similarity only (a simple baseline)",
}


class EvalQuery(BaseModel):
    """One labelled question."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    project_id: str = Field(min_length=1, max_length=SCOPE_MAX_CHARS)
    subject_id: str = Field(min_length=1, max_length=SCOPE_MAX_CHARS)
    query: str = Field(min_length=1)
    purpose: str | None = Field(default=None, max_length=PURPOSE_MAX_CHARS)
    budget_tokens: StrictInt | None = Field(default=None, gt=0, le=MAX_BUDGET_TOKENS)
    expected_event_ids: list[UUID] = Field(default_factory=list)
    expected_fact_ids: list[UUID] = Field(default_factory=list)
    category: str | None = Field(default=None, min_length=1, max_length=64)
    #: The reference answer, when the data has one: it helps find the evidence sentence of
    #: the content measure, nothing else.
    answer: str | None = None

    @property
    def expected(self) -> int:
        return len(self.expected_event_ids) + len(self.expected_fact_ids)


@dataclass(frozen=True)
class LabelledSet:
    document: MemoryDocument
    queries: list[EvalQuery]


def load_labelled_set(path: Path) -> LabelledSet:
    """Parse and validate a labelled set: the memory document, then its ``queries``."""
    try:
        text = path.read_text(encoding="utf-8")
        raw = json.loads(text)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValidationFailed(f"cannot read labelled set {path}: {exc}") from exc
    if not isinstance(raw, dict) or not isinstance(raw.get("queries"), list) or not raw["queries"]:
        raise ValidationFailed(f"{path}: expected a JSON object with a non-empty 'queries' list")
    queries = []
    for index, item in enumerate(raw["queries"]):
        try:
            queries.append(EvalQuery.model_validate(item))
        except ValidationError as exc:
            first = exc.errors()[0]
            field = ".".join(str(p) for p in first["loc"]) or "(record)"
            raise ValidationFailed(f"queries[{index}]: field '{field}': {first['msg']}") from exc
    return LabelledSet(parse_document_text(text), queries)


def coverage(query: EvalQuery, packet: ContextPacket) -> int:
    """How many of the query's expected ids the packet covers (rules in the module doc)."""
    fact_ids = {f.id for f in packet.facts}
    event_ids = {e.event_id for e in packet.episodes}
    event_ids.update(e for f in packet.facts for e in f.source_event_ids)
    return (sum(1 for i in query.expected_fact_ids if i in fact_ids)
            + sum(1 for i in query.expected_event_ids if i in event_ids))


#: The content measure's evidence pieces are sentences or lines cut at this many characters.
EVIDENCE_CHARS = 100
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")
_WORD = re.compile(r"\w+")


def _words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if len(w) > 2 and w not in STOPWORDS}


def _normal(text: str) -> str:
    return " ".join(text.split())


def evidence_sentence(text: str, query: EvalQuery) -> str:
    """The piece of ``text`` (a sentence or line, at most :data:`EVIDENCE_CHARS`) sharing
    the most words with the question and its answer; the first piece on a tie."""
    pieces = [_normal(part[i:i + EVIDENCE_CHARS])
              for part in _SENTENCE_END.split(text) if part.strip()
              for i in range(0, len(part), EVIDENCE_CHARS)]
    pieces = [p for p in pieces if p] or [_normal(text)]
    wanted = _words(f"{query.query} {query.answer or ''}")
    return max(pieces, key=lambda piece: len(wanted & _words(piece)))


def evidence_of(query: EvalQuery, texts: Mapping[UUID, str]) -> dict[UUID, str]:
    """The evidence sentence of each expected event of ``query`` whose text is known."""
    return {i: evidence_sentence(texts[i], query) for i in query.expected_event_ids
            if i in texts}


def carried(query: EvalQuery, packet: ContextPacket, evidence: Mapping[UUID, str]) -> int:
    """How many of the query's expected items the packet carries the content of (rules in
    the module doc); ``evidence``: :func:`evidence_of` the query."""
    fact_ids = {f.id for f in packet.facts}
    cited = {e for f in packet.facts for e in f.source_event_ids}
    served = {e.event_id: _normal(said(e.role, e.name, e.excerpt)) for e in packet.episodes}
    return (sum(1 for i in query.expected_fact_ids if i in fact_ids)
            + sum(1 for i in query.expected_event_ids
                  if i in cited or (i in served and i in evidence
                                    and evidence[i] in served[i])))


@dataclass(frozen=True)
class Outcome:
    """One question answered by the assembler."""

    query: EvalQuery
    covered: int
    #: Expected items whose content the packet carries (``carried``).
    carried: int
    token_count: int
    #: Whether the rendered block's estimate exceeds the call's budget.
    over_budget: bool
    latency_ms: float
    facts_served: int
    episodes_served: int
    trace_id: UUID




#: Decisions of expansion rows, which the recall floor never gates.
_EXPANSION_REASONS = frozenset({"neighbour_expansion"})


@contextmanager
def scratch_database(superuser_url: str) -> Iterator[dict[Role, str]]:
    """A new, migrated database on the server of ``superuser_url``; dropped on exit."""
    name = f"haki_eval_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(superuser_url, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    try:
        urls = {role: embedded_role_url(superuser_url, role, name) for role in Role}
        apply_migrations(urls[Role.OWNER])
        yield urls
    finally:
        with psycopg.connect(superuser_url, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(
                sql.Identifier(name)))


class Evaluator:
    """Runs a labelled set's questions against a database that holds its memory."""

    def __init__(self, labelled: LabelledSet, *, db: Database, keys: Mapping[str, str],
                 embedder: Embedder, settings: Settings,
                 budget: int = DEFAULT_BUDGET_TOKENS, progress: bool = False) -> None:
        self.labelled = labelled
        self.db = db
        #: project → the hash of a key of that project, which each question acts for.
        self.keys = keys
        self.budget = budget
        self.config = RetrievalConfig.from_settings(settings)
        self.progress = progress
        #: Each question's evidence sentences (the content measure), found once for every run.
        texts = {e.id: event_body(e.payload) for e in labelled.document.events if e.id}
        self.evidence = [evidence_of(q, texts) for q in labelled.queries]
        self.vectors = [embedder.embed_query(q.query) for q in
                        tqdm(labelled.queries, desc="embed questions", unit="q",
                             disable=not progress, file=sys.stderr)]

    def run(self, config: RetrievalConfig | None = None,
            budget: int | None = None, label: str = "questions") -> list[Outcome]:
        """Every question through the assembler with ``config`` (default: the settings') at
        ``budget`` tokens (default: the evaluator's) unless the question sets its own."""
        outcomes = []
        questions = zip(self.labelled.queries, self.vectors, self.evidence, strict=True)
        for q, vector, evidence in tqdm(questions, total=len(self.vectors), desc=label,
                                        unit="q", leave=False, disable=not self.progress,
                                        file=sys.stderr):
            request = ContextRequest(
                project_id=q.project_id, subject_id=q.subject_id, query=q.query,
                purpose=q.purpose, budget_tokens=q.budget_tokens or budget or self.budget)
            with acting_for(self.keys[q.project_id]):
                result = assemble(request, _given(vector), db=self.db,
                                  config=config or self.config)
            packet = result.response.packet
            outcomes.append(Outcome(
                q, coverage(q, packet), carried(q, packet, evidence),
                result.response.token_count,
                len(render_packet(packet)) // 4 > request.budget_tokens,
                result.timings_ms["total"], result.facts_served,
                result.episodes_served, result.response.trace_id))
        return outcomes

    def _trace(self, outcome: Outcome) -> InspectResponse:
        """The call's trace, read as its project's tenant."""
        q = outcome.query
        with acting_for(self.keys[q.project_id]):
            return load_trace(self.db, project_id=q.project_id, subject_id=q.subject_id,
                              trace_id=outcome.trace_id)

    def gold_ranks(self, outcome: Outcome) -> list[int | None]:
        """The rank of each expected item in the candidate list the call's trace records
        (None: never a candidate), expected facts first."""
        o = outcome
        ranks = {d.fact_id or d.event_id: d.rank for d in self._trace(o).decisions}
        return [ranks.get(i) for i in (*o.query.expected_fact_ids, *o.query.expected_event_ids)]

    def candidate_distances(self, outcomes: Sequence[Outcome]) -> list[tuple[float, bool]]:
        """(cosine distance, relevant) of every ranked fact and episode candidate traced for
        the positive questions. Relevant: an expected fact or episode, or a fact citing an
        expected episode. Expansion rows (neighbours) are left out: the recall floor never
        gates them."""
        facts = {f.id: f for f in self.labelled.document.facts if f.id}
        pairs = []
        for o in outcomes:
            if not o.query.expected:
                continue
            expected = {*o.query.expected_fact_ids, *o.query.expected_event_ids}
            for d in self._trace(o).decisions:
                if d.similarity is None or d.reason_code in _EXPANSION_REASONS:
                    continue
                item = d.fact_id or d.event_id
                cited = facts[d.fact_id].source_event_ids if d.fact_id in facts else []
                relevant = item in expected or any(e in expected for e in cited)
                pairs.append((1.0 - d.similarity, relevant))
        return pairs


def _given(vector: np.ndarray) -> Embed:
    """The embedding step of a question embedded beforehand."""
    return lambda: vector


def evaluation_keys(owner: Database, labelled: LabelledSet) -> dict[str, str]:
    """A key for every project the questions ask about (the runtime role acts for a key)."""
    return tenant_keys(owner, (q.project_id for q in labelled.queries), org_id="haki-eval",
                       label="haki eval")


def _recall(positive: Sequence[Outcome]) -> dict[str, object]:
    recalls = [o.covered / o.query.expected for o in positive]
    content = [o.carried / o.query.expected for o in positive]
    return {
        "mean_recall": round(float(np.mean(recalls)), 4) if recalls else None,
        "content_recall": round(float(np.mean(content)), 4) if content else None,
        "fully_covered": round(
            sum(o.covered == o.query.expected for o in positive) / len(positive), 4)
        if positive else None,
    }


def figures(outcomes: Sequence[Outcome]) -> dict[str, object]:
    """The headline figures of one run (keys of ``haki eval``'s JSON)."""
    positive = [o for o in outcomes if o.query.expected]
    negative = [o for o in outcomes if not o.query.expected]
    latencies = np.asarray([o.latency_ms for o in outcomes])
    categories = sorted({o.query.category for o in positive if o.query.category})
    return {
        "queries": len(outcomes),
        **_recall(positive),
        "by_category": {
            c: {"queries": len(of_c), **_recall(of_c)}
            for c in categories
            if (of_c := [o for o in positive if o.query.category == c])},
        "mean_tokens": round(float(np.mean([o.token_count for o in outcomes])), 1),
        "blocks_over_budget": sum(o.over_budget for o in outcomes),
        "mean_facts_served": round(float(np.mean([o.facts_served for o in outcomes])), 2),
        "mean_episodes_served": round(float(np.mean([o.episodes_served for o in outcomes])), 2),
        "latency_ms": {"p50": round(float(np.percentile(latencies, 50)), 2),
                       "p95": round(float(np.percentile(latencies, 95)), 2)},
        "injection_rate": round(sum(o.facts_served > 0 for o in outcomes) / len(outcomes), 4),
        "negative_queries": len(negative),
        "negative_injection_rate": round(
            sum(o.facts_served + o.episodes_served > 0 for o in negative) / len(negative), 4)
        if negative else None,
        "negative_tokens": round(float(np.mean([o.token_count for o in negative])), 1)
        if negative else None,
    }


def gold_rank_figures(ranks: Sequence[int | None], covered: int) -> dict[str, object]:
    """Where the expected items of the positive questions stood: covered by the packet,
    listed as candidates but not covered (lost to packing), never listed (lost to retrieval;
    an event can still be covered through a fact citing it), and the median rank of the
    listed ones."""
    listed = [r for r in ranks if r is not None]
    total = len(ranks)
    return {
        "items": total,
        "covered": round(covered / total, 4) if total else None,
        "listed": round(len(listed) / total, 4) if total else None,
        "median_listed_rank": float(np.median(listed)) if listed else None,
    }


def misses(outcomes: Sequence[Outcome],
           ranks: Sequence[list[int | None]] | None = None) -> list[dict[str, object]]:
    """The positive questions not fully covered, for reading what went wrong; with the rank
    of each expected item (``gold_ranks``) when given."""
    rows = []
    for index, o in enumerate(outcomes):
        if o.query.expected and o.covered < o.query.expected:
            row: dict[str, object] = {
                "query": o.query.query, "subject_id": o.query.subject_id,
                "category": o.query.category, "covered": o.covered,
                "expected": o.query.expected}
            if ranks is not None:
                row["gold_ranks"] = ranks[index]
            rows.append(row)
    return rows


def evaluate(labelled: LabelledSet, *, superuser_url: str, embedder: Embedder,
             settings: Settings, budgets: Sequence[int] = (DEFAULT_BUDGET_TOKENS,),
             ablations: Sequence[str] = tuple(ABLATIONS), with_misses: bool = False,
             progress: bool = False) -> dict[str, object]:
    """Load ``labelled`` into a scratch database; at each budget run the served ranking and
    each of ``ablations`` (names of :data:`ABLATIONS`). ``progress``: a bar on stderr for each
    phase (loading, embedding the questions, each run)."""
    with scratch_database(superuser_url) as urls:
        owner, app = Database(urls[Role.OWNER]), Database(urls[Role.APP])
        try:
            writer = MemoryWriter(owner, embedder)
            with tqdm(total=writer.steps(labelled.document), desc="load memory", unit="rec",
                      disable=not progress, file=sys.stderr) as bar:
                writer.write(labelled.document, progress=bar.update)
            evaluator = Evaluator(labelled, db=app, keys=evaluation_keys(owner, labelled),
                                  embedder=embedder, settings=settings, progress=progress)
            report: dict[str, object] = {"embedder": embedder.provider}
            per_budget: dict[str, object] = {}
            for budget in budgets:
                outcomes = evaluator.run(budget=budget, label=f"{budget} tokens: as served")
                ranks = [evaluator.gold_ranks(o) if o.query.expected else []
                         for o in outcomes]
                run: dict[str, object] = {
                    **figures(outcomes),
                    "gold_ranks": gold_rank_figures(
                        [r for per_query in ranks for r in per_query],
                        sum(o.covered for o in outcomes)),
                    "ablations": {
                        name: figures(evaluator.run(
                            replace(evaluator.config, **ABLATIONS[name]), budget,
                            f"{budget} tokens: {ABLATION_LABELS[name]}"))
                        for name in ablations},
                }
                if with_misses:
                    run["misses"] = misses(outcomes, ranks)
                per_budget[str(budget)] = run
            report["budgets"] = per_budget
            return report
        finally:
            owner.close()
            app.close()
