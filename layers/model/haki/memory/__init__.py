"""Writing memory: parsing memory documents and storing facts, events and conflict sets."""

from haki.memory.document import parse_document, parse_document_text
from haki.memory.writer import LoadSummary, MemoryWriter

__all__ = ["LoadSummary", "MemoryWriter", "parse_document", "parse_document_text"]
