"""Eventual maps without an amulet binary: ``Context``, the requests the
client builds, and how ``Client._eventual`` picks nodes, resends and maps
errors, against in-process fake nodes on 127.0.0.1 (tests/fake_nodes.py).
The live behaviour is tests/test_eventual.py and the eventual scenarios of
tests/test_conformance.py."""

from __future__ import annotations

import copy
import pickle
import sys
import time
from pathlib import Path

import grpc
import pytest

import amulet
from amulet import eventual
from amulet.v1 import amulet_pb2 as pb

sys.path.insert(0, str(Path(__file__).resolve().parent))

from fake_nodes import FakeCluster  # noqa: E402

UNAVAILABLE = grpc.StatusCode.UNAVAILABLE
NOT_READY = (UNAVAILABLE, "the node is not ready", ())


# ---- Context and requests (no server at all) ------------------------------


@pytest.mark.parametrize("data", [b"", b"\x00", b"\x01\x02\xff", bytes(range(256)) * 5])
def test_context_round_trips_through_bytes_and_hex(data):
    ctx = amulet.Context.from_bytes(data)
    assert bytes(ctx) == data
    assert ctx.hex() == data.hex() == str(ctx)
    assert amulet.Context.from_hex(ctx.hex()) == ctx
    assert amulet.Context.from_bytes(bytes(ctx)) == ctx
    assert pickle.loads(pickle.dumps(ctx)) == ctx
    assert copy.deepcopy(ctx) == ctx
    assert len(ctx) == len(data)
    assert bool(ctx) == bool(data)
    assert hash(ctx) == hash(amulet.Context(bytearray(data)))


def test_context_is_an_immutable_opaque_value():
    ctx = amulet.Context(b"\x01\x02")
    assert repr(ctx) == "Context('0102')"
    long = amulet.Context(b"\xab" * 100)
    assert repr(long) == f"Context('{'ab' * 32}...(100 bytes)')"
    assert amulet.Context() == amulet.Context(b"") and not amulet.Context()
    assert ctx != amulet.Context(b"\x01") and ctx != b"\x01\x02"
    assert len({ctx, amulet.Context(b"\x01\x02"), amulet.Context()}) == 2
    with pytest.raises(AttributeError):
        ctx._data = b""
    with pytest.raises(AttributeError):
        ctx.other = 1
    with pytest.raises(TypeError):
        amulet.Context("0102")
    with pytest.raises(ValueError):
        amulet.Context.from_hex("zz")


def test_requests_carry_what_was_given():
    ctx = amulet.Context(b"\x07")
    assert eventual.get_request("m", b"k") == pb.EventualGetRequest(map="m", key=b"k", r=0)
    assert eventual.get_request("m", bytearray(b""), 3) == pb.EventualGetRequest(map="m", key=b"", r=3)
    assert eventual.put_request("m", b"k", b"v", ctx, 2) == pb.EventualPutRequest(
        map="m", key=b"k", value=b"v", context=b"\x07", w=2
    )
    # A Versioned stands for its context; None is the empty context.
    read = amulet.Versioned(values=[b"a"], context=ctx)
    assert eventual.put_request("m", b"k", b"", read).context == b"\x07"
    assert eventual.put_request("m", b"k", b"").context == b""
    assert eventual.delete_request("m", b"k", ctx, 1) == pb.EventualDeleteRequest(
        map="m", key=b"k", context=b"\x07", w=1
    )
    assert eventual.delete_request("m", b"k") == pb.EventualDeleteRequest(map="m", key=b"k")
    assert eventual.get_request("m", b"k", 2**32 - 1).r == 2**32 - 1


@pytest.mark.parametrize(
    "build, error",
    [
        (lambda: eventual.get_request("m", "k"), TypeError),
        (lambda: eventual.get_request("m", b"k", -1), amulet.InvalidArgument),
        (lambda: eventual.get_request("m", b"k", 2**32), amulet.InvalidArgument),
        (lambda: eventual.get_request("m", b"k", "1"), TypeError),
        (lambda: eventual.get_request("m", b"k", True), TypeError),
        (lambda: eventual.get_request("m", b"k", 1.0), TypeError),
        (lambda: eventual.put_request("m", b"k", "v"), TypeError),
        (lambda: eventual.put_request("m", b"k", None), TypeError),
        (lambda: eventual.put_request("m", b"k", b"v", b"\x01"), TypeError),
        (lambda: eventual.put_request("m", b"k", b"v", "01"), TypeError),
        (lambda: eventual.put_request("m", b"k", b"v", None, -1), amulet.InvalidArgument),
        (lambda: eventual.delete_request("m", 1), TypeError),
        (lambda: eventual.delete_request("m", b"k", [b"\x01"]), TypeError),
    ],
)
def test_bad_arguments_are_refused_before_sending(build, error):
    with pytest.raises(error):
        build()


def test_versioned_is_a_frozen_value():
    a = amulet.Versioned.from_pb(pb.Versioned(values=[b"x", b""], context=b"\x01"))
    assert a == amulet.Versioned([b"x", b""], amulet.Context(b"\x01"))
    assert isinstance(a.values, list) and all(type(v) is bytes for v in a.values)
    with pytest.raises(AttributeError):
        a.values = []


# ---- the client against fake nodes ----------------------------------------


@pytest.fixture
def fake_with_dead_node():
    cluster = FakeCluster(dead=True).start()
    try:
        yield cluster
    finally:
        cluster.stop()


def connect(cluster, **options) -> amulet.Client:
    options.setdefault("attempt_timeout", 2.0)
    options.setdefault("operation_timeout", 5.0)
    return amulet.Client(cluster.addresses, **options)


def eventual_calls(cluster) -> list[tuple[str, str, bool]]:
    """(address, method, applied) of every eventual request, in order."""
    return list(cluster.calls)


def test_siblings_contexts_and_update(fake):
    with connect(fake) as client:
        carts = client.eventual_map("carts")
        assert repr(carts) == "EventualMap('carts')"
        assert carts.get(b"alice") == amulet.Versioned([], amulet.Context())
        first = carts.put(b"alice", b"book")
        assert first.values == [b"book"]
        second = carts.put(b"alice", b"pen")  # no context: a sibling
        assert second.values == [b"book", b"pen"]
        seen = carts.get(b"alice", r=3)
        assert seen.values == [b"book", b"pen"] and seen.context
        # A context kept as bytes works as well as the object.
        merged = carts.put(b"alice", b"book+pen", amulet.Context.from_bytes(bytes(seen.context)), w=2)
        assert merged.values == [b"book+pen"]
        # update: read, fn(values), write with the read's context.
        got = []
        after = carts.update(b"alice", lambda values: got.append(values) or b"|".join(values) + b"+cup", r=1, w=3)
        assert got == [[b"book+pen"]] and after.values == [b"book+pen+cup"]
        # fn returning None deletes what it saw.
        assert carts.update(b"alice", lambda values: None).values == []
        assert carts.get(b"alice").values == []
        # A delete with a stale context keeps the value written since.
        carts.put(b"bob", b"a")
        stale = carts.get(b"bob")
        carts.put(b"bob", b"b")
        assert carts.delete(b"bob", stale).values == [b"b"]
        assert carts.delete(b"bob").values == [b"b"]  # no context: removes nothing
    requests = [request for node in fake.nodes for _, request, _ in node.calls]
    puts = [r for r in requests if isinstance(r, pb.EventualPutRequest)]
    assert [(r.key, r.value, r.w) for r in puts[:3]] == [(b"alice", b"book", 0), (b"alice", b"pen", 0), (b"alice", b"book+pen", 2)]
    assert puts[2].context == bytes(seen.context)
    gets = [r for r in requests if isinstance(r, pb.EventualGetRequest)]
    assert [r.r for r in gets[:3]] == [0, 3, 1]


def test_update_that_raises_writes_nothing(fake):
    with connect(fake) as client:
        carts = client.eventual_map("carts")
        carts.put(b"k", b"v")

        def fails(values):
            raise RuntimeError("no")

        with pytest.raises(RuntimeError):
            carts.update(b"k", fails)
    assert [m for _, m, _ in eventual_calls(fake)] == ["EventualPut", "EventualGet"]


def test_requests_stay_on_the_current_node(fake):
    with connect(fake) as client:
        carts = client.eventual_map("carts")
        for i in range(10):
            carts.put(b"k%d" % i, b"v")
            carts.get(b"k%d" % i)
    used = {address for address, _, _ in eventual_calls(fake)}
    assert len(used) == 1


def test_a_read_goes_to_another_node_when_its_node_is_down(fake_with_dead_node):
    fake = fake_with_dead_node
    with connect(fake) as client:
        client._eventual_node = fake.dead
        carts = client.eventual_map("carts")
        assert carts.get(b"k").values == []
        # The node that answered is the current node now.
        assert client._eventual_node in fake.addresses
        current = client._eventual_node
        carts.get(b"k")
    assert {a for a, _, _ in eventual_calls(fake)} == {current}


@pytest.mark.parametrize("method", ["put", "delete"])
def test_a_write_goes_to_another_node_only_when_the_node_did_not_take_it(fake_with_dead_node, method):
    fake = fake_with_dead_node
    with connect(fake) as client:
        carts = client.eventual_map("carts")
        # Refused connection: not taken.
        client._eventual_node = fake.dead
        call = (lambda: carts.put(b"k", b"v")) if method == "put" else (lambda: carts.delete(b"k"))
        call()
        first = client._eventual_node
        assert first in fake.addresses
        # UNAVAILABLE without a reason (stopping, not ready): not taken.
        fake.node(first).failures.append(NOT_READY)
        call()
        second = client._eventual_node
        assert second != first
    calls = eventual_calls(fake)
    assert calls == [
        (first, f"Eventual{method.capitalize()}", True),
        (first, f"Eventual{method.capitalize()}", False),
        (second, f"Eventual{method.capitalize()}", True),
    ]


@pytest.mark.parametrize("where", ["amulet-reason", "amulet-error"])
@pytest.mark.parametrize("method", ["get", "put", "delete"])
def test_quorum_not_reached_is_raised_and_not_sent_again(fake, where, method):
    with connect(fake) as client:
        carts = client.eventual_map("carts")
        carts.get(b"k")
        node = fake.node(client._eventual_node)
        node.failures.append((UNAVAILABLE, "1 of 3 replicas answered", ((where, "quorum-not-reached"),)))
        call = {"get": lambda: carts.get(b"k", r=3), "put": lambda: carts.put(b"k", b"v", w=3), "delete": lambda: carts.delete(b"k", w=3)}[method]
        with pytest.raises(amulet.QuorumNotReached) as e:
            call()
        assert isinstance(e.value, amulet.Unavailable)
        assert e.value.code == UNAVAILABLE
        assert "1 of 3 replicas answered" in str(e.value)
    assert len(eventual_calls(fake)) == 2


def test_a_write_without_an_answer_is_outcome_unknown_and_a_read_is_resent(fake, monkeypatch):
    monkeypatch.setattr(eventual, "EVENTUAL_QUORUM_WAIT", 0.0)
    with connect(fake, attempt_timeout=0.3) as client:
        carts = client.eventual_map("carts")
        carts.get(b"k")
        current = client._eventual_node
        fake.node(current).failures.append(1.0)
        with pytest.raises(amulet.OutcomeUnknown):
            carts.put(b"k", b"v")
        assert [a for a, m, _ in eventual_calls(fake) if m == "EventualPut"] == [current]
        # The node that did not answer is current no more.
        assert client._eventual_node is None
        time.sleep(1.0)  # the put takes effect at the fake node
        # A read with no answer is read again elsewhere.
        client._eventual_node = current
        fake.node(current).failures.append(1.0)
        assert carts.get(b"k").values == [b"v"]
        assert client._eventual_node != current
    assert [(a == current, m) for a, m, _ in eventual_calls(fake)] == [
        (True, "EventualGet"),
        (True, "EventualPut"),
        (True, "EventualGet"),
        (False, "EventualGet"),
    ]


@pytest.mark.parametrize(
    "failure, error",
    [
        ((grpc.StatusCode.INVALID_ARGUMENT, "bad", (("amulet-reason", "bad-context"),)), amulet.InvalidArgument),
        ((grpc.StatusCode.INVALID_ARGUMENT, "r 4 > 3", (("amulet-reason", "quorum-out-of-bounds"),)), amulet.InvalidArgument),
        ((grpc.StatusCode.FAILED_PRECONDITION, "ordered", (("amulet-reason", "not-eventual"),)), amulet.FailedPrecondition),
        ((grpc.StatusCode.RESOURCE_EXHAUSTED, "full", ()), amulet.ResourceExhausted),
        ((grpc.StatusCode.UNIMPLEMENTED, "no", ()), amulet.ProtocolError),
    ],
)
def test_refusals_are_final(fake, failure, error):
    with connect(fake) as client:
        carts = client.eventual_map("carts")
        carts.get(b"k")
        fake.node(client._eventual_node).failures.append(failure)
        with pytest.raises(error) as e:
            carts.put(b"k", b"v", w=2)
        assert e.value.code == failure[0]
    assert [applied for _, _, applied in eventual_calls(fake)] == [True, False]


def test_a_bad_context_from_the_node(fake):
    with connect(fake) as client:
        with pytest.raises(amulet.InvalidArgument):
            client.eventual_map("carts").put(b"k", b"v", amulet.Context(b"\xff\x00"))


def test_an_unknown_map_is_not_found_at_once(fake):
    with connect(fake) as client:
        with pytest.raises(amulet.NotFound):
            client.eventual_map("nope").get(b"k")
    assert len(eventual_calls(fake)) == 1


def test_not_found_from_a_node_behind_the_map_is_sent_again(fake):
    with connect(fake) as client:
        carts = client.eventual_map("carts")
        carts.get(b"k")
        current = client._eventual_node
        # A node that has not executed the map's creation yet.
        fake.node(current).failures.append((grpc.StatusCode.NOT_FOUND, "no map named 'carts'", ()))
        assert carts.put(b"k", b"v").values == [b"v"]
        assert client._eventual_node != current
    assert [applied for _, _, applied in eventual_calls(fake)] == [True, False, True]


def test_not_found_persisting_while_the_map_is_known_ends_in_not_found(fake):
    with connect(fake, operation_timeout=0.5) as client:
        carts = client.eventual_map("carts")
        for node in fake.nodes:
            node.failures.extend([(grpc.StatusCode.NOT_FOUND, "no map named 'carts'", ())] * 100)
        with pytest.raises(amulet.NotFound):
            carts.get(b"k")
    assert len(eventual_calls(fake)) >= 3


@pytest.mark.parametrize("method", ["get", "put"])
def test_no_node_taking_the_request_ends_in_unavailable(fake, method):
    with connect(fake, operation_timeout=0.5) as client:
        carts = client.eventual_map("carts")
        for node in fake.nodes:
            node.failures.extend([NOT_READY] * 100)
        with pytest.raises(amulet.Unavailable) as e:
            carts.get(b"k") if method == "get" else carts.put(b"k", b"v")
        assert not isinstance(e.value, amulet.QuorumNotReached)
    calls = eventual_calls(fake)
    assert {a for a, _, _ in calls} == set(fake.addresses)  # every node tried
    assert not any(applied for _, _, applied in calls)


@pytest.mark.parametrize("kind", ["behind", "retryable", "stale-map", "not-a-replica"])
def test_refusals_the_client_handles_are_sent_again(fake, kind):
    with connect(fake) as client:
        carts = client.eventual_map("carts")
        carts.get(b"k")
        fake.node(client._eventual_node).failures.append(
            (grpc.StatusCode.FAILED_PRECONDITION if "map" in kind or "replica" in kind else UNAVAILABLE, kind, (("amulet-error", kind),))
        )
        assert carts.put(b"k", b"v").values == [b"v"]
    assert [applied for _, _, applied in eventual_calls(fake)] == [True, False, True]


def test_create_map_sends_an_eventual_layout(fake):
    with connect(fake) as client:
        m = client.create_map("carts2", eventual=True, replicas=2, vnodes=4)
        assert isinstance(m, amulet.EventualMap) and m.name == "carts2"
        client.create_map("carts3", eventual=True)
        sent = [r.create_map for r in fake.executed]
        assert [(c.map, c.layout) for c in sent] == [
            ("carts2", pb.Layout(eventual=pb.EventualLayout(replicas=2, vnodes=4))),
            ("carts3", pb.Layout(eventual=pb.EventualLayout(replicas=3, vnodes=0))),
        ]
        # Eventual requests go to the node that executed the creation.
        assert client._eventual_node in {node.address for node in fake.nodes if node.executed}
        assert m.put(b"k", b"v").values == [b"v"]
        got = client.create_map_if_absent("carts3", eventual=True, replicas=1)
        assert isinstance(got, amulet.EventualMap)
        # Refused before sending.
        with pytest.raises(amulet.InvalidArgument):
            client.create_map("x", eventual=True, ranges=[(b"", 1)])
        with pytest.raises(TypeError):
            client.create_map("x", replicas=3)
        with pytest.raises(TypeError):
            client.create_map("x", eventual=True, value_codec=amulet.codecs.JSON)
        with pytest.raises(amulet.InvalidArgument):
            client.create_map("x", eventual=True, replicas=-1)
        with pytest.raises(amulet.InvalidArgument):
            client.create_map("a b", eventual=True)
        assert len(fake.executed) == 3


@pytest.mark.parametrize("name", ["", "a b", "x" * 129, None])
def test_bad_map_names_are_refused_before_sending(fake, name):
    with connect(fake) as client:
        with pytest.raises(amulet.InvalidArgument):
            client.eventual_map(name)
    assert eventual_calls(fake) == []


def test_a_closed_client_sends_nothing(fake):
    client = connect(fake)
    carts = client.eventual_map("carts")
    client.close()
    with pytest.raises(amulet.AmuletError):
        carts.get(b"k")
    assert eventual_calls(fake) == []
