"""Writing memory: the write API's core (SPEC §11) and the loading of memory documents.

- ``api``: request and response models of the write routes, and their limits;
- ``events``: ``POST /v1/events`` (idempotent ingestion);
- ``facts``: ``POST /v1/facts`` (the rules per subject and predicate), ``GET /v1/facts``,
  ``POST /v1/facts/{id}/status``;
- ``lifecycle``: the status graph and the statement that moves facts along it;
- ``conflicts``: ``GET /v1/conflicts``, ``POST /v1/conflicts/{id}/resolve``;
- ``forget``: ``POST /v1/forget`` (disable or erase a subject or a fact, with a receipt);
- ``store``: embedding in batches, the write transaction, the advisory locks;
- ``pagination``: the listings' opaque keyset cursor;
- ``document`` / ``writer``: ``haki load``, the demo and ``haki eval``, through the same
  statements and embedding batches.
"""

from haki.memory.document import parse_document, parse_document_text
from haki.memory.writer import LoadSummary, MemoryWriter

__all__ = ["LoadSummary", "MemoryWriter", "parse_document", "parse_document_text"]
