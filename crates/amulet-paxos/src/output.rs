//! What a step of a [`crate::StreamNode`] asks the runtime to do.

use amulet_types::{Instance, NodeId, StreamId};
use amulet_wire::{Batch, Envelope};

/// A decided instance, delivered in instance order without gaps.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Decided {
    /// The stream.
    pub stream: StreamId,
    /// The instance.
    pub instance: Instance,
    /// Merge weight of every instance of the stream below this one (its
    /// position in the deterministic merge, thesis §3.3).
    pub position: u64,
    /// The batch, with values already delivered in an earlier instance
    /// (a proposer's retry decided twice) removed.
    pub batch: Batch,
}

/// Effects of one or more steps. The runtime must: send `sends` now; sync
/// the acceptor log, then send `sends_after_sync`; hand `decided` to the
/// merge in order. Reusing one `Output` across steps batches fsyncs.
#[derive(Debug, Default)]
pub struct Output {
    /// Messages that may leave at once.
    pub sends: Vec<(NodeId, Envelope)>,
    /// Messages that reveal a promise or vote: they may leave only after
    /// `AcceptorLog::sync` (in `SyncDurable` mode; other modes put nothing
    /// here).
    pub sends_after_sync: Vec<(NodeId, Envelope)>,
    /// Decided instances in order.
    pub decided: Vec<Decided>,
    /// Set when this learner's next instance was trimmed at the acceptors:
    /// it cannot catch up from the log and must install a checkpoint whose
    /// position is at least this instance (thesis §3.4.2).
    pub trimmed: Option<(StreamId, Instance)>,
}

impl Output {
    /// Whether nothing is pending.
    pub fn is_empty(&self) -> bool {
        self.sends.is_empty()
            && self.sends_after_sync.is_empty()
            && self.decided.is_empty()
            && self.trimmed.is_none()
    }
}
