"""Identifiers stored before the API took them in NFC: the owner's view
``identity_lookalikes`` lists, for the owner only, every one the API can no longer name as
stored (another spelling of a name, an invisible character, a predicate mixing scripts)."""

import unicodedata

import psycopg
import pytest

from haki.db import Role
from haki.db.connection import connect
from tests.integration.conftest import Seeder, unit_vector


def test_the_owner_sees_every_lookalike_of_its_project(
    seed: Seeder, owner_conn: psycopg.Connection, project_id: str
) -> None:
    nfd = unicodedata.normalize("NFD", "amélie")
    for subject, predicate in [("amélie", "city"), (nfd, "city"), ("bob", "ci\u200bty"),
                               ("bob", "\u0441ity"), ("carol", "city")]:
        seed.fact(predicate, "Lyon", unit_vector(1), subject_id=subject)
    rows = owner_conn.execute(
        "SELECT kind, canonical, spellings, not_nfc, invisible, mixed_scripts "
        "FROM identity_lookalikes WHERE project_id = %s ORDER BY kind, canonical",
        (project_id,)).fetchall()
    assert rows == [
        ("predicate", "ci\u200bty", ["ci\u200bty"], False, True, False),
        ("predicate", "\u0441ity", ["\u0441ity"], False, False, True),
        ("subject", "amélie", sorted(["amélie", nfd]), True, False, False),
    ]


def test_the_runtime_role_cannot_read_it(db_urls: dict[Role, str]) -> None:
    with connect(db_urls[Role.APP]) as conn, pytest.raises(psycopg.errors.InsufficientPrivilege):
        conn.execute("SELECT * FROM identity_lookalikes")
