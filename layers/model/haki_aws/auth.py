"""API-key authentication and tenancy at the edge (docs/spec.md §6).

Every request presents ``Authorization: Bearer hk_...``. The key is resolved before routing
(so an unauthenticated caller learns nothing, not even whether its body is valid); the
identity rides in the resolver context, and each route checks that the project it names is
the key's. The tenant scope handed to the core is always the key's project.
"""

from collections.abc import Mapping
from typing import Any

from aws_lambda_powertools.event_handler import APIGatewayRestResolver

from haki.db import Database
from haki.errors import ForbiddenScope
from haki.keys import KeyIdentity, authenticate

IDENTITY = "identity"
_FORBIDDEN = "this API key is not valid for the requested project"


def bearer_token(headers: Mapping[str, str] | None) -> str | None:
    """The token of an ``Authorization: Bearer <token>`` header (name and scheme are
    case-insensitive); ``None`` when absent or of another scheme."""
    for name, value in (headers or {}).items():
        if name.lower() == "authorization" and value:
            scheme, _, token = value.strip().partition(" ")
            if scheme.lower() == "bearer" and token.strip():
                return token.strip()
    return None


def authenticate_event(db: Database, event: Mapping[str, Any]) -> KeyIdentity:
    return authenticate(db, bearer_token(event.get("headers")))


def key_scope(app: APIGatewayRestResolver, project_id: str) -> str:
    """The key's project, after checking the request names that project (else 403)."""
    identity: KeyIdentity = app.context[IDENTITY]
    if project_id != identity.project_id:
        raise ForbiddenScope(_FORBIDDEN)
    return identity.project_id
