"""API keys: their shape, hashing and authentication.

A key is ``hk_`` + 43 URL-safe characters (256 random bits). Only its sha256 is stored
(``api_keys.key_hash``) with a short prefix for display; the clear key is
returned once, at creation. The runtime role has no privilege on ``api_keys``: it resolves a
presented key through the ``haki_authenticate`` SECURITY DEFINER function, which returns only a
live (unrevoked) key's identity, so revocation takes effect on the very next call. Create, list
and revoke run as the owner (a ``haki_admin`` member), from the admin CLI
(``haki_local.admin``).
"""

import hashlib
import re
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from uuid import UUID

from haki.db import Database
from haki.errors import Unauthorized

KEY_PREFIX = "hk_"
#: Prefix of a project's usage key (the API Gateway API key its calls are metered under).
USAGE_KEY_PREFIX = "hku_"
#: What a key can look like. Anything else is refused before hashing (no database round trip).
_KEY_SHAPE = re.compile(r"^hk_[A-Za-z0-9_-]{20,128}$")
_UNAUTHORIZED = "a valid API key is required: Authorization: Bearer hk_..."


@dataclass(frozen=True)
class KeyIdentity:
    """Who a presented key belongs to. ``project_id`` is the only scope the key may use."""

    key_id: UUID
    org_id: str
    project_id: str
    #: The key's sha256: what binds this caller's transactions to its project (``haki_tenant``).
    key_hash: str


def hash_key(key: str) -> str:
    """The stored form of a key: sha256, lowercase hex."""
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def usage_key(project_id: str) -> str:
    """The value of the API Gateway API key a project's calls are metered under: derived from
    the project, so every key of a project shares one usage plan entry (its throttle and
    quota), and nothing needs storing. It is no secret: the deployed API takes it from the
    authorizer only (``apiKeySource: AUTHORIZER``), never from a caller's header
    (docs/decisions/2026-12-03-one-credential-authorizer.md)."""
    digest = hashlib.sha256(f"haki-usage\x00{project_id}".encode()).hexdigest()
    return USAGE_KEY_PREFIX + digest[:40]


def looks_like_key(key: str) -> bool:
    return bool(_KEY_SHAPE.match(key))


class IdentityCache:
    """Identities of keys recently authenticated by this process (a warm container), for at
    most ``ttl_s`` seconds each, ``max_entries`` at most (least recently used dropped first).

    Why it is safe: a key's identity (its id, org and project) never changes, only whether it
    is revoked — and that is checked again by every tenant transaction, in its first round
    trip (the scope statement resolves the key through ``haki_tenant()``; a
    revoked key is refused with 401 there, and row-level security shows it nothing). A hit
    therefore only saves the separate lookup round trip before routing. What a cached
    revoked key may still learn within ``ttl_s``: whether its request body was valid (422 is
    decided before the first transaction); and a read served by a read replica (inspect,
    the stats overview) sees the revocation once the replica has replayed it, its lag (the
    lookup it replaces ran on the writer). Unknown or revoked keys are never cached.
    """

    def __init__(self, ttl_s: float, max_entries: int = 1024,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._ttl_s = ttl_s
        self._max_entries = max_entries
        self._clock = clock
        self._entries: OrderedDict[str, tuple[float, KeyIdentity]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key_hash: str) -> KeyIdentity | None:
        with self._lock:
            entry = self._entries.get(key_hash)
            if entry is None:
                return None
            if self._clock() >= entry[0]:
                del self._entries[key_hash]
                return None
            self._entries.move_to_end(key_hash)
            return entry[1]

    def put(self, identity: KeyIdentity) -> None:
        if self._ttl_s <= 0 or self._max_entries <= 0:
            return
        with self._lock:
            self._entries[identity.key_hash] = (self._clock() + self._ttl_s, identity)
            self._entries.move_to_end(identity.key_hash)
            while len(self._entries) > self._max_entries:
                self._entries.popitem(last=False)

    def __len__(self) -> int:
        return len(self._entries)


def authenticate(db: Database, key: str | None,
                 cache: IdentityCache | None = None) -> KeyIdentity:
    """The identity of a live key; :class:`Unauthorized` for a missing, malformed, unknown or
    revoked one (the same answer for all four). With a ``cache``, a key authenticated within
    its TTL is answered without a round trip (see :class:`IdentityCache` for why that holds)."""
    if not key or not looks_like_key(key):
        raise Unauthorized(_UNAUTHORIZED)
    key_hash = hash_key(key)
    if cache is not None and (known := cache.get(key_hash)) is not None:
        return known
    # One statement, no transaction around it: one round trip.
    row = db.fetch_one("SELECT key_id, org_id, project_id FROM haki_authenticate(%s)",
                       (key_hash,))
    if row is None:
        raise Unauthorized(_UNAUTHORIZED)
    key_id, org_id, project_id = row
    assert isinstance(key_id, UUID)
    identity = KeyIdentity(key_id=key_id, org_id=str(org_id), project_id=str(project_id),
                           key_hash=key_hash)
    if cache is not None:
        cache.put(identity)
    return identity
