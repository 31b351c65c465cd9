"""Sentence embeddings for facts, episodes and queries (onnxruntime + tokenizers, no torch).

``get_embedder(settings)`` returns the process-wide :class:`Embedder` of the configured
provider; the model files are read on the first embedding, not at import.
"""

from haki.embedding.embedder import EMBEDDING_DIM, Embedder, Manifest, get_embedder

__all__ = ["EMBEDDING_DIM", "Embedder", "Manifest", "get_embedder"]
