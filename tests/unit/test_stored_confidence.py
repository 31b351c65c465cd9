"""A confidence is stored in a ``real`` column (single precision) and served as the decimal
that was written, not the nearest single-precision number printed in double precision."""

import struct
from uuid import uuid4

import pytest

from haki.models import PacketFact


def as_stored(value: float) -> float:
    """What reading the ``real`` column gives Python (0.95 → 0.949999988079071)."""
    single: float = struct.unpack("f", struct.pack("f", value))[0]
    return single


def fact(confidence: float | None) -> PacketFact:
    return PacketFact(id=uuid4(), predicate="p", value="v", confidence=confidence,
                      valid_from=None, source_event_ids=[])


@pytest.mark.parametrize("written", [0.95, 0.9, 0.1, 0.333, 0.7, 0.12345, 1.0, 0.0, 0.5])
def test_a_stored_confidence_is_served_as_written(written: float) -> None:
    assert fact(as_stored(written)).confidence == written
    assert str(fact(as_stored(written)).model_dump(mode="json")["confidence"]) == str(written)


def test_a_confidence_that_was_never_single_precision_is_kept() -> None:
    assert fact(0.1234567891234).confidence == 0.1234567891234
    assert fact(None).confidence is None
