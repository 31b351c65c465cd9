"""One-dimensional PostgreSQL arrays encoded in PostgreSQL's binary format in one pass.

The trace row of a context call is fifteen parallel arrays of ~100–200 elements each
(``haki.assembler.trace``). psycopg's generic list dumper finds an element dumper and calls
it for every element, in Python: ~1.4 ms a call at 100k facts. Here each array type knows its
element's encoding up front and packs every element with one precompiled ``struct``: the same
bytes (the round trip through PostgreSQL is tested) for a quarter of the work.

Wrap a list in the array type of its elements (:class:`Int4Array`, :class:`Float4Array`,
:class:`BoolArray`, :class:`UuidArray`, :class:`TextArray`; None is NULL) and pass it as a
query parameter of a connection made by ``haki.db.connection.connect``, which registers
:data:`DUMPERS`. Elements are checked on the way: a value of another type raises
:class:`TypeError` (``struct`` itself would take a bool as an int, or a float as a bool).
"""

import struct
from collections.abc import Callable, Sequence
from typing import Any, ClassVar
from uuid import UUID

from psycopg import adapt, pq
from psycopg.abc import AdaptContext
from psycopg.postgres import types as pg_types

_NULL = struct.pack(">i", -1)
_HEADER = struct.Struct(">iiIii")  # ndim, has-null flag, element oid, length, lower bound
_EMPTY = struct.Struct(">iiI")  # ndim 0: no dimensions follow
_INT4 = struct.Struct(">ii")
_FLOAT4 = struct.Struct(">if")
_BOOL = struct.Struct(">i?")
_LENGTH = struct.Struct(">i")
_UUID_LENGTH = _LENGTH.pack(16)


def _checked(kind: type, pack: Callable[[Any], bytes]) -> Callable[[object], bytes]:
    """``pack`` (an element, with its length word) for values of exactly ``kind``."""
    def encode(value: object) -> bytes:
        if type(value) is not kind:
            raise TypeError(f"a {kind.__name__} array element, not {type(value).__name__}")
        return pack(value)
    return encode


def _text(value: str) -> bytes:
    data = value.encode()
    return _LENGTH.pack(len(data)) + data


class BinaryArray:
    """A list of one element type as a one-dimensional PostgreSQL array; None is NULL. Each
    subclass names its element type in PostgreSQL and the function packing one element."""

    __slots__ = ("data",)
    element: ClassVar[str]
    _element_oid: ClassVar[int]
    _encode: ClassVar[Callable[[object], bytes]]

    def __init_subclass__(cls, *, element: str, encode: Callable[[object], bytes]) -> None:
        super().__init_subclass__()
        cls.element = element
        cls._element_oid = pg_types[element].oid
        cls._encode = staticmethod(encode)

    def __init__(self, values: Sequence[object]) -> None:
        if not values:
            self.data = _EMPTY.pack(0, 0, self._element_oid)
            return
        encode = type(self)._encode
        parts = [_NULL if value is None else encode(value) for value in values]
        has_null = any(part is _NULL for part in parts)
        self.data = (_HEADER.pack(1, has_null, self._element_oid, len(values), 1)
                     + b"".join(parts))


class Int4Array(BinaryArray, element="int4",
                encode=_checked(int, lambda value: _INT4.pack(4, value))):
    __slots__ = ()


class Float4Array(BinaryArray, element="float4",
                  encode=_checked(float, lambda value: _FLOAT4.pack(4, value))):
    __slots__ = ()


class BoolArray(BinaryArray, element="bool",
                encode=_checked(bool, lambda value: _BOOL.pack(1, value))):
    __slots__ = ()


class UuidArray(BinaryArray, element="uuid",
                encode=_checked(UUID, lambda value: _UUID_LENGTH + value.bytes)):
    __slots__ = ()


class TextArray(BinaryArray, element="text", encode=_checked(str, _text)):
    __slots__ = ()


def _dumper(array_type: type[BinaryArray]) -> type[adapt.Dumper]:
    """A binary dumper of ``array_type``: its bytes as they are, typed as its array oid."""

    array_oid = pg_types[array_type.element].array_oid

    class ArrayDumper(adapt.Dumper):
        # The oid is the instance's, not the class's: psycopg files a dumper class with an oid
        # as *the* dumper of that type, and would hand it plain lists of that type too (a
        # binary COPY's ``set_types``).
        format = pq.Format.BINARY

        def __init__(self, cls: type, context: AdaptContext | None = None) -> None:
            super().__init__(cls, context)
            self.oid = array_oid

        def dump(self, obj: BinaryArray) -> bytes:
            return obj.data

    ArrayDumper.__name__ = f"{array_type.__name__}Dumper"
    return ArrayDumper


#: Each array type with its dumper, registered on every connection (``connect``).
DUMPERS: tuple[tuple[type[BinaryArray], type[adapt.Dumper]], ...] = tuple(
    (array_type, _dumper(array_type))
    for array_type in (Int4Array, Float4Array, BoolArray, UuidArray, TextArray))
