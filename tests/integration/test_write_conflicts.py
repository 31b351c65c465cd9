"""GET /v1/conflicts and POST /v1/conflicts/{id}/resolve (core): listing with the facts of each
set, resolution in one transaction along the lifecycle, errors, tenant isolation."""

import uuid

import psycopg
import pytest

from haki.db import Database
from haki.embedding import Embedder
from haki.errors import (
    ConflictFactNotActive,
    ConflictNotFound,
    ConflictNotOpen,
    ValidationFailed,
)
from tests.integration.conftest import Seeder, Writes, unit_vector


def _contradiction(writes: Writes, *values: str) -> tuple[uuid.UUID, list[uuid.UUID]]:
    ids = [writes.fact("city", value).id for value in values]
    conflicts = writes.conflicts().conflicts
    assert len(conflicts) == 1
    return conflicts[0].id, ids


def test_listing_shows_each_set_with_its_facts(writes: Writes) -> None:
    conflict_id, (lyon, nantes) = _contradiction(writes, "Lyon", "Nantes")
    (listed,) = writes.conflicts().conflicts
    assert (listed.id, listed.status, listed.subject_id, listed.resolved_at) == \
        (conflict_id, "open", "alice", None)
    assert [(f.id, f.predicate, f.value, f.status) for f in listed.facts] == \
        [(lyon, "city", "Lyon", "active"), (nantes, "city", "Nantes", "active")]
    assert writes.conflicts(status="resolved").conflicts == []
    assert writes.conflicts(subject_id="bob").conflicts == []


def test_listing_pages(writes: Writes, seed: Seeder) -> None:
    sets = [seed.conflict([seed.fact("p", i, unit_vector(i)), seed.fact("p", -i, unit_vector(i))])
            for i in range(3)]
    first = writes.conflicts(limit=2)
    second = writes.conflicts(limit=2, cursor=first.next_cursor)
    assert second.next_cursor is None
    assert sorted(c.id for c in first.conflicts + second.conflicts) == sorted(sets)


def test_resolving_keeps_one_and_supersedes_the_others(writes: Writes) -> None:
    conflict_id, (lyon, nantes, brest) = _contradiction(
        writes, "Marie habite à Lyon", "Marie habite à Nantes", "Marie habite à Brest")
    answer = writes.resolve(conflict_id, nantes)
    assert (answer.kept_fact_id, sorted(answer.superseded_fact_ids)) == \
        (nantes, sorted([lyon, brest]))
    rows = {i: writes.row("facts", i) for i in (lyon, nantes, brest)}
    assert {i: (r["status"], r["version"]) for i, r in rows.items()} == {
        lyon: ("superseded", 2), nantes: ("active", 1), brest: ("superseded", 2)}
    assert rows[lyon]["recorded_to"] is not None
    stored = writes.row("conflict_sets", conflict_id)
    assert stored is not None
    assert (stored["status"], stored["resolved_at"]) == ("resolved", answer.resolved_at)
    packet = writes.ask("où habite Marie ?").response.packet
    assert [f.id for f in packet.facts] == [nantes] and packet.warnings == []
    (listed,) = writes.conflicts(status="resolved").conflicts
    assert listed.resolved_at == answer.resolved_at

    with pytest.raises(ConflictNotOpen):
        writes.resolve(conflict_id, lyon)


def test_a_fact_leaving_active_leaves_its_open_set(writes: Writes) -> None:
    conflict_id, (lyon, nantes, brest) = _contradiction(writes, "Lyon", "Nantes", "Brest")
    writes.status(brest, "disabled")
    stored = writes.row("conflict_sets", conflict_id)
    assert (stored["status"], stored["fact_ids"]) == ("open", [lyon, nantes])
    with pytest.raises(ValidationFailed, match="field 'keep_fact_id'"):
        writes.resolve(conflict_id, brest)
    writes.status(lyon, "superseded")
    # One open fact left: the set is resolved as it stands and that fact is served again.
    stored = writes.row("conflict_sets", conflict_id)
    assert (stored["status"], stored["fact_ids"]) == ("resolved", [lyon, nantes])
    assert stored["resolved_at"] is not None
    packet = writes.ask("où habite Marie ?").response.packet
    assert [f.id for f in packet.facts] == [nantes] and packet.warnings == []
    with pytest.raises(ConflictNotOpen):
        writes.resolve(conflict_id, nantes)
    # Brought back, the disabled fact contradicts the active one again: a new open set.
    again = writes.status(brest, "active").conflict_id
    assert again is not None and again != conflict_id
    assert writes.row("conflict_sets", again)["fact_ids"] == [nantes, brest]


def test_resolution_keeps_only_an_active_fact(writes: Writes, seed: Seeder) -> None:
    """A set stored holding a fact that is no longer active (as before open sets were kept to
    active facts): keeping that fact is refused, the set stays open."""
    lyon = seed.fact("city", "Lyon", unit_vector(1), status="superseded")
    nantes = seed.fact("city", "Nantes", unit_vector(2))
    brest = seed.fact("city", "Brest", unit_vector(3))
    conflict_id = seed.conflict([lyon, nantes, brest])
    with pytest.raises(ConflictFactNotActive, match="is superseded"):
        writes.resolve(conflict_id, lyon)
    assert writes.row("conflict_sets", conflict_id)["status"] == "open"
    assert writes.row("facts", lyon)["status"] == "superseded"
    answer = writes.resolve(conflict_id, brest)
    assert answer.superseded_fact_ids == [nantes]


def test_bad_resolutions(
    writes: Writes, app_db: Database, embedder: Embedder, owner_conn: psycopg.Connection
) -> None:
    conflict_id, (lyon, _) = _contradiction(writes, "Lyon", "Nantes")
    other = Writes(app_db, embedder, writes.project_id + "-b", owner_conn)
    foreign_id, (paris, _) = _contradiction(other, "Paris", "Lille")

    with pytest.raises(ValidationFailed, match="field 'keep_fact_id'"):
        writes.resolve(conflict_id, uuid.uuid4())
    with pytest.raises(ConflictNotFound) as not_there:
        writes.resolve(uuid.uuid4(), lyon)
    with pytest.raises(ConflictNotFound) as not_ours:
        writes.resolve(foreign_id, paris)
    assert not_ours.value.message == not_there.value.message
    assert other.row("conflict_sets", foreign_id)["status"] == "open"
    assert other.row("facts", paris)["version"] == 1
    assert writes.conflicts().conflicts[0].status == "open"
