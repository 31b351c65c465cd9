"""Request bodies are parsed within bounds, in time linear in their size: a body over the
largest limit is refused before parsing, integer length before conversion, nesting depth on
the parsed value (``haki.validation.loads_json``)."""

import json
import time

import pytest

from haki.errors import PayloadTooLarge
from haki.validation import MAX_BODY_BYTES, MAX_INTEGER_DIGITS, MAX_JSON_DEPTH, loads_json
from haki_aws.routes import BATCH_BODY_BYTES, ROUTES


def _nested(depth: int) -> str:
    return "[" * depth + "]" * depth


def test_depth_up_to_the_bound_parses_and_one_more_is_refused() -> None:
    assert loads_json(_nested(MAX_JSON_DEPTH)) is not None
    with pytest.raises(json.JSONDecodeError, match="nested deeper"):
        loads_json(_nested(MAX_JSON_DEPTH + 1))
    mixed = '{"a": ' * (MAX_JSON_DEPTH // 2) + "[" * (MAX_JSON_DEPTH // 2 + 1)
    with pytest.raises(json.JSONDecodeError, match="nested deeper"):
        loads_json(mixed + "]" * (MAX_JSON_DEPTH // 2 + 1) + "}" * (MAX_JSON_DEPTH // 2))


def test_brackets_and_digits_inside_strings_do_not_count() -> None:
    text = json.dumps({"q": "[" * 500 + "9" * 500, "e": 'a\\"[[[[ " quote'})
    assert loads_json(text)["q"].startswith("[[[")
    assert loads_json(b'{"s": "a\\\\"}') == {"s": "a\\"}


def test_integers_are_bounded_in_length_floats_are_not_integers() -> None:
    assert loads_json("9" * MAX_INTEGER_DIGITS) == int("9" * MAX_INTEGER_DIGITS)
    assert loads_json("-" + "9" * MAX_INTEGER_DIGITS) < 0
    for text in ("9" * (MAX_INTEGER_DIGITS + 1), '{"b": -' + "1" * 5000 + "}"):
        with pytest.raises(json.JSONDecodeError, match="digits"):
            loads_json(text)
    assert loads_json('{"x": 1.5e300, "y": 12.' + "5" * 40 + "}")["x"] == 1.5e300


def test_malformed_json_is_still_a_decode_error() -> None:
    with pytest.raises(json.JSONDecodeError):
        loads_json('{"a": ')


def test_an_unterminated_string_of_escaped_quotes_is_refused_in_linear_time() -> None:
    """The parse is one pass: 1 MiB of ``\\"`` pairs after an opening quote (the input a
    regular expression once took quadratic time over, minutes at this size) is refused
    at once."""
    body = '{"a": "' + '\\"' * ((MAX_BODY_BYTES - 8) // 2)
    assert MAX_BODY_BYTES - 8 <= len(body) <= MAX_BODY_BYTES
    started = time.perf_counter()
    with pytest.raises(json.JSONDecodeError, match="Unterminated string"):
        loads_json(body)
    assert time.perf_counter() - started < 1.0


def test_a_body_over_the_largest_limit_is_refused_before_parsing() -> None:
    with pytest.raises(PayloadTooLarge, match=str(MAX_BODY_BYTES)):
        loads_json("[" + " " * MAX_BODY_BYTES + "]")
    with pytest.raises(PayloadTooLarge):
        loads_json(b'"' + "é".encode() * (MAX_BODY_BYTES // 2) + b'"')


def test_nesting_past_the_parsers_own_limit_is_a_decode_error() -> None:
    """Deeper than Python's recursion limit: the parser's RecursionError is a refusal."""
    with pytest.raises(json.JSONDecodeError, match="nested deeper"):
        loads_json(_nested(200_000))
    with pytest.raises(json.JSONDecodeError, match="nested deeper"):
        loads_json('{"a": ' * 100 + "1" + "}" * 100)


@pytest.mark.parametrize("text", ["NaN", "[Infinity]", '{"a": -Infinity}', "[1e999]"])
def test_numbers_json_cannot_hold_are_refused(text: str) -> None:
    with pytest.raises(json.JSONDecodeError):
        loads_json(text)


def test_no_route_accepts_more_than_the_parser_does() -> None:
    assert BATCH_BODY_BYTES == MAX_BODY_BYTES
    assert max(route.max_body_bytes for route in ROUTES) == MAX_BODY_BYTES
