"""TLS: the PEM files a client presents and trusts, and bearer tokens.

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

A client without a certificate of its own authenticates with a bearer
token (``amt1.ID.SECRET``, from ``client.create_token`` or ``amulet token
create``; docs/security.md): it trusts the cluster CA only and sends
``authorization: Bearer TOKEN`` with every call, unary and streaming (as
gRPC call credentials, which gRPC sends over TLS only)::

    client = amulet.Client("127.0.0.1:7101", tls=amulet.TlsFiles.ca_only("path/to/tls/ca.pem"),
                           token="amt1....")

Without ``token=``, a client uses ``$AMULET_TOKEN`` when it is set (and
gives no certificate of its own); ``token=False`` sends none whatever the
environment says. A token is sent over TLS only: a token with a plaintext
client is a ``ValueError``. See ``resolve_credentials``.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

import grpc

__all__ = [
    "BearerToken",
    "TlsFiles",
    "TLS_DIR_ENV",
    "USER_ENV",
    "TOKEN_ENV",
    "DEV_USER",
    "NODE_SERVER_NAME",
    "connect_hint",
    "resolve",
    "resolve_credentials",
]

# Environment variable naming the TLS directory of a client given no ``tls``.
TLS_DIR_ENV = "AMULET_TLS_DIR"
# Environment variable naming the user whose files are used (default DEV_USER).
USER_ENV = "AMULET_USER"
# Environment variable holding a bearer token a client given no ``token`` sends.
TOKEN_ENV = "AMULET_TOKEN"
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

    ``cert`` and ``key`` go together: without both (``TlsFiles(ca)``, or
    ``TlsFiles.ca_only(ca)``) the client presents no certificate and must
    authenticate with a bearer token (``Client(..., token=...)``).

    The files are read (and checked to hold PEM) when the ``TlsFiles`` is
    made: a missing, unreadable or non-PEM file raises a ``ValueError``
    naming it. Channels opened later use what was read then.
    """

    ca: Path
    cert: Path | None = None
    key: Path | None = None
    ca_pem: bytes = field(init=False, repr=False, compare=False)
    cert_pem: bytes | None = field(init=False, repr=False, compare=False)
    key_pem: bytes | None = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if (self.cert is None) != (self.key is None):
            raise ValueError(
                "TlsFiles takes a certificate and its key together, or neither (the CA only, with a bearer token)"
            )
        for name in ("ca", "cert", "key"):
            value = getattr(self, name)
            if value is None and name != "ca":
                continue
            if not isinstance(value, (str, os.PathLike)):
                raise TypeError(f"TlsFiles.{name} must be a path, not {type(value).__name__}")
            object.__setattr__(self, name, Path(value))
        object.__setattr__(self, "ca_pem", _certificate(self.ca, "CA certificate"))
        if self.cert is None:
            object.__setattr__(self, "cert_pem", None)
            object.__setattr__(self, "key_pem", None)
        else:
            object.__setattr__(self, "cert_pem", _certificate(self.cert, "certificate"))
            object.__setattr__(self, "key_pem", _private_key(self.key))

    @property
    def has_certificate(self) -> bool:
        """Whether the client presents a certificate (else it needs a token)."""
        return self.cert is not None

    @classmethod
    def ca_only(cls, ca: str | os.PathLike) -> "TlsFiles":
        """Trust the CA certificate ``ca`` and present no certificate: for a
        client that authenticates with a bearer token."""
        return cls(ca)

    def without_certificate(self) -> "TlsFiles":
        """These files' CA only (as read already), presenting no certificate."""
        if self.cert is None:
            return self
        copy = object.__new__(TlsFiles)
        for name, value in (("ca", self.ca), ("cert", None), ("key", None)):
            object.__setattr__(copy, name, value)
        for name, value in (("ca_pem", self.ca_pem), ("cert_pem", None), ("key_pem", None)):
            object.__setattr__(copy, name, value)
        return copy

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

    @classmethod
    def ca_from_env(cls) -> "TlsFiles | None":
        """``ca_only($AMULET_TLS_DIR/ca.pem)`` if ``AMULET_TLS_DIR`` is set
        (and not empty), else None: what a client with a bearer token and
        no ``tls=`` trusts."""
        directory = os.environ.get(TLS_DIR_ENV)
        if not directory:
            return None
        base = Path(directory)
        if not base.is_dir():
            raise ValueError(f"TLS directory {base} (${TLS_DIR_ENV}) does not exist or is not a directory")
        return cls.ca_only(base / "ca.pem")

    def credentials(self) -> grpc.ChannelCredentials:
        """gRPC channel credentials: trust only the CA, present the
        certificate chain and key (if any)."""
        return grpc.ssl_channel_credentials(
            root_certificates=self.ca_pem, private_key=self.key_pem, certificate_chain=self.cert_pem
        )


# Characters a gRPC metadata value (and so a token) can carry: visible ASCII.
_METADATA_TEXT = re.compile(r"[\x21-\x7e]+")


class BearerToken:
    """A bearer token (``amt1.ID.SECRET``) a client sends as
    ``authorization: Bearer TOKEN``. Its ``repr`` and ``str`` show the
    token's id only, never the secret; ``secret()`` is the whole token."""

    __slots__ = ("_token",)

    def __init__(self, token: str):
        if not isinstance(token, str):
            raise TypeError(f"a bearer token is a str, not {type(token).__name__}")
        token = token.strip()
        if not token:
            raise ValueError("the bearer token is empty")
        if not _METADATA_TEXT.fullmatch(token):
            # Not shown: it may be a real token with a stray character.
            raise ValueError("the bearer token has characters gRPC metadata cannot carry (visible ASCII only)")
        self._token = token

    @property
    def id(self) -> str | None:
        """The token's public id (the ``ID`` of ``amt1.ID.SECRET``), or
        None if it does not have that shape."""
        parts = self._token.split(".")
        if len(parts) == 3 and parts[0] == "amt1" and parts[1]:
            return parts[1]
        return None

    def secret(self) -> str:
        """The whole token, secret included: what is sent."""
        return self._token

    def call_credentials(self) -> grpc.CallCredentials:
        """gRPC call credentials adding ``authorization: Bearer TOKEN`` to
        every call (unary and streaming) of a TLS channel."""
        return grpc.metadata_call_credentials(_BearerPlugin(f"Bearer {self._token}"), name="amulet-bearer-token")

    def __repr__(self) -> str:
        return f"BearerToken(id={self.id!r}, secret=<hidden>)"

    __str__ = __repr__

    def __eq__(self, other) -> bool:
        return isinstance(other, BearerToken) and other._token == self._token

    def __hash__(self) -> int:
        return hash(self._token)


class _BearerPlugin(grpc.AuthMetadataPlugin):
    """Adds the authorization metadata; gRPC calls it for every call of a
    channel made with these call credentials (never on a plaintext one)."""

    def __init__(self, value: str):
        self._value = value

    def __call__(self, context, callback) -> None:
        callback((("authorization", self._value),), None)

    def __repr__(self) -> str:
        return "_BearerPlugin(<hidden>)"


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


def _token_of(token) -> "BearerToken":
    if isinstance(token, BearerToken):
        return token
    if isinstance(token, str):
        return BearerToken(token)
    # A CreatedToken (amulet.access), or anything else holding one in .token.
    inner = getattr(token, "token", None)
    if isinstance(inner, str):
        return BearerToken(inner)
    raise TypeError(
        f"token must be a str (amt1.ID.SECRET), an amulet.CreatedToken, None or False, not {type(token).__name__}"
    )


def resolve_credentials(tls, token) -> "tuple[TlsFiles | None, BearerToken | None]":
    """What a client's ``tls=`` and ``token=`` arguments mean together:
    the TLS files of its channels (None: plaintext) and the bearer token it
    sends with every call (None: none).

    - ``token`` a str (or a ``CreatedToken``): sent with every call, and
      only the CA of the TLS files is used (no certificate is presented):
      those of ``tls``, or without ``tls=`` ``$AMULET_TLS_DIR/ca.pem``.
    - ``token=None``: ``$AMULET_TOKEN`` if set, as above, unless ``tls``
      presents a certificate (an explicit certificate is used as given and
      the variable is ignored).
    - ``token=False``: no token, whatever the environment says.

    A token without TLS (``tls=False``, or no ``tls=`` and no
    ``AMULET_TLS_DIR``) is a ``ValueError``: a token is sent over TLS
    only, to nodes whose certificates chain to the cluster CA."""
    if token is False:
        return resolve(tls), None
    if token is None:
        from_env = os.environ.get(TOKEN_ENV, "").strip()
        if not from_env or (isinstance(tls, TlsFiles) and tls.has_certificate):
            return resolve(tls), None
        bearer, origin = BearerToken(from_env), f"${TOKEN_ENV}"
    else:
        bearer, origin = _token_of(token), "token="
    if tls is None:
        files = TlsFiles.ca_from_env()
    elif tls is False:
        files = None
    elif isinstance(tls, TlsFiles):
        files = tls.without_certificate()
    else:
        raise TypeError(f"tls must be an amulet.TlsFiles, None or False, not {type(tls).__name__}")
    if files is None:
        where = "tls=False" if tls is False else f"no tls= and no ${TLS_DIR_ENV}"
        hint = f"; or pass token=False to connect without ${TOKEN_ENV}" if token is None else ""
        raise ValueError(
            f"a bearer token ({origin}) is sent over TLS only, but the client has {where}: give the cluster CA"
            f" (tls=amulet.TlsFiles.ca_only('.../ca.pem'), or set {TLS_DIR_ENV}){hint}"
        )
    return files, bearer


def connect_hint(tls: "TlsFiles | None", last: str) -> str:
    """What a client that found no seed adds to its ``Unavailable``: with
    TLS, what it trusts and presents; in plaintext, when the failure was
    not a refused connection (a TLS node closes a plaintext one), that the
    nodes may want TLS."""
    if tls is not None and not tls.has_certificate:
        return (
            f"; over TLS: the client trusts only the CA certificate {tls.ca}, presents no certificate (it"
            f" authenticates with a bearer token), and needs node certificates naming {NODE_SERVER_NAME}:"
            f" check that the nodes serve TLS with certificates of that CA"
        )
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
