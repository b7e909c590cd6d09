"""Access control from a client (docs/security.md): users' roles, roles'
grants on maps and logs, bearer tokens, and who the cluster takes the
client for. The methods are ``Client.grant``, ``revoke``, ``assign_role``,
``unassign_role``, ``revoke_token``, ``change_access``, ``create_token``,
``access`` and ``who_am_i``; these are what they take and return.

Permissions are the strings ``"read"``, ``"write"`` and ``"admin"``, each
including the lesser ones (``admin`` creates and drops; ``write`` puts,
removes, appends, trims and commits; ``read`` gets, ranges, snapshots,
tails). A grant names a map or log, or ``"*"`` for every one. The built-in
role ``cluster-admin`` may do everything, access changes included; every
change and ``create_token`` and ``access`` need it (else
``amulet.PermissionDenied``, nothing changed). A bad change (an empty
name, the last cluster admin losing the role, a full configuration) is
``amulet.InvalidArgument``.

    import amulet
    with amulet.Client(seeds, tls=amulet.TlsFiles.from_dir("amulet-data/tls")) as admin:
        admin.grant("readers", "carts", "read")
        admin.assign_role("alice", "readers")        # alice.pem: amulet cert create-client
        created = admin.create_token("bob", ttl_seconds=3600)
    bob = amulet.Client(seeds, tls=amulet.TlsFiles.ca_only("amulet-data/tls/ca.pem"), token=created.token)
    print(bob.who_am_i())                             # WhoAmI(user='bob', token=created.id, ...)
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass, field

from amulet import errors
from amulet.v1 import amulet_pb2 as pb

__all__ = [
    "CLUSTER_ADMIN",
    "PERMISSIONS",
    "AccessConfiguration",
    "CreatedToken",
    "TokenInfo",
    "WhoAmI",
    "permission_to_pb",
    "permission_from_pb",
]

# The built-in role of everything (held by ``admin`` in a new cluster).
CLUSTER_ADMIN = "cluster-admin"

# Permission names, lesser first, and their proto values.
PERMISSIONS = {
    "read": pb.PERMISSION_READ,
    "write": pb.PERMISSION_WRITE,
    "admin": pb.PERMISSION_ADMIN,
}
_NAMES = {value: name for name, value in PERMISSIONS.items()}


def permission_to_pb(permission: str) -> int:
    """``"read"``, ``"write"`` or ``"admin"`` (any case) as the proto's
    ``Permission``; anything else is ``InvalidArgument``."""
    if isinstance(permission, str):
        value = PERMISSIONS.get(permission.strip().lower())
        if value is not None:
            return value
    raise errors.InvalidArgument(f"bad permission {permission!r}: use 'read', 'write' or 'admin'")


def permission_from_pb(value: int) -> str:
    """The name of a proto ``Permission`` (``"unspecified"`` for 0, a
    number's text for one this client does not know)."""
    return _NAMES.get(value, "unspecified" if value == 0 else str(value))


def _micros_to_datetime(micros: int) -> datetime.datetime:
    epoch = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)
    return epoch + datetime.timedelta(microseconds=micros)


@dataclass(frozen=True)
class CreatedToken:
    """A bearer token as ``Client.create_token`` made it. ``token`` (the
    whole ``amt1.ID.SECRET``) is in this object only: the cluster keeps
    its digest. ``repr`` and ``str`` show the id and expiry, never the
    secret. Pass it (or ``.token``) as ``Client(..., token=...)``."""

    token: str = field(repr=False)
    # The token's public id, for ``revoke_token`` and ``access().tokens``.
    id: str
    # When it expires, microseconds since the Unix epoch.
    expires_unix_micros: int

    @property
    def expires_at(self) -> datetime.datetime:
        """When it expires (UTC)."""
        return _micros_to_datetime(self.expires_unix_micros)

    def __str__(self) -> str:
        return repr(self)


@dataclass(frozen=True)
class TokenInfo:
    """A token the cluster knows (never its secret)."""

    id: str
    user: str
    expires_unix_micros: int

    @property
    def expires_at(self) -> datetime.datetime:
        return _micros_to_datetime(self.expires_unix_micros)


@dataclass(frozen=True)
class AccessConfiguration:
    """The access configuration as a node last executed it.

    ``version`` counts the access changes executed so far; ``users`` maps
    each user to its roles (sorted); ``roles`` maps each role to its
    grants, map or log name (or ``"*"``) to permission name; ``tokens``
    are the tokens not yet expired when the last one was created (ids,
    users, expiries; never secrets)."""

    version: int
    users: dict[str, list[str]]
    roles: dict[str, dict[str, str]]
    tokens: list[TokenInfo]

    @classmethod
    def from_pb(cls, message: pb.AccessConfiguration) -> "AccessConfiguration":
        return cls(
            version=message.version,
            users={u.user: sorted(u.roles) for u in message.users},
            roles={
                r.role: {g.map: permission_from_pb(g.permission) for g in r.grants} for r in message.roles
            },
            tokens=[TokenInfo(t.id, t.user, t.expires_unix_micros) for t in message.tokens],
        )

    def roles_of(self, user: str) -> list[str]:
        """The roles of ``user`` (none if it has none)."""
        return list(self.users.get(user, []))

    def grant(self, role: str, map: str) -> str | None:
        """The permission ``role`` has on ``map`` by a grant naming it (not
        counting ``"*"``), or None."""
        return self.roles.get(role, {}).get(map)

    def token(self, token_id: str) -> TokenInfo | None:
        """The token with id ``token_id``, if the cluster knows it."""
        for info in self.tokens:
            if info.id == token_id:
                return info
        return None


@dataclass(frozen=True)
class WhoAmI:
    """Who a node takes the client for: ``user`` (empty on a cluster
    without TLS, where nobody is checked), ``token`` (the id of the bearer
    token it authenticated with, or None for a certificate), the user's
    ``roles``, and ``secure`` (whether the node checks its clients)."""

    user: str
    token: str | None
    roles: list[str]
    secure: bool

    @classmethod
    def from_pb(cls, message: pb.WhoAmIResponse) -> "WhoAmI":
        return cls(
            user=message.user,
            token=message.token or None,
            roles=list(message.roles),
            secure=message.secure,
        )


def grant_change(role: str, map: str, permission: str) -> pb.ChangeAccessRequest:
    return pb.ChangeAccessRequest(
        grant=pb.RoleGrant(role=_name(role, "role"), map=_name(map, "map"), permission=permission_to_pb(permission))
    )


def revoke_change(role: str, map: str) -> pb.ChangeAccessRequest:
    return pb.ChangeAccessRequest(revoke=pb.RoleGrant(role=_name(role, "role"), map=_name(map, "map")))


def assign_change(user: str, role: str) -> pb.ChangeAccessRequest:
    return pb.ChangeAccessRequest(assign_role=pb.UserRole(user=_name(user, "user"), role=_name(role, "role")))


def unassign_change(user: str, role: str) -> pb.ChangeAccessRequest:
    return pb.ChangeAccessRequest(unassign_role=pb.UserRole(user=_name(user, "user"), role=_name(role, "role")))


def revoke_token_change(token_id) -> pb.ChangeAccessRequest:
    """Revokes by id; given a whole token (a ``CreatedToken``, a
    ``BearerToken`` or ``amt1.ID.SECRET``), only its id is sent: the
    secret never goes into a request the cluster logs."""
    from amulet.tls import BearerToken

    if isinstance(token_id, CreatedToken):
        token_id = token_id.id
    elif isinstance(token_id, BearerToken):
        token_id = token_id.id or ""
    elif isinstance(token_id, str) and token_id.strip().startswith("amt1."):
        parts = token_id.strip().split(".")
        token_id = parts[1] if len(parts) == 3 else ""
    token_id = _name(token_id, "token id")
    if not token_id:
        raise errors.InvalidArgument("revoke_token takes a token's id (CreatedToken.id), not an empty one")
    return pb.ChangeAccessRequest(revoke_token=token_id)


def _name(value, what: str) -> str:
    """A name the request carries; the cluster judges its content
    (``InvalidArgument`` reason ``access-change-refused``)."""
    if not isinstance(value, str):
        raise TypeError(f"the {what} must be a str, not {type(value).__name__}")
    return value
