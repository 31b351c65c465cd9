"""haki.heap: what exists before serving leaves the collector's generations."""

import gc
from collections.abc import Iterator

import pytest

from haki.heap import YOUNG_THRESHOLD, freeze_long_lived


@pytest.fixture
def restored_gc() -> Iterator[tuple[int, int, int]]:
    saved = gc.get_threshold()
    yield saved
    gc.unfreeze()
    gc.set_threshold(*saved)


def test_freeze_moves_the_live_objects_out_and_raises_the_young_threshold(
    restored_gc: tuple[int, int, int],
) -> None:
    gc.unfreeze()
    assert gc.get_freeze_count() == 0
    kept = [[i] for i in range(5_000)]  # tracked containers, alive across the freeze
    freeze_long_lived()
    assert gc.get_freeze_count() >= len(kept)
    # A full collection no longer sees them: the generations hold only what came after.
    assert all(not any(x is y for y in gc.get_objects(generation=2)) for x in kept[:3])
    assert gc.get_threshold() == (YOUNG_THRESHOLD, restored_gc[1], restored_gc[2])
