"""API keys: generation, hashing, authentication and the admin operations.

A key is ``hk_`` + 43 URL-safe characters (256 random bits). Only its sha256 is stored
(``api_keys.key_hash``, migration 0003) with a short prefix for display; the clear key is
returned once, at creation. The runtime role has no privilege on ``api_keys``: it resolves a
presented key through the ``haki_authenticate`` SECURITY DEFINER function, which returns only a
live (unrevoked) key's identity, so revocation takes effect on the very next call. Create, list
and revoke run as the owner (a ``haki_admin`` member), from the admin CLI.
"""

import hashlib
import re
import secrets
from dataclasses import dataclass
from datetime import datetime
from uuid import UUID

from haki.db import Database
from haki.errors import Unauthorized, ValidationFailed

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


def authenticate(db: Database, key: str | None) -> KeyIdentity:
    """The identity of a live key; :class:`Unauthorized` for a missing, malformed, unknown or
    revoked one (the same answer for all four)."""
    if not key or not looks_like_key(key):
        raise Unauthorized(_UNAUTHORIZED)
    with db.transaction() as conn:
        row = conn.execute(
            "SELECT key_id, org_id, project_id FROM haki_authenticate(%s)", (hash_key(key),)
        ).fetchone()
    if row is None:
        raise Unauthorized(_UNAUTHORIZED)
    return KeyIdentity(key_id=row[0], org_id=row[1], project_id=row[2])


_COLUMNS = "id, prefix, org_id, project_id, label, created_at, revoked_at"


def create_key(db: Database, *, org_id: str, project_id: str, label: str | None = None) -> NewKey:
    """Create a key for one project (as the owner). The returned clear key is not kept."""
    for name, value in (("org", org_id), ("project", project_id)):
        if not 1 <= len(value) <= 128:
            raise ValidationFailed(f"{name} id must be 1 to 128 characters")
    key = generate_key()
    with db.transaction() as conn:
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
