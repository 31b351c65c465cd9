"""``GET /v1/subjects``'s core on the real PostgreSQL, as the runtime role: the project's
subjects by id, keyset-paged, with their counts and last activity, and nothing of another
project."""

from dataclasses import replace
from datetime import timedelta

import psycopg
import pytest

from haki.db import Database
from haki.errors import ForbiddenScope, ValidationFailed
from haki.memory.subjects import (
    LIST_SUBJECTS,
    SubjectListRequest,
    SubjectPage,
    list_subjects,
)
from haki.validation import parse
from tests.integration.conftest import NOW, Seeder, unit_vector

V = unit_vector(1)


def _list(db: Database, project_id: str, **query: object) -> SubjectPage:
    return list_subjects(db, project_id,
                         parse(SubjectListRequest, {"project_id": project_id, **query}))


def _walk(db: Database, project_id: str, limit: int) -> list[str]:
    """Every subject id, page after page."""
    ids: list[str] = []
    cursor = None
    while True:
        page = _list(db, project_id, limit=limit, **({"cursor": cursor} if cursor else {}))
        assert len(page.subjects) <= limit
        ids += [s.subject_id for s in page.subjects]
        if page.next_cursor is None:
            return ids
        cursor = page.next_cursor


def test_subjects_are_listed_by_id_with_their_counts(
    seed: Seeder, app_db: Database, project_id: str, owner_conn: psycopg.Connection
) -> None:
    alice = seed
    first = alice.fact("language", "French", V, recorded_from=NOW - timedelta(days=3))
    second = alice.fact("language", "German", V, recorded_from=NOW - timedelta(days=2))
    alice.fact("city", "Lyon", V, status="superseded", recorded_from=NOW - timedelta(days=9))
    alice.conflict([first, second])
    alice.event("conversation.message", {"text": "hi"}, V, occurred_at=NOW - timedelta(days=5))
    bob = replace(seed, subject_id="bob")
    bob.event("conversation.message", {"text": "a"}, V, occurred_at=NOW - timedelta(hours=1))
    bob.event("conversation.message", {"text": "b"}, V, occurred_at=NOW - timedelta(hours=2))
    carol = replace(seed, subject_id="carol")
    carol.fact("plan", "pro", V, recorded_from=NOW - timedelta(days=1),
               last_reinforced_at=NOW - timedelta(minutes=5))
    owner_conn.execute("INSERT INTO disabled_subjects (project_id, subject_id) VALUES (%s, %s)",
                       (project_id, "carol"))

    page = _list(app_db, project_id)
    assert page.next_cursor is None
    got = {s.subject_id: (s.facts, s.events, s.open_conflicts, s.last_activity_at, s.disabled)
           for s in page.subjects}
    assert [s.subject_id for s in page.subjects] == ["alice", "bob", "carol"]
    assert got == {
        "alice": (2, 1, 1, NOW - timedelta(days=2), False),
        "bob": (0, 2, 0, NOW - timedelta(hours=1), False),
        "carol": (1, 0, 0, NOW - timedelta(minutes=5), True),
    }


def test_pages_hold_every_subject_once_in_order(
    seed: Seeder, app_db: Database, project_id: str
) -> None:
    names = [f"user-{i:03d}" for i in range(23)] + ["Zoë", "o'brien; DROP TABLE facts; --"]
    for i, name in enumerate(names):
        subject = replace(seed, subject_id=name)
        if i % 3:
            subject.fact("note", f"n{i}", V)
        if i % 3 != 1:  # facts only, events only, both
            subject.event("conversation.message", {"text": "t"}, V)
    everything = _walk(app_db, project_id, limit=200)
    assert sorted(everything) == sorted(names) and len(set(everything)) == len(names)
    for limit in (1, 4, 7, 25):
        assert _walk(app_db, project_id, limit=limit) == everything


def test_a_cursor_is_validated_and_a_project_sees_only_its_own(
    seed: Seeder, app_db: Database, project_id: str, owner_conn: psycopg.Connection
) -> None:
    seed.fact("note", "mine", V)
    other = replace(seed, project_id=project_id + "-other", subject_id="zed")
    other.fact("note", "theirs", V)
    other.event("conversation.message", {"text": "theirs"}, V)
    assert [s.subject_id for s in _list(app_db, project_id).subjects] == ["alice"]
    with pytest.raises(ForbiddenScope):
        list_subjects(app_db, project_id, parse(SubjectListRequest,
                                                {"project_id": project_id + "-other"}))
    for cursor in ("k1.WzEsMl0", "k1.WyIiXQ", "nope"):
        with pytest.raises(ValidationFailed, match="cursor"):
            _list(app_db, project_id, cursor=cursor)
    # Row-level security alone (the statement run for the other project while acting for
    # this project's key) yields nothing of theirs.
    with app_db.transaction(project_id) as conn:
        rows = conn.execute(LIST_SUBJECTS, {"project_id": project_id + "-other", "after": "",
                                            "limit": 10}).fetchall()
    assert rows == []


def test_an_empty_project_has_no_subjects(app_db: Database, project_id: str) -> None:
    assert _list(app_db, project_id) == SubjectPage(subjects=[], next_cursor=None)
