"""Range scans streamed page by page (docs/dynatree.md, "Range scans"), as
``DMap::scan`` / ``Scan::next_page`` of the Rust client
(``crates/amulet-client/src/scan.rs``): the B+tree surface's range scan
over a map of many partitions, read a page at a time instead of in one
reply.

Each page is one linearizable ``range`` read bounded, besides the scan's
own bounds, by the end of the range partition its first key falls in (by
the client's cached partition map: the first range start above the
scan's position), so it is ordered on that partition's stream alone, not
on the global one with every partition of the scan. The next page starts
after the last key read; when a read says there is nothing more and the
page was cut at a partition's end, the scan goes on at that cut
(inclusive), else it is over. A map not in ranges (hash) is read a page
at a time over all its partitions, with no cut.

The scan as a whole is not one point of the order: a key written behind
the scan's position is not seen, one written ahead is. For a consistent
view of the whole map, iterate a snapshot (``ByteMap.snapshot``, or
iterating an ``AmuletMap``). A split or merge between pages costs
nothing: a page's bounds come from the client's map at that page, and a
page built on a map gone stale spans the new partitions and is ordered on
the global stream, still exact.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterator
from typing import Any

from amulet import errors
from amulet.routing import Bound, range_is_empty

Entry = tuple[bytes, bytes]


def _bound(bound, what: str) -> Bound:
    if bound is None:
        return None
    try:
        key, inclusive = bound
    except (TypeError, ValueError):
        raise TypeError(f"{what} must be None or (key, inclusive), not {bound!r}") from None
    if not isinstance(key, (bytes, bytearray, memoryview)):
        raise TypeError(f"{what} key must be bytes, not {type(key).__name__}")
    return bytes(key), bool(inclusive)


def _page(page) -> int:
    if isinstance(page, bool) or not isinstance(page, int):
        raise TypeError(f"scan: page must be an int, not {type(page).__name__}")
    if page < 1:
        raise errors.InvalidArgument(f"scan: page must be at least 1, not {page}")
    return page


class Scan:
    """A range scan in progress (``ByteMap.scan``, ``AmuletMap.scan``): an
    iterator of pages, each a non-empty list of at most ``page`` entries in
    ascending key order; see the module's documentation.

    ``next_page()`` returns the next page, or None once the scan has passed
    its upper bound (and every time after). A read that fails raises its
    error and leaves the scan where it was: ``next_page()`` again resends
    the same page. Not thread-safe: one consumer at a time."""

    def __init__(
        self,
        raw,
        lower: Bound = None,
        upper: Bound = None,
        page: int = 1000,
        *,
        item: Callable[[Entry], Any] | None = None,
    ):
        self._raw = raw
        # Where the next page starts (None: the map's first key).
        self._from = _bound(lower, "lower")
        # Where the scan ends (None: past the map's last key).
        self._to = _bound(upper, "upper")
        self._page = _page(page)
        # What each entry is turned into before it is returned (AmuletMap
        # decodes it); the scan's position stays in encoded keys.
        self._item = item
        # No key between the bounds: nothing to read (the cluster refuses
        # a lower key above the upper one).
        self._done = range_is_empty(self._from, self._to)
        self._reads = 0

    def __repr__(self) -> str:
        state = "done" if self._done else f"at {self._from!r}"
        return f"Scan({self._raw.name!r}, to {self._to!r}, page {self._page}, {state}, {self._reads} reads)"

    @property
    def reads(self) -> int:
        """Range reads sent so far: one per page, and one per range found
        empty."""
        return self._reads

    @property
    def done(self) -> bool:
        """Whether the scan has passed its upper bound (``next_page()``
        returns None)."""
        return self._done

    @property
    def page(self) -> int:
        """The most entries a page holds."""
        return self._page

    def __iter__(self) -> Iterator[list]:
        return self

    def __next__(self) -> list:
        entries = self.next_page()
        if entries is None:
            raise StopIteration
        return entries

    def next_page(self) -> list | None:
        """The next page in key order: at most ``page`` entries, never
        empty; None once the scan has passed its upper bound. Each page is
        one linearizable read (several when ranges are found empty)."""
        while not self._done:
            cut = self._range_end()
            # The page ends at the partition's end when that comes first.
            to = self._to
            continues_at = None
            if cut is not None and not (to is not None and (to[0] < cut or (to[0] == cut and not to[1]))):
                to = (cut, False)
                continues_at = cut
            entries, more = self._raw.range(self._from, to, self._page, False)
            self._reads += 1
            if entries:
                self._from = (entries[-1][0], False)
            if not more:
                if continues_at is not None:
                    self._from = (continues_at, True)
                else:
                    self._done = True
            if entries:
                if self._item is not None:
                    return [self._item(entry) for entry in entries]
                return entries
        return None

    def _range_end(self) -> bytes | None:
        """The first key of the range after the one the next page starts
        in, by the client's cached map; None for a map not in ranges (or
        unknown to the cached map), or from the last range on."""
        ranges = self._raw.client.partition_map().keyspaces.get(self._raw.name)
        if ranges is None:
            return None
        # Every layout's first range starts at b"": with no position yet,
        # the first start above b"" is the first non-empty one.
        position = b"" if self._from is None else self._from[0]
        at = bisect.bisect_right(ranges, position, key=lambda r: r[0])
        return ranges[at][0] if at < len(ranges) else None
