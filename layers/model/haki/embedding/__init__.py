"""Sentence embeddings for facts, episodes and queries (onnxruntime + tokenizers, no torch).

``get_embedder(settings)`` returns the process-wide :class:`Embedder` of the configured
provider; the model files are read on the first embedding, not at import.
"""

from haki.embedding.embedder import (
    EMBEDDING_DIM,
    QUERY_CACHE_SIZE,
    CacheStats,
    Embedder,
    Manifest,
    QueryCache,
    get_embedder,
    normalize_query,
)

__all__ = [
    "EMBEDDING_DIM",
    "QUERY_CACHE_SIZE",
    "CacheStats",
    "Embedder",
    "Manifest",
    "QueryCache",
    "get_embedder",
    "normalize_query",
]
