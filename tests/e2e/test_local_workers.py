"""The local API serves requests in parallel: ``haki serve`` runs several worker processes on
one socket (one per core by default), and concurrent callers are served by more than one."""

import re
from concurrent.futures import ThreadPoolExecutor

from haki_local.demo import DEMO_PROJECT, DEMO_SUBJECT
from tests.e2e.conftest import Client, Server


def test_concurrent_calls_are_served_by_several_workers(client: Client, server: Server) -> None:
    (count,) = [int(m.group(1)) for line in server.lines
                if (m := re.match(r"^workers: (\d+) ", line))]
    body = {"project_id": DEMO_PROJECT, "subject_id": DEMO_SUBJECT,
            "query": "Quelle langue parle Marie ?", "purpose": "test"}

    def call(_: int) -> tuple[int, str]:
        reply = client.request("POST", "/v1/context", key=server.key, body=body)
        return reply.status, reply.headers["X-Haki-Worker"]

    with ThreadPoolExecutor(max_workers=8) as pool:
        replies = list(pool.map(call, range(48)))
    assert count >= 2  # one worker per core; these machines (and CI) have two
    assert {status for status, _ in replies} == {200}
    assert len({worker for _, worker in replies}) >= 2
