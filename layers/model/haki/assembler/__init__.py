"""The context assembler (docs/spec.md §4): hard filters, candidates from the vector and
full-text arms, a ranking preset (``fused`` by default, ``seed`` for comparison), budget
packing, expansion, and a persisted decision trace."""

from haki.assembler.assemble import Assembly, QueryVector, assemble, embed_query
from haki.assembler.config import DEFAULT_CONFIG, PRESETS, SEED_CONFIG, RetrievalConfig

__all__ = ["DEFAULT_CONFIG", "PRESETS", "SEED_CONFIG", "Assembly", "QueryVector",
           "RetrievalConfig", "assemble", "embed_query"]
