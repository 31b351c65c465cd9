"""Stored times read the same whatever the database's time zone: every transaction works in
UTC, so 9999-12-31T23:59:59.999999Z, the last instant the API accepts, loads from a database
whose default time zone is fourteen hours ahead (where it would be year 10000)."""

from collections.abc import Callable
from datetime import UTC, datetime

import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict

from haki.db import Database, Role
from haki.db.connection import connect
from haki.memory.api import FactListRequest
from haki.memory.episodes import EventListRequest, list_events
from haki.memory.facts import list_facts
from haki.models import LATEST_TIME
from tests.conftest import acting_as_tenant
from tests.integration.conftest import unit_vector

PROJECT = "far-east"


def test_the_last_instant_loads_from_a_database_fourteen_hours_ahead(
    migrated_database: Callable[[], dict[Role, str]], pg_superuser_url: str
) -> None:
    urls = migrated_database()
    name = conninfo_to_dict(urls[Role.OWNER])["dbname"]
    with psycopg.connect(pg_superuser_url, autocommit=True) as admin:
        admin.execute(sql.SQL("ALTER DATABASE {} SET TimeZone = 'Pacific/Kiritimati'").format(
            sql.Identifier(name)))
    with acting_as_tenant(urls[Role.OWNER], PROJECT):
        with connect(urls[Role.OWNER]) as owner:
            assert owner.execute("SHOW TimeZone").fetchone() == ("Pacific/Kiritimati",)
            owner.execute(
                "INSERT INTO events (project_id, subject_id, kind, payload, occurred_at, "
                "embedding) VALUES (%s, 'alice', 'note', '{}', "
                "'9999-12-31T23:59:59.999999Z', %s)", (PROJECT, unit_vector(1)))
            owner.execute(
                "INSERT INTO facts (project_id, subject_id, predicate, value, valid_from, "
                "valid_to, embedding) VALUES (%s, 'alice', 'city', '\"Lyon\"', "
                "'1970-01-01T00:00:00Z', '9999-12-31T23:59:59.999999Z', %s)",
                (PROJECT, unit_vector(2)))
        db = Database(urls[Role.APP])
        try:
            events = list_events(db, PROJECT, EventListRequest(
                project_id=PROJECT, subject_id="alice"))
            facts = list_facts(db, PROJECT, FactListRequest(
                project_id=PROJECT, subject_id="alice"))
        finally:
            db.close()
    assert [e.occurred_at for e in events.events] == [LATEST_TIME]
    assert [(f.valid_from, f.valid_to) for f in facts.facts] == [
        (datetime(1970, 1, 1, tzinfo=UTC), LATEST_TIME)]
