"""The byte-level API of one map: one request per call (the 22 map ops of
the proto, plus snapshots and page-by-page scans), keys and values as
``bytes``. ``AmuletMap`` builds the typed ``MutableMapping`` on it; the
conformance scenarios (``spec/conformance``) run it directly."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from amulet import bulk_load as _bulk
from amulet import errors
from amulet.routing import Bound, Placement
from amulet.scan import Scan
from amulet.snapshot import Snapshot
from amulet.v1 import amulet_pb2 as pb

Entry = tuple[bytes, bytes]

NEAREST = {
    "floor": pb.NEAREST_FLOOR,
    "ceiling": pb.NEAREST_CEILING,
    "higher": pb.NEAREST_HIGHER,
    "lower": pb.NEAREST_LOWER,
}


def _bytes(value, what: str) -> bytes:
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    raise TypeError(f"{what} must be bytes, not {type(value).__name__}")


def _expect(response: pb.MapResponse, field: str):
    got = response.WhichOneof("result")
    if got != field:
        raise errors.ProtocolError(f"expected a {field} reply, got {got}")
    return getattr(response, field)


def _value(response: pb.MapResponse) -> bytes | None:
    value = _expect(response, "value")
    return value.value if value.HasField("value") else None


def _entry(response: pb.MapResponse) -> Entry | None:
    entry = _expect(response, "entry")
    return (entry.entry.key, entry.entry.value) if entry.HasField("entry") else None


class ByteMap:
    """A handle on the map ``name`` of ``client``; cheap, shareable."""

    def __init__(self, client, name: str):
        self.client = client
        self.name = name

    def __repr__(self) -> str:
        return f"ByteMap({self.name!r})"

    def _one(self, op: str, message, key: bytes):
        return self.client.execute(op, message, Placement(self.name, "one", (key,)))

    def _all(self, op: str, message):
        return self.client.execute(op, message, Placement(self.name, "all"))

    def get(self, key: bytes) -> bytes | None:
        key = _bytes(key, "key")
        return _value(self._one("get", pb.Get(map=self.name, key=key), key))

    def contains_key(self, key: bytes) -> bool:
        key = _bytes(key, "key")
        return _expect(self._one("contains_key", pb.ContainsKey(map=self.name, key=key), key), "flag")

    def put(self, key: bytes, value: bytes) -> bytes | None:
        """Sets ``key``; returns the previous value."""
        key, value = _bytes(key, "key"), _bytes(value, "value")
        return _value(self._one("put", pb.Put(map=self.name, key=key, value=value), key))

    def remove(self, key: bytes) -> bytes | None:
        """Removes ``key``; returns the removed value."""
        key = _bytes(key, "key")
        return _value(self._one("remove", pb.Remove(map=self.name, key=key), key))

    def put_if_absent(self, key: bytes, value: bytes) -> bytes | None:
        """Sets ``key`` only if absent; returns the existing value (None: set)."""
        key, value = _bytes(key, "key"), _bytes(value, "value")
        return _value(self._one("put_if_absent", pb.PutIfAbsent(map=self.name, key=key, value=value), key))

    def replace(self, key: bytes, value: bytes) -> bytes | None:
        """Sets ``key`` only if present; returns the previous value."""
        key, value = _bytes(key, "key"), _bytes(value, "value")
        return _value(self._one("replace", pb.Replace(map=self.name, key=key, value=value), key))

    def replace_if_equals(self, key: bytes, expected: bytes, value: bytes) -> bool:
        """Compare-and-set: sets ``key`` to ``value`` if it holds ``expected``."""
        key = _bytes(key, "key")
        expected, value = _bytes(expected, "expected value"), _bytes(value, "value")
        message = pb.ReplaceIfEquals(map=self.name, key=key, expected=expected, value=value)
        return _expect(self._one("replace_if_equals", message, key), "flag")

    def remove_if_equals(self, key: bytes, expected: bytes) -> bool:
        key, expected = _bytes(key, "key"), _bytes(expected, "expected value")
        message = pb.RemoveIfEquals(map=self.name, key=key, expected=expected)
        return _expect(self._one("remove_if_equals", message, key), "flag")

    def merge_fields(
        self, key: bytes, fields: Mapping[bytes, bytes | None] | Iterable[tuple[bytes, bytes | None]]
    ) -> bool:
        """Sets and removes fields of the field record stored at ``key``
        (docs/field-records.md, ``amulet.field_record``) in one ordered
        command, keeping its other fields: a field with a value is set, one
        whose value is None removed, in the order given (a dict's order, or
        the pairs'). Returns whether the key had a value (a missing key
        stays missing). Like every write it applies at most once, however
        often it is resent.

        Raises ``FailedPrecondition`` if the value stored is not a field
        record (it is left as it is), ``InvalidArgument`` for no fields, a
        name given twice, or fields above the cluster's limits."""
        key = _bytes(key, "key")
        items = fields.items() if isinstance(fields, Mapping) else fields
        message = pb.MergeFields(map=self.name, key=key)
        for name, value in items:
            field = message.fields.add(name=_bytes(name, "field name"))
            if value is not None:
                field.value = _bytes(value, "field value")
        return _expect(self._one("merge_fields", message, key), "flag")

    def put_all(self, entries: Iterable[Entry]) -> None:
        """Sets every entry, atomically across partitions."""
        items = [pb.Entry(key=_bytes(k, "key"), value=_bytes(v, "value")) for k, v in entries]
        message = pb.PutAll(map=self.name, entries=items)
        # An empty putAll involves every partition (as in the Rust client).
        placement = Placement(self.name, "many", tuple(e.key for e in items)) if items else Placement(self.name, "all")
        _expect(self.client.execute("put_all", message, placement), "done")

    def bulk_load(
        self,
        entries: Iterable[Entry],
        *,
        partition_entries: int = _bulk.PARTITION_ENTRIES,
        batch_entries: int = _bulk.BATCH_ENTRIES,
        batch_bytes: int = _bulk.BATCH_BYTES,
        in_flight: int = _bulk.IN_FLIGHT,
    ) -> _bulk.BulkLoaded:
        """Loads ``entries``, sorted by key with no key twice (DynaTree's
        B+tree bulk load, ``amulet.bulk_load``): a range map is pre-split
        as it goes, the range holding the first key of each chunk of
        ``partition_entries`` entries after the first cut there (0: no
        pre-split; a hash map is never split); each chunk is written in
        ``put_all`` batches of at most ``batch_entries`` entries and
        ``batch_bytes`` key and value bytes that stay within one partition,
        ``in_flight`` at once. Reads the input as it goes (a chunk at a
        time). Returns an ``amulet.BulkLoaded`` (entries, bytes, splits,
        batches). Not atomic: a failure leaves what was written. A key not
        above the one before it is ``InvalidArgument``, naming both, raised
        before anything of its chunk is written (the chunks before it stay
        written)."""
        return _bulk.bulk_load(
            self,
            entries,
            partition_entries=partition_entries,
            batch_entries=batch_entries,
            batch_bytes=batch_bytes,
            in_flight=in_flight,
        )

    def contains_value(self, value: bytes) -> bool:
        value = _bytes(value, "value")
        return _expect(self._all("contains_value", pb.ContainsValue(map=self.name, value=value)), "flag")

    def size(self) -> int:
        return _expect(self._all("size", pb.Size(map=self.name)), "count")

    def is_empty(self) -> bool:
        return _expect(self._all("is_empty", pb.IsEmpty(map=self.name)), "flag")

    def clear(self) -> None:
        _expect(self._all("clear", pb.Clear(map=self.name)), "done")

    def first_entry(self) -> Entry | None:
        return _entry(self._all("first_entry", pb.FirstEntry(map=self.name)))

    def last_entry(self) -> Entry | None:
        return _entry(self._all("last_entry", pb.LastEntry(map=self.name)))

    def nearest_entry(self, key: bytes, nearest: str) -> Entry | None:
        """The ``"floor"`` (<=), ``"ceiling"`` (>=), ``"higher"`` (>) or
        ``"lower"`` (<) entry of ``key``."""
        key = _bytes(key, "key")
        try:
            kind = NEAREST[nearest]
        except KeyError:
            raise ValueError(f"nearest must be one of {sorted(NEAREST)}, not {nearest!r}") from None
        lower: Bound = None
        upper: Bound = None
        if nearest in ("floor", "lower"):
            upper = (key, nearest == "floor")
        else:
            lower = (key, nearest == "ceiling")
        placement = Placement(self.name, "range", lower=lower, upper=upper)
        message = pb.NearestEntry(map=self.name, key=key, nearest=kind)
        return _entry(self.client.execute("nearest_entry", message, placement))

    def range(
        self,
        lower: Bound = None,
        upper: Bound = None,
        limit: int = 1000,
        reverse: bool = False,
    ) -> tuple[list[Entry], bool]:
        """At most ``limit`` entries between ``lower`` and ``upper`` (each
        ``None`` for open or ``(key, inclusive)``), ascending, or with
        ``reverse`` the highest ones descending; and whether the limit cut
        the range short. One linearizable read."""
        message = pb.Range(map=self.name, limit=limit, reverse=reverse)
        if lower is not None:
            getattr(message, "from").CopyFrom(pb.KeyBound(key=_bytes(lower[0], "key"), inclusive=lower[1]))
        if upper is not None:
            message.to.CopyFrom(pb.KeyBound(key=_bytes(upper[0], "key"), inclusive=upper[1]))
        placement = Placement(self.name, "range", lower=lower, upper=upper)
        entries = _expect(self.client.execute("range", message, placement), "entries")
        return [(e.key, e.value) for e in entries.entries], entries.more

    def scan(self, lower: Bound = None, upper: Bound = None, page: int | None = None) -> Scan:
        """The entries between ``lower`` and ``upper`` (each ``None`` for
        open or ``(key, inclusive)``) in ascending key order, read a page
        of at most ``page`` entries (default ``Client(range_entries=...)``)
        at a time: an ``amulet.scan.Scan``, an iterator of pages (non-empty
        lists of ``(key, value)``) with ``next_page()`` (None at the end)
        and ``reads``. Sends nothing until the first page is asked for.

        Guaranteed: every key between the bounds present for the whole
        scan is returned exactly once, in order, and each page is one
        linearizable ``range`` read, bounded also by the end of the range
        partition its first key falls in (by the cached partition map), so
        it is ordered on that partition's stream alone. The scan as a whole
        is not one point of the order: a key written behind the scan's
        position is not seen, one written ahead is. For a consistent view
        of the whole map use ``snapshot()``. A map not in ranges is read a
        page at a time over all its partitions. An empty range (``lower``
        above ``upper``) yields no page and sends nothing; ``page`` below 1
        is ``InvalidArgument``, above the cluster's range limit (10,000 by
        default) the first read's ``InvalidArgument``."""
        return Scan(self, lower, upper, self.client.range_entries if page is None else page)

    def snapshot(self) -> Snapshot:
        """Opens a snapshot of the whole map at one point of the order.
        Iterate it for ``(key, value)`` in key order; ``close()`` it (or use
        it as a context manager) to release it early."""
        message = pb.OpenSnapshot(map=self.name, lease_micros=int(self.client.snapshot_lease * 1_000_000))
        placement = Placement(self.name, "all")
        snapshot_id = _expect(self.client.execute("open_snapshot", message, placement), "snapshot")
        # After the command, so that a map refreshed on the way counts.
        partitions = self.client.partition_map().partitions_for(placement)
        return Snapshot(self.client, snapshot_id, partitions)
