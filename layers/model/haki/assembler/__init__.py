"""The context assembler (SPEC §4): hard filters, two-phase hybrid retrieval, budget packing,
multi-hop expansion, episodes, and a persisted decision trace."""

from haki.assembler.assemble import Assembly, assemble
from haki.assembler.config import DEFAULT_CONFIG, RetrievalConfig

__all__ = ["DEFAULT_CONFIG", "Assembly", "RetrievalConfig", "assemble"]
