"""Bulk loading sorted input (docs/dynatree.md, "Bulk load"), as
``DMap::bulk_load`` of the Rust client
(``crates/amulet-client/src/bulk_load.rs``): the B+tree surface DynaTree
lists, with what a B+tree's bulk load buys: the input arrives in key
order, so the tree is built leaf by leaf instead of by splitting full
leaves. Here the leaves are range partitions: before each chunk of
``partition_entries`` entries after the first is written, the range
holding the chunk's first key is split there (the same ``Split`` an
operator's ``amulet split`` orders, through ``Client.reconfigure_with``),
so every chunk lands in its own partition and no partition is filled and
then split with its data in it. The entries go in ``put_all`` batches that
each stay within one partition (ordered on that partition's stream, not
the global one), several in flight.

Not atomic: a load that fails part way leaves what it wrote, and the same
load run again overwrites it with the same values. Input that is not
strictly increasing is refused (``InvalidArgument``) where it stops being
so, before anything of its chunk is written. A map not in ranges (hash) is
loaded the same way, never split.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass

from amulet import errors
from amulet.routing import Routing, UnknownMap
from amulet.v1 import amulet_pb2 as pb

# The defaults of the Rust client's ``BulkLoad``.
# Half the balancer's default bound: room to grow before the balancer
# splits a loaded partition.
PARTITION_ENTRIES = 500_000
# Most entries and key and value bytes in one put_all (the nodes accept
# 10,000 and 3 MiB).
BATCH_ENTRIES = 1_000
BATCH_BYTES = 1024 * 1024
# put_alls in flight at once.
IN_FLIGHT = 8

# Entries read at a time when nothing is pre-split (partition_entries 0).
_UNSPLIT_CHUNK = 10_000


@dataclass(frozen=True)
class BulkLoaded:
    """What a bulk load did."""

    # Entries written: acknowledged by the nodes (so after an error, what
    # is known to be in the map).
    entries: int = 0
    # Their key and value bytes.
    bytes: int = 0
    # Splits it ordered (a cut that already started a range needs none).
    splits: int = 0
    # put_alls it sent.
    batches: int = 0


class _Counts:
    def __init__(self) -> None:
        self.entries = self.bytes = self.splits = self.batches = 0


def _bytes(value, what: str) -> bytes:
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    raise TypeError(f"{what} must be bytes, not {type(value).__name__}")


def _positive(value, what: str, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise errors.InvalidArgument(f"bulk load: {what} must be an int >= {minimum}, not {value!r}")
    return value


def bulk_load(
    raw,
    entries: Iterable[tuple[bytes, bytes]],
    *,
    partition_entries: int = PARTITION_ENTRIES,
    batch_entries: int = BATCH_ENTRIES,
    batch_bytes: int = BATCH_BYTES,
    in_flight: int = IN_FLIGHT,
) -> BulkLoaded:
    """Loads ``entries`` (``(key, value)`` bytes, sorted by key with no key
    twice) into the map of ``raw`` (an ``amulet.ByteMap``); see the
    module's documentation and ``ByteMap.bulk_load``."""
    partition_entries = _positive(partition_entries, "partition_entries", 0)
    batch_entries = _positive(batch_entries, "batch_entries", 1)
    batch_bytes = _positive(batch_bytes, "batch_bytes", 1)
    in_flight = _positive(in_flight, "in_flight", 1)
    chunk_entries = partition_entries or _UNSPLIT_CHUNK
    loaded = _Counts()
    previous: bytes | None = None
    input_ = iter(entries)
    with ThreadPoolExecutor(max_workers=in_flight, thread_name_prefix="amulet-bulk-load") as pool:
        while True:
            chunk: list[tuple[bytes, bytes]] = []
            for key, value in itertools.islice(input_, chunk_entries):
                key, value = _bytes(key, "key"), _bytes(value, "value")
                if previous is not None and key <= previous:
                    raise errors.InvalidArgument(
                        f"bulk load: key {key!r} after {previous!r}: the input must be sorted by key,"
                        f" each key once ({loaded.entries} entries loaded)"
                    )
                previous = key
                chunk.append((key, value))
            if not chunk:
                break
            # The first chunk joins the range it falls in: a cut before it
            # would leave a range with nothing of the load.
            first = loaded.entries == 0
            if partition_entries > 0 and not first and _cut_at(raw.client, raw.name, chunk[0][0]):
                loaded.splits += 1
            _write_chunk(raw, pool, chunk, batch_entries, batch_bytes, in_flight, loaded)
    return BulkLoaded(entries=loaded.entries, bytes=loaded.bytes, splits=loaded.splits, batches=loaded.batches)


def _cut_at(client, name: str, key: bytes) -> bool:
    """Splits the range of map ``name`` holding ``key`` at ``key``, unless
    it starts one (or the map is not in ranges); whether it split."""
    client.refresh_map()
    if not needs_cut(client.partition_map(), name, key):
        return False
    configured = client.running_streams()
    try:
        client.reconfigure_with(lambda routing: split_at(routing, name, key, configured))
        return True
    except errors.AmuletError:
        # The balancer (or another loader) may have cut there first: then
        # the load goes on.
        client.refresh_map()
        if needs_cut(client.partition_map(), name, key):
            raise
        return False


def _write_chunk(raw, pool, chunk, batch_entries, batch_bytes, in_flight, loaded: _Counts) -> None:
    """Writes a sorted chunk in put_alls that each stay within one
    partition of the client's map, ``in_flight`` at a time; raises the
    first failure once every batch sent has ended (none is sent after it).

    The entries are grouped by partition first, each group in key order: a
    range map's chunk is a run of keys per partition anyway, and a hash
    map's sorted keys, whose partitions alternate from key to key, still
    fill whole batches."""
    routing: Routing = raw.client.partition_map()
    groups: dict[int | None, list[tuple[bytes, bytes]]] = {}
    for key, value in chunk:
        try:
            partition = routing.partition_of(raw.name, key)
        except UnknownMap:
            partition = None
        groups.setdefault(partition, []).append((key, value))
    pending: set[Future] = set()
    failures: list[BaseException] = []

    def settle(below: int) -> None:
        while pending and len(pending) >= below:
            done, _ = wait(pending, return_when=FIRST_COMPLETED)
            for future in done:
                pending.discard(future)
                if future.exception() is not None:
                    failures.append(future.exception())
                else:
                    # Counted once acknowledged: after an error, what is
                    # known to be in the map.
                    entries, size = future.result()
                    loaded.entries += entries
                    loaded.bytes += size

    def send(batch, size) -> bool:
        settle(in_flight)
        if failures:
            return False
        pending.add(pool.submit(_put_all, raw, batch, size))
        loaded.batches += 1
        return True

    try:
        for batch, size in _batches(groups.values(), batch_entries, batch_bytes):
            if not send(batch, size):
                break
    finally:
        settle(1)
    if failures:
        raise failures[0]


def _put_all(raw, batch, size: int) -> tuple[int, int]:
    raw.put_all(batch)
    return len(batch), size


def _batches(groups, batch_entries: int, batch_bytes: int):
    """``(batch, bytes)`` of each group cut at ``batch_entries`` entries and
    ``batch_bytes`` bytes (an entry larger than that alone)."""
    for group in groups:
        batch: list[tuple[bytes, bytes]] = []
        size = 0
        for key, value in group:
            entry_bytes = len(key) + len(value)
            if batch and (len(batch) >= batch_entries or size + entry_bytes > batch_bytes):
                yield batch, size
                batch, size = [], 0
            batch.append((key, value))
            size += entry_bytes
        if batch:
            yield batch, size


def needs_cut(routing: Routing, name: str, key: bytes) -> bool:
    """Whether ``key`` falls inside a range of map ``name`` without
    starting it (False for a map not in ranges, or unknown)."""
    ranges = routing.keyspaces.get(name)
    return ranges is not None and all(start != key for start, _ in ranges)


def split_at(routing: Routing, name: str, key: bytes, configured: Iterable[int]) -> pb.ReconfigureRequest:
    """The split of the range of map ``name`` holding ``key`` at ``key``,
    on ``routing``: a new partition on a new stream (above ``configured``,
    the streams nodes run) with the same replicas, synchronously durable
    (a client's map does not say the source stream's storage, and the
    Rust client's default is ``sync``)."""
    try:
        source = routing.partition_of(name, key)
    except UnknownMap:
        raise errors.InvalidArgument(f"bulk load into {name!r}: no such map in the partition map") from None
    return pb.ReconfigureRequest(
        split=pb.SplitPartition(
            source=source,
            new_partition=routing.next_partition_id(),
            stream=pb.StreamSpec(
                stream=routing.next_stream_id(configured),
                acceptors=routing.partitions[source],
                storage="sync",
            ),
            at_keys=[pb.RangeCut(map=name, key=key)],
        )
    )
