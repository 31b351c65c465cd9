"""Per-project storage quotas against the real database: the counts the database keeps follow
every write, replay and erasure (and concurrent writers, without a deadlock), and a write past
the quota is 413 ``storage_quota_exceeded`` with nothing of it stored."""

import uuid
from typing import Any

import pytest

from haki.db import Database, Role
from haki.db.connection import acting_for
from haki.errors import StorageQuotaExceeded
from haki.memory.api import EventsRequest, FactsRequest
from haki.memory.events import ingest_events
from haki.memory.facts import write_facts
from haki.memory.quota import StorageQuota, stored_counts
from haki.validation import parse
from tests.integration.conftest import Seeder, Writes, run_together, unit_vector


def _events(writes: Writes, quota: StorageQuota, *keys: str, subject: str = "alice") -> Any:
    body = {"project_id": writes.project_id, "events": [
        {"subject_id": subject, "kind": "note", "idempotency_key": key,
         "payload": {"text": f"note {key}"}} for key in keys]}
    with acting_for(writes.key_hash):
        return ingest_events(writes.db, writes.embedder, writes.project_id,
                             parse(EventsRequest, body), quota)


def _facts(writes: Writes, quota: StorageQuota, *values: tuple[str, str]) -> Any:
    body = {"project_id": writes.project_id, "facts": [
        {"subject_id": "alice", "predicate": predicate, "value": value}
        for predicate, value in values]}
    with acting_for(writes.key_hash):
        return write_facts(writes.db, writes.embedder, writes.project_id,
                           parse(FactsRequest, body), quota)


def _counted(writes: Writes) -> tuple[int, int]:
    """The counts the database keeps, as the tenant reads them."""
    with acting_for(writes.key_hash), writes.db.transaction(writes.project_id) as conn:
        return stored_counts(conn, writes.project_id)


def _actual(writes: Writes) -> tuple[int, int]:
    return writes.count("facts"), writes.count("events")


ROOMY = StorageQuota(max_facts=1000, max_events=1000)


def test_the_counts_follow_writes_replays_erasures_and_the_owners_rows(writes: Writes) -> None:
    assert _counted(writes) == (0, 0)
    _events(writes, ROOMY, "a", "b", "c")
    _events(writes, ROOMY, "a", "b")  # a replay stores nothing
    _events(writes, ROOMY, "z", subject="bob")
    _facts(writes, ROOMY, ("city", "Lyon"), ("job", "nurse"))
    _facts(writes, ROOMY, ("city", "Lyon"))  # reinforced: no new row
    _facts(writes, ROOMY, ("city", "Paris"))  # a second value: a new row (in conflict)
    Seeder(writes.owner, writes.project_id).event("note", {"text": "loaded"}, unit_vector(1))
    assert _counted(writes) == _actual(writes) == (3, 5)
    writes.forget(mode="delete", subject_id="alice")
    assert _counted(writes) == _actual(writes) == (0, 1)


def test_a_write_past_the_event_quota_is_refused_whole(writes: Writes) -> None:
    quota = StorageQuota(max_facts=1000, max_events=3)
    _events(writes, quota, "a", "b")
    with pytest.raises(StorageQuotaExceeded, match="4 events; it may hold 3") as refused:
        _events(writes, quota, "c", "d")
    assert (refused.value.status, refused.value.code) == (413, "storage_quota_exceeded")
    assert "HAKI_MAX_EVENTS_PER_PROJECT" in str(refused.value)
    assert _counted(writes) == _actual(writes) == (0, 2)  # nothing of the batch
    # What fits still goes in; a replay adds nothing and passes even at the quota.
    _events(writes, quota, "c")
    assert [e.deduplicated for e in _events(writes, quota, "a", "c").events] == [True, True]
    with pytest.raises(StorageQuotaExceeded):
        _events(writes, quota, "e")
    assert _actual(writes) == (0, 3)


def test_a_write_past_the_fact_quota_is_refused_and_reinforcing_still_works(
    writes: Writes,
) -> None:
    quota = StorageQuota(max_facts=1, max_events=1000)
    _facts(writes, quota, ("city", "Lyon"))
    with pytest.raises(StorageQuotaExceeded, match="facts"):
        _facts(writes, quota, ("job", "nurse"))
    assert [f.outcome for f in _facts(writes, quota, ("city", "Lyon")).facts] == ["reinforced"]
    assert _counted(writes) == _actual(writes) == (1, 0)


def test_the_settings_give_the_default_quota() -> None:
    from haki.settings import Settings

    quota = StorageQuota.from_settings(Settings.from_env({
        "HAKI_MAX_FACTS_PER_PROJECT": "5", "HAKI_MAX_EVENTS_PER_PROJECT": "7"}))
    assert quota == StorageQuota(max_facts=5, max_events=7)
    defaults = StorageQuota.from_settings(Settings())
    assert defaults.max_facts >= 100_000 and defaults.max_events >= defaults.max_facts


def test_concurrent_writers_are_counted_exactly_without_waiting_on_each_other(
    writes: Writes, db_urls: dict[Role, str],
) -> None:
    batches = iter(range(1000))

    def write(db: Database) -> None:
        batch = next(batches)
        own = Writes(db, writes.embedder, writes.project_id, writes.owner, writes.key_hash)
        _events(own, ROOMY, *(f"t{batch}-{i}" for i in range(6)), subject=f"s{batch % 2}")

    run_together(db_urls[Role.APP], write, times=8)
    assert _counted(writes) == _actual(writes) == (0, 48)
    slots = writes.owner.execute("SELECT count(*) FROM project_storage WHERE project_id = %s",
                                 (writes.project_id,)).fetchone()
    assert slots is not None and 1 <= slots[0] <= 8


def test_a_tenant_reads_its_own_counts_only(writes: Writes, db_urls: dict[Role, str]) -> None:
    other = Writes(writes.db, writes.embedder, f"proj-{uuid.uuid4().hex[:12]}", writes.owner)
    _events(other, ROOMY, "x")
    _events(writes, ROOMY, "y", "z")
    with acting_for(writes.key_hash), writes.db.transaction(writes.project_id) as conn:
        rows = conn.execute("SELECT DISTINCT project_id FROM project_storage").fetchall()
        assert rows == [(writes.project_id,)]
        assert stored_counts(conn, other.project_id) == (0, 0)
