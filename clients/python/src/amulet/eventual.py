"""Eventual maps (DottedDB, docs/eventual-maps.md): Dynamo-like maps whose
keys live on ``replicas`` nodes each, served without ordering and writable
on any side of a partition.

A read returns every concurrent value of the key (its *siblings*) with an
opaque causal ``Context``; a write or delete given that context supersedes
exactly the values the read returned, and keeps any value written
concurrently (which the read did not see) as a sibling. A write without a
context supersedes nothing: it adds a sibling.

    carts = client.create_map("carts", eventual=True, replicas=3)
    carts.put(b"alice", b"book")                     # no context: a sibling
    seen = carts.get(b"alice")                       # Versioned(values, context)
    carts.put(b"alice", b"book+pen", seen.context)   # supersedes what it saw
    carts.update(b"alice", lambda values: merge(values))  # read, merge, write

``r`` and ``w`` are how many of the key's replicas must answer (0: a
majority of the map's replicas, decided by the node; at most the map's
replica count, else ``InvalidArgument``). A request goes to the client's
current node, which forwards it to the key's replicas; see ``send`` for
when it is sent to another node.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import grpc

from amulet import errors
from amulet._rpc import error_kind, metadata_value
from amulet.client import _RETRY_CODES, BACKOFF_MAX, BACKOFF_MIN, Client
from amulet.suspects import Outcome, outcome_of
from amulet.v1 import amulet_pb2 as pb

__all__ = ["Context", "EventualMap", "Versioned"]

_U32_MAX = 2**32 - 1

# How long a node waits for an eventual request's r or w replicas before it
# answers quorum-not-reached (seconds; proto/amulet/v1/amulet.proto): an
# eventual request's deadline is attempt_timeout plus this, so that the
# node's own verdict comes first.
EVENTUAL_QUORUM_WAIT = 2.0

# The amulet-error kinds (or amulet-reason) of a refusal that changed
# nothing and that another attempt may cure: the node's partition map is
# stale or behind, or a passing state of the cluster.
_EVENTUAL_RESEND_KINDS = frozenset({"stale-map", "not-a-replica", "behind", "retryable"})


class Context:
    """An opaque causal context, as a node returned it with a key's values.

    Pass it back unchanged with a write or delete of the same key (and map)
    to supersede what that reply covered. It can be kept as bytes
    (``bytes(ctx)``, ``ctx.hex()``) and rebuilt later with
    ``Context.from_bytes`` / ``Context.from_hex``: the client never looks
    inside; the node refuses bytes that do not decode as a context
    (``InvalidArgument``, reason ``bad-context``). The empty context
    (``Context()``, false in a boolean test) covers nothing. Immutable and
    hashable; equal when the bytes are."""

    __slots__ = ("_data",)

    def __init__(self, data: bytes = b""):
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise TypeError(f"a context is made of bytes, not {type(data).__name__}")
        object.__setattr__(self, "_data", bytes(data))

    @classmethod
    def from_bytes(cls, data: bytes) -> "Context":
        """The context whose bytes are ``data`` (as ``bytes(ctx)`` gave them)."""
        return cls(data)

    @classmethod
    def from_hex(cls, text: str) -> "Context":
        """The context whose hex form (``ctx.hex()``) is ``text``."""
        return cls(bytes.fromhex(text))

    def hex(self) -> str:
        return self._data.hex()

    def __bytes__(self) -> bytes:
        return self._data

    def __len__(self) -> int:
        return len(self._data)

    def __bool__(self) -> bool:
        return bool(self._data)

    def __eq__(self, other) -> bool:
        if not isinstance(other, Context):
            return NotImplemented
        return self._data == other._data

    def __hash__(self) -> int:
        return hash((Context, self._data))

    def __setattr__(self, name, value):
        raise AttributeError("a Context is immutable")

    def __delattr__(self, name):
        raise AttributeError("a Context is immutable")

    def __reduce__(self):
        return (Context, (self._data,))

    def __str__(self) -> str:
        return self.hex()

    def __repr__(self) -> str:
        text = self.hex()
        if len(text) > 64:
            text = f"{text[:64]}...({len(self._data)} bytes)"
        return f"Context({text!r})"


@dataclass(frozen=True)
class Versioned:
    """A key's siblings (``values``: every concurrent value, in the node's
    order; empty when the key has none) and the ``context`` covering them.

    For a read, the values the replicas that answered hold; for a write or
    delete, the values at the replica that took it, after it (a write's
    own value among them)."""

    values: list[bytes]
    context: Context

    @classmethod
    def from_pb(cls, message: pb.Versioned) -> "Versioned":
        return cls(values=[bytes(v) for v in message.values], context=Context(message.context))


def _bytes(value, what: str) -> bytes:
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    raise TypeError(f"{what} must be bytes, not {type(value).__name__}")


def quorum(value, what: str) -> int:
    """``r`` or ``w`` as the proto carries it: an int in 0..=2**32-1 (0:
    a majority). The node refuses one above the map's replica count."""
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"{what} must be an int, not {type(value).__name__}")
    if not 0 <= value <= _U32_MAX:
        raise errors.InvalidArgument(f"{what} {value} outside 0..={_U32_MAX}")
    return value


def context_bytes(context) -> bytes:
    """The bytes a request carries for ``context``: a ``Context``, the
    ``Versioned`` a read returned (its context), or None (empty: supersede
    nothing)."""
    if context is None:
        return b""
    if isinstance(context, Versioned):
        context = context.context
    if isinstance(context, Context):
        return bytes(context)
    raise TypeError(
        f"context must be an amulet.Context (or a Versioned, or None), not {type(context).__name__}; "
        "wrap stored bytes with Context.from_bytes"
    )


def get_request(name: str, key, r: int = 0) -> pb.EventualGetRequest:
    return pb.EventualGetRequest(map=name, key=_bytes(key, "key"), r=quorum(r, "r"))


def put_request(name: str, key, value, context=None, w: int = 0) -> pb.EventualPutRequest:
    return pb.EventualPutRequest(
        map=name,
        key=_bytes(key, "key"),
        value=_bytes(value, "value"),
        context=context_bytes(context),
        w=quorum(w, "w"),
    )


def delete_request(name: str, key, context=None, w: int = 0) -> pb.EventualDeleteRequest:
    return pb.EventualDeleteRequest(map=name, key=_bytes(key, "key"), context=context_bytes(context), w=quorum(w, "w"))


# ---- sending a request (Client._eventual) ----------------------------------


def send(client: Client, method: str, request, *, write: bool) -> Versioned:
    """One request of an eventual map of ``client``: ``method`` is
    ``"EventualGet"`` (``write`` False), ``"EventualPut"`` or
    ``"EventualDelete"`` (``write`` True). Returns an ``amulet.Versioned``
    or raises an ``AmuletError``.

    The request goes to the client's current node (drawn at random
    first, leaving out the nodes the client suspects: ``amulet.suspects``,
    which judges every attempt here as a command's; after a map or log is
    created or dropped, the node that executed that), which forwards it to
    the key's replicas. It is sent to another node, one not tried yet
    (after every node, after a pause doubling from 10 ms to 0.5 s), until
    ``operation_timeout``, only when the node did not take it:

    - UNAVAILABLE without ``amulet-error`` or ``amulet-reason``: the
      connection was refused, or the node is stopping or not ready;
    - a refusal the client handles itself (``stale-map``,
      ``not-a-replica``, ``behind``, ``retryable``);
    - NOT_FOUND while the newest partition map the client can get still
      has the map: the node has not executed its creation yet;
    - and for a read only, no answer in time (DEADLINE_EXCEEDED,
      CANCELLED, UNKNOWN): reading again is harmless.

    A write that got no answer in time raises ``OutcomeUnknown`` at once:
    it may have taken effect, and sending it again would add its value a
    second time, as a sibling. ``quorum-not-reached`` raises
    ``QuorumNotReached`` at once, for a read too (another node would
    wait for the same replicas). Anything else is final
    (``errors.from_status``). When every resend failed, the last
    failure is raised: ``Unavailable``, or ``NotFound``.

    A connection broken after the node took a write also ends in
    UNAVAILABLE without a reason, which gRPC does not tell apart from a
    refused one; that write is sent again too, and may then show twice
    (as two siblings of one value) until a write with a context that
    covers both supersedes them.
    """
    if client._closed:
        raise errors.AmuletError("the client is closed")
    deadline = time.monotonic() + client.operation_timeout
    backoff = BACKOFF_MIN
    tried: set[str] = set()
    while True:
        address = _address(client, tried)
        try:
            reply = getattr(client._stub(address), method)(
                request, timeout=client.attempt_timeout + EVENTUAL_QUORUM_WAIT
            )
        except grpc.RpcError as e:
            # As a command's attempt: no answer suspects the node for a
            # while (``amulet.suspects``), so the next choice leaves it out.
            client._suspects.judge(address, outcome_of(e))
            # Raises what is final; returns what to raise if no resend works.
            last = _failure(client, e, address, request.map, write)
            tried.add(address)
            if client._eventual_node == address:
                client._eventual_node = None
        else:
            client._suspects.judge(address, Outcome.DONE)
            client._eventual_node = address
            return Versioned.from_pb(reply)
        if not _untried(client, tried):
            # Every node tried in this round: pause, then all again.
            if time.monotonic() + backoff >= deadline:
                raise last
            time.sleep(backoff)
            backoff = min(backoff * 2, BACKOFF_MAX)
            tried.clear()
        elif time.monotonic() >= deadline:
            raise last


def _untried(client: Client, tried: set[str]) -> list[str]:
    addresses = list(client._routing.addresses.values()) or list(client.seeds)
    return [a for a in addresses if a not in tried]


def _address(client: Client, tried: set[str]) -> str:
    """The current node, or (if it failed in this round or is gone from
    the map) a random one not tried yet, not suspected unless every one
    is (``amulet.suspects``), which becomes current."""
    untried = _untried(client, tried)
    current = client._eventual_node
    if current is not None and current in untried:
        return current
    address = client._suspects.choose(untried or list(client._routing.addresses.values()) or list(client.seeds))
    client._eventual_node = address
    return address


def _failure(client: Client, error: grpc.RpcError, address: str, map_name: str, write: bool) -> errors.AmuletError:
    """Raises the error a failed eventual request ends with, or returns
    the one to raise if no resend succeeds (the request may be sent
    again: see ``send``)."""
    code, message = error.code(), error.details() or ""
    kind = error_kind(error)
    reason = metadata_value(error, "amulet-reason")
    if isinstance(reason, bytes):
        reason = reason.decode(errors="replace")
    why = f"{client._peer(address)}: {code.name}: {message}"
    if "quorum-not-reached" in (kind, reason):
        raise errors.QuorumNotReached(message, code)
    if kind in _EVENTUAL_RESEND_KINDS:
        if kind in ("stale-map", "not-a-replica"):
            client.refresh_map()
        return errors.Unavailable(f"gave up after {client.operation_timeout}s: {why}", code)
    if kind == "reply-lost":
        raise errors.OutcomeUnknown(message, code)
    if code == grpc.StatusCode.UNAVAILABLE and kind is None and reason is None:
        # The node did not take it (down, stopping, not ready).
        return errors.Unavailable(f"gave up after {client.operation_timeout}s: {why}", code)
    if code in _RETRY_CODES:
        if write:
            # The next request tries another node.
            if client._eventual_node == address:
                client._eventual_node = None
            raise errors.OutcomeUnknown(f"{why} (the write may have taken effect)", code)
        return errors.Unavailable(f"gave up after {client.operation_timeout}s: {why}", code)
    if code == grpc.StatusCode.NOT_FOUND:
        # Eventual requests carry no map version: a node that has not
        # executed the map's creation yet does not know it.
        client.refresh_map()
        if map_name in client._routing.keyspaces:
            return errors.NotFound(message, code)
    raise errors.from_status(code, message)


class EventualMap:
    """A handle on the eventual map ``name`` of ``client`` (which need not
    exist yet: a request to an unknown map raises ``NotFound``); cheap,
    shareable between threads. Keys and values are ``bytes``.

    Every call is one request (``EventualGet``, ``EventualPut``,
    ``EventualDelete``), sent to the client's current node. Errors:
    ``NotFound`` (no such map), ``FailedPrecondition`` (the map is an
    ordered one: use ``client.map``), ``InvalidArgument`` (``r`` or ``w``
    above the map's replica count, a context that does not decode, a key or
    value too large), ``QuorumNotReached`` (fewer than ``r`` or ``w``
    replicas answered: a write may have taken effect), ``Unavailable`` (no
    node could be reached), ``OutcomeUnknown`` (a write got no answer in
    time: it may have taken effect).
    """

    def __init__(self, client, name: str):
        self.client = client
        self.name = name

    def __repr__(self) -> str:
        return f"EventualMap({self.name!r})"

    def get(self, key: bytes, r: int = 0) -> Versioned:
        """The key's siblings and their context, merged from ``r`` replicas
        (0: a majority). A key never written (or deleted) has no values."""
        return self.client._eventual("EventualGet", get_request(self.name, key, r), write=False)

    def put(self, key: bytes, value: bytes, context=None, w: int = 0) -> Versioned:
        """Writes ``value``, superseding the values ``context`` covers (a
        ``Context`` or the ``Versioned`` of an earlier read or write of
        this key; None supersedes nothing: the value becomes one more
        sibling). Returns the key's values and context at the replica that
        took the write, after it; ``w`` replicas (0: a majority) hold the
        write when it returns."""
        return self.client._eventual("EventualPut", put_request(self.name, key, value, context, w), write=True)

    def delete(self, key: bytes, context=None, w: int = 0) -> Versioned:
        """Removes the values ``context`` covers (None: none; a value
        written concurrently stays). Returns the values left and their
        context at the replica that took the delete."""
        return self.client._eventual("EventualDelete", delete_request(self.name, key, context, w), write=True)

    def update(self, key: bytes, fn: Callable[[list[bytes]], bytes | None], r: int = 0, w: int = 0) -> Versioned:
        """Reads the key (``r``), calls ``fn(values)`` with its siblings (an
        empty list when it has none) and writes what ``fn`` returns with the
        read's context, so that it supersedes every value ``fn`` saw (a value
        written meanwhile stays as a sibling, for the next read to merge).
        If ``fn`` returns None the values it saw are deleted instead.
        Returns the write's (or delete's) ``Versioned``. Nothing is retried:
        an exception of ``fn`` propagates and nothing is written."""
        read = self.get(key, r)
        value = fn(list(read.values))
        if value is None:
            return self.delete(key, read.context, w)
        return self.put(key, value, read.context, w)
