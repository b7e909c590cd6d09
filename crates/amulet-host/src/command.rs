//! What the host asks its runtime to do.
//!
//! Commands are carried out in the order they are drained. Two rules make
//! that order matter:
//!
//! - A checkpoint write with [`Durability::Now`] is complete (written,
//!   synced, renamed into place, and reported back through
//!   [`crate::Host::checkpoint_written`]) before the next command is
//!   carried out. The host relies on it: a merge's absorbing partition is
//!   durable before the merged partition's checkpoint is removed.
//! - Writes and removals of one partition's checkpoint are numbered
//!   ([`WriteId`], growing): the runtime never lets a write replace the
//!   file of a later write or removal of the same partition (a background
//!   write that finishes after a newer one is discarded and reported
//!   [`WriteOutcome::Superseded`]).

use crate::checkpoint_codec::CheckpointBody;
use amulet_multicast::{GroupId, Merged, SubscriptionEvent};
use amulet_smr::{ClientReply, ReplicaMessage, StateMachine};
use amulet_types::{Ballot, NodeId, PartitionId, StreamId};
use amulet_wire::Envelope;
use bytes::Bytes;

/// The runtime's name for a client request, given with it and returned
/// with its answer.
pub type Token = u64;

/// The number of a checkpoint write or removal (grows within a run).
pub type WriteId = u64;

/// When a checkpoint write must be durable.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Durability {
    /// Whenever it is done (off the event loop); a crash before then
    /// loses it and the previous checkpoint stays.
    Background,
    /// Before the next command is carried out.
    Now,
}

/// What a checkpoint file holds when written.
#[derive(Debug)]
pub enum CheckpointFile<S: StateMachine> {
    /// A checkpoint taken here, to encode.
    Body(Box<CheckpointBody<S::Checkpoint, S::Reply>>),
    /// A peer's checkpoint file, already decoded and checked: stored as
    /// it arrived.
    Bytes(Bytes),
}

/// How a checkpoint write ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WriteOutcome {
    /// The file is in place: its size in bytes.
    Written(u64),
    /// A later write or removal of the same partition came first; this
    /// one was discarded.
    Superseded,
    /// The write failed (the previous file stays).
    Failed(String),
}

/// One thing for the runtime to do.
#[derive(Debug)]
pub enum Command<S: StateMachine> {
    /// Send a protocol message to a peer.
    Send {
        /// The peer.
        to: NodeId,
        /// The message.
        envelope: Envelope,
    },
    /// Send a replica message (signals, state transfer) to a peer.
    SendReplica {
        /// The peer.
        to: NodeId,
        /// The message (boxed: far larger than a protocol message, and
        /// far rarer).
        message: Box<ReplicaMessage>,
    },
    /// Answer the client request named `token`.
    Reply {
        /// The request.
        token: Token,
        /// Its answer.
        reply: ClientReply<S::Reply>,
    },
    /// The request named `token` will not be answered: the replica that
    /// took it was replaced or removed. It may have taken effect; the
    /// client resends with the same session sequence.
    Abandon {
        /// The request.
        token: Token,
    },
    /// A merged delivery (only with [`crate::HostConfig::report_deliveries`]).
    Deliver {
        /// The merge group that delivered it.
        group: GroupId,
        /// The value.
        merged: Merged,
    },
    /// A merge group's subscriptions changed (Elastic Paxos, thesis ch.
    /// 4), in its merged order.
    Subscription {
        /// The merge group.
        group: GroupId,
        /// What changed.
        event: SubscriptionEvent,
    },
    /// A group commit made every acceptor log durable; these are the
    /// promises of the durable streams at that moment (only with
    /// [`crate::HostConfig::report_syncs`]).
    Synced {
        /// Per durable stream this node votes in, its promise.
        promises: Vec<(StreamId, Ballot)>,
    },
    /// Write `partition`'s checkpoint file, then report it through
    /// [`crate::Host::checkpoint_written`] with `write`.
    WriteCheckpoint {
        /// The partition.
        partition: PartitionId,
        /// This write's number.
        write: WriteId,
        /// What to write.
        file: CheckpointFile<S>,
        /// When it must be durable.
        durability: Durability,
    },
    /// Remove `partition`'s checkpoint file (and let no earlier write
    /// bring it back).
    RemoveCheckpoint {
        /// The partition.
        partition: PartitionId,
        /// This removal's number.
        write: WriteId,
    },
    /// Read `partition`'s checkpoint file and hand its bytes to
    /// [`crate::Host::checkpoint_read`] (a peer asked for it).
    ReadCheckpoint {
        /// The partition.
        partition: PartitionId,
    },
}

#[cfg(test)]
mod tests {
    use super::*;
    use amulet_dmap::PartitionState;

    #[test]
    fn a_command_is_no_larger_than_a_protocol_message_and_a_tag() {
        // Every message and delivery of the hot path moves through the
        // command queue: the rare large variants are boxed so the common
        // ones are not copied at their size.
        let command = std::mem::size_of::<Command<PartitionState>>();
        let envelope = std::mem::size_of::<Envelope>();
        assert!(
            command <= envelope + 16,
            "a command takes {command} bytes, an envelope {envelope}"
        );
    }
}
