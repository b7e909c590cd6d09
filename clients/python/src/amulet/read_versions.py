"""Read versions shared by the transactions of one client (as
``crates/amulet-client/src/read_versions.rs``; ``docs/transactions.md``).

A read version is a ``BeginTransaction`` ordered on the global stream with
the signal exchange, the dearest part of a transaction. Transactions that
ask for one while a begin is in flight share it, as FoundationDB's clients
batch their GetReadVersion calls, when that begin was sent after the
transaction started: sharing keeps strict serializability, since every
commit that completed before the transaction started is then in the
version. A transaction that started after the begin in flight was sent
waits for the next one instead.

"Started" is a position in the sequence of begins rather than a time: a
transaction notes the id the next begin will get (``mark``) when it is
created, and may use a begin with that id or a later one, all created (and
so sent) after it started. No clock, so no ties.

Versions no transaction uses any more are ended in the next begin
(``end_read_versions``), so a busy client holds few read versions open and
orders nothing extra to end them; an idle client's last ones end by their
lease. Thread-safe: one lock guards the bookkeeping, never held while a
request is in flight.
"""

from __future__ import annotations

import copy
import threading
from dataclasses import dataclass

from amulet import errors
from amulet.routing import Placement
from amulet.v1 import amulet_pb2 as pb

# Versions waiting to be ended in the next begin, at most (the rest end by
# their lease).
ENDED_PER_BEGIN_MAX = 1024


class _Begin:
    """One BeginTransaction: sent by the transaction that created it, its
    outcome awaited by every transaction that joined it."""

    def __init__(self, begin_id: int):
        self.id = begin_id
        self.finished = threading.Event()
        self.version: int | None = None
        self.error: BaseException | None = None


@dataclass(frozen=True)
class Held:
    """A transaction's hold on a shared read version."""

    begin_id: int
    version: int


class ReadVersions:
    """The read versions of one client."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        # The begin last created: transactions that started before it was
        # created may join it until it finishes.
        self._current: _Begin | None = None
        # Begins in use, by id: [the begin, how many transactions hold it].
        self._holders: dict[int, list] = {}
        # Versions no transaction holds, to end in the next begin.
        self._done: list[int] = []
        self._next_id = 0

    def mark(self) -> int:
        """Where a transaction starting now stands: it may use begins with
        this id or a later one."""
        with self._lock:
            return self._next_id

    def acquire(self, client, started: int, lease_micros: int) -> Held:
        """A read version for a transaction that started at ``started``
        (``mark``): the begin in flight if it was sent after that, else a
        new one, sent by this thread. Raises what the begin raised."""
        end: list[int] = []
        with self._lock:
            current = self._current
            if current is not None and current.id >= started and not current.finished.is_set():
                begin, sender = current, False
            else:
                begin, sender = _Begin(self._next_id), True
                self._next_id += 1
                self._current = begin
                keep = max(0, len(self._done) - ENDED_PER_BEGIN_MAX)
                end, self._done = self._done[keep:], self._done[:keep]
            self._holders.setdefault(begin.id, [begin, 0])[1] += 1
        if sender:
            try:
                message = pb.BeginTransaction(lease_micros=lease_micros, end_read_versions=end)
                response = client.execute("begin_transaction", message, Placement(None, "all"))
                if response.WhichOneof("result") != "read_version":
                    raise errors.ProtocolError(f"a begin answered {response.WhichOneof('result')}")
                begin.version = response.read_version
            except BaseException as e:  # noqa: BLE001 - handed to every joiner, then raised
                begin.error = e
                with self._lock:
                    # Not known to be ended: end them in a later begin.
                    self._done.extend(end)
            finally:
                begin.finished.set()
        else:
            # The sender's execute is bounded by the operation timeout.
            begin.finished.wait()
        if begin.error is not None:
            self._release(begin.id)
            if sender:
                raise begin.error
            # A copy: one exception object raised in several threads would
            # share (and mix up) its traceback.
            raise copy.copy(begin.error) from begin.error
        return Held(begin.id, begin.version)

    def release(self, held: Held) -> None:
        """A transaction is done with its read version."""
        self._release(held.begin_id)

    def _release(self, begin_id: int) -> None:
        with self._lock:
            entry = self._holders.get(begin_id)
            if entry is None:
                return
            entry[1] -= 1
            if entry[1] > 0:
                return
            del self._holders[begin_id]
            begin = entry[0]
            if begin.version is not None:
                self._done.append(begin.version)

    def pending_end(self) -> list[int]:
        """Versions waiting to be ended in the next begin (for tests)."""
        with self._lock:
            return list(self._done)

    def in_use(self) -> dict[int, int]:
        """Read versions held now, and by how many transactions (for tests)."""
        with self._lock:
            return {e[0].version: e[1] for e in self._holders.values() if e[0].version is not None}
