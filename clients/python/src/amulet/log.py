"""Named shared logs (DLog, docs/logs.md): append, read by position, trim,
bounds, and a tail that follows new entries.

A log's entries sit at dense positions 0, 1, 2, ... that are never reused
(a trim drops the entries below a position; the next append still gets the
end). Logs and maps share one namespace. A log lives whole in the partition
that owns its name: its requests are routed as a single-key request of the
hash keyspace named like the log, with the log name's UTF-8 bytes as the
key. Follows ``crates/amulet-client/src/log.rs``.

    log = client.create_log_if_absent("events")
    position = log.append(b"hello")              # exactly once, even if resent
    read = log.read(0, 100)                      # LogEntries(from_, entries, first, end)
    for position, value in log.tail(read.end):  # blocks, waiting for new entries
        ...
"""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass
from typing import Iterator

from amulet import errors
from amulet.routing import Placement
from amulet.v1 import amulet_pb2 as pb

__all__ = ["DLog", "LogBounds", "LogEntries", "Tail", "log_placement"]

# Entries one tail read asks for (as the Rust client's Tail).
TAIL_READ_ENTRIES = 1024
# The first pause of a caught-up tail, doubled up to its max_poll (seconds).
TAIL_POLL_MIN = 0.001

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
        ``Tail.next(timeout=...)``). Each read is a linearizable read of the
        log; when caught up it polls, the pause growing from 1 ms to
        ``max_poll`` seconds. Resume after a failure with ``tail.position``
        (the position after the last entry yielded): no gap, no duplicate.
        A tail that falls below a trim raises ``OutOfRange``."""
        return Tail(self, _uint(from_, "position", _U64_MAX), max_poll)


class Tail:
    """A follower of one log (see ``DLog.tail``): an iterator of
    ``(position, value)`` that blocks until the next entry is appended."""

    def __init__(self, log: DLog, from_: int, max_poll: float = 0.1):
        self.log = log
        # Position of the next entry read from the log (after the buffer).
        self._next = from_
        self._buffered: deque[bytes] = deque()
        self.max_poll = max(float(max_poll), TAIL_POLL_MIN)

    def __repr__(self) -> str:
        return f"Tail({self.log.name!r}, position={self.position})"

    @property
    def position(self) -> int:
        """The position of the entry the tail yields next."""
        return self._next - len(self._buffered)

    def __iter__(self) -> Iterator[tuple[int, bytes]]:
        return self

    def __next__(self) -> tuple[int, bytes]:
        return self.next()

    def next(self, timeout: float | None = None) -> tuple[int, bytes]:
        """The next entry and its position, waiting until one is appended;
        with ``timeout`` (seconds), raises ``TimeoutError`` if none came by
        then (the tail stays where it was)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        pause = TAIL_POLL_MIN
        while True:
            if self._buffered:
                position = self.position
                return position, self._buffered.popleft()
            read = self.log.read(self._next, TAIL_READ_ENTRIES)
            if read.from_ != self._next:
                raise errors.ProtocolError(f"asked for position {self._next}, got entries from {read.from_}")
            if read.entries:
                self._next += len(read.entries)
                self._buffered.extend(read.entries)
                continue
            if deadline is not None:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"no entry of log {self.log.name!r} at position {self._next} in {timeout}s")
                time.sleep(min(pause, left))
            else:
                time.sleep(pause)
            pause = min(pause * 2, self.max_poll)
