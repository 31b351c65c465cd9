"""The API entry settles the heap (haki.heap) before a container's first invocation and once
more after it — and never again."""

import gc
from collections.abc import Iterator
from typing import Any

import pytest

from haki_aws.observability import api_entry
from tests.handlers.conftest import FakeLambdaContext

kept: list[list[int]] = []
seen: list[int] = []


@pytest.fixture
def restored_gc() -> Iterator[None]:
    saved = gc.get_threshold()
    yield
    gc.unfreeze()
    gc.set_threshold(*saved)


@api_entry
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    seen.append(gc.get_freeze_count())
    # What a first call builds to keep: the model's wrappers, the connections, caches.
    kept.extend([i] for i in range(2_000))
    return {"statusCode": 200, "body": "{}"}


def test_the_first_invocation_is_framed_by_two_freezes_and_later_ones_by_none(
    restored_gc: None,
) -> None:
    gc.unfreeze()
    event = {"requestContext": {"requestId": "r-1"}, "headers": {}}
    handler(event, FakeLambdaContext())
    after_first = gc.get_freeze_count()
    assert seen[0] > 0, "the heap was not frozen before the first call"
    # The first call's own long-lived objects went in after it.
    assert after_first >= seen[0] + len(kept) - 100
    gc.unfreeze()
    handler(event, FakeLambdaContext())
    assert seen[1] == 0 and gc.get_freeze_count() == 0, "a later call froze the heap again"
