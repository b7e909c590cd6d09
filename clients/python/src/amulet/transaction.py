"""Interactive, strictly serializable transactions across maps and
partitions (``docs/transactions.md``; the reference is the Rust client's
``crates/amulet-client/src/transaction.rs``).

A ``Transaction`` reads at one *read version*, taken at its first read
(and shared with the client's other transactions that start together,
``amulet.read_versions``), from a random replica of each partition a read
involves (``ReadAt``, not ordered). Its writes are buffered in the client
and its reads see them. ``commit()`` sends the writes and the ranges read
in one ``Commit``, in a session like every write (a resend never applies
twice), to a replica of the first partition involved; every involved
partition votes, and all apply the writes or none does. A key read that
was written after the read version makes the commit fail with
``ConflictError``; ``Client.transact`` and ``@transactional`` then run the
transaction again.

- A read records the range it looked at: a key for ``get``; for a range
  read the part it covered (up to its last entry when the limit cut it
  short), so a key inserted there later conflicts too (phantoms count).
- A read that finds a key it covered written since the read version
  dooms the transaction: with writes buffered it raises ``ConflictError``
  at once (it could only conflict), else the commit does, without sending.
- A transaction without writes sends no commit: its reads were one
  snapshot; it never conflicts.
- Blind writes (no reads) take no read version and never conflict.
"""

from __future__ import annotations

import functools
import logging
import random
import threading
import time
import weakref
from collections.abc import ItemsView, Iterator, KeysView, MutableMapping, ValuesView
from typing import Any, Callable

from amulet import codecs, errors
from amulet.bytemap import NEAREST, _bytes
from amulet.client import BACKOFF_MAX, BACKOFF_MIN, Client, check_map_name
from amulet.routing import Bound, Placement
from amulet.v1 import amulet_pb2 as pb

__all__ = ["Transaction", "TransactionMap", "transactional"]

log = logging.getLogger("amulet.transaction")

Entry = tuple[bytes, bytes]

# The cluster's default range_entries_max: a range read asks for more than
# its limit (to make up for keys this transaction removed) only up to this.
RANGE_ENTRIES_MAX = 10_000


def _in_range(lower: Bound, upper: Bound, key: bytes) -> bool:
    if lower is not None and (key < lower[0] or (key == lower[0] and not lower[1])):
        return False
    if upper is not None and (key > upper[0] or (key == upper[0] and not upper[1])):
        return False
    return True


def _key_bound(bound: Bound) -> pb.KeyBound | None:
    return None if bound is None else pb.KeyBound(key=bound[0], inclusive=bound[1])


def _range_conflict(lower: Bound, upper: Bound, reverse: bool, entries, more: bool) -> tuple[Bound, Bound]:
    """The keys a range read looked at to give ``entries``
    (``conflict_range`` of ``crates/amulet-dmap/src/command.rs``): all of
    its range, or, when the limit cut it short, up to its last entry."""
    if more and entries:
        last = (entries[-1][0], True)
        return (last, upper) if reverse else (lower, last)
    return lower, upper


def _merge_ranges(partials, limit: int, reverse: bool) -> tuple[list[Entry], bool]:
    """Several partitions' answers to one range read, as one answer
    (``merge_ranges`` of ``crates/amulet-dmap/src/combine.rs``)."""
    entries: list[Entry] = []
    more = False
    for partial in partials:
        entries.extend((e.key, e.value) for e in partial.entries)
        more |= partial.more
    # Partitions hold disjoint keys: sorting by key alone is total.
    entries.sort(key=lambda e: e[0], reverse=reverse)
    if len(entries) > limit:
        del entries[limit:]
        more = True
    return entries, more


def _expect(response: pb.MapResponse, field: str):
    got = response.WhichOneof("result")
    if got != field:
        raise errors.ProtocolError(f"expected a {field} reply, got {got}")
    return getattr(response, field)


class Transaction:
    """One transaction of ``client`` (``client.transaction()``); keys and
    values are ``bytes``, maps are named. Thread-safe, though a
    transaction is usually one thread's.

    Reads (``get``, ``contains_key``, ``range``, ``first_entry``,
    ``last_entry``, ``nearest_entry``) raise what the cluster answers
    (``NotFound`` for an unknown map, ``InvalidArgument`` for a bad map
    name, key or range, ``ReadVersionTooOldError`` once the read version's
    lease has passed, ``ConflictError`` when doomed, see the module). Writes
    (``put``, ``delete``) only buffer: a bad map name, an unknown map or a
    key or value over the cluster's limits fails the commit.

    Use it as a context manager to abandon it if it is still open when the
    block ends; ``commit()`` is never implicit.
    """

    def __init__(self, client: Client):
        self.client = client
        self._versions = client._read_versions
        self._started = self._versions.mark()
        self._lock = threading.Lock()
        # Taking the read version (a begin may be in flight).
        self._version_lock = threading.Lock()
        self._held = None
        self._finalizer = None
        # (map, lower, upper) of every read.
        self._reads: list[tuple[str, Bound, Bound]] = []
        # Buffered writes by (map, key): the value, or None for a removal.
        self._writes: dict[tuple[str, bytes], bytes | None] = {}
        # A read found a key it covered written since the read version:
        # (map, key or None). A commit with writes would conflict.
        self._doomed: tuple[str, bytes | None] | None = None
        # A write named an invalid map: the commit fails with this.
        self._invalid: errors.AmuletError | None = None
        self._state = "open"  # then "committed", "abandoned" or "failed"
        self._released = False

    def __repr__(self) -> str:
        return (
            f"Transaction(read_version={self.read_version}, reads={len(self._reads)}, "
            f"writes={len(self._writes)}, {self._state})"
        )

    def __enter__(self) -> "Transaction":
        return self

    def __exit__(self, *exc) -> None:
        if self._state == "open":
            self.abandon()

    # ---- state -------------------------------------------------------------

    @property
    def read_version(self) -> int | None:
        """The read version this transaction reads at, once it has read."""
        held = self._held
        return None if held is None else held.version

    @property
    def finished(self) -> bool:
        """Whether it was committed, abandoned, or its commit failed."""
        return self._state != "open"

    @property
    def committed(self) -> bool:
        return self._state == "committed"

    def _check_open(self) -> None:
        if self._state != "open":
            raise errors.InvalidArgument(f"the transaction is {self._state} already")

    def _version(self) -> int:
        """The read version, taken at the first read."""
        with self._version_lock:
            if self._held is None:
                lease_micros = max(1, int(self.client.transaction_lease * 1_000_000))
                held = self._versions.acquire(self.client, self._started, lease_micros)
                with self._lock:
                    if self._state != "open":
                        self._versions.release(held)
                        raise errors.InvalidArgument(f"the transaction is {self._state} already")
                    self._held = held
                    # Given back when the transaction ends, or else when it
                    # is garbage collected.
                    self._finalizer = weakref.finalize(self, self._versions.release, held)
            return self._held.version

    def _release(self) -> None:
        """Gives the read version back (once)."""
        with self._lock:
            if self._released:
                return
            self._released = True
            finalizer = self._finalizer
        if finalizer is not None:
            finalizer()

    # ---- reads ---------------------------------------------------------------

    def _read(self, name: str, op: str, message, placement: Placement, field: str, conflict):
        """Runs read ``op`` at the read version in every partition it
        involves; returns the partial results (the ``field`` of each
        response). ``conflict(partials)`` gives the (lower, upper) range the
        read looked at, recorded for the commit."""
        version = self._version()
        responses, written_since = self.client._read_at(placement, version, op, message)
        partials = [_expect(r, field) for r in responses]
        lower, upper = conflict(partials)
        with self._lock:
            self._check_open()
            # Several partitions' flags cover more than the combined
            # answer: only a single partition's tells for sure.
            if len(partials) == 1 and written_since[0] and self._doomed is None:
                single = lower is not None and upper is not None and lower == upper and lower[1]
                self._doomed = (name, lower[0] if single else None)
            self._reads.append((name, lower, upper))
            if self._writes and self._doomed is not None:
                raise self._doomed_error()
        return partials

    def _doomed_error(self) -> errors.ConflictError:
        name, key = self._doomed
        return errors.ConflictError(
            f"a key this transaction read in map {name!r} was written after its read version",
            map=name,
            key=key,
        )

    def get(self, map: str, key: bytes) -> bytes | None:
        """The value of ``key`` in ``map`` as of the read version, or as this
        transaction wrote it; None if absent."""
        name, key = check_map_name(map), _bytes(key, "key")
        with self._lock:
            self._check_open()
            if (name, key) in self._writes:
                return self._writes[(name, key)]
        single = (key, True)
        partials = self._read(
            name, "get", pb.Get(map=name, key=key), Placement(name, "one", (key,)), "value",
            lambda _: (single, single),
        )
        value = partials[0]
        return value.value if value.HasField("value") else None

    def contains_key(self, map: str, key: bytes) -> bool:
        """Whether ``key`` is in ``map`` (a ``get``)."""
        return self.get(map, key) is not None

    def range(
        self,
        map: str,
        start: bytes | None = None,
        stop: bytes | None = None,
        *,
        start_inclusive: bool = True,
        stop_inclusive: bool = False,
        limit: int = 1000,
        reverse: bool = False,
    ) -> tuple[list[Entry], bool]:
        """At most ``limit`` entries of ``map`` from ``start`` to ``stop``
        (None: open; by default ``start <= key < stop``), ascending, or with
        ``reverse`` the highest ones descending, as of the read version with
        this transaction's writes applied; and whether the limit cut the
        range short (as ``ByteMap.range``).

        The commit conflicts if a key in the part of the range that was
        read (all of it, or up to the last entry when cut short) was written
        after the read version, including a key that did not exist."""
        name = check_map_name(map)
        lower = None if start is None else (_bytes(start, "start"), bool(start_inclusive))
        upper = None if stop is None else (_bytes(stop, "stop"), bool(stop_inclusive))
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise errors.InvalidArgument(f"limit must be a positive integer, not {limit!r}")
        return self._range(name, lower, upper, limit, bool(reverse))

    def _range(self, name: str, lower: Bound, upper: Bound, limit: int, reverse: bool) -> tuple[list[Entry], bool]:
        with self._lock:
            self._check_open()
            mine = sorted((k, v) for (m, k), v in self._writes.items() if m == name and _in_range(lower, upper, k))
        # Ask for enough that this transaction's removals still leave
        # `limit` entries when there are.
        removed = sum(1 for _, v in mine if v is None)
        asked = max(limit, min(limit + removed, RANGE_ENTRIES_MAX))
        read: dict[bytes, bytes] = {}
        at_lower, at_upper = lower, upper
        while True:
            entries, more = self._range_read(name, at_lower, at_upper, asked, reverse)
            read.update(entries)
            # Where the reads stopped when cut short: this transaction's
            # writes beyond it stay out (the entries between are unknown).
            edge = entries[-1][0] if more and entries else None
            merged = dict(read)
            for key, value in mine:
                if edge is not None and (key < edge if reverse else key > edge):
                    continue
                if value is None:
                    merged.pop(key, None)
                else:
                    merged[key] = value
            out = sorted(merged.items(), reverse=reverse)
            if len(out) >= limit or edge is None:
                break
            # Only when `asked` was capped: the removals ate the page.
            if reverse:
                at_upper = (edge, False)
            else:
                at_lower = (edge, False)
        return out[:limit], more or len(out) > limit

    def _range_read(self, name: str, lower: Bound, upper: Bound, limit: int, reverse: bool) -> tuple[list[Entry], bool]:
        message = pb.Range(map=name, limit=limit, reverse=reverse)
        if lower is not None:
            getattr(message, "from").CopyFrom(_key_bound(lower))
        if upper is not None:
            message.to.CopyFrom(_key_bound(upper))
        combined: list = []

        def conflict(partials):
            combined.append(_merge_ranges(partials, limit, reverse))
            entries, more = combined[0]
            return _range_conflict(lower, upper, reverse, entries, more)

        self._read(name, "range", message, Placement(name, "range", lower=lower, upper=upper), "entries", conflict)
        return combined[0]

    def first_entry(self, map: str) -> Entry | None:
        """The entry with the least key of ``map``, or None."""
        entries, _ = self._range(check_map_name(map), None, None, 1, False)
        return entries[0] if entries else None

    def last_entry(self, map: str) -> Entry | None:
        """The entry with the greatest key of ``map``, or None."""
        entries, _ = self._range(check_map_name(map), None, None, 1, True)
        return entries[0] if entries else None

    def nearest_entry(self, map: str, key: bytes, nearest: str) -> Entry | None:
        """The ``"floor"`` (<=), ``"ceiling"`` (>=), ``"higher"`` (>) or
        ``"lower"`` (<) entry of ``key`` in ``map``, or None (as
        ``ByteMap.nearest_entry``)."""
        name, key = check_map_name(map), _bytes(key, "key")
        if nearest not in NEAREST:
            raise ValueError(f"nearest must be one of {sorted(NEAREST)}, not {nearest!r}")
        if nearest in ("floor", "lower"):
            lower, upper, reverse = None, (key, nearest == "floor"), True
        else:
            lower, upper, reverse = (key, nearest == "ceiling"), None, False
        entries, _ = self._range(name, lower, upper, 1, reverse)
        return entries[0] if entries else None

    # ---- writes ------------------------------------------------------------

    def put(self, map: str, key: bytes, value: bytes) -> None:
        """Sets ``key`` of ``map`` to ``value`` when the transaction commits."""
        self._write(map, _bytes(key, "key"), _bytes(value, "value"))

    def delete(self, map: str, key: bytes) -> None:
        """Removes ``key`` of ``map`` when the transaction commits."""
        self._write(map, _bytes(key, "key"), None)

    def _write(self, map: str, key: bytes, value: bytes | None) -> None:
        with self._lock:
            self._check_open()
            try:
                name = check_map_name(map)
            except errors.InvalidArgument as e:
                # As in every client: the commit fails with it.
                if self._invalid is None:
                    self._invalid = e
                return
            self._writes[(name, key)] = value

    # ---- the end -------------------------------------------------------------

    def commit(self) -> None:
        """Commits: nothing to send without writes (the reads were one
        snapshot; it never conflicts); otherwise one ``Commit`` that every
        partition involved votes on, all applying the writes or none.

        Raises ``ConflictError`` or ``ReadVersionTooOldError`` (run it
        again: ``Client.transact`` does), ``InvalidArgument`` (a bad map
        name, a key or value over the limits, too many writes, or a
        transaction already finished), ``NotFound`` (a map written does not
        exist), ``OutcomeUnknown`` (no answer in time: it may have applied).
        Whatever it raises but ``OutcomeUnknown``, nothing was applied."""
        with self._lock:
            self._check_open()
            self._state = "failed"
            invalid, doomed = self._invalid, self._doomed
            writes, reads = self._writes, self._reads
        if invalid is not None:
            self._release()
            raise errors.InvalidArgument(str(invalid), invalid.code)
        if not writes:
            self._release()
            self._state = "committed"
            return
        if doomed is not None:
            self._release()
            raise self._doomed_error()
        message = pb.Commit(
            reads=[
                pb.ReadConflict(map=m, range=pb.KeyRange(**{"from": _key_bound(lo), "to": _key_bound(hi)}))
                for m, lo, hi in reads
            ],
            writes=[
                pb.TxnWrite(map=m, key=k) if v is None else pb.TxnWrite(map=m, key=k, value=v)
                for (m, k), v in sorted(writes.items())
            ],
        )
        if self._held is not None:
            message.read_version = self._held.version
        parts = [Placement(m, "one", (k,)) for m, k in writes]
        parts += [Placement(m, "range", lower=lo, upper=hi) for m, lo, hi in reads]
        try:
            # The read version stays open until the votes are in.
            response = self.client.execute("commit", message, Placement(None, "across", parts=tuple(parts)))
        finally:
            self._release()
        _expect(response, "done")
        self._state = "committed"

    def abandon(self) -> None:
        """Gives the transaction up: nothing is written. Idempotent; a no-op
        once committed."""
        with self._lock:
            if self._state == "open":
                self._state = "abandoned"
        self._release()

    # ---- typed view ----------------------------------------------------------

    def map(self, name: str, *, key_codec=None, value_codec=None) -> "TransactionMap":
        """A ``MutableMapping`` view of map ``name`` in this transaction,
        with the codecs of ``Client.map`` (default: ``codecs.ELEMENT``
        keys, ``codecs.BYTES`` values)."""
        return TransactionMap(self, check_map_name(name), key_codec=key_codec, value_codec=value_codec)


class TransactionMap(MutableMapping):
    """Map ``name`` as transaction ``tx`` sees it: its read version with its
    own writes applied. ``m[k]``, ``get``, ``in`` read a key; ``m[k] = v``
    and ``delete(k)`` buffer a write; ``del m[k]`` reads the key first (a
    ``KeyError`` if absent), as ``pop`` does. Iteration, ``len``,
    ``items()``, ``values()``, ``items_between`` and ``irange`` read ranges
    in pages of ``Client(range_entries=...)``: everything they read joins
    the transaction's read set, so a key written (or inserted) there by
    someone else makes the commit conflict."""

    def __init__(self, tx: Transaction, name: str, *, key_codec=None, value_codec=None):
        self.tx = tx
        self.name = name
        self.key_codec = key_codec or codecs.ELEMENT
        self.value_codec = value_codec or codecs.BYTES

    def __repr__(self) -> str:
        return f"TransactionMap({self.name!r})"

    def _k(self, key: Any) -> bytes:
        return self.key_codec.encode(key)

    def _item(self, entry: Entry | None):
        return None if entry is None else (self.key_codec.decode(entry[0]), self.value_codec.decode(entry[1]))

    # ---- single keys ---------------------------------------------------------

    def __getitem__(self, key: Any) -> Any:
        data = self.tx.get(self.name, self._k(key))
        if data is None:
            raise KeyError(key)
        return self.value_codec.decode(data)

    def get(self, key: Any, default: Any = None) -> Any:
        data = self.tx.get(self.name, self._k(key))
        return default if data is None else self.value_codec.decode(data)

    def __contains__(self, key: Any) -> bool:
        try:
            encoded = self._k(key)
        except TypeError:
            return False
        return self.tx.get(self.name, encoded) is not None

    def __setitem__(self, key: Any, value: Any) -> None:
        self.tx.put(self.name, self._k(key), self.value_codec.encode(value))

    def __delitem__(self, key: Any) -> None:
        encoded = self._k(key)
        if self.tx.get(self.name, encoded) is None:
            raise KeyError(key)
        self.tx.delete(self.name, encoded)

    def delete(self, key: Any) -> None:
        """Removes ``key`` whether or not it is there, without reading it (a
        blind write)."""
        self.tx.delete(self.name, self._k(key))

    # ---- ranges --------------------------------------------------------------

    def items_between(
        self,
        minimum: Any = None,
        maximum: Any = None,
        inclusive: tuple[bool, bool] = (True, True),
        reverse: bool = False,
        limit: int | None = None,
    ) -> Iterator[tuple[Any, Any]]:
        """Items with ``minimum <= key <= maximum`` (None: unbounded;
        ``inclusive`` per side), ascending or descending with ``reverse``,
        at most ``limit``: as ``AmuletMap.items_between``."""
        lower = None if minimum is None else (self._k(minimum), bool(inclusive[0]))
        upper = None if maximum is None else (self._k(maximum), bool(inclusive[1]))
        if lower is not None and upper is not None and lower[0] > upper[0]:
            return
        remaining = limit
        page_size = max(1, self.tx.client.range_entries)
        while remaining is None or remaining > 0:
            want = page_size if remaining is None else min(page_size, remaining)
            entries, more = self.tx._range(self.name, lower, upper, want, reverse)
            for entry in entries:
                yield self._item(entry)
            if remaining is not None:
                remaining -= len(entries)
            if not more or not entries:
                return
            if reverse:
                upper = (entries[-1][0], False)
            else:
                lower = (entries[-1][0], False)

    def irange(self, minimum: Any = None, maximum: Any = None, inclusive=(True, True), reverse: bool = False):
        """Keys between the bounds, as ``SortedDict.irange``."""
        for key, _ in self.items_between(minimum, maximum, inclusive, reverse):
            yield key

    def __iter__(self) -> Iterator[Any]:
        return self.irange()

    def __len__(self) -> int:
        """Counts the entries (reads the whole map into the read set)."""
        return sum(1 for _ in self.items_between())

    def keys(self) -> KeysView:
        return KeysView(self)

    def items(self) -> ItemsView:
        return _TxItems(self)

    def values(self) -> ValuesView:
        return _TxValues(self)

    def clear(self) -> None:
        """Removes every entry it reads (the whole map joins the read set)."""
        for key in [entry[0] for entry in self._raw_entries()]:
            self.tx.delete(self.name, key)

    def _raw_entries(self) -> Iterator[Entry]:
        lower: Bound = None
        while True:
            entries, more = self.tx._range(self.name, lower, None, max(1, self.tx.client.range_entries), False)
            yield from entries
            if not more or not entries:
                return
            lower = (entries[-1][0], False)

    # ---- sorted --------------------------------------------------------------

    def first_item(self):
        """The item with the least key, or None."""
        return self._item(self.tx.first_entry(self.name))

    def last_item(self):
        """The item with the greatest key, or None."""
        return self._item(self.tx.last_entry(self.name))

    def floor_item(self, key: Any):
        """The item with the greatest key <= ``key``, or None."""
        return self._item(self.tx.nearest_entry(self.name, self._k(key), "floor"))

    def ceiling_item(self, key: Any):
        """The item with the least key >= ``key``, or None."""
        return self._item(self.tx.nearest_entry(self.name, self._k(key), "ceiling"))

    def higher_item(self, key: Any):
        """The item with the least key > ``key``, or None."""
        return self._item(self.tx.nearest_entry(self.name, self._k(key), "higher"))

    def lower_item(self, key: Any):
        """The item with the greatest key < ``key``, or None."""
        return self._item(self.tx.nearest_entry(self.name, self._k(key), "lower"))


class _TxItems(ItemsView):
    def __iter__(self):
        return self._mapping.items_between()


class _TxValues(ValuesView):
    def __iter__(self):
        for _, value in self._mapping.items_between():
            yield value


# ---- running transactions ------------------------------------------------------


def run_transaction(client: Client, fn: Callable, args, kwargs):
    """``Client.transact``: runs ``fn(tx, *args, **kwargs)`` and commits,
    again from a new read version on a conflict or an ended read version,
    with exponential backoff and jitter, until ``operation_timeout``."""
    deadline = time.monotonic() + client.operation_timeout
    backoff = BACKOFF_MIN
    attempt = 1
    while True:
        tx = client.transaction()
        try:
            result = fn(tx, *args, **kwargs)
            if not tx.finished:
                tx.commit()
            return result
        except errors.TRANSACTION_RETRYABLE as e:
            # Its read version goes back before the pause, not after.
            tx.abandon()
            # Half the backoff plus up to as much again at random, so that
            # transactions that conflicted together do not run again in step.
            pause = backoff / 2 + random.uniform(0, backoff / 2)
            if time.monotonic() + pause >= deadline:
                raise
            log.debug("transaction attempt %d: %s: %s; running it again in %.3fs", attempt, type(e).__name__, e, pause)
            time.sleep(pause)
            backoff = min(backoff * 2, BACKOFF_MAX)
            attempt += 1
        finally:
            tx.abandon()


def transactional(fn: Callable) -> Callable:
    """Makes ``fn(tx, ...)``, whose first parameter is a transaction, callable
    with a ``Client`` or a ``Transaction`` first (FoundationDB's
    ``@fdb.transactional``)::

        @amulet.transactional
        def transfer(tx, source, target, amount):
            ...

        transfer(client, "alice", "bob", 10)  # its own transaction: committed,
                                              # run again on conflicts
        transfer(tx, "alice", "bob", 10)      # part of the caller's transaction tx:
                                              # not committed here, not retried

    With a client it runs ``client.transact(fn, ...)``; with a transaction it
    calls ``fn`` with it, so transactional functions compose into one
    transaction. Anything else first is a ``TypeError``.
    """
    if isinstance(fn, Client) or not callable(fn):
        raise TypeError(
            "use @amulet.transactional on a function whose first parameter is the transaction "
            "(then pass a Client or a Transaction as its first argument), "
            f"not @amulet.transactional({type(fn).__name__})"
        )

    @functools.wraps(fn)
    def wrapper(db_or_tx, /, *args, **kwargs):
        if isinstance(db_or_tx, Transaction):
            return fn(db_or_tx, *args, **kwargs)
        if isinstance(db_or_tx, Client):
            return db_or_tx.transact(fn, *args, **kwargs)
        raise TypeError(
            f"{fn.__qualname__} is @amulet.transactional: its first argument must be an amulet.Client "
            f"or an amulet.Transaction, not {type(db_or_tx).__name__}"
        )

    return wrapper
