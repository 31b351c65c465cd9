"""The demo data set of the local API: two projects, five subjects, French and English.

``demo.json`` is a memory document (``haki load`` format) with fixed ids. Its dates are
written around :data:`ANCHOR`, the demo's "today"; at load time every date is shifted by a
whole number of days so that the anchor falls on the current day, which keeps the
volatility horizons and "events this week" meaningful whatever the date. It holds open
conflicts, expired volatile and ephemeral facts, slow facts past their horizon (served as
unconfirmed), facts linked by a shared name (Priya, Slack, Anna, Dupont) and dated episodes.
"""

from datetime import UTC, datetime, timedelta
from pathlib import Path

from haki.db import Database
from haki.embedding import Embedder
from haki_local.documents import MemoryDocument, parse_document
from haki_local.writer import LoadSummary, MemoryWriter

DEMO_PATH = Path(__file__).with_name("demo.json")
#: The demo's "today"; no date in ``demo.json`` is later.
ANCHOR = datetime(2025, 6, 30, 12, 0, tzinfo=UTC)
#: The project, organisation and subject the local dev key and the printed curls use.
DEMO_ORG = "acme"
DEMO_PROJECT = "acme-support"
DEMO_SUBJECT = "user-marie"
DEMO_QUERY = "Comment contacter Marie au sujet de sa facture, et à quelle adresse ?"

_FACT_DATES = ("valid_from", "valid_to", "recorded_from", "last_reinforced_at")


def demo_document() -> MemoryDocument:
    return parse_document(DEMO_PATH)


def shift_dates(document: MemoryDocument, now: datetime) -> MemoryDocument:
    """The document with every date moved by whole days so that :data:`ANCHOR` lands on
    ``now``'s day, never after ``now``."""
    delta = timedelta(days=(now - ANCHOR).days)

    def moved(record: object, names: tuple[str, ...]) -> dict[str, datetime]:
        return {n: getattr(record, n) + delta for n in names if getattr(record, n) is not None}

    return document.model_copy(update={
        "facts": [f.model_copy(update=moved(f, _FACT_DATES)) for f in document.facts],
        "events": [e.model_copy(update=moved(e, ("occurred_at",))) for e in document.events],
    })


def is_loaded(db: Database, document: MemoryDocument) -> bool:
    """Whether every demo fact is already stored (as the owner, across projects)."""
    ids = [f.id for f in document.facts]
    with db.transaction() as conn:
        row = conn.execute("SELECT count(*) FROM facts WHERE id = ANY(%s)", (ids,)).fetchone()
    return row is not None and row[0] == len(ids)


def load_demo(db: Database, embedder: Embedder, now: datetime | None = None) -> LoadSummary | None:
    """Store the demo (as the owner) unless it is already there; ``None`` when it was."""
    document = demo_document()
    if is_loaded(db, document):
        return None
    return MemoryWriter(db, embedder).write(shift_dates(document, now or datetime.now(UTC)))
