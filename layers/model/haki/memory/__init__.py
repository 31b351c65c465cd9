"""Writing memory: the write API's core (SPEC §11).

- ``api``: request and response models of the write routes, and their limits;
- ``events``: ``POST /v1/events`` (idempotent ingestion);
- ``facts``: ``POST /v1/facts`` (the rules per subject and predicate), ``GET /v1/facts``,
  ``POST /v1/facts/{id}/status``;
- ``lifecycle``: the status graph and the statement that moves facts along it;
- ``conflicts``: ``GET /v1/conflicts``, ``POST /v1/conflicts/{id}/resolve``;
- ``forget``: ``POST /v1/forget`` (disable or erase a subject or a fact, with a receipt);
- ``store``: embedding in batches, the write transaction, the advisory locks;
- ``pagination``: the listings' opaque keyset cursor.

Loading a memory document as written (``haki load``, the demo, ``haki eval``) is the local
composition's (``haki_local.documents``, ``haki_local.writer``), through the same statements.
"""
