"""Bulk load (``ByteMap.bulk_load``, ``AmuletMap.bulk_load``;
docs/dynatree.md "Bulk load"), as the Rust client's
``dynatree_bulk_load_pre_splits_sorted_input_into_partitions``: sorted
input pre-splits a range map into partitions of ``partition_entries`` as
it goes (``Client.reconfigure_with``, a ``Split``), every entry reads
back, and input that stops being sorted is refused where it does, with
nothing of its chunk written. A hash map is loaded without splits.

The splits add partitions to the cluster, which other tests (range maps
over ``sorted(partitions)[:3]``) do not expect: this module runs on an
``amulet dev`` cluster of its own."""

from __future__ import annotations

import time

import grpc
import pytest

import amulet
from amulet import bulk_load, codecs
from amulet.v1 import amulet_pb2 as pb
from cluster import DevCluster
from stub_spy import wrap_stubs

ENTRIES = 3_000
PER_PARTITION = 1_000


@pytest.fixture(scope="module")
def own_client():
    """A client of a cluster of this module's own, stopped at its end."""
    dev = DevCluster()
    dev.start()
    try:
        with amulet.Client(dev.addresses, tls=dev.tls) as c:
            yield c
    finally:
        dev.stop()


def key(i: int) -> bytes:
    return b"k%08d" % i


def value(i: int) -> bytes:
    return b"v%d" % i


def ranges_once(client, name: str, count: int, timeout: float = 30.0):
    """The map's ranges once the cached map has ``count`` of them (the
    last split takes effect at a fence after it was accepted)."""
    deadline = time.monotonic() + timeout
    while True:
        client.refresh_map()
        ranges = client.partition_map().keyspaces[name]
        if len(ranges) == count or time.monotonic() > deadline:
            return ranges
        time.sleep(0.1)


def test_bulk_load_pre_splits_a_range_map_and_refuses_unsorted_input(own_client, fresh_map_name):
    client = own_client
    first = min(client.partition_map().partitions)
    partitions_before = len(client.partition_map().partitions)
    client.create_map(fresh_map_name, ranges=[(b"", first)])
    raw = client.bytes_map(fresh_map_name)
    loaded = raw.bulk_load(((key(i), value(i)) for i in range(ENTRIES)), partition_entries=PER_PARTITION)
    assert loaded == amulet.BulkLoaded(
        entries=ENTRIES,
        bytes=sum(len(key(i)) + len(value(i)) for i in range(ENTRIES)),
        # The first chunk joins the map's first range: two cuts, three ranges.
        splits=2,
        batches=3,
    )
    ranges = ranges_once(client, fresh_map_name, 3)
    assert [start for start, _ in ranges] == [b"", key(1000), key(2000)]
    assert ranges[0][1] == first and len({p for _, p in ranges}) == 3
    assert len(client.partition_map().partitions) == partitions_before + 2
    # Each range holds its chunk, and every entry reads back.
    bounds = [None, (key(1000), True), (key(2000), True), None]
    for at in range(3):
        upper = None if bounds[at + 1] is None else (bounds[at + 1][0], False)
        entries, more = raw.range(bounds[at], upper, limit=PER_PARTITION + 1)
        assert (len(entries), more) == (PER_PARTITION, False)
    with raw.snapshot() as snapshot:
        assert list(snapshot) == [(key(i), value(i)) for i in range(ENTRIES)]
    for i in range(0, ENTRIES, 7):
        assert raw.get(key(i)) == value(i)

    # Unsorted: refused at the key that goes back; the chunk before it is
    # written, nothing of its own chunk (k5003 came before the bad key).
    unsorted = [(key(5001), b"a"), (key(5002), b"b"), (key(5003), b"c"), (key(5000), b"d")]
    with pytest.raises(amulet.InvalidArgument, match="sorted"):
        raw.bulk_load(unsorted, partition_entries=2)
    assert raw.get(key(5001)) == b"a" and raw.get(key(5002)) == b"b"
    assert raw.get(key(5003)) is None and raw.get(key(5000)) is None
    # A key given twice in the first chunk: nothing written at all.
    with pytest.raises(amulet.InvalidArgument, match="sorted"):
        raw.bulk_load([(key(6000), b"x"), (key(6000), b"y")])
    assert raw.get(key(6000)) is None
    assert len(ranges_once(client, fresh_map_name, 3)) == 3
    assert raw.size() == ENTRIES + 2


def test_bulk_load_of_a_hash_map_splits_nothing(own_client, fresh_map_name):
    client = own_client
    partitions_before = sorted(client.partition_map().partitions)
    m = client.create_map(fresh_map_name, key_codec=codecs.ELEMENT)
    loaded = m.bulk_load(((i, value(i)) for i in range(2_500)), partition_entries=1_000, batch_entries=200)
    assert (loaded.entries, loaded.splits) == (2_500, 0)
    # Grouped by partition within each chunk (3 hash partitions): full
    # batches, not one per change of partition from key to key.
    assert loaded.batches <= 3 * (3 + 1_000 // 200)
    client.refresh_map()
    assert sorted(client.partition_map().partitions) == partitions_before
    assert client.partition_map().keyspaces[fresh_map_name] is None
    assert len(m) == 2_500
    assert list(m.items()) == [(i, value(i)) for i in range(2_500)]
    # Sorted by encoded key (ELEMENT ints by value): a key going back is
    # refused.
    with pytest.raises(amulet.InvalidArgument):
        m.bulk_load([(3_000, b"x"), (2_999, b"y")])


def test_bulk_load_batches_by_bytes_and_refuses_bad_options(own_client, fresh_map_name):
    raw = own_client.create_map(fresh_map_name).raw
    big = b"x" * 1000
    loaded = raw.bulk_load(((key(i), big) for i in range(10)), partition_entries=0, batch_bytes=2_500)
    # 1,009 bytes an entry: two a batch in each partition's group.
    assert (loaded.entries, loaded.bytes, loaded.splits) == (10, 10 * 1009, 0)
    assert 5 <= loaded.batches <= 6
    assert raw.size() == 10
    for options in ({"batch_entries": 0}, {"batch_bytes": 0}, {"in_flight": 0}, {"partition_entries": -1}):
        with pytest.raises(amulet.InvalidArgument):
            raw.bulk_load([(b"a", b"b")], **options)
    with pytest.raises(TypeError):
        raw.bulk_load([("a", b"b")])
    assert raw.size() == 10


def test_split_at_builds_the_operators_split(own_client, fresh_map_name):
    """The split a load orders: the source range's partition, ids above
    the map's and the running streams', the source's replicas."""
    client = own_client
    routing = client.partition_map()
    first = min(routing.partitions)
    client.create_map(fresh_map_name, ranges=[(b"", first)])
    client.refresh_map()
    routing = client.partition_map()
    assert bulk_load.needs_cut(routing, fresh_map_name, b"m")
    assert not bulk_load.needs_cut(routing, fresh_map_name, b"")
    request = bulk_load.split_at(routing, fresh_map_name, b"m", [99])
    assert request.WhichOneof("change") == "split"
    split = request.split
    assert split.source == first
    assert split.new_partition == max(routing.partitions) + 1
    assert split.stream.stream == 100
    assert list(split.stream.acceptors) == routing.partitions[first]
    assert list(split.at_keys) == [pb.RangeCut(map=fresh_map_name, key=b"m")]
    assert not split.HasField("at_token")
    with pytest.raises(amulet.InvalidArgument):
        client.reconfigure(pb.ReconfigureRequest())


class _NotAReplica(grpc.RpcError):
    """What a node that replicates nothing answers a reconfiguration."""

    def code(self):
        return grpc.StatusCode.FAILED_PRECONDITION

    def details(self):
        return "this node does not replicate that partition (refused by the test)"

    def trailing_metadata(self):
        return (("amulet-error", "not-a-replica"),)


def test_a_split_refused_not_a_replica_is_sent_again_to_a_replica_of_the_first_partition(
    own_client, monkeypatch, fresh_map_name
):
    """A member that replicates nothing executes no reconfiguration and
    answers ``not-a-replica`` (docs/dynatree.md, "Members replicating
    nothing"): the change goes to a replica of the first partition, and
    is sent again after that refusal instead of failing the load."""
    client = own_client
    first = min(client.partition_map().partitions)
    client.create_map(fresh_map_name, ranges=[(b"", first)])
    client.refresh_map()
    sent = []

    def reconfigure(stub, address, request, timeout=None):
        sent.append(address)
        if len(sent) == 1:
            raise _NotAReplica()
        return stub.Reconfigure(request, timeout=timeout)

    wrap_stubs(client, monkeypatch, Reconfigure=reconfigure)
    configured = client.running_streams()
    client.reconfigure_with(lambda routing: bulk_load.split_at(routing, fresh_map_name, b"m", configured))
    assert len(sent) == 2, sent
    replicas = client.partition_map().replica_addresses(first)
    assert all(address in replicas for address in sent), (sent, replicas)
    assert len(ranges_once(client, fresh_map_name, 2)) == 2
