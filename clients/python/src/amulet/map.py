"""``AmuletMap``: a distributed, sorted ``MutableMapping``.

Every single-key operation is one linearizable request; ``len``, ``clear``,
``update`` chunks, first/last and floor/ceiling/higher/lower are one request
each, ordered across partitions by the cluster. Iterating the map or its
views reads a snapshot: one consistent state of the whole map, however
long the iteration takes. Range iteration (``irange``, ``items_between``)
reads pages of ``Client(range_entries=...)`` entries, each page
linearizable on its own; ``scan`` hands out such pages, each within one
range partition (``amulet.scan``).
"""

from __future__ import annotations

from collections.abc import ItemsView, Iterator, KeysView, MutableMapping, ValuesView
from typing import Any

from amulet import codecs, errors
from amulet.bulk_load import BulkLoaded
from amulet.bytemap import ByteMap
from amulet.scan import Scan

_MISSING = object()

# update() sends put_all chunks below the server's default put_all limits
# (10 000 entries, 3 MiB), so a large update is not refused whole.
UPDATE_CHUNK_ENTRIES = 1000
UPDATE_CHUNK_BYTES = 2 * 1024 * 1024

# popitem retries when another client changes the first entry between the
# read and the conditional remove; it gives up after this many rounds.
POPITEM_ROUNDS = 100


class AmuletMap(MutableMapping):
    """A sorted map of the cluster. Keys sort by their encoded bytes (with
    the default ``codecs.ELEMENT``: ints by value, strings by code point,
    types in tuple-layer order).

    Errors: ``KeyError`` for a missing key in ``m[k]``, ``del m[k]`` and
    ``pop(k)``; ``TypeError`` for a key or value the codecs cannot encode;
    ``amulet.AmuletError`` subclasses for what the cluster reports (e.g.
    ``NotFound`` if the map does not exist, ``InvalidArgument`` for a key
    above 16 KiB).
    """

    def __init__(self, raw: ByteMap, *, key_codec=None, value_codec=None):
        self.raw = raw
        self.key_codec = key_codec or codecs.ELEMENT
        self.value_codec = value_codec or codecs.BYTES

    @property
    def name(self) -> str:
        return self.raw.name

    def __repr__(self) -> str:
        return f"AmuletMap({self.name!r})"

    # ---- codecs -----------------------------------------------------------

    def _k(self, key: Any) -> bytes:
        return self.key_codec.encode(key)

    def _v(self, value: Any) -> bytes:
        return self.value_codec.encode(value)

    def _dk(self, data: bytes) -> Any:
        return self.key_codec.decode(data)

    def _dv(self, data: bytes | None) -> Any:
        return None if data is None else self.value_codec.decode(data)

    def _item(self, entry) -> tuple[Any, Any] | None:
        return None if entry is None else (self._dk(entry[0]), self._dv(entry[1]))

    # ---- Mapping ------------------------------------------------------------

    def __getitem__(self, key: Any) -> Any:
        data = self.raw.get(self._k(key))
        if data is None:
            raise KeyError(key)
        return self.value_codec.decode(data)

    def get(self, key: Any, default: Any = None) -> Any:
        data = self.raw.get(self._k(key))
        return default if data is None else self.value_codec.decode(data)

    def __contains__(self, key: Any) -> bool:
        try:
            encoded = self._k(key)
        except TypeError:
            # Like a dict asked for an unhashable key: not a key of this map.
            return False
        return self.raw.contains_key(encoded)

    def __len__(self) -> int:
        return self.raw.size()

    def __bool__(self) -> bool:
        return not self.raw.is_empty()

    def __iter__(self) -> Iterator[Any]:
        """The keys of a snapshot, ascending."""
        for key, _ in self.snapshot_items():
            yield key

    def keys(self) -> KeysView:
        return KeysView(self)

    def items(self) -> ItemsView:
        """A view whose iteration reads one snapshot (keys and values agree)."""
        return _SnapshotItems(self)

    def values(self) -> ValuesView:
        """A view whose iteration reads one snapshot; ``v in values()`` is
        one ContainsValue request."""
        return _SnapshotValues(self)

    def snapshot_items(self) -> Iterator[tuple[Any, Any]]:
        """``(key, value)`` of one snapshot, ascending; the snapshot is
        released when the iteration ends or the iterator is closed."""
        with self.raw.snapshot() as snapshot:
            for key, value in snapshot:
                yield self._dk(key), self.value_codec.decode(value)

    # ---- MutableMapping ---------------------------------------------------

    def __setitem__(self, key: Any, value: Any) -> None:
        self.raw.put(self._k(key), self._v(value))

    def __delitem__(self, key: Any) -> None:
        if self.raw.remove(self._k(key)) is None:
            raise KeyError(key)

    def put(self, key: Any, value: Any) -> Any:
        """Sets ``key``; returns the previous value (None if absent)."""
        return self._dv(self.raw.put(self._k(key), self._v(value)))

    def pop(self, key: Any, default: Any = _MISSING) -> Any:
        data = self.raw.remove(self._k(key))
        if data is None:
            if default is _MISSING:
                raise KeyError(key)
            return default
        return self.value_codec.decode(data)

    def popitem(self) -> tuple[Any, Any]:
        """Removes and returns the first (least) item; ``KeyError`` if empty."""
        for _ in range(POPITEM_ROUNDS):
            entry = self.raw.first_entry()
            if entry is None:
                raise KeyError("popitem(): the map is empty")
            if self.raw.remove_if_equals(entry[0], entry[1]):
                return self._item(entry)
        raise errors.Unavailable(f"popitem: the first entry kept changing ({POPITEM_ROUNDS} rounds)")

    def clear(self) -> None:
        """Removes every entry (one request, atomic across partitions)."""
        self.raw.clear()

    def update(self, other=(), /, **kwargs) -> None:
        """Sets every item, in put_all requests of at most 1000 entries and
        2 MiB, each atomic across partitions."""
        items = other.items() if hasattr(other, "items") else other
        chunk: list[tuple[bytes, bytes]] = []
        size = 0
        for key, value in list(items) + list(kwargs.items()):
            entry = (self._k(key), self._v(value))
            if chunk and (len(chunk) >= UPDATE_CHUNK_ENTRIES or size + len(entry[0]) + len(entry[1]) > UPDATE_CHUNK_BYTES):
                self.raw.put_all(chunk)
                chunk, size = [], 0
            chunk.append(entry)
            size += len(entry[0]) + len(entry[1])
        if chunk:
            self.raw.put_all(chunk)

    def put_all(self, items) -> None:
        """Sets every item in one request, atomically (the server refuses
        more than 10 000 entries or 3 MiB with ``InvalidArgument``)."""
        items = items.items() if hasattr(items, "items") else items
        self.raw.put_all([(self._k(k), self._v(v)) for k, v in items])

    def bulk_load(self, items, **options) -> BulkLoaded:
        """Loads ``items`` (a mapping or ``(key, value)`` pairs), sorted by
        encoded key with no key twice, as ``ByteMap.bulk_load`` (the same
        keyword options): a range map pre-split into partitions of
        ``partition_entries`` as it goes, then written in ``put_all``
        batches within one partition. The order checked is the encoded
        keys' (with ``codecs.ELEMENT``, ints by value, then strings, ...).
        Items are encoded as they are read."""
        items = items.items() if hasattr(items, "items") else items
        return self.raw.bulk_load(((self._k(k), self._v(v)) for k, v in items), **options)

    # ---- atomic conditional operations -----------------------------------

    def setdefault(self, key: Any, default: Any = None) -> Any:
        """``m[key]`` if present, else sets it to ``default`` and returns
        ``default``: one atomic putIfAbsent."""
        existing = self.raw.put_if_absent(self._k(key), self._v(default))
        return default if existing is None else self.value_codec.decode(existing)

    def put_if_absent(self, key: Any, value: Any) -> Any:
        """Sets ``key`` only if absent; returns the existing value (None: it
        was set)."""
        return self._dv(self.raw.put_if_absent(self._k(key), self._v(value)))

    def replace(self, key: Any, value: Any) -> Any:
        """Sets ``key`` only if present; returns the previous value (None:
        nothing changed)."""
        return self._dv(self.raw.replace(self._k(key), self._v(value)))

    def compare_and_set(self, key: Any, expected: Any, value: Any) -> bool:
        """Sets ``key`` to ``value`` if it holds ``expected``; whether it did."""
        return self.raw.replace_if_equals(self._k(key), self._v(expected), self._v(value))

    def remove_if_equals(self, key: Any, expected: Any) -> bool:
        """Removes ``key`` if it holds ``expected``; whether it did."""
        return self.raw.remove_if_equals(self._k(key), self._v(expected))

    def contains_value(self, value: Any) -> bool:
        return self.raw.contains_value(self._v(value))

    # ---- sorted operations ----------------------------------------------

    def first_item(self) -> tuple[Any, Any] | None:
        """The item with the least key, or None if the map is empty."""
        return self._item(self.raw.first_entry())

    def last_item(self) -> tuple[Any, Any] | None:
        """The item with the greatest key, or None if the map is empty."""
        return self._item(self.raw.last_entry())

    def floor_item(self, key: Any) -> tuple[Any, Any] | None:
        """The item with the greatest key <= ``key``, or None."""
        return self._item(self.raw.nearest_entry(self._k(key), "floor"))

    def ceiling_item(self, key: Any) -> tuple[Any, Any] | None:
        """The item with the least key >= ``key``, or None."""
        return self._item(self.raw.nearest_entry(self._k(key), "ceiling"))

    def higher_item(self, key: Any) -> tuple[Any, Any] | None:
        """The item with the least key > ``key``, or None."""
        return self._item(self.raw.nearest_entry(self._k(key), "higher"))

    def lower_item(self, key: Any) -> tuple[Any, Any] | None:
        """The item with the greatest key < ``key``, or None."""
        return self._item(self.raw.nearest_entry(self._k(key), "lower"))

    def first_key(self) -> Any:
        item = self.first_item()
        return None if item is None else item[0]

    def last_key(self) -> Any:
        item = self.last_item()
        return None if item is None else item[0]

    def floor_key(self, key: Any) -> Any:
        item = self.floor_item(key)
        return None if item is None else item[0]

    def ceiling_key(self, key: Any) -> Any:
        item = self.ceiling_item(key)
        return None if item is None else item[0]

    def higher_key(self, key: Any) -> Any:
        item = self.higher_item(key)
        return None if item is None else item[0]

    def lower_key(self, key: Any) -> Any:
        item = self.lower_item(key)
        return None if item is None else item[0]

    def items_between(
        self,
        minimum: Any = None,
        maximum: Any = None,
        inclusive: tuple[bool, bool] = (True, True),
        reverse: bool = False,
        limit: int | None = None,
    ) -> Iterator[tuple[Any, Any]]:
        """Items with ``minimum <= key <= maximum`` (``None``: unbounded on
        that side; ``inclusive`` says whether each bound is included), in
        ascending order or descending with ``reverse``, at most ``limit``.

        As ``sortedcontainers.SortedDict.irange``, so ``None`` cannot be a
        bound here (use ``raw.range`` with the packed key to bound at it).
        """
        lower = None if minimum is None else (self._k(minimum), bool(inclusive[0]))
        upper = None if maximum is None else (self._k(maximum), bool(inclusive[1]))
        if lower is not None and upper is not None and lower[0] > upper[0]:
            return  # an empty range; the server would refuse it as invalid
        remaining = limit
        page_size = max(1, self.raw.client.range_entries)
        # Each page moves a bound strictly past the last key it returned,
        # so the loop ends.
        while remaining is None or remaining > 0:
            want = page_size if remaining is None else min(page_size, remaining)
            entries, more = self.raw.range(lower, upper, want, reverse)
            for key, value in entries:
                yield self._dk(key), self.value_codec.decode(value)
            if remaining is not None:
                remaining -= len(entries)
            if not more or not entries:
                return
            if reverse:
                upper = (entries[-1][0], False)
            else:
                lower = (entries[-1][0], False)

    def scan(
        self,
        minimum: Any = None,
        maximum: Any = None,
        inclusive: tuple[bool, bool] = (True, True),
        page: int | None = None,
    ) -> Scan:
        """Items with ``minimum <= key <= maximum`` (bounds as in
        ``items_between``: ``None`` is open, ``inclusive`` says whether each
        is included) in ascending order, a page of at most ``page`` items
        (default ``Client(range_entries=...)``) at a time: an
        ``amulet.scan.Scan`` whose pages are non-empty lists of decoded
        ``(key, value)``; ``next_page()`` returns None at the end, ``reads``
        counts the range reads sent.

        Each page is one linearizable read within one range partition (by
        the client's cached map); the scan as a whole is not one point of
        the order (a key written behind its position is not seen, one
        ahead is). Every key present for the whole scan comes exactly once.
        For a consistent view of the whole map iterate the map itself (one
        snapshot). See ``ByteMap.scan``."""
        lower = None if minimum is None else (self._k(minimum), bool(inclusive[0]))
        upper = None if maximum is None else (self._k(maximum), bool(inclusive[1]))
        return Scan(
            self.raw,
            lower,
            upper,
            self.raw.client.range_entries if page is None else page,
            item=self._item,
        )

    def irange(
        self,
        minimum: Any = None,
        maximum: Any = None,
        inclusive: tuple[bool, bool] = (True, True),
        reverse: bool = False,
    ) -> Iterator[Any]:
        """Keys between the bounds, as ``SortedDict.irange``."""
        for key, _ in self.items_between(minimum, maximum, inclusive, reverse):
            yield key


class _SnapshotItems(ItemsView):
    def __iter__(self):
        return self._mapping.snapshot_items()


class _SnapshotValues(ValuesView):
    def __iter__(self):
        for _, value in self._mapping.snapshot_items():
            yield value

    def __contains__(self, value) -> bool:
        try:
            return self._mapping.contains_value(value)
        except TypeError:
            return False
