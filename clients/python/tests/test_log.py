"""DLog (named shared logs, docs/logs.md) against the live cluster: append,
read, trim and bounds; multi-append across partitions; routing;
exactly-once appends; errors. Tails are in test_log_tail.py."""

from __future__ import annotations

import threading

import grpc
import pytest

import amulet
from amulet.log import log_placement
from amulet.routing import Placement
from stub_spy import wrap_stubs

# The cluster's defaults (spec/conformance/README.md).
VALUE_BYTES_MAX = 1024 * 1024
RANGE_ENTRIES_MAX = 10_000


class _LostReply(grpc.RpcError):
    """What a call whose reply was lost looks like to the client."""

    def code(self):
        return grpc.StatusCode.DEADLINE_EXCEEDED

    def details(self):
        return "reply dropped by the test"

    def trailing_metadata(self):
        return ()


class _Spy:
    """Wraps a client's stubs, recording every Execute request (and
    optionally losing the first reply of one op)."""

    def __init__(self, client, monkeypatch, lose_first: str | None = None):
        self.requests = []
        self.lose_first = lose_first
        wrap_stubs(client, monkeypatch, Execute=self._execute)

    def _execute(self, stub, address, request, timeout=None):
        reply = stub.Execute(request, timeout=timeout)
        self.requests.append((address, request))
        if request.WhichOneof("op") == self.lose_first:
            self.lose_first = None
            raise _LostReply()
        return reply

    def ops(self, op: str):
        return [request for _, request in self.requests if request.WhichOneof("op") == op]


# ---- append, read, trim, bounds ----------------------------------------------


def test_append_read_trim_bounds(log):
    assert log.bounds() == amulet.LogBounds(first=0, end=0)
    assert log.read(0, 10) == amulet.LogEntries(from_=0, entries=[], first=0, end=0)
    assert [log.append(v) for v in (b"a", b"", bytearray(b"c"), memoryview(b"d"))] == [0, 1, 2, 3]
    assert log.read(0, 10) == amulet.LogEntries(0, [b"a", b"", b"c", b"d"], 0, 4)
    assert log.read(1, 2).entries == [b"", b"c"]
    assert log.read(4).entries == []  # at the end: nothing (the way to poll)
    with pytest.raises(amulet.OutOfRange):
        log.read(5, 1)

    assert log.trim(2) == amulet.LogBounds(2, 4)
    with pytest.raises(amulet.OutOfRange) as e:
        log.read(1, 10)
    assert e.value.code == grpc.StatusCode.OUT_OF_RANGE
    assert not isinstance(e.value, amulet.InvalidArgument)
    assert log.read(2, 10) == amulet.LogEntries(2, [b"c", b"d"], 2, 4)
    assert log.trim(1) == amulet.LogBounds(2, 4)  # below the first: nothing changes
    with pytest.raises(amulet.OutOfRange):
        log.trim(5)
    assert log.bounds() == amulet.LogBounds(2, 4)
    # Trimmed positions are never reused.
    assert log.trim(4) == amulet.LogBounds(4, 4)
    assert log.append(b"e") == 4
    assert log.read(4, 10) == amulet.LogEntries(4, [b"e"], 4, 5)


def test_read_limits(log):
    values = [b"%03d" % i for i in range(50)]
    for v in values:
        log.append(v)
    assert log.read(0, 1).entries == values[:1]
    assert log.read(10, RANGE_ENTRIES_MAX).entries == values[10:]
    for bad in (0, RANGE_ENTRIES_MAX + 1):
        with pytest.raises(amulet.InvalidArgument):
            log.read(0, bad)


def test_large_entries_and_the_value_limit(log):
    big = b"x" * VALUE_BYTES_MAX
    with pytest.raises(amulet.InvalidArgument):
        log.append(big + b"x")
    assert log.append(big) == 0
    assert log.append(b"small") == 1
    # A read returns at least one entry, however large.
    read = log.read(0, 2)
    assert read.entries[0] == big and read.end == 2


def test_values_and_positions_are_checked_before_sending(client, log, monkeypatch):
    spy = _Spy(client, monkeypatch)
    with pytest.raises(TypeError):
        log.append("text")
    with pytest.raises(TypeError):
        log.read("0", 1)
    with pytest.raises(amulet.InvalidArgument):
        log.read(-1, 1)
    with pytest.raises(amulet.InvalidArgument):
        log.read(0, 2**32)
    with pytest.raises(amulet.InvalidArgument):
        log.trim(2**64)
    with pytest.raises(TypeError):
        client.multi_append([(log.name, "text")])
    assert spy.requests == []


# ---- names, creation and errors -----------------------------------------------


@pytest.mark.parametrize("name", ["", "a b", "a/b", "x" * 129, 42, None])
def test_bad_log_names_are_refused_before_sending(client, name):
    for call in (client.log, client.create_log, client.create_log_if_absent, client.drop_log):
        with pytest.raises(amulet.InvalidArgument):
            call(name)
    with pytest.raises(amulet.InvalidArgument):
        client.multi_append([(name, b"v")])


def test_maps_and_logs_share_one_namespace(client, fresh_map_name):
    client.create_map(fresh_map_name)
    with pytest.raises(amulet.AlreadyExists):
        client.create_log(fresh_map_name)
    # As in the Rust client, the name being taken is all create_log_if_absent
    # learns: a map's name gives a handle that finds no log.
    not_a_log = client.create_log_if_absent(fresh_map_name)
    with pytest.raises(amulet.NotFound):
        not_a_log.bounds()
    name = fresh_map_name + "-log"
    log = client.create_log(name)
    with pytest.raises(amulet.AlreadyExists):
        client.create_log(name)
    with pytest.raises(amulet.AlreadyExists):
        client.create_map(name)
    log.append(b"a")
    again = client.create_log_if_absent(name)
    assert again.name == name and again.bounds() == amulet.LogBounds(0, 1)


def test_unknown_and_dropped_logs(client, fresh_map_name):
    nope = client.log(fresh_map_name + "-none")
    for call in (lambda: nope.append(b"v"), lambda: nope.read(0, 1), nope.bounds, lambda: nope.trim(0)):
        with pytest.raises(amulet.NotFound):
            call()
    with pytest.raises(amulet.NotFound):
        client.drop_log(nope.name)

    log = client.create_log(fresh_map_name)
    log.append(b"a")
    log.append(b"b")
    client.drop_log(fresh_map_name)
    with pytest.raises(amulet.NotFound):
        log.append(b"c")
    with pytest.raises(amulet.NotFound):
        client.drop_log(fresh_map_name)
    # The name is free again; a new log there starts at 0.
    client.create_log(fresh_map_name)
    assert log.bounds() == amulet.LogBounds(0, 0)
    assert log.append(b"z") == 0


def test_a_log_created_by_another_client_is_found(cluster, client, fresh_map_name):
    """The other client's cached partition map predates the log: the
    cluster's stale-map answer makes it fetch the map and route again."""
    with amulet.Client(cluster.addresses, tls=cluster.tls) as other:
        stale = other.log(fresh_map_name)
        client.create_log(fresh_map_name).append(b"a")
        assert stale.append(b"b") == 1
        assert stale.read(0, 10).entries == [b"a", b"b"]


# ---- routing ------------------------------------------------------------------


def test_log_requests_go_to_the_partition_owning_the_name(client, fresh_map_name, monkeypatch):
    names = [f"{fresh_map_name}-{i}" for i in range(12)]
    for name in names:
        client.create_log(name)
    routing = client.partition_map()
    owners = {name: routing.partition_of(name, name.encode()) for name in names}
    assert len(set(owners.values())) > 1  # the logs spread over partitions

    spy = _Spy(client, monkeypatch)
    for name in names:
        log = client.log(name)
        log.append(b"v")
        log.read(0, 1)
        log.bounds()
        log.trim(1)
    assert len(spy.requests) == 4 * len(names)
    for address, request in spy.requests:
        op = request.WhichOneof("op")
        name = getattr(request, op).log
        assert request.header.partition == owners[name], (op, name)
        assert address in routing.replica_addresses(owners[name])
        assert request.header.session != 0  # ordered in a session, as map ops


def test_log_placement():
    assert log_placement("events") == Placement("events", "one", (b"events",))


# ---- multi-append -------------------------------------------------------------


def test_multi_append_across_partitions(client, fresh_map_name, monkeypatch):
    names = [f"{fresh_map_name}-{i}" for i in range(8)]
    for name in names:
        client.create_log(name)
    routing = client.partition_map()
    owners = {name: routing.partition_of(name, name.encode()) for name in names}
    assert len(set(owners.values())) > 1

    client.log(names[1]).append(b"before")
    spy = _Spy(client, monkeypatch)
    entries = [(names[0], b"a0"), (names[1], b"b0"), (names[0], b"a1"), (names[2], b"c0")]
    entries += [(name, b"x") for name in names[3:]]
    positions = client.multi_append(entries)
    assert positions == [0, 1, 1, 0] + [0] * len(names[3:])
    # One request, to the first partition of all the logs'.
    [request] = spy.ops("multi_append")
    assert request.header.partition == min(owners.values())
    assert request.header.session != 0
    monkeypatch.undo()

    assert client.log(names[0]).read(0, 10).entries == [b"a0", b"a1"]
    assert client.log(names[1]).read(0, 10).entries == [b"before", b"b0"]
    assert client.log(names[2]).read(0, 10).entries == [b"c0"]
    # Any iterable of pairs.
    assert client.multi_append((name, b"y") for name in names[:2]) == [2, 2]


def test_multi_append_is_all_or_nothing(client, fresh_map_name):
    a, b = client.create_log(fresh_map_name + "-a"), client.create_log(fresh_map_name + "-b")
    with pytest.raises(amulet.NotFound):
        client.multi_append([(a.name, b"1"), (b.name, b"2"), (fresh_map_name + "-none", b"3")])
    with pytest.raises(amulet.InvalidArgument):
        client.multi_append([])
    with pytest.raises(amulet.InvalidArgument):
        client.multi_append([(a.name, b"1"), (b.name, b"x" * (VALUE_BYTES_MAX + 1))])
    assert a.bounds() == b.bounds() == amulet.LogBounds(0, 0)


def test_concurrent_multi_appends_are_ordered_alike_in_every_log(client, fresh_map_name):
    """Each multi-append appends to both logs in one step of the order, so
    both logs hold the entries of all the writers in the same order."""
    names = [fresh_map_name + "-a", fresh_map_name + "-b"]
    for name in names:
        client.create_log(name)
    failures = []

    def writer(w):
        try:
            for i in range(15):
                value = b"%d-%d" % (w, i)
                positions = client.multi_append([(names[0], value), (names[1], value)])
                assert len(positions) == 2
        except Exception as e:  # noqa: BLE001
            failures.append(e)

    threads = [threading.Thread(target=writer, args=(w,)) for w in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not failures and not any(t.is_alive() for t in threads)
    a, b = (client.log(n).read(0, 100) for n in names)
    assert len(a.entries) == 45 and a.entries == b.entries
    for w in range(3):  # each writer's own entries in its order
        mine = [e for e in a.entries if e.startswith(b"%d-" % w)]
        assert mine == [b"%d-%d" % (w, i) for i in range(15)]


# ---- exactly once ----------------------------------------------------------------


def test_a_resent_append_lands_once(client, log, monkeypatch):
    """The first attempt executes but its reply is lost; the client resends
    it with the same session and sequence, and gets the first execution's
    position: the entry is in the log once."""
    log.append(b"first")
    spy = _Spy(client, monkeypatch, lose_first="append")
    assert log.append(b"once") == 1
    sent = spy.ops("append")
    assert len(sent) == 2
    assert (sent[0].header.session, sent[0].header.sequence) == (sent[1].header.session, sent[1].header.sequence)
    monkeypatch.undo()
    assert log.read(0, 10).entries == [b"first", b"once"]
    assert log.append(b"next") == 2


def test_a_resent_multi_append_lands_once(client, fresh_map_name, monkeypatch):
    names = [fresh_map_name + "-a", fresh_map_name + "-b"]
    for name in names:
        client.create_log(name)
    spy = _Spy(client, monkeypatch, lose_first="multi_append")
    assert client.multi_append([(names[0], b"x"), (names[1], b"y")]) == [0, 0]
    assert len(spy.ops("multi_append")) == 2
    monkeypatch.undo()
    assert client.log(names[0]).read(0, 10).entries == [b"x"]
    assert client.log(names[1]).read(0, 10).entries == [b"y"]
