"""Request validation errors → the contract's stable codes, for every entry point.

The API (Powertools raises the Pydantic errors of a request, located ``("body", field)``,
``("query", field)`` or ``("path", field)``) and the CLI (Pydantic errors located ``(field,)``)
classify through this one function, so the same input gets the same code everywhere: a missing
or empty ``project_id`` / ``subject_id`` is ``missing_scope``; a bad ``budget_tokens`` is
``budget_exceeded``; anything else (malformed JSON, wrong types, unknown fields, bad UUIDs) is
``validation_error`` — all 422.
"""

import json
import math
from collections.abc import Mapping, Sequence
from typing import Any, NoReturn, TypeVar

from pydantic import BaseModel, ValidationError

from haki.errors import BudgetExceeded, HakiError, MissingScope, PayloadTooLarge, ValidationFailed
from haki.models import MAX_BUDGET_TOKENS, SCOPE_PATTERN

SCOPE_FIELDS = frozenset({"project_id", "subject_id"})
#: Error types that mean "this scope field is absent" (empty counts as absent).
_ABSENT = frozenset({"missing", "string_too_short"})
_LOCATIONS = ("body", "query", "path")

M = TypeVar("M", bound=BaseModel)

#: The largest request body any route accepts, in bytes (the batch writes: 100 records). The
#: edge refuses a body over its route's limit (``haki_aws.routes``, at most this) before it
#: reads it; :func:`loads_json` refuses a larger text before parsing whatever calls it.
MAX_BODY_BYTES = 1_048_576
#: Request bodies nest at most this deep (arrays and objects); payloads are documents, not
#: trees: anything deeper is refused (the parser's own recursion limit is a refusal too).
MAX_JSON_DEPTH = 32
#: Integers in a body have at most this many digits (Python refuses to convert more than
#: 4,300, and the conversion of long ones is quadratic): checked on each integer's text as
#: the parser meets it, before it is converted.
MAX_INTEGER_DIGITS = 30


def _refuse(text: str, reason: str) -> NoReturn:
    raise json.JSONDecodeError(reason, text, 0)


def loads_json(text: str | bytes) -> Any:
    """The JSON value of a request body, parsed in time linear in its size (``json.loads``),
    then bounded. A text over :data:`MAX_BODY_BYTES` is :class:`PayloadTooLarge` (413), before
    parsing; anything else refused is a ``json.JSONDecodeError`` (the API answers 422
    ``validation_error``, like any malformed body): malformed JSON, ``NaN`` and ``Infinity``
    (not JSON), a number too large for a float, an integer over :data:`MAX_INTEGER_DIGITS`
    digits, nesting deeper than :data:`MAX_JSON_DEPTH`, a string holding half a surrogate
    pair."""
    size = len(text) if isinstance(text, bytes) else len(text.encode("utf-8", "surrogatepass"))
    if size > MAX_BODY_BYTES:
        raise PayloadTooLarge(
            f"the request body is {size} bytes; no request is larger than {MAX_BODY_BYTES}")
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError:
            _refuse("", "the request body is not UTF-8 text")
    source = text

    def integer(digits: str) -> int:
        if len(digits.lstrip("-")) > MAX_INTEGER_DIGITS:
            _refuse(source, f"an integer has more than {MAX_INTEGER_DIGITS} digits")
        return int(digits)

    def real(digits: str) -> float:
        number = float(digits)
        if not math.isfinite(number):
            _refuse(source, "a number is too large for a 64-bit float")
        return number

    def constant(name: str) -> NoReturn:
        _refuse(source, f"{name} is not a JSON number")

    try:
        value = json.loads(text, parse_int=integer, parse_float=real, parse_constant=constant)
    except RecursionError:
        _refuse(text, f"nested deeper than {MAX_JSON_DEPTH} levels")
    _check_parsed(text, value)
    return value


def _check_parsed(text: str, value: Any) -> None:
    """Refuse a parsed value nested deeper than :data:`MAX_JSON_DEPTH`, or holding a string
    (key or value) that is not valid Unicode: JSON may escape half a surrogate pair, and no
    database stores it as text. Iterative: a deep value costs no recursion."""
    stack = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, str):
            if not _encodable(item):
                _refuse(text, "a string holds an unpaired surrogate (\\ud800-\\udfff)")
            continue
        if not isinstance(item, dict | list):
            continue
        if depth >= MAX_JSON_DEPTH:
            _refuse(text, f"nested deeper than {MAX_JSON_DEPTH} levels")
        if isinstance(item, dict):
            stack.extend((key, depth) for key in item)
            stack.extend((inner, depth + 1) for inner in item.values())
        else:
            stack.extend((inner, depth + 1) for inner in item)


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
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
        if (e.get("type") in _ABSENT or e.get("input") == "")
        and e.get("loc") and str(e["loc"][-1]) in SCOPE_FIELDS
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
