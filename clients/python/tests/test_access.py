"""Access control and bearer tokens against the real `amulet dev` cluster of
the session (TLS on; the user `admin` holds the built-in role
`cluster-admin`), as docs/security.md describes them and as the Rust
client's crates/amulet-client/tests/access.rs attacks them.

The module sets up, once: two maps (``carts`` with k0..k4 and ``secret``)
and a log; a role ``readers`` with read on ``carts``, given to ``alice``
(a certificate made with `amulet cert create-client`); a role
``writers`` with write on ``carts`` and the log, given to ``carol`` (who
has no certificate: only tokens). Every name carries a random suffix, so
the module changes nothing another test uses.

Then: alice reads, and each write she tries is PermissionDenied at once
and changes nothing; a map not granted and every admin operation (the
balancer switch too) are PermissionDenied; a token of carol's works
through ``token=`` (unary calls, snapshot pages, a log tail) and
``who_am_i`` names it; a forged
token (the last hex digit changed), a malformed one and no credential at
all are Unauthenticated at once; after ``revoke_token`` the same token is
Unauthenticated, on an open client and a new one; a grant revoked while a
snapshot iterator and a tail are open ends them with PermissionDenied
(not reopened); ``unassign_role`` takes a role away. Every client is
closed and the `amulet` commands run are bounded by timeouts; the cluster
is the session's (tests/conftest.py stops it)."""

from __future__ import annotations

import re
import secrets
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import grpc
import pytest

import amulet

sys.path.insert(0, str(Path(__file__).resolve().parent))

from cluster import _dev_env, amulet_bin  # noqa: E402

# A deadline far longer than a refusal that is not retried may take.
PATIENT = dict(attempt_timeout=2.0, operation_timeout=10.0)
NOT_RETRIED = 5.0
# How long an access change may take to reach every node's configuration.
PROPAGATION = 10.0
COMMAND_TIMEOUT = 30.0
TOKEN_FORM = re.compile(r"amt1\.([0-9a-f]{16})\.[0-9a-f]{64}")
CARTS = {f"k{i}".encode(): b"v" for i in range(5)}


def create_client_certificate(tls_dir: Path, user: str) -> amulet.TlsFiles:
    """``amulet cert create-client --dir TLS_DIR --user USER``: the user's
    certificate and key, signed by the cluster CA, next to ``ca.pem``."""
    command = [str(amulet_bin()), "cert", "create-client", "--dir", str(tls_dir), "--user", user]
    done = subprocess.run(
        command, env=_dev_env(), capture_output=True, text=True, timeout=COMMAND_TIMEOUT, stdin=subprocess.DEVNULL
    )
    assert done.returncode == 0, f"{command}: {done.stdout}{done.stderr}"
    return amulet.TlsFiles.from_dir(tls_dir, user)


def everywhere(admin: amulet.Client, addresses: list[str], holds, what: str) -> None:
    """Waits until every node's access configuration satisfies ``holds``:
    what a node serves without ordering (partition maps, snapshot pages,
    tail messages) is judged by its own latest configuration."""
    deadline = time.monotonic() + PROPAGATION
    while True:
        if all(holds(admin.access(address)) for address in addresses):
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not at every node after {PROPAGATION}s")
        time.sleep(0.05)


def refused(kind, fn, what: str) -> amulet.AmuletError:
    """``fn()`` raises ``kind`` at once (not after retrying until a deadline)."""
    started = time.monotonic()
    with pytest.raises(kind) as failure:
        fn()
    assert time.monotonic() - started < NOT_RETRIED, f"{what}: took {time.monotonic() - started:.1f}s"
    return failure.value


def denied(fn, what: str) -> amulet.AmuletError:
    error = refused(amulet.PermissionDenied, fn, what)
    assert error.code == grpc.StatusCode.PERMISSION_DENIED, what
    assert not isinstance(error, (amulet.Unavailable, amulet.OutcomeUnknown)), what
    return error


@pytest.fixture(scope="module")
def world(cluster, client):
    """The module's maps, log, roles and users (see the module's doc),
    made by the session's admin client; and ``connect(**args)``, which
    opens a client closed at the end."""
    suffix = secrets.token_hex(4)
    w = SimpleNamespace(
        admin=client,
        addresses=cluster.addresses,
        tls_dir=cluster.tls_dir,
        ca=amulet.TlsFiles.ca_only(cluster.tls_dir / "ca.pem"),
        alice=f"alice-{suffix}",
        carol=f"carol-{suffix}",
        readers=f"readers-{suffix}",
        writers=f"writers-{suffix}",
        carts=f"py-carts-{suffix}",
        secret=f"py-secret-{suffix}",
        events=f"py-events-{suffix}",
    )
    carts = client.create_map(w.carts).raw
    carts.put_all(CARTS.items())
    client.create_map(w.secret).raw.put(b"s", b"1")
    client.create_log(w.events).append(b"e0")
    client.grant(w.readers, w.carts, "read")
    client.assign_role(w.alice, w.readers)
    client.grant(w.writers, w.carts, "write")
    client.grant(w.writers, w.events, "write")
    client.assign_role(w.carol, w.writers)
    w.alice_tls = create_client_certificate(cluster.tls_dir, w.alice)
    everywhere(
        client,
        w.addresses,
        lambda c: c.roles_of(w.alice) == [w.readers] and c.grant(w.writers, w.events) == "write",
        "the module's grants",
    )
    opened: list[amulet.Client] = []

    def connect(**args) -> amulet.Client:
        c = amulet.Client(w.addresses, **{**PATIENT, **args})
        opened.append(c)
        return c

    w.connect = connect
    yield w
    for c in opened:
        c.close()


@pytest.fixture(scope="module")
def alice(world) -> amulet.Client:
    return world.connect(tls=world.alice_tls)


def carts_unchanged(world, extra: dict[bytes, bytes] | None = None) -> None:
    """``carts`` holds k0..k4=v (and ``extra``), read by the admin."""
    expected = sorted({**CARTS, **(extra or {})}.items())
    assert world.admin.bytes_map(world.carts).range(None, None, 100) == (expected, False)


# ---- the administrator ------------------------------------------------------------------


def test_admin_is_cluster_admin_and_sees_the_configuration(world):
    who = world.admin.who_am_i()
    assert (who.user, who.token, who.secure) == ("admin", None, True)
    assert amulet.access.CLUSTER_ADMIN in who.roles
    config = world.admin.access()
    assert config.version > 0
    assert config.roles_of(world.alice) == [world.readers]
    assert config.roles_of(world.carol) == [world.writers]
    assert config.roles[world.readers] == {world.carts: "read"}
    assert config.roles[world.writers] == {world.carts: "write", world.events: "write"}


def test_a_bad_permission_is_refused_by_the_client(world):
    with pytest.raises(amulet.InvalidArgument, match="'read', 'write' or 'admin'"):
        world.admin.grant(world.readers, world.carts, "execute")
    assert world.admin.access().grant(world.readers, world.carts) == "read"


# ---- a reader (certificate from `amulet cert create-client`) ---------------------------


def test_who_am_i_names_the_certificate_user(world, alice):
    assert alice.who_am_i() == amulet.WhoAmI(user=world.alice, token=None, roles=[world.readers], secure=True)
    assert alice.token_id is None


def test_a_reader_reads(world, alice):
    carts = alice.bytes_map(world.carts)
    assert carts.get(b"k1") == b"v"
    assert carts.size() == len(CARTS)
    assert carts.range(None, None, 100) == (sorted(CARTS.items()), False)
    with carts.snapshot() as snapshot:  # pages streamed to a certificate user
        assert list(snapshot) == sorted(CARTS.items())


def test_a_reader_writing_is_denied_and_changes_nothing(world, alice):
    carts = alice.bytes_map(world.carts)
    for what, attempt in [
        ("put", lambda: carts.put(b"k1", b"stolen")),
        ("put of a new key", lambda: carts.put(b"new", b"x")),
        ("remove", lambda: carts.remove(b"k2")),
        ("put_all", lambda: carts.put_all([(b"k3", b"x"), (b"k4", b"x")])),
        ("clear", carts.clear),
        ("drop_map", lambda: alice.drop_map(world.carts)),
    ]:
        error = denied(attempt, f"a reader's {what}")
        assert world.alice in str(error), what
    assert "needs write" in str(denied(lambda: carts.put(b"k1", b"x"), "put"))
    carts_unchanged(world)


def test_reading_a_map_not_granted_is_denied(world, alice):
    secret = alice.bytes_map(world.secret)
    error = denied(lambda: secret.get(b"s"), "a map not granted")
    assert "needs read" in str(error)
    denied(secret.snapshot, "a snapshot of a map not granted")
    denied(lambda: alice.bytes_map("py-no-such-map").get(b"s"), "a map that does not exist (not even told so)")
    denied(lambda: alice.log(world.events).read(0), "a log not granted")
    assert world.admin.bytes_map(world.secret).range(None, None, 100) == ([(b"s", b"1")], False)


def test_a_reader_cannot_change_access_or_make_tokens(world, alice):
    before = world.admin.access()
    denied(lambda: alice.grant(world.readers, world.secret, "read"), "a reader granting itself a map")
    denied(lambda: alice.assign_role(world.alice, amulet.access.CLUSTER_ADMIN), "a reader making itself admin")
    denied(lambda: alice.create_token(world.alice, 60), "a reader making a token")
    denied(alice.access, "a reader reading the configuration")
    after = world.admin.access()
    assert (after.users, after.roles, after.tokens) == (before.users, before.roles, before.tokens)


def test_a_reader_cannot_switch_the_balancer(world, alice):
    address = world.addresses[0]
    running = world.admin.balancer_status(address).enabled
    assert alice.balancer_status(address).enabled == running  # reading it needs no role
    denied(lambda: alice.set_balancer(address, not running), "a reader switching a balancer")
    answers = alice.set_balancer_everywhere(not running)
    assert len(answers) == len(world.addresses)
    assert all(isinstance(e, amulet.PermissionDenied) for e in answers.values()), answers
    assert [world.admin.balancer_status(a).enabled for a in world.addresses] == [running] * len(world.addresses)


# ---- tokens ---------------------------------------------------------------------------


@pytest.fixture
def carols_token(world):
    """A token for carol (write on carts), known at every node; revoked
    at the end if the test did not."""
    created = world.admin.create_token(world.carol, ttl_seconds=600)
    everywhere(world.admin, world.addresses, lambda c: c.token(created.id) is not None, "the new token")
    yield created
    try:
        world.admin.revoke_token(created.id)
    except amulet.AmuletError:
        pass


def test_a_created_token_hides_its_secret(world, carols_token):
    match = TOKEN_FORM.fullmatch(carols_token.token)
    assert match is not None and match.group(1) == carols_token.id
    for shown in (repr(carols_token), str(carols_token)):
        assert carols_token.token not in shown and carols_token.token.split(".")[2] not in shown
        assert carols_token.id in shown
    now = time.time()
    assert now + 590 < carols_token.expires_unix_micros / 1e6 < now + 610
    info = world.admin.access().token(carols_token.id)
    assert (info.id, info.user, info.expires_unix_micros) == (carols_token.id, world.carol, carols_token.expires_unix_micros)
    assert carols_token.token.split(".")[2] not in repr(world.admin.access())


def test_a_writers_token_works(world, carols_token):
    carol = world.connect(tls=world.ca, token=carols_token.token)
    assert carols_token.token not in repr(carol) and carol.token_id == carols_token.id
    assert carol.who_am_i() == amulet.WhoAmI(
        user=world.carol, token=carols_token.id, roles=[world.writers], secure=True
    )
    carts = carol.bytes_map(world.carts)
    key = f"carol-{secrets.token_hex(3)}".encode()
    try:
        assert carts.put(key, b"1") is None
        assert world.admin.bytes_map(world.carts).get(key) == b"1"
        # Streams carry the token too: snapshot pages (write includes read) ...
        with carts.snapshot() as snapshot:
            assert dict(snapshot) == {**CARTS, key: b"1"}
        # ... and a tail.
        events = carol.log(world.events)
        position = events.append(b"from carol")
        with events.tail(0) as tail:
            entries = [tail.next(timeout=10) for _ in range(position + 1)]
        assert entries[0] == (0, b"e0") and entries[-1] == (position, b"from carol")
        denied(lambda: carol.bytes_map(world.secret).get(b"s"), "a token's user reading a map not granted")
    finally:
        world.admin.bytes_map(world.carts).remove(key)


def test_amulet_token_is_the_default(world, carols_token, monkeypatch):
    monkeypatch.setenv("AMULET_TOKEN", carols_token.token)
    carol = world.connect(tls=world.ca)
    assert carol.who_am_i().token == carols_token.id


def test_a_forged_token_is_unauthenticated(world, carols_token):
    token = carols_token.token
    forged = token[:-1] + ("0" if token[-1] != "0" else "1")
    assert forged != token and TOKEN_FORM.fullmatch(forged)
    for what, bad in [("forged", forged), ("malformed", "amt1.nonsense"), ("unknown id", f"amt1.{'0' * 16}.{'0' * 64}")]:
        error = refused(amulet.Unauthenticated, lambda: world.connect(tls=world.ca, token=bad), what)
        assert error.code == grpc.StatusCode.UNAUTHENTICATED
        assert bad not in str(error) and token not in str(error), what
    # No certificate and no token.
    error = refused(amulet.Unauthenticated, lambda: world.connect(tls=world.ca, token=False), "no credential")
    assert "no bearer token" in str(error)
    # The real one still works.
    assert world.connect(tls=world.ca, token=token).who_am_i().user == world.carol


def test_a_revoked_token_is_unauthenticated(world, carols_token):
    carol = world.connect(tls=world.ca, token=carols_token)
    carts = carol.bytes_map(world.carts)
    key = f"revoked-{secrets.token_hex(3)}".encode()
    assert carts.put(key, b"before") is None
    try:
        world.admin.revoke_token(carols_token.id)
        # On the client connected before: refused, whatever node it reaches
        # (one that has not executed the revocation yet refuses the request
        # where it is ordered, after it).
        error = refused(amulet.Unauthenticated, lambda: carts.put(key, b"after"), "the token replayed")
        assert carols_token.token not in str(error)
        assert world.admin.bytes_map(world.carts).get(key) == b"before"
        everywhere(world.admin, world.addresses, lambda c: c.token(carols_token.id) is None, "the revocation")
        refused(amulet.Unauthenticated, carol.who_am_i, "who am I with a revoked token")
        # And on a new connection.
        refused(amulet.Unauthenticated, lambda: world.connect(tls=world.ca, token=carols_token), "a new client")
    finally:
        world.admin.bytes_map(world.carts).remove(key)
    carts_unchanged(world)


# ---- revocations while reading ----------------------------------------------------------


def test_a_revoked_grant_ends_an_open_snapshot_and_tail(world, alice):
    """alice gets read on a map and a log of its own; with a snapshot
    iterator and a tail open, the grants are revoked: both end with
    PermissionDenied, and neither opens its stream again."""
    admin = world.admin
    name = f"py-watched-{secrets.token_hex(4)}"
    watched = admin.create_map(name).raw
    watched.put_all([(b"a", b"1"), (b"b", b"2"), (b"c", b"3")])
    log = admin.create_log(f"{name}-log")
    log.append(b"e0")
    admin.grant(world.readers, name, "read")
    admin.grant(world.readers, log.name, "read")
    everywhere(admin, world.addresses, lambda c: c.grant(world.readers, log.name) == "read", "the grants")

    opened = {"snapshot": 0, "tail": 0}
    real_snapshot, real_tail = alice._read_snapshot, alice._tail_log

    def count(what, real):
        def call(*args, **kwargs):
            opened[what] += 1
            return real(*args, **kwargs)

        return call

    alice._read_snapshot = count("snapshot", real_snapshot)
    alice._tail_log = count("tail", real_tail)
    try:
        snapshot = alice.bytes_map(name).snapshot()  # open, no page read yet
        tail = alice.log(log.name).tail(0)
        assert tail.next(timeout=10) == (0, b"e0")
        assert opened["tail"] == 1

        admin.revoke(world.readers, name)
        admin.revoke(world.readers, log.name)
        everywhere(
            admin,
            world.addresses,
            lambda c: c.grant(world.readers, name) is None and c.grant(world.readers, log.name) is None,
            "the revocations",
        )
        with snapshot:
            denied(lambda: next(snapshot), "a snapshot page after the revocation")
            denied(lambda: next(snapshot), "the snapshot again")
        assert opened["snapshot"] == 1

        log.append(b"e1")
        with tail:
            error = denied(lambda: tail.next(timeout=10), "the tail after the revocation")
            assert "needs read" in str(error)
            denied(lambda: tail.next(timeout=10), "the tail again")
            assert tail.reconnects == 0
        assert opened["tail"] == 1
    finally:
        alice._read_snapshot, alice._tail_log = real_snapshot, real_tail
    # Reads of the map are refused from now on; carts is still readable.
    denied(lambda: alice.bytes_map(name).get(b"a"), "a read after the revocation")
    assert alice.bytes_map(world.carts).get(b"k0") == b"v"


def test_unassigning_a_role_takes_its_grants_away(world):
    admin = world.admin
    # A user of its own, so the other tests' alice keeps her role.
    bob = f"bob-{secrets.token_hex(4)}"
    admin.assign_role(bob, world.readers)
    client = world.connect(tls=create_client_certificate(world.tls_dir, bob))
    assert client.bytes_map(world.carts).get(b"k0") == b"v"
    admin.unassign_role(bob, world.readers)
    # Ordered after the change: refused wherever it executes.
    denied(lambda: client.bytes_map(world.carts).get(b"k0"), "a read after the role was taken")
    everywhere(admin, world.addresses, lambda c: c.roles_of(bob) == [], "the unassignment")
    assert client.who_am_i().roles == []
