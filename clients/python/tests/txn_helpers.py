"""What the transaction tests share: a fresh map made for a test, the
cluster's partitions, and threads run to completion within a bound."""

from __future__ import annotations

import threading
import time

import pytest

# Every thread a test starts is joined within this (seconds).
JOIN_TIMEOUT = 60.0


@pytest.fixture
def name(client, fresh_map_name):
    client.create_map(fresh_map_name)
    return fresh_map_name


def partitions(client):
    return sorted(client.partition_map().partitions)


def run_threads(targets):
    """Starts a thread per target, joins them all (bounded) and re-raises the
    first exception any of them raised."""
    failures = []

    def guarded(target):
        def run():
            try:
                target()
            except BaseException as e:  # noqa: BLE001 - reported below
                failures.append(e)

        return run

    threads = [threading.Thread(target=guarded(t), daemon=True) for t in targets]
    for t in threads:
        t.start()
    deadline = time.monotonic() + JOIN_TIMEOUT
    for t in threads:
        t.join(max(0.0, deadline - time.monotonic()))
    assert not any(t.is_alive() for t in threads), "threads did not finish in time"
    if failures:
        raise failures[0]
