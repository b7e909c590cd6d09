//! What a client asks a replica and what it is answered (DMap §III-B):
//! the request as the receiving replica sees it and every answer it can
//! get, from the service's reply to each way of being refused.

use crate::{Body, PartitionMap, Refusal};
use amulet_types::{MapVersion, NodeId, SessionId};
use serde::{Deserialize, Serialize};

/// A client request's number at the replica that received it.
pub type RequestId = u64;

/// A client's request as the receiving replica sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClientRequest<C> {
    /// The partition map version the client routed by.
    pub map_version: MapVersion,
    /// Session and sequence, if any.
    pub session: Option<(SessionId, u64)>,
    /// The command.
    pub body: Body<C>,
    /// Who sent it, as this node authenticated them (`None` without TLS).
    pub principal: Option<crate::Principal>,
}

/// The answer to a client.
///
/// Replies are kept in checkpoints (a session's last reply), encoded by
/// variant position: a new variant goes last.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ClientReply<R> {
    /// The service's reply (which may itself report a failure).
    Done(R),
    /// The session request succeeded.
    SessionOk,
    /// The client's partition map is out of date: here is the current one;
    /// the command was not executed.
    StaleMap(Box<PartitionMap>),
    /// This node does not replicate the partition the command belongs to.
    NotAReplica(Box<PartitionMap>),
    /// The command names a keyspace the map does not have.
    UnknownKeyspace(String),
    /// The command creates a keyspace the map has already.
    KeyspaceExists(String),
    /// The client routed by a newer partition map than this replica has
    /// executed: it cannot judge the request yet. Nothing was ordered;
    /// resend (here later, or at another replica).
    Behind,
    /// The session is unknown (expired or closed); open a new one.
    SessionExpired,
    /// The session already executed a later sequence.
    StaleSequence,
    /// The request was refused and took no effect; the refusal says why
    /// and whether sending it again may succeed
    /// ([`Refusal::is_retryable`]).
    Refused(Refusal),
    /// A multi-partition command took effect but another partition's part
    /// of the reply is no longer available.
    Lost,
    /// The reconfiguration was ordered and is valid: it takes effect at
    /// its barrier's fence, a moment later, everywhere.
    Accepted,
    /// A join was ordered: the joiner's id (it is Joining in the view).
    Joined(NodeId),
}
