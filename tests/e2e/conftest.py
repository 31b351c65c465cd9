"""End-to-end: ``haki serve`` as a subprocess over its own data folder (embedded PostgreSQL,
migrations, demo data, dev key), called over real HTTP with urllib."""

import json
import re
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from email.message import Message
from pathlib import Path
from typing import Any

import psutil
import psycopg
import pytest

from haki.db import Role
from haki.db.connection import connect
from haki.roles import DATABASE_NAME
from haki_local.embedded import embedded_role_url, start_embedded
from haki_local.launch import LocalApi, local_env, start, stop

#: The tests' names for the launcher of ``haki serve`` (``haki_local.launch``).
Server = LocalApi
haki_env = local_env
start_server = start
stop_server = stop


def run_cli(data_dir: Path, *args: str) -> str:
    done = subprocess.run([sys.executable, "-m", "haki_local.cli", *args], env=haki_env(data_dir),
                          capture_output=True, text=True, timeout=120, check=True)
    return done.stdout


def create_key(data_dir: Path, org: str, project: str, *options: str) -> tuple[str, str]:
    """``haki keys create`` for ``project`` (``options`` as its command line takes them); the
    new key and its id, as printed."""
    created = run_cli(data_dir, "keys", "create", "--org", org, "--project", project, *options)
    key = re.search(r"^key:\s+(hk_\S+)$", created, re.MULTILINE)
    key_id = re.search(r"^id:\s+(\S+)$", created, re.MULTILINE)
    assert key is not None and key_id is not None, created
    return key.group(1), key_id.group(1)


def postgres_of(data_dir: Path) -> set[int]:
    """The PostgreSQL processes serving ``data_dir``'s embedded server (postmaster and
    backends); empty once it has stopped."""
    pgdata = str((data_dir / "pg16").resolve())
    found = set()
    for process in psutil.process_iter(["name", "cmdline"]):
        if process.info["name"] == "postgres" and pgdata in (process.info["cmdline"] or []):
            found.add(process.pid)
            found.update(child.pid for child in process.children())
    return found


@dataclass(frozen=True)
class Reply:
    status: int
    json: Any
    #: Looked up by name in any case, as HTTP header names are.
    headers: Message


class Client:
    def __init__(self, url: str) -> None:
        self.url = url

    def request(self, method: str, path: str, *, key: str | None = None,
                body: Any = None, raw: bytes | None = None,
                content_type: str = "application/json") -> Reply:
        data = raw if raw is not None else (
            None if body is None else json.dumps(body).encode())
        headers = {"Content-Type": content_type} if data is not None else {}
        if key is not None:
            headers["Authorization"] = f"Bearer {key}"
        request = urllib.request.Request(self.url + path, data=data, method=method,
                                         headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=60) as response:
                return Reply(response.status, json.loads(response.read()), response.headers)
        except urllib.error.HTTPError as error:
            return Reply(error.code, json.loads(error.read()), error.headers)


@pytest.fixture(scope="session")
def data_dir(server_data_dir: Callable[[str], Path]) -> Path:
    return server_data_dir("test-e2e-")


@contextmanager
def serving(data_dir: Path, *options: str) -> Iterator[Server]:
    """``haki serve`` over ``data_dir`` for the block; it must stop cleanly after it."""
    server = start_server(data_dir, *options)
    try:
        yield server
    finally:
        assert stop_server(server) == 0, "\n".join(server.lines[-30:])


@pytest.fixture(scope="session")
def server(data_dir: Path) -> Iterator[Server]:
    with serving(data_dir) as server:
        yield server


@pytest.fixture(scope="session")
def client(server: Server) -> Client:
    return Client(server.url)


@pytest.fixture(scope="session")
def owner_url(server: Server, data_dir: Path) -> str:
    """The owner URL of the server's database (joining its embedded PostgreSQL)."""
    return embedded_role_url(start_embedded(data_dir), Role.OWNER, DATABASE_NAME)


@pytest.fixture
def owner(owner_url: str) -> Iterator[psycopg.Connection]:
    with connect(owner_url) as conn:
        yield conn
