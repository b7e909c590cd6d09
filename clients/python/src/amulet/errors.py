"""What an operation can fail with, after the client's own retries.

Every server error is an ``AmuletError``; the subclass says what happened
and whether the operation may have taken effect. The table mirrors the
status table of ``proto/amulet/v1/amulet.proto`` and the Rust client's
``amulet_client::Error``::

    AmuletError
    ├── InvalidArgument     INVALID_ARGUMENT; also a ValueError
    ├── NotFound            NOT_FOUND (unknown map, log or snapshot)
    ├── OutOfRange          OUT_OF_RANGE (a log position below the log's
    │                       first position, i.e. trimmed, or past its end)
    ├── AlreadyExists       ALREADY_EXISTS (create_map or create_log of a
    │                       name a map or log has)
    ├── ResourceExhausted   RESOURCE_EXHAUSTED (too many open snapshots)
    ├── FailedPrecondition  FAILED_PRECONDITION (merge_fields on a value that
    │                       is not a field record; an eventual op on an
    │                       ordered map, an ordered op on an eventual map)
    ├── OutcomeUnknown      the write may or may not have taken effect
    ├── Unauthenticated     UNAUTHENTICATED: the node did not accept the
    │                       client's credentials (with TLS: a certificate that
    │                       names no user, e.g. a node's; a malformed, unknown,
    │                       forged, revoked or expired bearer token; no
    │                       certificate and no token); not retried
    ├── PermissionDenied    PERMISSION_DENIED (amulet-reason
    │                       ``permission-denied``): the client's user lacks
    │                       the permission (docs/security.md); not retried
    ├── Unavailable         no node answered before the deadline
    │   └── QuorumNotReached  UNAVAILABLE ``quorum-not-reached``: an eventual
    │                       map's read or write heard from fewer than r or w
    │                       replicas (a write may have taken effect at some)
    ├── ProtocolError       a node answered something this client cannot use
    ├── ConflictError       ABORTED ``conflict``: a transaction read a key
    │                       written after its read version (``.map``, ``.key``)
    └── ReadVersionTooOldError  ABORTED ``read-version-too-old``: the
                            transaction's read version ended (its lease passed)

A client that cannot connect at all (a plaintext client against a TLS
cluster, a certificate of another CA, a cluster CA the nodes' certificates
do not chain to) sees ``Unavailable``: the TLS handshake fails before any
node answers. A handshake that succeeds with a certificate naming no user
ends in ``Unauthenticated`` at once: credentials do not get better by
retrying.

Both refusals are final everywhere: an operation raises them at once,
and an open snapshot iterator or log tail ends with them (a permission or
token revoked while it was open) instead of reopening its stream.

All but ``OutcomeUnknown`` (and ``Unavailable`` after a write was sent,
``QuorumNotReached`` of an eventual write included) changed nothing.
``ConflictError`` and ``ReadVersionTooOldError`` (the
``TRANSACTION_RETRYABLE`` pair) mean the transaction applied nothing and
may succeed if run again from a new read version: ``Client.transact`` and
``@amulet.transactional`` do that by themselves. Python-level misuse raises the usual built-ins instead:
``KeyError`` for a missing key in ``m[k]`` / ``del m[k]``, ``TypeError`` for
a key or value a codec cannot encode.
"""

from __future__ import annotations

import grpc

__all__ = [
    "AmuletError",
    "InvalidArgument",
    "NotFound",
    "OutOfRange",
    "AlreadyExists",
    "ResourceExhausted",
    "FailedPrecondition",
    "OutcomeUnknown",
    "Unauthenticated",
    "PermissionDenied",
    "CREDENTIALS_REFUSED",
    "Unavailable",
    "QuorumNotReached",
    "ProtocolError",
    "ConflictError",
    "ReadVersionTooOldError",
    "TRANSACTION_RETRYABLE",
    "from_status",
]


class AmuletError(Exception):
    """Base class of every error the cluster or the protocol reports.

    ``code`` is the final gRPC status code (``None`` when no node answered
    or the client refused the request itself).
    """

    def __init__(self, message: str, code: grpc.StatusCode | None = None):
        super().__init__(message)
        self.code = code


class InvalidArgument(AmuletError, ValueError):
    """The request is invalid (key or value too large, bad range, bad map
    name, ...); nothing changed."""


class NotFound(AmuletError):
    """No such map, log or snapshot; nothing changed."""


class OutOfRange(AmuletError):
    """A log position outside the log: below its first position (those
    entries were trimmed) or past its end; nothing changed."""


class AlreadyExists(AmuletError):
    """A map or log has the name already; nothing changed."""


class ResourceExhausted(AmuletError):
    """A limit of the cluster was reached (open snapshots); nothing changed."""


class FailedPrecondition(AmuletError):
    """The state the request needs is not there (``merge_fields`` on a value
    that is not a field record; a cluster that serves no maps; an eventual
    map's request on an ordered map, or an ordered map's on an eventual
    one); nothing changed."""


class OutcomeUnknown(AmuletError):
    """The operation may or may not have taken effect: the deadline passed
    while it was being resent, or part of its reply was lost after it took
    effect."""


class Unauthenticated(AmuletError):
    """The node did not accept the client's credentials (UNAUTHENTICATED):
    with TLS, the certificate the client presented is of the cluster CA
    but names no user (a node's certificate, say), or the bearer token is
    not valid (malformed, unknown, forged, revoked or expired: the node
    does not say which), or the client presented neither. Nothing
    changed. The client does not retry it, at connect time either: give
    it a user's files (``amulet.TlsFiles.from_dir(dir, user)``) or a
    valid token (``Client(..., token=...)``)."""


class PermissionDenied(AmuletError):
    """The client's user lacks the permission this needs
    (PERMISSION_DENIED, amulet-reason ``permission-denied``; the message
    names the user, the permission and the map): a read-only user
    writing, a map not granted, an access change without the cluster
    admin role. Nothing changed (a user is not told whether a map it may
    not use exists). Not retried: ask an administrator for a grant
    (``Client.grant``, ``Client.assign_role``)."""


class Unavailable(AmuletError):
    """No node could be reached before the deadline."""


class QuorumNotReached(Unavailable):
    """An eventual map's request (``amulet.EventualMap``) reached a node,
    but fewer of the key's replicas than its ``r`` or ``w`` answered within
    the node's wait (UNAVAILABLE with reason ``quorum-not-reached``).

    A read changed nothing. A write or delete may still have taken effect
    at the replicas that did answer: it then shows as a sibling, or is
    superseded, like any other write; so the client does not send it again
    by itself. Read the key and write again with the read's context to be
    sure of the outcome."""


class ProtocolError(AmuletError):
    """A node answered something this client does not understand."""


class ConflictError(AmuletError):
    """A transaction conflicted: ``key`` of ``map`` (``key`` is None when
    the map as a whole changed, e.g. it was cleared or dropped and created
    again, or when a read found the conflict before the commit) was written
    after the transaction's read version. Nothing was applied; run the
    transaction again (``Client.transact`` does)."""

    def __init__(
        self,
        message: str,
        code: grpc.StatusCode | None = None,
        *,
        map: str | None = None,
        key: bytes | None = None,
    ):
        super().__init__(message, code)
        self.map = map
        self.key = key

    def __reduce__(self):
        return (_conflict, (str(self), self.code, self.map, self.key))


def _conflict(message, code, map, key):
    return ConflictError(message, code, map=map, key=key)


class ReadVersionTooOldError(AmuletError):
    """A transaction's read version ended before it committed (its lease,
    ``Client(transaction_lease=...)``, passed): nothing was applied; run
    the transaction again (``Client.transact`` does)."""


# What the client never retries: the node refused the credentials.
CREDENTIALS_REFUSED = (Unauthenticated, PermissionDenied)

# What running a transaction again from a new read version may cure.
TRANSACTION_RETRYABLE = (ConflictError, ReadVersionTooOldError)


_BY_CODE = {
    grpc.StatusCode.INVALID_ARGUMENT: InvalidArgument,
    grpc.StatusCode.OUT_OF_RANGE: OutOfRange,
    grpc.StatusCode.NOT_FOUND: NotFound,
    grpc.StatusCode.ALREADY_EXISTS: AlreadyExists,
    grpc.StatusCode.RESOURCE_EXHAUSTED: ResourceExhausted,
    grpc.StatusCode.FAILED_PRECONDITION: FailedPrecondition,
    grpc.StatusCode.UNKNOWN: OutcomeUnknown,
    grpc.StatusCode.DEADLINE_EXCEEDED: OutcomeUnknown,
    grpc.StatusCode.UNAVAILABLE: Unavailable,
    grpc.StatusCode.UNAUTHENTICATED: Unauthenticated,
    grpc.StatusCode.PERMISSION_DENIED: PermissionDenied,
}

# The statuses of CREDENTIALS_REFUSED: final wherever they come from.
CREDENTIALS_CODES = frozenset({grpc.StatusCode.UNAUTHENTICATED, grpc.StatusCode.PERMISSION_DENIED})


def from_status(code: grpc.StatusCode, message: str) -> AmuletError:
    """The error a final status means."""
    kind = _BY_CODE.get(code)
    if kind is None:
        return ProtocolError(f"{code.name}: {message}", code)
    return kind(message, code)
