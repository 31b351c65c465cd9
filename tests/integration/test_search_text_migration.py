"""The migration of what the text arm searches, on a database that already holds messages:
their speakers' names become searchable, short texts are stemmed and long ones kept as
written, and the text arm's statistics count them as if the messages had been written after
it."""

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import psycopg

from haki.db import Role
from haki.db.migrate import apply_migrations

MIGRATION = "0002_search_text.sql"


def _term_stats(conn: psycopg.Connection) -> dict[str, int]:
    return dict(conn.execute(
        "SELECT term, event_docs FROM text_term_stats "
        "WHERE project_id = 'p' AND subject_id = 's'").fetchall())


def test_stored_messages_become_searchable_by_speaker_and_stem(
    fresh_database: Callable[[], dict[Role, str]], migrations_dir: Path, tmp_path: Path
) -> None:
    before = tmp_path / "migrations"
    shutil.copytree(migrations_dir, before)
    (before / MIGRATION).unlink()
    urls = fresh_database()
    apply_migrations(urls[Role.OWNER], before)
    payloads = [{"role": "user", "name": "Ana", "text": "hiking again"},
                {"role": "assistant", "name": "Ana", "text": "lovely"},
                {"role": "user", "text": "no name here"},
                {"name": "Ana", "text": "a record's name field beside its text"},
                {"role": "assistant", "text": "hiking " + "trails " * 80}]  # 567 characters
    with psycopg.connect(urls[Role.OWNER]) as conn:
        conn.execute("INSERT INTO projects (project_id, org_id) VALUES ('p', 'o')")
        for payload in payloads:
            conn.execute(
                "INSERT INTO events (project_id, subject_id, kind, payload, embedding) "
                "VALUES ('p', 's', 'conversation.message', %s, array_fill(0.1, ARRAY[384]))",
                (json.dumps(payload),))
        conn.commit()
        assert "ana" not in _term_stats(conn)

    assert MIGRATION in apply_migrations(urls[Role.OWNER], migrations_dir)
    with psycopg.connect(urls[Role.OWNER]) as conn:
        named = conn.execute(
            "SELECT payload ->> 'text' FROM events "
            "WHERE search_vector @@ to_tsquery('simple', 'ana') ORDER BY 1").fetchall()
        stats = _term_stats(conn)
        # Counted again from the rebuilt column: what the write triggers would have counted.
        conn.execute("DELETE FROM events")
        emptied = _term_stats(conn)
    assert named == [("hiking again",), ("lovely",)]
    assert stats["ana"] == 2 and stats["name"] == 2
    # A short text is stemmed, English stop words dropped; a long one keeps its words.
    assert stats["hike"] == 1 and stats["hiking"] == 1 and stats["trails"] == 1
    assert "again" not in stats and "trail" not in stats
    assert emptied == {}
