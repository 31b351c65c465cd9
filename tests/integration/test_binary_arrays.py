"""``haki.db.binary_arrays`` through a real PostgreSQL: each array type arrives typed as its
array, with its NULLs and its elements as written, empty or not."""

import math
from uuid import UUID, uuid4

import psycopg
import pytest

from haki.db.binary_arrays import (
    BinaryArray,
    BoolArray,
    Float4Array,
    Int4Array,
    TextArray,
    UuidArray,
)

CASES: list[tuple[type[BinaryArray], str, list[object]]] = [
    (Int4Array, "integer[]", [0, 1, -1, None, 2**31 - 1, -(2**31)]),
    (Float4Array, "real[]", [0.0, -1.5, None, 0.1234567, 1e-7, float("inf")]),
    (BoolArray, "boolean[]", [True, None, False]),
    (UuidArray, "uuid[]", [uuid4(), None, UUID(int=0), UUID(int=2**128 - 1)]),
    (TextArray, "text[]", ["included", "", None, "évènement — 事件", "a,b{c}\"d\\"]),
]


@pytest.mark.parametrize(("array_type", "pg_type", "values"), CASES,
                         ids=[case[0].__name__ for case in CASES])
def test_an_array_reads_back_as_written(owner_conn: psycopg.Connection,
                                        array_type: type[BinaryArray], pg_type: str,
                                        values: list[object]) -> None:
    typed, back, nulls, length = owner_conn.execute(
        "SELECT pg_typeof(%(a)s)::text, %(a)s, array_position(%(a)s, NULL), "
        "cardinality(%(a)s)", {"a": array_type(values)}).fetchone()
    assert typed == pg_type
    assert length == len(values)
    assert nulls == values.index(None) + 1
    for got, want in zip(back, values, strict=True):
        if isinstance(want, float) and math.isfinite(want):
            assert got == pytest.approx(want, rel=1e-6)  # real precision
        else:
            assert got == want


@pytest.mark.parametrize("array_type", [case[0] for case in CASES],
                         ids=[case[0].__name__ for case in CASES])
def test_empty_and_null_free_arrays(owner_conn: psycopg.Connection,
                                    array_type: type[BinaryArray]) -> None:
    empty, length = owner_conn.execute(
        "SELECT %(a)s, cardinality(%(a)s)", {"a": array_type([])}).fetchone()
    assert empty == [] and length == 0
    values = [v for v in next(c for c in CASES if c[0] is array_type)[2] if v is not None]
    back, has_null = owner_conn.execute(
        "SELECT %(a)s, array_position(%(a)s, NULL) IS NOT NULL",
        {"a": array_type(values)}).fetchone()
    assert has_null is False
    assert len(back) == len(values)


def test_plain_lists_are_still_psycopgs(owner_conn: psycopg.Connection) -> None:
    """Registering the array types leaves psycopg's own list dumping alone: a dumper filed
    under an array oid would also be handed the plain lists of a binary COPY of that type (the
    benchmarks' loader)."""
    ids = [uuid4(), None]
    with owner_conn.transaction():
        owner_conn.execute("CREATE TEMP TABLE lists (i integer[], u uuid[], t text[]) "
                           "ON COMMIT DROP")
        with owner_conn.cursor().copy("COPY lists FROM STDIN (FORMAT BINARY)") as copy:
            copy.set_types(["integer[]", "uuid[]", "text[]"])
            copy.write_row(([1, None, 3], ids, ["a", None]))
        row = owner_conn.execute("SELECT i, u, t FROM lists").fetchone()
    assert row == ([1, None, 3], ids, ["a", None])
