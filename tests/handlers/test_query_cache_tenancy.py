"""The warm context function's query-vector cache, over the handler: a question one project
asked is not a cache hit for another project (it is embedded anew, like any new question), and
both get the same packet for the same memory."""

import uuid

from haki.db import Database
from haki.embedding import get_embedder
from haki_local.admin import create_key
from tests.handlers.conftest import Invoke

QUESTION = f"What did the user say about the weather in Lyon? ({uuid.uuid4().hex[:8]})"


def _ask(invoke: Invoke, key: str, project_id: str) -> None:
    answer = invoke("context", "POST", "/v1/context", key=key,
                    body={"project_id": project_id, "subject_id": "alice", "query": QUESTION})
    assert answer.status == 200, answer.json


def test_one_projects_question_is_not_a_cache_hit_for_another(
    invoke: Invoke, api_key: str, project_id: str, owner_db: Database,
) -> None:
    other_project = f"proj-{uuid.uuid4().hex[:12]}"
    other_key = create_key(owner_db, org_id="org-test", project_id=other_project,
                           label="tests", create_project=True).key
    embedder = get_embedder()
    before = embedder.cache_stats()
    _ask(invoke, api_key, project_id)
    _ask(invoke, other_key, other_project)
    after_both = embedder.cache_stats()
    assert (after_both.hits - before.hits, after_both.misses - before.misses) == (0, 2)
    _ask(invoke, api_key, project_id)
    _ask(invoke, other_key, other_project)
    after_repeats = embedder.cache_stats()
    assert (after_repeats.hits - after_both.hits,
            after_repeats.misses - after_both.misses) == (2, 0)
