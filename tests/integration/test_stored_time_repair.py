"""A subject holding times outside the documented range (1970 to 9999 in UTC), written before
the API checked them: migration 0018 moves them to the nearest bound, and the subject's context
call and facts listing answer again; afterwards no such time can be stored, even by the owner.

The database is migrated up to 0017, poisoned as the owner, then migrated to the end."""

import shutil
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import psycopg
import pytest

from haki.db import Database, Role
from haki.db.connection import connect
from haki.db.migrate import apply_migrations
from haki.embedding import Embedder
from tests.integration.conftest import Writes

EARLIEST = datetime(1970, 1, 1, tzinfo=UTC)
LATEST = datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC)
REPAIR = "0018"


def near(stored: datetime | None, bound: datetime) -> bool:
    """At the bound, or one microsecond inside it (a fact's valid_from is held below the
    upper bound and its valid_to above the lower one, so that valid_from < valid_to)."""
    return stored is not None and abs((stored - bound).total_seconds()) <= 1e-6


@pytest.fixture
def before_repair(migrated_database: Callable[[], dict[Role, str]], migrations_dir: Path,
                  fresh_database: Callable[[], dict[Role, str]], tmp_path: Path
                  ) -> dict[Role, str]:
    """A database with every migration before the repair applied."""
    earlier = tmp_path / "migrations"
    earlier.mkdir()
    for path in sorted(migrations_dir.glob("*.sql")):
        if path.name[:4] < REPAIR:
            shutil.copy(path, earlier / path.name)
    urls = fresh_database()
    apply_migrations(urls[Role.OWNER], earlier)
    return urls


@pytest.mark.parametrize(("stored", "repaired"), [
    ("0001-01-01T00:00:00+01:00", EARLIEST),   # year 0 in UTC
    ("-infinity", EARLIEST),
    ("1969-07-20T20:17:00Z", EARLIEST),
    ("9999-12-31T23:59:59-14:00", LATEST),     # year 10000 in UTC
    ("infinity", LATEST),
    ("2020-01-01T00:00:00Z", datetime(2020, 1, 1, tzinfo=UTC)),  # in range: left as it is
])
def test_a_poisoned_subject_answers_after_the_repair(
    before_repair: dict[Role, str], migrations_dir: Path, embedder: Embedder,
    project_id: str, stored: str, repaired: datetime,
) -> None:
    app = Database(before_repair[Role.APP])
    with connect(before_repair[Role.OWNER]) as owner:
        writes = Writes(app, embedder, project_id, owner)
        try:
            [event] = writes.events({"payload": {"text": "I moved to Lyon with my cat"}}).events
            since = writes.fact("city", "Lyon")
            until = writes.fact("pet", "a cat")
            for statement, row_id in [
                ("UPDATE events SET occurred_at = %s::timestamptz WHERE id = %s", event.id),
                ("UPDATE facts SET valid_from = %s::timestamptz, "
                 "last_reinforced_at = %s::timestamptz, recorded_from = %s::timestamptz "
                 "WHERE id = %s", since.id),
                ("UPDATE facts SET valid_to = %s::timestamptz WHERE id = %s", until.id),
            ]:
                times = (stored,) * (statement.count("%s") - 1)
                assert owner.execute(statement, (*times, row_id)).rowcount == 1

            assert apply_migrations(before_repair[Role.OWNER], migrations_dir)[0][:4] == REPAIR

            answer = writes.ask("where does alice live with her cat?").response
            assert answer.model_dump_json()
            served = {fact.id: fact for fact in answer.packet.facts}
            assert near(served[since.id].valid_from, repaired)
            # A validity that ended before 1970 is still over; one that ends in 9999 is not.
            assert (until.id in served) == (repaired == LATEST)
            listed = {fact.id: fact for fact in writes.list_facts().facts}
            assert near(listed[since.id].valid_from, repaired)
            assert listed[since.id].last_reinforced_at == listed[since.id].recorded_from == repaired
            assert listed[since.id].valid_to is None  # an open validity stays open
            assert near(listed[until.id].valid_to, repaired)
            assert {e.event_id for e in answer.packet.episodes} <= {event.id}

            for table, column, row_id in [("events", "occurred_at", event.id),
                                          ("facts", "valid_from", since.id)]:
                for out_of_range in ("0001-01-01T00:00:00+01:00", "9999-12-31T23:59:59-14:00"):
                    with pytest.raises(psycopg.errors.CheckViolation), owner.transaction():
                        owner.execute(f"UPDATE {table} SET {column} = %s::timestamptz "
                                      "WHERE id = %s", (out_of_range, row_id))
        finally:
            app.close()
