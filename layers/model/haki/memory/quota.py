"""Per-project storage quotas: a write that would leave its project holding more facts or
events than ``HAKI_MAX_FACTS_PER_PROJECT`` / ``HAKI_MAX_EVENTS_PER_PROJECT`` is refused with
413 ``storage_quota_exceeded``, and nothing of it is stored.

The database keeps each project's counts (``project_storage``, kept by ``haki_storage_count``:
a few slot rows per project that triggers update on every insert and delete, whoever writes), so
the check is
one index scan at the end of the write's own transaction, never a count of rows. It sees what
the transaction wrote and what others committed: writes of one project committing at the same
moment may together pass the quota by at most what they add (a batch is ≤ 100 records).
"""

from dataclasses import dataclass

import psycopg

from haki.errors import StorageQuotaExceeded
from haki.settings import Settings, get_settings

#: The project's counts, this transaction's writes included (RLS: the key's project only).
SELECT_STORED = """
SELECT coalesce(sum(facts), 0), coalesce(sum(events), 0)
FROM project_storage WHERE project_id = %s
"""


@dataclass(frozen=True)
class StorageQuota:
    """How many facts and events one project may hold (rows of any status)."""

    max_facts: int
    max_events: int

    @classmethod
    def from_settings(cls, settings: Settings | None = None) -> "StorageQuota":
        s = settings or get_settings()
        return cls(max_facts=s.max_facts_per_project, max_events=s.max_events_per_project)


def stored_counts(conn: psycopg.Connection, project_id: str) -> tuple[int, int]:
    """The facts and events ``project_id`` holds, as this transaction sees them."""
    row = conn.execute(SELECT_STORED, (project_id,)).fetchone()
    assert row is not None
    return int(row[0]), int(row[1])


def check_storage_quota(
    conn: psycopg.Connection, project_id: str, quota: StorageQuota | None, *,
    facts_added: int = 0, events_added: int = 0,
) -> None:
    """Refuse (and so roll back) a write that added rows past its project's quota. Called at
    the end of the write's transaction; a write that added nothing (replays, reinforcements)
    passes, so a project over its quota can still be read, replayed and erased."""
    if facts_added <= 0 and events_added <= 0:
        return
    quota = quota or StorageQuota.from_settings()
    facts, events = stored_counts(conn, project_id)
    for added, held, limit, what, setting in (
        (facts_added, facts, quota.max_facts, "facts", "HAKI_MAX_FACTS_PER_PROJECT"),
        (events_added, events, quota.max_events, "events", "HAKI_MAX_EVENTS_PER_PROJECT"),
    ):
        if added > 0 and held > limit:
            raise StorageQuotaExceeded(
                f"this write would bring the project to {held} {what}; it may hold "
                f"{limit} ({setting}): erase memory it no longer needs (POST /v1/forget) or "
                "ask the operator for a larger quota")
