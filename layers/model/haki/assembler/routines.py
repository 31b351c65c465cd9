"""The fused ranking's candidate statements, kept in the database as PL/pgSQL functions so
that their plans are cached per connection.

Statements are never prepared (RDS Proxy pins a client that prepares), so each one sent as
text is parsed, analysed and planned on every call: ~4 ms of the database's ~19 ms of CPU per
context call at 100k facts (docs/benchmarks.md). A PL/pgSQL function keeps its queries' parse
trees, and their plans where a plan may be reused, in its session, which the proxy does not
pin for. So each statement of ``haki.assembler.sql`` that the fused ranking sends (the text arm,
and each vector arm with its planner settings) becomes one function:

- ``haki_text_arm`` runs with ``plan_cache_mode = force_generic_plan``: none of its plan choices
  depend on the scope (the text search itself plans its query with its values, inside
  ``haki_idf_search``'s EXECUTE), so it is planned once per connection.
- ``haki_nearest_facts`` / ``haki_nearest_events`` set their graph's search breadth, then run
  their statement with ``force_custom_plan``: planned on each call with the call's values, as
  the statement sent as text was, because the plan depends on the scope — an exact scan of a
  small scope, the table's graph, or a big subject's own partial graph (whose predicate only a
  plan made with the values can match) — and the cached parse tree is all they save.

The SQL stays in ``sql.py``, written once: a function's body is its statement with each
``%(name)s`` parameter as the function's argument ``p_name``. The migration that creates the
functions is rendered from here (``python -m haki.assembler.routines``); a test checks that the
newest migration defining each function matches this module, so changing a statement means
rendering a new migration.
"""

import re
from dataclasses import dataclass
from functools import cached_property

from haki.assembler import sql

_PARAMETER = re.compile(r"%\((\w+)\)s")

#: The SQL type of every parameter the functions take.
PARAMETER_TYPES: dict[str, str] = {
    "project_id": "text", "subject_id": "text", "query": "text", "stopwords": "text[]",
    "max_terms": "integer", "query_vector": "vector", "use_text_arm": "boolean",
    "use_vector_arm": "boolean", "use_episodes": "boolean", "use_neighbours": "boolean",
    "text_candidates": "integer", "text_top_k": "integer", "vector_top_k": "integer",
    "excerpt_chars": "integer", "neighbour_span": "integer", "neighbour_sources": "integer",
    "horizon_slow_seconds": "double precision",
    "horizon_volatile_seconds": "double precision",
    "horizon_ephemeral_seconds": "double precision",
    "facts_graph": "text", "events_graph": "text", "ef_search_min": "integer",
    "ef_search_max": "integer", "rows_per_ef": "integer", "max_scan_tuples": "text",
}

#: The result columns each statement returns, by name and type.
_FACT_ROW = (
    ("predicate", "text"), ("value", "jsonb"), ("confidence", "real"),
    ("valid_from", "timestamp with time zone"), ("source_event_ids", "uuid[]"),
    ("volatility", "text"), ("conflict_open", "boolean"), ("horizon_passed", "boolean"))
_EVENT_ROW = (
    ("kind", "text"), ("payload", "jsonb"), ("occurred_at", "timestamp with time zone"),
    ("source_id", "uuid"), ("step", "bigint"))


@dataclass(frozen=True)
class Routine:
    """One statement as a function: ``prelude`` (a ``SELECT`` of settings) runs first."""

    name: str
    statement: str
    returns: tuple[tuple[str, str], ...]
    plan_cache_mode: str
    prelude: str = ""

    @cached_property
    def parameters(self) -> list[str]:
        """The statement's parameters (the prelude's first), each once, in order."""
        return list(dict.fromkeys(_PARAMETER.findall(self.prelude + self.statement)))

    @cached_property
    def call(self) -> str:
        """What the assembler sends, every call: the function with the call's named
        parameters (built once)."""
        arguments = ", ".join(f"%({name})s" for name in self.parameters)
        return f"SELECT * FROM {self.name}({arguments})"

    @cached_property
    def signature(self) -> str:
        return f"{self.name}({', '.join(PARAMETER_TYPES[n] for n in self.parameters)})"

    def definition(self) -> str:
        """``CREATE FUNCTION`` with the statement as its body (after dropping the one a
        previous rendering made), executable by the runtime role only. ``use_column``: a bare
        name in the statement is the column (the result's column names are also variables of
        the function)."""
        arguments = ",\n    ".join(f"p_{name} {PARAMETER_TYPES[name]}"
                                   for name in self.parameters)
        columns = ", ".join(f"{column} {kind}" for column, kind in self.returns)
        prelude = (f"    PERFORM {_body(self.prelude).strip().removeprefix('SELECT ')};\n"
                   if self.prelude else "")
        return (
            f"DROP FUNCTION IF EXISTS {self.signature};\n"
            f"CREATE FUNCTION {self.name}(\n    {arguments})\n"
            f"RETURNS TABLE ({columns})\n"
            f"LANGUAGE plpgsql VOLATILE\n"
            f"SET plan_cache_mode = {self.plan_cache_mode}\n"
            f"SET search_path = pg_catalog, public, pg_temp\n"
            f"AS $$\n#variable_conflict use_column\nBEGIN\n{prelude}"
            f"    RETURN QUERY\n{_body(self.statement).strip()};\nEND\n$$;\n"
            f"REVOKE ALL ON FUNCTION {self.signature} FROM PUBLIC;\n"
            f"GRANT EXECUTE ON FUNCTION {self.signature} TO haki_app;\n")


def _body(statement: str) -> str:
    return _PARAMETER.sub(lambda match: f"p_{match.group(1)}", statement)


TEXT_ARM = Routine(
    "haki_text_arm", sql.TEXT_ARM_CANDIDATES,
    (("item", "text"), ("id", "uuid"), ("text_arm_rank", "bigint"),
     ("text_rank", "double precision"), ("embedding", "vector"), *_FACT_ROW, *_EVENT_ROW),
    "force_generic_plan")
NEAREST_FACTS = Routine(
    "haki_nearest_facts", sql.NEAREST_FACTS,
    (("item", "text"), ("id", "uuid"), ("distance", "double precision"), *_FACT_ROW),
    "force_custom_plan", prelude=sql.PLANNER_SETTINGS)
NEAREST_EVENTS = Routine(
    "haki_nearest_events", sql.NEAREST_EVENTS,
    (("item", "text"), ("id", "uuid"), ("distance", "double precision"), *_EVENT_ROW),
    "force_custom_plan", prelude=sql.EVENTS_PLANNER_SETTINGS)

ROUTINES = (TEXT_ARM, NEAREST_FACTS, NEAREST_EVENTS)


def render_migration() -> str:
    """The migration creating every routine (``python -m haki.assembler.routines``)."""
    header = (
        "-- The fused ranking's candidate statements as PL/pgSQL functions, whose plans are\n"
        "-- cached per connection (haki.assembler.routines). RENDERED from\n"
        "-- haki/assembler/sql.py by `python -m haki.assembler.routines`: do not edit; a\n"
        "-- changed statement needs a new migration rendered the same way.\n")
    return header + "".join(f"\n{routine.definition()}" for routine in ROUTINES)


if __name__ == "__main__":
    print(render_migration(), end="")
