"""API keys: generation, hashing, authentication and the admin operations.

A key is ``hk_`` + 43 URL-safe characters (256 random bits). Only its sha256 is stored
(``api_keys.key_hash``, migration 0003) with a short prefix for display; the clear key is
returned once, at creation. The runtime role has no privilege on ``api_keys``: it resolves a
presented key through the ``haki_authenticate`` SECURITY DEFINER function, which returns only a
live (unrevoked) key's identity, so revocation takes effect on the very next call. Create, list
and revoke run as the owner (a ``haki_admin`` member), from the admin CLI.

A project belongs to exactly one org (``projects``, migration 0013) and a key to a project of
its own org: a key for a project another org owns is refused, and a key for an unknown project
is made only when the caller asks for the project to be created.
"""

import hashlib
import re
import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime
from uuid import UUID

import psycopg

from haki.db import Database
from haki.errors import ProjectOfAnotherOrg, Unauthorized, ValidationFailed

KEY_PREFIX = "hk_"
#: Characters of the key kept for display ("hk_" + 7): enough to tell keys apart, useless
#: to guess the rest.
DISPLAY_PREFIX_CHARS = 10
#: What a key can look like. Anything else is refused before hashing (no database round trip).
_KEY_SHAPE = re.compile(r"^hk_[A-Za-z0-9_-]{20,128}$")
_UNAUTHORIZED = "a valid API key is required: Authorization: Bearer hk_..."


@dataclass(frozen=True)
class KeyIdentity:
    """Who a presented key belongs to. ``project_id`` is the only scope the key may use."""

    key_id: UUID
    org_id: str
    project_id: str
    #: The key's sha256: what binds this caller's transactions to its project (migration 0013).
    key_hash: str


@dataclass(frozen=True)
class ProjectInfo:
    project_id: str
    org_id: str
    created_at: datetime


@dataclass(frozen=True)
class KeyInfo:
    """A stored key as the admin sees it: never the key itself, only its prefix."""

    id: UUID
    prefix: str
    org_id: str
    project_id: str
    label: str | None
    created_at: datetime
    revoked_at: datetime | None

    @property
    def masked(self) -> str:
        return f"{self.prefix}…"


@dataclass(frozen=True)
class NewKey:
    """A freshly created key: ``key`` is the clear text, shown once and never stored."""

    key: str
    info: KeyInfo


def generate_key() -> str:
    return KEY_PREFIX + secrets.token_urlsafe(32)


def hash_key(key: str) -> str:
    """The stored form of a key: sha256, lowercase hex."""
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def display_prefix(key: str) -> str:
    return key[:DISPLAY_PREFIX_CHARS]


def looks_like_key(key: str) -> bool:
    return bool(_KEY_SHAPE.match(key))


class IdentityCache:
    """Identities of keys recently authenticated by this process (a warm container), for at
    most ``ttl_s`` seconds each, ``max_entries`` at most (least recently used dropped first).

    Why it is safe: a key's identity (its id, org and project) never changes, only whether it
    is revoked — and that is checked again by every tenant transaction, in its first round
    trip (the scope statement resolves the key through ``haki_tenant()``, migration 0013; a
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


_COLUMNS = "id, prefix, org_id, project_id, label, created_at, revoked_at"


def _check_ids(org_id: str, project_id: str) -> None:
    for name, value in (("org", org_id), ("project", project_id)):
        if not 1 <= len(value) <= 128 or any(ord(ch) < 32 for ch in value):
            raise ValidationFailed(f"{name} id must be 1 to 128 characters, none a control one")


#: The owner org of a project, locked against a concurrent change for the transaction.
_PROJECT_OWNER = "SELECT org_id FROM projects WHERE project_id = %s FOR SHARE"
_INSERT_PROJECT = """
INSERT INTO projects (project_id, org_id) VALUES (%s, %s)
ON CONFLICT (project_id) DO NOTHING
RETURNING project_id, org_id, created_at
"""


def _ensure_project(
    conn: psycopg.Connection, org_id: str, project_id: str, *, create: bool
) -> None:
    """The project exists and is ``org_id``'s (created when ``create``), else a domain error."""
    owner = conn.execute(_PROJECT_OWNER, (project_id,)).fetchone()
    if owner is None and create:
        conn.execute(_INSERT_PROJECT, (project_id, org_id))
        owner = conn.execute(_PROJECT_OWNER, (project_id,)).fetchone()
    if owner is None:
        raise ValidationFailed(
            f"no project {project_id!r}: create it first (haki projects create --org "
            f"{org_id} --project {project_id}) or pass --create-project")
    if owner[0] != org_id:
        raise ProjectOfAnotherOrg(f"project {project_id!r} belongs to another org")


def create_project(db: Database, *, org_id: str, project_id: str) -> ProjectInfo:
    """Create a project owned by ``org_id`` (as the owner); creating it again for the same org
    returns it, for another org is refused."""
    _check_ids(org_id, project_id)
    with db.transaction() as conn:
        _ensure_project(conn, org_id, project_id, create=True)
        row = conn.execute("SELECT project_id, org_id, created_at FROM projects "
                           "WHERE project_id = %s", (project_id,)).fetchone()
    assert row is not None  # just ensured
    return ProjectInfo(*row)


def list_projects(db: Database) -> list[ProjectInfo]:
    with db.transaction() as conn:
        rows = conn.execute("SELECT project_id, org_id, created_at FROM projects "
                            "ORDER BY created_at, project_id").fetchall()
    return [ProjectInfo(*row) for row in rows]


def create_key(db: Database, *, org_id: str, project_id: str, label: str | None = None,
               create_project: bool = False) -> NewKey:
    """Create a key for a project of ``org_id`` (as the owner); the project must exist and be
    that org's, or is created first with ``create_project``. The clear key is not kept."""
    _check_ids(org_id, project_id)
    key = generate_key()
    with db.transaction() as conn:
        _ensure_project(conn, org_id, project_id, create=create_project)
        row = conn.execute(
            f"INSERT INTO api_keys (key_hash, prefix, org_id, project_id, label) "
            f"VALUES (%s, %s, %s, %s, %s) RETURNING {_COLUMNS}",
            (hash_key(key), display_prefix(key), org_id, project_id, label),
        ).fetchone()
    assert row is not None  # INSERT ... RETURNING always returns the row
    return NewKey(key=key, info=KeyInfo(*row))


def list_keys(db: Database, *, project_id: str | None = None) -> list[KeyInfo]:
    """Every key (as the owner), oldest first, optionally of one project."""
    with db.transaction() as conn:
        rows = conn.execute(
            f"SELECT {_COLUMNS} FROM api_keys "
            "WHERE %(project_id)s::text IS NULL OR project_id = %(project_id)s "
            "ORDER BY created_at, id",
            {"project_id": project_id},
        ).fetchall()
    return [KeyInfo(*row) for row in rows]


def revoke_key(db: Database, key_id: UUID) -> KeyInfo | None:
    """Revoke a key (as the owner); ``None`` when no such key exists. Revoking twice keeps the
    first revocation time."""
    with db.transaction() as conn:
        row = conn.execute(
            f"UPDATE api_keys SET revoked_at = coalesce(revoked_at, now()) "
            f"WHERE id = %s RETURNING {_COLUMNS}",
            (key_id,),
        ).fetchone()
    return KeyInfo(*row) if row else None


def tenant_keys(db: Database, projects: Iterable[str], *, org_id: str, label: str
                ) -> dict[str, str]:
    """A new key for each project (the project created for ``org_id`` when absent), as
    project → key hash: for tools that act as the tenants of a database they own (evaluation,
    benchmarks, tests) through ``haki.db.acting_for``."""
    return {project: hash_key(create_key(db, org_id=org_id, project_id=project, label=label,
                                         create_project=True).key)
            for project in sorted(set(projects))}
