"""What every memory write shares: embedding in batches, the write transaction (constraint
violations become domain errors, never a raw psycopg exception), and the advisory locks that
serialise writers of one subject and predicate.

Locks (transaction-level, released at COMMIT or ROLLBACK; 64-bit keys hashed from the scope):
- a **subject** lock, taken *shared* by every writer of the subject's memory and *exclusive*
  by the erasure of the subject, so an erasure never interleaves with a write: it waits for the
  writes in flight, and writes that come after it find the subject empty;
- a **key** lock per (subject, predicate), exclusive: the rules "same value → reinforce /
  supersede / conflict" read the active fact and act on it, and two writers of the same key
  must not both find "no active fact" and both create one.
Every transaction takes its subject locks, then its key locks, each in ascending key order,
so two writers never wait for each other in a cycle.
"""

import hashlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime

import numpy as np
import psycopg

from haki.db import Database
from haki.embedding import Embedder
from haki.errors import ForbiddenScope, PayloadTooLarge, ValidationFailed
from haki.memory.api import MAX_EMBED_TOKENS

#: Passages handed to the embedder at once. It runs texts of equal token length together (no
#: padding), so the more it sees at once, the fuller its runs: a write batch (≤ 100 records)
#: is one call; a large ``haki load`` document goes in chunks, for its progress bar. (Chunks
#: of 32 in request order, as before the write API, cost a mixed batch of 96 messages 2.5
#: times the CPU of one call with the padding embedder of the time.)
EMBED_CHUNK = 1024

#: Called with the number of records just embedded or written (drives a progress bar).
Progress = Callable[[int], None]

LOCK_SHARED = "SELECT pg_advisory_xact_lock_shared(k) FROM unnest(%s::bigint[]) AS k"
LOCK_EXCLUSIVE = "SELECT pg_advisory_xact_lock(k) FROM unnest(%s::bigint[]) AS k"


def embed_texts(
    embedder: Embedder, texts: Sequence[str], progress: Progress | None = None
) -> np.ndarray:
    """Passage embeddings of ``texts``, ``(n, dim)``, in chunks of :data:`EMBED_CHUNK`."""
    out = np.empty((len(texts), embedder.dim), dtype=np.float32)
    for start in range(0, len(texts), EMBED_CHUNK):
        chunk = list(texts[start:start + EMBED_CHUNK])
        out[start:start + len(chunk)] = embedder.embed_passages(chunk)
        if progress is not None:
            progress(len(chunk))
    return out


def check_embedding_budget(embedder: Embedder, texts: Sequence[str], records: str) -> None:
    """Refuse a batch whose texts hold more than :data:`MAX_EMBED_TOKENS` model tokens,
    naming the first record (``records[i]``) past the budget, before any embedding."""
    total = 0
    for index, tokens in enumerate(embedder.passage_tokens(texts)):
        total += tokens
        if total > MAX_EMBED_TOKENS:
            raise PayloadTooLarge(
                f"{records}[{index}]: the batch's text reaches {total} model tokens at this "
                f"record; one request embeds at most {MAX_EMBED_TOKENS}: send the records from "
                "this one on in another request")


@contextmanager
def write_transaction(db: Database, project_id: str | None) -> Iterator[psycopg.Connection]:
    """A transaction of ``db`` scoped to ``project_id``; a constraint the rows break (or a
    value PostgreSQL cannot store) rolls it back and becomes :class:`ValidationFailed`.

    The checks of the request models and of the core come first and name the offending
    record; this is the last wall, for what only the database can see.
    """
    try:
        with db.transaction(project_id) as conn:
            yield conn
    except psycopg.errors.InsufficientPrivilege as exc:
        # Row-level security refused a row: it belongs to a project the key is not for.
        raise ForbiddenScope("these records belong to a project this key cannot write") from exc
    except (psycopg.IntegrityError, psycopg.DataError) as exc:
        diag = exc.diag
        what = diag.constraint_name or diag.message_primary or type(exc).__name__
        raise ValidationFailed(f"the memory store refused the records ({what})") from exc


def transaction_time(conn: psycopg.Connection) -> datetime:
    """``now()``: the transaction's start, which every ``now()`` of its statements wrote."""
    row = conn.execute("SELECT now()").fetchone()
    assert row is not None
    now: datetime = row[0]
    return now


def _lock_key(*parts: str) -> int:
    """A signed 64-bit advisory lock key for ``parts`` (scope ids hold no control character,
    so the separator cannot be forged)."""
    digest = hashlib.blake2b("\x1f".join(parts).encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


def lock_scopes(
    conn: psycopg.Connection, project_id: str, subjects: Iterable[str],
    keys: Iterable[tuple[str, str]] = (),
) -> None:
    """Shared locks on ``subjects``, then exclusive locks on the (subject, predicate) ``keys``."""
    subject_locks = sorted({_lock_key("subject", project_id, s) for s in subjects})
    key_locks = sorted({_lock_key("key", project_id, s, p) for s, p in keys})
    conn.execute(LOCK_SHARED, (subject_locks,))
    if key_locks:
        conn.execute(LOCK_EXCLUSIVE, (key_locks,))


def lock_subject_exclusive(conn: psycopg.Connection, project_id: str, subject_id: str) -> None:
    """The erasure's lock: waits for every writer of the subject, and holds the next ones."""
    conn.execute(LOCK_EXCLUSIVE, ([_lock_key("subject", project_id, subject_id)],))
