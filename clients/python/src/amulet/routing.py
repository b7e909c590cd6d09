"""The cached partition map and where each request goes.

Pure functions over the map a node returns from GetPartitionMap, following
``crates/amulet-smr/src/partition_map.rs``: a hash map's key lives in the
partition owning its token (CRC-32C of the key bytes) on the token ring; a
range map's key lives in the partition of the last range starting at or
below it. A request involving several partitions goes to the first
(lowest id) of them. A transaction's commit involves the partitions of
every key it writes and of every range it read, in any maps
(``Keys::Across`` of ``crates/amulet-dmap/src/smr_machine.rs``).
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable
from dataclasses import dataclass, field

import crc32c

# A bound of a key range: None (open) or (key, inclusive).
Bound = tuple[bytes, bool] | None


def token(key: bytes) -> int:
    """The token of a key: its CRC-32C (Castagnoli)."""
    return crc32c.crc32c(key)


@dataclass(frozen=True)
class Placement:
    """Which keys of which map a request touches.

    ``kind`` is ``"all"`` (every partition of the map, or of the cluster
    when ``map`` is None), ``"one"`` (``keys[0]``), ``"many"`` (``keys``),
    ``"range"`` (between ``lower`` and ``upper``) or ``"across"`` (the
    union of ``parts``, placements of their own maps; ``map`` is None).
    """

    map: str | None
    kind: str
    keys: tuple[bytes, ...] = ()
    lower: Bound = None
    upper: Bound = None
    parts: tuple["Placement", ...] = ()


def range_is_empty(lower: Bound, upper: Bound) -> bool:
    """Whether no key lies between the bounds (``KeyRange::is_empty``)."""
    if lower is None or upper is None:
        return False
    return lower[0] > upper[0] or (lower[0] == upper[0] and not (lower[1] and upper[1]))


def _single_key(lower: Bound, upper: Bound) -> bytes | None:
    """The one key between the bounds, if both are inclusive and equal."""
    if lower is None or upper is None:
        return None
    if lower[1] and upper[1] and lower[0] == upper[0]:
        return lower[0]
    return None


class UnknownMap(LookupError):
    """The cached map does not know the map (it may be stale)."""


@dataclass
class Routing:
    version: int
    partitions: dict[int, list[int]]
    token_ring: list[tuple[int, int]]
    # None for a hash layout; otherwise (start key, partition) sorted.
    keyspaces: dict[str, list[tuple[bytes, int]] | None]
    addresses: dict[int, str] = field(default_factory=dict)
    # The global stream, and each partition's stream: what a
    # reconfiguration allocates new ids above (``next_stream_id``).
    global_stream: int = 0
    streams: dict[int, int] = field(default_factory=dict)

    @classmethod
    def from_pb(cls, message) -> "Routing":
        keyspaces: dict[str, list[tuple[bytes, int]] | None] = {}
        for ks in message.keyspaces:
            if ks.layout.WhichOneof("kind") == "range":
                keyspaces[ks.name] = [(bytes(s.start_key), s.partition) for s in ks.layout.range.splits]
            else:
                keyspaces[ks.name] = None
        routing = cls(
            version=message.version,
            partitions={p.id: list(p.replicas) for p in message.partitions},
            token_ring=[(t.first_token, t.partition) for t in message.token_ring],
            keyspaces=keyspaces,
            addresses={n.node: n.address for n in message.nodes},
            global_stream=message.global_stream,
            streams={p.id: p.stream for p in message.partitions},
        )
        routing.validate()
        return routing

    def validate(self) -> None:
        """Refuses a map this client could not route by (the same checks as
        the Rust PartitionMap::validate that matter for routing)."""
        if not self.partitions:
            raise ValueError("the partition map has no partitions")
        firsts = [t for t, _ in self.token_ring]
        if not firsts or firsts[0] != 0 or any(a >= b for a, b in zip(firsts, firsts[1:])):
            raise ValueError("the token ring must start at 0 and increase")
        for name, ranges in self.keyspaces.items():
            if ranges is None:
                continue
            starts = [s for s, _ in ranges]
            if not starts or starts[0] != b"" or any(a >= b for a, b in zip(starts, starts[1:])):
                raise ValueError(f"the ranges of {name!r} must start at the empty key and increase")

    def partition_of(self, map_name: str, key: bytes) -> int:
        ranges = self._layout(map_name)
        if ranges is None:
            return self._token_owner(token(key))
        return _range_owner(ranges, key)

    def _token_owner(self, tok: int) -> int:
        at = bisect.bisect_right(self.token_ring, tok, key=lambda e: e[0])
        return self.token_ring[at - 1][1]

    def _layout(self, map_name: str) -> list[tuple[bytes, int]] | None:
        try:
            return self.keyspaces[map_name]
        except KeyError:
            raise UnknownMap(map_name) from None

    def partitions_for(self, placement: Placement) -> list[int]:
        """The partitions a request involves, sorted; never empty."""
        if placement.kind == "across":
            # As the cluster places a commit: the union of each part's
            # partitions. The cluster places an empty read range as no
            # keys ("many" of none), which involves the lowest partition.
            involved: set[int] = set()
            for part in placement.parts:
                if part.kind == "range" and range_is_empty(part.lower, part.upper):
                    part = Placement(part.map, "many")
                elif part.kind == "range" and _single_key(part.lower, part.upper) is not None:
                    # One key lives in one partition (a range of a hash
                    # map would span them all): ``KeyRange::single_key``.
                    part = Placement(part.map, "one", (part.lower[0],))
                involved.update(self.partitions_for(part))
            return sorted(involved) if involved else [min(self.partitions)]
        if placement.map is None:
            return sorted(self.partitions)
        ranges = self._layout(placement.map)
        if placement.kind in ("one", "many"):
            involved = {self.partition_of(placement.map, k) for k in placement.keys}
        elif ranges is None:
            # A hash map spreads any range over the whole ring.
            involved = {p for _, p in self.token_ring}
        elif placement.kind == "all":
            involved = {p for _, p in ranges}
        else:
            involved = set(_ranges_overlapping(ranges, placement.lower, placement.upper))
        if not involved:
            # An empty range: the lowest partition answers it, with nothing.
            involved = {min(self.partitions)}
        return sorted(involved)

    def first_partition(self, placement: Placement) -> int:
        """The partition a request is sent to. A map unknown to this (maybe
        stale) cache goes to the lowest partition, whose replica answers
        "stale" or "no such map"."""
        try:
            return self.partitions_for(placement)[0]
        except UnknownMap:
            return min(self.partitions)

    def replica_addresses(self, partition: int) -> list[str]:
        return [self.addresses[n] for n in self.partitions.get(partition, []) if n in self.addresses]

    def next_partition_id(self) -> int:
        """A partition id above every partition of this map (as the Rust
        ``PartitionMap::next_partition_id`` on a client's map, which knows
        no partition merged away)."""
        return max(self.partitions, default=0) + 1

    def next_stream_id(self, also_used: Iterable[int] = ()) -> int:
        """A stream id above the global stream, every partition's stream
        and ``also_used`` (the streams nodes run, ``Client.running_streams``:
        a node's configuration may name streams the map does not know)."""
        known = [self.global_stream, *self.streams.values(), *also_used]
        return max(known) + 1


def _range_owner(ranges: list[tuple[bytes, int]], key: bytes) -> int:
    at = bisect.bisect_right(ranges, key, key=lambda r: r[0])
    return ranges[at - 1][1]


def _ranges_overlapping(ranges, lower: Bound, upper: Bound) -> list[int]:
    """Partitions whose range [start_i, start_{i+1}) meets (lower, upper)."""
    out = []
    for i, (start, partition) in enumerate(ranges):
        end = ranges[i + 1][0] if i + 1 < len(ranges) else None
        if upper is None:
            below_upper = True
        else:
            key, inclusive = upper
            below_upper = start <= key if inclusive else start < key
        above_lower = end is None or lower is None or lower[0] < end
        if below_upper and above_lower:
            out.append(partition)
    return out
