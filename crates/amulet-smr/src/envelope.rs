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
    /// Changes users, roles, grants or tokens (see [`crate::AccessChange`]).
    /// Global stream only; needs the cluster admin role.
    Access(crate::AccessChange),
    /// Changes the cluster's membership (docs/membership.md): an
    /// observer's alert or a cut, proposed by nodes; a join or a leave.
    /// Global stream only.
    Membership(amulet_membership::Command),
    /// `node` holds nothing of `partition` any more (its replica was
    /// handed off, or it never had the state): it leaves the partition's
    /// hand-off set (`PartitionMap::handing_off`). Reported by `node`
    /// itself, or for a node the view removed (which never will) by any
    /// node. Proposed by nodes, never by clients; global stream only. On
    /// a partition's own stream it does nothing: a node handing a moved
    /// partition off sends one there to get the new stream's first
    /// instance through an idle cluster's merges (`amulet-host`'s
    /// `nudge_idle_hand_offs`).
    /// Last, so values ordered by older builds decode.
    HandedOff {
        /// The partition.
        partition: PartitionId,
        /// The node that holds nothing of it.
        node: NodeId,
        /// Its stream by the origin's newest map: the report counts only
        /// while that is still the partition's stream (a later move may
        /// have given the partition back to the origin and taken it away
        /// again, and then the origin may hold the state).
        stream: StreamId,
    },
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
    /// Who sent it, as the receiving node authenticated them; `None` on a
    /// node without TLS (`--insecure`: nobody is checked) and in values
    /// ordered before access control existed. Last, so those older
    /// values still decode (see [`CommandEnvelope::decode`]).
    pub principal: Option<crate::Principal>,
}

/// A value ordered before envelopes named their principal.
#[derive(Deserialize)]
struct EnvelopeBeforePrincipal<C> {
    origin: Origin,
    timestamp_micros: u64,
    map_version: MapVersion,
    session: Option<(SessionId, u64)>,
    body: Body<C>,
}

impl<C: Serialize + serde::de::DeserializeOwned> CommandEnvelope<C> {
    /// Encodes for multicast.
    pub fn encode(&self) -> Bytes {
        Bytes::from(postcard::to_allocvec(self).expect("encoding to memory cannot fail"))
    }

    /// Decodes a delivered value. Total: bad bytes are an error. A value
    /// that ends where the principal would start was ordered by an older
    /// build (acceptor logs outlive upgrades): it decodes with none.
    pub fn decode(bytes: &[u8]) -> Result<Self, postcard::Error> {
        match postcard::take_from_bytes::<CommandEnvelope<C>>(bytes) {
            Ok((envelope, _)) => Ok(envelope),
            Err(postcard::Error::DeserializeUnexpectedEnd) => {
                let (old, rest) = postcard::take_from_bytes::<EnvelopeBeforePrincipal<C>>(bytes)?;
                if !rest.is_empty() {
                    return Err(postcard::Error::DeserializeUnexpectedEnd);
                }
                Ok(CommandEnvelope {
                    origin: old.origin,
                    timestamp_micros: old.timestamp_micros,
                    map_version: old.map_version,
                    session: old.session,
                    body: old.body,
                    principal: None,
                })
            }
            Err(e) => Err(e),
        }
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
        map: Box<PartitionMap>,
    },
    /// Membership's edge monitoring (docs/membership.md): an observer asks
    /// its subject whether it is alive. Answered by the subject's event
    /// loop at once, so a paused or overloaded node is as silent as a
    /// dead one.
    Probe {
        /// The observer.
        from: NodeId,
        /// Echoed in the reply.
        nonce: u64,
        /// The version of the observer's newest partition map: a subject
        /// with a newer one tells it ([`ReplicaMessage::Map`]).
        map_version: u64,
        /// The number of the observer's newest view (0 without
        /// membership): a subject with a newer one tells it
        /// ([`ReplicaMessage::View`]).
        view: u64,
        /// The next node id of that view. A join within a view raises it
        /// (the joiner takes it) without a new view number, so a subject
        /// whose view has admitted joiners since tells the observer too: a
        /// node running no replica would otherwise never learn of a joiner
        /// it is to observe, and a joiner that died was never refused
        /// (simulator, DMap seed 1000263).
        view_next_id: u32,
    },
    /// The answer to a [`ReplicaMessage::Probe`].
    ProbeReply {
        /// The subject.
        from: NodeId,
        /// The probe's nonce.
        nonce: u64,
        /// The version of the subject's newest partition map: an observer
        /// with a newer one tells it.
        map_version: u64,
        /// The number of the subject's newest view (0 without
        /// membership): an observer with a newer one tells it.
        view: u64,
        /// The next node id of that view (see [`ReplicaMessage::Probe`]).
        view_next_id: u32,
    },
    /// A peer's newest partition map, sent to a node whose probe (or probe
    /// reply) carried an older version. A node that runs no replica has
    /// nothing that executes maps (its last replica was moved away): this
    /// is how it learns the maps after, to answer clients with and to
    /// adopt a partition moved back to it (docs/membership.md).
    Map {
        /// The sender.
        from: NodeId,
        /// The sender's newest partition map.
        map: Box<PartitionMap>,
    },
    /// A peer's newest membership, sent to a node whose probe (or probe
    /// reply) carried an older view. A node that runs no replica executes
    /// no view change: this is how it learns the views after (to monitor
    /// by the current view), and how a node the view removed that comes
    /// back learns it was removed and stops (docs/membership.md).
    View {
        /// The sender.
        from: NodeId,
        /// The position in the global stream where the sender's replica
        /// executed it (views at nodes compare by it, as the replicas'
        /// own do).
        position: u64,
        /// The sender's newest membership.
        membership: Box<amulet_membership::Membership>,
    },
    /// A node's report of its replicas' sizes and loads to the node that
    /// proposes the cluster's own changes, which plans the balancer's
    /// moves by weight from them (`crate::next_weight_move`). Sent every
    /// balancer turn; a lost one is replaced by the next.
    Weights {
        /// The sender.
        from: NodeId,
        /// The map version its replicas executed when it measured.
        map_version: u64,
        /// Its replicas' partitions, sizes and loads.
        partitions: Vec<crate::PartitionWeight>,
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
    /// Whether it is membership's edge monitoring, or the map and view
    /// news it carries (the node's monitor handles it).
    pub fn is_probe(&self) -> bool {
        matches!(
            self,
            ReplicaMessage::Probe { .. }
                | ReplicaMessage::ProbeReply { .. }
                | ReplicaMessage::Map { .. }
                | ReplicaMessage::View { .. }
        )
    }

    /// Whether it is a node's report of its replicas' weights (the
    /// balancer handles it).
    pub fn is_report(&self) -> bool {
        matches!(self, ReplicaMessage::Weights { .. })
    }

    /// Encodes for the wire.
    pub fn encode(&self) -> Bytes {
        Bytes::from(postcard::to_allocvec(self).expect("encoding to memory cannot fail"))
    }

    /// Decodes. Total: bad bytes are an error.
    pub fn decode(bytes: &[u8]) -> Result<Self, postcard::Error> {
        postcard::from_bytes(bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Serialize)]
    struct Before {
        origin: Origin,
        timestamp_micros: u64,
        map_version: MapVersion,
        session: Option<(SessionId, u64)>,
        body: Body<u32>,
    }

    fn envelope(principal: Option<crate::Principal>) -> CommandEnvelope<u32> {
        CommandEnvelope {
            origin: Origin {
                node: NodeId(1),
                incarnation: 2,
                request: 3,
            },
            timestamp_micros: 4,
            map_version: MapVersion(5),
            session: Some((SessionId(6), 7)),
            body: Body::App(8),
            principal,
        }
    }

    #[test]
    fn security_an_envelope_carries_its_principal_and_older_values_still_decode() {
        let new = envelope(Some(crate::Principal::user("alice")));
        assert_eq!(CommandEnvelope::decode(&new.encode()).unwrap(), new);
        let old = envelope(None);
        let before = postcard::to_allocvec(&Before {
            origin: old.origin,
            timestamp_micros: old.timestamp_micros,
            map_version: old.map_version,
            session: old.session,
            body: old.body.clone(),
        })
        .unwrap();
        assert_eq!(CommandEnvelope::<u32>::decode(&before).unwrap(), old);
        // Total: every prefix of a value is an error or a value, never a panic.
        let bytes = new.encode();
        for end in 0..bytes.len() {
            let _ = CommandEnvelope::<u32>::decode(&bytes[..end]);
        }
        assert!(CommandEnvelope::<u32>::decode(&[0xff; 3]).is_err());
    }
}
