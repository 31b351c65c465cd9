"""POST /v1/facts/{id}/status (core): exactly the lifecycle graph of SPEC §11, a version per
transition, recorded_to, activation next to a contradicting fact, tenant isolation."""

import itertools
import uuid

import psycopg
import pytest

from haki.db import Database
from haki.embedding import Embedder
from haki.errors import FactNotFound, ForbiddenScope, IllegalStatusTransition
from haki.memory.api import FactStatusRequest
from haki.memory.facts import set_fact_status
from haki.memory.lifecycle import TRANSITIONS
from haki.models import FactStatus
from haki.validation import parse
from tests.integration.conftest import Seeder, Writes, unit_vector

STATUSES: list[FactStatus] = [
    "candidate", "active", "superseded", "disputed", "disabled", "deleted"]

#: SPEC §11, written out edge by edge (not derived from the code under test). No edge reaches
#: ``deleted``: deleting a fact erases it (POST /v1/forget).
GRAPH = {
    ("candidate", "active"), ("candidate", "superseded"), ("candidate", "disputed"),
    ("candidate", "disabled"),
    ("active", "superseded"), ("active", "disputed"), ("active", "disabled"),
    ("superseded", "disputed"),
    ("disputed", "active"), ("disputed", "superseded"), ("disputed", "disabled"),
    ("disabled", "active"),
}


def test_the_code_has_exactly_the_specified_graph() -> None:
    assert {(a, b) for a, targets in TRANSITIONS.items() for b in targets} == GRAPH


@pytest.mark.parametrize(("current", "target"), list(itertools.product(STATUSES, STATUSES)))
def test_every_pair_of_statuses(
    writes: Writes, seed: Seeder, current: FactStatus, target: FactStatus
) -> None:
    fact_id = seed.fact("city", "Lyon", unit_vector(1), status=current, version=3)
    if (current, target) not in GRAPH:
        refusal = ("cannot become deleted through its status" if target == "deleted"
                   else f"is {current}; it cannot become")
        with pytest.raises(IllegalStatusTransition, match=refusal):
            writes.status(fact_id, target)
        row = writes.row("facts", fact_id)
        assert row is not None and (row["status"], row["version"]) == (current, 3)
        return
    answer = writes.status(fact_id, target)
    row = writes.row("facts", fact_id)
    assert row is not None
    assert (answer.fact.status, answer.fact.version) == (target, 4)
    assert (row["status"], row["version"]) == (target, 4)
    if target == "superseded":
        assert row["recorded_to"] is not None
    else:
        assert row["recorded_to"] is None


def test_recorded_to_is_kept_then_cleared_on_reactivation(writes: Writes) -> None:
    fact = writes.fact("city", "Lyon")
    writes.status(fact.id, "superseded")
    retracted = writes.row("facts", fact.id)
    writes.status(fact.id, "disputed")
    disputed = writes.row("facts", fact.id)
    assert retracted is not None and disputed is not None
    assert disputed["recorded_to"] == retracted["recorded_to"] is not None
    back = writes.status(fact.id, "active")
    assert back.fact.recorded_to is None and back.fact.version == 4


def test_deleted_is_only_reached_by_erasure(writes: Writes, seed: Seeder) -> None:
    fact = writes.fact("invoice_language", "Les factures sont en allemand")
    with pytest.raises(IllegalStatusTransition, match="POST /v1/forget with mode delete"):
        writes.status(fact.id, "deleted")
    row = writes.row("facts", fact.id)
    assert row is not None and (row["status"], row["version"]) == ("active", 1)
    # A tombstone loaded as written (``haki load``) is terminal.
    tombstone = seed.fact("city", "Lyon", unit_vector(1), status="deleted")
    for target in STATUSES:
        with pytest.raises(IllegalStatusTransition, match="deleted"):
            writes.status(tombstone, target)


def test_activating_a_candidate_next_to_another_value_opens_a_conflict(writes: Writes) -> None:
    active = writes.fact("city", "Lyon")
    candidate = writes.fact("city", "Nantes", status="candidate")
    answer = writes.status(candidate.id, "active")
    assert answer.conflict_id is not None
    stored = writes.row("conflict_sets", answer.conflict_id)
    assert stored is not None
    assert (stored["status"], stored["fact_ids"]) == ("open", [active.id, candidate.id])
    assert writes.ask("where does she live?").response.packet.facts == []
    # Activating a fact whose value an active fact already has opens nothing.
    other = writes.fact("job", "nurse", status="candidate")
    writes.fact("job", "nurse")  # no active fact yet: stored active beside the candidate
    assert writes.status(other.id, "active").conflict_id is None


def test_unknown_and_foreign_facts_read_the_same(
    writes: Writes, app_db: Database, embedder: Embedder, owner_conn: psycopg.Connection
) -> None:
    foreign = Writes(app_db, embedder, writes.project_id + "-b", owner_conn).fact("city", "Paris")
    with pytest.raises(FactNotFound) as not_ours:
        writes.status(foreign.id, "disabled")
    with pytest.raises(FactNotFound) as not_there:
        writes.status(uuid.uuid4(), "disabled")
    assert not_ours.value.message == not_there.value.message
    row = writes.row("facts", foreign.id)
    assert row is not None and (row["status"], row["version"]) == ("active", 1)


def test_the_request_names_the_keys_project(writes: Writes) -> None:
    fact = writes.fact("city", "Lyon")
    request = parse(FactStatusRequest, {"project_id": "elsewhere", "status": "disabled"})
    with pytest.raises(ForbiddenScope):
        set_fact_status(writes.db, writes.project_id, fact.id, request)
