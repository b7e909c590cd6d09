"""AmuletMap against a live cluster: MutableMapping semantics, sorted
operations (checked against sortedcontainers.SortedDict as a model),
codecs, snapshot iteration, and exactly-once resends of putIfAbsent."""

from __future__ import annotations

import os
import random
import time
import uuid

import grpc
import pytest
from sortedcontainers import SortedDict

import amulet
import amulet._rpc
from amulet import codecs
from amulet.routing import Placement
from amulet.v1 import amulet_pb2 as pb


@pytest.fixture
def m(client, fresh_map_name):
    """A fresh map with int/str/tuple keys (ELEMENT) and str values."""
    return client.create_map(fresh_map_name, value_codec=codecs.UTF8)


# ---- MutableMapping ---------------------------------------------------------


def test_mutable_mapping_basics(m):
    assert len(m) == 0 and not m and list(m) == []
    m[3] = "three"
    m[1] = "one"
    m["x"] = "ex"
    assert m[1] == "one" and m.get(3) == "three" and m.get(2) is None and m.get(2, "d") == "d"
    assert len(m) == 3 and bool(m)
    assert 1 in m and 2 not in m and "x" in m and b"x" not in m
    # Keys of a type the codec cannot encode are simply not in the map.
    assert {} not in m
    with pytest.raises(KeyError):
        m[2]
    with pytest.raises(KeyError):
        del m[2]
    m[1] = "uno"
    assert m[1] == "uno"
    del m[1]
    assert 1 not in m and len(m) == 2
    # Strings sort before ints in the tuple layer's type order.
    assert list(m) == ["x", 3]
    assert list(m.keys()) == ["x", 3]
    assert list(m.values()) == ["ex", "three"]
    assert list(m.items()) == [("x", "ex"), (3, "three")]
    assert dict(m) == {3: "three", "x": "ex"}
    assert m == {"x": "ex", 3: "three"}
    assert "ex" in m.values() and "nope" not in m.values() and 5 not in m.values()
    assert (3, "three") in m.items() and (3, "tres") not in m.items()


def test_pop_popitem_setdefault_update_clear(m):
    with pytest.raises(KeyError):
        m.pop(1)
    assert m.pop(1, "dflt") == "dflt"
    assert m.setdefault(5, "five") == "five"
    assert m.setdefault(5, "FIVE") == "five"
    assert m[5] == "five"
    m.update({2: "two", 9: "nine"}, seven="7")
    m.update([(1, "one")])
    assert dict(m) == {1: "one", 2: "two", 5: "five", 9: "nine", "seven": "7"}
    assert m.pop(2) == "two" and 2 not in m
    # popitem removes the least key ("seven": strings sort before ints).
    assert m.popitem() == ("seven", "7")
    assert m.popitem() == (1, "one")
    assert len(m) == 2
    m.clear()
    assert len(m) == 0 and not m
    with pytest.raises(KeyError):
        m.popitem()


def test_update_chunks_past_the_put_all_limit(client, fresh_map_name):
    # 10,001 entries: one putAll of them is refused (10,000 at most), the
    # chunked update is not.
    m = client.create_map(fresh_map_name)
    items = {i: b"v" for i in range(10_001)}
    with pytest.raises(amulet.InvalidArgument):
        m.put_all(items)
    assert len(m) == 0
    m.update(items)
    assert len(m) == 10_001
    assert m.first_item() == (0, b"v") and m.last_item() == (10_000, b"v")


def test_conditional_ops(m):
    assert m.put_if_absent("k", "a") is None
    assert m.put_if_absent("k", "b") == "a"
    assert m.replace("absent", "x") is None and "absent" not in m
    assert m.replace("k", "c") == "a"
    assert not m.compare_and_set("k", "a", "d")
    assert m.compare_and_set("k", "c", "d") and m["k"] == "d"
    assert not m.remove_if_equals("k", "c")
    assert m.remove_if_equals("k", "d") and "k" not in m
    assert m.put("k", "e") is None and m.put("k", "f") == "e"
    assert m.contains_value("f") and not m.contains_value("e")


# ---- sorted operations against a model ----------------------------------------


def test_random_ops_match_a_sorted_dict(client, fresh_map_name):
    """A seeded random mix of every operation gives what SortedDict gives:
    10,000 operations (issue 6), or AMULET_DIFFERENTIAL_OPS, with the seed
    from AMULET_DIFFERENTIAL_SEED to explore others."""
    rng = random.Random(int(os.environ.get("AMULET_DIFFERENTIAL_SEED", "20261123")))
    operations = int(os.environ.get("AMULET_DIFFERENTIAL_OPS", "10000"))
    m = client.create_map(fresh_map_name, value_codec=codecs.ELEMENT)
    model = SortedDict()
    keys = list(range(-20, 20))

    def floor(k):
        i = model.bisect_right(k)
        return model.peekitem(i - 1) if i > 0 else None

    def ceiling(k):
        i = model.bisect_left(k)
        return model.peekitem(i) if i < len(model) else None

    def higher(k):
        i = model.bisect_right(k)
        return model.peekitem(i) if i < len(model) else None

    def lower(k):
        i = model.bisect_left(k)
        return model.peekitem(i - 1) if i > 0 else None

    for step in range(operations):
        k, v = rng.choice(keys), rng.randrange(1000)
        what = rng.choice(
            ["put", "put", "del", "pia", "replace", "cas", "rie", "floor", "ceiling",
             "higher", "lower", "first", "last", "range", "len", "update"]
        )
        ctx = f"step {step}: {what} {k} {v}"
        if what == "put":
            assert m.put(k, v) == model.get(k), ctx
            model[k] = v
        elif what == "del":
            assert m.pop(k, None) == model.pop(k, None), ctx
        elif what == "pia":
            assert m.put_if_absent(k, v) == model.get(k), ctx
            model.setdefault(k, v)
        elif what == "replace":
            assert m.replace(k, v) == model.get(k), ctx
            if k in model:
                model[k] = v
        elif what == "cas":
            expected = model.get(k, 0) if rng.random() < 0.5 else -1
            hit = model.get(k) == expected
            assert m.compare_and_set(k, expected, v) == hit, ctx
            if hit:
                model[k] = v
        elif what == "rie":
            expected = model.get(k, 0) if rng.random() < 0.5 else -1
            hit = model.get(k) == expected
            assert m.remove_if_equals(k, expected) == hit, ctx
            if hit:
                del model[k]
        elif what in ("floor", "ceiling", "higher", "lower"):
            want = {"floor": floor, "ceiling": ceiling, "higher": higher, "lower": lower}[what](k)
            assert getattr(m, f"{what}_item")(k) == want, ctx
            assert getattr(m, f"{what}_key")(k) == (None if want is None else want[0]), ctx
        elif what == "first":
            assert m.first_item() == (model.peekitem(0) if model else None), ctx
        elif what == "last":
            assert m.last_item() == (model.peekitem(-1) if model else None), ctx
        elif what == "range":
            lo, hi = sorted((k, rng.choice(keys)))
            inclusive = (rng.random() < 0.5, rng.random() < 0.5)
            reverse = rng.random() < 0.5
            want = [(x, model[x]) for x in model.irange(lo, hi, inclusive, reverse)]
            assert list(m.items_between(lo, hi, inclusive, reverse)) == want, ctx
            assert list(m.irange(lo, hi, inclusive, reverse)) == [x for x, _ in want], ctx
        elif what == "len":
            assert len(m) == len(model), ctx
        elif what == "update":
            batch = {rng.choice(keys): rng.randrange(1000) for _ in range(5)}
            m.update(batch)
            model.update(batch)
    assert list(m.items()) == list(model.items())


def test_range_iteration_pages(cluster, fresh_map_name):
    """items_between reads pages of range_entries; bounds, reverse and
    limit hold across page boundaries."""
    with amulet.Client(cluster.addresses, tls=cluster.tls, range_entries=7) as small:
        m = small.create_map(fresh_map_name)
        m.update({i: str(i).encode() for i in range(100)})
        assert list(m.irange()) == list(range(100))
        assert list(m.irange(10, 30)) == list(range(10, 31))
        assert list(m.irange(10, 30, (False, False))) == list(range(11, 30))
        assert list(m.irange(10, 30, reverse=True)) == list(range(30, 9, -1))
        assert list(m.irange(maximum=12, inclusive=(True, False), reverse=True)) == list(range(11, -1, -1))
        assert [k for k, _ in m.items_between(50, limit=15)] == list(range(50, 65))
        assert [k for k, _ in m.items_between(50, reverse=True, limit=15)] == list(range(99, 84, -1))
        assert list(m.irange(30, 10)) == []
        assert list(m.irange(200)) == []


def test_range_partitioned_map(client, fresh_map_name):
    ids = sorted(client.partition_map().partitions)
    ranges = [(b"", ids[0]), (codecs.ELEMENT.encode(100), ids[1]), (codecs.ELEMENT.encode(200), ids[2])]
    m = client.create_map(fresh_map_name, ranges=ranges)
    m.update({i: b"x" for i in range(0, 300, 7)})
    routing = client.partition_map()
    assert routing.partition_of(m.name, codecs.ELEMENT.encode(7)) == ids[0]
    assert routing.partition_of(m.name, codecs.ELEMENT.encode(105)) == ids[1]
    assert routing.partition_of(m.name, codecs.ELEMENT.encode(294)) == ids[2]
    assert list(m) == list(range(0, 300, 7))
    assert m.floor_key(199) == 196 and m.ceiling_key(197) == 203 and m.lower_key(203) == 196
    assert list(m.irange(95, 210)) == list(range(98, 211, 7))
    assert len(m) == len(range(0, 300, 7))


# ---- codecs ---------------------------------------------------------------------


def test_element_keys_sort_by_value(client, fresh_map_name):
    m = client.create_map(fresh_map_name)
    ints = [-(2**70), -300, -1, 0, 1, 255, 256, 2**40, 2**70]
    for i in reversed(ints):
        m[i] = b"i"
    strs = ["", "a", "a\x00", "ab", "b", "é"]
    for s in reversed(strs):
        m[s] = b"s"
    tuples = [("user", 2), ("user", 10), ("user", 10, "x")]
    for t in reversed(tuples):
        m[t] = b"t"
    u = uuid.UUID("12345678-1234-5678-1234-567812345678")
    m[u] = b"u"
    m[None] = b"n"
    m[b"\x00raw"] = b"b"
    # Tuple-layer type order: None, bytes, str, nested tuple, int, UUID.
    assert list(m) == [None, b"\x00raw", *strs, *tuples, *ints, u]
    assert m[("user", 10)] == b"t" and m[2**70] == b"i"
    # 1, 1.0 and True are three keys of three types here.
    m[1.0] = b"float"
    m[True] = b"bool"
    assert m[1] == b"i" and m[1.0] == b"float" and m[True] == b"bool"


def test_tuple_bytes_and_value_codecs(client, fresh_map_name):
    t = client.create_map(fresh_map_name, key_codec=codecs.TUPLE, value_codec=codecs.JSON)
    t[("user", 42)] = {"name": "alice", "roles": ["admin"]}
    t[("user", 7)] = [1, 2.5, None, True]
    assert list(t) == [("user", 7), ("user", 42)]
    assert t[("user", 42)] == {"name": "alice", "roles": ["admin"]}
    raw = client.bytes_map(fresh_map_name)
    # TUPLE packs at the top level: the same bytes as FoundationDB's pack.
    assert raw.get(amulet.pack(("user", 42))) == b'{"name":"alice","roles":["admin"]}'
    with pytest.raises(TypeError):
        t["not a tuple"] = 1
    with pytest.raises(TypeError):
        t[("user", 1)] = {1, 2}  # a set is not JSON
    with pytest.raises(TypeError):
        t[("user", 1)] = float("nan")

    b = client.map(fresh_map_name, key_codec=codecs.BYTES, value_codec=codecs.BYTES)
    assert b[amulet.pack(("user", 7))] == b"[1,2.5,null,true]"
    with pytest.raises(TypeError):
        b["str key"] = b"v"
    with pytest.raises(TypeError):
        b[b"k"] = "str value"
    assert "str key" not in b

    u = client.map(fresh_map_name, key_codec=codecs.BYTES, value_codec=codecs.UTF8)
    u[b"\xff"] = "héllo"
    assert raw.get(b"\xff") == "héllo".encode()
    assert u[b"\xff"] == "héllo"


def test_unencodable_key_is_a_type_error_and_sends_nothing(m):
    with pytest.raises(TypeError):
        m[{}] = "x"
    with pytest.raises(TypeError):
        m[object()]
    with pytest.raises(TypeError):
        m["k"] = b"bytes, not str"
    assert len(m) == 0


# ---- snapshots --------------------------------------------------------------------


def test_iteration_reads_one_snapshot(cluster, fresh_map_name):
    """Iteration sees the map as of its start while writers change it, holds
    at most a page per partition, and releases the snapshot at the end."""
    with amulet.Client(cluster.addresses, tls=cluster.tls, page_entries=50) as c:
        m = c.create_map(fresh_map_name)
        m.update({i: b"v%d" % i for i in range(1000)})
        seen = []
        it = iter(m.items())
        for i, (k, v) in enumerate(it):
            seen.append((k, v))
            if i == 10:
                m[5000] = b"new"
                del m[999]
                m[500] = b"changed"
        assert seen == [(i, b"v%d" % i) for i in range(1000)]
        assert m[500] == b"changed" and 999 not in m and m[5000] == b"new"

        raw = c.bytes_map(fresh_map_name)
        with raw.snapshot() as snapshot:
            peak = 0
            count = 0
            for _ in snapshot:
                count += 1
                peak = max(peak, snapshot.buffered())
            assert count == 1000
            assert peak <= 50 * len(snapshot.partitions)
            again = snapshot.reread()
            assert next(again) == (amulet.pack((0,)), b"v0")
            again.close()
        # Closed: released in the cluster.
        with pytest.raises(amulet.NotFound):
            list(snapshot.reread())


def test_abandoned_iteration_releases_its_snapshot(m):
    m.update({i: "x" for i in range(10)})
    it = m.snapshot_items()
    assert next(it) == (0, "x")
    it.close()  # generator close -> snapshot released
    assert list(m.keys()) == list(range(10))


def test_snapshot_of_a_missing_map(client, fresh_map_name):
    with pytest.raises(amulet.NotFound):
        list(client.map(fresh_map_name))


# ---- exactly once ------------------------------------------------------------------


class _LostReply(grpc.RpcError):
    """What a call whose reply was lost looks like to the client."""

    def code(self):
        return grpc.StatusCode.DEADLINE_EXCEEDED

    def details(self):
        return "reply dropped by the test"

    def trailing_metadata(self):
        return ()


def test_put_if_absent_resent_with_the_same_sequence_applies_once(client, fresh_map_name):
    """The protocol: a putIfAbsent executed, then resent with the same
    session and sequence (to another replica) after another client wrote the
    key, answers the first execution's reply and changes nothing."""
    client.create_map(fresh_map_name)
    raw = client.bytes_map(fresh_map_name)
    routing = client.partition_map()
    key = b"once"
    partition = routing.partition_of(fresh_map_name, key)
    first, second = routing.replica_addresses(partition)[:2]
    session = random.getrandbits(63) | 1
    opening = pb.OpenSessionRequest(session=session, lease_micros=60_000_000, map_version=routing.version)
    client._stub(first).OpenSession(opening, timeout=5)

    def execute(address, request):
        # The command may overtake the session's opening at its partition
        # ("session-expired": open it again) or reach a replica that has not
        # yet executed the map version ("behind"); both changed nothing.
        for _ in range(50):
            try:
                return client._stub(address).Execute(request, timeout=5)
            except grpc.RpcError as e:
                kind = amulet._rpc.error_kind(e)
                if kind == "session-expired":
                    client._stub(address).OpenSession(opening, timeout=5)
                elif kind != "behind":
                    raise
            time.sleep(0.05)
        raise AssertionError("no answer")

    request = pb.MapRequest(
        header=pb.RequestHeader(map_version=routing.version, partition=partition, session=session, sequence=1),
        put_if_absent=pb.PutIfAbsent(map=fresh_map_name, key=key, value=b"first"),
    )
    reply = execute(first, request)
    assert not reply.value.HasField("value")  # it was set
    assert raw.put(key, b"other") == b"first"
    again = execute(second, request)
    assert again == reply  # the first execution's reply, not "exists: other"
    assert raw.get(key) == b"other"
    # The next sequence executes anew.
    request.header.sequence = 2
    request.put_if_absent.value = b"third"
    assert execute(first, request).value.value == b"other"


def test_client_resends_a_lost_reply_with_the_same_sequence(client, fresh_map_name, monkeypatch):
    """The client: the first attempt executes but its reply is lost; before
    the resend another client writes the key; the resend (same session and
    sequence) gets the first execution's reply, so putIfAbsent reports that it
    set the value, exactly once."""
    client.create_map(fresh_map_name)
    raw = client.bytes_map(fresh_map_name)
    key = b"lost"
    sent = []
    real_stub = client._stub

    class Dropping:
        def __init__(self, stub):
            self.stub = stub

        def __getattr__(self, name):
            return getattr(self.stub, name)

        def Execute(self, request, timeout=None):
            reply = self.stub.Execute(request, timeout=timeout)
            if request.WhichOneof("op") != "put_if_absent":
                return reply
            sent.append((request.header.session, request.header.sequence))
            if len(sent) == 1:
                # Another writer gets in between the execution and the resend.
                with amulet.Client(client.seeds, tls=client.tls) as other:
                    assert other.bytes_map(fresh_map_name).put(key, b"other") == b"mine"
                raise _LostReply()
            return reply

    monkeypatch.setattr(client, "_stub", lambda address: Dropping(real_stub(address)))
    assert raw.put_if_absent(key, b"mine") is None
    monkeypatch.undo()
    assert len(sent) == 2 and sent[0] == sent[1]
    assert raw.get(key) == b"other"
    # The session moved on: its next operation is a new one.
    assert raw.put_if_absent(key, b"x") == b"other"


def test_threads_share_a_client(client, fresh_map_name):
    """Concurrent operations each take their own session from the pool."""
    import threading

    m = client.create_map(fresh_map_name)
    errors = []

    def writer(t):
        try:
            for i in range(30):
                m[(t, i)] = b"%d" % i
        except Exception as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=writer, args=(t,)) for t in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not errors and len(m) == 120
    assert list(m) == [(t, i) for t in range(4) for i in range(30)]


def test_drop_and_recreate(client, fresh_map_name):
    m = client.create_map(fresh_map_name)
    m["a"] = b"1"
    with pytest.raises(amulet.AlreadyExists):
        client.create_map(fresh_map_name)
    assert client.create_map_if_absent(fresh_map_name)["a"] == b"1"
    client.drop_map(fresh_map_name)
    with pytest.raises(amulet.NotFound):
        m["a"]
    with pytest.raises(amulet.NotFound):
        len(m)
    client.create_map(fresh_map_name)
    assert len(m) == 0 and "a" not in m
    # Operations route through the placement of the new keyspace.
    assert client.partition_map().partitions_for(Placement(fresh_map_name, "all"))


def test_an_expired_session_is_reopened(cluster, fresh_map_name):
    """A session idle past its lease is refused as expired once the
    replicated clock has moved on; the client opens it again and the
    operation goes through."""
    seen = []
    with amulet.Client(cluster.addresses, tls=cluster.tls, session_lease=1.0) as c:
        real = c._on_error

        def spy(error, slot, address):
            seen.append(amulet._rpc.error_kind(error))
            return real(error, slot, address)

        c._on_error = spy
        m = c.create_map(fresh_map_name)
        m["a"] = b"1"
        time.sleep(1.5)
        # Replicated time moves only with ordered commands: another
        # client's write carries it past the lease.
        with amulet.Client(cluster.addresses, tls=cluster.tls) as other:
            other.map(fresh_map_name)["x"] = b"y"
        m["b"] = b"2"
        assert dict(m) == {"a": b"1", "b": b"2", "x": b"y"}
    assert "session-expired" in seen
