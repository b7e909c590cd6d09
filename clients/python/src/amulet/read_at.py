"""A transaction's reads at its read version (``ReadAt``,
``docs/transactions.md``): not ordered, so no session; one request at a
replica of every partition a read involves, the whole read again elsewhere
on a retryable answer. A mixin of :class:`amulet.Client`, as
:class:`amulet.admin.Admin` is.
"""

from __future__ import annotations

import time

import grpc

from amulet import errors
from amulet._rpc import BACKOFF_MAX, BACKOFF_MIN, _Retry, error_kind
from amulet.routing import Placement, Routing, UnknownMap
from amulet.suspects import Outcome, outcome_of
from amulet.v1 import amulet_pb2 as pb


class ReadAt:
    """``Client._read_at``, used by :mod:`amulet.transaction`."""

    def _read_at(self, placement: Placement, read_version: int, op: str, message):
        """A transaction's read ``op`` at ``read_version``: one ReadAt at a
        random replica of every partition the read involves. Returns the
        partial responses (one per partition, in partition order) and
        whether each saw a covered key written since the read version.

        A retryable answer (``behind``, ``read-version-elsewhere``, a stale
        map, no answer) reads every partition again, elsewhere, under
        ``operation_timeout``. A map unknown to the partition map is
        ``NotFound`` once a fresh map does not know it either."""
        deadline = time.monotonic() + self.operation_timeout
        backoff = BACKOFF_MIN
        failed_at: dict[int, str] = {}
        refreshed = False
        while True:
            routing = self._routing
            try:
                partitions = routing.partitions_for(placement)
            except UnknownMap:
                if refreshed:
                    raise errors.NotFound(f"no map named {placement.map!r}") from None
                self.refresh_map()
                refreshed = True
                continue
            try:
                partials = []
                for partition in partitions:
                    partials.append(self._read_at_attempt(routing, partition, read_version, op, message, failed_at))
                return [r for r, _ in partials], [w for _, w in partials]
            except _Retry as retry:
                last = str(retry)
                if retry.stale_map:
                    refreshed = True
            if time.monotonic() + backoff >= deadline:
                raise errors.Unavailable(f"gave up reading at read version {read_version} after {self.operation_timeout}s: {last}")
            time.sleep(backoff)
            backoff = min(backoff * 2, BACKOFF_MAX)

    def _read_at_attempt(self, routing: Routing, partition: int, read_version: int, op: str, message, failed_at):
        replicas = routing.replica_addresses(partition)
        if not replicas:
            raise errors.ProtocolError(f"no address for a replica of partition {partition}")
        address = self._suspects.choose(replicas, avoid=failed_at.get(partition))
        failed_at[partition] = address
        request = pb.ReadAtRequest(
            read_version=read_version,
            request=pb.MapRequest(
                # Not ordered, so no session: a resend just reads again.
                header=pb.RequestHeader(map_version=routing.version, partition=partition),
                **{op: message},
            ),
        )
        try:
            response = self._stub(address).ReadAt(request, timeout=self.attempt_timeout)
        except grpc.RpcError as e:
            # read-version-elsewhere says nothing of the node (it lacks the
            # snapshot of this read version only): OTHER.
            self._suspects.judge(address, outcome_of(e))
            if error_kind(e) == "read-version-elsewhere":
                # Restored since the read version: another replica has it.
                raise _Retry(f"{address}: {e.details()}", maybe_applied=False) from None
            self._on_error(e, None, address)
        self._suspects.judge(address, Outcome.DONE)
        failed_at.pop(partition, None)
        if not response.HasField("response"):
            raise errors.ProtocolError(f"{address} answered a ReadAt without a response")
        return response.response, response.written_since
