"""The serving process's heap, settled so the cyclic garbage collector stays off the call path.

CPython's collector traverses every tracked object of the generations it collects, and the
oldest generation holds everything the process imported and built once: modules, classes,
pydantic validators, the settings, the embedder's Python side, so a full collection pauses
the call that triggers it for the whole of that heap. Moving what exists before serving into
the permanent generation (``gc.freeze``) leaves collections only the calls' own objects. Most
of a call's objects are freed by reference counting; a young generation of 10,000 allocations
(CPython's default: 700) makes collections rare, and cyclic garbage (never much: a call's
objects hold no cycles of their own) is still collected, later. Why the handlers' entry does
not call it: docs/decisions/2026-12-01-gc-freeze.md.
"""

import gc

#: Net allocations of tracked objects before the youngest generation is collected.
YOUNG_THRESHOLD = 10_000


def freeze_long_lived() -> None:
    """Move every object alive now into the permanent generation (never traversed, never
    freed) and raise the young generation's threshold. O(1): it relinks the generations'
    lists, nothing is traversed. Call it before serving, and again after the first call has
    loaded the model and opened the connections."""
    gc.freeze()
    _, middle, old = gc.get_threshold()
    gc.set_threshold(YOUNG_THRESHOLD, middle, old)
