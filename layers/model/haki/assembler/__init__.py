"""The context assembler (docs/spec.md §4): hard filters, candidates from the vector and
full-text arms, a ranking preset (``fused`` by default, ``seed`` for comparison), budget
packing, expansion, and a persisted decision trace."""

from haki.assembler.assemble import (
    Assembly,
    QuerySource,
    QueryVector,
    assemble,
    compute_in_background,
    compute_now,
    embed_in_background,
    embed_query,
)
from haki.assembler.config import DEFAULT_CONFIG, PRESETS, SEED_CONFIG, RetrievalConfig

__all__ = ["DEFAULT_CONFIG", "PRESETS", "SEED_CONFIG", "Assembly", "QuerySource",
           "QueryVector", "RetrievalConfig", "assemble", "compute_in_background", "compute_now",
           "embed_in_background", "embed_query"]
