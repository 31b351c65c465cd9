"""Shared fixtures: one embedded PostgreSQL 16 + pgvector per test session.

The session migrates one fresh database; tests reach it through the runtime role
(``haki_app``), as production does, and isolate themselves from each other by working in a
project id of their own (row-level security and the exact-scope filters keep them apart).
Tests that need an empty database of their own (migrations) create one with
``fresh_database``.
"""

import contextvars
import itertools
import shutil
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

import psycopg
import pytest
from psycopg import sql

from haki.db import Database, Role
from haki.db.connection import acting_for, connect
from haki.db.migrate import apply_migrations
from haki.embedding import Embedder, get_embedder
from haki.settings import Settings, get_settings
from haki_local.admin import tenant_keys
from haki_local.embedded import embedded_role_url, start_embedded, stop_embedded

_db_names = itertools.count()
T = TypeVar("T")

@pytest.fixture(scope="session")
def server_data_dir() -> Iterator[Callable[[str], Path]]:
    """Make data folders for embedded servers; stop their servers and delete them at the end.

    They live under ``build/`` rather than pytest's temp folder: the server runs as the
    unprivileged ``pgserver`` user, which cannot enter root's 0700 pytest folders.
    """
    build = Path(__file__).resolve().parents[1] / "build"
    build.mkdir(exist_ok=True)
    made: list[Path] = []

    def make(prefix: str) -> Path:
        made.append(Path(tempfile.mkdtemp(prefix=prefix, dir=build)))
        return made[-1]

    yield make
    for data_dir in made:
        stop_embedded(data_dir)
        shutil.rmtree(data_dir, ignore_errors=True)


@pytest.fixture(scope="session")
def pg_superuser_url(server_data_dir: Callable[[str], Path]) -> str:
    """The embedded server of this test session."""
    return start_embedded(server_data_dir("test-pg-"))


@pytest.fixture(scope="session")
def fresh_database(pg_superuser_url: str) -> Callable[[], dict[Role, str]]:
    """Create an empty database; return its URL for each role."""

    def create() -> dict[Role, str]:
        name = f"haki_t{next(_db_names)}_{uuid.uuid4().hex[:6]}"
        with psycopg.connect(pg_superuser_url, autocommit=True) as conn:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        return {role: embedded_role_url(pg_superuser_url, role, name) for role in Role}

    return create


@pytest.fixture(scope="session")
def migrated_database(
        fresh_database: Callable[[], dict[Role, str]]) -> Callable[[], dict[Role, str]]:
    """Create an empty database and migrate it; return its URL for each role."""

    def create() -> dict[Role, str]:
        urls = fresh_database()
        apply_migrations(urls[Role.OWNER])
        return urls

    return create


@pytest.fixture(scope="session")
def db_urls(migrated_database: Callable[[], dict[Role, str]]) -> dict[Role, str]:
    """The test run's migrated database: URL per role."""
    return migrated_database()


@pytest.fixture(scope="session")
def migrations_dir() -> Path:
    return Path(__file__).resolve().parents[1] / "migrations"


@pytest.fixture
def open_database() -> Iterator[Callable[[str], Database]]:
    """Open ``Database`` handles by URL; every one is closed when the test ends."""
    opened: list[Database] = []

    def open_(url: str) -> Database:
        opened.append(Database(url))
        return opened[-1]

    yield open_
    for db in opened:
        db.close()


@pytest.fixture
def tenant_key(db_urls: dict[Role, str], project_id: str) -> Iterator[str]:
    """A live key of the test's project; the test acts for it (``acting_for``), as a request
    with that key would: the runtime role then sees this project and nothing else."""
    with acting_as_tenant(db_urls[Role.OWNER], project_id) as key_hash:
        yield key_hash


@pytest.fixture
def app_db(db_urls: dict[Role, str], open_database: Callable[[str], Database],
           tenant_key: str) -> Database:
    """A runtime-role handle (row-level security applies), acting for the test's project."""
    return open_database(db_urls[Role.APP])


@pytest.fixture
def owner_db(db_urls: dict[Role, str], open_database: Callable[[str], Database]) -> Database:
    """An owner handle, for creating keys and writing memory as the admin tools do."""
    return open_database(db_urls[Role.OWNER])


@pytest.fixture
def owner_conn(db_urls: dict[Role, str]) -> Iterator[psycopg.Connection]:
    """An owner connection, for seeding and checking rows across projects."""
    with connect(db_urls[Role.OWNER]) as conn:
        yield conn


@pytest.fixture
def project_id() -> str:
    """A project id of this test alone."""
    return f"proj-{uuid.uuid4().hex[:12]}"


@pytest.fixture(scope="session")
def embedder() -> Embedder:
    """The real default embedder, built by ``make model`` (the test command builds it)."""
    return get_embedder(get_settings())


@pytest.fixture
def settings() -> Settings:
    """Defaults: recall floor off, default volatility horizons."""
    return Settings()


def tenant_thread(target: Callable[[], object]) -> threading.Thread:
    """A thread that acts for the same key as the test (context variables, hence
    ``acting_for``, are not inherited by new threads)."""
    return threading.Thread(target=contextvars.copy_context().run, args=(target,))


def concurrently(call: Callable[[], T], times: int) -> list[T]:
    """``call`` in ``times`` threads released together, each acting for the caller's key;
    their results, in the order they came. A thread's exception is raised here."""
    barrier = threading.Barrier(times)
    results: list[T] = []
    errors: list[BaseException] = []

    def run() -> None:
        barrier.wait()
        try:
            results.append(call())
        except BaseException as exc:  # raised in the test's thread below
            errors.append(exc)

    threads = [tenant_thread(run) for _ in range(times)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    if errors:
        raise errors[0]
    assert len(results) == times, "a thread did not finish"
    return results


@contextmanager
def acting_as_tenant(owner_url: str, project_id: str) -> Iterator[str]:
    """Act for a new key of ``project_id`` in the database of ``owner_url`` (tests with a
    database of their own); yields the key's hash."""
    owner = Database(owner_url)
    try:
        key_hash = tenant_keys(owner, [project_id], org_id="org-test", label="tests")[project_id]
    finally:
        owner.close()
    with acting_for(key_hash):
        yield key_hash


def eventually(condition: Callable[[], T], what: str, timeout_s: float = 60.0) -> T:
    """Poll ``condition`` until it gives a true value, and return that value; fail, naming
    ``what``, if it has not after ``timeout_s`` (a deadline for a stuck test, generous on a
    loaded machine: never a bound on how fast the product is)."""
    deadline = time.monotonic() + timeout_s
    while not (result := condition()):
        if time.monotonic() > deadline:
            pytest.fail(f"{what}: not after {timeout_s:.0f} s")
        time.sleep(0.05)
    return result
