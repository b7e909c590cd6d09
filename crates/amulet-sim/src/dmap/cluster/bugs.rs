//! The DMap swarm's deliberately broken variants, each a test expecting
//! the checkers to catch it, and the switches each one sets in the host
//! core, the replicas and the transactions.

use amulet_dmap::TxnBugs;
use amulet_host::{HostBugs, ReplicaBugs};

/// Deliberately broken variants.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum DmapBug {
    /// The correct system.
    #[default]
    None,
    /// Multi-partition commands complete without the signal exchange.
    CompleteWithoutSignals,
    /// A restored replica's learner resumes one instance past its
    /// checkpoint's position in the partition stream (a checkpoint labelled
    /// with a position it does not reflect).
    CheckpointPastPosition,
    /// Acceptors trim below their own node's checkpoints, without a trim
    /// quorum of the stream's subscribers.
    TrimWithoutQuorum,
    /// A partition split off at a fence starts empty: the moved range is
    /// not handed to the new replica group.
    SplitWithoutTransfer,
    /// Replicas answer single-partition reads from their own state at
    /// once, without ordering them (the fault suite's `local-reads`).
    AnswerReadsLocally,
    /// A replica moved away drops its state at the move's fence, before a
    /// majority of the new group holds it.
    HandOffAtFence,
    /// State transfer assembles a peer's checkpoint without its last
    /// chunk (in the host core, which the node runs too).
    TransferDropsLastChunk,
    /// Transactions: a read version's begin completes without the signal
    /// exchange (serializable, not strict).
    BeginWithoutSignals,
    /// Transactions: a partition holding none of a commit's writes votes
    /// yes without checking its reads.
    SkipValidationWithoutWrites,
    /// Transactions: checkpoints leave out the index of recent writes.
    RecentWritesNotCheckpointed,
    /// Transactions: read conflict ranges wider than a key are not
    /// checked.
    RangesNotValidated,
    /// Transactions: clients reuse their last read version (taken before
    /// the transaction started) instead of beginning anew.
    ReuseReadVersions,
    /// Field records: `MergeFields` drops the fields it does not name.
    MergeReplacesRecord,
    /// Logs: a trim answers as if it dropped the entries but keeps them.
    TrimKeepsEntries,
    /// Logs: checkpoints restart every log's positions at 0.
    LogPositionsNotCheckpointed,
    /// Logs: a tail read from inside a log starts one entry late (and
    /// says it starts where it was asked to).
    TailSkipsAnEntry,
    /// Access control: a grant or revocation takes effect at the replica
    /// that received it when proposed, before it is ordered.
    AccessAtEdge,
    /// Membership: a node's alerts and cuts take effect at its own
    /// replicas when its monitor proposes them, before they are ordered.
    MembershipAtEdge,
    /// Self-healing: a repair keeps one of the partition's removed
    /// replicas in place of a live node.
    HealingKeepsRemovedReplica,
    /// Self-healing: a repair's new stream keeps an acceptor on a node
    /// the view removed (the replicas all move to live nodes).
    HealingKeepsRemovedAcceptor,
    /// Membership: monitors declare an edge failed after 150 ms of
    /// silence, shorter than the process pauses the cluster must ride
    /// out (800 ms in the swarm, above its longest pause of 700 ms).
    HastyFailureDetector,
    /// Moves: a node a move takes a partition from reports that it holds
    /// nothing of it as soon as the map lists it, while its replica still
    /// serves the state; a second move (the balancer's) is then ordered
    /// before the first one's new group holds it, without the old group
    /// among its stream's learners.
    HandedOffWhileHolding,
    /// Membership: a node the view removed stops as soon as the map
    /// retires the streams it votes in, before their replicas have passed
    /// the fence that retired them.
    LeaveBeforeRetiredStreamsPass,
    /// Moves: the balancer gives and takes replicas among every live
    /// member of the view, also those that sent no weight report lately
    /// (down, paused, crash-looping).
    BalancerMovesToSilentNodes,
    /// Fence keys (DynaTree §III-A): a replica takes a request routed by
    /// an older map without checking that its key is still inside the
    /// partition's range, and executes it there.
    FenceKeysUnchecked,
    /// Fence keys: a client refused as stale keeps its cached ranges
    /// (ignores the map the refusal carries) and sends again by them.
    ClientKeepsStaleRanges,
    /// Not a bug: whole-map versions, the behaviour before fence keys
    /// (every request routed by an older map is refused for a refresh),
    /// run to count the refreshes fence keys save.
    WholeMapVersions,
}

impl DmapBug {
    pub(super) fn replica_bugs(self) -> ReplicaBugs {
        ReplicaBugs {
            complete_without_signals: self == DmapBug::CompleteWithoutSignals,
            answer_reads_locally: self == DmapBug::AnswerReadsLocally,
            begin_without_signals: self == DmapBug::BeginWithoutSignals,
            access_at_edge: self == DmapBug::AccessAtEdge,
            fence_keys_unchecked: self == DmapBug::FenceKeysUnchecked,
        }
    }

    pub(super) fn txn_bugs(self) -> TxnBugs {
        TxnBugs {
            skip_validation_without_writes: self == DmapBug::SkipValidationWithoutWrites,
            recent_writes_not_checkpointed: self == DmapBug::RecentWritesNotCheckpointed,
            ranges_not_validated: self == DmapBug::RangesNotValidated,
            merge_replaces_record: self == DmapBug::MergeReplacesRecord,
            trim_keeps_entries: self == DmapBug::TrimKeepsEntries,
            log_positions_not_checkpointed: self == DmapBug::LogPositionsNotCheckpointed,
        }
    }

    pub(super) fn host_bugs(self) -> HostBugs {
        HostBugs {
            checkpoint_past_position: self == DmapBug::CheckpointPastPosition,
            trim_without_quorum: self == DmapBug::TrimWithoutQuorum,
            split_without_transfer: self == DmapBug::SplitWithoutTransfer,
            hand_off_at_fence: self == DmapBug::HandOffAtFence,
            transfer_drops_last_chunk: self == DmapBug::TransferDropsLastChunk,
            tail_skips_an_entry: self == DmapBug::TailSkipsAnEntry,
            membership_at_edge: self == DmapBug::MembershipAtEdge,
            healing_keeps_removed_replica: self == DmapBug::HealingKeepsRemovedReplica,
            healing_keeps_removed_acceptor: self == DmapBug::HealingKeepsRemovedAcceptor,
            handed_off_while_holding: self == DmapBug::HandedOffWhileHolding,
            leave_before_retired_streams_pass: self == DmapBug::LeaveBeforeRetiredStreamsPass,
            balancer_moves_to_silent_nodes: self == DmapBug::BalancerMovesToSilentNodes,
        }
    }
}
