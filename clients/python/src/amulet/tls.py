"""TLS with mutual authentication: the PEM files a client presents and trusts.

The layout is the one ``amulet cert`` and ``amulet dev`` write (and the Rust
and Java clients read): a directory with ``ca.pem``, the cluster CA
certificate, and for each client user ``<user>.pem`` (its certificate
chain, leaf first) and ``<user>.key`` (its private key, PEM). ``amulet dev``
creates the user ``admin``.

A client with TLS trusts only ``ca.pem`` (not the system's roots), presents
the user's certificate, and checks that each node's certificate names the
DNS name ``amulet-node`` (every node certificate does, besides
``node-<id>.amulet``), whatever address it dials.

    import amulet
    client = amulet.Client("127.0.0.1:7101", tls=amulet.TlsFiles.from_dir("path/to/tls"))

Without ``tls=``, a client uses ``TlsFiles.from_env()``: the directory
``$AMULET_TLS_DIR`` with the user ``$AMULET_USER`` (default ``admin``) when
the first is set, else plaintext. ``tls=False`` is plaintext whatever the
environment says.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

import grpc

__all__ = ["TlsFiles", "TLS_DIR_ENV", "USER_ENV", "DEV_USER", "NODE_SERVER_NAME", "connect_hint", "resolve"]

# Environment variable naming the TLS directory of a client given no ``tls``.
TLS_DIR_ENV = "AMULET_TLS_DIR"
# Environment variable naming the user whose files are used (default DEV_USER).
USER_ENV = "AMULET_USER"
# The user ``amulet dev`` creates.
DEV_USER = "admin"
# The DNS name every node certificate carries; checked whatever address is dialled.
NODE_SERVER_NAME = "amulet-node"

_CERTIFICATE = re.compile(rb"-----BEGIN CERTIFICATE-----")
_PRIVATE_KEY = re.compile(rb"-----BEGIN ((?:EC |RSA |ENCRYPTED )?)PRIVATE KEY-----")


def _read(path: Path, what: str) -> bytes:
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise ValueError(f"TLS {what} {path} does not exist") from None
    except OSError as e:
        raise ValueError(f"TLS {what} {path} cannot be read: {e.strerror or e}") from None
    return data


def _certificate(path: Path, what: str) -> bytes:
    data = _read(path, what)
    if not _CERTIFICATE.search(data):
        raise ValueError(f"TLS {what} {path} holds no PEM certificate (-----BEGIN CERTIFICATE-----)")
    return data


def _private_key(path: Path) -> bytes:
    data = _read(path, "private key")
    found = _PRIVATE_KEY.search(data)
    if found is None:
        raise ValueError(f"TLS private key {path} holds no PEM private key (-----BEGIN PRIVATE KEY-----)")
    if found.group(1) == b"ENCRYPTED ":
        raise ValueError(f"TLS private key {path} is encrypted: give an unencrypted PKCS#8 PEM key")
    return data


@dataclass(frozen=True)
class TlsFiles:
    """The CA certificate to trust, and the certificate chain and private
    key to present, as PEM file paths (``str`` or ``os.PathLike``).

    The files are read (and checked to hold PEM) when the ``TlsFiles`` is
    made: a missing, unreadable or non-PEM file raises a ``ValueError``
    naming it. Channels opened later use what was read then.
    """

    ca: Path
    cert: Path
    key: Path
    ca_pem: bytes = field(init=False, repr=False, compare=False)
    cert_pem: bytes = field(init=False, repr=False, compare=False)
    key_pem: bytes = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        for name in ("ca", "cert", "key"):
            value = getattr(self, name)
            if not isinstance(value, (str, os.PathLike)):
                raise TypeError(f"TlsFiles.{name} must be a path, not {type(value).__name__}")
            object.__setattr__(self, name, Path(value))
        object.__setattr__(self, "ca_pem", _certificate(self.ca, "CA certificate"))
        object.__setattr__(self, "cert_pem", _certificate(self.cert, "certificate"))
        object.__setattr__(self, "key_pem", _private_key(self.key))

    @classmethod
    def from_dir(cls, directory: str | os.PathLike, user: str = DEV_USER) -> "TlsFiles":
        """``ca.pem``, ``<user>.pem`` and ``<user>.key`` of ``directory``."""
        if not isinstance(user, str) or not user or user in (".", "..") or "/" in user or os.sep in user:
            raise ValueError(f"bad TLS user name {user!r}")
        base = Path(directory)
        if not base.is_dir():
            raise ValueError(f"TLS directory {base} does not exist or is not a directory")
        return cls(base / "ca.pem", base / f"{user}.pem", base / f"{user}.key")

    @classmethod
    def from_env(cls) -> "TlsFiles | None":
        """``from_dir($AMULET_TLS_DIR, $AMULET_USER or "admin")`` if
        ``AMULET_TLS_DIR`` is set (and not empty), else None."""
        directory = os.environ.get(TLS_DIR_ENV)
        if not directory:
            return None
        return cls.from_dir(directory, os.environ.get(USER_ENV) or DEV_USER)

    def credentials(self) -> grpc.ChannelCredentials:
        """gRPC channel credentials: trust only the CA, present the
        certificate chain and key."""
        return grpc.ssl_channel_credentials(
            root_certificates=self.ca_pem, private_key=self.key_pem, certificate_chain=self.cert_pem
        )


def resolve(tls: "TlsFiles | bool | None") -> "TlsFiles | None":
    """What a client's ``tls=`` argument means: a ``TlsFiles`` is used as it
    is; ``None`` is ``TlsFiles.from_env()``; ``False`` is plaintext."""
    if tls is None:
        return TlsFiles.from_env()
    if tls is False:
        return None
    if isinstance(tls, TlsFiles):
        return tls
    raise TypeError(f"tls must be an amulet.TlsFiles, None or False, not {type(tls).__name__}")


def connect_hint(tls: "TlsFiles | None", last: str) -> str:
    """What a client that found no seed adds to its ``Unavailable``: with
    TLS, what it trusts and presents; in plaintext, when the failure was
    not a refused connection (a TLS node closes a plaintext one), that the
    nodes may want TLS."""
    if tls is not None:
        return (
            f"; over TLS: the client trusts only the CA certificate {tls.ca}, presents {tls.cert}, and"
            f" needs node certificates naming {NODE_SERVER_NAME}: check that the nodes serve TLS with"
            f" certificates of that CA, and that they trust the CA of {tls.cert}"
        )
    if "connection refused" in last.lower():
        return ""
    return (
        f"; the client connects in plaintext: if the nodes serve TLS, pass tls=amulet.TlsFiles.from_dir(...)"
        f" or set {TLS_DIR_ENV}"
    )
