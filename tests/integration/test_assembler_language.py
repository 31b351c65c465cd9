"""The assembler with the real embedder and real questions: cross-lingual retrieval and a
full-text arm that natural questions actually reach."""

import json

import psycopg

from haki.assembler import RetrievalConfig, assemble
from haki.db import Database
from haki.embedding import Embedder
from haki.models import ContextRequest
from haki_local.documents import parse_document_text
from haki_local.writer import MemoryWriter

FACTS = [
    ("invoice_language", "Les factures doivent être envoyées en français"),
    ("delivery_address", "12 rue des Lilas, 69003 Lyon"),
    ("favourite_sport", "Il joue au tennis le dimanche matin"),
    ("allergy", "Allergique aux arachides"),
    ("contract_end", "Le contrat de maintenance se termine en mars 2027"),
    ("pet", "A un chien qui s'appelle Filou"),
]


def _load(db: Database, embedder: Embedder, project_id: str) -> dict[str, str]:
    document = {"facts": [
        {"id": f"00000000-0000-4000-8000-00000000000{i}", "project_id": project_id,
         "subject_id": "client-42", "predicate": predicate, "value": value}
        for i, (predicate, value) in enumerate(FACTS)]}
    MemoryWriter(db, embedder).write(parse_document_text(json.dumps(document)))
    return {predicate: f"00000000-0000-4000-8000-00000000000{i}"
            for i, (predicate, _) in enumerate(FACTS)}


def _top(db: Database, embedder: Embedder, project_id: str, query: str,
         config: RetrievalConfig | None = None) -> list[str]:
    request = ContextRequest(project_id=project_id, subject_id="client-42", query=query,
                             purpose="test")
    result = assemble(request, lambda: embedder.embed_query(query), db=db,
                      config=config or RetrievalConfig())
    return [str(f.id) for f in result.response.packet.facts]


def test_french_facts_answer_english_questions(
    app_db: Database, embedder: Embedder, project_id: str
) -> None:
    ids = _load(app_db, embedder, project_id)
    vector_only = RetrievalConfig(use_text_arm=False)
    questions = {
        "invoice_language": "In which language should we send the invoices?",
        "delivery_address": "Where should the parcel be delivered?",
        "allergy": "Does the customer have any food allergies?",
        "contract_end": "When does the maintenance contract expire?",
        "pet": "What is the name of their dog?",
    }
    for predicate, question in questions.items():
        assert _top(app_db, embedder, project_id, question, vector_only)[0] == ids[predicate], \
            question


def test_natural_questions_reach_the_full_text_arm(
    app_db: Database, embedder: Embedder, project_id: str, owner_conn: psycopg.Connection
) -> None:
    """websearch_to_tsquery ANDs every word, so a natural question matches no fact; the arm
    ORs the meaningful terms and finds the facts that share them."""
    document = {"facts": [
        {"project_id": project_id, "subject_id": "client-42", "predicate": "invoice_language",
         "value": "English"},
        {"project_id": project_id, "subject_id": "client-42", "predicate": "favourite_colour",
         "value": "green"},
    ]}
    MemoryWriter(app_db, embedder).write(parse_document_text(json.dumps(document)))
    question = "which language should the invoice be sent in?"
    anded = owner_conn.execute(
        "SELECT count(*) FROM facts WHERE project_id = %s "
        "AND search_vector @@ websearch_to_tsquery('simple', %s)", (project_id, question),
    ).fetchone()
    assert anded == (0,)
    text_only = RetrievalConfig(use_vector_arm=False)
    served = _top(app_db, embedder, project_id, question, text_only)
    values = owner_conn.execute(
        "SELECT predicate FROM facts WHERE id = ANY(%s::uuid[])", (served,)).fetchall()
    assert values == [("invoice_language",)]
