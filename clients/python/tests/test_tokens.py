"""Bearer tokens without an amulet binary: what ``tls=`` and ``token=`` (and
``AMULET_TLS_DIR``, ``AMULET_TOKEN``) mean together, that a token is never
shown, and, against an in-process TLS node that takes clients without a
certificate (tests/tls_certs.py makes its certificates), that every call
carries ``authorization: Bearer TOKEN``: unary calls and both streams
(snapshot pages, log tails). A refusal on a stream (PERMISSION_DENIED,
UNAUTHENTICATED: a permission or token revoked while it was open) ends the
snapshot iterator or the tail: the stream is not opened again.

The live counterpart, against `amulet dev`, is tests/test_access.py."""

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
FAST = dict(attempt_timeout=0.5, operation_timeout=1.5)
PATIENT = dict(attempt_timeout=2.0, operation_timeout=20.0)
NOT_RETRIED = 5.0
TOKEN = "amt1.0123456789abcdef." + "5e" * 32
TOKEN_ID = "0123456789abcdef"


@pytest.fixture(autouse=True)
def no_environment(monkeypatch):
    """Tests choose TLS and tokens themselves, whatever the shell set."""
    for name in (tls.TLS_DIR_ENV, tls.USER_ENV, tls.TOKEN_ENV):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture(scope="module")
def ca():
    return Ca()


@pytest.fixture
def tls_dir(ca, tmp_path) -> Path:
    return ca.write_user_dir(tmp_path / "tls")


class Node:
    """A fake TLS node that does not ask for a client certificate: one
    hash partition holding the map ``m`` and the log ``events`` (entry
    ``e0``). ``calls`` has ``(method, authorization metadata or None,
    client certificate's common name or None)`` of every request (gRPC's
    server asks for none when it does not require one: always None);
    ``refuse`` maps a method to the ``(code, details)`` it answers instead
    (for TailLog: after sending ``e0``)."""

    def __init__(self, ca: Ca):
        self.calls: list[tuple[str, str | None, str | None]] = []
        self.refuse: dict[str, tuple[grpc.StatusCode, str]] = {}
        self.data: dict[bytes, bytes] = {b"a": b"1", b"b": b"2"}
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        cert, key = ca.node(1)
        credentials = grpc.ssl_server_credentials([(key, cert)], root_certificates=ca.pem, require_client_auth=False)
        self.server = grpc.server(futures.ThreadPoolExecutor(max_workers=8))
        self.address = f"127.0.0.1:{self.server.add_secure_port('127.0.0.1:0', credentials)}"

        def record(name, context):
            metadata = dict(context.invocation_metadata())
            names = context.auth_context().get("x509_common_name") or [None]
            with self.lock:
                self.calls.append(
                    (name, metadata.get("authorization"), names[0].decode() if names[0] is not None else None)
                )
                return self.refuse.get(name)

        def unary(name, fn, request, reply):
            def handle(message, context):
                refusal = record(name, context)
                if refusal is not None:
                    context.abort(*refusal)
                return fn(message)

            return grpc.unary_unary_rpc_method_handler(
                handle, request_deserializer=request.FromString, response_serializer=reply.SerializeToString
            )

        def read_snapshot(request, context):
            refusal = record("ReadSnapshot", context)
            if refusal is not None:
                context.abort(*refusal)
            with self.lock:
                entries = [pb.Entry(key=k, value=v) for k, v in sorted(self.data.items())]
            yield pb.SnapshotPage(entries=entries, last=True)

        def tail_log(request, context):
            refusal = record("TailLog", context)
            if getattr(request, "from") == 0:
                yield pb.LogEntries(entries=[b"e0"], **{"from": 0})
            if refusal is not None:
                context.abort(*refusal)
            while context.is_active() and not self.stopping.wait(0.05):
                pass

        session = lambda r: pb.SessionResponse()  # noqa: E731
        handlers = {
            "GetPartitionMap": unary("GetPartitionMap", self.partition_map, pb.GetPartitionMapRequest, pb.PartitionMap),
            "OpenSession": unary("OpenSession", session, pb.OpenSessionRequest, pb.SessionResponse),
            "KeepAlive": unary("KeepAlive", session, pb.OpenSessionRequest, pb.SessionResponse),
            "CloseSession": unary("CloseSession", session, pb.CloseSessionRequest, pb.SessionResponse),
            "Execute": unary("Execute", self.execute, pb.MapRequest, pb.MapResponse),
            "WhoAmI": unary(
                "WhoAmI",
                lambda r: pb.WhoAmIResponse(user="carol", token=TOKEN_ID, roles=["writers"], secure=True),
                pb.WhoAmIRequest,
                pb.WhoAmIResponse,
            ),
            "ReadSnapshot": grpc.unary_stream_rpc_method_handler(
                read_snapshot,
                request_deserializer=pb.ReadSnapshotRequest.FromString,
                response_serializer=pb.SnapshotPage.SerializeToString,
            ),
            "TailLog": grpc.unary_stream_rpc_method_handler(
                tail_log,
                request_deserializer=pb.TailLogRequest.FromString,
                response_serializer=pb.LogEntries.SerializeToString,
            ),
        }
        self.server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(SERVICE, handlers),))
        self.server.start()

    def partition_map(self, _request) -> pb.PartitionMap:
        return pb.PartitionMap(
            version=1,
            partitions=[pb.Partition(id=1, stream=1, replicas=[1])],
            token_ring=[pb.TokenRange(first_token=0, partition=1)],
            keyspaces=[
                pb.Keyspace(name="m", layout=pb.Layout(hash=pb.HashLayout())),
                pb.Keyspace(name="events", layout=pb.Layout(hash=pb.HashLayout())),
            ],
            nodes=[pb.NodeAddress(node=1, address=self.address)],
        )

    def execute(self, request: pb.MapRequest) -> pb.MapResponse:
        op = request.WhichOneof("op")
        with self.lock:
            if op == "put":
                old = self.data.get(request.put.key)
                self.data[request.put.key] = request.put.value
                return pb.MapResponse(value=pb.OptionalValue(value=old) if old is not None else pb.OptionalValue())
            if op == "get":
                old = self.data.get(request.get.key)
                return pb.MapResponse(value=pb.OptionalValue(value=old) if old is not None else pb.OptionalValue())
            if op == "open_snapshot":
                return pb.MapResponse(snapshot=7)
            if op == "release_snapshot":
                return pb.MapResponse(done=pb.Done())
            if op == "log_bounds":
                return pb.MapResponse(log_bounds=pb.LogBoundsReply(first=0, end=1))
        raise AssertionError(f"unexpected op {op}")

    def methods(self, name: str) -> list[tuple[str, str | None, str | None]]:
        with self.lock:
            return [c for c in self.calls if c[0] == name]

    def stop(self) -> None:
        self.stopping.set()
        self.server.stop(grace=None).wait(5)


@pytest.fixture
def node(ca):
    started = Node(ca)
    yield started
    started.stop()


def with_token(node: Node, tls_dir: Path, token=TOKEN, **args) -> amulet.Client:
    return amulet.Client(node.address, tls=amulet.TlsFiles.ca_only(tls_dir / "ca.pem"), token=token, **FAST, **args)


# ---- every call carries the token -------------------------------------------------


def test_every_call_unary_and_streaming_carries_the_token(node, tls_dir):
    with with_token(node, tls_dir) as client:
        m = client.bytes_map("m")
        m.put(b"c", b"3")
        assert m.get(b"c") == b"3"
        with m.snapshot() as snapshot:
            assert list(snapshot) == [(b"a", b"1"), (b"b", b"2"), (b"c", b"3")]
        with client.log("events").tail(0) as tail:
            assert tail.next(timeout=10) == (0, b"e0")
        assert client.who_am_i() == amulet.WhoAmI(user="carol", token=TOKEN_ID, roles=["writers"], secure=True)
    methods = {name for name, _, _ in node.calls}
    assert {"GetPartitionMap", "OpenSession", "Execute", "ReadSnapshot", "TailLog", "WhoAmI"} <= methods
    # Each with the token, and no certificate.
    assert {(auth, user) for _, auth, user in node.calls} == {(f"Bearer {TOKEN}", None)}


def test_without_a_token_nothing_is_sent(node, tls_dir):
    with amulet.Client(node.address, tls=amulet.TlsFiles.from_dir(tls_dir), **FAST) as client:
        assert client.bytes_map("m").get(b"a") == b"1"
        with client.log("events").tail(0) as tail:
            assert tail.next(timeout=10) == (0, b"e0")
    assert {auth for _, auth, _ in node.calls} == {None}


def test_a_token_uses_only_the_ca_of_the_tls_files(node, tls_dir):
    # The admin certificate of tls= is not presented: the token is the credential.
    files = amulet.TlsFiles.from_dir(tls_dir)
    with amulet.Client(node.address, tls=files, token=TOKEN, **FAST) as client:
        assert client.tls == amulet.TlsFiles.ca_only(tls_dir / "ca.pem")
        assert not client.tls.has_certificate
        client.bytes_map("m").get(b"a")
    assert {(auth, user) for _, auth, user in node.calls} == {(f"Bearer {TOKEN}", None)}


def test_amulet_token_and_amulet_tls_dir_are_the_defaults(monkeypatch, node, tls_dir):
    monkeypatch.setenv(tls.TLS_DIR_ENV, str(tls_dir))
    monkeypatch.setenv(tls.TOKEN_ENV, f" {TOKEN}\n")
    with amulet.Client(node.address, **FAST) as client:
        assert client.token_id == TOKEN_ID
        assert client.tls.ca == tls_dir / "ca.pem" and not client.tls.has_certificate
        client.bytes_map("m").get(b"a")
    assert {(auth, user) for _, auth, user in node.calls} == {(f"Bearer {TOKEN}", None)}


def test_token_false_ignores_amulet_token(monkeypatch, node, tls_dir):
    monkeypatch.setenv(tls.TOKEN_ENV, TOKEN)
    with amulet.Client(node.address, tls=amulet.TlsFiles.from_dir(tls_dir), token=False, **FAST) as client:
        assert client.token_id is None
        client.bytes_map("m").get(b"a")
    assert {auth for _, auth, _ in node.calls} == {None}


def test_an_explicit_certificate_wins_over_amulet_token(monkeypatch, node, tls_dir):
    monkeypatch.setenv(tls.TOKEN_ENV, TOKEN)
    with amulet.Client(node.address, tls=amulet.TlsFiles.from_dir(tls_dir), **FAST) as client:
        assert client.token_id is None and client.tls.has_certificate
        client.bytes_map("m").get(b"a")
    assert {auth for _, auth, _ in node.calls} == {None}


def test_a_created_token_can_be_passed_as_it_is(node, tls_dir):
    created = amulet.CreatedToken(token=TOKEN, id=TOKEN_ID, expires_unix_micros=0)
    with with_token(node, tls_dir, token=created) as client:
        assert client.token_id == TOKEN_ID
        client.bytes_map("m").get(b"a")
    assert {auth for _, auth, _ in node.calls} == {f"Bearer {TOKEN}"}


def test_the_channel_uses_call_credentials_over_tls(monkeypatch, tls_dir):
    seen = {}
    monkeypatch.setattr(grpc, "secure_channel", lambda target, creds, options: seen.setdefault("creds", creds))
    ca_only = amulet.TlsFiles.ca_only(tls_dir / "ca.pem")
    _rpc.open_channel("127.0.0.1:1", ca_only, amulet.BearerToken(TOKEN))
    assert isinstance(seen["creds"], grpc.ChannelCredentials)
    with pytest.raises(ValueError, match="over TLS only"):
        _rpc.open_channel("127.0.0.1:1", None, amulet.BearerToken(TOKEN))


# ---- a token without TLS, bad tokens ------------------------------------------------


def test_a_token_without_tls_is_a_value_error(monkeypatch, tls_dir):
    for args in (dict(tls=False, token=TOKEN), dict(token=TOKEN)):
        with pytest.raises(ValueError, match="over TLS only") as failure:
            amulet.Client("127.0.0.1:1", **FAST, **args)
        assert TOKEN not in str(failure.value) and "5e5e" not in str(failure.value)
    # From the environment, naming it and how to do without.
    monkeypatch.setenv(tls.TOKEN_ENV, TOKEN)
    with pytest.raises(ValueError, match=re.escape("$AMULET_TOKEN")) as failure:
        amulet.Client("127.0.0.1:1", tls=False, **FAST)
    assert "token=False" in str(failure.value) and TOKEN not in str(failure.value)


@pytest.mark.parametrize("bad", ["", "   ", "amt1.abc.d\u00e9f", "amt1.abc def.x", "amt1.abc\n.def"])
def test_a_token_metadata_cannot_carry_is_a_value_error(tls_dir, bad):
    with pytest.raises(ValueError) as failure:
        amulet.Client("127.0.0.1:1", tls=amulet.TlsFiles.ca_only(tls_dir / "ca.pem"), token=bad, **FAST)
    if bad.strip():
        assert bad.strip() not in str(failure.value)


def test_token_must_be_a_str_or_created_token(tls_dir):
    with pytest.raises(TypeError, match="token must be"):
        amulet.Client("127.0.0.1:1", tls=amulet.TlsFiles.ca_only(tls_dir / "ca.pem"), token=b"amt1.x.y", **FAST)


def test_tls_files_take_a_certificate_and_key_together_or_neither(tls_dir):
    with pytest.raises(ValueError, match="together"):
        amulet.TlsFiles(tls_dir / "ca.pem", tls_dir / "admin.pem")
    ca_only = amulet.TlsFiles(tls_dir / "ca.pem")
    assert ca_only == amulet.TlsFiles.ca_only(tls_dir / "ca.pem")
    assert ca_only.cert is None and ca_only.cert_pem is None and not ca_only.has_certificate
    full = amulet.TlsFiles.from_dir(tls_dir)
    assert full.without_certificate() == ca_only
    assert full.without_certificate().ca_pem == ca_only.ca_pem


# ---- the token is never shown ---------------------------------------------------------


def test_the_token_is_in_no_repr_or_str(node, tls_dir):
    created = amulet.CreatedToken(token=TOKEN, id=TOKEN_ID, expires_unix_micros=1_800_000_000_000_000)
    bearer = amulet.BearerToken(TOKEN)
    with with_token(node, tls_dir) as client:
        shown = [repr(created), str(created), repr(bearer), str(bearer), repr(client), str(client), repr(vars(client))]
        for text in shown:
            assert TOKEN not in text and "5e5e5e" not in text, text
        assert TOKEN_ID in repr(created) and TOKEN_ID in repr(client)
        assert bearer.secret() == TOKEN and bearer.id == TOKEN_ID
        assert created.expires_at.year == 2027


def test_an_unauthenticated_token_is_refused_at_once_and_not_shown(node, tls_dir):
    node.refuse["GetPartitionMap"] = (grpc.StatusCode.UNAUTHENTICATED, "the bearer token is not valid")
    started = time.monotonic()
    with pytest.raises(amulet.Unauthenticated) as failure:
        amulet.Client(node.address, tls=amulet.TlsFiles.ca_only(tls_dir / "ca.pem"), token=TOKEN, **PATIENT)
    assert time.monotonic() - started < NOT_RETRIED
    assert len(node.methods("GetPartitionMap")) == 1
    assert "bearer token" in str(failure.value) and TOKEN not in str(failure.value)


def test_revoke_token_sends_only_the_id(node, tls_dir, monkeypatch):
    sent = []
    with with_token(node, tls_dir) as client:
        monkeypatch.setattr(client, "_unordered", lambda what, method, request, **kw: sent.append(request))
        client.revoke_token(TOKEN)
        client.revoke_token(amulet.CreatedToken(token=TOKEN, id=TOKEN_ID, expires_unix_micros=0))
        client.revoke_token(TOKEN_ID)
        with pytest.raises(amulet.InvalidArgument):
            client.revoke_token("")
    assert [r.revoke_token for r in sent] == [TOKEN_ID] * 3


# ---- refusals end streams -----------------------------------------------------------


@pytest.mark.parametrize(
    "code, kind",
    [(grpc.StatusCode.PERMISSION_DENIED, amulet.PermissionDenied), (grpc.StatusCode.UNAUTHENTICATED, amulet.Unauthenticated)],
)
def test_a_refused_snapshot_page_ends_the_iteration(node, tls_dir, code, kind):
    node.refuse["ReadSnapshot"] = (code, 'user "carol" needs read on "m"')
    with with_token(node, tls_dir, **{}) as client:
        client.operation_timeout = PATIENT["operation_timeout"]
        started = time.monotonic()
        with pytest.raises(kind, match="needs read"):
            with client.bytes_map("m").snapshot() as snapshot:
                next(snapshot)
        assert time.monotonic() - started < NOT_RETRIED
        # Again: the same refusal, without another stream.
        with pytest.raises(kind):
            next(snapshot)
    assert len(node.methods("ReadSnapshot")) == 1
    # The snapshot was released on the way out all the same.
    assert len(node.methods("Execute")) == 2


@pytest.mark.parametrize(
    "code, kind",
    [(grpc.StatusCode.PERMISSION_DENIED, amulet.PermissionDenied), (grpc.StatusCode.UNAUTHENTICATED, amulet.Unauthenticated)],
)
def test_a_refused_tail_ends_without_reopening(node, tls_dir, code, kind):
    node.refuse["TailLog"] = (code, 'user "carol" needs read on "events"')
    with with_token(node, tls_dir) as client:
        client.operation_timeout = PATIENT["operation_timeout"]
        with client.log("events").tail(0) as tail:
            assert tail.next(timeout=10) == (0, b"e0")
            started = time.monotonic()
            with pytest.raises(kind, match="needs read"):
                tail.next(timeout=10)
            assert time.monotonic() - started < NOT_RETRIED
            # Again, and as an iterator: the same refusal, no new stream.
            with pytest.raises(kind):
                tail.next(timeout=10)
            with pytest.raises(kind):
                next(iter(tail))
            assert tail.reconnects == 0
    assert len(node.methods("TailLog")) == 1
