"""DLog (named shared logs, docs/logs.md) against the live cluster: append,
read, trim and bounds; multi-append across partitions; tails that follow
new entries on TailLog streams (and survive broken ones); routing;
exactly-once appends; errors."""

from __future__ import annotations

import gc
import threading
import time

import grpc
import pytest

import amulet
from amulet import log as log_module
from amulet.log import log_placement
from amulet.routing import Placement

# The cluster's defaults (spec/conformance/README.md).
VALUE_BYTES_MAX = 1024 * 1024
RANGE_ENTRIES_MAX = 10_000


@pytest.fixture
def log(client, fresh_map_name):
    return client.create_log(fresh_map_name)


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
        real_stub = client._stub
        spy = self

        class Stub:
            def __init__(self, address):
                self.stub = real_stub(address)
                self.address = address

            def __getattr__(self, name):
                return getattr(self.stub, name)

            def Execute(self, request, timeout=None):
                reply = self.stub.Execute(request, timeout=timeout)
                spy.requests.append((self.address, request))
                if request.WhichOneof("op") == spy.lose_first:
                    spy.lose_first = None
                    raise _LostReply()
                return reply

        monkeypatch.setattr(client, "_stub", lambda address: Stub(address))

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
    with amulet.Client(cluster.addresses) as other:
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


# ---- tails ------------------------------------------------------------------------


class _FakeTailCall(grpc.RpcError):
    """A TailLog call of the test's making: yields ``messages``, then ends
    with ``code`` (with an ``amulet-error`` of ``kind``), or just ends when
    ``code`` is None."""

    def __init__(self, messages=(), code=None, details="failed by the test", kind=None):
        self.messages = list(messages)
        self._code = code
        self._details = details
        self._kind = kind
        self.cancelled = False

    def code(self):
        return self._code

    def details(self):
        return self._details

    def trailing_metadata(self):
        return () if self._kind is None else (("amulet-error", self._kind),)

    def __iter__(self):
        yield from self.messages
        if self._code is not None:
            raise self

    def cancel(self):
        self.cancelled = True
        return True


class _TailSpy:
    """Wraps a client's stubs, recording every TailLog call (address,
    request); the first calls get the fakes of ``fakes`` (or a callable
    returning a fake, or None for the real call) instead of the node's
    stream."""

    def __init__(self, client, monkeypatch, fakes=()):
        self.calls = []
        self.fakes = fakes if callable(fakes) else list(fakes)
        real_stub = client._stub
        spy = self

        class Stub:
            def __init__(self, address):
                self.stub = real_stub(address)
                self.address = address

            def __getattr__(self, name):
                return getattr(self.stub, name)

            def TailLog(self, request, **kwargs):
                spy.calls.append((self.address, request))
                if callable(spy.fakes):
                    fake = spy.fakes()
                else:
                    fake = spy.fakes.pop(0) if spy.fakes else None
                return self.stub.TailLog(request, **kwargs) if fake is None else fake

        monkeypatch.setattr(client, "_stub", lambda address: Stub(address))

    def froms(self):
        return [getattr(request, "from") for _, request in self.calls]


def _entries(log_name, from_, values):
    return amulet.v1.amulet_pb2.LogEntries(entries=values, first=0, end=from_ + len(values), **{"from": from_})


def _tail_threads(name):
    return [t for t in threading.enumerate() if t.name == f"amulet-tail-{name}"]


def _wait_for(condition, seconds=10.0):
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def test_a_tail_sees_entries_appended_after_it_started(client, log):
    log.append(b"old")
    with log.tail(0, max_poll=0.02) as tail:
        assert tail.position == 0
        assert tail.next(timeout=10) == (0, b"old")
        assert tail.position == 1

        appended = []

        def writer():
            time.sleep(0.2)  # the tail is caught up and waiting by then
            for i in range(20):
                appended.append(log.append(b"new-%d" % i))

        thread = threading.Thread(target=writer)
        thread.start()
        try:
            seen = []
            deadline = time.monotonic() + 30
            while len(seen) < 20 and time.monotonic() < deadline:
                seen.append(tail.next(timeout=10))
        finally:
            thread.join(timeout=30)
        assert seen == [(1 + i, b"new-%d" % i) for i in range(20)]
        assert appended == list(range(1, 21))
        assert tail.position == 21
        assert not tail.polling


def test_a_tail_streams_from_a_replica_of_the_logs_partition(client, fresh_map_name, monkeypatch):
    names = [f"{fresh_map_name}-{i}" for i in range(6)]
    for name in names:
        client.create_log(name).append(b"v")
    routing = client.partition_map()
    spy = _TailSpy(client, monkeypatch)
    for name in names:
        with client.log(name).tail(0) as tail:
            assert tail.next(timeout=10) == (0, b"v")
    assert len(spy.calls) == len(names)
    for name, (address, request) in zip(names, spy.calls):
        assert request.log == name and getattr(request, "from") == 0
        assert address in routing.replica_addresses(routing.partition_of(name, name.encode()))


def test_a_tail_of_a_log_the_cached_map_does_not_know(cluster, client, fresh_map_name):
    """The other client's map predates the log: its tail opens at any node,
    which streams it or sends the newer map."""
    with amulet.Client(cluster.addresses) as other:
        stale = other.log(fresh_map_name)
        client.create_log(fresh_map_name).append(b"a")
        with stale.tail(0) as tail:
            assert tail.next(timeout=20) == (0, b"a")
            client.log(fresh_map_name).append(b"b")
            assert tail.next(timeout=20) == (1, b"b")


def test_a_tail_waits_with_a_timeout_and_resumes(log):
    tail = log.tail(0, max_poll=0.01)
    started = time.monotonic()
    with pytest.raises(TimeoutError):
        tail.next(timeout=0.1)
    with pytest.raises(TimeoutError):
        tail.next(timeout=0)
    assert time.monotonic() - started < 5
    assert tail.position == 0
    for i in range(3):
        log.append(b"%d" % i)
    assert [tail.next(timeout=10) for _ in range(2)] == [(0, b"0"), (1, b"1")]
    # A new tail from the position after the last entry seen: no gap, no duplicate.
    with log.tail(tail.position) as resumed:
        assert resumed.next(timeout=10) == (2, b"2")
    assert tail.next(timeout=10) == (2, b"2")
    # Timeouts across heartbeats (about one a second) keep the stream.
    stream, reconnects = tail._stream, tail.reconnects
    deadline = time.monotonic() + 2.5
    while time.monotonic() < deadline:
        with pytest.raises(TimeoutError):
            tail.next(timeout=0.25)
    log.append(b"3")
    assert tail.next(timeout=10) == (3, b"3")
    assert tail._stream is stream and tail.reconnects == reconnects and not tail.polling
    tail.close()


def test_a_tail_resumes_after_its_stream_breaks(log):
    """The test cancels the tail's call after each round of appends: the
    next round's entries come on a stream the tail reopened (at another
    replica) from the position after the last entry it got."""
    rounds, per_round = 6, 10
    seen = []
    with log.tail(0) as tail:
        for r in range(rounds):
            for i in range(per_round):
                log.append(b"%d-%d" % (r, i))
            seen += [tail.next(timeout=10) for _ in range(per_round)]
            tail._stream.call.cancel()
        log.append(b"end")
        seen.append(tail.next(timeout=10))
        assert tail.reconnects >= rounds
    expected = [b"%d-%d" % (r, i) for r in range(rounds) for i in range(per_round)] + [b"end"]
    assert seen == list(enumerate(expected))


def test_a_tail_keeps_up_with_a_writer_through_broken_streams(log):
    """A writer appends while the tail's calls are cancelled now and then."""
    total = 60

    def writer():
        for i in range(total):
            log.append(b"%d" % i)
            time.sleep(0.005)

    thread = threading.Thread(target=writer)
    thread.start()
    seen = []
    try:
        with log.tail(0) as tail:
            deadline = time.monotonic() + 60
            while len(seen) < total and time.monotonic() < deadline:
                seen.append(tail.next(timeout=10))
                if len(seen) % 7 == 0 and tail._stream is not None:
                    tail._stream.call.cancel()
    finally:
        thread.join(timeout=30)
    assert seen == [(i, b"%d" % i) for i in range(total)]


def test_a_broken_stream_resumes_where_it_was(client, log, monkeypatch):
    """Streams that end in every retried way, one after a partial
    delivery: each reopen asks for the position after the last entry
    received, at another replica."""
    for value in (b"a", b"b", b"c"):
        log.append(value)
    spy = _TailSpy(
        client,
        monkeypatch,
        [
            _FakeTailCall([_entries(log.name, 0, [])], grpc.StatusCode.UNAVAILABLE, kind="behind"),
            _FakeTailCall([_entries(log.name, 0, [b"a"])], grpc.StatusCode.UNAVAILABLE),
            _FakeTailCall([], grpc.StatusCode.DEADLINE_EXCEEDED),
            _FakeTailCall([_entries(log.name, 1, [])]),  # ends without a status
            _FakeTailCall([], grpc.StatusCode.INTERNAL),
        ],
    )
    with log.tail(0) as tail:
        assert [tail.next(timeout=20) for _ in range(3)] == [(0, b"a"), (1, b"b"), (2, b"c")]
        assert tail.reconnects >= 5
    # (A real stream at a replica still behind the log's creation may
    # be retried too.)
    assert spy.froms()[:6] == [0, 0, 1, 1, 1, 1] and set(spy.froms()[6:]) <= {1}
    for (before, _), (after, _) in zip(spy.calls[:6], spy.calls[1:6]):
        assert before != after  # the partition has three replicas


def test_a_tail_told_not_a_replica_refreshes_the_map(client, log, monkeypatch):
    log.append(b"a")
    refreshed = []
    real_refresh = client.refresh_map
    monkeypatch.setattr(client, "refresh_map", lambda address=None: (refreshed.append(address), real_refresh(address)))
    spy = _TailSpy(client, monkeypatch, [_FakeTailCall([], grpc.StatusCode.FAILED_PRECONDITION, kind="not-a-replica")])
    with log.tail(0) as tail:
        assert tail.next(timeout=20) == (0, b"a")
        assert tail.reconnects >= 1
    assert refreshed == [spy.calls[0][0]]
    assert len(spy.calls) >= 2


def test_a_silent_stream_is_reopened(log, monkeypatch):
    """No message (not even a heartbeat) for TAIL_IDLE: the tail cancels
    the call and reopens it elsewhere, and misses nothing."""
    log.append(b"a")
    monkeypatch.setattr(log_module, "TAIL_IDLE", 0.3)  # under the 1 s heartbeat
    with log.tail(0) as tail:
        assert tail.next(timeout=10) == (0, b"a")
        with pytest.raises(TimeoutError):
            tail.next(timeout=1.5)
        assert tail.reconnects >= 2
        log.append(b"b")
        assert tail.next(timeout=10) == (1, b"b")


def test_a_tail_that_cannot_reconnect_is_unavailable(cluster, fresh_map_name, monkeypatch):
    with amulet.Client(cluster.addresses, operation_timeout=2.0) as client:
        log = client.create_log(fresh_map_name)
        log.append(b"a")
        _TailSpy(client, monkeypatch, lambda: _FakeTailCall([], grpc.StatusCode.UNAVAILABLE))
        started = time.monotonic()
        tail = log.tail(0)
        with pytest.raises(amulet.Unavailable):
            tail.next(timeout=20)
        assert time.monotonic() - started < 15
        assert tail.reconnects >= 2 and tail.position == 0
        monkeypatch.undo()
        # Resumed where it was once the nodes answer again.
        assert tail.next(timeout=10) == (0, b"a")
        tail.close()


def test_a_tail_falls_back_to_polling_on_an_older_node(client, log, monkeypatch):
    log.append(b"a")
    spy = _TailSpy(client, monkeypatch, lambda: _FakeTailCall([], grpc.StatusCode.UNIMPLEMENTED))
    with log.tail(0, max_poll=0.01) as tail:
        assert tail.next(timeout=10) == (0, b"a")
        assert tail.polling
        with pytest.raises(TimeoutError):
            tail.next(timeout=0.1)
        log.append(b"b")
        assert tail.next(timeout=10) == (1, b"b")
    assert len(spy.calls) == 1


@pytest.mark.parametrize(
    "code, kind, error",
    [
        (grpc.StatusCode.FAILED_PRECONDITION, None, amulet.FailedPrecondition),
        (grpc.StatusCode.FAILED_PRECONDITION, "behind", amulet.FailedPrecondition),
        (grpc.StatusCode.INVALID_ARGUMENT, None, amulet.InvalidArgument),
        (grpc.StatusCode.OUT_OF_RANGE, None, amulet.OutOfRange),
    ],
)
def test_final_tail_failures_are_not_retried(client, log, monkeypatch, code, kind, error):
    spy = _TailSpy(client, monkeypatch, [_FakeTailCall([], code, kind=kind)])
    tail = log.tail(0)
    with pytest.raises(error) as e:
        tail.next(timeout=10)
    assert e.value.code == code and e.value.args[0] == "failed by the test"
    assert len(spy.calls) == 1 and tail.reconnects == 0


def test_not_found_from_a_replica_behind_the_logs_creation_is_retried(client, fresh_map_name, monkeypatch):
    """A replica that has not executed create_log yet answers NOT_FOUND:
    the tail confirms with a linearizable read that the log exists and
    reopens elsewhere; for a log that does not exist NOT_FOUND is final."""
    log = client.create_log(fresh_map_name)
    log.append(b"a")
    spy = _TailSpy(client, monkeypatch, [_FakeTailCall([], grpc.StatusCode.NOT_FOUND)])
    with log.tail(0) as tail:
        assert tail.next(timeout=10) == (0, b"a")
        assert tail.reconnects >= 1
    assert len(spy.calls) >= 2

    # A log dropped under the tail: NOT_FOUND (from the node's stream, or
    # from the fake if the cancel comes first), confirmed, is final.
    with log.tail(1) as tail:
        with pytest.raises(TimeoutError):
            tail.next(timeout=0.05)  # opens the stream
        client.drop_log(fresh_map_name)
        spy.fakes = [_FakeTailCall([], grpc.StatusCode.NOT_FOUND)]
        calls, reconnects = len(spy.calls), tail.reconnects
        tail._stream.call.cancel()
        with pytest.raises(amulet.NotFound):
            tail.next(timeout=10)
        assert len(spy.calls) <= calls + 1 and tail.reconnects <= reconnects + 1


def test_a_tail_sends_the_cached_map_version(client, log, monkeypatch):
    """Every TailLog call carries the cached partition map's version: a
    replica whose map is older waits for it (then answers UNAVAILABLE
    behind) rather than call a new log unknown."""
    log.append(b"a")
    log.append(b"b")
    spy = _TailSpy(client, monkeypatch, [_FakeTailCall([_entries(log.name, 0, [b"a"])], grpc.StatusCode.UNAVAILABLE)])
    before = client._routing.version
    with log.tail(0) as tail:
        assert [tail.next(timeout=10) for _ in range(2)] == [(0, b"a"), (1, b"b")]
        assert tail.reconnects == 1
    assert len(spy.calls) == 2
    versions = [request.map_version for _, request in spy.calls]
    assert all(0 < before <= v <= client._routing.version for v in versions), (before, versions)


def test_a_tail_checks_its_start_once(client, log, monkeypatch):
    """One linearizable read of the bounds before the first stream, none
    when the stream is reopened; out of range at once, without a stream."""
    for i in range(4):
        log.append(b"%d" % i)
    log.trim(2)
    spy = _TailSpy(client, monkeypatch, [_FakeTailCall([_entries(log.name, 2, [b"2"])], grpc.StatusCode.UNAVAILABLE)])
    reads = []
    real_bounds = amulet.DLog.bounds
    monkeypatch.setattr(amulet.DLog, "bounds", lambda self: reads.append(self.name) or real_bounds(self))
    for from_ in (1, 5):
        started = time.monotonic()
        with pytest.raises(amulet.OutOfRange) as e:
            log.tail(from_).next(timeout=10)
        assert time.monotonic() - started < 5
        message = e.value.args[0]
        assert log.name in message and f" {from_}," in message and "2..=4" in message, message
    assert spy.calls == [] and len(reads) == 2
    with log.tail(2) as tail:
        assert [tail.next(timeout=10) for _ in range(2)] == [(2, b"2"), (3, b"3")]
        assert tail.reconnects == 1
    assert len(spy.calls) == 2 and len(reads) == 3


def test_tails_opened_right_after_the_log_is_created(client, fresh_map_name):
    """Whichever replica each opens at, and however far behind it is."""
    tails = []
    try:
        for i in range(30):
            log = client.create_log(f"{fresh_map_name}-{i}")
            tails.append(log.tail(0))
            with pytest.raises(TimeoutError):
                tails[-1].next(timeout=0.05)  # opens the stream
        for i, tail in enumerate(tails):
            tail.log.append(b"%d" % i)
        for i, tail in enumerate(tails):
            assert tail.next(timeout=10) == (0, b"%d" % i)
    finally:
        for tail in tails:
            tail.close()


def test_a_message_at_the_wrong_position_is_a_protocol_error(client, log, monkeypatch):
    log.append(b"a")
    _TailSpy(client, monkeypatch, [_FakeTailCall([_entries(log.name, 1, [b"b"])], grpc.StatusCode.UNAVAILABLE)])
    with log.tail(0) as tail:
        with pytest.raises(amulet.ProtocolError):
            tail.next(timeout=10)
        assert tail.position == 0
        # The next call opens a new stream, from where the tail was.
        assert tail.next(timeout=10) == (0, b"a")


def test_a_tail_below_a_trim_is_out_of_range(log):
    for i in range(5):
        log.append(b"%d" % i)
    log.trim(3)
    with pytest.raises(amulet.OutOfRange):
        log.tail(1).next(timeout=10)
    with log.tail(3) as tail:
        assert tail.next(timeout=10) == (3, b"3")
    with pytest.raises(amulet.OutOfRange):
        log.tail(6).next(timeout=10)  # past the end
    assert log.tail(5).position == 5  # at the end: waits for the next append


def test_a_tail_of_an_unknown_or_dropped_log_is_not_found(client, fresh_map_name):
    with pytest.raises(amulet.NotFound):
        client.log(fresh_map_name + "-none").tail(0).next(timeout=10)
    log = client.create_log(fresh_map_name)
    log.append(b"a")
    with log.tail(0) as tail:
        assert tail.next(timeout=10) == (0, b"a")
        client.drop_log(fresh_map_name)
        with pytest.raises(amulet.NotFound):
            tail.next(timeout=20)


def test_a_tail_reads_in_pages(log):
    values = [b"%04d" % i for i in range(2500)]
    # Several multi-appends: fewer requests than 2,500 appends.
    for start in range(0, len(values), 500):
        log.client.multi_append([(log.name, v) for v in values[start : start + 500]])
    with log.tail(0) as tail:
        got = [tail.next(timeout=10) for _ in range(len(values))]
    assert got == list(enumerate(values))


def test_a_slow_tail_holds_a_bounded_part_of_the_log(log):
    """32 MiB of entries, 4 MiB a message: a consumer that does not keep
    up holds at most TAIL_QUEUE_MESSAGES messages besides the one it hands
    out, and gets everything in order when it reads on."""
    value = b"x" * 8192
    count = 4096
    per_message = 4 * 1024 * 1024 // len(value)
    for start in range(0, count, 256):
        log.client.multi_append([(log.name, value + b"%d" % i) for i in range(start, start + 256)])
    with log.tail(0) as tail:
        assert tail.next(timeout=10) == (0, value + b"0")
        assert _wait_for(lambda: tail._stream.queued() == log_module.TAIL_QUEUE_MESSAGES)
        time.sleep(0.5)  # the reader would have taken more by now
        assert tail._stream.queued() == log_module.TAIL_QUEUE_MESSAGES
        held = len(tail._buffered) + sum(len(m.entries) for m in tail._stream._items)
        assert held <= (log_module.TAIL_QUEUE_MESSAGES + 1) * per_message < count
        for i in range(1, count):
            assert tail.next(timeout=10) == (i, value + b"%d" % i)


def test_a_closed_tail_ends_its_stream_and_thread(log):
    log.append(b"a")
    with log.tail(0) as tail:
        assert tail.next(timeout=10) == (0, b"a")
        stream = tail._stream
        assert stream.thread.is_alive()
    stream.thread.join(timeout=10)
    assert not stream.thread.is_alive()
    assert tail.closed and tail.position == 1
    with pytest.raises(amulet.AmuletError):
        tail.next(timeout=1)
    assert list(tail) == []  # iteration stops
    tail.close()  # again: nothing


def test_closing_a_tail_wakes_a_reader_in_another_thread(log):
    tail = log.tail(0)
    seen, ended = [], threading.Event()

    def reader():
        for entry in tail:  # blocks: nothing is appended after the first
            seen.append(entry)
        ended.set()

    thread = threading.Thread(target=reader, daemon=True)
    thread.start()
    log.append(b"a")
    assert _wait_for(lambda: seen == [(0, b"a")])
    time.sleep(0.3)
    tail.close()
    assert ended.wait(timeout=10)
    thread.join(timeout=10)
    assert _wait_for(lambda: not _tail_threads(log.name))


def test_an_abandoned_tail_cancels_its_stream(log):
    log.append(b"a")
    tail = log.tail(0)
    assert tail.next(timeout=10) == (0, b"a")
    call, thread = tail._stream.call, tail._stream.thread
    del tail
    gc.collect()
    thread.join(timeout=10)
    assert not thread.is_alive()
    assert call.code() == grpc.StatusCode.CANCELLED
