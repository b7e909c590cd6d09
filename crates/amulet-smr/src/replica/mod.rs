//! A replica of one partition: executes the merged delivery of its
//! partition stream and the global stream (thesis §2.7; DMap §III-B).
//!
//! One file per part of its work:
//!
//! - `client_request`: what a client asks and is answered;
//! - `edge`: a client request received here, checked and routed to the
//!   stream that orders it (or refused at once);
//! - `execute`: delivered commands executed in merge order, sessions
//!   (exactly-once), keyspace changes;
//! - `signals`: S-SMR's exchange of partial replies between the partitions
//!   a multi-partition command involves (DMap §III-B), the cache of
//!   partials kept for late requests, signals that come early;
//! - `fences`: reconfigurations judged when ordered and applied at their
//!   barrier's fence (split, merge, new stream, move);
//! - `checkpoint`: the replicated state between two deliveries, taken and
//!   restored (thesis §3.4.2);
//! - `invariants`: what holds after every step, checked in debug builds
//!   (and by the simulator after every step).

mod checkpoint;
mod client_request;
mod edge;
mod execute;
mod fence_keys;
mod fences;
mod invariants;
mod signals;

pub use checkpoint::{ReplicaCheckpoint, RestoreError};
pub use client_request::{ClientReply, ClientRequest, RequestId};
pub use fences::FenceWork;

use crate::{Origin, PartitionMap, Reconfiguration, ReplicaMessage, SessionTable, StateMachine};
use amulet_types::{NodeId, PartitionId, StreamId};
use bytes::Bytes;
use signals::Waiting;
use std::collections::{BTreeMap, VecDeque};
use std::sync::atomic::AtomicU64;

/// Limits and identity of a replica.
#[derive(Clone, Debug)]
pub struct ReplicaConfig {
    /// This node.
    pub node: NodeId,
    /// This node's run (increases at every restart).
    pub incarnation: u32,
    /// The partition replicated.
    pub partition: PartitionId,
    /// How long a replica waits for a missing signal before asking again,
    /// µs. Signals are single messages that may be lost.
    pub signal_retry_micros: u64,
    /// Bytes of partial replies kept to answer late signal requests. A
    /// replica that lags more than this behind another partition gets
    /// "partial gone" and answers its client `Lost` (the command did take
    /// effect).
    pub signal_cache_bytes_max: usize,
    /// Longest session lease a client may ask for, µs.
    pub session_lease_micros_max: u64,
    /// Votes on voted commands (transaction commits) kept for replicas of
    /// other partitions that ask late. A replica lagging more than this
    /// many voted commands behind another partition waits until a replica
    /// that kept the vote answers. A vote is a few bytes.
    pub votes_retained_max: usize,
}

impl ReplicaConfig {
    /// Defaults for `node`'s replica of `partition`.
    pub fn new(node: NodeId, incarnation: u32, partition: PartitionId) -> ReplicaConfig {
        ReplicaConfig {
            node,
            incarnation,
            partition,
            signal_retry_micros: 50_000,
            signal_cache_bytes_max: 64 * 1024 * 1024,
            session_lease_micros_max: 10 * 60 * 1_000_000,
            votes_retained_max: 1 << 18,
        }
    }
}

/// What the caller must do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Output<R> {
    /// Multicast `value` on `stream`.
    Propose {
        /// The stream.
        stream: StreamId,
        /// An encoded [`crate::CommandEnvelope`].
        value: Bytes,
        /// Multicast as a barrier (a reconfiguration): every merge that
        /// delivers it stops at the next round until the runtime has
        /// called [`Replica::at_fence`] and released it.
        barrier: bool,
    },
    /// Send a message to another replica.
    Send {
        /// Destination node.
        to: NodeId,
        /// The message.
        message: ReplicaMessage,
    },
    /// Answer a client request received here.
    Reply {
        /// The request.
        request: RequestId,
        /// The answer.
        reply: ClientReply<R>,
    },
}

/// A replica of one partition.
pub struct Replica<S: StateMachine> {
    config: ReplicaConfig,
    map: PartitionMap,
    state: S,
    sessions: SessionTable<ClientReply<S::Reply>>,
    /// Users, roles, grants and tokens (docs/security.md): changed by the
    /// global stream only, so the same at every replica at one position.
    access: std::sync::Arc<crate::AccessControl>,
    /// The cluster's membership (docs/membership.md): changed by the
    /// global stream only, like `access`. `None` until the host gives the
    /// configured first view (or a checkpoint one it executed).
    membership: Option<std::sync::Arc<amulet_membership::Membership>>,
    /// Greatest timestamp of any executed command.
    local_clock_micros: u64,
    /// Greatest timestamp of a global-stream command: sessions expire by
    /// it, identically in every partition.
    global_clock_micros: u64,
    /// Global-stream commands delivered so far.
    global_position: u64,
    /// Delivered, not yet executed (waiting behind `waiting`).
    queue: VecDeque<(bool, crate::CommandEnvelope<S::Command>)>,
    waiting: Option<Waiting<S::Command>>,
    /// Executed commands that order only ([`StateMachine::orders_only`])
    /// still waiting for signals, by global position; execution goes on
    /// past them.
    unsignalled: BTreeMap<u64, Waiting<S::Command>>,
    /// Replies held until every unsignalled command at or before their key has its
    /// signals (see `signals::Waiting`).
    held: BTreeMap<u64, Vec<HeldReply<S::Reply>>>,
    early_signals: BTreeMap<u64, BTreeMap<PartitionId, Option<Bytes>>>,
    signal_cache: BTreeMap<u64, Bytes>,
    signal_cache_bytes: usize,
    /// This partition's votes on voted commands, by global position (see
    /// `signals::keep_vote`).
    votes: BTreeMap<u64, Bytes>,
    absorbed_signals: BTreeMap<PartitionId, (u64, BTreeMap<u64, Bytes>)>,
    next_request: RequestId,
    now_micros: u64,
    undecodable: u64,
    outputs: Vec<Output<S::Reply>>,
    complete_without_signals: bool,
    begin_without_signals: bool,
    answer_reads_locally: bool,
    access_at_edge: bool,
    /// Whether a request routed by an older map is judged by fence keys
    /// (see `fence_keys.rs`); `false` refuses it whatever it names.
    fence_keys: bool,
    fence_keys_unchecked: bool,
    /// Requests routed by an older map received here: taken by fence keys,
    /// and refused as stale (counters, for metrics).
    fence_key_verdicts: [u64; 2],
    /// What this replica executed since the balancer last took it (its
    /// splits by load, docs/dynatree.md). Local, like the counters: not
    /// replicated, not in checkpoints.
    load: crate::LoadSample,
    /// See [`ReplicaCheckpoint::pending_reconfiguration`].
    pending_reconfiguration: Option<Reconfiguration>,
    /// Requests received here and proposed, not answered yet, with the
    /// stream they went on (answered `Behind` if it is retired).
    proposed: BTreeMap<RequestId, StreamId>,
    /// The global position at the last [`Replica::check_invariants`]: it
    /// never goes back.
    global_position_checked: AtomicU64,
}

/// A reply to a request received here, held behind unsignalled commands.
type HeldReply<R> = (RequestId, ClientReply<R>);

/// Unanswered proposals a replica remembers the stream of (the oldest
/// are forgotten first: their clients have long given up).
const PROPOSED_MAX: usize = 1 << 20;

impl<S: StateMachine> Replica<S> {
    /// A replica starting from `map` and `state` (the initial
    /// configuration, or a checkpoint).
    pub fn new(config: ReplicaConfig, map: PartitionMap, state: S) -> Replica<S> {
        let partition_bits = config.partition.0;
        assert!(
            map.partitions.contains_key(&config.partition),
            "{} is not in the partition map",
            config.partition
        );
        Replica {
            config,
            map,
            state,
            sessions: SessionTable::default(),
            access: Default::default(),
            membership: None,
            local_clock_micros: 0,
            global_clock_micros: 0,
            global_position: 0,
            queue: VecDeque::new(),
            waiting: None,
            unsignalled: BTreeMap::new(),
            held: BTreeMap::new(),
            early_signals: BTreeMap::new(),
            signal_cache: BTreeMap::new(),
            signal_cache_bytes: 0,
            votes: BTreeMap::new(),
            absorbed_signals: BTreeMap::new(),
            // Disjoint per partition: every replica of a node answers the
            // global commands that node originated, so a node hosting
            // several partitions must be able to tell which replica's
            // request a reply is for.
            next_request: (u64::from(partition_bits) << 40) + 1,
            now_micros: 0,
            undecodable: 0,
            outputs: Vec::new(),
            complete_without_signals: false,
            begin_without_signals: false,
            answer_reads_locally: false,
            access_at_edge: false,
            fence_keys: true,
            fence_keys_unchecked: false,
            fence_key_verdicts: [0; 2],
            load: crate::LoadSample::default(),
            pending_reconfiguration: None,
            proposed: BTreeMap::new(),
            global_position_checked: AtomicU64::new(0),
        }
    }

    /// A deliberately broken variant, for the simulator to show that its
    /// checkers catch it: multi-partition commands complete on this
    /// partition's partial alone, without the signal exchange.
    pub fn set_bug_complete_without_signals(&mut self, on: bool) {
        self.complete_without_signals = on;
    }

    /// A deliberately broken variant, for the simulator to show that its
    /// transactional checker catches it: a command ordered on the global
    /// stream for its position (a read version) completes without the
    /// signal exchange, so a partition runs ahead of the others past it
    /// (serializable, not strict).
    pub fn set_bug_begin_without_signals(&mut self, on: bool) {
        self.begin_without_signals = on;
    }

    /// A deliberately broken variant, for the real-process fault suite and
    /// the simulator to show that their checkers catch it: a read-only
    /// command of this partition alone is answered at once from this
    /// replica's state, without being ordered (a replica behind the others,
    /// or cut off from them, answers from the past).
    pub fn set_bug_answer_reads_locally(&mut self, on: bool) {
        self.answer_reads_locally = on;
    }

    /// A deliberately broken variant, for the simulator to show that its
    /// access checker catches it: an access change takes effect at the
    /// replica that received it when it is proposed, before it is ordered
    /// (so that replica judges requests by a configuration the others do
    /// not have at the same position).
    pub fn set_bug_access_at_edge(&mut self, on: bool) {
        self.access_at_edge = on;
    }

    /// Whether requests routed by an older map are judged by fence keys
    /// (the default) or refused as stale whatever keys they name (the
    /// behaviour before fence keys, kept to count what they save). It
    /// decides execution, so every replica of the cluster must have the
    /// same setting.
    pub fn set_fence_keys(&mut self, on: bool) {
        self.fence_keys = on;
    }

    /// A deliberately broken variant, for the simulator to show that its
    /// checkers catch it: a request routed by an older map is taken
    /// without checking that its key is still inside this partition's
    /// range, and executed here even when the key moved to another one.
    pub fn set_bug_fence_keys_unchecked(&mut self, on: bool) {
        self.fence_keys_unchecked = on;
    }

    /// The service state.
    pub fn state(&self) -> &S {
        &self.state
    }

    /// The service state, for changes that keep it equal: a node moving
    /// the bytes of log entries into a segment file's mapping
    /// (`amulet_dmap::log_segments`). Anything that changes what the
    /// state holds goes through ordered commands instead.
    pub fn state_mut_same_value(&mut self) -> &mut S {
        &mut self.state
    }

    /// What this replica executed since [`Replica::reset_load`]: the
    /// balancer's measure of load (docs/dynatree.md).
    pub fn load(&self) -> &crate::LoadSample {
        &self.load
    }

    /// Starts the count of [`Replica::load`] again (a new window).
    pub fn reset_load(&mut self) {
        self.load = crate::LoadSample::default();
    }

    /// Whether a move took this partition away from this node (the map
    /// names other replicas): the replica runs on only until the new
    /// group holds its state (`handed_off`).
    pub fn moved_away(&self) -> bool {
        self.map
            .partitions
            .get(&self.config.partition)
            .is_some_and(|info| !info.replicas.contains(&self.config.node))
    }

    /// The access configuration executed so far.
    pub fn access(&self) -> &crate::AccessControl {
        &self.access
    }

    /// [`Replica::access`], shared (a cheap clone).
    pub fn access_shared(&self) -> std::sync::Arc<crate::AccessControl> {
        self.access.clone()
    }

    /// The membership executed so far (`None`: not configured).
    pub fn membership(&self) -> Option<&std::sync::Arc<amulet_membership::Membership>> {
        self.membership.as_ref()
    }

    /// Starts membership from the configured first view, unless this
    /// replica has one already (restored from a checkpoint that had it).
    /// Every node is configured with the same first view, so replicas
    /// started either way agree from the first membership command on.
    pub fn set_initial_membership(&mut self, membership: amulet_membership::Membership) {
        if self.membership.is_none() {
            self.membership = Some(std::sync::Arc::new(membership));
        }
    }

    /// A deliberately broken variant, for the simulator to show that its
    /// membership agreement checker catches it: `command` takes effect at
    /// this replica now, outside the global order.
    pub fn bug_apply_membership_unordered(&mut self, command: &amulet_membership::Command) {
        if let Some(membership) = self.membership.as_mut() {
            std::sync::Arc::make_mut(membership).apply(command);
        }
    }

    /// The current partition map.
    pub fn map(&self) -> &PartitionMap {
        &self.map
    }

    /// Global-stream commands executed (or being executed).
    pub fn global_position(&self) -> u64 {
        self.global_position
    }

    /// Whether execution waits for signals.
    pub fn is_waiting(&self) -> bool {
        self.waiting.is_some()
    }

    /// Executed commands that order only, still waiting for signals (the
    /// replies after them are held).
    pub fn unsignalled(&self) -> usize {
        self.unsignalled.len()
    }

    /// Replies held behind unsignalled commands.
    pub fn held_replies(&self) -> usize {
        self.held.values().map(Vec::len).sum()
    }

    /// Delivered commands not executed yet.
    pub fn queued(&self) -> usize {
        self.queue.len()
    }

    /// Requests routed by a client's older map that this replica's edge
    /// took by fence keys, and that it refused as stale, since it started.
    pub fn fence_key_verdicts(&self) -> (u64, u64) {
        (self.fence_key_verdicts[0], self.fence_key_verdicts[1])
    }

    /// Delivered values that did not decode (a bug or corruption upstream).
    pub fn undecodable(&self) -> u64 {
        self.undecodable
    }

    /// Open sessions.
    pub fn sessions(&self) -> usize {
        self.sessions.len()
    }

    /// The stream of this replica's partition.
    pub fn stream(&self) -> StreamId {
        self.map.partitions[&self.config.partition].stream
    }

    /// Outputs produced since the last drain.
    pub fn drain(&mut self) -> Vec<Output<S::Reply>> {
        std::mem::take(&mut self.outputs)
    }

    /// Whether a command envelope originated at this replica's node in
    /// this run (so its client waits here for the answer).
    fn is_mine(&self, origin: &Origin) -> bool {
        origin.node == self.config.node && origin.incarnation == self.config.incarnation
    }

    /// Answers the client of `origin` if it waits here, once every
    /// unsignalled command executed so far has its signals.
    fn answer(&mut self, origin: &Origin, reply: ClientReply<S::Reply>) {
        let behind = self.unsignalled.last_key_value().map(|(p, _)| *p);
        self.answer_behind(origin, reply, behind);
    }

    /// Answers the client of `origin` if it waits here, once every unsignalled
    /// at or before `behind` has its signals.
    fn answer_behind(
        &mut self,
        origin: &Origin,
        reply: ClientReply<S::Reply>,
        behind: Option<u64>,
    ) {
        if !self.is_mine(origin) {
            return;
        }
        self.proposed.remove(&origin.request);
        match behind.filter(|b| self.unsignalled.range(..=*b).next().is_some()) {
            Some(command) => self
                .held
                .entry(command)
                .or_default()
                .push((origin.request, reply)),
            None => self.outputs.push(Output::Reply {
                request: origin.request,
                reply,
            }),
        }
    }

    /// Sends the held replies no unsignalled command holds any more.
    fn release_held(&mut self) {
        let still_held = match self.unsignalled.first_key_value() {
            Some((first, _)) => self.held.split_off(first),
            None => BTreeMap::new(),
        };
        let released = std::mem::replace(&mut self.held, still_held);
        for (request, reply) in released.into_values().flatten() {
            self.outputs.push(Output::Reply { request, reply });
        }
    }
}
