"""The benchmark's synthetic data generator: deterministic, the right shape, coherent scopes."""

from collections.abc import Iterable
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import numpy as np

from benchmarks.synthetic import (
    DIMENSIONS,
    EVENT_COLUMNS,
    FACT_COLUMNS,
    Generator,
    many_scopes,
    single_scope,
)

NOW = datetime(2026, 1, 1, tzinfo=UTC)
SPEC = many_scopes("t", scopes=6, facts_per_scope=40, hard_facts=100)


def _rows(batches: Iterable[list[tuple[object, ...]]]) -> list[tuple[Any, ...]]:
    """The rows of ``batches`` (each a row of its table's columns, of their several types)."""
    return [row for batch in batches for row in batch]


def _decode(blob: bytes) -> np.ndarray:
    dim, _unused = int.from_bytes(blob[:2], "big"), blob[2:4]
    assert dim == DIMENSIONS
    return np.frombuffer(blob[4:], dtype=">f4").astype(np.float32)


def test_same_spec_and_time_give_the_same_rows_and_queries() -> None:
    # Determinism is what lets --reuse trust a loaded copy by its spec's fingerprint.
    a, b = Generator(SPEC, now=NOW), Generator(SPEC, now=NOW)
    assert _rows(a.fact_batches()) == _rows(b.fact_batches())
    assert _rows(a.event_batches()) == _rows(b.event_batches())
    qa = a.queries(list(SPEC.scopes), 5, salt=3)
    qb = b.queries(list(SPEC.scopes), 5, salt=3)
    assert [q.text for q in qa] == [q.text for q in qb]
    assert all(np.array_equal(x.vector, y.vector) for x, y in zip(qa, qb, strict=True))
    # A different seed changes the data, and the fingerprint that names a loaded copy.
    other = replace(SPEC, seed=SPEC.seed + 1)
    assert _rows(Generator(other, now=NOW).fact_batches()) != _rows(a.fact_batches())
    assert other.fingerprint() != SPEC.fingerprint()


def test_rows_match_the_copy_layout_and_the_scope_sizes() -> None:
    generator = Generator(SPEC, now=NOW)
    facts = _rows(generator.fact_batches())
    events = _rows(generator.event_batches())
    assert len(facts) == SPEC.total_facts == 6 * 40 + 100
    assert len(events) == SPEC.total_events
    assert {len(r) for r in facts} == {len(FACT_COLUMNS)}
    assert {len(r) for r in events} == {len(EVENT_COLUMNS)}
    per_scope: dict[str, int] = {}
    for row in facts:
        per_scope[str(row[2])] = per_scope.get(str(row[2]), 0) + 1
    assert per_scope == {s.subject_id: s.facts for s in SPEC.scopes}
    assert len({row[0] for row in facts}) == len(facts)  # unique ids
    # Scopes are interleaved, not written one after the other.
    assert len({row[2] for row in facts[:50]}) > 1


def test_embeddings_are_unit_vectors_in_pgvector_binary_format() -> None:
    row = _rows(Generator(single_scope("v", 50), now=NOW).fact_batches())[0]
    vector = _decode(row[-1])
    assert vector.shape == (DIMENSIONS,)
    assert abs(float(np.linalg.norm(vector)) - 1.0) < 1e-5


def test_facts_cite_episodes_of_their_own_scope_and_respect_the_schema_checks() -> None:
    generator = Generator(SPEC, now=NOW)
    event_scope = {row[0]: row[2] for row in _rows(generator.event_batches())}
    cited = 0
    for row in _rows(generator.fact_batches()):
        sources = row[12]
        assert all(event_scope[e] == row[2] for e in sources)
        cited += len(sources)
        valid_from, valid_to = row[8], row[9]
        if valid_from is not None and valid_to is not None:
            assert valid_to > valid_from  # CHECK (valid_to > valid_from)
        assert row[5] in {"active", "superseded", "disputed", "candidate"}
    assert cited > 0


def test_queries_target_the_requested_scopes_and_vary_in_language() -> None:
    hard = [s for s in SPEC.scopes if s.subject_id == "customer-hard"]
    queries = Generator(SPEC, now=NOW).queries(hard, 40)
    assert {q.subject_id for q in queries} == {"customer-hard"}
    assert {q.lang for q in queries} == {"en", "fr"}
    assert all(q.vector.dtype == np.float32 and q.vector.shape == (DIMENSIONS,) for q in queries)
