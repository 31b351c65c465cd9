"""The admin operations on projects and API keys, run as the owner from the admin CLI.

A key is ``hk_`` + 43 URL-safe characters (256 random bits), returned once at creation; only
its sha256 is stored, with a short prefix for display. A project belongs to exactly one org
(``projects``) and a key to a project of its own org: a key for a project
another org owns is refused, and a key for an unknown project is made only when the caller asks
for the project to be created.
"""

import secrets
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime
from uuid import UUID

import psycopg

from haki.db import Database
from haki.errors import ProjectOfAnotherOrg, ValidationFailed
from haki.identities import canonical_identifier
from haki.keys import KEY_PREFIX, hash_key

#: Characters of the key kept for display ("hk_" + 7): enough to tell keys apart, useless
#: to guess the rest.
DISPLAY_PREFIX_CHARS = 10


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



def display_prefix(key: str) -> str:
    return key[:DISPLAY_PREFIX_CHARS]



_COLUMNS = "id, prefix, org_id, project_id, label, created_at, revoked_at"


def _check_ids(org_id: str, project_id: str) -> None:
    """Ids as the API takes them: 1 to 128 characters, in their canonical spelling (NFC, no
    control or invisible character: ``haki.identities``), so that requests can name them."""
    for name, value in (("org", org_id), ("project", project_id)):
        try:
            canonical = canonical_identifier(value)
        except ValueError:
            canonical = None
        if not 1 <= len(value) <= 128 or canonical != value:
            raise ValidationFailed(f"{name} id must be 1 to 128 characters in Unicode NFC, none "
                                   "a control or invisible one")


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
               create_project: bool = False,
               before_insert: Callable[[str], object] | None = None) -> NewKey:
    """Create a key for a project of ``org_id`` (as the owner); the project must exist and be
    that org's, or is created first with ``create_project``. The clear key is not kept.

    ``before_insert`` is called with the project id once the project is checked, inside the
    key's transaction (registering the project's usage key, say): when it raises, neither the
    key nor the project is made."""
    _check_ids(org_id, project_id)
    key = generate_key()
    with db.transaction() as conn:
        _ensure_project(conn, org_id, project_id, create=create_project)
        if before_insert is not None:
            before_insert(project_id)
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
