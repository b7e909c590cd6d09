"""TLS with mutual authentication, without an amulet binary: clients against
in-process gRPC servers on 127.0.0.1 that require a client certificate of
the test CA, with certificates made at test time (tests/tls_certs.py).

A client with a certificate of the cluster CA works; one whose certificate
is of another CA, or that trusts another CA, or that speaks plaintext, or
that is shown a node certificate not naming ``amulet-node``, fails with
``Unavailable`` within its timeouts, and the node's handlers never run.
``TlsFiles`` names any file it cannot use; ``AMULET_TLS_DIR`` and
``AMULET_USER`` choose the files when ``tls=`` is not given."""

from __future__ import annotations

import re
import sys
import threading
import time
from concurrent import futures
from pathlib import Path

import grpc
import pytest

import amulet
from amulet import _rpc, tls
from amulet.v1 import amulet_pb2 as pb

sys.path.insert(0, str(Path(__file__).resolve().parent))

from tls_certs import Ca  # noqa: E402

SERVICE = "amulet.v1.Amulet"
# Short, so the refusals below are quick; each must end within SLACK.
FAST = dict(attempt_timeout=0.5, operation_timeout=1.5)
SLACK = 10.0


class Node:
    """One fake node: the partition map (one hash partition, map ``m``),
    sessions, and get/put of ``m`` through Execute. ``calls`` has the method
    of every request a handler got; ``users`` the client certificate's
    common name of each (None in plaintext). ``refuse`` maps a method to
    the ``(code, details)`` it answers instead of serving it."""

    def __init__(self, credentials: grpc.ServerCredentials | None):
        self.calls: list[str] = []
        self.users: list[str | None] = []
        self.data: dict[bytes, bytes] = {}
        self.refuse: dict[str, tuple[grpc.StatusCode, str]] = {}
        self.lock = threading.Lock()
        # The nodes the partition map names; the first holds the partition.
        self.map_nodes = [self]
        self.server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
        if credentials is None:
            port = self.server.add_insecure_port("127.0.0.1:0")
        else:
            port = self.server.add_secure_port("127.0.0.1:0", credentials)
        self.address = f"127.0.0.1:{port}"

        def unary(name, fn, request, reply):
            def handle(message, context):
                names = context.auth_context().get("x509_common_name") or [None]
                with self.lock:
                    self.calls.append(name)
                    self.users.append(names[0].decode() if names[0] is not None else None)
                    refusal = self.refuse.get(name)
                if refusal is not None:
                    context.abort(*refusal)
                return fn(message)

            return grpc.unary_unary_rpc_method_handler(
                handle, request_deserializer=request.FromString, response_serializer=reply.SerializeToString
            )

        session = lambda r: pb.SessionResponse()  # noqa: E731
        handlers = {
            "GetPartitionMap": unary("GetPartitionMap", self.partition_map, pb.GetPartitionMapRequest, pb.PartitionMap),
            "OpenSession": unary("OpenSession", session, pb.OpenSessionRequest, pb.SessionResponse),
            "KeepAlive": unary("KeepAlive", session, pb.OpenSessionRequest, pb.SessionResponse),
            "CloseSession": unary("CloseSession", session, pb.CloseSessionRequest, pb.SessionResponse),
            "Execute": unary("Execute", self.execute, pb.MapRequest, pb.MapResponse),
        }
        self.server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(SERVICE, handlers),))
        self.server.start()

    def partition_map(self, _request) -> pb.PartitionMap:
        return pb.PartitionMap(
            version=1,
            partitions=[pb.Partition(id=1, stream=1, replicas=[1])],
            token_ring=[pb.TokenRange(first_token=0, partition=1)],
            keyspaces=[pb.Keyspace(name="m", layout=pb.Layout(hash=pb.HashLayout()))],
            nodes=[pb.NodeAddress(node=i + 1, address=n.address) for i, n in enumerate(self.map_nodes)],
        )

    def execute(self, request: pb.MapRequest) -> pb.MapResponse:
        op = request.WhichOneof("op")
        with self.lock:
            if op == "put":
                old = self.data.get(request.put.key)
                self.data[request.put.key] = request.put.value
            elif op == "get":
                old = self.data.get(request.get.key)
            else:
                raise AssertionError(f"unexpected op {op}")
        return pb.MapResponse(value=pb.OptionalValue(value=old) if old is not None else pb.OptionalValue())

    def stop(self) -> None:
        self.server.stop(grace=None).wait(5)


@pytest.fixture(autouse=True)
def no_tls_environment(monkeypatch):
    """Tests choose TLS themselves, whatever the shell running them set."""
    monkeypatch.delenv(tls.TLS_DIR_ENV, raising=False)
    monkeypatch.delenv(tls.USER_ENV, raising=False)


@pytest.fixture(scope="module")
def ca():
    return Ca()


@pytest.fixture(scope="module")
def other_ca():
    return Ca("another CA")


@pytest.fixture
def tls_dir(ca, tmp_path) -> Path:
    """``ca.pem``, ``admin.pem``, ``admin.key``, as ``amulet dev`` writes them."""
    return ca.write_user_dir(tmp_path / "tls")


@pytest.fixture
def start_node(ca):
    """Starts fake nodes: ``start_node()`` with a certificate of ``ca``
    naming amulet-node (client certificates of ``ca`` required),
    ``start_node(node_cert=(cert, key))`` with another, ``start_node(None)``
    in plaintext. Stopped at the end."""
    nodes = []

    def start(node_cert="default"):
        if node_cert is None:
            credentials = None
        else:
            cert, key = ca.node(1) if node_cert == "default" else node_cert
            credentials = grpc.ssl_server_credentials([(key, cert)], root_certificates=ca.pem, require_client_auth=True)
        node = Node(credentials)
        nodes.append(node)
        return node

    yield start
    for node in nodes:
        node.stop()


def refused(node: Node, **client_args) -> amulet.Unavailable:
    """The ``Unavailable`` a client connecting to ``node`` fails with, within
    its timeouts; the node never served a request."""
    started = time.monotonic()
    with pytest.raises(amulet.Unavailable) as failure:
        amulet.Client(node.address, **FAST, **client_args)
    assert time.monotonic() - started < SLACK
    assert node.calls == []
    return failure.value


# ---- connecting -------------------------------------------------------------


def test_a_client_with_a_certificate_of_the_cluster_ca_gets_and_puts(start_node, tls_dir):
    node = start_node()
    files = amulet.TlsFiles.from_dir(tls_dir)
    with amulet.Client(node.address, tls=files, **FAST) as client:
        assert client.tls is files
        m = client.bytes_map("m")
        assert m.put(b"k", b"v1") is None
        assert m.put(b"k", b"v2") == b"v1"
        assert m.get(b"k") == b"v2"
        assert m.get(b"other") is None
    assert {"GetPartitionMap", "OpenSession", "Execute"} <= set(node.calls)
    # Every request came over TLS with the user's certificate.
    assert set(node.users) == {"admin"}


def test_a_client_certificate_of_another_ca_is_refused(start_node, tls_dir, other_ca, tmp_path):
    node = start_node()
    other = other_ca.write_user_dir(tmp_path / "other")
    files = amulet.TlsFiles(tls_dir / "ca.pem", other / "admin.pem", other / "admin.key")
    error = refused(node, tls=files)
    assert "TLS" in str(error) and str(tls_dir / "ca.pem") in str(error)


def test_a_client_trusting_another_ca_refuses_the_node(start_node, other_ca, tmp_path):
    node = start_node()
    files = amulet.TlsFiles.from_dir(other_ca.write_user_dir(tmp_path / "other"))
    error = refused(node, tls=files)
    assert "TLS" in str(error)


def test_a_plaintext_client_fails_against_a_tls_node(start_node):
    node = start_node()
    error = refused(node, tls=False)
    assert "plaintext" in str(error) and tls.TLS_DIR_ENV in str(error)


def test_a_node_certificate_not_naming_amulet_node_is_refused(start_node, ca, tls_dir):
    # Even though it names the address dialled (IP 127.0.0.1) and node-1.amulet.
    node = start_node(node_cert=ca.node(1, dns=("localhost", "node-1.amulet")))
    error = refused(node, tls=amulet.TlsFiles.from_dir(tls_dir))
    assert "TLS" in str(error) and "amulet-node" in str(error)


def test_a_tls_failure_after_connecting_says_tls(start_node, ca, tls_dir):
    # The seed is fine, but the node holding the partition shows a
    # certificate without amulet-node: the operation gives up in time.
    seed = start_node()
    bad = start_node(node_cert=ca.node(2, dns=("node-2.amulet",)))
    seed.map_nodes = [bad]
    with amulet.Client(seed.address, tls=amulet.TlsFiles.from_dir(tls_dir), **FAST) as client:
        started = time.monotonic()
        with pytest.raises(amulet.Unavailable) as failure:
            client.bytes_map("m").get(b"k")
        assert time.monotonic() - started < SLACK
    assert f"{bad.address} (over TLS)" in str(failure.value)
    assert bad.calls == []


def test_a_plaintext_client_still_works_against_a_plaintext_node(start_node):
    node = start_node(None)
    with amulet.Client(node.address, **FAST) as client:
        assert client.tls is None
        client.bytes_map("m").put(b"k", b"v")
        assert client.bytes_map("m").get(b"k") == b"v"
    assert set(node.users) == {None}


def test_tls_channels_keep_the_plaintext_options(monkeypatch, tls_dir):
    seen = {}
    monkeypatch.setattr(grpc, "insecure_channel", lambda target, options: seen.setdefault("plain", options))
    monkeypatch.setattr(
        grpc, "secure_channel", lambda target, creds, options: seen.setdefault("tls", (target, creds, options))
    )
    _rpc.open_channel("127.0.0.1:1")
    _rpc.open_channel("127.0.0.1:1", amulet.TlsFiles.from_dir(tls_dir))
    target, creds, options = seen["tls"]
    assert target == "127.0.0.1:1"
    assert isinstance(creds, grpc.ChannelCredentials)
    assert options == seen["plain"] + [("grpc.ssl_target_name_override", "amulet-node")]
    assert ("grpc.max_receive_message_length", _rpc.REPLY_BYTES_MAX) in options


# ---- refused credentials --------------------------------------------------------

REFUSALS = [
    (grpc.StatusCode.UNAUTHENTICATED, amulet.Unauthenticated),
    (grpc.StatusCode.PERMISSION_DENIED, amulet.PermissionDenied),
]
# A deadline far longer than a refusal that is not retried may take.
PATIENT = dict(attempt_timeout=2.0, operation_timeout=20.0)
NOT_RETRIED = 5.0


@pytest.mark.parametrize("code, kind", REFUSALS)
def test_refused_credentials_map_to_their_own_errors(code, kind):
    error = amulet.errors.from_status(code, "no")
    assert type(error) is kind and error.code == code
    assert isinstance(error, amulet.errors.CREDENTIALS_REFUSED)
    assert not isinstance(error, (amulet.Unavailable, amulet.ProtocolError, amulet.OutcomeUnknown))


@pytest.mark.parametrize("code, kind", REFUSALS)
def test_credentials_refused_when_connecting_are_not_retried(start_node, tls_dir, code, kind):
    node = start_node()
    node.refuse["GetPartitionMap"] = (code, "the certificate names no user")
    started = time.monotonic()
    with pytest.raises(kind, match="the certificate names no user") as failure:
        amulet.Client(node.address, tls=amulet.TlsFiles.from_dir(tls_dir), **PATIENT)
    assert time.monotonic() - started < NOT_RETRIED
    assert node.calls == ["GetPartitionMap"]
    assert failure.value.code == code
    assert f"{node.address} (over TLS)" in str(failure.value)


@pytest.mark.parametrize("code, kind", REFUSALS)
@pytest.mark.parametrize("method", ["OpenSession", "Execute"])
def test_credentials_refused_after_connecting_are_not_retried(start_node, tls_dir, code, kind, method):
    node = start_node()
    with amulet.Client(node.address, tls=amulet.TlsFiles.from_dir(tls_dir), **PATIENT) as client:
        node.refuse[method] = (code, "refused")
        started = time.monotonic()
        with pytest.raises(kind):
            client.bytes_map("m").put(b"k", b"v")
        assert time.monotonic() - started < NOT_RETRIED
    assert node.calls.count(method) == 1
    assert node.data == {}


# ---- the environment --------------------------------------------------------


def test_amulet_tls_dir_is_the_default(monkeypatch, start_node, tls_dir):
    node = start_node()
    monkeypatch.setenv(tls.TLS_DIR_ENV, str(tls_dir))
    with amulet.Client(node.address, **FAST) as client:
        assert client.tls == amulet.TlsFiles.from_dir(tls_dir, "admin")
        client.bytes_map("m").put(b"k", b"v")
    assert set(node.users) == {"admin"}


def test_amulet_user_chooses_the_certificate(monkeypatch, start_node, ca, tls_dir):
    node = start_node()
    cert, key = ca.user("bob")
    (tls_dir / "bob.pem").write_bytes(cert)
    (tls_dir / "bob.key").write_bytes(key)
    monkeypatch.setenv(tls.TLS_DIR_ENV, str(tls_dir))
    monkeypatch.setenv(tls.USER_ENV, "bob")
    with amulet.Client(node.address, **FAST) as client:
        assert client.tls.cert == tls_dir / "bob.pem"
        client.bytes_map("m").get(b"k")
    assert set(node.users) == {"bob"}


def test_an_unknown_amulet_user_names_the_missing_file(monkeypatch, tls_dir):
    monkeypatch.setenv(tls.TLS_DIR_ENV, str(tls_dir))
    monkeypatch.setenv(tls.USER_ENV, "carol")
    with pytest.raises(ValueError, match=re.escape(str(tls_dir / "carol.pem"))):
        amulet.Client("127.0.0.1:1", **FAST)


def test_tls_false_is_plaintext_whatever_the_environment(monkeypatch, start_node, tls_dir):
    node = start_node(None)
    monkeypatch.setenv(tls.TLS_DIR_ENV, str(tls_dir))
    with amulet.Client(node.address, tls=False, **FAST) as client:
        assert client.tls is None
        client.bytes_map("m").put(b"k", b"v")


def test_without_the_environment_there_is_no_tls(monkeypatch):
    assert amulet.TlsFiles.from_env() is None
    monkeypatch.setenv(tls.TLS_DIR_ENV, "")
    assert amulet.TlsFiles.from_env() is None
    assert tls.resolve(None) is None and tls.resolve(False) is None


# ---- TlsFiles -----------------------------------------------------------------


@pytest.mark.parametrize("name", ["ca.pem", "admin.pem", "admin.key"])
def test_from_dir_names_a_missing_file(tls_dir, name):
    (tls_dir / name).unlink()
    with pytest.raises(ValueError, match=re.escape(f"{tls_dir / name} does not exist")):
        amulet.TlsFiles.from_dir(tls_dir)


def test_from_dir_names_a_missing_directory(tmp_path):
    with pytest.raises(ValueError, match=re.escape(f"TLS directory {tmp_path / 'nowhere'} does not exist")):
        amulet.TlsFiles.from_dir(tmp_path / "nowhere")


def test_an_unreadable_file_is_named(tls_dir):
    (tls_dir / "admin.key").unlink()
    (tls_dir / "admin.key").mkdir()
    with pytest.raises(ValueError, match=re.escape(f"{tls_dir / 'admin.key'} cannot be read")):
        amulet.TlsFiles.from_dir(tls_dir)


@pytest.mark.parametrize(
    "name, content, message",
    [
        ("ca.pem", b"not a certificate\n", "holds no PEM certificate"),
        ("admin.pem", b"", "holds no PEM certificate"),
        ("admin.key", b"-----BEGIN CERTIFICATE-----\n", "holds no PEM private key"),
        ("admin.key", b"-----BEGIN ENCRYPTED PRIVATE KEY-----\n", "is encrypted"),
    ],
)
def test_a_file_that_is_not_the_expected_pem_is_named(tls_dir, name, content, message):
    (tls_dir / name).write_bytes(content)
    with pytest.raises(ValueError, match=re.escape(f"{tls_dir / name} {message}")):
        amulet.TlsFiles.from_dir(tls_dir)


@pytest.mark.parametrize("user", ["", "..", "a/b"])
def test_from_dir_refuses_a_user_that_is_not_a_file_name(tls_dir, user):
    with pytest.raises(ValueError, match="bad TLS user name"):
        amulet.TlsFiles.from_dir(tls_dir, user)


def test_tls_files_take_str_paths_and_keep_the_key_out_of_repr(tls_dir):
    files = amulet.TlsFiles(str(tls_dir / "ca.pem"), str(tls_dir / "admin.pem"), str(tls_dir / "admin.key"))
    assert files == amulet.TlsFiles.from_dir(tls_dir)
    assert files.key == tls_dir / "admin.key"
    assert files.key_pem == (tls_dir / "admin.key").read_bytes()
    assert "PRIVATE" not in repr(files) and "admin.key" in repr(files)
    with pytest.raises(TypeError):
        amulet.TlsFiles(tls_dir / "ca.pem", tls_dir / "admin.pem", b"admin.key")


def test_tls_must_be_tls_files(tls_dir):
    with pytest.raises(TypeError, match="amulet.TlsFiles"):
        amulet.Client("127.0.0.1:1", tls=str(tls_dir))
