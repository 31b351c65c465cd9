"""``compute_in_background`` returns once a thread has taken the embedding up (so the model
starts while the caller prepares its statements), and never blocks on a busy pool."""

import importlib
import threading
import time

import numpy as np
import pytest

from haki.assembler import compute_in_background

assemble_module = importlib.import_module("haki.assembler.assemble")
VECTOR = np.ones(384, dtype=np.float32)


def test_the_embedding_has_started_when_the_call_returns(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(assemble_module, "_TAKE_UP_WAIT_S", 30.0)  # whatever the machine's load
    for _ in range(20):
        started: list[float] = []

        def embed(started: list[float] = started) -> np.ndarray:
            started.append(time.perf_counter())
            time.sleep(0.01)
            return VECTOR

        future = compute_in_background(embed)
        returned = time.perf_counter()
        result = future.result()
        # The job holds the GIL from its take-up to its sleep: it has begun before the return.
        assert started and started[0] <= returned
        assert result.vector is VECTOR and result.started is not None


def test_a_busy_pool_delays_the_caller_by_the_bounded_wait_only() -> None:
    release = threading.Event()
    busy = [compute_in_background(lambda: release.wait(30) and VECTOR) for _ in range(8)]
    try:
        began = time.perf_counter()
        queued = compute_in_background(lambda: VECTOR)
        assert time.perf_counter() - began < 1.0
        assert not queued.done()
    finally:
        release.set()
    assert queued.result(timeout=30).vector is VECTOR
    assert all(f.result(timeout=30).vector is VECTOR for f in busy)
