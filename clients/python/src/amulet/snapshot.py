"""Snapshot iterators (DMap §III-B): a snapshot is opened through the global
stream at one point of the order; every partition's part is then streamed in
pages, each partition from a random replica, and merged here in key order.
The iterator holds at most one page per partition, whatever the map's size.
"""

from __future__ import annotations

import time
from collections import deque

import grpc

from amulet import errors
from amulet.routing import Placement
from amulet.v1 import amulet_pb2 as pb

# Stream errors that are the snapshot's (released, expired, bad request)
# or the client's (refused credentials: a permission or token revoked while
# the iterator was open ends it), not the replica's: no other replica would
# answer differently, so no stream is reopened.
_FINAL = frozenset({grpc.StatusCode.NOT_FOUND, grpc.StatusCode.INVALID_ARGUMENT}) | errors.CREDENTIALS_CODES


class _Source:
    """One partition's part of the snapshot."""

    def __init__(self, partition: int):
        self.partition = partition
        self.stream = None
        self.page: deque = deque()
        # Last key taken from this partition: where a broken stream resumes.
        self.resume_after: bytes | None = None
        # The partition's last page was received.
        self.finished = False


class Snapshot:
    """An open snapshot of a map, iterated once in ascending key order as
    ``(key, value)`` pairs of bytes. A context manager: leaving it (or
    ``close()``) releases the snapshot in the cluster; its lease frees it
    anyway."""

    def __init__(self, client, snapshot_id: int, partitions: list[int], *, owner: bool = True):
        self.client = client
        self.id = snapshot_id
        self.partitions = list(partitions)
        self._sources = [_Source(p) for p in partitions]
        # Only the iterator that opened the snapshot releases it.
        self._released = not owner
        # The refusal (PermissionDenied, Unauthenticated) that ended the
        # iteration: raised again by every later ``next`` (no stream is
        # reopened).
        self._ended: errors.AmuletError | None = None

    def __repr__(self) -> str:
        return f"Snapshot({self.id})"

    def __enter__(self) -> "Snapshot":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self.close()
            return
        # Leaving on an error (a revoked permission, say): releasing is
        # best effort (the lease frees the snapshot anyway), and must not
        # hide that error.
        try:
            self.close()
        except errors.AmuletError:
            pass

    def __iter__(self) -> "Snapshot":
        return self

    def reread(self) -> "Snapshot":
        """A fresh iterator over the same snapshot, from its first key. The
        snapshot stays open: closing the new iterator does not release it,
        and once this one is closed (or the lease ends) reading it raises
        ``NotFound``."""
        return Snapshot(self.client, self.id, self.partitions, owner=False)

    def buffered(self) -> int:
        """Entries held in this iterator now (at most a page per partition)."""
        return sum(len(s.page) for s in self._sources)

    def __next__(self) -> tuple[bytes, bytes]:
        if self._ended is not None:
            raise type(self._ended)(str(self._ended), self._ended.code)
        for source in self._sources:
            if not source.page and not source.finished:
                try:
                    self._refill(source)
                except errors.CREDENTIALS_REFUSED as e:
                    # A permission or token revoked while it was open:
                    # the iteration ends here.
                    self._ended = e
                    self._cancel_streams()
                    raise
        least = None
        for source in self._sources:
            if source.page and (least is None or source.page[0].key < least.page[0].key):
                least = source
        if least is None:
            raise StopIteration
        entry = least.page.popleft()
        least.resume_after = entry.key
        return entry.key, entry.value

    def _refill(self, source: _Source) -> None:
        """Reads the source's next page, reopening its stream at another
        replica (after the last key taken) if it broke."""
        deadline = time.monotonic() + self.client.operation_timeout
        backoff = 0.01
        while True:
            try:
                if source.stream is None:
                    source.stream = self.client._read_snapshot(source.partition, self.id, source.resume_after)
                page: pb.SnapshotPage = next(source.stream)
                source.finished = page.last
                source.page = deque(page.entries)
                if source.finished:
                    source.stream = None
                if source.page or source.finished:
                    return
                continue
            except StopIteration:
                # Ended without a last page: the replica went away.
                why = "the stream ended early"
            except grpc.RpcError as e:
                if e.code() in _FINAL:
                    raise errors.from_status(e.code(), e.details() or "") from None
                why = f"{e.code().name}: {e.details()}"
            source.stream = None
            if time.monotonic() + backoff >= deadline:
                raise errors.Unavailable(f"reading snapshot {self.id} of partition {source.partition}: {why}")
            time.sleep(backoff)
            backoff = min(backoff * 2, 0.5)

    def _cancel_streams(self) -> None:
        for source in self._sources:
            if source.stream is not None:
                source.stream.cancel()
                source.stream = None

    def close(self) -> None:
        """Stops reading and releases the snapshot in the cluster (once; an
        iterator made by ``reread`` only stops reading)."""
        self._cancel_streams()
        if self._released:
            return
        self._released = True
        self.client.execute("release_snapshot", pb.ReleaseSnapshot(snapshot=self.id), Placement(None, "all"))
