"""Request validation errors → the contract's stable codes, for every entry point.

The API (Powertools raises the Pydantic errors of a request, located ``("body", field)``,
``("query", field)`` or ``("path", field)``) and the CLI (Pydantic errors located ``(field,)``)
classify through this one function, so the same input gets the same code everywhere: a missing
or empty ``project_id`` / ``subject_id`` is ``missing_scope``; a bad ``budget_tokens`` is
``budget_exceeded``; anything else (malformed JSON, wrong types, unknown fields, bad UUIDs) is
``validation_error`` — all 422.
"""

from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from haki.errors import BudgetExceeded, HakiError, MissingScope, ValidationFailed
from haki.models import MAX_BUDGET_TOKENS

SCOPE_FIELDS = frozenset({"project_id", "subject_id"})
#: Error types that mean "this scope field is absent" (empty counts as absent).
_ABSENT = frozenset({"missing", "string_too_short"})
_LOCATIONS = ("body", "query", "path")

M = TypeVar("M", bound=BaseModel)


def _field(loc: Sequence[Any]) -> str:
    """``("body", "budget_tokens")`` → ``budget_tokens``; the location kind is dropped."""
    parts = loc[1:] if loc and loc[0] in _LOCATIONS else loc
    return ".".join(str(p) for p in parts) or "body"


def _describe(error: Mapping[str, Any]) -> str:
    kind = error.get("type", "")
    loc = tuple(error.get("loc", ()))
    if kind == "json_invalid":
        detail = (error.get("ctx") or {}).get("error", "malformed")
        return f"the request body is not valid JSON ({detail})"
    if kind == "extra_forbidden":
        return f"unknown field {_field(loc)!r}"
    if kind == "missing":
        if loc == ("body",):
            return "a JSON request body is required"
        return f"{_field(loc)} is required"
    if kind in ("uuid_parsing", "uuid_type"):
        return f"{_field(loc)} must be a UUID"
    if kind == "model_attributes_type" and loc == ("body",):
        return "the request body must be a JSON object"
    return f"{_field(loc)}: {error.get('msg', 'invalid value')}"


def classify_validation(errors: Sequence[Mapping[str, Any]]) -> HakiError:
    """The domain error for a list of Pydantic errors: scope first, then budget, then the rest."""
    absent_scope = sorted({
        str(e["loc"][-1]) for e in errors
        if e.get("type") in _ABSENT and e.get("loc") and str(e["loc"][-1]) in SCOPE_FIELDS
    })
    if absent_scope:
        return MissingScope(
            f"{' and '.join(absent_scope)} must be given (1 to 128 characters): "
            "every call names its scope")
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
