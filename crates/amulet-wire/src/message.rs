//! The messages Ring Paxos processes exchange (thesis §2.4, §3.3, A.1).
//!
//! Normal case: a proposer sends `Propose` to the coordinator; the
//! coordinator batches values into an instance and sends `Phase2` around the
//! ring; each acceptor adds its vote; the last acceptor turns it into a
//! `Decision` that circulates until every member has it. A batch's bytes
//! cross each ring link at most once: `Decision` carries the batch only to
//! members that have not seen the `Phase2`.
//!
//! Repair: learners ask acceptors for `Retransmit`; an instance nobody can
//! retransmit is decided (to its accepted value or to `Batch::Null`) by the
//! classic single-instance `Prepare`/`Promise`/`Accept`/`AcceptAck` path
//! with a higher ballot.

use amulet_types::{Ballot, Instance, NodeId, SafeReport, StreamId, ValueId};
use bytes::Bytes;

/// A proposed value: its identifier, its kind and its bytes.
#[derive(Clone, Debug, Eq)]
pub struct Value {
    /// Unique id; learners deliver each id at most once.
    pub id: ValueId,
    /// Whether the bytes are the application's or the multicast layer's.
    pub kind: ValueKind,
    /// The bytes.
    pub bytes: Bytes,
}

/// Who a value is for. Control values are ordered like any other (that is
/// their point: a subscription takes effect at a position every subscriber
/// agrees on, thesis §4.4) but the merge consumes them and never hands
/// them to the application.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum ValueKind {
    /// Application bytes, delivered to the subscriber.
    #[default]
    Application,
    /// A subscription change (Elastic Paxos), read by the merge.
    Control,
    /// Application bytes that reconfigure the subscriber (a partition
    /// split, a stream replaced): delivered like `Application`, and the
    /// merge of every subscriber that delivers it stops at the start of
    /// the next round until the subscriber releases it, so the change
    /// takes effect at a round boundary every replica agrees on.
    Barrier,
}

impl Value {
    /// An application value.
    pub fn new(id: ValueId, bytes: Bytes) -> Value {
        Value {
            id,
            kind: ValueKind::Application,
            bytes,
        }
    }

    /// A control value (see [`ValueKind::Control`]).
    pub fn control(id: ValueId, bytes: Bytes) -> Value {
        Value {
            id,
            kind: ValueKind::Control,
            bytes,
        }
    }
}

impl PartialEq for Value {
    /// Same id and same bytes. Acceptors compare a decision with their vote
    /// on every instance, and both usually share one allocation: equal
    /// pointers and lengths settle it without reading 32 KiB.
    fn eq(&self, other: &Self) -> bool {
        self.id == other.id
            && self.kind == other.kind
            && self.bytes.len() == other.bytes.len()
            && (self.bytes.as_ptr() == other.bytes.as_ptr() || self.bytes == other.bytes)
    }
}

/// What one consensus instance decides.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Batch {
    /// Values, delivered in this order.
    Values(Vec<Value>),
    /// Rate leveling: the instance stands for this many instances in the
    /// deterministic merge and delivers nothing (thesis §3.3). Count >= 1.
    Skip(u64),
    /// Decided by gap repair when no value had been accepted: delivers
    /// nothing and counts as one instance.
    Null,
}

impl Batch {
    /// Bytes of application payload in the batch.
    pub fn payload_bytes(&self) -> usize {
        match self {
            Batch::Values(values) => values.iter().map(|v| v.bytes.len()).sum(),
            Batch::Skip(_) | Batch::Null => 0,
        }
    }

    /// How many instances this batch counts for in the merge.
    pub fn merge_weight(&self) -> u64 {
        match self {
            Batch::Skip(count) => *count,
            Batch::Values(_) | Batch::Null => 1,
        }
    }
}

/// An acceptor's vote reported in phase 1.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Accepted {
    /// Instance voted in.
    pub instance: Instance,
    /// Ballot of the vote.
    pub ballot: Ballot,
    /// Value voted for.
    pub batch: Batch,
}

/// A message of one stream.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Envelope {
    /// The stream the message belongs to.
    pub stream: StreamId,
    /// The message.
    pub message: Message,
}

/// Peer messages. `hops` counts ring links travelled from the coordinator,
/// so each member can tell whether its successor has seen the batch yet and
/// a message lost in a changing ring cannot circulate forever.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Message {
    /// Values for the coordinator to order.
    Propose {
        /// The values, with bytes.
        values: Vec<Value>,
        /// Forwarding hops so far (a non-coordinator forwards to whom it
        /// believes coordinates; bounded).
        hops: u32,
    },
    /// Ring phase 1 for instances `[from, to)` (`to == Instance(u64::MAX)`
    /// means open-ended). Travels the acceptors in ring order and returns to
    /// the coordinator. Acceptors that promise add a vote and their votes
    /// in the range.
    Phase1 {
        /// Coordinator's ballot.
        ballot: Ballot,
        /// First instance covered.
        from: Instance,
        /// First instance not covered.
        to: Instance,
        /// Promises collected so far.
        votes: u32,
        /// Votes reported by promising acceptors (highest ballot wins).
        accepted: Vec<Accepted>,
        /// Highest instance any promising acceptor has voted in, plus one.
        accepted_end: Instance,
        /// Highest trim point among promising acceptors: instances below it
        /// are decided and gone.
        trimmed_below: Instance,
        /// Ring links travelled.
        hops: u32,
    },
    /// Ring phase 2 for one instance, with the votes collected so far.
    Phase2 {
        /// Coordinator's ballot.
        ballot: Ballot,
        /// The instance.
        instance: Instance,
        /// The proposed batch.
        batch: Batch,
        /// The acceptors that voted so far, one bit per position in the
        /// stream's acceptor list (at most 15): a set, not a count, so a
        /// message that loops between members with different ring views
        /// can never count one vote twice.
        votes: u32,
        /// The last acceptor in the coordinator's ring: it ends the lap
        /// even without a quorum. Any acceptor whose vote completes a
        /// quorum decides, usually the one f+1 places from the coordinator.
        last: NodeId,
        /// Ring links travelled.
        hops: u32,
    },
    /// An instance is decided. `batch` is `None` when the receiver has
    /// already seen the batch in `Phase2` of the same ballot.
    Decision {
        /// The instance.
        instance: Instance,
        /// Ballot in which it was decided.
        ballot: Ballot,
        /// The decided batch, unless the receiver has it.
        batch: Option<Batch>,
        /// The acceptor that issued the decision; circulation stops before it.
        decided_by: NodeId,
        /// Ring links travelled.
        hops: u32,
    },
    /// An acceptor refuses a ballot lower than its promise (sent straight to
    /// the sender).
    Reject {
        /// The refused ballot.
        ballot: Ballot,
        /// The acceptor's promise (for all instances, or for `instance`).
        promised: Ballot,
        /// Set when only this instance is promised higher (gap repair).
        instance: Option<Instance>,
    },
    /// A learner asks an acceptor for decided instances `[from, to)`.
    RetransmitRequest {
        /// First instance wanted.
        from: Instance,
        /// First instance not wanted.
        to: Instance,
    },
    /// An acceptor's answer: the decided instances it has in the range, in
    /// order, and its trim point. A learner whose next instance is below
    /// `trimmed_below` learns that it cannot catch up from the log.
    RetransmitReply {
        /// Decided instances.
        decided: Vec<(Instance, Batch)>,
        /// Instances below this are trimmed at this acceptor.
        trimmed_below: Instance,
    },
    /// Classic phase 1a for one instance (gap repair).
    Prepare {
        /// The instance.
        instance: Instance,
        /// The repairing learner's ballot.
        ballot: Ballot,
    },
    /// Classic phase 1b for one instance.
    Promise {
        /// The instance.
        instance: Instance,
        /// The promised ballot.
        ballot: Ballot,
        /// The acceptor's vote in the instance, if any.
        accepted: Option<(Ballot, Batch)>,
    },
    /// Classic phase 2a for one instance.
    Accept {
        /// The instance.
        instance: Instance,
        /// Ballot.
        ballot: Ballot,
        /// Proposed batch.
        batch: Batch,
    },
    /// Classic phase 2b for one instance.
    AcceptAck {
        /// The instance.
        instance: Instance,
        /// Ballot voted in.
        ballot: Ballot,
    },
    /// Failure detector heartbeat, with progress so laggards notice gaps.
    Heartbeat {
        /// Highest ballot the sender knows of.
        ballot: Ballot,
        /// The sender has every instance below this decided.
        decided_below: Instance,
        /// The sender is an acceptor that may vote (it never lost its
        /// promises and votes). Only voting acceptors coordinate.
        voting: bool,
        /// Merge catch-up (thesis §3.3): the sender's merge is blocked on
        /// this stream while other streams have decided instances waiting;
        /// the stream should reach this merge position (cumulative merge
        /// weight from instance 0) so they can drain. 0: no need.
        merge_need: u64,
        /// The acceptors the sender hears directly, as bits by position in
        /// the stream's acceptor list (bit k: `acceptors[k]`; the sender's
        /// own bit is set when it is an acceptor). A node that lost the
        /// coordinator does not take over while a majority still hears it
        /// (a pre-vote; see the ring's `coordinator`).
        hears: u32,
        /// Everything of this stream below `safe.below` is reflected in a
        /// durable checkpoint of every subscriber the sender's map of
        /// version `safe.map_version` gives it (0: none). Acceptors trim
        /// below what a trim quorum of subscribers holds (thesis §3.4.2).
        safe: SafeReport,
    },
}
