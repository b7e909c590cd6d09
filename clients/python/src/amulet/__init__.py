"""Python client of Amulet, a distributed, strongly consistent,
partitioned ordered map.

    import amulet
    with amulet.Client("127.0.0.1:7101") as client:
        users = client.map("default")
        users["alice"] = b"admin"
        print(users["alice"], list(users.irange("a", "b")))

See README.md for the API and ``amulet.errors`` for the exception hierarchy.
"""

from amulet import codecs
from amulet import tuple as tuple_layer
from amulet.bytemap import ByteMap
from amulet.client import Client
from amulet.errors import (
    AlreadyExists,
    AmuletError,
    InvalidArgument,
    NotFound,
    OutcomeUnknown,
    ProtocolError,
    ResourceExhausted,
    Unavailable,
)
from amulet.map import AmuletMap
from amulet.snapshot import Snapshot
from amulet.tuple import SingleFloat, Versionstamp, pack, unpack

__all__ = [
    "AlreadyExists",
    "AmuletError",
    "AmuletMap",
    "ByteMap",
    "Client",
    "InvalidArgument",
    "NotFound",
    "OutcomeUnknown",
    "ProtocolError",
    "ResourceExhausted",
    "SingleFloat",
    "Snapshot",
    "Unavailable",
    "Versionstamp",
    "codecs",
    "pack",
    "tuple_layer",
    "unpack",
]
__version__ = "0.1.0"
