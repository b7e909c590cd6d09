"""Named shared logs (DLog, docs/logs.md): append, read by position, trim,
bounds, and a tail that follows new entries.

A log's entries sit at dense positions 0, 1, 2, ... that are never reused
(a trim drops the entries below a position; the next append still gets the
end). Logs and maps share one namespace. A log lives whole in the partition
that owns its name: its requests are routed as a single-key request of the
hash keyspace named like the log, with the log name's UTF-8 bytes as the
key. Follows ``crates/amulet-client/src/log.rs``.

A tail follows the log on a server stream (``TailLog``) from a replica of
its partition, reopened elsewhere from the position after the last entry
received when it breaks (no gap, no duplicate); against a node without
``TailLog`` it polls with linearizable reads.

    log = client.create_log_if_absent("events")
    position = log.append(b"hello")              # exactly once, even if resent
    read = log.read(0, 100)                      # LogEntries(from_, entries, first, end)
    with log.tail(read.end) as tail:             # closing it cancels its stream
        for position, value in tail:             # blocks, waiting for new entries
            ...
"""

from __future__ import annotations

import threading
import time
import weakref
from collections import deque
from dataclasses import dataclass
from typing import Iterator

import grpc

from amulet import errors
from amulet._rpc import error_kind
from amulet.client import BACKOFF_MAX, BACKOFF_MIN
from amulet.routing import Placement
from amulet.suspects import Outcome, outcome_of
from amulet.v1 import amulet_pb2 as pb

__all__ = ["DLog", "LogBounds", "LogEntries", "Tail", "log_placement"]

# Entries one polling read asks for (as the Rust client's Tail).
TAIL_READ_ENTRIES = 1024
# The first pause of a caught-up polling tail, doubled up to its max_poll
# (seconds).
TAIL_POLL_MIN = 0.001
# A TailLog stream silent this long (the node sends a heartbeat about every
# second while nothing is appended) is taken as broken: it is cancelled and
# reopened elsewhere (seconds; the Rust client's TAIL_IDLE).
TAIL_IDLE = 5.0
# Messages of a TailLog stream held ahead of a tail's consumer (each at
# most the node's log_read_bytes_max, 4 MiB by default, or one larger
# entry): past that the reader thread, and through gRPC's flow control the
# node, waits for the consumer. A tail holds at most these, the message it
# is handing out and the one its reader thread has in hand.
TAIL_QUEUE_MESSAGES = 2

_U64_MAX = 2**64 - 1
_U32_MAX = 2**32 - 1


@dataclass(frozen=True)
class LogEntries:
    """Entries of one read, at positions ``from_``, ``from_ + 1``, ...;
    ``first`` and ``end`` are the log's bounds when it was read."""

    from_: int
    entries: list[bytes]
    # The log's first position when read (below it: trimmed).
    first: int
    # The log's end when read: the position of its next append.
    end: int


@dataclass(frozen=True)
class LogBounds:
    """A log's first position still held (everything below was trimmed) and
    its end (the position the next append gets)."""

    first: int
    end: int


def log_placement(name: str) -> Placement:
    """Where the requests of the log ``name`` go: the partition owning the
    key ``name`` (its UTF-8 bytes) of the keyspace ``name``."""
    return Placement(name, "one", (name.encode(),))


def _expect(response: pb.MapResponse, field: str):
    got = response.WhichOneof("result")
    if got != field:
        raise errors.ProtocolError(f"expected a {field} reply, got {got}")
    return getattr(response, field)


def _bytes(value, what: str) -> bytes:
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    raise TypeError(f"{what} must be bytes, not {type(value).__name__}")


def _uint(value, what: str, largest: int) -> int:
    """An integer the proto can carry; anything else is refused before
    sending (``TypeError`` for a non-integer, ``InvalidArgument`` outside
    0..=largest)."""
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"{what} must be an int, not {type(value).__name__}")
    if not 0 <= value <= largest:
        raise errors.InvalidArgument(f"{what} {value} outside 0..={largest}")
    return value


def _bounds(response: pb.MapResponse) -> LogBounds:
    bounds = _expect(response, "log_bounds")
    return LogBounds(first=bounds.first, end=bounds.end)


class DLog:
    """A handle on the log ``name`` of ``client`` (which need not exist
    yet); cheap, shareable between threads. Every call is one request;
    errors are ``amulet.AmuletError``s: ``NotFound`` for an unknown log,
    ``OutOfRange`` for a position outside it, ``InvalidArgument`` for a bad
    request (a value above the cluster's ``value_bytes_max``, ...)."""

    def __init__(self, client, name: str):
        self.client = client
        self.name = name

    def __repr__(self) -> str:
        return f"DLog({self.name!r})"

    def _execute(self, op: str, message) -> pb.MapResponse:
        return self.client.execute(op, message, log_placement(self.name))

    def append(self, value: bytes) -> int:
        """Appends ``value``; returns its position. Like every write it runs
        in a session: resent after a lost answer, it lands once."""
        message = pb.Append(log=self.name, value=_bytes(value, "value"))
        return _expect(self._execute("append", message), "position")

    def read(self, from_: int, max_entries: int = 1000) -> LogEntries:
        """Up to ``max_entries`` (1 to the cluster's ``range_entries_max``)
        entries from position ``from_``: fewer when the node's byte limit
        per read is reached, but at least one when one exists. ``from_``
        equal to the end reads nothing; below the first position (trimmed)
        or past the end raises ``OutOfRange``. One linearizable read."""
        message = pb.ReadLog(
            log=self.name,
            max_entries=_uint(max_entries, "max_entries", _U32_MAX),
            **{"from": _uint(from_, "position", _U64_MAX)},
        )
        read = _expect(self._execute("read_log", message), "log_entries")
        return LogEntries(
            from_=getattr(read, "from"),
            entries=list(read.entries),
            first=read.first,
            end=read.end,
        )

    def trim(self, below: int) -> LogBounds:
        """Drops the entries below position ``below`` (at most the end,
        else ``OutOfRange``; below the first position nothing changes);
        returns the bounds after."""
        message = pb.TrimLog(log=self.name, below=_uint(below, "position", _U64_MAX))
        return _bounds(self._execute("trim_log", message))

    def bounds(self) -> LogBounds:
        """The log's first position and end."""
        return _bounds(self._execute("log_bounds", pb.LogBounds(log=self.name)))

    def tail(self, from_: int, max_poll: float = 0.1) -> "Tail":
        """Follows the log from position ``from_``: iterating the ``Tail``
        yields every ``(position, value)`` from there in order, blocking
        for new ones (it never ends by itself: ``break`` out of it, or use
        ``Tail.next(timeout=...)``; close it, or use it as a context
        manager, to cancel its stream).

        The entries come on a server stream (``TailLog``) from a random
        replica of the log's partition as it executes them (leaving out the
        nodes the client suspects, ``amulet.suspects``, unless every
        replica is suspected). When the stream breaks (the node stopped or
        is catching up, the log moved, no message, not even a heartbeat,
        for ``TAIL_IDLE`` seconds) the tail reopens it at another replica
        (unless the one that failed is the only one not suspected: a
        stream that got no answer or ``behind`` suspects its node too),
        from the position after the last entry it got, with the client's
        backoff: no gap, no duplicate. It raises ``Unavailable`` when no
        stream could be kept open for the client's ``operation_timeout``.
        Against a node without ``TailLog`` it polls with linearizable
        reads instead, the pause growing from 1 ms to ``max_poll``
        seconds. Before its first stream the tail checks ``from_`` with a
        linearizable read of the log's bounds: below the first position
        (trimmed) or past the end raises ``OutOfRange``, an unknown log
        ``NotFound``, as a read from there would. A tail that falls below
        a trim later raises ``OutOfRange``; a dropped log ``NotFound`` (a
        stream's NOT_FOUND is checked by a linearizable read of the bounds
        too: if the log exists, the replica was behind its creation and
        the stream is reopened elsewhere). Every stream request carries the cached
        partition map's version: a replica with an older map waits for it,
        then answers UNAVAILABLE (reopened elsewhere). Resume after a failure
        with ``tail.position`` (the position after the last entry
        yielded)."""
        return Tail(self, _uint(from_, "position", _U64_MAX), max_poll)


# ---- the tail ---------------------------------------------------------------------

# Stream failures that are the tail's own (unknown or dropped log, trimmed
# past, bad request, refused credentials) rather than the replica's: no
# other replica would answer differently. FAILED_PRECONDITION is final too
# unless it is ``not-a-replica`` (the log lives elsewhere: refresh the
# map, go there).
# NOT_FOUND is checked with a linearizable read first: a replica that has
# not executed the log's creation yet answers it too when the client's
# cached map is as old as its own (every call carries the cached map's
# version; a replica with an older map waits for it, then answers
# UNAVAILABLE behind).
_FINAL_CODES = frozenset(
    {grpc.StatusCode.NOT_FOUND, grpc.StatusCode.OUT_OF_RANGE, grpc.StatusCode.INVALID_ARGUMENT}
) | errors.CREDENTIALS_CODES

# What a reader thread hands over after the last message of a stream that
# ended without a status (the node never ends a tail by itself).
_ENDED = object()
# What a closed stream's get returns.
_CLOSED = object()


class _Stream:
    """One open ``TailLog`` call and the messages its reader thread took off
    it that the tail has not yet taken: at most ``capacity`` (then the
    thread, and through gRPC's flow control the node, waits), plus the
    stream's end. Refers to no ``Tail``, so an abandoned tail can be
    collected; its finalizer closes the stream, which ends the thread."""

    def __init__(self, address: str, call, capacity: int):
        self.address = address
        self.call = call
        self._capacity = capacity
        # A Condition's default lock is reentrant: a finalizer that closes
        # the stream may run in the middle of the reader's put.
        self._cond = threading.Condition()
        self._items: deque = deque()
        self._closed = False
        # When the stream was last heard from (a message arrived, or the
        # tail took one and so let the reader go on).
        self.last_heard = time.monotonic()
        self.thread: threading.Thread | None = None

    def start(self, name: str) -> None:
        self.thread = threading.Thread(target=_read_stream, args=(self,), name=f"amulet-tail-{name}", daemon=True)
        self.thread.start()

    def put(self, message) -> bool:
        """Hands ``message`` to the tail, waiting while ``capacity`` are
        waiting for it; False once the stream is closed."""
        with self._cond:
            while len(self._items) >= self._capacity and not self._closed:
                self._cond.wait()
            if self._closed:
                return False
            self._items.append(message)
            self.last_heard = time.monotonic()
            self._cond.notify_all()
            return True

    def finish(self, outcome) -> None:
        """Hands over how the stream ended (an exception or ``_ENDED``),
        after the messages before it, without waiting for room."""
        with self._cond:
            if not self._closed:
                self._items.append(outcome)
                self._cond.notify_all()

    def get(self, until: float):
        """The next item; None if none came by ``until`` (monotonic);
        ``_CLOSED`` once the stream is closed."""
        with self._cond:
            while not self._items:
                if self._closed:
                    return _CLOSED
                left = until - time.monotonic()
                if left <= 0:
                    return None
                self._cond.wait(left)
            if self._closed:
                return _CLOSED
            item = self._items.popleft()
            self.last_heard = time.monotonic()
            self._cond.notify_all()
            return item

    def queued(self) -> int:
        """Messages waiting for the tail."""
        with self._cond:
            return len(self._items)

    def close(self) -> None:
        """Cancels the call and drops what it holds; wakes both sides.
        Idempotent, from any thread."""
        with self._cond:
            self._closed = True
            self._items.clear()
            self._cond.notify_all()
        self.call.cancel()


def _read_stream(stream: _Stream) -> None:
    """A tail's reader thread: the stream's messages into ``stream``, then
    how it ended. Ends when the call does (``_Stream.close`` cancels it)."""
    try:
        for message in stream.call:
            stream.last_heard = time.monotonic()
            if not stream.put(message):
                return
        outcome = _ENDED
    except Exception as e:  # noqa: BLE001 - a grpc.RpcError, or anything that broke the reader
        outcome = e
    stream.finish(outcome)


class Tail:
    """A follower of one log (see ``DLog.tail``): an iterator of
    ``(position, value)`` that blocks until the next entry is appended.

    The entries come on a ``TailLog`` stream from a replica of the log's
    partition, read by a background thread that holds at most
    ``TAIL_QUEUE_MESSAGES`` messages ahead of the consumer. Use it as a
    context manager, or call ``close()``, to cancel the stream and end the
    thread (an abandoned tail does so when it is garbage-collected). Not
    for concurrent ``next`` calls; ``close()`` may come from any thread
    and wakes a ``next`` waiting in another. A closed tail's ``next``
    raises ``AmuletError`` and its iteration stops."""

    def __init__(self, log: DLog, from_: int, max_poll: float = 0.1):
        self.log = log
        # Position of the entry after the buffered ones: the next stream
        # message's ``from``, and where a reopened stream starts.
        self._next = from_
        self._buffered: deque[bytes] = deque()
        self.max_poll = max(float(max_poll), TAIL_POLL_MIN)
        self._lock = threading.Lock()
        self._closed = threading.Event()
        self._stream: _Stream | None = None
        self._finalizer: weakref.finalize | None = None
        # The node has no TailLog: poll with linearizable reads.
        self._polling = False
        self._reconnects = 0
        # Reopening after a failure: not before ``_reopen_at``, at another
        # replica than ``_avoid``; the pause after that; when to give up
        # (None: no failure since the last message).
        self._reopen_at = 0.0
        self._avoid: str | None = None
        self._backoff = BACKOFF_MIN
        self._give_up_at: float | None = None
        # The start was checked against the log's bounds.
        self._started = False
        # The refusal (PermissionDenied, Unauthenticated) that ended the
        # tail: raised again by every later ``next`` (never reopened).
        self._refused: errors.AmuletError | None = None

    def __repr__(self) -> str:
        return f"Tail({self.log.name!r}, position={self.position})"

    @property
    def position(self) -> int:
        """The position of the entry the tail yields next."""
        return self._next - len(self._buffered)

    @property
    def reconnects(self) -> int:
        """How many times the tail's stream broke and was reopened."""
        return self._reconnects

    @property
    def polling(self) -> bool:
        """Whether the tail polls with reads (a node without ``TailLog``)."""
        return self._polling

    @property
    def closed(self) -> bool:
        return self._closed.is_set()

    # ---- lifecycle ----------------------------------------------------------

    def __enter__(self) -> "Tail":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        """Cancels the stream and ends its thread; ``next`` raises
        ``AmuletError`` from then on (iteration stops). ``position`` stays
        where the tail was: a new tail from there misses nothing."""
        self._closed.set()
        self._drop_stream(None)

    def _drop_stream(self, stream: _Stream | None) -> None:
        """Closes ``stream`` (None: whichever is open) and forgets it."""
        with self._lock:
            if stream is None or self._stream is stream:
                stream, self._stream = self._stream, None
                finalizer, self._finalizer = self._finalizer, None
            else:
                finalizer = None
        if finalizer is not None:
            finalizer.detach()
        if stream is not None:
            stream.close()

    # ---- iteration -----------------------------------------------------------

    def __iter__(self) -> Iterator[tuple[int, bytes]]:
        return self

    def __next__(self) -> tuple[int, bytes]:
        try:
            return self.next()
        except errors.AmuletError:
            if self._closed.is_set():
                raise StopIteration from None
            raise

    def next(self, timeout: float | None = None) -> tuple[int, bytes]:
        """The next entry and its position, waiting until one is appended;
        with ``timeout`` (seconds), raises ``TimeoutError`` if none came by
        then (the tail stays where it was, its stream open)."""
        deadline = None if timeout is None else time.monotonic() + max(float(timeout), 0.0)
        try:
            return self._next_entry(deadline, timeout)
        except errors.CREDENTIALS_REFUSED as refused:
            # A permission or token revoked while the tail was open: the
            # tail ends here; no stream is opened again.
            if self._refused is None:
                self._refused = refused
                self._drop_stream(None)
            raise

    def _next_entry(self, deadline: float | None, timeout) -> tuple[int, bytes]:
        while True:
            if self._closed.is_set():
                raise errors.AmuletError(f"the tail of log {self.log.name!r} is closed")
            if self._refused is not None:
                raise type(self._refused)(str(self._refused), self._refused.code)
            if self._buffered:
                position = self.position
                return position, self._buffered.popleft()
            if self._polling:
                self._poll(deadline, timeout)
                continue
            stream = self._stream
            if stream is None:
                if not self._started:
                    self._check_start()
                    continue
                self._sleep_until(self._reopen_at, deadline, timeout)
                stream = self._open()
                if stream is None:
                    continue
            until = stream.last_heard + TAIL_IDLE
            item = stream.get(until if deadline is None else min(until, deadline))
            if item is _CLOSED:
                continue
            if item is None:
                if time.monotonic() >= stream.last_heard + TAIL_IDLE:
                    # Not even a heartbeat: the node hangs, or the way to
                    # it does. Cancel and go elsewhere.
                    self._drop_stream(stream)
                    self.log.client._suspects.judge(stream.address, Outcome.NO_ANSWER)
                    self._failed(f"{stream.address}: no message in {TAIL_IDLE}s", stream.address)
                elif deadline is not None and time.monotonic() >= deadline:
                    raise self._timeout(timeout)
                continue
            if isinstance(item, pb.LogEntries):
                self._take(stream, item)
                continue
            self._drop_stream(stream)
            self._stream_failed(stream.address, item)

    def _check_start(self) -> None:
        """Checks the start against the log's bounds by one linearizable
        read, as a read from there would: the streams are served without
        ordering, so a replica behind a trim could still serve trimmed
        entries, or one behind the log's creation not know the log."""
        bounds = self.log.bounds()
        if not bounds.first <= self._next <= bounds.end:
            raise errors.OutOfRange(
                f"a tail of log {self.log.name!r} from position {self._next}, "
                f"outside {bounds.first}..={bounds.end}",
                grpc.StatusCode.OUT_OF_RANGE,
            )
        self._started = True

    def _timeout(self, timeout) -> TimeoutError:
        return TimeoutError(f"no entry of log {self.log.name!r} at position {self.position} in {timeout}s")

    def _sleep_until(self, when: float, deadline: float | None, timeout) -> None:
        """Waits until ``when`` (monotonic), or raises ``TimeoutError`` at
        ``deadline`` if that comes first; returns early if closed."""
        left = when - time.monotonic()
        if left <= 0:
            return
        if deadline is not None and deadline < when:
            self._closed.wait(max(deadline - time.monotonic(), 0.0))
            if not self._closed.is_set():
                raise self._timeout(timeout)
            return
        self._closed.wait(left)

    def _open(self) -> _Stream | None:
        """Opens the stream at ``_next`` (None if the tail was closed)."""
        if self._closed.is_set():
            return None
        address, call = self.log.client._tail_log(self.log.name, self._next, self._avoid)
        stream = _Stream(address, call, TAIL_QUEUE_MESSAGES)
        with self._lock:
            if self._closed.is_set():
                call.cancel()
                return None
            self._stream = stream
            # An abandoned tail cancels its call when collected.
            self._finalizer = weakref.finalize(self, stream.close)
        stream.start(self.log.name)
        return stream

    def _take(self, stream: _Stream, message: pb.LogEntries) -> None:
        got = getattr(message, "from")
        if got != self._next:
            self._drop_stream(stream)
            raise errors.ProtocolError(
                f"a tail of log {self.log.name!r} at position {self._next} got entries from {got} ({stream.address})"
            )
        # Heard from: a later failure starts a fresh backoff.
        self._give_up_at = None
        self._avoid = None
        if message.entries:  # none: a heartbeat
            self._next += len(message.entries)
            self._buffered.extend(message.entries)

    def _stream_failed(self, address: str, outcome) -> None:
        """Handles how a stream ended: raises the final errors, falls back
        to polling on UNIMPLEMENTED, else schedules a reopen."""
        if outcome is _ENDED:
            self._failed(f"{address}: the stream ended", address)
            return
        if not isinstance(outcome, grpc.RpcError):
            raise errors.ProtocolError(f"the tail stream from {address} broke: {outcome!r}") from outcome
        # No answer or ``behind`` suspects the node (``amulet.suspects``), so
        # the reopen and the client's other choices leave it out a while. A
        # stream's messages clear nothing: a replica serves a tail from its
        # own log even while it is behind for commands.
        self.log.client._suspects.judge(address, outcome_of(outcome))
        code, message, kind = outcome.code(), outcome.details() or "", error_kind(outcome)
        if code == grpc.StatusCode.UNIMPLEMENTED:
            # An older node: poll with reads instead.
            self._polling = True
            return
        if code == grpc.StatusCode.NOT_FOUND and self._exists():
            # A replica that has not executed the log's creation yet, and
            # whose map is not older than the one the request carried (the
            # cached map predates the creation too: another client created
            # the log, say): the others have, or it will.
            self._failed(f"{address}: {code.name} (a replica behind): {message}", address)
            return
        if code in _FINAL_CODES or (code == grpc.StatusCode.FAILED_PRECONDITION and kind != "not-a-replica"):
            self._give_up_at = None
            raise errors.from_status(code, message)
        if kind in ("not-a-replica", "stale-map"):
            # The log lives elsewhere (it moved, or the cached map does not
            # know it yet): the node that said so has the newer map.
            self.log.client.refresh_map(address)
        # UNAVAILABLE (a stopped node, or "behind": catching up),
        # DEADLINE_EXCEEDED, a connection failure, ...: elsewhere.
        self._failed(f"{self.log.client._peer(address)}: {code.name}: {message}", address)

    def _exists(self) -> bool:
        """Whether the log exists, by a linearizable read of its bounds:
        False only if that read says ``NotFound`` (any other failure leaves
        the question open, and the stream is reopened as after
        UNAVAILABLE, as the Rust client does)."""
        try:
            self.log.bounds()
        except errors.NotFound:
            return False
        except errors.CREDENTIALS_REFUSED:
            raise
        except errors.AmuletError:
            if self._closed.is_set() or self.log.client._closed:
                raise
        return True

    def _failed(self, why: str, address: str) -> None:
        """Schedules a reopen at another replica after the client's usual
        backoff, or raises ``Unavailable`` once ``operation_timeout`` has
        passed since the first failure without a message."""
        client = self.log.client
        now = time.monotonic()
        if self._give_up_at is None:
            self._give_up_at = now + client.operation_timeout
            self._backoff = BACKOFF_MIN
        if now + self._backoff >= self._give_up_at:
            self._give_up_at = None
            self._reopen_at = 0.0
            raise errors.Unavailable(
                f"tail of log {self.log.name!r} at position {self._next}: gave up after {client.operation_timeout}s: {why}"
            )
        self._reconnects += 1
        self._avoid = address
        self._reopen_at = now + self._backoff
        self._backoff = min(self._backoff * 2, BACKOFF_MAX)

    def _poll(self, deadline: float | None, timeout) -> None:
        """Reads until there are entries to hand out (a node without
        ``TailLog``): linearizable reads, the pause growing from 1 ms to
        ``max_poll`` while caught up."""
        pause = TAIL_POLL_MIN
        while not self._closed.is_set():
            read = self.log.read(self._next, TAIL_READ_ENTRIES)
            if read.from_ != self._next:
                raise errors.ProtocolError(f"asked for position {self._next}, got entries from {read.from_}")
            if read.entries:
                self._next += len(read.entries)
                self._buffered.extend(read.entries)
                return
            if deadline is not None:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise self._timeout(timeout)
                self._closed.wait(min(pause, left))
            else:
                self._closed.wait(pause)
            pause = min(pause * 2, self.max_poll)
