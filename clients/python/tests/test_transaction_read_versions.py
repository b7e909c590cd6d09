"""Read versions shared between concurrent transactions (one begin in
flight, the others gather into the next; ended versions ride on later
begins) and the placement of commits (docs/transactions.md): mostly
without a cluster, with stand-in clients."""

from __future__ import annotations

import threading
import time

import pytest

import amulet
from amulet.read_versions import ReadVersions
from amulet.routing import Placement, Routing, UnknownMap
from amulet.v1 import amulet_pb2 as pb
from txn_helpers import JOIN_TIMEOUT, name, run_threads  # noqa: F401 - name is a fixture


# ---- read versions shared between transactions --------------------------------


class _BlockingBegins:
    """A stand-in client whose begins wait for ``release``; each answers
    the next read version."""

    def __init__(self):
        self.begins: list[list[int]] = []
        self.entered = threading.Semaphore(0)
        self.release = threading.Event()
        self.fail = False
        self._next = 100
        self._lock = threading.Lock()

    def execute(self, op, message, placement):
        assert op == "begin_transaction" and placement == Placement(None, "all")
        with self._lock:
            self.begins.append(list(message.end_read_versions))
            self._next += 1
            version = self._next
        self.entered.release()
        assert self.release.wait(JOIN_TIMEOUT)
        if self.fail:
            raise amulet.Unavailable("no begin")
        return pb.MapResponse(read_version=version)


def _wait_for_holders(versions, begin_id, count):
    deadline = time.monotonic() + JOIN_TIMEOUT
    while time.monotonic() < deadline:
        with versions._lock:
            entry = versions._holders.get(begin_id)
            if entry is not None and entry[1] == count:
                return
        time.sleep(0.005)
    raise AssertionError(f"begin {begin_id} never had {count} holders")


def test_transactions_that_start_together_share_a_read_version():
    versions, fake = ReadVersions(), _BlockingBegins()
    got = {}

    def acquire(label, started):
        def run():
            got[label] = versions.acquire(fake, started, 1_000_000)

        thread = threading.Thread(target=run, daemon=True)
        thread.start()
        return thread

    a_started = b_started = versions.mark()
    a = acquire("a", a_started)
    assert fake.entered.acquire(timeout=JOIN_TIMEOUT)  # a's begin is in flight
    # b started before a's begin was sent: it joins it. c started after:
    # the begin in flight may miss commits that finished before c started.
    b = acquire("b", b_started)
    _wait_for_holders(versions, 0, 2)
    c = acquire("c", versions.mark())
    assert fake.entered.acquire(timeout=JOIN_TIMEOUT)  # c's own begin
    fake.release.set()
    for t in (a, b, c):
        t.join(JOIN_TIMEOUT)
    assert len(fake.begins) == 2
    assert got["a"].version == got["b"].version != got["c"].version
    assert versions.in_use() == {got["a"].version: 2, got["c"].version: 1}

    # A version is ended in the next begin once no transaction holds it.
    versions.release(got["a"])
    assert versions.pending_end() == []
    versions.release(got["b"])
    assert versions.pending_end() == [got["a"].version]
    d = versions.acquire(fake, versions.mark(), 1_000_000)
    assert fake.begins[-1] == [got["a"].version] and versions.pending_end() == []
    versions.release(got["c"])
    versions.release(d)
    assert sorted(versions.pending_end()) == sorted([got["c"].version, d.version])


def test_a_failed_begin_fails_every_transaction_that_joined_it():
    versions, fake = ReadVersions(), _BlockingBegins()
    fake.fail = True
    errors = []

    def acquire():
        try:
            versions.acquire(fake, 0, 1_000_000)
        except amulet.Unavailable as e:
            errors.append(e)

    first = threading.Thread(target=acquire, daemon=True)
    first.start()
    assert fake.entered.acquire(timeout=JOIN_TIMEOUT)
    second = threading.Thread(target=acquire, daemon=True)
    second.start()
    _wait_for_holders(versions, 0, 2)  # it joined the begin in flight
    fake.release.set()
    for t in (first, second):
        t.join(JOIN_TIMEOUT)
    assert len(errors) == 2 and len(fake.begins) == 1 and errors[0] is not errors[1]
    assert versions.in_use() == {} and versions.pending_end() == []


def test_transactions_started_together_share_a_begin_on_a_live_cluster(cluster, name):
    """Eight transactions created before any reads: the first read sends a
    begin, and the others, started before it was sent, join it while it is
    in flight (unless a thread is slower than a whole begin)."""
    count = 8
    with amulet.Client(cluster.addresses, tls=cluster.tls) as own:
        begins = []
        execute = own.execute

        def counting(op, message, placement):
            if op == "begin_transaction":
                begins.append(op)
            return execute(op, message, placement)

        own.execute = counting
        txs = [own.transaction() for _ in range(count)]
        barrier = threading.Barrier(count)
        versions = []

        def reader(tx):
            def run():
                barrier.wait(JOIN_TIMEOUT)
                tx.get(name, b"k")
                versions.append(tx.read_version)
                tx.commit()

            return run

        run_threads([reader(tx) for tx in txs])
        assert len(versions) == count
        assert len(set(versions)) == len(begins) < count


def test_a_busy_client_ends_its_read_versions_in_later_begins(cluster, name):
    with amulet.Client(cluster.addresses, tls=cluster.tls) as own:
        versions = own._read_versions
        seen = []
        for _ in range(3):
            tx = own.transaction()
            tx.get(name, b"k")
            seen.append(tx.read_version)
            tx.commit()
        assert len(set(seen)) == 3
        # The last one waits for the next begin; the earlier ones went in theirs.
        assert versions.pending_end() == [seen[-1]] and versions.in_use() == {}
        # A transaction dropped unfinished gives its version back when
        # collected.
        tx = own.transaction()
        tx.get(name, b"k")
        dropped = tx.read_version
        assert versions.in_use() == {dropped: 1}
        del tx
        import gc

        gc.collect()
        assert versions.in_use() == {} and dropped in versions.pending_end()


# ---- placement of commits -------------------------------------------------------


def test_a_commit_goes_to_the_first_partition_of_its_writes_and_reads():
    routing = Routing(
        version=1,
        partitions={1: [1], 2: [2], 3: [3]},
        token_ring=[(0, 1), (2**31, 2), (3 * 2**30, 3)],
        keyspaces={"h": None, "r": [(b"", 1), (b"g", 2), (b"p", 3)]},
    )

    def across(*parts):
        return routing.partitions_for(Placement(None, "across", parts=parts))

    assert across(Placement("r", "one", (b"q",))) == [3]
    assert across(Placement("r", "one", (b"q",)), Placement("r", "range", lower=(b"h", True), upper=(b"h", True))) == [2, 3]
    # A key read of a hash map is its one key's partition, as the cluster
    # places it; a real range of a hash map spans every partition.
    k = routing.partition_of("h", b"k")
    assert across(Placement("r", "one", (b"q",)), Placement("h", "range", lower=(b"k", True), upper=(b"k", True))) == sorted({k, 3})
    assert across(Placement("r", "one", (b"q",)), Placement("h", "range", lower=(b"k", True), upper=(b"l", True))) == [1, 2, 3]
    # An empty read range is placed as no keys, at the lowest partition.
    assert across(Placement("r", "one", (b"q",)), Placement("r", "range", lower=(b"x", False), upper=(b"x", False))) == [1, 3]
    with pytest.raises(UnknownMap):
        across(Placement("nope", "one", (b"q",)))
    assert routing.first_partition(Placement(None, "across", parts=(Placement("nope", "one", (b"q",)),))) == 1
