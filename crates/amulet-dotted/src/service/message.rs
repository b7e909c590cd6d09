//! What a node's eventual-map service sends another node's (the node's
//! `Eventual` frames carry them): a coordinator's fetches, forwarded
//! writes and replication, and anti-entropy between replicas. Every
//! message names the map, the configuration version that created it (a
//! map dropped and created again is another map) and the replica it is
//! for; `op` numbers a coordinator's request so the answer finds it.

use crate::anti_entropy::{SyncReply, SyncRequest};
use crate::dot::ReplicaId;
use crate::merkle::{ExchangeReply, ExchangeRequest};
use crate::object::Object;
use crate::replacement::{TransferPage, TransferRequest};
use crate::version_vector::VersionVector;
use bytes::Bytes;
use serde::{Deserialize, Serialize};

/// Largest message the decoder accepts (a frame's own limit applies
/// first; this bounds what one decode may allocate).
pub const MESSAGE_BYTES_MAX: usize = 64 << 20;

/// The replica a message is for.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct To {
    /// The map.
    pub map: String,
    /// The configuration version that created it.
    pub created_at: u64,
    /// The replica.
    pub replica: ReplicaId,
}

/// Siblings and the context that covers them, as a client gets them.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Versioned {
    /// The concurrent values (in dot order).
    pub values: Vec<Bytes>,
    /// The opaque causal context (`VersionVector::encode`).
    pub context: Vec<u8>,
}

/// One node's message to another.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Message {
    /// A coordinator reads `key` at a replica.
    Fetch {
        /// The coordinator's request.
        op: u64,
        /// The replica.
        to: To,
        /// The key.
        key: Bytes,
    },
    /// The replica's object (filled from its clock), if it holds the key.
    Fetched {
        /// The coordinator's request.
        op: u64,
        /// The object.
        object: Option<Object>,
    },
    /// A node that holds no replica of `key` hands a client's write to one
    /// that does.
    Coordinate {
        /// The forwarding node's request.
        op: u64,
        /// The replica that is to coordinate.
        to: To,
        /// The key.
        key: Bytes,
        /// The value (`None`: a delete).
        value: Option<Bytes>,
        /// The client's context.
        context: VersionVector,
        /// Replicas that must hold it before the answer (the coordinator
        /// counts itself).
        w: u32,
    },
    /// How a forwarded write ended.
    Coordinated {
        /// The forwarding node's request.
        op: u64,
        /// The write's siblings and context, or why it failed.
        result: Result<Versioned, Failed>,
    },
    /// A coordinator's object for a replica to merge (Alg. 1–2).
    Replicate {
        /// The coordinator's request.
        op: u64,
        /// The replica.
        to: To,
        /// The key.
        key: Bytes,
        /// The coordinated object.
        object: Object,
        /// Which of the coordinator's other recent dots were for this
        /// replica's keys (`skips.rs`).
        skips: Option<crate::skips::Skips>,
    },
    /// The replica merged it (and synced the merge).
    Replicated {
        /// The coordinator's request.
        op: u64,
    },
    /// Anti-entropy: a replica's clock to a peer (Alg. 3).
    SyncAsk {
        /// The peer.
        to: To,
        /// The asker's id and clock.
        request: SyncRequest,
    },
    /// Anti-entropy: the peer's clock and the objects the asker lacks.
    SyncAnswer {
        /// The asker.
        to: To,
        /// The reply.
        reply: SyncReply,
    },
    /// The baseline's anti-entropy: a step of a Merkle-tree exchange.
    ExchangeAsk {
        /// The peer.
        to: To,
        /// The step.
        request: ExchangeRequest,
    },
    /// The peer's answer to a step.
    ExchangeAnswer {
        /// The asker.
        to: To,
        /// The peer that answered.
        from: ReplicaId,
        /// The answer.
        reply: ExchangeReply,
    },
    /// A replacement asks a peer for the next page of its full transfer
    /// (`replacement.rs`).
    TransferAsk {
        /// The peer.
        to: To,
        /// Which page.
        request: TransferRequest,
    },
    /// A page of a full transfer.
    TransferAnswer {
        /// The replacement.
        to: To,
        /// The page.
        page: TransferPage,
    },
}

/// Why a forwarded write did not reach its quorum.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Failed {
    /// Fewer than `needed` replicas held it in time (it may still be at
    /// some: a write that timed out is not undone).
    QuorumNotReached {
        /// Replicas that held it.
        answered: u32,
        /// Replicas asked for.
        needed: u32,
    },
    /// The replica does not exist there (a placement not applied yet, or
    /// the map was dropped).
    NoReplica,
}

impl Message {
    /// The replica a message is for (answers go back by op number).
    pub fn to(&self) -> Option<&To> {
        match self {
            Message::Fetch { to, .. }
            | Message::Coordinate { to, .. }
            | Message::Replicate { to, .. }
            | Message::SyncAsk { to, .. }
            | Message::SyncAnswer { to, .. }
            | Message::ExchangeAsk { to, .. }
            | Message::ExchangeAnswer { to, .. }
            | Message::TransferAsk { to, .. }
            | Message::TransferAnswer { to, .. } => Some(to),
            Message::Fetched { .. } | Message::Coordinated { .. } | Message::Replicated { .. } => {
                None
            }
        }
    }

    /// The message's bytes (postcard).
    pub fn encode(&self) -> Vec<u8> {
        postcard::to_allocvec(self).expect("an eventual message encodes")
    }

    /// The message in `bytes` (total: every input is a message or an
    /// error, and nothing follows it).
    pub fn decode(bytes: &[u8]) -> Result<Message, String> {
        if bytes.len() > MESSAGE_BYTES_MAX {
            return Err(format!(
                "{} bytes (at most {MESSAGE_BYTES_MAX})",
                bytes.len()
            ));
        }
        let (message, rest) =
            postcard::take_from_bytes::<Message>(bytes).map_err(|e| e.to_string())?;
        if !rest.is_empty() {
            return Err(format!("{} bytes after the message", rest.len()));
        }
        Ok(message)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_prefix_and_every_flipped_byte_decodes_or_errs() {
        let message = Message::Coordinate {
            op: 7,
            to: To {
                map: "carts".into(),
                created_at: 3,
                replica: ReplicaId(2),
            },
            key: Bytes::from_static(b"alice"),
            value: Some(Bytes::from_static(b"book")),
            context: VersionVector::new(),
            w: 2,
        };
        let bytes = message.encode();
        assert_eq!(Message::decode(&bytes).unwrap(), message);
        for cut in 0..bytes.len() {
            assert!(Message::decode(&bytes[..cut]).is_err(), "prefix {cut}");
        }
        for at in 0..bytes.len() {
            let mut damaged = bytes.clone();
            damaged[at] ^= 0xff;
            let _ = Message::decode(&damaged);
        }
        let mut longer = bytes.clone();
        longer.push(0);
        assert!(Message::decode(&longer).is_err());
    }
}
