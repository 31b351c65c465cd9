"""The clients' tests run against one ``haki serve`` of their own (the e2e fixtures' server,
over its own data folder), with the demo data plus a subject of hostile memory."""

import json
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from haki_local.demo import DEMO_PROJECT
from tests.clients.hostile import memory_document
from tests.e2e.conftest import Server, run_cli, serving


@pytest.fixture(scope="session")
def clients_data_dir(server_data_dir: Callable[[str], Path]) -> Path:
    return server_data_dir("test-clients-")


@pytest.fixture(scope="session")
def haki_server(clients_data_dir: Path) -> Iterator[Server]:
    with serving(clients_data_dir) as server:
        document = clients_data_dir / "hostile.json"
        document.write_text(json.dumps(memory_document(DEMO_PROJECT)), encoding="utf-8")
        run_cli(clients_data_dir, "load", str(document))
        yield server
