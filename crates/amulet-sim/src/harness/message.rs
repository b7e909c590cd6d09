//! What travels on the simulated network, and the trace's digests of it.

use crate::trace::TraceHash;
use amulet_dmap::{MapCommand, MapReply};
use amulet_smr::{ClientReply, ClientRequest, ReplicaMessage};
use amulet_types::PartitionId;
use amulet_wire::{Batch, Envelope, Message};

/// Trace event kinds, one list for every swarm.
pub const TRACE_MESSAGE: u8 = 0;
/// A fault the nemesis applied.
pub const TRACE_FAULT: u8 = 1;
/// A value a workload multicast.
pub const TRACE_PROPOSE: u8 = 2;
/// A value a learner delivered.
pub const TRACE_DELIVER: u8 = 3;
/// An Elastic Paxos subscription change requested.
pub const TRACE_SUBSCRIBE: u8 = 4;

/// Messages on the simulated network.
#[derive(Clone, Debug)]
pub enum SimMessage {
    /// A protocol message between nodes.
    Paxos(Envelope),
    /// A replica message between nodes (signals, state transfer).
    Replica(ReplicaMessage),
    /// A client's request to a node.
    Request {
        /// Matches the reply to the request at the client.
        tag: u64,
        /// The partition whose replica takes it (`None`: any).
        partition: Option<PartitionId>,
        /// The request.
        request: ClientRequest<MapCommand>,
    },
    /// A node's answer to a client.
    Reply {
        /// The request's tag.
        tag: u64,
        /// The answer.
        reply: ClientReply<MapReply>,
    },
}

/// A cheap digest of a message for the trace.
pub fn message_digest(message: &SimMessage) -> u64 {
    match message {
        SimMessage::Paxos(envelope) => envelope_digest(envelope),
        SimMessage::Replica(m) => TraceHash::digest(&(1u8, m.encode().to_vec())),
        SimMessage::Request { tag, request, .. } => {
            TraceHash::digest(&(2u8, *tag, request.map_version.0))
        }
        SimMessage::Reply { tag, .. } => TraceHash::digest(&(3u8, *tag)),
    }
}

/// A cheap digest of a protocol message: its stream, kind, and the
/// numbers that identify it. (Hashing whole batches would dominate the
/// run.)
pub fn envelope_digest(envelope: &Envelope) -> u64 {
    let batch_digest = |batch: &Batch| match batch {
        Batch::Values(values) => values.first().map_or(0, |v| v.id.sequence) ^ values.len() as u64,
        Batch::Skip(count) => count.wrapping_mul(31),
        Batch::Null => 7,
    };
    let key: (u8, u64, u64) = match &envelope.message {
        Message::Propose { values, hops } => (0, values.len() as u64, *hops as u64),
        Message::Phase1 {
            ballot, from, to, ..
        } => (1, ballot.round as u64, from.0 ^ (to.0 << 1)),
        Message::Phase2 {
            ballot,
            instance,
            batch,
            votes,
            ..
        } => (
            2,
            instance.0,
            (ballot.round as u64) ^ batch_digest(batch) ^ ((*votes as u64) << 40),
        ),
        Message::Decision {
            instance, batch, ..
        } => (3, instance.0, batch.as_ref().map_or(1, batch_digest)),
        Message::Reject { ballot, .. } => (4, ballot.round as u64, ballot.node as u64),
        Message::RetransmitRequest { from, to } => (5, from.0, to.0),
        Message::RetransmitReply { decided, .. } => (6, decided.len() as u64, 0),
        Message::Prepare { instance, ballot } => (7, instance.0, ballot.round as u64),
        Message::Promise { instance, .. } => (8, instance.0, 0),
        Message::Accept {
            instance, batch, ..
        } => (9, instance.0, batch_digest(batch)),
        Message::AcceptAck { instance, ballot } => (10, instance.0, ballot.round as u64),
        Message::Heartbeat { ballot, .. } => (11, ballot.round as u64, 0),
    };
    TraceHash::digest(&(envelope.stream.0, key))
}
