"""Benchmarks of the context assembler (``python -m benchmarks.scale``)."""
