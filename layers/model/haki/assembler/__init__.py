"""The context assembler (docs/spec.md §4): hard filters, two-phase hybrid retrieval, budget
packing, multi-hop expansion, episodes, and a persisted decision trace."""

from haki.assembler.assemble import Assembly, QueryVector, assemble, embed_query
from haki.assembler.config import DEFAULT_CONFIG, RetrievalConfig

__all__ = ["DEFAULT_CONFIG", "Assembly", "QueryVector", "RetrievalConfig", "assemble",
           "embed_query"]
