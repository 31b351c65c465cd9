"""``haki.db.connection.load_json``: the jsonb loader of every connection gives exactly what
``json.loads`` gives — the same objects, the same errors — for any input."""

import json
import math
from collections.abc import Callable

import pytest
from hypothesis import given
from hypothesis import strategies as st

from haki.db.connection import load_json

JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


def _outcome(loads: Callable[[bytes], object], data: bytes) -> tuple[str, object]:
    try:
        return "value", loads(data)
    except (ValueError, UnicodeDecodeError) as exc:
        return type(exc).__name__, str(exc)


@given(JSON_VALUES, st.sampled_from([(", ", ": "), (",", ":")]))
def test_any_value_loads_as_json_loads_loads_it(value: object, separators: tuple[str, str]) -> None:
    data = json.dumps(value, ensure_ascii=False, separators=separators).encode()
    assert _outcome(load_json, data) == _outcome(json.loads, data)


@pytest.mark.parametrize("data", [
    b"123456789012345678901234567890", b"-9223372036854775809", b"1e400", b"-0.0",
    b'"\\ud83d\\ude00 \\u00e9 \\"quoted\\""', b"  [1, 2]", b"[1, 2]  ", b"[1,", b"", b"nul",
    b'{"a": 1} {"b": 2}', b"NaN", b"\xff", '{"é": "ü"}'.encode(),
])
def test_edges_and_errors_are_json_loads_own(data: bytes) -> None:
    assert _outcome(load_json, data) == _outcome(json.loads, data)


def test_big_numbers_stay_exact() -> None:
    assert load_json(b'{"n": 123456789012345678901234567890}') == {
        "n": 123456789012345678901234567890}
    infinite = load_json(b"1e400")
    assert isinstance(infinite, float) and math.isinf(infinite)
