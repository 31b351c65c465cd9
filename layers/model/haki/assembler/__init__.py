"""The context assembler (docs/spec.md §4): hard filters, candidates from the vector and
full-text arms, their fusion, budget packing with neighbour expansion, and a persisted
decision trace."""

from haki.assembler.assemble import Assembly, Embed, assemble
from haki.assembler.config import DEFAULT_CONFIG, RetrievalConfig

__all__ = ["DEFAULT_CONFIG", "Assembly", "Embed", "RetrievalConfig", "assemble"]
