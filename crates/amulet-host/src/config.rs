//! What a host is configured with, and the timing rules it follows (the
//! same in the node and in the simulator, where they run in virtual time).

use amulet_multicast::GroupId;
use amulet_smr::TrimQuorum;
use amulet_types::{NodeId, StreamId};
use std::sync::Arc;

/// How often safe instances are published, acceptor logs trimmed, moves
/// adopted and handed off, and stalled state transfers retried.
pub const TRIM_INTERVAL_MICROS: u64 = 100_000;

/// How often async-durable acceptor logs are synced in the background.
pub const ASYNC_SYNC_INTERVAL_MICROS: u64 = 5_000;

/// A replica whose streams have this many more instances decided
/// elsewhere than it has delivered refuses new requests with "behind" (the
/// client resends to another replica) and answers snapshot pages it cannot
/// serve yet with "catching up". Well above what a live replica lags by
/// between two heartbeats under load (tens of instances), well below the
/// backlog of a node restarted after minutes (the fault suite found
/// clients waiting seconds on one, and a final snapshot read giving up).
pub const CATCHING_UP_LAG: u64 = 2_048;

/// Rounds of outputs feeding inputs (deliveries to replicas, their
/// proposals to the streams, messages to this node looped back) within one
/// [`crate::Host::flush`]. The rest waits for the next call rather than
/// starving the runtime's other inputs; `flush` says so
/// ([`crate::Flushed::Unsettled`]) and the runtime calls it again soon.
pub const FLUSH_ROUNDS_PER_CALL: u64 = 64;

/// Consecutive rounds without settling after which a host is livelocked:
/// its outputs keep producing inputs forever. An invariant (checked when
/// invariants are on), not a runtime condition.
pub const LIVELOCK_ROUNDS: u64 = 100_000;

/// How long an asker waits for a chunk of a peer's checkpoint before it
/// asks the next peer.
pub const TRANSFER_RETRY_AFTER_MICROS: u64 = 1_000_000;

/// Deliberately broken variants of the replicas (the simulator's and the
/// fault suite's injected bugs; never set in production).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReplicaBugs {
    /// Multi-partition commands complete without the signal exchange.
    pub complete_without_signals: bool,
    /// Single-partition reads are answered from the replica's state at
    /// once, without ordering them.
    pub answer_reads_locally: bool,
    /// Commands ordered on the global stream for their position (a
    /// transaction's read version, a snapshot) complete without the
    /// signal exchange.
    pub begin_without_signals: bool,
    /// An access change takes effect at the replica that received it when
    /// it is proposed, before it is ordered.
    pub access_at_edge: bool,
    /// A request routed by an older map is taken without checking that
    /// the current map still places its key in the partition (fence keys
    /// unchecked).
    pub fence_keys_unchecked: bool,
}

/// Deliberately broken variants of the host itself, for the simulator to
/// show that its checkers catch them (never set in production).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HostBugs {
    /// A replica restored from a checkpoint resumes one instance past it
    /// in its partition stream (a checkpoint labelled with a position it
    /// does not reflect).
    pub checkpoint_past_position: bool,
    /// Acceptor logs are trimmed below this node's own checkpoints,
    /// without a trim quorum of the stream's subscribers.
    pub trim_without_quorum: bool,
    /// A partition split off at a fence starts empty: the moved range is
    /// not handed to it.
    pub split_without_transfer: bool,
    /// A replica moved away drops its state at the move's fence, before a
    /// majority of the new group holds it.
    pub hand_off_at_fence: bool,
    /// State transfer assembles a peer's checkpoint without its last
    /// chunk.
    pub transfer_drops_last_chunk: bool,
    /// A tail read from inside a log (past its first position) starts one
    /// entry late and labels what it read with the position asked for.
    pub tail_skips_an_entry: bool,
    /// The monitor's alerts and cuts take effect at this node's replicas
    /// when proposed, before they are ordered.
    pub membership_at_edge: bool,
    /// Self-healing's moves keep one removed replica of the partition in
    /// place of a live node.
    pub healing_keeps_removed_replica: bool,
    /// Self-healing's repairs keep an acceptor of the partition's stream
    /// on a node that is not live (a removed node kept as an acceptor).
    pub healing_keeps_removed_acceptor: bool,
    /// A node a move takes a partition from reports it holds nothing of
    /// it (`Body::HandedOff`) as soon as the map lists it, while its
    /// replica still serves the state.
    pub handed_off_while_holding: bool,
    /// A node the view removed stops as soon as the map retires the
    /// streams it votes in, before their members are past them.
    pub leave_before_retired_streams_pass: bool,
    /// The balancer moves replicas between every live member of the
    /// view, also those that sent no weight report lately (down, paused,
    /// crash-looping).
    pub balancer_moves_to_silent_nodes: bool,
}

/// A host's identity and settings.
pub struct HostConfig<S> {
    /// This node.
    pub me: NodeId,
    /// This run of it (grows at every restart).
    pub incarnation: u32,
    /// A fresh service state: a new replica's initial state, and what a
    /// checkpoint is restored into.
    pub new_state: Arc<dyn Fn() -> S + Send + Sync>,
    /// Micros between a replica's checkpoints; 0: never (replicas replay
    /// their streams from the start, and moves are refused).
    pub checkpoint_every_micros: u64,
    /// Bytes per state transfer chunk (a checkpoint can be far larger
    /// than a frame).
    pub transfer_chunk_bytes: usize,
    /// Whose checkpoints must hold an instance before acceptors trim it.
    pub trim_quorum: TrimQuorum,
    /// Whether every merged delivery is also handed to the runtime
    /// ([`crate::Command::Deliver`]): digests, load generators, histories.
    pub report_deliveries: bool,
    /// Whether every group commit is reported with the promises it made
    /// durable ([`crate::Command::Synced`]; the simulator checks that an
    /// acceptor never goes back on one).
    pub report_syncs: bool,
    /// Whether the host, its merges and its replicas check their
    /// invariants after every step (always in debug builds).
    pub check_invariants: bool,
    /// Merge groups of a node that runs no replica (`None`: one group,
    /// 0, merging every stream the node is a member of).
    pub groups: Option<Vec<(GroupId, Vec<StreamId>)>>,
    /// Injected replica bugs.
    pub replica_bugs: ReplicaBugs,
    /// Injected host bugs.
    pub bugs: HostBugs,
    /// The cluster's first view (docs/membership.md), identical in every
    /// node's configuration: replicas start membership from it, and the
    /// node's monitor watches its subjects. `None`: membership is off.
    pub membership: Option<amulet_membership::View>,
    /// The monitor's timing (probes, failure timeout, settling).
    pub monitor: amulet_membership::MonitorConfig,
    /// Whether the view's lowest active member re-homes the partitions of
    /// nodes the view removed (docs/membership.md). On by default.
    pub self_healing: bool,
    /// Injected membership bug (the simulator's; never in production).
    pub membership_bug: amulet_membership::MembershipBug,
    /// Whether replicas judge requests routed by an older map by fence
    /// keys (DynaTree §III-A; on by default) or refuse them all as stale
    /// (whole-map versions, the behaviour before, kept to count the
    /// refreshes fence keys save). It decides execution: every node of a
    /// cluster must have the same setting.
    pub fence_keys: bool,
    /// The balancer (docs/dynatree.md): splits range partitions past a
    /// size bound by itself.
    pub balancer: crate::BalancerConfig,
}

impl<S> HostConfig<S> {
    /// The production settings for `me` in its `incarnation`.
    pub fn new(
        me: NodeId,
        incarnation: u32,
        new_state: Arc<dyn Fn() -> S + Send + Sync>,
    ) -> HostConfig<S> {
        HostConfig {
            me,
            incarnation,
            new_state,
            checkpoint_every_micros: 10_000_000,
            transfer_chunk_bytes: 1024 * 1024,
            trim_quorum: TrimQuorum::Majority,
            report_deliveries: true,
            report_syncs: false,
            check_invariants: cfg!(debug_assertions),
            groups: None,
            replica_bugs: ReplicaBugs::default(),
            bugs: HostBugs::default(),
            membership: None,
            monitor: amulet_membership::MonitorConfig::default(),
            self_healing: true,
            membership_bug: amulet_membership::MembershipBug::None,
            fence_keys: true,
            balancer: crate::BalancerConfig::default(),
        }
    }

    /// Whether invariants are checked after every step.
    pub(crate) fn checking(&self) -> bool {
        self.check_invariants || cfg!(debug_assertions)
    }
}
