"""The console under ``haki serve``: the same page and files as the deployed stack's console
function (``functions/console``), on the same loopback port as the API, outside ``/v1``
(:mod:`haki_local.server` routes ``/console`` and every path under it here). The page reads
the project through the public API routes with the key it is given, as it does deployed."""

from collections.abc import Mapping

from starlette.responses import Response

from functions.console.app import PREFIX, answer

__all__ = ["PREFIX", "Console"]


class Console:
    """Answers the requests of ``/console`` and of the paths under it."""

    def handle(self, method: str, path: str, headers: Mapping[str, str]) -> Response:
        status, answer_headers, body = answer(method, path)
        return Response(b"" if method == "HEAD" else body, status, answer_headers)

    def close(self) -> None:
        """Nothing to release: the console holds no connection."""
