"""Domain exceptions. Each carries the stable error code of the public API contract.

They are mapped to HTTP responses in exactly one place (the handlers' error mapper) and to
exit codes in the CLI. Messages are safe to show to the caller: never a stack trace, never a
hint that another tenant's data exists.
"""

from collections.abc import Mapping, Sequence
from typing import Any


class HakiError(Exception):
    """Base class: ``code`` is the stable API error code, ``status`` its HTTP status."""

    code = "internal_error"
    status = 500
    #: Whether an API route can answer with it (the admin CLI's own errors cannot).
    api = True

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class ConfigurationError(HakiError):
    """The service is misconfigured (bad environment variable, missing model files)."""

    code = "configuration_error"
    status = 500


class ValidationFailed(HakiError):
    """The request is malformed (wrong type, unknown field, bad UUID, too large)."""

    code = "validation_error"
    status = 422

    @classmethod
    def from_errors(
        cls, errors: Sequence[Mapping[str, Any]], where: str | None = None
    ) -> "ValidationFailed":
        """The first Pydantic error as ``facts[3]: field 'value': <why>``.

        ``where`` names the record when the caller validated it alone; otherwise a location
        that starts with a list and an index (``("facts", 3, "value")``) names it.
        """
        first = errors[0]
        loc = [str(part) for part in first.get("loc", ())]
        raw = tuple(first.get("loc", ()))
        if where is None and len(raw) >= 2 and isinstance(raw[1], int):
            where, loc = f"{raw[0]}[{raw[1]}]", loc[2:]
        field = ".".join(loc) or "(record)"
        prefix = f"{where}: " if where else ""
        return cls(f"{prefix}field '{field}': {first.get('msg', 'invalid value')}")


class MissingScope(HakiError):
    """A required ``project_id`` / ``subject_id`` is absent."""

    code = "missing_scope"
    status = 422


class BudgetExceeded(HakiError):
    """``budget_tokens`` is not a positive integer."""

    code = "budget_exceeded"
    status = 422


class Unauthorized(HakiError):
    """Missing, unknown or revoked API key."""

    code = "unauthorized"
    status = 401


class ForbiddenScope(HakiError):
    """The request names a project other than the API key's."""

    code = "forbidden_scope"
    status = 403


class ProjectOfAnotherOrg(HakiError):
    """A key was asked for a project that another org owns (admin CLI only)."""

    code = "project_of_another_org"
    status = 409
    api = False


class TraceNotFound(HakiError):
    """Unknown trace id, or one of another scope (the same answer: no existence leak)."""

    code = "trace_not_found"
    status = 404


class ServiceUnavailable(HakiError):
    """The database (or another dependency) cannot be reached right now."""

    code = "service_unavailable"
    status = 503


class MigrationError(HakiError):
    """A migration failed, or an applied migration file was edited after it ran."""

    code = "migration_error"
    status = 500


# --------------------------------------------------------------------------- memory writes
# Messages of batch requests start with the offending record's place, e.g. ``facts[3]: ...``.


class PayloadTooLarge(HakiError):
    """A request body, one record's payload, or the text a batch embeds is larger than its
    documented limit."""

    code = "payload_too_large"
    status = 413


class StorageQuotaExceeded(HakiError):
    """The write would leave its project holding more facts or events than its storage quota;
    nothing of it is stored."""

    code = "storage_quota_exceeded"
    status = 413


class UnknownReference(HakiError):
    """A record names an event or fact that does not exist in its scope (another project's
    ids give the same answer as unknown ones)."""

    code = "unknown_reference"
    status = 422


class IllegalStatusTransition(HakiError):
    """The fact's lifecycle graph (SPEC §11) has no edge from its status to the one asked."""

    code = "illegal_status_transition"
    status = 422


class FactNotFound(HakiError):
    """Unknown fact id, or one of another project (the same answer)."""

    code = "fact_not_found"
    status = 404


class ConflictNotFound(HakiError):
    """Unknown conflict set id, or one of another project (the same answer)."""

    code = "conflict_not_found"
    status = 404


class ConflictNotOpen(HakiError):
    """The conflict set was already resolved."""

    code = "conflict_not_open"
    status = 409


class ConflictFactNotActive(HakiError):
    """The fact a resolution keeps is no longer active."""

    code = "conflict_fact_not_active"
    status = 409


class StaleSupersedes(HakiError):
    """``supersedes_id`` names a fact that is not (or no longer) the active fact of the
    record's subject and predicate."""

    code = "stale_supersedes"
    status = 409


class FactInOpenConflict(HakiError):
    """``supersedes_id`` names a fact of an open conflict set: resolve the set first."""

    code = "fact_in_open_conflict"
    status = 409


class IdempotencyConflict(HakiError):
    """An event's ``id`` or ``idempotency_key`` was already used for a different event."""

    code = "idempotency_conflict"
    status = 409


# --------------------------------------------------------------------------- feedback


class InvalidFeedbackIds(HakiError):
    """Feedback names ids it cannot: ``used`` ids the call did not serve, or ``missing`` ids
    that are no fact or event of the call's subject (another subject's or project's ids get the
    same answer as unknown ones). The message names them."""

    code = "invalid_feedback_ids"
    status = 422
