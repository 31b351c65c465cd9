"""Request bodies are parsed within bounds: nesting depth and integer length are refused
before Python's parser recurses or converts (``haki.validation.loads_json``)."""

import json

import pytest

from haki.validation import MAX_INTEGER_DIGITS, MAX_JSON_DEPTH, loads_json


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
