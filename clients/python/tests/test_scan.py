"""Range scans page by page (``ByteMap.scan``, ``AmuletMap.scan``,
``amulet.scan``; docs/dynatree.md "Range scans"), as the Rust client's
``DMap::scan`` checked in ``dynatree_bulk_load_pre_splits_sorted_input_into_partitions``:
every key between the bounds once and in order, in pages of at most
``page`` entries, never empty, none crossing a range partition's end (so
a scan sends at least one read per range it covers: a page that ignored
the cut would read across it in one); inclusive, exclusive and open
bounds; empty ranges; hash maps read page by page with no cut; a split
between pages.

The map is pre-split by a bulk load and split again by a test: that adds
partitions to the cluster, which other tests (range maps over
``sorted(partitions)[:3]``) do not expect, so this module runs on an
``amulet dev`` cluster of its own, like ``test_bulk_load.py``."""

from __future__ import annotations

import math
import random
import secrets
import time

import pytest

import amulet
from amulet import bulk_load, codecs
from cluster import DevCluster

ENTRIES = 1_000
PER_PARTITION = 250
# The cuts the bulk load makes: four ranges of 250 keys.
CUTS = [250, 500, 750]


@pytest.fixture(scope="module")
def dev():
    """A cluster of this module's own, stopped at its end."""
    cluster = DevCluster()
    cluster.start()
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture(scope="module")
def own_client(dev):
    with amulet.Client(dev.addresses, tls=dev.tls) as c:
        yield c


def key(i: int) -> bytes:
    return b"k%04d" % i


def value(i: int) -> bytes:
    return b"v%d" % i


def ranges_once(client, name: str, count: int, timeout: float = 30.0):
    """The map's ranges once the cached map has ``count`` of them (a split
    takes effect at a fence after it was accepted)."""
    deadline = time.monotonic() + timeout
    while True:
        client.refresh_map()
        ranges = client.partition_map().keyspaces[name]
        if len(ranges) == count or time.monotonic() > deadline:
            return ranges
        time.sleep(0.1)


@pytest.fixture(scope="module")
def loaded(own_client):
    """A range map of ENTRIES keys pre-split by a bulk load into four
    ranges of PER_PARTITION keys, each its own partition."""
    name = f"py-scan-{secrets.token_hex(6)}"
    first = min(own_client.partition_map().partitions)
    own_client.create_map(name, ranges=[(b"", first)])
    raw = own_client.bytes_map(name)
    done = raw.bulk_load(((key(i), value(i)) for i in range(ENTRIES)), partition_entries=PER_PARTITION)
    assert (done.entries, done.splits) == (ENTRIES, len(CUTS))
    ranges = ranges_once(own_client, name, len(CUTS) + 1)
    assert [start for start, _ in ranges] == [b""] + [key(c) for c in CUTS]
    assert len({p for _, p in ranges}) == len(CUTS) + 1
    return raw


def model(keys, lower, upper):
    """The keys of ``keys`` (sorted) between the bounds."""
    out = []
    for k in keys:
        if lower is not None and (k < lower[0] or (k == lower[0] and not lower[1])):
            continue
        if upper is not None and (k > upper[0] or (k == upper[0] and not upper[1])):
            continue
        out.append(k)
    return out


def drain(scan, client=None, name=None):
    """Every page of ``scan``, checked: non-empty, at most ``scan.page``
    entries, ascending within and across pages, and (given the client and
    a range map's name) within one range of the client's map."""
    pages = []
    previous = None
    while (page := scan.next_page()) is not None:
        assert 1 <= len(page) <= scan.page, len(page)
        keys = [k for k, _ in page]
        assert keys == sorted(keys) and len(set(keys)) == len(keys)
        if previous is not None:
            assert keys[0] > previous
        previous = keys[-1]
        if client is not None:
            routing = client.partition_map()
            starts = [s for s, _ in routing.keyspaces[name]]
            assert range_index(starts, keys[0]) == range_index(starts, keys[-1]), (keys[0], keys[-1])
        pages.append(page)
    assert scan.done and scan.next_page() is None
    return pages


def range_index(starts, k: bytes) -> int:
    return max(i for i, s in enumerate(starts) if s <= k)


def flat(pages):
    return [k for page in pages for k, _ in page]


# ---- range maps ------------------------------------------------------------


def test_pages_stay_within_a_partition_and_cover_every_key_once(own_client, loaded):
    keys = [key(i) for i in range(ENTRIES)]
    scan = loaded.scan(page=64)
    assert isinstance(scan, amulet.Scan) and scan.reads == 0
    pages = drain(scan, own_client, loaded.name)
    assert flat(pages) == keys
    assert [v for page in pages for _, v in page] == [value(i) for i in range(ENTRIES)]
    # 250 keys a range in pages of 64: 64, 64, 64, 58 in each of the four.
    assert [len(p) for p in pages] == [64, 64, 64, 58] * 4
    assert scan.reads == len(pages) == 16

    # A page larger than a range still ends at the range's end: one read
    # (and one page) per range, where a read across the cuts would take
    # the whole map in one.
    scan = loaded.scan(page=ENTRIES)
    pages = drain(scan, own_client, loaded.name)
    assert [len(p) for p in pages] == [PER_PARTITION] * 4
    assert flat(pages) == keys
    assert scan.reads == 4

    # Iterating the scan gives its pages.
    scan = loaded.scan((key(240), True), (key(510), False), page=100)
    assert [len(p) for p in scan] == [10, 100, 100, 50, 10]
    assert scan.reads == 5 and list(scan) == []


def test_inclusive_exclusive_and_open_bounds(own_client, loaded):
    keys = [key(i) for i in range(ENTRIES)]
    starts = [b""] + [key(c) for c in CUTS]
    cases = [
        ((key(100), True), (key(600), False)),
        ((key(100), False), (key(600), True)),
        ((key(100), False), (key(600), False)),
        ((key(100), True), (key(600), True)),
        # Bounds at a cut (a range's first key).
        ((key(250), True), (key(500), True)),
        ((key(250), False), (key(500), False)),
        ((key(249), False), (key(750), True)),
        # Bounds between keys, and beside the map's ends.
        ((key(249) + b"x", True), (key(500) + b"x", False)),
        ((b"a", True), (b"z", True)),
        # Open on either side, or both.
        (None, (key(300), False)),
        (None, (key(250), True)),
        ((key(740), True), None),
        ((key(750), False), None),
        (None, None),
        # One key.
        ((key(250), True), (key(250), True)),
        ((key(999), True), None),
    ]
    for lower, upper in cases:
        for page in (7, 250):
            want = model(keys, lower, upper)
            scan = loaded.scan(lower, upper, page)
            got = flat(drain(scan, own_client, loaded.name))
            assert got == want, (lower, upper, page)
            covered = {range_index(starts, k) for k in got}
            assert scan.reads >= max(len(covered), math.ceil(len(got) / page)), (lower, upper, page)

    rng = random.Random(7)
    for _ in range(30):
        a, b = sorted(rng.sample(range(-5, ENTRIES + 5), 2))
        lower = None if rng.random() < 0.15 else (key(a) if rng.random() < 0.7 else key(a) + b"x", rng.random() < 0.5)
        upper = None if rng.random() < 0.15 else (key(b) if rng.random() < 0.7 else key(b) + b"x", rng.random() < 0.5)
        page = rng.choice([3, 40, 250, 600])
        want = model(keys, lower, upper)
        scan = loaded.scan(lower, upper, page)
        got = flat(drain(scan, own_client, loaded.name))
        assert got == want, (lower, upper, page)
        assert scan.reads >= len({range_index(starts, k) for k in got})


def test_empty_ranges_yield_no_page(loaded):
    # Lower above upper, or equal and not both inclusive: nothing is read.
    for lower, upper in [
        ((key(600), True), (key(100), True)),
        ((key(300), True), (key(300), False)),
        ((key(300), False), (key(300), True)),
    ]:
        scan = loaded.scan(lower, upper)
        assert scan.done and scan.next_page() is None and list(scan) == [] and scan.reads == 0
    # Between two keys: one read of the range it is in, nothing.
    scan = loaded.scan((key(5) + b"a", True), (key(6), False))
    assert scan.next_page() is None and scan.reads == 1 and scan.next_page() is None and scan.reads == 1
    # Past the last key: one read of the last range.
    scan = loaded.scan((key(ENTRIES - 1), False), None)
    assert list(scan) == [] and scan.reads == 1


def test_ranges_found_empty_are_read_once_each(own_client):
    """Five ranges over the cluster's partitions (a partition may hold
    several), keys in three of them: the scan goes on through the two
    empty ones, one read each."""
    name = f"py-scan-{secrets.token_hex(6)}"
    p = sorted(own_client.partition_map().partitions)[:3]
    ranges = [(b"", p[0]), (b"d", p[1]), (b"h", p[2]), (b"m", p[0]), (b"r", p[1])]
    raw = own_client.create_map(name, ranges=ranges).raw
    keys = [b"a", b"b", b"i", b"j", b"s", b"t"]
    raw.put_all((k, k.upper()) for k in keys)

    scan = raw.scan(page=10)
    pages = drain(scan, own_client, name)
    assert pages == [[(b"a", b"A"), (b"b", b"B")], [(b"i", b"I"), (b"j", b"J")], [(b"s", b"S"), (b"t", b"T")]]
    assert scan.reads == 5

    # Pages of one: two reads in each range with keys (the second ends at
    # the cut, or at the end), one in each empty range.
    scan = raw.scan(page=1)
    assert flat(drain(scan, own_client, name)) == keys
    assert scan.reads == 2 + 1 + 2 + 1 + 2

    # Bounds inside empty ranges.
    scan = raw.scan((b"e", True), (b"n", False), page=10)
    assert flat(drain(scan, own_client, name)) == [b"i", b"j"]
    assert scan.reads == 3
    scan = raw.scan((b"d", True), (b"h", False), page=10)
    assert list(scan) == [] and scan.reads == 1
    scan = raw.scan((b"d", True), (b"h", True), page=10)
    assert list(scan) == [] and scan.reads == 2


# ---- hash maps ---------------------------------------------------------------


def test_a_hash_map_is_read_page_by_page_without_cuts(own_client):
    name = f"py-scan-{secrets.token_hex(6)}"
    raw = own_client.create_map(name).raw
    assert own_client.partition_map().keyspaces[name] is None
    keys = [key(i) for i in range(300)]
    raw.put_all((k, b"x") for k in keys)

    scan = raw.scan(page=64)
    pages = drain(scan)
    assert [len(p) for p in pages] == [64, 64, 64, 64, 44]
    assert flat(pages) == keys
    assert scan.reads == 5

    # Pages span the hash partitions: one read for all 300.
    scan = raw.scan(page=1000)
    assert [len(p) for p in scan] == [300] and scan.reads == 1

    for lower, upper in [
        ((key(10), False), (key(200), True)),
        ((key(10), True), (key(200), False)),
        (None, (key(50), False)),
        ((key(250), True), None),
    ]:
        scan = raw.scan(lower, upper, page=30)
        assert flat(drain(scan)) == model(keys, lower, upper), (lower, upper)
    assert list(raw.scan((key(5), True), (key(4), True))) == []


# ---- the typed map -----------------------------------------------------------


def test_typed_scan_decodes_and_takes_items_between_bounds(own_client):
    name = f"py-scan-{secrets.token_hex(6)}"
    p = sorted(own_client.partition_map().partitions)[:3]
    ranges = [(b"", p[0]), (codecs.ELEMENT.encode(100), p[1]), (codecs.ELEMENT.encode(200), p[2])]
    m = own_client.create_map(name, ranges=ranges, value_codec=codecs.UTF8)
    m.update({i: str(i) for i in range(0, 300, 3)})

    scan = m.scan(10, 250, (False, True), page=20)
    pages = list(scan)
    assert all(1 <= len(page) <= 20 for page in pages)
    items = [item for page in pages for item in page]
    assert items == [(i, str(i)) for i in range(0, 300, 3) if 10 < i <= 250]
    # No page crosses 100 or 200: 30 keys in [12, 99], 33 in [102, 198],
    # 17 in [201, 249].
    for page in pages:
        assert len({(k >= 100) + (k >= 200) for k, _ in page}) == 1
    assert [len(p) for p in pages] == [20, 10, 20, 13, 17]
    assert scan.reads == 5

    assert [k for page in m.scan(maximum=20, inclusive=(True, False)) for k, _ in page] == list(range(0, 20, 3))
    assert [k for page in m.scan(minimum=290) for k, _ in page] == [291, 294, 297]
    assert list(m.scan(250, 10)) == []
    # The default page is the client's range_entries.
    assert m.scan().page == own_client.range_entries


def test_bad_arguments(loaded):
    with pytest.raises(amulet.InvalidArgument):
        loaded.scan(page=0)
    with pytest.raises(TypeError):
        loaded.scan(page="10")
    with pytest.raises(TypeError):
        loaded.scan(("k", True))
    with pytest.raises(TypeError):
        loaded.scan(upper=b"k")
    # Above the cluster's range limit: the first read's refusal.
    scan = loaded.scan(page=1_000_000)
    with pytest.raises(amulet.InvalidArgument):
        scan.next_page()


# ---- a split between pages ---------------------------------------------------


def test_a_split_between_pages_and_writes_during_a_scan(dev, own_client):
    """The scan reads the client's map at every page: after a split, the
    next page ends at the new cut. A key written behind the scan's
    position is not seen, one ahead is. A client whose map predates the
    split reads exactly too (its pages span the new partitions)."""
    name = f"py-scan-{secrets.token_hex(6)}"
    first = min(own_client.partition_map().partitions)
    raw = own_client.create_map(name, ranges=[(b"", first)]).raw
    raw.bulk_load(((key(i), value(i)) for i in range(400)), partition_entries=0)
    stale = amulet.Client(dev.addresses, tls=dev.tls)
    try:
        scan = raw.scan(page=64)
        first_page = scan.next_page()
        assert [k for k, _ in first_page] == [key(i) for i in range(64)]

        configured = own_client.running_streams()
        own_client.reconfigure_with(lambda routing: bulk_load.split_at(routing, name, key(200), configured))
        assert [s for s, _ in ranges_once(own_client, name, 2)] == [b"", key(200)]
        raw.put(key(10) + b"x", b"behind")
        raw.put(key(300) + b"x", b"ahead")

        pages = [first_page] + drain(scan, own_client, name)
        got = flat(pages)
        assert got == sorted([key(i) for i in range(400)] + [key(300) + b"x"])
        # 64-199 in pages of 64 ending at the cut, then 200-399 and the key
        # written ahead.
        assert [len(p) for p in pages] == [64, 64, 64, 8, 64, 64, 64, 9]
        assert pages[3][-1][0] == key(199)
        assert scan.reads == 8

        # A map gone stale: the page is built with no cut and ordered
        # across both partitions; every key once all the same.
        assert stale.partition_map().keyspaces[name] == [(b"", first)]
        scan = stale.bytes_map(name).scan(page=1000)
        assert flat(drain(scan)) == sorted([key(i) for i in range(400)] + [key(10) + b"x", key(300) + b"x"])
    finally:
        stale.close()
