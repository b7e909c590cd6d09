"""Tails of a log (docs/logs.md "Tailing"): the ``TailLog`` stream from a
replica of the log's partition, resumed elsewhere without gap or duplicate,
its final and passing failures, the polling fallback, bounded buffering and
closing. Follows ``crates/amulet-client/src/log.rs`` (``Tail``)."""

from __future__ import annotations

import gc
import threading
import time

import grpc
import pytest

import amulet
from amulet import log as log_module
from amulet.suspects import Suspects
from stub_spy import wrap_stubs


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
        wrap_stubs(client, monkeypatch, TailLog=self._tail_log)

    def _tail_log(self, stub, address, request, **kwargs):
        self.calls.append((address, request))
        if callable(self.fakes):
            fake = self.fakes()
        else:
            fake = self.fakes.pop(0) if self.fakes else None
        return stub.TailLog(request, **kwargs) if fake is None else fake

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
    with amulet.Client(cluster.addresses, tls=cluster.tls) as other:
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
    # Nothing suspected at first (the session's client may still suspect
    # nodes that other tests' injected failures left unanswered: with one
    # replica left unsuspected, a reopen after a failure that suspects
    # nothing would go back to it), and no span ends during the test.
    monkeypatch.setattr(client, "_suspects", Suspects(2 * client.attempt_timeout, clock=lambda: 0.0))
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
    with amulet.Client(cluster.addresses, tls=cluster.tls, operation_timeout=2.0) as client:
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
