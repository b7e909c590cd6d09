"""Sessions for operations in flight. A session orders its own commands by
sequence number, so it carries one operation at a time; the pool hands each
concurrent operation (each thread) its own."""

from __future__ import annotations

import secrets
import threading
import time
from dataclasses import dataclass, field


def _random_id() -> int:
    # Random so that two clients never share a session; never 0 ("none").
    return secrets.randbits(64) or 1


@dataclass
class SessionSlot:
    id: int = field(default_factory=_random_id)
    # Sequence of the next operation (the first is 1). A resend keeps it.
    next_sequence: int = 1
    # When the cluster last opened or renewed it, by time.monotonic().
    renewed: float = field(default_factory=time.monotonic)
    # Whether the cluster has opened it.
    open: bool = False


class SessionPool:
    """Idle sessions, shared by threads."""

    def __init__(self) -> None:
        self._idle: list[SessionSlot] = []
        self._lock = threading.Lock()

    def take(self) -> SessionSlot:
        with self._lock:
            return self._idle.pop() if self._idle else SessionSlot()

    def give_back(self, slot: SessionSlot) -> None:
        with self._lock:
            self._idle.append(slot)

    def drain(self) -> list[SessionSlot]:
        with self._lock:
            idle, self._idle = self._idle, []
            return idle
