"""Key and value codecs: how an ``AmuletMap`` turns Python objects into the
bytes the cluster stores. A codec is any object with ``encode(obj) ->
bytes`` (raising ``TypeError`` for what it cannot encode) and
``decode(bytes) -> obj``.

Key codecs must preserve order (the map is sorted by the encoded bytes):

- ``ELEMENT`` (default): one tuple-layer element: ``int``, ``str``,
  ``bytes``, ``uuid.UUID``, ``None``, ``bool``, ``float``,
  ``SingleFloat``, ``Versionstamp``, or a ``tuple`` of those (a nested
  tuple, so ``("user", 42)`` is one key that sorts by its parts). A key
  ``k`` is stored as ``pack((k,))``: for a scalar that is the same bytes as
  the Rust and Java clients' one-element tuple keys.
- ``TUPLE``: keys are tuples packed at the top level (``pack(key)``), byte
  for byte FoundationDB's and the Rust example's
  ``pack(&[Element::from("user"), Element::from(42)])``.
- ``BYTES``: raw bytes, unchanged (any byte string, in byte order).

Note that Python's ``1 == 1.0 == True`` does not carry over: under
``ELEMENT`` they are three different keys of three types.

Value codecs need not preserve order: ``BYTES`` (default), ``UTF8``
(``str``), ``JSON`` (anything ``json`` serialises), ``ELEMENT`` (typed
values in the tuple encoding).
"""

from __future__ import annotations

import json
from typing import Any, Protocol

from amulet import tuple as tl


class Codec(Protocol):
    def encode(self, obj: Any) -> bytes: ...

    def decode(self, data: bytes) -> Any: ...


class ElementCodec:
    """One tuple-layer element per key or value."""

    def encode(self, obj: Any) -> bytes:
        return tl.pack((obj,))

    def decode(self, data: bytes) -> Any:
        items = tl.unpack(data)
        if len(items) != 1:
            raise tl.TupleError("unknown_type_code", 0, f"expected one element, found {len(items)}")
        return items[0]

    def __repr__(self) -> str:
        return "ELEMENT"


class TupleCodec:
    """Tuples packed at the top level."""

    def encode(self, obj: Any) -> bytes:
        if not isinstance(obj, tuple):
            raise TypeError(f"TUPLE keys are tuples, not {type(obj).__name__}")
        return tl.pack(obj)

    def decode(self, data: bytes) -> tuple:
        return tl.unpack(data)

    def __repr__(self) -> str:
        return "TUPLE"


class BytesCodec:
    """Bytes as they are."""

    def encode(self, obj: Any) -> bytes:
        if isinstance(obj, (bytes, bytearray, memoryview)):
            return bytes(obj)
        raise TypeError(f"BYTES takes bytes, not {type(obj).__name__}")

    def decode(self, data: bytes) -> bytes:
        return bytes(data)

    def __repr__(self) -> str:
        return "BYTES"


class Utf8Codec:
    """``str`` as UTF-8."""

    def encode(self, obj: Any) -> bytes:
        if not isinstance(obj, str):
            raise TypeError(f"UTF8 takes str, not {type(obj).__name__}")
        try:
            return obj.encode("utf-8")
        except UnicodeEncodeError as e:
            raise TypeError(str(e)) from None

    def decode(self, data: bytes) -> str:
        return data.decode("utf-8")

    def __repr__(self) -> str:
        return "UTF8"


class JsonCodec:
    """Any JSON-serialisable value, as compact UTF-8 JSON."""

    def encode(self, obj: Any) -> bytes:
        try:
            return json.dumps(obj, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode()
        except ValueError as e:
            raise TypeError(str(e)) from None

    def decode(self, data: bytes) -> Any:
        return json.loads(data)

    def __repr__(self) -> str:
        return "JSON"


ELEMENT = ElementCodec()
TUPLE = TupleCodec()
BYTES = BytesCodec()
UTF8 = Utf8Codec()
JSON = JsonCodec()
