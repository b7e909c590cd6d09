"""Bad input: what the client refuses itself and what the cluster refuses,
each with its documented exception, changing nothing."""

from __future__ import annotations

import socket
import time

import grpc
import pytest

import amulet
from amulet.routing import Placement
from amulet.v1 import amulet_pb2 as pb


@pytest.fixture
def raw(client, fresh_map_name):
    client.create_map(fresh_map_name)
    return client.bytes_map(fresh_map_name)


@pytest.mark.parametrize("name", ["", "a b", "a/b", "café", "x" * 129, "tab\t", 42, None])
def test_bad_map_names_are_refused_before_sending(client, name):
    with pytest.raises(amulet.InvalidArgument):
        client.bytes_map(name)
    with pytest.raises(amulet.InvalidArgument):
        client.map(name)
    with pytest.raises(amulet.InvalidArgument):
        client.create_map(name)
    with pytest.raises(amulet.InvalidArgument):
        client.drop_map(name)


def test_invalid_argument_is_also_a_value_error(raw):
    with pytest.raises(ValueError):
        raw.put(b"k" * 16385, b"v")


def test_limits_of_keys_values_and_put_all(raw):
    raw.put(b"k" * 16384, b"")
    for call in [
        lambda: raw.put(b"k" * 16385, b"v"),
        lambda: raw.get(b"k" * 16385),
        lambda: raw.nearest_entry(b"k" * 16385, "ceiling"),
        lambda: raw.range((b"k" * 16385, True), None, 10),
        lambda: raw.put(b"k", b"v" * (1024 * 1024 + 1)),
        lambda: raw.contains_value(b"v" * (1024 * 1024 + 1)),
        lambda: raw.put_all([(b"%05d" % i, b"") for i in range(10_001)]),
        lambda: raw.put_all([(b"a", b"v" * 1024 * 1024)] * 3 + [(b"b", b"v")]),
    ]:
        with pytest.raises(amulet.InvalidArgument) as e:
            call()
        assert e.value.code is not None  # the cluster's verdict
    assert raw.size() == 1


def test_bad_ranges(raw):
    raw.put_all([(b"a", b"1"), (b"b", b"2")])
    for lower, upper, limit in [
        ((b"b", True), (b"a", True), 10),
        ((b"b", False), (b"a", True), 10),
        (None, None, 0),
        (None, None, 10_001),
    ]:
        with pytest.raises(amulet.InvalidArgument):
            raw.range(lower, upper, limit)
    assert raw.range((b"a", False), (b"a", False), 1) == ([], False)


def test_typed_misuse_raises_builtins(raw):
    with pytest.raises(TypeError):
        raw.put("str key", b"v")
    with pytest.raises(TypeError):
        raw.put(b"k", "str value")
    with pytest.raises(TypeError):
        raw.put_all([(b"k", 1)])
    with pytest.raises(ValueError):
        raw.nearest_entry(b"k", "nearest")
    assert raw.size() == 0


def test_unknown_map_and_existing_map(client, fresh_map_name):
    missing = client.bytes_map(fresh_map_name)
    for call in [
        lambda: missing.get(b"k"),
        lambda: missing.put(b"k", b"v"),
        lambda: missing.size(),
        lambda: missing.range(None, None, 10),
        lambda: missing.snapshot(),
        lambda: client.drop_map(fresh_map_name),
    ]:
        with pytest.raises(amulet.NotFound):
            call()
    client.create_map(fresh_map_name)
    with pytest.raises(amulet.AlreadyExists):
        client.create_map(fresh_map_name)


def test_bad_range_layouts(client, fresh_map_name):
    p = sorted(client.partition_map().partitions)
    for ranges in [[], [(b"a", p[0])], [(b"", p[0]), (b"m", p[1]), (b"c", p[2])], [(b"", p[0]), (b"", p[1])], [(b"", 999)]]:
        with pytest.raises(amulet.InvalidArgument):
            client.create_map(fresh_map_name, ranges=ranges)
    with pytest.raises(amulet.NotFound):
        client.bytes_map(fresh_map_name).size()


def test_bad_snapshot_lease_and_nearest_at_the_edge(client, raw):
    """Requests the typed API cannot build, sent through execute."""
    with pytest.raises(amulet.InvalidArgument):
        client.execute("open_snapshot", pb.OpenSnapshot(map=raw.name, lease_micros=0), Placement(raw.name, "all"))
    with pytest.raises(amulet.InvalidArgument):
        client.execute(
            "nearest_entry", pb.NearestEntry(map=raw.name, key=b"k", nearest=pb.NEAREST_UNSPECIFIED),
            Placement(raw.name, "all"),
        )


def test_released_snapshot_is_not_found(raw):
    raw.put(b"k", b"v")
    snapshot = raw.snapshot()
    snapshot.close()
    snapshot.close()  # once is enough; twice is harmless
    with pytest.raises(amulet.NotFound):
        list(snapshot.reread())


def test_no_seeds_and_dead_seeds():
    with pytest.raises(amulet.InvalidArgument):
        amulet.Client([])
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    # Nobody listens on `port` now: the client gives up within its deadline.
    started = time.monotonic()
    with pytest.raises(amulet.Unavailable):
        amulet.Client(f"127.0.0.1:{port}", attempt_timeout=0.3, operation_timeout=1.0)
    assert time.monotonic() - started < 10


def test_closed_client_refuses_operations(cluster, fresh_map_name):
    c = amulet.Client(cluster.addresses, tls=cluster.tls)
    c.create_map(fresh_map_name)
    c.close()
    c.close()
    with pytest.raises(amulet.AmuletError):
        c.bytes_map(fresh_map_name).get(b"k")


def test_too_many_open_snapshots_is_resource_exhausted(raw):
    """A partition holds at most snapshots_max (1,024) open snapshots; the
    next is refused with ResourceExhausted until some are released."""
    raw.put(b"k", b"v")
    held = []
    try:
        with pytest.raises(amulet.ResourceExhausted):
            for _ in range(1100):
                held.append(raw.snapshot())
        assert 0 < len(held) <= 1024
    finally:
        for snapshot in held:
            snapshot.close()
    with raw.snapshot() as snapshot:
        assert list(snapshot) == [(b"k", b"v")]


class _FakeFailure(grpc.RpcError):
    """A failed call as grpc raises it: a code, details and trailers."""

    def __init__(self, code, kind=None):
        self._code, self._kind = code, kind

    def code(self):
        return self._code

    def details(self):
        return "injected by the test"

    def trailing_metadata(self):
        return (("amulet-error", self._kind),) if self._kind else ()


def test_resends_keep_the_map_they_were_routed_by_until_it_is_called_stale(client, raw, monkeypatch):
    """DMap §III-C with repartitioning: a resend of one sequence goes by the
    map its first attempt used, even if another thread refreshed the cache
    meanwhile (under the newer map the command may belong to another stream,
    which knows nothing of an execution under the old one); only a replica
    calling that map stale moves it on to the current one."""
    import dataclasses

    first = client._routing
    newer = dataclasses.replace(first, version=first.version + 1)
    # What refresh_map fetches after "stale-map": the cluster's real map,
    # as a distinct object, so the test can tell which one an attempt used.
    refreshed = dataclasses.replace(first)
    sent = []
    real_stub = client._stub
    script = [
        # The first attempt's reply is lost; meanwhile the cache moves on.
        lambda: (setattr(client, "_routing", newer), _FakeFailure(grpc.StatusCode.UNAVAILABLE))[1],
        # The resend, still by the first map, is called stale.
        lambda: _FakeFailure(grpc.StatusCode.FAILED_PRECONDITION, "stale-map"),
    ]

    class Stub:
        def __init__(self, address):
            self.address = address

        def Execute(self, request, timeout=None):
            sent.append((self.address, request.header.map_version))
            if script:
                raise script.pop(0)()
            return real_stub(self.address).Execute(request, timeout=timeout)

    pins = []
    real_attempt = client._attempt

    def attempt(slot, op, message, placement, attempts):
        try:
            return real_attempt(slot, op, message, placement, attempts)
        finally:
            pins.append(attempts.pinned)

    monkeypatch.setattr(client, "_stub", lambda address: Stub(address))
    monkeypatch.setattr(client, "_attempt", attempt)
    monkeypatch.setattr(client, "refresh_map", lambda address=None: setattr(client, "_routing", refreshed))
    raw.put(b"pinned", b"1")
    assert [p is first for p in pins] == [True, True, False], pins
    assert pins[2] is refreshed
    assert [v for _, v in sent] == [first.version] * 3, sent
    # The resend after the lost reply went to another replica than the one
    # that failed (every partition here has three).
    assert sent[0][0] != sent[1][0]
    monkeypatch.undo()
    assert raw.get(b"pinned") == b"1"


def test_a_retryable_refusal_is_resent_with_the_same_sequence(client, raw, monkeypatch):
    """A refusal for a passing state of the cluster (ABORTED, amulet-error
    ``retryable``, e.g. another reconfiguration taking effect) changed
    nothing: the client resends the same sequence and the operation
    succeeds."""
    sent = []
    real_stub = client._stub
    script = [lambda: _FakeFailure(grpc.StatusCode.ABORTED, "retryable")]

    class Stub:
        def __init__(self, address):
            self.address = address

        def Execute(self, request, timeout=None):
            sent.append(request.header.sequence)
            if script:
                raise script.pop(0)()
            return real_stub(self.address).Execute(request, timeout=timeout)

    monkeypatch.setattr(client, "_stub", lambda address: Stub(address))
    raw.put(b"retried", b"1")
    assert len(sent) == 2 and sent[0] == sent[1], sent
    monkeypatch.undo()
    assert raw.get(b"retried") == b"1"


def test_aborted_without_the_retryable_kind_is_final(client, raw, monkeypatch):
    """Only the kind makes ABORTED retryable: without it the status is a
    final error, not resent."""
    sent = []

    class Stub:
        def __init__(self, address):
            pass

        def Execute(self, request, timeout=None):
            sent.append(request.header.sequence)
            raise _FakeFailure(grpc.StatusCode.ABORTED)

    monkeypatch.setattr(client, "_stub", lambda address: Stub(address))
    with pytest.raises(amulet.ProtocolError):
        raw.put(b"not-retried", b"1")
    assert len(sent) == 1, sent
