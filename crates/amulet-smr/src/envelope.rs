//! What replicas multicast (a command with its origin, session and map
//! version) and what they send each other (signals).

use crate::PartitionMap;
use amulet_types::{Instance, MapVersion, NodeId, PartitionId, SessionId, StreamId};
use bytes::Bytes;
use serde::{Deserialize, Serialize};

/// Where a command entered the system: the replica that answers it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Origin {
    /// The receiving node.
    pub node: NodeId,
    /// Its run, so a restarted node never answers its previous run's
    /// requests while it replays them.
    pub incarnation: u32,
    /// The request's number at that node and run.
    pub request: u64,
}

/// What a multicast command does.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Body<C> {
    /// A service command.
    App(C),
    /// Opens (or renews) the envelope's session for `lease_micros` of
    /// global time. Global stream only.
    OpenSession {
        /// Lease length, µs.
        lease_micros: u64,
    },
    /// Renews the envelope's session. Global stream only.
    KeepAlive {
        /// Lease length from now, µs.
        lease_micros: u64,
    },
    /// Ends the envelope's session. Global stream only.
    CloseSession,
    /// Changes the partitioning (see [`crate::Reconfiguration`]). Global
    /// stream only, ordered as a barrier; takes effect at its fence.
    Reconfigure(crate::Reconfiguration),
}

/// One command as the streams order it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CommandEnvelope<C> {
    /// Who answers.
    pub origin: Origin,
    /// The origin's clock when it proposed, µs: replicated time advances
    /// to the greatest timestamp delivered.
    pub timestamp_micros: u64,
    /// The partition map version the client routed by.
    pub map_version: MapVersion,
    /// Session and sequence, for exactly-once; `None` for a command that
    /// may take effect more than once if retried.
    pub session: Option<(SessionId, u64)>,
    /// The command.
    pub body: Body<C>,
}

impl<C: Serialize + serde::de::DeserializeOwned> CommandEnvelope<C> {
    /// Encodes for multicast.
    pub fn encode(&self) -> Bytes {
        Bytes::from(postcard::to_allocvec(self).expect("encoding to memory cannot fail"))
    }

    /// Decodes a delivered value. Total: bad bytes are an error.
    pub fn decode(bytes: &[u8]) -> Result<Self, postcard::Error> {
        postcard::from_bytes(bytes)
    }
}

/// Messages between replicas.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ReplicaMessage {
    /// S-SMR signal: `partition` executed the multi-partition command at
    /// `global_position`, with this encoded partial reply (`None` when the
    /// sender no longer holds it).
    Signal {
        /// The command's global position.
        global_position: u64,
        /// The sender's partition.
        partition: PartitionId,
        /// The encoded partial reply.
        partial: Option<Bytes>,
    },
    /// A replica waiting for signals asks again (signals are datagrams
    /// that may be lost).
    SignalRequest {
        /// The command's global position.
        global_position: u64,
        /// The asker.
        from: NodeId,
    },
    /// State transfer (thesis §3.4.2, DMap §III-C): a replica whose
    /// streams were trimmed past its position asks a peer of its
    /// partition for the peer's latest durable checkpoint, from byte
    /// `offset` (0 starts a transfer; later requests pull the next chunk).
    CheckpointRequest {
        /// The partition.
        partition: PartitionId,
        /// The asker.
        from: NodeId,
        /// First byte wanted.
        offset: u64,
        /// Non-disruptive recovery (thesis §3.4.4): per stream, the first
        /// instance the asker holds from new decisions since it fell
        /// behind. A checkpoint at or past these needs no log tail from the
        /// acceptors; a peer whose latest one is older writes a new one and
        /// answers a later request (empty: any checkpoint will do).
        at_least: Vec<(StreamId, Instance)>,
    },
    /// A chunk of the sender's checkpoint of `partition`, in the
    /// checkpoint file's encoding; `bytes` is empty when the sender holds
    /// no checkpoint.
    CheckpointChunk {
        /// The partition.
        partition: PartitionId,
        /// The sender.
        from: NodeId,
        /// Size of the whole checkpoint.
        total: u64,
        /// Where `bytes` starts.
        offset: u64,
        /// The chunk.
        bytes: Bytes,
    },
    /// The answer to a `CheckpointRequest` from a node that runs no
    /// replica of `partition` (nor of the one it was merged into): its
    /// newest map. An asker whose replica that map no longer names (it was
    /// down through a move and its hand-off) drops the replica
    /// (`PartitionMap::moved_off`).
    NotHeld {
        /// The partition asked for.
        partition: PartitionId,
        /// The sender.
        from: NodeId,
        /// The sender's newest partition map.
        map: PartitionMap,
    },
}

impl ReplicaMessage {
    /// Whether a replica handles it (signals) or the node around it
    /// (state transfer).
    pub fn is_signal(&self) -> bool {
        matches!(
            self,
            ReplicaMessage::Signal { .. } | ReplicaMessage::SignalRequest { .. }
        )
    }
}

impl ReplicaMessage {
    /// Encodes for the wire.
    pub fn encode(&self) -> Bytes {
        Bytes::from(postcard::to_allocvec(self).expect("encoding to memory cannot fail"))
    }

    /// Decodes. Total: bad bytes are an error.
    pub fn decode(bytes: &[u8]) -> Result<Self, postcard::Error> {
        postcard::from_bytes(bytes)
    }
}
