"""Nodes the client leaves out for a while (DMap §III-B routing).

Why: each attempt goes to a random replica of its partition (a session
opening to any node). Without a memory of failures, a node killed for good
keeps being drawn: with three replicas, a third of the operations first wait
a whole attempt timeout on it before being resent elsewhere. So a node that
gave no answer to an attempt (no answer in time, a broken or refused
connection) or answered that it is ``behind`` is *suspected* for a span (the
client uses two attempt timeouts: a dead node costs each client about one
timeout per span, and a node that comes back is used again soon). A success
answer of the node clears it.

A choice leaves the suspects out of its candidates, unless every candidate is
suspected: then it chooses among them all, so a partition is never left
without a replica (nor the cluster without a node). As the Rust client
(``crates/amulet-client/src/rules/suspects.rs``, ``rules/routing.rs``) and
the Java client (``ReplicaChooser``), but by address: the Python client
routes by node address, not node id.
"""

from __future__ import annotations

import enum
import random
import threading
import time
from collections.abc import Callable, Sequence

import grpc

from amulet._rpc import _RETRY_CODES, error_kind, metadata_value


class Outcome(enum.Enum):
    """What an attempt at a node says of that node."""

    # The node executed the attempt (a success answer): no longer suspected.
    DONE = "done"
    # No answer in time, or the connection broke or was refused: suspected.
    NO_ANSWER = "no-answer"
    # The node answered that it is behind (catching up, its map older than
    # the request's): suspected.
    BEHIND = "behind"
    # Any other answer (a refusal, a stale map, an error of the operation):
    # nothing learnt about the node.
    OTHER = "other"


def outcome_of(error: grpc.RpcError) -> Outcome:
    """The outcome of an attempt that failed with ``error``: ``behind`` is
    BEHIND; any other ``amulet-error`` kind or an ``amulet-reason`` is
    OTHER (only the node sets them: it answered); DEADLINE_EXCEEDED,
    UNAVAILABLE, CANCELLED or UNKNOWN without them is NO_ANSWER (as the
    Rust client's ``Outcome::from_status``); anything else is OTHER."""
    kind = error_kind(error)
    if kind == "behind":
        return Outcome.BEHIND
    if kind is not None or metadata_value(error, "amulet-reason") is not None:
        return Outcome.OTHER
    if error.code() in _RETRY_CODES:
        return Outcome.NO_ANSWER
    return Outcome.OTHER


class Suspects:
    """The nodes (addresses) suspected now, and until when; shared by the
    threads of one client (every method takes a lock).

    ``span`` is how long a failure suspects a node, in seconds of ``clock``
    (``time.monotonic`` unless a test gives another); ``rng`` draws the
    choices (the ``random`` module unless a test gives a ``random.Random``).
    """

    def __init__(
        self,
        span: float,
        *,
        clock: Callable[[], float] = time.monotonic,
        rng: random.Random | None = None,
    ) -> None:
        self.span = span
        self._clock = clock
        self._rng = rng
        self._lock = threading.Lock()
        # Suspected address -> until when, by the clock.
        self._until: dict[str, float] = {}

    def __repr__(self) -> str:
        return f"Suspects(span={self.span}, now={self.at()})"

    def judge(self, node: str, outcome: Outcome) -> None:
        """Learns from an attempt's ``outcome`` at ``node``: NO_ANSWER and
        BEHIND suspect it for ``span`` from now, DONE clears it, OTHER
        changes nothing."""
        if outcome in (Outcome.NO_ANSWER, Outcome.BEHIND):
            with self._lock:
                self._until[node] = self._clock() + self.span
        elif outcome is Outcome.DONE:
            with self._lock:
                self._until.pop(node, None)

    def at(self) -> list[str]:
        """The nodes suspected now, sorted."""
        with self._lock:
            now = self._clock()
            return sorted(node for node, until in self._until.items() if until > now)

    def suspected(self, node: str) -> bool:
        """Whether ``node`` is suspected now."""
        with self._lock:
            until = self._until.get(node)
            return until is not None and until > self._clock()

    def unsuspected(self, candidates: Sequence[str]) -> list[str]:
        """``candidates`` (a new list, in their order) without the nodes
        suspected now, unless that leaves none: then all of them."""
        with self._lock:
            if not self._until:
                return list(candidates)
            now = self._clock()
            # Forget the spans that ended, so the table holds current
            # suspects only.
            for node in [n for n, until in self._until.items() if until <= now]:
                del self._until[node]
            rest = [c for c in candidates if c not in self._until]
        return rest if rest else list(candidates)

    def choose(self, candidates: Sequence[str], avoid: str | None = None) -> str:
        """A random node of ``candidates`` (not empty): among the
        unsuspected ones (all of them if every one is suspected), other than
        ``avoid`` (the node the previous attempt failed at) if another
        remains."""
        if not candidates:
            raise ValueError("no candidate to choose from")
        nodes = self.unsuspected(candidates)
        if len(nodes) > 1 and avoid in nodes:
            nodes = [n for n in nodes if n != avoid]
        return (self._rng or random).choice(nodes)
