"""A deterministic generator of synthetic memory: facts, episodes and questions at any scale.

Texts come from :mod:`benchmarks.vocabulary` (customer-support memory in English and French).
Embeddings are **synthetic** unit vectors, not model outputs: each topic owns a few cluster
centroids, and a fact, an episode or a question of that topic is its centroid plus Gaussian
noise, normalised. Text and vector therefore agree on the topic, the way a real embedder's
would, and both retrieval arms have something to find. Scale runs use these vectors because
embedding a million passages on two cores would take hours; the query embedder is still run
on every question so its cost is measured (see :mod:`benchmarks.scale`).

Rows are produced in batches shaped for binary ``COPY`` (:data:`FACT_COLUMNS`), scopes
interleaved in a random order, as memory written over time by many tenants would be.
"""

import hashlib
import json
import random
import struct
import uuid
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from datetime import datetime, timedelta

import numpy as np

from benchmarks.vocabulary import EVENT_KINDS, POOLS, TOPICS, Topic

DIMENSIONS = 384
#: pgvector's binary wire format: dimensions, an unused word, then big-endian float32s.
_VECTOR_HEADER = struct.pack(">HH", DIMENSIONS, 0)
_DAY = 86_400.0
GENERATOR_VERSION = 1
#: Rows per batch. Random draws are made per batch, so the rows depend on it: it is part of
#: the generator, not a loader knob.
BATCH_ROWS = 5_000
#: How far back memory goes.
HISTORY_DAYS = 730.0

#: Binary COPY layouts. The embedding is sent pre-encoded (pgvector binary format) under the
#: ``bytea`` dumper, which passes bytes through: the server decodes the field with the
#: column's own receive function, so numpy encodes the vectors in bulk instead of one Python
#: dumper call per row.
FACT_COLUMNS: tuple[tuple[str, str], ...] = (
    ("id", "uuid"), ("project_id", "text"), ("subject_id", "text"), ("predicate", "text"),
    ("value", "jsonb"), ("status", "text"), ("confidence", "float4"), ("volatility", "text"),
    ("valid_from", "timestamptz"), ("valid_to", "timestamptz"),
    ("recorded_from", "timestamptz"), ("last_reinforced_at", "timestamptz"),
    ("source_event_ids", "uuid[]"), ("embedding", "bytea"),
)
EVENT_COLUMNS: tuple[tuple[str, str], ...] = (
    ("id", "uuid"), ("project_id", "text"), ("subject_id", "text"), ("kind", "text"),
    ("payload", "jsonb"), ("occurred_at", "timestamptz"), ("embedding", "bytea"),
)

_STATUSES = ("active", "superseded", "disputed", "candidate")
_STATUS_P = (0.94, 0.04, 0.01, 0.01)
_VOLATILITIES = ("stable", "slow", "volatile", "ephemeral")
_VOLATILITY_P = (0.80, 0.10, 0.07, 0.03)
#: Random streams, one per kind of draw, so that e.g. asking for more queries never changes
#: the facts.
_CENTROIDS, _EVENT_IDS, _EVENTS, _FACTS, _QUERIES = range(5)


@dataclass(frozen=True)
class ScopeSpec:
    project_id: str
    subject_id: str
    facts: int


@dataclass(frozen=True)
class DatasetSpec:
    """Everything that determines a data set's rows (its fingerprint names a loaded copy)."""

    name: str
    scopes: tuple[ScopeSpec, ...]
    seed: int = 20_250_101
    #: Episodes per fact in each scope (at least one episode per scope).
    events_per_fact: float = 0.2
    clusters_per_topic: int = 8
    #: Noise scale around a centroid: cosine to the centroid ≈ 1 / sqrt(1 + noise²).
    noise: float = 0.9

    @property
    def total_facts(self) -> int:
        return sum(s.facts for s in self.scopes)

    @property
    def total_events(self) -> int:
        return sum(self.events_in(s) for s in self.scopes)

    def events_in(self, scope: ScopeSpec) -> int:
        return max(1, round(scope.facts * self.events_per_fact))

    def fingerprint(self) -> str:
        """Names the rows: the spec and the generator's version (bump it when rows change)."""
        blob = json.dumps([GENERATOR_VERSION, asdict(self)], sort_keys=True).encode()
        return hashlib.sha256(blob).hexdigest()[:16]


def single_scope(name: str, facts: int) -> DatasetSpec:
    """One tenant, one subject holding every fact of the table."""
    return DatasetSpec(name, (ScopeSpec("bench-tenant", "customer-solo", facts),))


def many_scopes(name: str, *, scopes: int, facts_per_scope: int, hard_facts: int) -> DatasetSpec:
    """``scopes`` subjects spread over 50 tenants, plus one ``hard`` subject of ``hard_facts``
    (a large slice of the table: the case where filtered HNSW scans return too few rows)."""
    regular = tuple(
        ScopeSpec(f"tenant-{i % 50:02d}", f"customer-{i:05d}", facts_per_scope)
        for i in range(scopes)
    )
    return DatasetSpec(name, (*regular, ScopeSpec("tenant-00", "customer-hard", hard_facts)))


@dataclass(frozen=True)
class BenchQuery:
    project_id: str
    subject_id: str
    text: str
    lang: str
    topic: str
    vector: np.ndarray


class _Slots(dict[str, str]):
    """``str.format_map`` mapping that draws each slot from its pool on first use."""

    def __init__(self, rnd: random.Random) -> None:
        super().__init__()
        self._rnd = rnd

    def __missing__(self, key: str) -> str:
        value = self._rnd.choice(POOLS[key])
        self[key] = value
        return value


def fill(template: str, rnd: random.Random) -> str:
    return template.format_map(_Slots(rnd))


def encode_vectors(vectors: np.ndarray) -> list[bytes]:
    """Rows of ``vectors`` in pgvector's binary format."""
    raw = np.ascontiguousarray(vectors, dtype=">f4").tobytes()
    width = DIMENSIONS * 4
    return [_VECTOR_HEADER + raw[i * width:(i + 1) * width] for i in range(len(vectors))]


class Generator:
    """Rows of one :class:`DatasetSpec`, identical for the same spec and ``now``."""

    def __init__(self, spec: DatasetSpec, *, now: datetime) -> None:
        self.spec = spec
        self.now = now
        n_clusters = len(TOPICS) * spec.clusters_per_topic
        self.centroids = _unit(self._rng(_CENTROIDS).standard_normal((n_clusters, DIMENSIONS)))
        # Zipf-like topic frequencies: a few kinds of fact are far more common than others.
        weights = 1.0 / np.arange(1, len(TOPICS) + 1) ** 0.8
        self.topic_p = weights / weights.sum()
        self._event_ids, self._event_offsets = self._plan_events()

    def _rng(self, *stream: int) -> np.random.Generator:
        """An independent random stream of this data set, the same on every call."""
        return np.random.default_rng([self.spec.seed, *stream])

    # ----------------------------------------------------------------------- events

    def _plan_events(self) -> tuple[list[uuid.UUID], np.ndarray]:
        """Event ids, grouped by scope (``offsets[s]:offsets[s + 1]``), so facts can cite the
        episodes of their own scope."""
        rng = self._rng(_EVENT_IDS)
        counts = np.array([self.spec.events_in(s) for s in self.spec.scopes])
        raw = rng.bytes(16 * int(counts.sum()))
        ids = [uuid.UUID(bytes=raw[i:i + 16], version=4) for i in range(0, len(raw), 16)]
        offsets = np.concatenate(([0], np.cumsum(counts)))
        return ids, offsets

    def event_batches(self) -> Iterator[list[tuple[object, ...]]]:
        rng = self._rng(_EVENTS)
        rnd = random.Random(int(rng.integers(2**63)))
        counts = np.diff(self._event_offsets)
        order = rng.permutation(np.repeat(np.arange(len(counts)), counts))
        cursor = self._event_offsets[:-1].copy()
        for start in range(0, len(order), BATCH_ROWS):
            scope_idx = order[start:start + BATCH_ROWS]
            n = len(scope_idx)
            topics = rng.choice(len(TOPICS), size=n, p=self.topic_p)
            vectors = encode_vectors(self._vectors(rng, topics))
            ages = rng.uniform(0, HISTORY_DAYS * _DAY, size=n)
            rows: list[tuple[object, ...]] = []
            for i in range(n):
                scope = self.spec.scopes[scope_idx[i]]
                event_id = self._event_ids[cursor[scope_idx[i]]]
                cursor[scope_idx[i]] += 1
                topic, lang = TOPICS[topics[i]], rnd.choice(("en", "fr"))
                payload = {"text": fill(rnd.choice(topic.episodes[lang]), rnd), "lang": lang}
                rows.append((
                    event_id, scope.project_id, scope.subject_id, rnd.choice(EVENT_KINDS),
                    payload, self.now - timedelta(seconds=float(ages[i])), vectors[i],
                ))
            yield rows

    # ----------------------------------------------------------------------- facts

    def fact_batches(self) -> Iterator[list[tuple[object, ...]]]:
        rng = self._rng(_FACTS)
        rnd = random.Random(int(rng.integers(2**63)))
        counts = [s.facts for s in self.spec.scopes]
        order = rng.permutation(np.repeat(np.arange(len(counts)), counts))
        for start in range(0, len(order), BATCH_ROWS):
            scope_idx = order[start:start + BATCH_ROWS]
            n = len(scope_idx)
            topics = rng.choice(len(TOPICS), size=n, p=self.topic_p)
            vectors = encode_vectors(self._vectors(rng, topics))
            ids = rng.bytes(16 * n)
            statuses = rng.choice(len(_STATUSES), size=n, p=_STATUS_P)
            volatilities = rng.choice(len(_VOLATILITIES), size=n, p=_VOLATILITY_P)
            ages = rng.uniform(0, HISTORY_DAYS * _DAY, size=n)
            draws = rng.random((n, 5))
            rows: list[tuple[object, ...]] = []
            for i in range(n):
                s = int(scope_idx[i])
                scope = self.spec.scopes[s]
                topic, lang = TOPICS[topics[i]], rnd.choice(("en", "fr"))
                age = float(ages[i])
                recorded = self.now - timedelta(seconds=age)
                d = draws[i]
                valid_from = recorded if d[0] < 0.5 else None
                # 2% ended in the past (filtered out), after they began.
                valid_to = recorded + timedelta(seconds=1 + age * d[1]) if d[2] < 0.02 else None
                reinforced = recorded + timedelta(seconds=age * d[1]) if d[3] < 0.3 else None
                rows.append((
                    uuid.UUID(bytes=ids[16 * i:16 * i + 16], version=4),
                    scope.project_id, scope.subject_id, topic.predicate,
                    self._value(topic, lang, rnd),
                    _STATUSES[statuses[i]],
                    round(0.5 + 0.5 * d[4], 2) if d[4] > 0.2 else None,
                    _VOLATILITIES[volatilities[i]],
                    valid_from, valid_to, recorded, reinforced,
                    self._sources(s, rnd), vectors[i],
                ))
            yield rows

    def _value(self, topic: Topic, lang: str, rnd: random.Random) -> dict[str, str]:
        slots = _Slots(rnd)  # one draw per slot, shared by the value's fields
        return {key: template.format_map(slots) for key, template in topic.values[lang].items()}

    def _sources(self, scope_index: int, rnd: random.Random) -> list[uuid.UUID]:
        lo, hi = int(self._event_offsets[scope_index]), int(self._event_offsets[scope_index + 1])
        k = min(rnd.choice((0, 1, 1, 2)), hi - lo)
        return [self._event_ids[rnd.randrange(lo, hi)] for _ in range(k)]

    # ----------------------------------------------------------------------- queries

    def queries(self, scopes: list[ScopeSpec], n: int, *, salt: int = 0) -> list[BenchQuery]:
        """``n`` questions, scope drawn uniformly from ``scopes``; deterministic per ``salt``."""
        rng = self._rng(_QUERIES, salt)
        rnd = random.Random(int(rng.integers(2**63)))
        topics = rng.choice(len(TOPICS), size=n, p=self.topic_p)
        vectors = self._vectors(rng, topics)
        out = []
        for i in range(n):
            scope = scopes[int(rng.integers(len(scopes)))]
            topic, lang = TOPICS[topics[i]], rnd.choice(("en", "fr"))
            out.append(BenchQuery(
                scope.project_id, scope.subject_id, fill(rnd.choice(topic.questions[lang]), rnd),
                lang, topic.predicate, vectors[i].astype(np.float32),
            ))
        return out

    def _vectors(self, rng: np.random.Generator, topics: np.ndarray) -> np.ndarray:
        clusters = topics * self.spec.clusters_per_topic + rng.integers(
            self.spec.clusters_per_topic, size=len(topics))
        noise = rng.standard_normal((len(topics), DIMENSIONS)) * (
            self.spec.noise / np.sqrt(DIMENSIONS))
        return _unit(self.centroids[clusters] + noise).astype(np.float32)


def _unit(x: np.ndarray) -> np.ndarray:
    return x / np.linalg.norm(x, axis=1, keepdims=True)
