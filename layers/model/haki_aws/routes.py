"""The public route table: one source for the CDK REST API and the local HTTP server.

Each route names the Lambda function (a folder under ``functions/``) that serves it, so the
deployed API Gateway and the local adapter dispatch the same requests to the same handlers.
"""

from dataclasses import dataclass


@dataclass(frozen=True)
class Route:
    method: str
    #: API Gateway resource path; ``{name}`` marks a path parameter.
    path: str
    #: Folder under ``functions/`` whose ``app.handler`` serves the route.
    function: str


ROUTES: tuple[Route, ...] = (
    Route("POST", "/v1/context", "context"),
    Route("GET", "/v1/inspect/{trace_id}", "inspect"),
    Route("GET", "/v1/stats/overview", "stats"),
)
