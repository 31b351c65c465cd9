"""The runtime embedder: a quantized ONNX sentence encoder built by ``layers/model/recipe``.

A provider folder (``<model_dir>/<provider>/``) holds ``model.onnx`` (token ids + mask in,
L2-normalised mean-pooled embedding out), ``tokenizer.json`` and ``manifest.json`` (dimension,
prefixes, max tokens, pad id, file checksums). The manifest is read when the embedder is created,
so a missing or mismatched model fails at start-up; the model and tokenizer load on first use.

Queries go through a bounded LRU cache of vectors (:class:`QueryCache`, per embedder, so per
container): agents repeat questions. Its entries are keyed by the asking scope (the project)
as well as the text, so no tenant can time whether another asked a question, and each scope
has a capacity of its own, so no tenant can evict another's entries (nor learn its volume by
watching its own being evicted). Passages (the write path) are never cached.
"""

import hashlib
import json
import threading
import unicodedata
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np
import onnxruntime as ort
from tokenizers import Tokenizer

from haki.errors import ConfigurationError
from haki.settings import Settings, get_settings

#: Dimension of every stored vector; the ``vector(384)`` columns of the schema use it.
EMBEDDING_DIM = 384
#: Texts per onnxruntime call in :meth:`Embedder.embed_passages`.
BATCH_SIZE = 32
#: Model tokens per onnxruntime call, all its texts together: long texts go in smaller runs.
#: A run's activations grow with its texts × their length² (attention), and onnxruntime's
#: arena keeps its largest run's memory for the process's life: 32 texts of 512 tokens in one
#: run took a worker from 250 to 1,112 MB (``benchmarks/embed_memory.py``). Short texts
#: (≤ 64 tokens) still go 32 at a time.
RUN_TOKENS = 2048
MODEL_FILE = "model.onnx"
TOKENIZER_FILE = "tokenizer.json"
MANIFEST_FILE = "manifest.json"
#: Default number of query vectors kept per scope (project) (~1.8 KiB each with its key).
QUERY_CACHE_SIZE = 1024
#: Default number of scopes the cache holds at once: at most ~14 MiB with the size above.
QUERY_CACHE_SCOPES = 8


@dataclass(frozen=True)
class Manifest:
    """What the runtime needs from ``manifest.json`` (the recipe writes more)."""

    provider: str
    dimension: int
    query_prefix: str
    passage_prefix: str
    max_tokens: int
    pad_id: int
    output: str

    @classmethod
    def load(cls, folder: Path) -> "Manifest":
        path = folder / MANIFEST_FILE
        try:
            raw = json.loads(path.read_text(encoding="utf-8"))
            return cls(
                provider=str(raw["provider"]),
                dimension=int(raw["dimension"]),
                query_prefix=str(raw["query_prefix"]),
                passage_prefix=str(raw["passage_prefix"]),
                max_tokens=int(raw["max_tokens"]),
                pad_id=int(raw["pad_id"]),
                output=str(raw["output"]),
            )
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise ConfigurationError(f"unreadable embedding manifest {path}: {exc}") from exc


def _provider_folder(model_dir: Path, provider: str) -> Path:
    folder = model_dir / provider
    if (folder / MANIFEST_FILE).is_file():
        return folder
    built = sorted(p.parent.name for p in model_dir.glob(f"*/{MANIFEST_FILE}"))
    hint = f"built providers: {', '.join(built)}" if built else "none built there (make model)"
    raise ConfigurationError(
        f"embedding provider {provider!r} not found in {model_dir} ({hint}); "
        "set HAKI_EMBED_PROVIDER / HAKI_MODEL_DIR"
    )


def _clean(text: str) -> str:
    """Lone surrogates cannot cross into the Rust tokenizer: replace them."""
    if not isinstance(text, str):
        raise TypeError(f"text to embed must be str, not {type(text).__name__}")
    return text.encode("utf-8", errors="replace").decode("utf-8")


def normalize_query(text: str) -> str:
    """The text a query is embedded as, and its cache key: lone surrogates replaced, Unicode
    NFC, whitespace runs (any Unicode space, tab, newline) collapsed to one space, ends stripped.

    Case is kept: e5's tokenizer is cased, so a lower-cased or upper-cased question gets a
    different vector. Whitespace inside a text already collapses in both tokenizers, but a
    trailing space is a token of its own for e5, so stripping it makes ``"question\n"`` and
    ``"question"`` one query, as they should be.
    """
    return " ".join(unicodedata.normalize("NFC", _clean(text)).split())


@dataclass(frozen=True)
class CacheStats:
    """Counters of a :class:`QueryCache` since it was created (``clear`` keeps them)."""

    capacity: int
    size: int
    hits: int
    misses: int
    evictions: int

    @property
    def hit_rate(self) -> float:
        lookups = self.hits + self.misses
        return self.hits / lookups if lookups else 0.0


class QueryCache:
    """A thread-safe map from normalised query text to its vector, one LRU per scope.

    Each scope (the asking project) holds at most ``capacity`` entries and evicts only its
    own: a tenant filling its part never pushes out another's entries. At most ``scopes``
    scopes are held; the first entry of a new scope past that drops the least recently used
    scope whole (a tenant cannot cause that by asking more: its key names one project).
    Keys are 16-byte BLAKE2b digests of the text, so memory per entry is bounded whatever the
    query length. The embedder stores read-only arrays over immutable bytes: a caller cannot
    change what the next caller gets (``np.array(v)`` gives a writable copy). ``capacity`` 0
    disables it (every lookup is a miss and nothing is stored).
    """

    def __init__(self, capacity: int, scopes: int = QUERY_CACHE_SCOPES) -> None:
        if capacity < 0:
            raise ValueError(f"query cache capacity must be >= 0, not {capacity}")
        if scopes < 1:
            raise ValueError(f"query cache scopes must be >= 1, not {scopes}")
        self.capacity = capacity
        self.scopes = scopes
        self._parts: OrderedDict[str, OrderedDict[bytes, np.ndarray]] = OrderedDict()
        self._lock = threading.Lock()
        self._hits = self._misses = self._evictions = 0

    @staticmethod
    def key(text: str, scope: str = "") -> bytes:
        """The entry of ``text`` asked within ``scope`` (a project id; a NUL cannot occur in
        one, so no two (scope, text) pairs share a key)."""
        return hashlib.blake2b(f"{scope}\x00{text}".encode(), digest_size=16).digest()

    def get(self, key: bytes, scope: str = "") -> np.ndarray | None:
        with self._lock:
            part = self._parts.get(scope)
            vector = None if part is None else part.get(key)
            if part is None or vector is None:
                self._misses += 1
                return None
            part.move_to_end(key)
            self._parts.move_to_end(scope)
            self._hits += 1
            return vector

    def put(self, key: bytes, vector: np.ndarray, scope: str = "") -> None:
        if self.capacity == 0:
            return
        with self._lock:
            part = self._parts.get(scope)
            if part is None:
                part = self._parts[scope] = OrderedDict()
                while len(self._parts) > self.scopes:
                    _, dropped = self._parts.popitem(last=False)
                    self._evictions += len(dropped)
            self._parts.move_to_end(scope)
            part[key] = vector
            part.move_to_end(key)
            while len(part) > self.capacity:
                part.popitem(last=False)
                self._evictions += 1

    def clear(self) -> None:
        with self._lock:
            self._parts.clear()

    def size(self, scope: str | None = None) -> int:
        """Entries held, of ``scope`` or of every scope."""
        with self._lock:
            if scope is not None:
                return len(self._parts.get(scope, ()))
            return sum(len(part) for part in self._parts.values())

    def stats(self) -> CacheStats:
        size = self.size()
        with self._lock:
            return CacheStats(self.capacity, size, self._hits, self._misses, self._evictions)


class Embedder:
    """Embeds queries and passages with one provider's model; thread-safe.

    ``threads``: onnxruntime intra-op threads. ``spin``: whether those threads busy-wait for
    work between operators (onnxruntime's default). Off by default: a spinning thread competes
    for the cores with the other thread and the database, which made 2 spinning threads slower
    than one (docs/embedder.md, "Speed"), and on a Lambda whose CPU share is capped (1,769 MB
    is one vCPU of time over two cores) a spinning thread burns the share the other one needs.
    No effect with one thread.
    ``query_cache_size``: query vectors kept per scope (project) in the LRU cache (0 disables
    it); ``query_cache_scopes``: how many scopes it holds at once.
    """

    def __init__(
        self,
        provider: str,
        model_dir: Path,
        threads: int = 1,
        query_cache_size: int = QUERY_CACHE_SIZE,
        spin: bool = False,
        query_cache_scopes: int = QUERY_CACHE_SCOPES,
    ) -> None:
        self.folder = _provider_folder(Path(model_dir), provider)
        self.manifest = Manifest.load(self.folder)
        if self.manifest.provider != provider:
            raise ConfigurationError(
                f"{self.folder} holds provider {self.manifest.provider!r}, not {provider!r}"
            )
        if self.manifest.dimension != EMBEDDING_DIM:
            raise ConfigurationError(
                f"embedding provider {provider!r} has dimension {self.manifest.dimension}; "
                f"the schema stores vector({EMBEDDING_DIM})"
            )
        for name in (MODEL_FILE, TOKENIZER_FILE):
            if not (self.folder / name).is_file():
                raise ConfigurationError(f"embedding model file missing: {self.folder / name}")
        self.provider = provider
        self.dim = EMBEDDING_DIM
        self.threads = threads
        self.spin = spin
        self._query_cache = QueryCache(query_cache_size, query_cache_scopes)
        self._lock = threading.Lock()
        self._session: ort.InferenceSession | None = None
        self._tokenizer: Tokenizer | None = None

    def _load(self) -> tuple[ort.InferenceSession, Tokenizer]:
        with self._lock:
            if self._session is None or self._tokenizer is None:
                tokenizer = Tokenizer.from_file(str(self.folder / TOKENIZER_FILE))
                tokenizer.no_padding()
                tokenizer.enable_truncation(max_length=self.manifest.max_tokens)
                options = ort.SessionOptions()
                options.intra_op_num_threads = self.threads
                options.inter_op_num_threads = 1
                options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
                options.add_session_config_entry(
                    "session.intra_op.allow_spinning", "1" if self.spin else "0"
                )
                try:
                    session = ort.InferenceSession(
                        str(self.folder / MODEL_FILE), options, providers=["CPUExecutionProvider"]
                    )
                except Exception as exc:  # onnxruntime raises its own untyped errors
                    raise ConfigurationError(
                        f"cannot load embedding model {self.folder / MODEL_FILE}: {exc}"
                    ) from exc
                self._tokenizer, self._session = tokenizer, session
            return self._session, self._tokenizer

    def embed_query(self, text: str, *, scope: str = "") -> np.ndarray:
        """float32 ``(dim,)``, L2-normalised, read-only, of :func:`normalize_query` ``(text)``
        with the provider's query prefix; served from the query cache when it holds it for
        ``scope`` (the asking project: another project's entry for the same text is a miss, so
        it costs what a new question costs). The vector never depends on ``scope``."""
        normalized = normalize_query(text)
        key = QueryCache.key(normalized, scope)
        vector = self._query_cache.get(key, scope)
        if vector is None:
            row = self._embed([self.manifest.query_prefix + normalized])[0]
            # Backed by an immutable bytes object: read-only, and setflags(write=True) raises.
            vector = np.frombuffer(row.tobytes(), dtype=np.float32)
            self._query_cache.put(key, vector, scope)
        return vector

    def cache_stats(self) -> CacheStats:
        """Hits, misses, evictions and size of the query cache (for a hit-rate metric)."""
        return self._query_cache.stats()

    def clear_query_cache(self) -> None:
        """Drop every cached query vector (counters are kept); benchmarks use it."""
        self._query_cache.clear()

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        """float32 ``(len(texts), dim)``, L2-normalised, with the passage prefix."""
        if isinstance(texts, str):
            raise TypeError("embed_passages takes a sequence of texts, not one str")
        return self._embed([self.manifest.passage_prefix + _clean(t) for t in texts])

    def passage_tokens(self, texts: Sequence[str]) -> list[int]:
        """How many tokens the model reads of each passage: prefix and special tokens
        included, at most the manifest's ``max_tokens`` (the rest of a longer text is not
        embedded). What embedding costs grows with it."""
        _, tokenizer = self._load()
        prefix = self.manifest.passage_prefix
        encodings = tokenizer.encode_batch([prefix + _clean(t) for t in texts])
        return [len(encoding.ids) for encoding in encodings]

    def _embed(self, texts: list[str]) -> np.ndarray:
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return out
        session, tokenizer = self._load()
        # One text (a query) skips encode_batch's thread pool, which costs more than tokenizing
        # it; the ids are the same.
        encodings = ([tokenizer.encode(texts[0])] if len(texts) == 1
                     else tokenizer.encode_batch(texts))
        # Only texts of the same token length share an onnxruntime batch, so nothing is ever
        # padded: a text's vector is bit for bit the same alone or in any batch, on every CPU.
        # (With padding, x86_64 stayed exact but arm64 did not: the attention's float sums
        # change in the last bits with the padded length, and the rounding of the int8
        # activations turns that into visible differences; docs/embedder.md, "arm64".)
        # No padding is also cheaper: no work is spent on pad tokens.
        by_length: dict[int, list[int]] = {}
        for i, encoding in enumerate(encodings):
            by_length.setdefault(len(encoding.ids), []).append(i)
        for length, rows_of_length in by_length.items():
            per_run = max(1, min(BATCH_SIZE, RUN_TOKENS // length))
            for start in range(0, len(rows_of_length), per_run):
                rows = rows_of_length[start : start + per_run]
                ids = np.array([encodings[i].ids for i in rows], dtype=np.int64)
                feed = {"input_ids": ids, "attention_mask": np.ones_like(ids)}
                out[rows] = session.run([self.manifest.output], feed)[0]
        return out


@lru_cache(maxsize=8)
def _cached(provider: str, model_dir: Path, threads: int, query_cache_size: int,
            query_cache_scopes: int) -> Embedder:
    return Embedder(provider, model_dir, threads, query_cache_size,
                    query_cache_scopes=query_cache_scopes)


@lru_cache(maxsize=8)
def _resolved(model_dir: Path) -> Path:
    """The folder's canonical path, resolved once: ``Path.resolve`` stats every component,
    which would otherwise sit on the context call's path before the embedding starts."""
    return model_dir.resolve()


def get_embedder(settings: Settings | None = None) -> Embedder:
    """The process-wide embedder for ``settings`` (default: the environment's)."""
    s = settings or get_settings()
    return _cached(s.embed_provider, _resolved(Path(s.model_dir)), s.embed_threads,
                   s.embed_query_cache_size, s.embed_query_cache_projects)
