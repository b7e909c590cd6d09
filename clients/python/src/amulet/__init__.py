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

See README.md for the API and ``amulet.errors`` for the exception hierarchy.
"""

from amulet import codecs, field_record
from amulet import tuple as tuple_layer
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
from amulet.snapshot import Snapshot
from amulet.tls import TlsFiles
from amulet.transaction import Transaction, TransactionMap, transactional
from amulet.tuple import SingleFloat, Versionstamp, pack, unpack

__all__ = [
    "AlreadyExists",
    "AmuletError",
    "AmuletMap",
    "ByteMap",
    "Client",
    "ConflictError",
    "Context",
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
    "SingleFloat",
    "Snapshot",
    "Tail",
    "TlsFiles",
    "Transaction",
    "TransactionMap",
    "Unauthenticated",
    "Unavailable",
    "Versioned",
    "Versionstamp",
    "codecs",
    "field_record",
    "pack",
    "transactional",
    "tuple_layer",
    "unpack",
]
__version__ = "0.1.0"
