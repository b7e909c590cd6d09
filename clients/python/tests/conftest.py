import os
import secrets
import signal
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from cluster import DevCluster  # noqa: E402
from fake_nodes import FakeCluster  # noqa: E402

# What a client given no tls= or token= reads (amulet.tls.TLS_DIR_ENV,
# USER_ENV, TOKEN_ENV).
_TLS_ENV = ("AMULET_TLS_DIR", "AMULET_USER", "AMULET_TOKEN")
_saved_env: dict[str, str] = {}


def pytest_configure(config):
    """The tests say which TLS files and token each client uses (the dev
    cluster's ``cluster.tls``, or plaintext for the fake nodes): a
    developer's AMULET_TLS_DIR, AMULET_USER or AMULET_TOKEN must not change
    what they see, so they are unset for the session (and put back at its
    end)."""
    for name in _TLS_ENV:
        value = os.environ.pop(name, None)
        if value is not None:
            _saved_env[name] = value


def pytest_unconfigure(config):
    os.environ.update(_saved_env)
    _saved_env.clear()


@pytest.fixture(scope="session")
def cluster():
    """One `amulet dev` cluster for the whole test session, with TLS (as
    `amulet dev` starts it by default: clients pass ``tls=cluster.tls``),
    stopped at the end whatever happens: also on Ctrl-C and on SIGTERM,
    which becomes a KeyboardInterrupt so that pytest tears the fixtures
    down."""

    def interrupted(signum, frame):
        raise KeyboardInterrupt(f"signal {signum}")

    previous = signal.signal(signal.SIGTERM, interrupted)
    dev = DevCluster()
    dev.start()
    try:
        yield dev
    finally:
        dev.stop()
        signal.signal(signal.SIGTERM, previous)


@pytest.fixture(scope="session")
def client(cluster):
    """A client of the session's cluster, with its admin TLS files."""
    import amulet

    with amulet.Client(cluster.addresses, tls=cluster.tls) as c:
        yield c


@pytest.fixture
def fresh_map_name():
    """A map name no other test (or earlier run) uses."""
    return f"py-{secrets.token_hex(6)}"


@pytest.fixture
def log(client, fresh_map_name):
    """A new log of the session's cluster."""
    return client.create_log(fresh_map_name)


@pytest.fixture
def fake():
    """Three in-process fake nodes on 127.0.0.1 (tests/fake_nodes.py)."""
    cluster = FakeCluster().start()
    try:
        yield cluster
    finally:
        cluster.stop()
