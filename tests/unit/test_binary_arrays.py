"""``haki.db.binary_arrays`` refuses an element of another type instead of packing it as one
(``struct`` would take True as 1, 1 as True, 0.5 as True, and any str as bytes of text)."""

import struct
from uuid import uuid4

import pytest

from haki.db.binary_arrays import BoolArray, Float4Array, Int4Array, TextArray, UuidArray


@pytest.mark.parametrize(("array_type", "bad"), [
    (Int4Array, True), (Int4Array, 1.0), (Int4Array, "1"),
    (Float4Array, 1), (Float4Array, "0.5"),
    (BoolArray, 1), (BoolArray, 0.5),
    (UuidArray, str(uuid4())), (UuidArray, uuid4().bytes),
    (TextArray, b"included"), (TextArray, 3),
])
def test_an_element_of_another_type_is_refused(array_type: type, bad: object) -> None:
    with pytest.raises(TypeError):
        array_type([None, bad])


def test_an_int_beyond_int4_is_refused() -> None:
    with pytest.raises(struct.error):
        Int4Array([2**31])
