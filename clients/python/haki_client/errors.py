"""The exceptions the client raises: :class:`HakiError`, and one subclass per family of
answers, so that a caller catches what it can act on (``except RateLimitError``) and reads the
service's stable ``code`` for the detail.

==========================  ======  ===========================================================
class                       status  e.g. ``code``
==========================  ======  ===========================================================
:class:`BadRequestError`    4xx     ``payload_too_large`` (413), any other refused request
:class:`AuthenticationError` 401    ``unauthorized``
:class:`PermissionDeniedError` 403  ``forbidden_scope``
:class:`NotFoundError`      404     ``trace_not_found``, ``fact_not_found``
:class:`ConflictError`      409     ``conflict_not_open``, ``stale_supersedes``
:class:`ValidationError`    422     ``validation_error``, ``missing_scope``, ``budget_exceeded``
:class:`RateLimitError`     429     ``too_many_requests``
:class:`ServerError`        5xx     ``service_unavailable``, ``internal_error``
:class:`APIConnectionError` none    ``connection_error``: not reached, after the retries
:class:`APITimeoutError`    none    ``connection_error``: no answer in time, after the retries
:class:`UnexpectedResponseError` any ``unexpected_response``: not the API's JSON
:class:`ConfigurationError` none    ``configuration_error``: no API key
==========================  ======  ===========================================================
"""

#: Codes the client itself uses when the service gave no usable answer. Every other code is
#: the service's stable error code (docs/api.md, "Errors").
CONNECTION_ERROR = "connection_error"
UNEXPECTED_RESPONSE = "unexpected_response"
CONFIGURATION_ERROR = "configuration_error"
VALIDATION_ERROR = "validation_error"


class HakiError(Exception):
    """An error answer of the service, or no answer at all.

    ``code`` is the service's stable error code (``unauthorized``, ``forbidden_scope``,
    ``trace_not_found``, ``missing_scope``, ``budget_exceeded``, ``validation_error``,
    ``service_unavailable``, …) or one of the client's own: ``connection_error`` (the service
    could not be reached or did not answer in time, after the retries), ``unexpected_response``
    (an answer that is not the API's JSON, e.g. a proxy's error page) and
    ``configuration_error`` (no API key). ``status`` is the HTTP status, ``None`` when there
    was no answer; ``request_id`` the service's ``x-amzn-RequestId``, to quote in a bug report.
    """

    def __init__(
        self, code: str, message: str, *, status: int | None = None,
        request_id: str | None = None,
    ) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.status = status
        self.request_id = request_id

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(code={self.code!r}, message={self.message!r}, "
                f"status={self.status!r}, request_id={self.request_id!r})")


class BadRequestError(HakiError):
    """A request the service refused (a 4xx without a family of its own below)."""


class AuthenticationError(BadRequestError):
    """401: the API key is missing, unknown or revoked."""


class PermissionDeniedError(BadRequestError):
    """403: the key may not act on this project."""


class NotFoundError(BadRequestError):
    """404: no such trace, fact or conflict in this scope."""


class ConflictError(BadRequestError):
    """409: the request contradicts the stored state (a conflict no longer open, a stale
    ``supersedes_id``, …)."""


class ValidationError(BadRequestError):
    """422 (or refused by the client before sending): a field out of bounds, a missing scope,
    a budget too large."""


class RateLimitError(HakiError):
    """429: throttled, after the retries."""


class ServerError(HakiError):
    """5xx: the service or the memory store failed, after the retries for what is retried."""


class APIConnectionError(HakiError):
    """No answer: the service could not be reached, or the connection dropped."""


class APITimeoutError(APIConnectionError):
    """No answer within the timeout (the client's or the call's ``timeout=``)."""


class UnexpectedResponseError(HakiError):
    """An answer that is not the API's JSON (e.g. a proxy's HTML error page)."""


class ConfigurationError(HakiError):
    """The client cannot be built as configured (no API key)."""


#: The family of each status the API answers with a class of its own.
_BY_STATUS: dict[int, type[HakiError]] = {
    401: AuthenticationError, 403: PermissionDeniedError, 404: NotFoundError,
    409: ConflictError, 422: ValidationError, 429: RateLimitError,
}


def error_for(code: str, message: str, *, status: int | None = None,
              request_id: str | None = None) -> HakiError:
    """The exception of an error answer: its class by status family (by code when there was
    no answer)."""
    cls: type[HakiError]
    if code == UNEXPECTED_RESPONSE:
        cls = UnexpectedResponseError
    elif status is None:
        cls = {CONFIGURATION_ERROR: ConfigurationError,
               VALIDATION_ERROR: ValidationError}.get(code, HakiError)
    elif status in _BY_STATUS:
        cls = _BY_STATUS[status]
    elif status >= 500:
        cls = ServerError
    elif status >= 400:
        cls = BadRequestError
    else:
        cls = HakiError
    return cls(code, message, status=status, request_id=request_id)
