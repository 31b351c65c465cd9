"""The one exception the client raises."""

#: Codes the client itself uses when the service gave no usable answer. Every other code is
#: the service's stable error code (docs/api.md, "Errors").
CONNECTION_ERROR = "connection_error"
UNEXPECTED_RESPONSE = "unexpected_response"
CONFIGURATION_ERROR = "configuration_error"


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
        return (f"HakiError(code={self.code!r}, message={self.message!r}, "
                f"status={self.status!r}, request_id={self.request_id!r})")
