"""The RPCs of the Amulet service this client uses, bound by hand to a
channel (see setup.py for why the service stubs are not generated)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import grpc

from amulet.tls import NODE_SERVER_NAME
from amulet.v1 import amulet_pb2 as pb

# Pause between attempts, doubled up to BACKOFF_MAX (seconds).
BACKOFF_MIN = 0.01
BACKOFF_MAX = 0.5

# Retried statuses without an amulet-error kind: the request may have taken
# effect (the same sequence makes a resend safe).
_RETRY_CODES = frozenset(
    {
        grpc.StatusCode.DEADLINE_EXCEEDED,
        grpc.StatusCode.UNAVAILABLE,
        grpc.StatusCode.CANCELLED,
        grpc.StatusCode.UNKNOWN,
    }
)

if TYPE_CHECKING:
    from amulet.tls import BearerToken, TlsFiles

# Largest reply accepted: a range read of many large values (as in the
# Rust client).
REPLY_BYTES_MAX = 256 * 1024 * 1024

_SERVICE = "/amulet.v1.Amulet/"


class AmuletStub:
    """Callables for the service's methods on one channel."""

    def __init__(self, channel: grpc.Channel):
        def unary(name, request, reply):
            return channel.unary_unary(
                _SERVICE + name,
                request_serializer=request.SerializeToString,
                response_deserializer=reply.FromString,
            )

        self.GetPartitionMap = unary("GetPartitionMap", pb.GetPartitionMapRequest, pb.PartitionMap)
        self.OpenSession = unary("OpenSession", pb.OpenSessionRequest, pb.SessionResponse)
        self.KeepAlive = unary("KeepAlive", pb.OpenSessionRequest, pb.SessionResponse)
        self.CloseSession = unary("CloseSession", pb.CloseSessionRequest, pb.SessionResponse)
        self.Execute = unary("Execute", pb.MapRequest, pb.MapResponse)
        self.ReadAt = unary("ReadAt", pb.ReadAtRequest, pb.ReadAtResponse)
        self.Status = unary("Status", pb.StatusRequest, pb.StatusResponse)
        self.Reconfigure = unary("Reconfigure", pb.ReconfigureRequest, pb.ReconfigureResponse)
        self.EventualGet = unary("EventualGet", pb.EventualGetRequest, pb.Versioned)
        self.EventualPut = unary("EventualPut", pb.EventualPutRequest, pb.Versioned)
        self.EventualDelete = unary("EventualDelete", pb.EventualDeleteRequest, pb.Versioned)
        self.ChangeAccess = unary("ChangeAccess", pb.ChangeAccessRequest, pb.ChangeAccessResponse)
        self.CreateToken = unary("CreateToken", pb.CreateTokenRequest, pb.CreateTokenResponse)
        self.GetAccess = unary("GetAccess", pb.GetAccessRequest, pb.AccessConfiguration)
        self.WhoAmI = unary("WhoAmI", pb.WhoAmIRequest, pb.WhoAmIResponse)
        self.ChangeMembership = unary(
            "ChangeMembership", pb.ChangeMembershipRequest, pb.ChangeMembershipResponse
        )
        self.SetBalancer = unary("SetBalancer", pb.SetBalancerRequest, pb.BalancerStatus)
        self.ReadSnapshot = channel.unary_stream(
            _SERVICE + "ReadSnapshot",
            request_serializer=pb.ReadSnapshotRequest.SerializeToString,
            response_deserializer=pb.SnapshotPage.FromString,
        )
        self.TailLog = channel.unary_stream(
            _SERVICE + "TailLog",
            request_serializer=pb.TailLogRequest.SerializeToString,
            response_deserializer=pb.LogEntries.FromString,
        )


def open_channel(address: str, tls: "TlsFiles | None" = None, token: "BearerToken | None" = None) -> grpc.Channel:
    """A channel to ``address`` (host:port): plaintext, or with ``tls``
    mutually authenticated TLS that trusts only the cluster CA and checks
    that the node's certificate names ``amulet-node`` (``amulet.tls``).
    With ``token`` (TLS only), every call on it, unary or streaming,
    carries ``authorization: Bearer TOKEN`` (gRPC call credentials, which
    gRPC never sends on a plaintext channel)."""
    if token is not None and tls is None:
        raise ValueError("a bearer token is sent over TLS only: give the cluster CA (amulet.TlsFiles.ca_only)")
    options = [
        ("grpc.max_receive_message_length", REPLY_BYTES_MAX),
        ("grpc.max_send_message_length", REPLY_BYTES_MAX),
        # Fail fast and retry elsewhere rather than waiting out a
        # long reconnect backoff after a node restarts.
        ("grpc.initial_reconnect_backoff_ms", 100),
        ("grpc.max_reconnect_backoff_ms", 1000),
        ("grpc.enable_retries", 0),
    ]
    if tls is None:
        return grpc.insecure_channel(address, options=options)
    # Whatever address is dialled, the node's certificate must name
    # amulet-node (every node certificate does, besides node-<id>.amulet).
    options.append(("grpc.ssl_target_name_override", NODE_SERVER_NAME))
    credentials = tls.credentials()
    if token is not None:
        credentials = grpc.composite_channel_credentials(credentials, token.call_credentials())
    return grpc.secure_channel(address, credentials, options=options)


def metadata_value(error: grpc.RpcError, name: str):
    """The trailing metadata value ``name`` of a failed call, if any: a
    ``str``, or ``bytes`` for a binary key (``...-bin``)."""
    try:
        metadata = error.trailing_metadata() or ()
    except Exception:  # noqa: BLE001 - not every RpcError carries metadata
        return None
    for key, value in metadata:
        if key == name:
            return value
    return None


def error_kind(error: grpc.RpcError) -> str | None:
    """The ``amulet-error`` metadata value of a failed call, if any."""
    value = metadata_value(error, "amulet-error")
    return value.decode() if isinstance(value, bytes) else value


class _Retry(Exception):
    """One attempt failed in a way the protocol retries."""

    def __init__(self, why: str, maybe_applied: bool, stale_map: bool = False):
        super().__init__(why)
        self.maybe_applied = maybe_applied
        # The replica called the map the attempt was routed by stale.
        self.stale_map = stale_map
