//! The acceptor log interface shared by every storage mode.

use amulet_types::{Ballot, Instance};
use amulet_wire::Batch;

/// A storage failure. Reads of trimmed instances are not failures: they
/// return `Ok(None)` and the caller compares with [`AcceptorLog::trimmed_below`].
#[derive(Debug, thiserror::Error)]
pub enum StorageError {
    /// The disk failed; the process should stop (it cannot keep promises).
    #[error("storage i/o: {0}")]
    Io(#[from] std::io::Error),
    /// The log on disk is damaged before its tail (a torn tail is repaired,
    /// damage in the middle is not).
    #[error("storage corrupt: {0}")]
    Corrupt(String),
}

/// One entry of the log: the acceptor's vote in an instance, and whether the
/// acceptor knows it is the decided value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogRecord {
    /// The instance.
    pub instance: Instance,
    /// Ballot of the vote (or of the decision).
    pub ballot: Ballot,
    /// The batch voted for.
    pub batch: Batch,
    /// The batch is the decided value of the instance.
    pub decided: bool,
}

/// What an acceptor finds in its log when it starts.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Recovered {
    /// Highest ballot promised for all instances.
    pub promised: Ballot,
    /// Per-instance promises above `promised` (gap repair), not yet trimmed.
    pub instance_promises: Vec<(Instance, Ballot)>,
    /// Instances below this were trimmed.
    pub trimmed_below: Instance,
    /// One past the highest instance with a record.
    pub end: Instance,
    /// False when the log cannot vouch for every promise and vote the
    /// acceptor ever made: a memory ring after a restart, or an async log
    /// that was not synced before a machine crash. Such an acceptor must
    /// never vote again in this stream.
    pub intact: bool,
}

/// Where an acceptor keeps promises and votes.
///
/// Contract: a record written by `save_*` is visible to reads at once, and
/// durable (for durable implementations) after `sync` returns. Records are
/// never reordered: after a crash the log holds a prefix of what was
/// written (the synced part, plus possibly more).
pub trait AcceptorLog: Send {
    /// Persist a promise for every instance (phase 1).
    fn save_promise(&mut self, ballot: Ballot) -> Result<(), StorageError>;
    /// Persist a promise for one instance (classic phase 1 of gap repair).
    fn save_instance_promise(
        &mut self,
        instance: Instance,
        ballot: Ballot,
    ) -> Result<(), StorageError>;
    /// Persist a vote (or a learned decision, with `decided`). A later
    /// record for the same instance replaces the earlier one.
    fn save(&mut self, record: &LogRecord) -> Result<(), StorageError>;
    /// Mark an existing vote of `ballot` in `instance` as decided without
    /// rewriting its batch. Does nothing if the stored ballot differs.
    fn mark_decided(&mut self, instance: Instance, ballot: Ballot) -> Result<(), StorageError>;
    /// The record of `instance`, or `None` if there is none or it was trimmed.
    fn read(&self, instance: Instance) -> Result<Option<LogRecord>, StorageError>;
    /// The ballot of `instance`'s record and whether it is decided, from
    /// the log's index, without reading and decoding its batch as `read`
    /// does (a durable log's `read` is a disk read). `None` when the log
    /// cannot tell without `read` (the default) or holds no record. A
    /// durable log never holds two votes of one ballot with different
    /// batches (ballots are never reused: promises are durable), so an
    /// acceptor learning a decision of the ballot it voted in marks the
    /// vote decided without comparing batches.
    fn vote(&self, _instance: Instance) -> Option<(Ballot, bool)> {
        None
    }
    /// Forget every instance below `below` (and promises for them). Never
    /// moves the trim point backwards.
    fn trim(&mut self, below: Instance) -> Result<(), StorageError>;
    /// Instances below this were trimmed (for a memory ring: overwritten).
    fn trimmed_below(&self) -> Instance;
    /// One past the highest instance with a record.
    fn end(&self) -> Instance;
    /// Hand the writes so far to the operating system, so that a crash of
    /// the process keeps them (a machine crash may not: that is `sync`). A
    /// log may buffer its writes until then; the host writes out every
    /// log before any message leaves the process, since a message may
    /// depend on a write. The default has nothing buffered.
    fn write_out(&mut self) -> Result<(), StorageError> {
        Ok(())
    }
    /// Make everything written so far durable (group commit point).
    fn sync(&mut self) -> Result<(), StorageError>;
    /// Whether writes since the last `sync` exist.
    fn dirty(&self) -> bool;
    /// What the log held when it was opened.
    fn recovered(&self) -> Recovered;
    /// The process is stopping cleanly: make everything durable and say so
    /// (a durable log then knows at its next open that nothing was lost).
    fn close(&mut self) -> Result<(), StorageError> {
        self.sync()
    }
}
