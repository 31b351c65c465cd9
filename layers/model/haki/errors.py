"""Domain exceptions. Each carries the stable error code of the public API contract.

They are mapped to HTTP responses in exactly one place (the handlers' error mapper) and to
exit codes in the CLI. Messages are safe to show to the caller: never a stack trace, never a
hint that another tenant's data exists.
"""


class HakiError(Exception):
    """Base class: ``code`` is the stable API error code, ``status`` its HTTP status."""

    code = "internal_error"
    status = 500

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
