"""API-key authentication and tenancy at the edge (docs/spec.md §6).

Every request presents ``Authorization: Bearer hk_...``. The key is resolved before routing
(so an unauthenticated caller learns nothing, not even whether its body is valid); the
identity rides in the resolver context, and each route checks that the project it names is
the key's. The tenant scope handed to the core is always the key's project.

A warm container remembers the keys it authenticated for ``HAKI_AUTH_CACHE_SECONDS``
(:class:`haki.keys.IdentityCache`), so a repeat caller's request costs no lookup round trip:
its key is checked again, in the first round trip of every transaction it opens.
"""

from collections.abc import Mapping
from functools import cache
from typing import Any

from aws_lambda_powertools.event_handler import APIGatewayRestResolver

from haki.db import Database
from haki.errors import ForbiddenScope
from haki.keys import IdentityCache, KeyIdentity, authenticate
from haki.settings import get_settings
from haki_aws.observability import log_scope

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


@cache
def identity_cache() -> IdentityCache:
    """This process's cache of authenticated keys (one per container)."""
    return IdentityCache(get_settings().auth_cache_seconds)


def authenticate_event(db: Database, event: Mapping[str, Any]) -> KeyIdentity:
    return authenticate(db, bearer_token(event.get("headers")), identity_cache())


def key_scope(app: APIGatewayRestResolver, project_id: str | None) -> str:
    """The key's project, after checking the request names that project (else 403); a
    request that names none is the key's project (a key is bound to one)."""
    identity: KeyIdentity = app.context[IDENTITY]
    if project_id is not None and project_id != identity.project_id:
        raise ForbiddenScope(_FORBIDDEN)
    return identity.project_id


def request_scope(app: APIGatewayRestResolver, project_id: str | None,
                  subject_id: str | None, **keys: str) -> str:
    """The request's scope: the key's project, checked as :func:`key_scope` does, put with the
    subject (and ``keys``, e.g. the id a route acts on) on every later log line of the
    invocation (:func:`log_scope`)."""
    scope = key_scope(app, project_id)
    log_scope(scope, subject_id, **keys)
    return scope
