"""Python client of Amulet, a distributed, strongly consistent,
partitioned ordered map, with named shared logs and eventual maps.

    import amulet
    with amulet.Client("127.0.0.1:7101") as client:
        users = client.map("default")
        users["alice"] = b"admin"
        print(users["alice"], list(users.irange("a", "b")))

        @amulet.transactional
        def transfer(tx, source, target, amount):
            accounts = tx.map("accounts", value_codec=amulet.codecs.JSON)
            accounts[source] -= amount
            accounts[target] += amount

        transfer(client, "alice", "bob", 10)  # committed; run again on conflicts

        events = client.create_log_if_absent("events")  # a named shared log
        position = events.append(b"hello")

        carts = client.create_map("carts", eventual=True, replicas=3)
        seen = carts.get(b"alice")                       # siblings + context
        carts.put(b"alice", b"book", seen.context)       # supersedes what it saw

    # Mutual TLS (``amulet dev`` serves it by default): ca.pem, admin.pem,
    # admin.key of a TLS directory (or set AMULET_TLS_DIR, and AMULET_USER
    # if not admin). A certificate that names no user: amulet.Unauthenticated.
    client = amulet.Client("127.0.0.1:7101", tls=amulet.TlsFiles.from_dir("amulet-data/tls"))

    # Access control (docs/security.md, ``amulet.access``): an admin grants,
    # assigns and makes bearer tokens; a client without a certificate of its
    # own trusts the CA and sends a token (or set AMULET_TOKEN).
    client.grant("readers", "users", "read"); client.assign_role("alice", "readers")
    created = client.create_token("bob", ttl_seconds=3600)    # repr hides the secret
    bob = amulet.Client("127.0.0.1:7101", tls=amulet.TlsFiles.ca_only("amulet-data/tls/ca.pem"),
                        token=created.token)
    bob.who_am_i()                                   # WhoAmI(user='bob', token=created.id, ...)

See README.md for the API and ``amulet.errors`` for the exception hierarchy.
"""

from amulet import access, codecs, field_record
from amulet.access import AccessConfiguration, CreatedToken, TokenInfo, WhoAmI
from amulet import tuple as tuple_layer
from amulet.bulk_load import BulkLoaded
from amulet.bytemap import ByteMap
from amulet.client import Client
from amulet.errors import (
    AlreadyExists,
    AmuletError,
    ConflictError,
    FailedPrecondition,
    InvalidArgument,
    NotFound,
    OutOfRange,
    OutcomeUnknown,
    PermissionDenied,
    ProtocolError,
    QuorumNotReached,
    ReadVersionTooOldError,
    ResourceExhausted,
    Unauthenticated,
    Unavailable,
)
from amulet.eventual import Context, EventualMap, Versioned
from amulet.log import DLog, LogBounds, LogEntries, Tail
from amulet.map import AmuletMap
from amulet.scan import Scan
from amulet.snapshot import Snapshot
from amulet.tls import BearerToken, TlsFiles
from amulet.transaction import Transaction, TransactionMap, transactional
from amulet.tuple import SingleFloat, Versionstamp, pack, unpack

__all__ = [
    "AccessConfiguration",
    "AlreadyExists",
    "AmuletError",
    "AmuletMap",
    "BearerToken",
    "BulkLoaded",
    "ByteMap",
    "Client",
    "ConflictError",
    "Context",
    "CreatedToken",
    "DLog",
    "EventualMap",
    "FailedPrecondition",
    "InvalidArgument",
    "LogBounds",
    "LogEntries",
    "NotFound",
    "OutOfRange",
    "OutcomeUnknown",
    "PermissionDenied",
    "ProtocolError",
    "QuorumNotReached",
    "ReadVersionTooOldError",
    "ResourceExhausted",
    "Scan",
    "SingleFloat",
    "Snapshot",
    "Tail",
    "TlsFiles",
    "TokenInfo",
    "Transaction",
    "TransactionMap",
    "Unauthenticated",
    "Unavailable",
    "Versioned",
    "Versionstamp",
    "WhoAmI",
    "access",
    "codecs",
    "field_record",
    "pack",
    "transactional",
    "tuple_layer",
    "unpack",
]
__version__ = "0.1.0"
