"""``GET /v1/subjects`` through the memory function's handler: the key's project's subjects,
keyset-paged, the project named or left to the key, and nothing of another project."""

from haki.db import Database
from haki_local.admin import create_key
from tests.handlers.conftest import Invoke

SUBJECTS = "/v1/subjects"


def _write(invoke: Invoke, key: str, project_id: str, *subjects: str) -> None:
    written = invoke("ingest", "POST", "/v1/events", key=key, body={
        "project_id": project_id, "events": [
            {"subject_id": s, "kind": "note", "payload": {"text": f"about {s}"}}
            for s in subjects]})
    assert written.status == 201, written.json


def test_the_projects_subjects_page_by_page(invoke: Invoke, api_key: str,
                                            project_id: str) -> None:
    _write(invoke, api_key, project_id, "carol", "alice", "bob", "alice")
    first = invoke("memory", "GET", SUBJECTS, key=api_key, query={"limit": "2"})
    assert first.status == 200, first.json
    assert [(s["subject_id"], s["events"], s["facts"]) for s in first.json["subjects"]] == [
        ("alice", 2, 0), ("bob", 1, 0)]
    assert first.json["subjects"][0]["last_activity_at"] and first.json["next_cursor"]
    rest = invoke("memory", "GET", SUBJECTS, key=api_key,
                  query={"project_id": project_id, "cursor": first.json["next_cursor"]})
    assert [s["subject_id"] for s in rest.json["subjects"]] == ["carol"]
    assert rest.json["next_cursor"] is None
    for bad in ({"cursor": "k1.bm9wZQ"}, {"limit": "0"}, {"limit": "201"}):
        refused = invoke("memory", "GET", SUBJECTS, key=api_key, query=bad)
        assert (refused.status, refused.json["error"]["code"]) == (422, "validation_error")


def test_another_projects_key_lists_only_its_own(
    invoke: Invoke, owner_db: Database, api_key: str, project_id: str
) -> None:
    _write(invoke, api_key, project_id, "alice")
    other_project = project_id + "-b"
    other_key = create_key(owner_db, org_id="o", project_id=other_project,
                           create_project=True).key
    _write(invoke, other_key, other_project, "zed")
    mine = invoke("memory", "GET", SUBJECTS, key=api_key, query={})
    theirs = invoke("memory", "GET", SUBJECTS, key=other_key, query={})
    assert [s["subject_id"] for s in mine.json["subjects"]] == ["alice"]
    assert [s["subject_id"] for s in theirs.json["subjects"]] == ["zed"]
    refused = invoke("memory", "GET", SUBJECTS, key=other_key, query={"project_id": project_id})
    assert (refused.status, refused.json["error"]["code"]) == (403, "forbidden_scope")
    anonymous = invoke("memory", "GET", SUBJECTS, key=None, query={})
    assert (anonymous.status, anonymous.json["error"]["code"]) == (401, "unauthorized")
