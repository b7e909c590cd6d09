"""Eventual maps on the session's `amulet dev` cluster: siblings, contexts
kept as bytes, update(), no lost update under concurrent read-modify-write
cycles, and the refusals between ordered and eventual maps. (The request
building, resends and error mapping without a cluster:
test_eventual_client.py; the shared scenarios: eventual.json in
test_conformance.py.)"""

from __future__ import annotations

import json
import threading
import time

import pytest

import amulet

# How long a new map may take to reach every node's eventual service.
CREATION_WAIT = 10.0


def created_everywhere(client, cluster, name: str) -> None:
    """Waits until every node reports replicas of the eventual map ``name``
    (Status). A node that has not executed the map's creation yet drops
    the writes forwarded to it, so a w=3 (or r=3) request sent right after
    create_map may end in QuorumNotReached; these tests are about the
    client, so they start once the map is everywhere (the conformance
    scenarios do not wait)."""
    deadline = time.monotonic() + CREATION_WAIT
    while True:
        missing = [a for a in cluster.addresses if name not in {e.map for e in client.status(a).eventual}]
        if not missing:
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"{name!r} not created at {missing} after {CREATION_WAIT}s")
        time.sleep(0.02)


@pytest.fixture
def carts(client, cluster, fresh_map_name):
    m = client.create_map(fresh_map_name, eventual=True, replicas=3)
    created_everywhere(client, cluster, fresh_map_name)
    return m


def test_siblings_and_contexts(client, carts):
    assert isinstance(carts, amulet.EventualMap)
    assert carts.get(b"alice", r=3).values == []
    carts.put(b"alice", b"book", w=3)
    both = carts.put(b"alice", b"pen", w=3)  # no context: a sibling
    assert sorted(both.values) == [b"book", b"pen"]
    seen = carts.get(b"alice", r=3)
    assert sorted(seen.values) == [b"book", b"pen"] and seen.context
    # The context survives as bytes (another process, a cookie, ...).
    stored = bytes(seen.context)
    with amulet.Client(client.seeds, tls=client.tls) as other:
        again = amulet.Context.from_bytes(stored)
        written = other.eventual_map(carts.name).put(b"alice", b"book+pen", again, w=3)
    assert written.values == [b"book+pen"]
    assert carts.get(b"alice", r=3).values == [b"book+pen"]


def test_update_and_delete(carts):
    assert carts.update(b"k", lambda values: b"%d" % len(values), w=3).values == [b"0"]
    assert carts.update(b"k", lambda values: values[0] + b"!", r=3, w=3).values == [b"0!"]
    assert carts.update(b"k", lambda values: None, r=3, w=3).values == []
    assert carts.get(b"k", r=3).values == []


def test_a_bad_context_is_refused_and_changes_nothing(carts):
    carts.put(b"k", b"v", w=3)
    with pytest.raises(amulet.InvalidArgument):
        carts.put(b"k", b"w", amulet.Context(b"\xff\x00"), w=3)
    assert carts.get(b"k", r=3).values == [b"v"]


def test_ordered_and_eventual_ops_do_not_mix(client, carts, fresh_map_name):
    with pytest.raises(amulet.FailedPrecondition):
        client.bytes_map(carts.name).put(b"k", b"v")
    ordered = f"{fresh_map_name}-o"
    client.create_map(ordered)
    with pytest.raises(amulet.FailedPrecondition):
        client.eventual_map(ordered).get(b"k")
    with pytest.raises(amulet.NotFound):
        client.eventual_map(f"{fresh_map_name}-none").get(b"k")


def test_concurrent_updates_lose_nothing(client, carts):
    """Threads add items to one key's set with update() (read, merge the
    siblings, write with the read's context): a concurrent write is kept
    as a sibling, never overwritten, so the merge of the last read holds
    every item."""
    threads, rounds = 4, 5

    def add(item):
        def merge(values):
            items = set(item)
            for value in values:
                items.update(json.loads(value))
            return json.dumps(sorted(items)).encode()

        return merge

    failures = []

    def run(t):
        try:
            for i in range(rounds):
                carts.update(b"cart", add([f"{t}-{i}"]))
        except Exception as e:  # noqa: BLE001 - reported below
            failures.append(e)

    workers = [threading.Thread(target=run, args=(t,)) for t in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(timeout=60)
    assert not failures, failures
    final = carts.update(b"cart", add([]), r=3, w=3)
    assert len(final.values) == 1
    assert set(json.loads(final.values[0])) == {f"{t}-{i}" for t in range(threads) for i in range(rounds)}
