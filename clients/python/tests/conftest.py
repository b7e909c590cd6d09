import secrets
import signal
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from cluster import DevCluster  # noqa: E402


@pytest.fixture(scope="session")
def cluster():
    """One `amulet dev` cluster for the whole test session, stopped at the
    end whatever happens: also on Ctrl-C and on SIGTERM, which becomes a
    KeyboardInterrupt so that pytest tears the fixtures down."""

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
    import amulet

    with amulet.Client(cluster.addresses) as c:
        yield c


@pytest.fixture
def fresh_map_name():
    """A map name no other test (or earlier run) uses."""
    return f"py-{secrets.token_hex(6)}"


@pytest.fixture
def log(client, fresh_map_name):
    """A new log of the session's cluster."""
    return client.create_log(fresh_map_name)
