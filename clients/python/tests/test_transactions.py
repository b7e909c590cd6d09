"""Transactions (docs/transactions.md) against a live cluster: reads at one
read version with read-your-writes, conflicts (keys, ranges, whole maps),
atomic commits across maps and partitions, ``Client.transact`` and
``@amulet.transactional`` with their retries, concurrent bank transfers
with audits, snapshot reads while a writer goes on. Read versions shared
between transactions and the placement of commits are in
test_transaction_read_versions.py."""

from __future__ import annotations

import logging
import pickle
import random
import threading
import time

import grpc
import pytest
from sortedcontainers import SortedDict
from txn_helpers import JOIN_TIMEOUT, name, partitions, run_threads  # noqa: F401 - name is a fixture

import amulet
import amulet.transaction
from amulet import codecs


@pytest.fixture
def raw(client, name):
    return client.bytes_map(name)


# ---- the byte-level transaction ---------------------------------------------


def test_read_your_writes_and_the_commit_applies_them_all(client, raw, name):
    raw.put(b"a", b"1")
    tx = client.transaction()
    assert tx.read_version is None
    assert tx.get(name, b"a") == b"1"
    assert tx.read_version is not None
    tx.put(name, b"a", b"2")
    tx.put(name, b"b", b"3")
    tx.delete(name, b"a")
    tx.put(name, b"c", b"4")
    assert tx.get(name, b"a") is None and tx.get(name, b"b") == b"3"
    assert not tx.contains_key(name, b"a") and tx.contains_key(name, b"c")
    # Others see nothing before the commit.
    assert raw.range(None, None, 10) == ([(b"a", b"1")], False)
    tx.commit()
    assert tx.committed
    assert raw.range(None, None, 10) == ([(b"b", b"3"), (b"c", b"4")], False)


def test_a_conflict_names_the_map_and_key_and_applies_nothing(client, raw, name):
    raw.put(b"k", b"old")
    tx = client.transaction()
    assert tx.get(name, b"k") == b"old"
    raw.put(b"k", b"theirs")
    tx.put(name, b"other", b"mine")
    with pytest.raises(amulet.ConflictError) as e:
        tx.commit()
    assert e.value.map == name and e.value.key == b"k"
    assert e.value.code == grpc.StatusCode.ABORTED
    assert isinstance(e.value, amulet.AmuletError)
    assert raw.get(b"other") is None and raw.get(b"k") == b"theirs"
    copy = pickle.loads(pickle.dumps(e.value))
    assert (copy.map, copy.key, str(copy)) == (e.value.map, e.value.key, str(e.value))


def test_a_read_after_a_write_gives_up_at_once_when_doomed(client, raw, name):
    """written_since: a read that covers a key written since the read
    version raises at once when the transaction has writes; a read-only
    transaction goes on and commits.

    The read goes to a random replica past the read version; one that has
    not executed the later put yet serves the snapshot without knowing of
    it (the early answer is a "may") and the commit's validation refuses
    instead. Each attempt checks both outcomes, and one of a bounded number
    must take the early one."""
    early = 0
    attempts = 0
    for n in range(1, 21):
        attempts += 1
        tx = client.transaction()
        assert tx.get(name, b"a") is None
        raw.put(b"b", b"%d" % n)
        tx.put(name, b"c", b"x")
        try:
            seen = tx.get(name, b"b")
        except amulet.ConflictError as e:
            assert e.map == name and e.key == b"b"
            with pytest.raises(amulet.ConflictError):
                tx.commit()  # doomed: refused without sending
            early += 1
        else:
            assert seen == (None if n == 1 else b"%d" % (n - 1))
            with pytest.raises(amulet.ConflictError):
                tx.commit()  # validation at the commit's place in the order
        assert raw.get(b"c") is None
        if early:
            break
    assert early > 0, f"no read of {attempts} gave up at once"

    ro = client.transaction()
    assert ro.get(name, b"a") is None
    raw.put(b"a", b"1")
    assert ro.get(name, b"a") is None  # its snapshot, though written since
    ro.commit()


def test_phantoms_conflict_and_blind_writes_do_not(client, raw, name):
    tx = client.transaction()
    assert tx.range(name, b"m", b"n") == ([], False)
    raw.put(b"m5", b"phantom")
    tx.put(name, b"z", b"1")
    with pytest.raises(amulet.ConflictError):
        tx.commit()
    # A range read cut short by its limit covers only up to its last entry.
    raw.put_all([(b"r1", b"1"), (b"r2", b"2"), (b"r3", b"3")])
    tx = client.transaction()
    assert tx.range(name, b"r", b"s", limit=2) == ([(b"r1", b"1"), (b"r2", b"2")], True)
    raw.put(b"r3", b"changed")
    tx.put(name, b"z", b"2")
    tx.commit()
    # Blind writes (no read version) never conflict.
    blind = client.transaction()
    blind.put(name, b"z", b"3")
    raw.put(b"z", b"between")
    blind.commit()
    assert blind.read_version is None and raw.get(b"z") == b"3"


def test_a_map_dropped_and_created_again_conflicts_as_a_whole(client, raw, name):
    tx = client.transaction()
    assert tx.get(name, b"k") is None
    client.drop_map(name)
    client.create_map(name)
    tx.put(name, b"k", b"v")
    with pytest.raises(amulet.ConflictError) as e:
        tx.commit()
    assert e.value.map == name and e.value.key is None


def test_write_skew_is_prevented(client, raw, name):
    raw.put_all([(b"x", b"1"), (b"y", b"1")])
    t1, t2 = client.transaction(), client.transaction()
    for tx in (t1, t2):
        assert tx.get(name, b"x") == b"1" and tx.get(name, b"y") == b"1"
    t1.put(name, b"x", b"0")
    t2.put(name, b"y", b"0")
    t1.commit()
    with pytest.raises(amulet.ConflictError):
        t2.commit()
    assert (raw.get(b"x"), raw.get(b"y")) == (b"0", b"1")


def test_a_commit_across_maps_and_partitions_is_all_or_nothing(client, fresh_map_name):
    p = partitions(client)
    ranged, hashed = fresh_map_name + "-r", fresh_map_name + "-h"
    client.create_map(ranged, ranges=[(b"", p[0]), (b"g", p[1]), (b"p", p[2])])
    client.create_map(hashed)
    keys = [b"a", b"h", b"q"]  # one in each partition of the range map
    tx = client.transaction()
    assert tx.get(ranged, b"h") is None
    for k in keys:
        tx.put(ranged, k, b"1")
        tx.put(hashed, k, b"1")
    client.bytes_map(ranged).put(b"h", b"theirs")
    with pytest.raises(amulet.ConflictError):
        tx.commit()
    assert [client.bytes_map(ranged).get(k) for k in keys] == [None, b"theirs", None]
    assert client.bytes_map(hashed).size() == 0

    def write_all(tx):
        assert tx.get(ranged, b"h") == b"theirs"
        for k in keys:
            tx.put(ranged, k, b"2")
            tx.put(hashed, k, b"2")

    client.transact(write_all)
    assert [client.bytes_map(ranged).get(k) for k in keys] == [b"2"] * 3
    assert sorted(client.bytes_map(hashed).range(None, None, 10)[0]) == [(k, b"2") for k in keys]


def _model_range(model, lower, upper, limit, reverse):
    keys = [k for k in model if (lower is None or k > lower[0] or (k == lower[0] and lower[1]))
            and (upper is None or k < upper[0] or (k == upper[0] and upper[1]))]
    if reverse:
        keys.reverse()
    return [(k, model[k]) for k in keys[:limit]], len(keys) > limit


@pytest.mark.parametrize("layout", ["hash", "range"])
@pytest.mark.parametrize("capped", [False, True], ids=["asks-more", "capped"])
def test_range_reads_overlay_the_transactions_writes(client, fresh_map_name, monkeypatch, layout, capped):
    """Random range reads of a transaction with buffered puts and deletes,
    checked against a model; "capped" makes the make-up for removals small
    so that a read needs several requests."""
    if capped:
        monkeypatch.setattr(amulet.transaction, "RANGE_ENTRIES_MAX", 2)
    p = partitions(client)
    ranges = [(b"", p[0]), (b"h", p[1]), (b"q", p[2])] if layout == "range" else None
    client.create_map(fresh_map_name, ranges=ranges)
    raw = client.bytes_map(fresh_map_name)
    rng = random.Random(f"{layout}-{capped}")
    alphabet = [bytes([c]) for c in b"abcdhijqrsz"]
    universe = sorted({a + b for a in alphabet for b in [b""] + alphabet})
    base = {k: b"base" for k in rng.sample(universe, 40)}
    raw.put_all(base.items())
    model = SortedDict(base)
    tx = client.transaction()
    for key in rng.sample(universe, 30):
        if rng.random() < 0.6:
            tx.delete(fresh_map_name, key)
            model.pop(key, None)
        else:
            tx.put(fresh_map_name, key, b"mine")
            model[key] = b"mine"
    for _ in range(40):
        lower = None if rng.random() < 0.3 else (rng.choice(universe), rng.random() < 0.5)
        upper = None if rng.random() < 0.3 else (rng.choice(universe), rng.random() < 0.5)
        if lower and upper and lower[0] > upper[0]:
            lower, upper = upper, lower
        limit, reverse = rng.randint(1, 8), rng.random() < 0.5
        got_entries, got_more = tx.range(
            fresh_map_name,
            None if lower is None else lower[0],
            None if upper is None else upper[0],
            start_inclusive=lower is None or lower[1],
            stop_inclusive=upper is None or upper[1],
            limit=limit,
            reverse=reverse,
        )
        entries, more = _model_range(model, lower, upper, limit, reverse)
        assert got_entries == entries, (lower, upper, limit, reverse)
        if capped:
            # May say "more" when everything beyond was removed here.
            assert got_more or not more
        else:
            assert got_more == more, (lower, upper, limit, reverse)
    # Neighbours, first and last see the writes too.
    assert tx.first_entry(fresh_map_name) == (model.peekitem(0) if model else None)
    assert tx.last_entry(fresh_map_name) == (model.peekitem(-1) if model else None)
    for key in rng.sample(universe, 10):
        floor = [k for k in model.irange(maximum=key)]
        higher = [k for k in model.irange(minimum=key, inclusive=(False, True))]
        assert tx.nearest_entry(fresh_map_name, key, "floor") == ((floor[-1], model[floor[-1]]) if floor else None)
        assert tx.nearest_entry(fresh_map_name, key, "higher") == ((higher[0], model[higher[0]]) if higher else None)
    tx.commit()
    assert raw.range(None, None, 1000) == (list(model.items()), False)


def test_bad_input(client, raw, name):
    tx = client.transaction()
    with pytest.raises(amulet.NotFound):
        tx.get(name + "-nope", b"k")
    with pytest.raises(amulet.InvalidArgument):
        tx.get("bad name", b"k")
    with pytest.raises(amulet.InvalidArgument):
        tx.range(name, limit=0)
    with pytest.raises(amulet.InvalidArgument):
        tx.range(name, b"b", b"a")
    with pytest.raises(TypeError):
        tx.put(name, "str key", b"v")
    with pytest.raises(ValueError):
        tx.nearest_entry(name, b"k", "nearest")
    tx.abandon()
    # Writes are checked at the commit, which then applies nothing.
    for bad, error in [("bad name", amulet.InvalidArgument), (name + "-nope", amulet.NotFound)]:
        tx = client.transaction()
        tx.put(name, b"k", b"v")
        tx.put(bad, b"k", b"v")
        with pytest.raises(error):
            tx.commit()
    tx = client.transaction()
    tx.put(name, b"k", b"v" * (1024 * 1024 + 1))
    with pytest.raises(amulet.InvalidArgument):
        tx.commit()
    assert raw.size() == 0


def test_a_finished_transaction_refuses_more_and_a_with_block_abandons(client, raw, name):
    tx = client.transaction()
    tx.put(name, b"k", b"v")
    tx.commit()
    for call in [tx.commit, lambda: tx.get(name, b"k"), lambda: tx.put(name, b"k", b"w")]:
        with pytest.raises(amulet.InvalidArgument):
            call()
    tx.abandon()  # a no-op once committed
    assert tx.committed
    with client.transaction() as tx:
        assert tx.get(name, b"k") == b"v"
        tx.put(name, b"k", b"lost")
    assert tx.finished and not tx.committed
    assert raw.get(b"k") == b"v"
    assert tx.read_version not in client._read_versions.in_use()


def test_read_version_too_old(cluster, fresh_map_name, caplog):
    with amulet.Client(cluster.addresses, tls=cluster.tls, transaction_lease=0.3) as short:
        short.create_map(fresh_map_name)
        tx = short.transaction()
        assert tx.get(fresh_map_name, b"k") is None
        time.sleep(1.0)
        tx.put(fresh_map_name, b"k", b"v")
        with pytest.raises(amulet.ReadVersionTooOldError) as e:
            tx.commit()
        assert e.value.code == grpc.StatusCode.ABORTED

        calls = []

        def slow_first_time(tx):
            calls.append(1)
            value = tx.get(fresh_map_name, b"k")
            if len(calls) == 1:
                time.sleep(1.0)
            tx.put(fresh_map_name, b"k", b"v")
            return value

        with caplog.at_level(logging.DEBUG, logger="amulet.transaction"):
            assert short.transact(slow_first_time) is None
        assert len(calls) == 2
        assert "ReadVersionTooOldError" in caplog.text
        assert short.bytes_map(fresh_map_name).get(b"k") == b"v"


@pytest.mark.xfail(
    strict=True,
    raises=amulet.NotFound,
    reason="server: ReadAt of a map dropped since the read version answers not-a-replica "
    "(the partition map no longer knows it) instead of reading the version's snapshot",
)
def test_a_read_only_transaction_reads_a_map_dropped_after_its_read_version(client, raw, name):
    raw.put(b"k", b"v")
    tx = client.transaction()
    assert tx.get(name, b"k") == b"v"
    client.drop_map(name)
    try:
        assert tx.get(name, b"other") is None
        assert tx.range(name) == ([(b"k", b"v")], False)
    finally:
        tx.abandon()


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


def _failing_read_at(client, monkeypatch, failure):
    """Makes the first ReadAt fail with ``failure``; returns the list of
    (address, read version) of every ReadAt sent."""
    sent = []
    real_stub = client._stub
    script = [failure]

    class Stub:
        def __init__(self, address):
            self.address = address

        def __getattr__(self, method):
            return getattr(real_stub(self.address), method)

        def ReadAt(self, request, timeout=None):
            sent.append((self.address, request.read_version))
            if script:
                raise script.pop(0)
            return real_stub(self.address).ReadAt(request, timeout=timeout)

    monkeypatch.setattr(client, "_stub", lambda address: Stub(address))
    return sent


def test_a_read_is_resent_elsewhere_when_a_replica_holds_no_snapshot(client, raw, name, monkeypatch):
    """UNAVAILABLE read-version-elsewhere (a replica restored since the read
    version): the read goes to another replica at the same read version."""
    raw.put(b"k", b"v")
    sent = _failing_read_at(client, monkeypatch, _FakeFailure(grpc.StatusCode.UNAVAILABLE, "read-version-elsewhere"))
    tx = client.transaction()
    assert tx.get(name, b"k") == b"v"
    assert len(sent) == 2 and sent[0][0] != sent[1][0] and sent[0][1] == sent[1][1] == tx.read_version
    tx.commit()


def test_a_read_at_an_ended_read_version_is_final(client, raw, name, monkeypatch):
    sent = _failing_read_at(client, monkeypatch, _FakeFailure(grpc.StatusCode.ABORTED, "read-version-too-old"))
    tx = client.transaction()
    with pytest.raises(amulet.ReadVersionTooOldError):
        tx.get(name, b"k")
    assert len(sent) == 1
    tx.abandon()


# ---- the typed view -----------------------------------------------------------


def test_the_typed_view_of_a_transaction(cluster, fresh_map_name):
    # Small pages, so iteration reads several ranges.
    with amulet.Client(cluster.addresses, tls=cluster.tls, range_entries=3) as small:
        typed = small.create_map(fresh_map_name, value_codec=codecs.JSON)
        typed.update({i: {"n": i} for i in range(10)})
        typed["s"] = "str"
        tx = small.transaction()
        m = tx.map(fresh_map_name, value_codec=codecs.JSON)
        assert m[3] == {"n": 3} and m.get(42) is None and m.get(42, "d") == "d"
        assert 3 in m and 42 not in m and {} not in m
        with pytest.raises(KeyError):
            m[42]
        with pytest.raises(KeyError):
            del m[42]
        m[42] = [1, 2]
        del m[0]
        m.delete(1)
        m.delete(999)  # blind: absent is fine
        m["s"] = "changed"
        expected = {i: {"n": i} for i in range(2, 10)} | {42: [1, 2], "s": "changed"}
        assert dict(m.items()) == expected and len(m) == len(expected)
        # Strings sort before ints in the tuple layer.
        assert list(m) == ["s", *range(2, 10), 42] and list(m.keys()) == list(m)
        assert list(m.values())[0] == "changed"
        assert m == expected
        assert list(m.irange(3, 6)) == [3, 4, 5, 6]
        assert list(m.irange(3, 6, inclusive=(False, False), reverse=True)) == [5, 4]
        assert list(m.items_between(2, None, limit=4)) == [(i, {"n": i}) for i in range(2, 6)]
        assert m.first_item() == ("s", "changed") and m.last_item() == (42, [1, 2])
        assert m.floor_item(1) == ("s", "changed") and m.ceiling_item(1) == (2, {"n": 2})
        assert m.floor_item("a") is None
        assert m.higher_item(9) == (42, [1, 2]) and m.lower_item(2) == ("s", "changed")
        assert m.pop(42) == [1, 2] and m.setdefault(7, "x") == {"n": 7}
        m.update({100: 1, 101: 2})
        assert typed.get(100) is None and 0 in typed  # nothing applied yet
        tx.commit()
        assert dict(typed.items()) == {i: {"n": i} for i in range(2, 10)} | {"s": "changed", 100: 1, 101: 2}

        def clear(tx):
            tx.map(fresh_map_name).clear()

        small.transact(clear)
        assert len(typed) == 0


# ---- transact and @transactional -------------------------------------------------


def test_transact_returns_commits_and_propagates_other_errors(client, raw, name):
    def put_and_report(tx, key, value):
        tx.put(name, key, value)
        return "done"

    assert client.transact(put_and_report, b"k", value=b"v") == "done"
    assert raw.get(b"k") == b"v"

    calls = []

    def fails(tx):
        calls.append(1)
        tx.put(name, b"k", b"never")
        raise ValueError("mine")

    with pytest.raises(ValueError, match="mine"):
        client.transact(fails)
    assert len(calls) == 1 and raw.get(b"k") == b"v"

    def unknown_map(tx):
        calls.append(1)
        return tx.get(name + "-nope", b"k")

    with pytest.raises(amulet.NotFound):
        client.transact(unknown_map)
    assert len(calls) == 2

    def gives_up(tx):
        tx.put(name, b"k", b"abandoned")
        tx.abandon()
        return 7

    assert client.transact(gives_up) == 7 and raw.get(b"k") == b"v"


def test_transact_gives_up_after_the_operation_timeout(cluster, fresh_map_name, caplog):
    with amulet.Client(cluster.addresses, tls=cluster.tls, operation_timeout=1.0) as impatient:
        impatient.create_map(fresh_map_name)
        raw = impatient.bytes_map(fresh_map_name)
        calls = []

        def always_conflicts(tx):
            calls.append(1)
            tx.get(fresh_map_name, b"read")
            raw.put(b"read", b"%d" % len(calls))  # someone else writes it
            tx.put(fresh_map_name, b"written", b"x")

        started = time.monotonic()
        with caplog.at_level(logging.DEBUG, logger="amulet.transaction"):
            with pytest.raises(amulet.ConflictError):
                impatient.transact(always_conflicts)
        took = time.monotonic() - started
        assert len(calls) > 2 and took < 1.0 + 5.0
        assert caplog.text.count("ConflictError") == len(calls) - 1
        assert raw.get(b"written") is None


@amulet.transactional
def add(tx, name, key, amount):
    """A counter increment: read, then write."""
    m = tx.map(name, value_codec=codecs.ELEMENT)
    m[key] = m.get(key, 0) + amount
    return m[key]


def test_transactional_runs_in_its_own_transaction_or_the_callers(client, name):
    counters = client.map(name, value_codec=codecs.ELEMENT)
    assert add(client, name, "a", 5) == 5 and counters["a"] == 5
    assert add.__name__ == "add" and "counter" in add.__doc__

    tx = client.transaction()
    assert add(tx, name, "a", 1) == 6
    assert add(tx, name, "b", 1) == 1
    assert counters.get("b") is None  # part of tx: not committed yet
    tx.commit()
    assert (counters["a"], counters["b"]) == (6, 1)

    @amulet.transactional
    def both(tx):
        return add(tx, name, "a", 10), add(tx, name, "b", 10)

    assert both(client) == (16, 11)

    with pytest.raises(TypeError):
        add("client", name, "a", 1)
    with pytest.raises(TypeError):
        amulet.transactional(client)


def test_transactional_increments_from_threads_lose_nothing(client, name, caplog):
    threads, each = 4, 8

    def worker():
        for _ in range(each):
            add(client, name, "n", 1)

    with caplog.at_level(logging.DEBUG, logger="amulet.transaction"):
        run_threads([worker] * threads)
    assert client.map(name, value_codec=codecs.ELEMENT)["n"] == threads * each


def test_concurrent_bank_transfers_keep_the_total(client, name, caplog):
    """Transfers between few accounts from several threads through
    transact, while read-only audits sum every account: each audit sees the
    same total (one snapshot), the transfers conflict and are run again,
    and the final balances add up."""
    accounts, initial = ["alice", "bob", "carol", "dave"], 100
    total = initial * len(accounts)
    client.map(name, value_codec=codecs.ELEMENT).update({a: initial for a in accounts})
    workers, transfers_each = 4, 10
    attempts = []
    audits = []
    stop_auditing = threading.Event()

    def transfer(tx, rng):
        attempts.append(1)
        m = tx.map(name, value_codec=codecs.ELEMENT)
        source, target = rng.sample(accounts, 2)
        amount = rng.randint(1, 30)
        balance = m[source]
        time.sleep(0.002)  # a wider window for others to commit in between
        if balance >= amount:
            m[source] = balance - amount
            m[target] = m[target] + amount

    def worker(seed):
        def run():
            rng = random.Random(seed)
            for _ in range(transfers_each):
                client.transact(transfer, rng)

        return run

    def audit(tx):
        m = tx.map(name, value_codec=codecs.ELEMENT)
        by_range = sum(v for _, v in m.items())
        by_key = sum(m[a] for a in accounts)
        assert tx.read_version is not None
        return by_range, by_key

    def auditor():
        while not stop_auditing.is_set() or len(audits) < 3:
            audits.append(client.transact(audit))

    def workers_then_stop():
        try:
            run_threads([worker(i) for i in range(workers)])
        finally:
            stop_auditing.set()

    with caplog.at_level(logging.DEBUG, logger="amulet.transaction"):
        run_threads([workers_then_stop, auditor])
    assert audits and all(a == (total, total) for a in audits), audits
    balances = client.map(name, value_codec=codecs.ELEMENT)
    assert sum(balances[a] for a in accounts) == total
    assert all(balances[a] >= 0 for a in accounts)
    assert len(attempts) > workers * transfers_each
    assert "ConflictError" in caplog.text  # at least one conflict was run again


def test_a_read_only_transaction_sees_one_snapshot_while_a_writer_goes_on(client, name):
    m = client.map(name, value_codec=codecs.ELEMENT)
    m["n"] = 0
    stop = threading.Event()
    written = []

    def writer():
        i = 0
        while not stop.is_set():
            i += 1
            m.update({"n": i, ("log", i): i})
            written.append(i)

    thread = threading.Thread(target=writer, daemon=True)
    thread.start()
    try:
        while not written:
            time.sleep(0.01)
        tx = client.transaction()
        view = tx.map(name, value_codec=codecs.ELEMENT)
        first_n, first_items = view["n"], dict(view.items())
        first_log = list(view.irange(("log", 0), ("log", 10**9)))
        assert len(first_log) == first_n and first_items["n"] == first_n
        deadline = time.monotonic() + 1.5
        rounds = 0
        while time.monotonic() < deadline or rounds < 3:
            assert view["n"] == first_n
            assert dict(view.items()) == first_items
            assert list(view.irange(("log", 0), ("log", 10**9))) == first_log
            rounds += 1
        assert m["n"] > first_n  # the writer went on meanwhile
        tx.commit()  # read-only: nothing sent, never conflicts
    finally:
        stop.set()
        thread.join(JOIN_TIMEOUT)
    assert not thread.is_alive()
