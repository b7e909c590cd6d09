"""The client: partition-map cache, routing, sessions and retries.

It follows the Rust client (``crates/amulet-client/src/client.rs``), the
reference implementation of the client protocol of
``proto/amulet/v1/amulet.proto``:

- the partition map is cached and fetched again when a node answers
  ``stale-map`` or ``not-a-replica``, or after a map or log is created or
  dropped;
- each operation goes to a random replica of the first partition it
  involves, stamped with the cached map version, leaving out the nodes
  the client suspects (``amulet.suspects``): one that gave no answer to an
  attempt or answered ``behind`` is left out for two attempt timeouts, or
  until it executes an attempt, unless every replica is suspected; every
  choice of a node (session openings, transactions' reads, log tails,
  snapshots, access control, eventual requests) leaves them out too, and
  all but snapshots judge their attempts the same way;
- each operation runs in a session (random id) at the session's next
  sequence number, one operation in flight per session; after
  DEADLINE_EXCEEDED, UNAVAILABLE, a timeout, ``behind`` or ``retryable`` it
  is resent with the *same* sequence, so it applies at most once however
  often it is sent;
- UNAUTHENTICATED and PERMISSION_DENIED (``errors.Unauthenticated``,
  ``errors.PermissionDenied``) are final, when connecting too, and end
  snapshot iterators and log tails rather than reopening their streams;
- with a bearer token (``token=``), every call on every channel, unary
  or streaming, carries ``authorization: Bearer TOKEN``, over TLS only;
- access control (``grant``, ``assign_role``, ``create_token``, ...,
  ``amulet.access``) goes to any node, and is resent elsewhere only when
  no node took it or answered (access changes set a state, so a resend
  does not change more);
- ``session-expired`` reopens the session; a session idle for half its
  lease is renewed with KeepAlive before it is used again;
- a transaction's reads (``ReadAt``) go to a random replica of each
  partition they involve, unordered, and are resent elsewhere after
  ``behind``, ``read-version-elsewhere`` or no answer
  (``amulet.transaction``);
- an eventual map's requests (``EventualGet``/``Put``/``Delete``,
  ``amulet.eventual``) go to the client's current node, which forwards
  them to the key's replicas; they are sent to another node only when the
  node did not take them (see ``amulet.eventual.send``).
"""

from __future__ import annotations

import re
import threading
import time
from typing import Iterable

import grpc

from amulet import access as _access
from amulet import errors
from amulet._rpc import (  # noqa: F401 (BACKOFF_*, _RETRY_CODES: used by log, eventual, transaction)
    _RETRY_CODES,
    _Retry,
    BACKOFF_MAX,
    BACKOFF_MIN,
    AmuletStub,
    error_kind,
    metadata_value,
    open_channel,
)
from amulet.admin import Admin
from amulet.read_at import ReadAt
from amulet.read_versions import ReadVersions
from amulet.routing import Placement, Routing, UnknownMap
from amulet.sessions import SessionPool, SessionSlot
from amulet.suspects import Outcome, Suspects, outcome_of
from amulet.tls import TlsFiles, connect_hint, resolve_credentials
from amulet.v1 import amulet_pb2 as pb


# 1 to 128 ASCII letters, digits, '_', '-', '.' (crates/amulet-dmap/src/map_name.rs).
MAP_NAME = re.compile(r"[A-Za-z0-9_.-]{1,128}")

# Ops that change no state: an abandoned resend of one leaves nothing unknown.
READ_ONLY_OPS = frozenset(
    {
        "get",
        "contains_key",
        "contains_value",
        "size",
        "is_empty",
        "first_entry",
        "last_entry",
        "nearest_entry",
        "range",
        "read_log",
        "log_bounds",
    }
)

# Ops that change the partition map's keyspaces: the map is fetched again
# after them.
KEYSPACE_OPS = frozenset({"create_map", "drop_map", "create_log", "drop_log"})

# Ops that only take or end a read version: giving up on one leaves nothing
# a caller must find out about (an unused read version ends by its lease),
# so it ends in Unavailable rather than OutcomeUnknown.
READ_VERSION_OPS = frozenset({"begin_transaction", "end_transaction"})



class _Attempts:
    """What the attempts of one sequence share.

    ``pinned`` is the partition map they are routed by, kept until a replica
    calls it stale: under a newer map (another thread refreshed the cache)
    the command may belong to another stream (a partition split or merged in
    between), whose session record does not know an execution under the old
    one, so a resend there could apply twice; a replica answers a stale-map
    resend it executed with its reply. ``failed_at`` is the replica the last
    attempt failed at; the next goes elsewhere if it can.
    """

    def __init__(self) -> None:
        self.pinned: Routing | None = None
        self.failed_at: str | None = None


def check_map_name(name: str) -> str:
    if not isinstance(name, str) or not MAP_NAME.fullmatch(name):
        raise errors.InvalidArgument(
            f"bad map name {name!r}: use 1 to 128 ASCII letters, digits, '_', '-' or '.'"
        )
    return name


class Client(Admin, ReadAt):
    """A connection to an Amulet cluster, shared freely between threads.

    ``seeds`` are client API addresses (``host:port``) of any nodes; the
    rest are learned from the partition map. Use it as a context manager
    (or call ``close()``) to close its sessions and channels.

    Timeouts are in seconds: ``attempt_timeout`` bounds one request before
    it is resent elsewhere, ``operation_timeout`` an operation with all its
    retries (and ``transact`` a transaction with all its runs).
    ``transaction_lease`` is how long a transaction's read version stays
    open after its first read: one that has not committed by then fails
    with ``ReadVersionTooOldError`` (and ``transact`` runs it again).

    ``tls`` is an ``amulet.TlsFiles`` (``TlsFiles.from_dir(dir, user)``):
    mutually authenticated TLS to every node, trusting only the cluster CA
    and checking that each node's certificate names ``amulet-node``. Left
    out, it is ``TlsFiles.from_env()`` (``$AMULET_TLS_DIR`` and
    ``$AMULET_USER``) if ``AMULET_TLS_DIR`` is set, else plaintext;
    ``tls=False`` is plaintext whatever the environment says.

    ``token`` is a bearer token (``amt1.ID.SECRET``: a str, or the
    ``amulet.CreatedToken`` of ``create_token``), for a client without a
    certificate of its own: it is sent as ``authorization: Bearer TOKEN``
    with every call, unary and streaming, over TLS trusting the cluster CA
    only (the CA of ``tls``, e.g. ``TlsFiles.ca_only(".../ca.pem")``, or
    without ``tls=`` ``$AMULET_TLS_DIR/ca.pem``; no certificate is
    presented). Left out, it is ``$AMULET_TOKEN`` if set (unless ``tls``
    presents a certificate); ``token=False`` sends none. A token without
    TLS is a ``ValueError``. A bad, unknown, revoked or expired token is
    ``amulet.Unauthenticated``, raised at once (by the constructor, or by
    the operation), never retried. The token shows in no repr, str,
    error message or log line of the client.
    """

    def __init__(
        self,
        seeds: str | Iterable[str],
        *,
        attempt_timeout: float = 2.0,
        operation_timeout: float = 30.0,
        session_lease: float = 120.0,
        snapshot_lease: float = 300.0,
        page_entries: int = 1000,
        range_entries: int = 1000,
        transaction_lease: float = 10.0,
        tls: TlsFiles | bool | None = None,
        token: "str | _access.CreatedToken | bool | None" = None,
    ):
        self.seeds = [seeds] if isinstance(seeds, str) else list(seeds)
        if not self.seeds:
            raise errors.InvalidArgument("no seed address given")
        self.attempt_timeout = attempt_timeout
        self.operation_timeout = operation_timeout
        self.session_lease = session_lease
        self.snapshot_lease = snapshot_lease
        self.page_entries = page_entries
        self.range_entries = range_entries
        self.transaction_lease = transaction_lease
        # The TLS files of every channel, or None: plaintext; the bearer
        # token every call carries, or None (``BearerToken`` hides it).
        self.tls, self._token = resolve_credentials(tls, token)
        self._lock = threading.Lock()
        self._read_versions = ReadVersions()
        self._channels: dict[str, tuple[grpc.Channel, AmuletStub]] = {}
        self._sessions = SessionPool()
        # Nodes left out of choices for a while: two attempt timeouts, so a
        # dead node costs about one timeout per span, and one that comes
        # back is used again soon (as the Rust client).
        self._suspects = Suspects(2 * attempt_timeout)
        self._closed = False
        # The node eventual requests go to (None: one drawn at random).
        self._eventual_node: str | None = None
        self._routing = self._connect()

    # ---- lifecycle -------------------------------------------------------

    def __repr__(self) -> str:
        if self._token is not None:
            auth = f"token id {self._token.id!r} over TLS (CA {self.tls.ca})"
        elif self.tls is not None:
            auth = f"TLS as {self.tls.cert}"
        else:
            auth = "plaintext"
        return f"Client({self.seeds!r}, {auth}{', closed' if self._closed else ''})"

    @property
    def token_id(self) -> str | None:
        """The id of the bearer token the client sends (never the secret),
        or None without one (or for a token not of the form amt1.ID.SECRET)."""
        return None if self._token is None else self._token.id

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        """Closes the idle sessions (best effort: they would expire anyway)
        and every channel."""
        if self._closed:
            return
        self._closed = True
        for slot in self._sessions.drain():
            if not slot.open:
                continue
            try:
                _, stub = self._any_node()
                stub.CloseSession(
                    pb.CloseSessionRequest(session=slot.id, map_version=self._routing.version),
                    timeout=self.attempt_timeout,
                )
            except (grpc.RpcError, errors.AmuletError):
                pass
        with self._lock:
            channels, self._channels = self._channels, {}
        for channel, _ in channels.values():
            channel.close()

    # ---- maps ------------------------------------------------------------

    def map(self, name: str, *, key_codec=None, value_codec=None):
        """A ``MutableMapping`` view of the map ``name`` (which need not exist
        yet), with typed keys (default: one tuple-layer element) and values
        (default: bytes). See ``amulet.codecs``."""
        from amulet.map import AmuletMap

        return AmuletMap(self.bytes_map(name), key_codec=key_codec, value_codec=value_codec)

    def bytes_map(self, name: str):
        """The byte-level API of the map ``name``: one request per call."""
        from amulet.bytemap import ByteMap

        return ByteMap(self, check_map_name(name))

    def create_map(
        self,
        name: str,
        *,
        ranges=None,
        eventual: bool = False,
        replicas: int | None = None,
        vnodes: int | None = None,
        key_codec=None,
        value_codec=None,
    ):
        """Creates the map ``name`` and returns ``map(name)``, or for an
        eventual map ``eventual_map(name)``.

        Without ``ranges`` or ``eventual`` it is hash-partitioned. ``ranges``
        is a list of ``(start_key: bytes, partition_id)``, sorted, the first
        starting at ``b""``: a range-partitioned map whose keys from each
        start up to the next live in that partition.

        With ``eventual=True`` it is an eventual map (``amulet.EventualMap``,
        docs/eventual-maps.md): each key on ``replicas`` distinct nodes
        (default 3; 1 up to the node count), placed by ``vnodes`` virtual
        nodes on a token ring (default 0: the cluster's 16; else 1 to 1,024).
        The cluster refuses counts outside those bounds (``InvalidArgument``,
        reason ``eventual-replicas``). Codecs do not apply to it.

        Raises ``AlreadyExists`` if a map or log has the name.
        """
        if eventual:
            if ranges is not None:
                raise errors.InvalidArgument("an eventual map has no ranges")
            if key_codec is not None or value_codec is not None:
                raise TypeError("an eventual map takes bytes: no key_codec or value_codec")
            from amulet.eventual import quorum

            layout = pb.Layout(
                eventual=pb.EventualLayout(
                    replicas=quorum(3 if replicas is None else replicas, "replicas"),
                    vnodes=quorum(0 if vnodes is None else vnodes, "vnodes"),
                )
            )
        elif replicas is not None or vnodes is not None:
            raise TypeError("replicas and vnodes are for eventual maps (eventual=True)")
        elif ranges is not None:
            layout = pb.Layout(
                range=pb.RangeLayout(
                    splits=[pb.RangeSplit(start_key=bytes(k), partition=p) for k, p in ranges]
                )
            )
        else:
            layout = pb.Layout(hash=pb.HashLayout())
        self.execute("create_map", pb.CreateMap(map=check_map_name(name), layout=layout), Placement(None, "all"))
        if eventual:
            return self.eventual_map(name)
        return self.map(name, key_codec=key_codec, value_codec=value_codec)

    def create_map_if_absent(
        self,
        name: str,
        *,
        eventual: bool = False,
        replicas: int | None = None,
        vnodes: int | None = None,
        key_codec=None,
        value_codec=None,
    ):
        """The map ``name``, created (hash-partitioned, or eventual as
        ``create_map`` makes it) if it does not exist. An existing map is
        returned as it is, whatever its layout."""
        try:
            return self.create_map(
                name, eventual=eventual, replicas=replicas, vnodes=vnodes, key_codec=key_codec, value_codec=value_codec
            )
        except errors.AlreadyExists:
            if eventual:
                return self.eventual_map(name)
            return self.map(name, key_codec=key_codec, value_codec=value_codec)

    def eventual_map(self, name: str):
        """A handle on the eventual map ``name`` (which need not exist yet):
        an ``amulet.EventualMap``, with ``get``, ``put``, ``delete`` and
        ``update`` of ``bytes`` keys and values, siblings and contexts."""
        from amulet.eventual import EventualMap

        return EventualMap(self, check_map_name(name))

    def drop_map(self, name: str) -> None:
        """Drops the map ``name`` and its entries. Raises ``NotFound``."""
        self.execute("drop_map", pb.DropMap(map=check_map_name(name)), Placement(None, "all"))

    # ---- logs ------------------------------------------------------------

    def log(self, name: str):
        """A handle on the log ``name`` (which need not exist yet): an
        ``amulet.DLog``."""
        from amulet.log import DLog

        return DLog(self, check_map_name(name))

    def create_log(self, name: str):
        """Creates the empty log ``name`` and returns ``log(name)``. Maps
        and logs share one namespace: a name a map or log has raises
        ``AlreadyExists``."""
        self.execute("create_log", pb.CreateLog(log=check_map_name(name)), Placement(None, "all"))
        return self.log(name)

    def create_log_if_absent(self, name: str):
        """The log ``name``, created if it does not exist."""
        try:
            return self.create_log(name)
        except errors.AlreadyExists:
            return self.log(name)

    def drop_log(self, name: str) -> None:
        """Drops the log ``name`` and its entries. Raises ``NotFound``."""
        self.execute("drop_log", pb.DropLog(log=check_map_name(name)), Placement(None, "all"))

    def multi_append(self, entries: Iterable[tuple[str, bytes]]) -> list[int]:
        """Appends each ``(log_name, value)`` to its log, all or none, in one
        step of the order: every reader of these logs sees the entries of
        one multi-append in the same order relative to every other append.
        Returns the positions, in the order given; a log named twice gets
        consecutive positions. At least one entry (else
        ``InvalidArgument``), at most the cluster's ``put_all_entries_max``
        entries and ``put_all_bytes_max`` bytes; an unknown log raises
        ``NotFound`` and appends nothing. Resent, it lands once."""
        from amulet.log import _bytes, log_placement

        items = [pb.LogEntry(log=check_map_name(log), value=_bytes(value, "value")) for log, value in entries]
        message = pb.MultiAppend(entries=items)
        # The partitions of every log named; the request goes to the first.
        placement = Placement(None, "across", parts=tuple(log_placement(e.log) for e in items))
        response = self.execute("multi_append", message, placement)
        got = response.WhichOneof("result")
        if got != "positions":
            raise errors.ProtocolError(f"expected a positions reply, got {got}")
        positions = list(response.positions.positions)
        if len(positions) != len(items):
            raise errors.ProtocolError(f"{len(items)} entries appended, {len(positions)} positions returned")
        return positions

    # ---- transactions ----------------------------------------------------

    def transaction(self):
        """Starts a transaction (``amulet.Transaction``). Prefer
        ``transact``, which commits it and runs it again on conflicts; a
        transaction started here ends with ``commit()`` or ``abandon()``
        (leaving a ``with`` block abandons it if it is still open)."""
        from amulet.transaction import Transaction

        if self._closed:
            raise errors.AmuletError("the client is closed")
        return Transaction(self)

    def transact(self, fn, /, *args, **kwargs):
        """Runs ``fn(tx, *args, **kwargs)`` in a new transaction ``tx`` and
        commits it; returns what ``fn`` returned.

        On ``ConflictError`` or ``ReadVersionTooOldError`` (from the commit
        or from a read of ``fn``) it runs ``fn`` again in a new transaction,
        after a pause that doubles each time (10 ms up to 0.5 s, with
        random jitter), until it commits or ``operation_timeout`` has
        passed since the first run; then the last error propagates. Any
        other exception of ``fn`` or of the commit abandons the
        transaction and propagates at once.

        ``fn`` may run several times: keep its effects inside the
        transaction. It may call ``tx.abandon()`` to give up without
        writing (``transact`` then returns its result); it need not commit.
        """
        from amulet.transaction import run_transaction

        return run_transaction(self, fn, args, kwargs)

    # ---- eventual maps (used by amulet.eventual) -----------------------------

    def _eventual(self, method: str, request, *, write: bool):
        """One request of an eventual map: ``method`` is ``"EventualGet"``
        (``write`` False), ``"EventualPut"`` or ``"EventualDelete"``
        (``write`` True). Returns an ``amulet.Versioned`` or raises an
        ``AmuletError``. Which node it goes to, and when it is sent to
        another: ``amulet.eventual.send``."""
        from amulet.eventual import send

        return send(self, method, request, write=write)

    # ---- cluster ---------------------------------------------------------

    def partition_map(self) -> Routing:
        """The cached partition map (do not modify it)."""
        return self._routing

    def status(self, address: str) -> pb.StatusResponse:
        """The Status of the node at ``address``."""
        try:
            return self._stub(address).Status(pb.StatusRequest(), timeout=self.attempt_timeout)
        except grpc.RpcError as e:
            raise errors.from_status(e.code(), e.details() or "") from None

    def refresh_map(self, address: str | None = None) -> None:
        """Fetches the partition map (from ``address``, or any node) and
        keeps it if it is not older than the cached one."""
        try:
            if address is None:
                address, _ = self._any_node()
            routing = self._fetch_map(address)
        except (grpc.RpcError, errors.AmuletError, ValueError):
            return
        with self._lock:
            if routing.version >= self._routing.version:
                self._routing = routing

    # ---- the protocol ----------------------------------------------------

    def execute(self, op: str, message, placement: Placement) -> pb.MapResponse:
        """Runs one map request (``op`` is the MapRequest oneof field, e.g.
        ``"put"``) in a session, retrying as the protocol allows; returns the
        MapResponse or raises an ``AmuletError``."""
        if self._closed:
            raise errors.AmuletError("the client is closed")
        slot = self._sessions.take()
        address = None
        try:
            response, address = self._execute_in(slot, op, message, placement)
            return response
        finally:
            # The sequence is used up whatever happened: a later operation
            # must not be mistaken for a resend of this one.
            slot.next_sequence += 1
            self._sessions.give_back(slot)
            if op in KEYSPACE_OPS:
                # The map version moved; the node that answered has the new
                # map, so later requests carry its version and replicas not
                # there yet answer "behind" rather than "no such map".
                self.refresh_map(address)
                if address is not None:
                    # Eventual requests carry no map version: send them to
                    # the node that has executed the change.
                    self._eventual_node = address

    def _execute_in(self, slot: SessionSlot, op: str, message, placement: Placement):
        deadline = time.monotonic() + self.operation_timeout
        backoff = BACKOFF_MIN
        maybe_applied = False
        attempts = _Attempts()
        while True:
            try:
                self._ensure_session(slot)
                return self._attempt(slot, op, message, placement, attempts)
            except _Retry as retry:
                maybe_applied |= retry.maybe_applied
                last = str(retry)
                if retry.stale_map:
                    attempts.pinned = None
            if time.monotonic() + backoff >= deadline:
                why = f"gave up after {self.operation_timeout}s: {last}"
                if maybe_applied and op not in READ_ONLY_OPS and op not in READ_VERSION_OPS:
                    raise errors.OutcomeUnknown(why)
                raise errors.Unavailable(why)
            time.sleep(backoff)
            backoff = min(backoff * 2, BACKOFF_MAX)

    def _ensure_session(self, slot: SessionSlot) -> None:
        """Opens the session, or renews it with KeepAlive if half its lease
        has passed since it was last renewed, at any node not suspected.
        The outcome is judged as a command's: a client opening its session
        while a node is dead for good would draw it again and again."""
        if slot.open and time.monotonic() - slot.renewed <= self.session_lease / 2:
            return
        address, stub = self._any_node()
        request = pb.OpenSessionRequest(
            session=slot.id,
            lease_micros=int(self.session_lease * 1_000_000),
            map_version=self._routing.version,
        )
        call = stub.KeepAlive if slot.open else stub.OpenSession
        sent = time.monotonic()
        try:
            call(request, timeout=self.attempt_timeout)
        except grpc.RpcError as e:
            self._suspects.judge(address, outcome_of(e))
            self._on_error(e, slot, address)
        self._suspects.judge(address, Outcome.DONE)
        slot.open = True
        slot.renewed = sent

    def _attempt(self, slot: SessionSlot, op: str, message, placement: Placement, attempts: _Attempts):
        if attempts.pinned is None:
            attempts.pinned = self._routing
        routing = attempts.pinned
        partition = routing.first_partition(placement)
        replicas = routing.replica_addresses(partition)
        if not replicas:
            raise errors.ProtocolError(f"no address for a replica of partition {partition}")
        address = self._suspects.choose(replicas, avoid=attempts.failed_at)
        attempts.failed_at = address
        request = pb.MapRequest(
            header=pb.RequestHeader(
                map_version=routing.version,
                partition=partition,
                session=slot.id,
                sequence=slot.next_sequence,
            ),
            **{op: message},
        )
        try:
            response = self._stub(address).Execute(request, timeout=self.attempt_timeout)
        except grpc.RpcError as e:
            self._suspects.judge(address, outcome_of(e))
            self._on_error(e, slot, address)
        self._suspects.judge(address, Outcome.DONE)
        attempts.failed_at = None
        return response, address

    def _on_error(self, error: grpc.RpcError, slot: SessionSlot | None, address: str):
        """Raises _Retry for what the protocol retries, else the final error
        (``slot`` is None for unordered requests, which have no session)."""
        code, message, kind = error.code(), error.details() or "", error_kind(error)
        if kind in ("stale-map", "not-a-replica"):
            self.refresh_map()
            raise _Retry(f"{address}: {message}", maybe_applied=False, stale_map=True)
        if kind == "session-expired" and slot is not None:
            slot.open = False
            raise _Retry(f"{address}: {message}", maybe_applied=False)
        if kind == "conflict":
            conflict_map = metadata_value(error, "amulet-conflict-map")
            if isinstance(conflict_map, bytes):
                conflict_map = conflict_map.decode(errors="replace")
            conflict_key = metadata_value(error, "amulet-conflict-key-bin")
            raise errors.ConflictError(
                message, code, map=conflict_map, key=None if conflict_key is None else bytes(conflict_key)
            )
        if kind == "read-version-too-old":
            raise errors.ReadVersionTooOldError(message, code)
        if kind in ("behind", "retryable"):
            # Not ordered (behind) or refused for a passing state of the
            # cluster (retryable): resend with the same sequence.
            raise _Retry(f"{address}: {message}", maybe_applied=False)
        if kind == "stale-sequence":
            raise errors.ProtocolError("the session ran ahead of this client", code)
        if kind == "reply-lost":
            raise errors.OutcomeUnknown(message, code)
        if code in _RETRY_CODES:
            raise _Retry(f"{self._peer(address)}: {code.name}: {message}", maybe_applied=True)
        raise errors.from_status(code, message)

    # ---- channels and the map --------------------------------------------

    def _stub(self, address: str) -> AmuletStub:
        """The stub of ``address``'s channel, opened once and reused (gRPC
        channels are thread-safe and multiplex calls)."""
        with self._lock:
            entry = self._channels.get(address)
            if entry is None:
                channel = open_channel(address, self.tls, self._token)
                entry = (channel, AmuletStub(channel))
                self._channels[address] = entry
            return entry[1]

    def _peer(self, address: str) -> str:
        """``address`` for failure messages, saying whether it was over TLS
        (and with a token: never the token itself)."""
        if self.tls is None:
            return address
        if self._token is not None:
            return f"{address} (over TLS with a bearer token)"
        return f"{address} (over TLS)"

    def _any_node(self) -> tuple[str, AmuletStub]:
        """A random node of the cached map (else a seed), not suspected
        unless every one is."""
        addresses = list(self._routing.addresses.values()) or self.seeds
        address = self._suspects.choose(addresses)
        return address, self._stub(address)

    def _global_node(self) -> tuple[str, AmuletStub]:
        """A node that orders and executes the global stream by the cached
        map (a random replica of its first partition, not suspected unless
        every one is), else any node: a member that replicates nothing (a
        spare, or one whose partitions moved away) answers a
        reconfiguration ``not-a-replica``."""
        routing = self._routing
        replicas = routing.replica_addresses(min(routing.partitions)) if routing.partitions else []
        if not replicas:
            return self._any_node()
        address = self._suspects.choose(replicas)
        return address, self._stub(address)

    def _fetch_map(self, address: str) -> Routing:
        message = self._stub(address).GetPartitionMap(
            pb.GetPartitionMapRequest(), timeout=self.attempt_timeout
        )
        return Routing.from_pb(message)

    def _connect(self) -> Routing:
        deadline = time.monotonic() + self.operation_timeout
        backoff = BACKOFF_MIN
        last = ""
        while True:
            for seed in self.seeds:
                try:
                    return self._fetch_map(seed)
                except grpc.RpcError as e:
                    if e.code() in errors.CREDENTIALS_CODES:
                        # Credentials do not get better by retrying, nor at
                        # another node of the same cluster.
                        self.close()
                        raise errors.from_status(e.code(), f"{self._peer(seed)}: {e.details() or ''}") from None
                    last = f"{seed}: {e.code().name}: {e.details()}"
                except ValueError as e:
                    last = f"{seed}: {e}"
            if time.monotonic() + backoff >= deadline:
                self.close()
                raise errors.Unavailable(f"no seed answered with a partition map ({last}){connect_hint(self.tls, last)}")
            time.sleep(backoff)
            backoff = min(backoff * 2, BACKOFF_MAX)

    # ---- log tails (used by amulet.log) -----------------------------------

    def _tail_log(self, name: str, from_: int, avoid: str | None = None):
        """Opens a ``TailLog`` stream of the log ``name`` from position
        ``from_`` at a random replica of the partition holding it by the
        cached map (not suspected unless every one is; another than
        ``avoid`` when there is one); at any node when the cached map does
        not know the log (it says whether the log exists, and sends its
        newer map if it does). Returns the address and the call: an
        iterator of ``LogEntries`` that raises the stream's failure
        (``grpc.RpcError``), cancelled with ``cancel()``. The call has no
        deadline: a tail lasts until it is cancelled."""
        if self._closed:
            raise errors.AmuletError("the client is closed")
        from amulet.log import log_placement

        routing = self._routing
        try:
            replicas = routing.replica_addresses(routing.partitions_for(log_placement(name))[0])
        except UnknownMap:
            replicas = []
        if not replicas:
            replicas = list(routing.addresses.values()) or list(self.seeds)
        address = self._suspects.choose(replicas, avoid=avoid)
        # The map version: a replica whose map is older (it has not
        # executed the log's creation yet, say) waits for it, then answers
        # UNAVAILABLE behind rather than a false NOT_FOUND.
        request = pb.TailLogRequest(log=name, max_bytes=0, map_version=routing.version, **{"from": from_})
        return address, self._stub(address).TailLog(request)

    # ---- snapshots (used by amulet.snapshot) -------------------------------

    def _read_snapshot(self, partition: int, snapshot: int, after: bytes | None):
        """A stream of one partition's pages of a snapshot, after ``after``,
        from a random replica (not suspected unless every one is). The
        stream's deadline is the snapshot lease: the snapshot is gone by
        then anyway."""
        replicas = self._routing.replica_addresses(partition)
        if not replicas:
            raise errors.ProtocolError(f"no address for a replica of partition {partition}")
        request = pb.ReadSnapshotRequest(partition=partition, snapshot=snapshot, page_size=self.page_entries)
        if after is not None:
            request.after = after
        return self._stub(self._suspects.choose(replicas)).ReadSnapshot(request, timeout=self.snapshot_lease)
