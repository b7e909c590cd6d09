"""Typed keys: FoundationDB's tuple layer, byte for byte.

`pack` turns a tuple of elements into bytes whose unsigned lexicographic
order is the order of the tuples (ints by value, strings by code point,
types in type-code order), so a map of packed keys is sorted like its typed
keys. `unpack` is the inverse and strict: it refuses every encoding the
shared vectors (`spec/tuple-vectors.json`) list as invalid, and accepts the
non-minimal integer forms FoundationDB's bindings write. The Rust crate
`amulet-tuple` and the Java client implement the same rules.

Python types map to elements as follows:

=======================  ====================  ==========
Python                   element               type code
=======================  ====================  ==========
``None``                 null                  00
``bytes``/``bytearray``  byte string           01
``str``                  Unicode string        02
``tuple`` (or ``list``)  nested tuple          05
``int``                  integer, any size     0b..1d
``SingleFloat``          IEEE binary32         20
``float``                IEEE binary64         21
``bool``                 boolean               26/27
``uuid.UUID``            UUID                  30
``Versionstamp``         96-bit versionstamp   33
=======================  ====================  ==========

Decoding gives ``tuple`` for nested tuples and ``bytes`` for byte strings.
"""

from __future__ import annotations

import struct
import uuid
from dataclasses import dataclass

__all__ = [
    "pack",
    "unpack",
    "SingleFloat",
    "Versionstamp",
    "TupleError",
    "MAX_DEPTH",
]

NULL = 0x00
BYTES = 0x01
STRING = 0x02
NESTED = 0x05
NEG_BIG_INT = 0x0B
INT_ZERO = 0x14
POS_BIG_INT = 0x1D
FLOAT = 0x20
DOUBLE = 0x21
FALSE = 0x26
TRUE = 0x27
UUID = 0x30
VERSIONSTAMP = 0x33
ESCAPE = 0xFF

# Nesting deeper than this is refused on decode (and encode), as in
# amulet-tuple: it bounds the decoder's recursion. A tuple inside the
# top-level tuple is depth 1 here as there (`05 00` is depth 1).
MAX_DEPTH = 64

# The arbitrary-precision codes carry a one-byte length.
BIG_INT_BYTES_MAX = 255


class TupleError(ValueError):
    """Bytes that are not a valid tuple encoding.

    ``category`` is one of ``truncated``, ``unterminated``,
    ``invalid_utf8``, ``unknown_type_code`` or ``too_deep`` (the categories
    of the shared vectors); ``offset`` is where the bad element starts.
    """

    def __init__(self, category: str, offset: int, message: str):
        super().__init__(f"{message} (at byte {offset})")
        self.category = category
        self.offset = offset


@dataclass(frozen=True)
class SingleFloat:
    """An IEEE binary32 element. Kept as its bits, so that NaN payloads
    survive (Python floats are binary64 and would quiet them)."""

    bits: int

    @classmethod
    def of(cls, value: float) -> "SingleFloat":
        return cls(struct.unpack(">I", struct.pack(">f", value))[0])

    @property
    def value(self) -> float:
        return struct.unpack(">f", struct.pack(">I", self.bits))[0]

    def __repr__(self) -> str:
        return f"SingleFloat({self.value!r}, bits=0x{self.bits:08x})"


@dataclass(frozen=True)
class Versionstamp:
    """A complete 96-bit versionstamp (12 opaque bytes)."""

    raw: bytes

    def __post_init__(self) -> None:
        if len(self.raw) != 12:
            raise ValueError("a versionstamp is 12 bytes")


def pack(elements: tuple | list) -> bytes:
    """The tuple layer encoding of ``elements`` (a tuple of elements).

    Raises ``TypeError`` for an element of a type the layer has no code for.
    """
    if not isinstance(elements, (tuple, list)):
        raise TypeError(f"pack takes a tuple of elements, not {type(elements).__name__}")
    out = bytearray()
    for element in elements:
        _encode(out, element, 0)
    return bytes(out)


def _encode(out: bytearray, element: object, depth: int) -> None:
    # `bool` before `int`: bool is a subclass of int in Python.
    if element is None:
        out.append(NULL)
        if depth > 0:
            out.append(ESCAPE)
    elif element is True:
        out.append(TRUE)
    elif element is False:
        out.append(FALSE)
    elif isinstance(element, (bytes, bytearray, memoryview)):
        _encode_escaped(out, BYTES, bytes(element))
    elif isinstance(element, str):
        try:
            raw = element.encode("utf-8")
        except UnicodeEncodeError as e:
            # Lone surrogates have no UTF-8 form.
            raise TypeError(f"string is not encodable as UTF-8: {e}") from None
        _encode_escaped(out, STRING, raw)
    elif isinstance(element, int):
        _encode_int(out, element)
    elif isinstance(element, float):
        bits = struct.unpack(">Q", struct.pack(">d", element))[0]
        out.append(DOUBLE)
        out += _order_bits(bits, 64).to_bytes(8, "big")
    elif isinstance(element, SingleFloat):
        out.append(FLOAT)
        out += _order_bits(element.bits, 32).to_bytes(4, "big")
    elif isinstance(element, uuid.UUID):
        out.append(UUID)
        out += element.bytes
    elif isinstance(element, Versionstamp):
        out.append(VERSIONSTAMP)
        out += element.raw
    elif isinstance(element, (tuple, list)):
        if depth + 1 > MAX_DEPTH:
            raise TypeError(f"tuples nested more than {MAX_DEPTH} deep")
        out.append(NESTED)
        for item in element:
            _encode(out, item, depth + 1)
        out.append(0x00)
    else:
        raise TypeError(f"no tuple encoding for {type(element).__name__}: {element!r}")


def _encode_escaped(out: bytearray, code: int, raw: bytes) -> None:
    out.append(code)
    out += raw.replace(b"\x00", b"\x00\xff")
    out.append(0x00)


def _encode_int(out: bytearray, value: int) -> None:
    magnitude = abs(value)
    n = (magnitude.bit_length() + 7) // 8
    if n <= 8:
        if value < 0:
            # One's complement of the magnitude in n bytes.
            out.append(INT_ZERO - n)
            out += ((~magnitude) & ((1 << (8 * n)) - 1)).to_bytes(n, "big")
        else:
            out.append(INT_ZERO + n)
            out += magnitude.to_bytes(n, "big")
        return
    if n > BIG_INT_BYTES_MAX:
        raise TypeError(f"integer of {n} bytes exceeds the tuple layer's {BIG_INT_BYTES_MAX}")
    if value < 0:
        out.append(NEG_BIG_INT)
        out.append(n ^ 0xFF)
        out += ((~magnitude) & ((1 << (8 * n)) - 1)).to_bytes(n, "big")
    else:
        out.append(POS_BIG_INT)
        out.append(n)
        out += magnitude.to_bytes(n, "big")


def _order_bits(bits: int, width: int) -> int:
    """IEEE bits turned so that unsigned order is numeric order: negative
    numbers have every bit flipped, others only the sign bit."""
    sign = 1 << (width - 1)
    mask = (1 << width) - 1
    return (~bits & mask) if bits & sign else bits ^ sign


def _unorder_bits(key: int, width: int) -> int:
    sign = 1 << (width - 1)
    mask = (1 << width) - 1
    return key ^ sign if key & sign else ~key & mask


def unpack(data: bytes | bytearray | memoryview) -> tuple:
    """The tuple ``data`` encodes. Raises ``TupleError`` if it is invalid."""
    decoder = _Decoder(bytes(data))
    items = []
    while decoder.pos < len(decoder.data):
        items.append(decoder.element(0))
    return tuple(items)


class _Decoder:
    def __init__(self, data: bytes):
        self.data = data
        self.pos = 0

    def take(self, start: int, code: int, n: int) -> bytes:
        available = len(self.data) - self.pos
        if available < n:
            raise TupleError(
                "truncated",
                start,
                f"type code 0x{code:02x} needs {n} bytes, {available} left",
            )
        chunk = self.data[self.pos : self.pos + n]
        self.pos += n
        return chunk

    def escaped(self, start: int, what: str) -> bytes:
        out = bytearray()
        pos = self.pos
        data = self.data
        while True:
            zero = data.find(b"\x00", pos)
            if zero < 0:
                raise TupleError("unterminated", start, f"unterminated {what}")
            out += data[pos:zero]
            if zero + 1 < len(data) and data[zero + 1] == ESCAPE:
                out.append(0x00)
                pos = zero + 2
            else:
                self.pos = zero + 1
                return bytes(out)

    def element(self, depth: int) -> object:
        start = self.pos
        code = self.data[start]
        self.pos += 1
        if code == NULL:
            return None
        if code == BYTES:
            return self.escaped(start, "byte string")
        if code == STRING:
            raw = self.escaped(start, "string")
            try:
                # Python's strict UTF-8 decoder refuses surrogates, CESU-8
                # pairs and overlong forms, as the spec requires.
                return raw.decode("utf-8")
            except UnicodeDecodeError:
                raise TupleError("invalid_utf8", start, "string is not valid UTF-8") from None
        if code == NESTED:
            return self.nested(start, depth + 1)
        if INT_ZERO - 8 <= code < INT_ZERO:
            n = INT_ZERO - code
            raw = int.from_bytes(self.take(start, code, n), "big")
            return -((~raw) & ((1 << (8 * n)) - 1))
        if INT_ZERO <= code <= INT_ZERO + 8:
            return int.from_bytes(self.take(start, code, code - INT_ZERO), "big")
        if code == POS_BIG_INT:
            n = self.take(start, code, 1)[0]
            return int.from_bytes(self.take(start, code, n), "big")
        if code == NEG_BIG_INT:
            n = self.take(start, code, 1)[0] ^ 0xFF
            raw = int.from_bytes(self.take(start, code, n), "big")
            return -((~raw) & ((1 << (8 * n)) - 1))
        if code == FLOAT:
            key = int.from_bytes(self.take(start, code, 4), "big")
            return SingleFloat(_unorder_bits(key, 32))
        if code == DOUBLE:
            key = int.from_bytes(self.take(start, code, 8), "big")
            bits = _unorder_bits(key, 64)
            return struct.unpack(">d", bits.to_bytes(8, "big"))[0]
        if code == FALSE:
            return False
        if code == TRUE:
            return True
        if code == UUID:
            return uuid.UUID(bytes=self.take(start, code, 16))
        if code == VERSIONSTAMP:
            return Versionstamp(self.take(start, code, 12))
        raise TupleError("unknown_type_code", start, f"unknown type code 0x{code:02x}")

    def nested(self, start: int, depth: int) -> tuple:
        if depth > MAX_DEPTH:
            raise TupleError("too_deep", start, f"tuples nested more than {MAX_DEPTH} deep")
        items = []
        data = self.data
        while True:
            if self.pos >= len(data):
                raise TupleError("unterminated", start, "unterminated nested tuple")
            if data[self.pos] == NULL:
                if self.pos + 1 < len(data) and data[self.pos + 1] == ESCAPE:
                    items.append(None)
                    self.pos += 2
                else:
                    self.pos += 1
                    return tuple(items)
            else:
                items.append(self.element(depth))
