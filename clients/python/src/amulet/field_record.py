"""Field records (docs/field-records.md): a value made of named fields,
which ``ByteMap.merge_fields`` changes in place in one ordered command
instead of a read followed by a compare-and-set.

The fields are in ascending bytewise order of their names, each name once,
each field as ``[name length: u32 big-endian][name][value length: u32
big-endian][value]``; the empty value is the record with no fields. Byte
for byte the encoding of the Rust (``amulet_client::field_record``) and
Java (``io.amulet.client.FieldRecord``) clients.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Mapping

__all__ = ["encode", "decode"]

_LENGTH = struct.Struct(">I")

Fields = Mapping[bytes, bytes] | Iterable[tuple[bytes, bytes]]


def _bytes(value, what: str) -> bytes:
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    raise TypeError(f"{what} must be bytes, not {type(value).__name__}")


def encode(fields: Fields) -> bytes:
    """The record of ``fields`` (a mapping, or an iterable of ``(name,
    value)`` pairs, both bytes), sorted by name whatever order they come in.

    Raises ``TypeError`` for a name or value that is not bytes (``None``
    included: a record has no absent fields, ``merge_fields`` is where None
    removes one) and ``ValueError`` for a name given twice.
    """
    items = fields.items() if isinstance(fields, Mapping) else fields
    by_name: dict[bytes, bytes] = {}
    for name, value in items:
        name = _bytes(name, "a field name")
        if name in by_name:
            raise ValueError(f"the field name {name!r} is given twice")
        by_name[name] = _bytes(value, "a field value")
    parts = []
    for name in sorted(by_name):
        value = by_name[name]
        parts += [_LENGTH.pack(len(name)), name, _LENGTH.pack(len(value)), value]
    return b"".join(parts)


def decode(value: bytes) -> dict[bytes, bytes]:
    """The fields of ``value`` by name, in ascending order of the names.

    Total: anything that is not a record (a length that runs past the end,
    names out of order or repeated) raises ``ValueError``, never an
    ``IndexError`` or ``struct.error``, so a caller reading values it did
    not write can tell the two apart.
    """
    data = memoryview(_bytes(value, "a record"))
    fields: dict[bytes, bytes] = {}
    at = 0
    last = None
    while at < len(data):
        name, at = _take(data, at, "a field name")
        field, at = _take(data, at, "a field value")
        if last is not None and last >= name:
            raise ValueError("not a field record: field names are not unique and in ascending order")
        last = name
        fields[name] = field
    return fields


def _take(data: memoryview, at: int, what: str) -> tuple[bytes, int]:
    """The length-prefixed part of ``data`` at ``at``, and where it ends."""
    left = len(data) - at
    if left < _LENGTH.size:
        raise ValueError(f"not a field record: {what}'s length is cut short")
    (length,) = _LENGTH.unpack_from(data, at)
    start = at + _LENGTH.size
    if length > left - _LENGTH.size:
        raise ValueError(f"not a field record: {what} of {length} bytes with {left - _LENGTH.size} left")
    return bytes(data[start : start + length]), start + length
