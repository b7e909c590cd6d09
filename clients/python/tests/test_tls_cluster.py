"""TLS against the real `amulet dev` cluster of the session, which (as
`amulet dev` does by default) created a CA, node certificates and the user
`admin`'s in `<dir>/tls` and requires a user certificate of that CA on
every client connection.

A client with the admin files works. A plaintext client, a client
presenting a certificate of another CA, and one trusting another CA fail
with ``Unavailable`` (the TLS handshake fails) within their timeouts; a
client presenting a node's certificate gets through the handshake and is
refused with ``Unauthenticated`` at once, not after retrying until its
deadline. None of them changes anything: the good client checks after.
`amulet dev --insecure` still makes a plaintext cluster."""

from __future__ import annotations

import shutil
import sys
import time
from pathlib import Path

import grpc
import pytest

import amulet

sys.path.insert(0, str(Path(__file__).resolve().parent))

from cluster import DevCluster  # noqa: E402
from tls_certs import Ca  # noqa: E402

# Short, so the refusals that are retried until the deadline (a failed
# handshake looks like a node that is down) are quick; each must end
# within SLACK.
FAST = dict(attempt_timeout=0.5, operation_timeout=2.0)
SLACK = 10.0
# A deadline far longer than a refusal that is not retried may take.
PATIENT = dict(attempt_timeout=2.0, operation_timeout=20.0)
NOT_RETRIED = 5.0


@pytest.fixture
def written(client, fresh_map_name):
    """A new map holding k=v, written by the admin client."""
    client.create_map(fresh_map_name)
    raw = client.bytes_map(fresh_map_name)
    raw.put(b"k", b"v")
    return raw


def unchanged(raw) -> None:
    """The map still holds just k=v (read by the admin client)."""
    assert raw.range(None, None, 100) == ([(b"k", b"v")], False)


def try_to_write(raw, **client_args) -> None:
    """Connects with ``client_args`` and overwrites k (never gets that far)."""
    with amulet.Client(raw.client.seeds, **client_args) as bad:
        bad.bytes_map(raw.name).put(b"k", b"bad")


def refused_within(kind, raw, limit: float, **client_args) -> amulet.AmuletError:
    started = time.monotonic()
    with pytest.raises(kind) as failure:
        try_to_write(raw, **client_args)
    assert time.monotonic() - started < limit
    unchanged(raw)
    return failure.value


def node_files(cluster, node: int) -> amulet.TlsFiles:
    tls = cluster.tls_dir
    return amulet.TlsFiles(ca=tls / "ca.pem", cert=tls / f"node-{node}.pem", key=tls / f"node-{node}.key")


def test_the_dev_cluster_wrote_its_tls_files(cluster):
    names = {p.name for p in cluster.tls_dir.iterdir()}
    expected = {"ca.pem", "ca.key", "admin.pem", "admin.key"}
    expected |= {f"node-{i}.{ext}" for i in (1, 2, 3) for ext in ("pem", "key")}
    assert expected <= names
    assert cluster.tls == amulet.TlsFiles.from_dir(cluster.tls_dir)
    assert cluster.tls.cert == cluster.tls_dir / "admin.pem"
    assert "TLS on:" in cluster.log()


def test_a_client_with_the_admin_files_works(cluster, fresh_map_name):
    with amulet.Client(cluster.addresses, tls=amulet.TlsFiles.from_dir(cluster.tls_dir)) as client:
        m = client.create_map(fresh_map_name)
        m["k"] = b"v"
        assert m["k"] == b"v"
        log = client.create_log(f"{fresh_map_name}-log")
        log.append(b"a")
        with log.tail(0) as tail:  # a stream over TLS
            assert tail.next(timeout=10) == (0, b"a")
        for address in cluster.addresses:
            assert client.status(address) is not None


def test_a_plaintext_client_is_unavailable(written):
    error = refused_within(amulet.Unavailable, written, SLACK, tls=False, **FAST)
    assert not isinstance(error, amulet.OutcomeUnknown)
    # It says why it may have failed.
    assert "plaintext" in str(error) and "AMULET_TLS_DIR" in str(error)


@pytest.mark.parametrize("node", [1, 2, 3])
def test_a_client_presenting_a_node_certificate_is_unauthenticated_at_once(cluster, written, node):
    error = refused_within(amulet.Unauthenticated, written, NOT_RETRIED, tls=node_files(cluster, node), **PATIENT)
    assert error.code == grpc.StatusCode.UNAUTHENTICATED
    assert f"node {node}" in str(error)
    assert not isinstance(error, amulet.Unavailable)


def test_a_connected_client_whose_credentials_are_refused_is_not_retried(cluster, written, fresh_map_name):
    """A client connected with good files, whose channels then present a
    node's certificate: each operation (a map write, a log append, an
    eventual map's read) is refused with one UNAUTHENTICATED answer."""
    client = written.client
    log = client.create_log(f"{fresh_map_name}-log")
    eventual = client.create_map(f"{fresh_map_name}-ev", eventual=True, replicas=3)
    with amulet.Client(cluster.addresses, tls=cluster.tls, **PATIENT) as c:
        c.tls = node_files(cluster, 2)
        c._channels.clear()
        refusals = []
        real = c._on_error

        def spy(error, slot, address):
            refusals.append(error.code())
            return real(error, slot, address)

        c._on_error = spy
        for attempt in [
            lambda: c.bytes_map(written.name).put(b"k", b"bad"),
            lambda: c.log(log.name).append(b"bad"),
            lambda: c.eventual_map(eventual.name).get(b"k"),
        ]:
            started = time.monotonic()
            with pytest.raises(amulet.Unauthenticated):
                attempt()
            assert time.monotonic() - started < NOT_RETRIED
        assert refusals == [grpc.StatusCode.UNAUTHENTICATED] * 2  # the eventual read has its own path
    unchanged(written)
    assert log.bounds().end == 0
    assert client.eventual_map(eventual.name).get(b"k").values == []


def test_a_client_certificate_of_another_ca_is_refused(cluster, written, tmp_path):
    foreign = Ca("another CA").write_user_dir(tmp_path / "tls")
    # Trusting the cluster's CA, presenting another CA's admin certificate.
    shutil.copy(cluster.tls_dir / "ca.pem", foreign / "ca.pem")
    error = refused_within(amulet.Unavailable, written, SLACK, tls=amulet.TlsFiles.from_dir(foreign), **FAST)
    assert "over TLS" in str(error)


def test_a_client_trusting_another_ca_refuses_the_nodes(cluster, written, tmp_path):
    other = Ca("another CA")
    (tmp_path / "other-ca.pem").write_bytes(other.pem)
    files = amulet.TlsFiles(ca=tmp_path / "other-ca.pem", cert=cluster.tls.cert, key=cluster.tls.key)
    refused_within(amulet.Unavailable, written, SLACK, tls=files, **FAST)


def test_an_insecure_dev_cluster_serves_plaintext_clients(cluster, fresh_map_name):
    insecure = DevCluster(insecure=True)
    insecure.start()
    try:
        assert insecure.tls is False
        with amulet.Client(insecure.addresses, tls=False) as client:
            m = client.create_map(fresh_map_name)
            m["k"] = b"v"
            assert m["k"] == b"v"
        # A TLS client finds no TLS there.
        with pytest.raises(amulet.Unavailable):
            amulet.Client(insecure.addresses, tls=cluster.tls, **FAST)
    finally:
        insecure.stop()
