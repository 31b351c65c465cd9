"""Request validation errors → the contract's stable codes, for every entry point.

The API (Powertools raises the Pydantic errors of a request, located ``("body", field)``,
``("query", field)`` or ``("path", field)``) and the CLI (Pydantic errors located ``(field,)``)
classify through this one function, so the same input gets the same code everywhere: a missing
or empty ``project_id`` / ``subject_id`` is ``missing_scope``; a bad ``budget_tokens`` is
``budget_exceeded``; anything else (malformed JSON, wrong types, unknown fields, bad UUIDs) is
``validation_error`` — all 422.
"""

import json
import re
from collections.abc import Mapping, Sequence
from itertools import accumulate
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from haki.errors import BudgetExceeded, HakiError, MissingScope, ValidationFailed
from haki.models import MAX_BUDGET_TOKENS, SCOPE_PATTERN

SCOPE_FIELDS = frozenset({"project_id", "subject_id"})
#: Error types that mean "this scope field is absent" (empty counts as absent).
_ABSENT = frozenset({"missing", "string_too_short"})
_LOCATIONS = ("body", "query", "path")

M = TypeVar("M", bound=BaseModel)

#: Request bodies nest at most this deep (arrays and objects); payloads are documents, not
#: trees: anything deeper is refused before parsing (Python's parser would recurse).
MAX_JSON_DEPTH = 32
#: Integers in a body have at most this many digits (Python refuses to convert more than
#: 4,300, and the conversion of long ones is quadratic).
MAX_INTEGER_DIGITS = 30
_JSON_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"')
_BRACKET = re.compile(r"[\[\]{}]")
_LONG_INTEGER = re.compile(rf"(?<![\d.eE+-])-?\d{{{MAX_INTEGER_DIGITS + 1},}}")


def loads_json(text: str | bytes) -> Any:
    """``json.loads`` with the bounds above; a violation is a ``json.JSONDecodeError`` (the
    API answers 422 ``validation_error``, like any malformed body)."""
    if isinstance(text, bytes):
        text = text.decode("utf-8")
    outside_strings = _JSON_STRING.sub('""', text)
    opened = outside_strings.count("[") + outside_strings.count("{")
    steps = (1 if b in "[{" else -1 for b in _BRACKET.findall(outside_strings))
    if opened > MAX_JSON_DEPTH and max(accumulate(steps)) > MAX_JSON_DEPTH:
        raise json.JSONDecodeError(
            f"nested deeper than {MAX_JSON_DEPTH} levels", text, 0)
    if _LONG_INTEGER.search(outside_strings):
        raise json.JSONDecodeError(
            f"an integer has more than {MAX_INTEGER_DIGITS} digits", text, 0)
    value = json.loads(text)
    if "\\u" in text and not _encodable(value):
        # JSON may escape half a surrogate pair; no database stores it as text.
        raise json.JSONDecodeError("a string holds an unpaired surrogate (\\ud800-\\udfff)",
                                   text, 0)
    return value


def _encodable(value: Any) -> bool:
    """Whether every string (keys included) of a parsed JSON value is valid Unicode."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return False
        return True
    if isinstance(value, dict):
        return all(_encodable(k) and _encodable(v) for k, v in value.items())
    if isinstance(value, list):
        return all(_encodable(v) for v in value)
    return True


def _parts(loc: Sequence[Any]) -> tuple[Any, ...]:
    """The location without its kind: ``("body", "facts", 3, "value")`` → ``("facts", 3,
    "value")``."""
    return tuple(loc[1:] if loc and loc[0] in _LOCATIONS else loc)


def _field(loc: Sequence[Any]) -> str:
    """``("body", "budget_tokens")`` → ``budget_tokens``; the location kind is dropped."""
    return ".".join(str(p) for p in _parts(loc)) or "body"


def _describe(error: Mapping[str, Any]) -> str:
    kind = error.get("type", "")
    loc = tuple(error.get("loc", ()))
    msg = error.get("msg", "invalid value")
    if kind == "string_pattern_mismatch" and (error.get("ctx") or {}).get("pattern") == (
            SCOPE_PATTERN):
        msg = "must hold no control character and not be blank"
    parts = _parts(loc)
    if len(parts) >= 2 and isinstance(parts[0], str) and isinstance(parts[1], int):
        # A record of a batch: name it by its index, e.g. "facts[3]: field 'value': ...".
        inner = ".".join(str(p) for p in parts[2:]) or "(record)"
        return f"{parts[0]}[{parts[1]}]: field '{inner}': {msg}"
    if kind == "json_invalid":
        detail = (error.get("ctx") or {}).get("error", "malformed")
        return f"the request body is not valid JSON ({detail})"
    if kind == "extra_forbidden":
        return f"unknown field {_field(loc)!r}"
    if kind == "missing":
        if loc == ("body",):
            return "a JSON request body is required"
        return f"field '{_field(loc)}' is required"
    if kind in ("uuid_parsing", "uuid_type"):
        return f"{_field(loc)} must be a UUID"
    if kind == "model_attributes_type" and loc == ("body",):
        return "the request body must be a JSON object"
    return f"field '{_field(loc)}': {msg}"


def classify_validation(errors: Sequence[Mapping[str, Any]]) -> HakiError:
    """The domain error for a list of Pydantic errors: scope first, then budget, then the rest.
    The message names each distinct problem (and the record of a batch by its index)."""
    absent_scope = [
        e for e in errors
        if e.get("type") in _ABSENT and e.get("loc") and str(e["loc"][-1]) in SCOPE_FIELDS
    ]
    if absent_scope:
        named = "; ".join(dict.fromkeys(_describe(e) for e in absent_scope))
        return MissingScope(f"{named} (a scope id is 1 to 128 characters)")
    if any(e.get("loc") and str(e["loc"][-1]) == "budget_tokens" for e in errors):
        return BudgetExceeded(
            f"budget_tokens must be a positive integer (at most {MAX_BUDGET_TOKENS})")
    message = "; ".join(dict.fromkeys(_describe(e) for e in errors)) or "invalid request"
    return ValidationFailed(message)


def parse(model: type[M], body: object) -> M:
    """Validate ``body`` into ``model``, raising the contract's error (see the module doc).

    Errors are located as the API locates a request body's (``("body", field, ...)``), so a
    field called ``query`` or ``path`` is never mistaken for a location.
    """
    try:
        return model.model_validate(body)
    except ValidationError as exc:
        errors = [{**e, "loc": ("body", *e["loc"])} for e in exc.errors()]
        raise classify_validation(errors) from exc
