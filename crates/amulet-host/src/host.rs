//! The [`Host`]: a node's streams and replicas, and the inputs that reach
//! them.

use crate::checkpoint_codec::CheckpointBody;
use crate::checkpointer::Checkpointer;
use crate::command::{Command, Token};
use crate::config::{HostConfig, ASYNC_SYNC_INTERVAL_MICROS, TRIM_INTERVAL_MICROS};
use crate::state_transfer::StateTransfer;
use crate::status::{ReplicaStatus, StreamStatus};
use amulet_multicast::{MulticastError, MulticastNode};
use amulet_smr::{PartitionMap, Replica, ReplicaMessage, RequestId, StateMachine};
use amulet_types::{NodeId, PartitionId, StorageMode, StreamId, TimeMicros, ValueId};
use amulet_wire::Envelope;
use bytes::Bytes;
use std::collections::BTreeMap;

/// Why a host cannot go on; the node stops with it.
#[derive(Debug, thiserror::Error)]
pub enum HostError {
    /// An acceptor log could not be made durable: the node can no longer
    /// keep its promises.
    #[error("stream {stream}: log sync failed: {error}")]
    Sync {
        /// The stream.
        stream: u32,
        /// What failed.
        error: String,
    },
    /// The log of a stream created by a reconfiguration could not be
    /// opened: the node cannot run the partition without it.
    #[error("opening the log of stream {stream}, created by a reconfiguration: {error}")]
    OpenLog {
        /// The stream.
        stream: u32,
        /// What failed.
        error: String,
    },
    /// A checkpoint a restart depends on (a split's first, a merge's
    /// absorbing partition's) could not be written.
    #[error("partition {partition}: checkpoint at a fence failed: {error}")]
    FenceCheckpoint {
        /// The partition.
        partition: u32,
        /// What failed.
        error: String,
    },
    /// Closing a log at a clean stop failed.
    #[error("stream {stream}: log close failed: {error}")]
    Close {
        /// The stream.
        stream: u32,
        /// What failed.
        error: String,
    },
}

/// Why a host cannot start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// A checkpoint does not restore its replica.
    #[error("partition {partition}: its checkpoint does not restore: {error}")]
    Restore {
        /// The partition.
        partition: u32,
        /// What is wrong.
        error: String,
    },
    /// A checkpoint's merge names streams this node does not have.
    #[error("partition {partition}: its checkpoint does not fit this node's streams ({error}); move it away to replay the partition's streams")]
    Position {
        /// The partition.
        partition: u32,
        /// What is wrong.
        error: String,
    },
    /// The node replicates a partition but is not a member of one of its
    /// streams.
    #[error("this node replicates partition {partition} but is not a member of stream {stream}")]
    NotAMember {
        /// The partition.
        partition: u32,
        /// The stream.
        stream: u32,
    },
    /// A stream created at run time (named by a checkpoint's map) could
    /// not be opened.
    #[error("stream {stream}: {error}")]
    OpenLog {
        /// The stream.
        stream: u32,
        /// What failed.
        error: String,
    },
}

/// What a host has done since it started (the simulator's statistics).
#[derive(Clone, Copy, Debug, Default)]
pub struct HostCounters {
    /// Replicas started from their own checkpoint.
    pub restores: u64,
    /// Peers' checkpoints installed by state transfer.
    pub transfers: u64,
    /// Chunks of peers' checkpoints received (a transfer pulls a file in
    /// as many as its size needs).
    pub transfer_chunks: u64,
    /// Replicas dropped after a move (handed off, or found moved away
    /// after being down through it).
    pub hand_offs: u64,
    /// Replicas created or removed at fences (splits, merges).
    pub reconfigured: u64,
    /// Group commits.
    pub syncs: u64,
    /// Splits the balancer proposed (docs/dynatree.md); each takes effect
    /// unless another change replaced the map it was built on first.
    pub splits_proposed: u64,
    /// Of `splits_proposed`, those made because the partition was hot
    /// (`split_ops_per_second`), not large.
    pub load_splits_proposed: u64,
    /// Of `splits_proposed`, tail splits: the map's last range written in
    /// key order, cut where its last window's writes start.
    pub tail_splits_proposed: u64,
    /// Merges the balancer proposed.
    pub merges_proposed: u64,
    /// Moves the balancer proposed to even out partitions per node, or
    /// their weights.
    pub moves_proposed: u64,
    /// Of `moves_proposed`, those made to even out the nodes' bytes and
    /// load (`amulet_smr::next_weight_move`).
    pub weight_moves_proposed: u64,
}

/// A fetched peer checkpoint, decoded and waiting to be checked and
/// installed between two flush rounds (never in the middle of one:
/// undrained deliveries belong to the replica being replaced).
pub(crate) struct Fetched<S: StateMachine> {
    /// The partition asked for.
    pub(crate) asked: PartitionId,
    pub(crate) body: Box<CheckpointBody<S::Checkpoint, S::Reply>>,
    pub(crate) file: Bytes,
}

/// A node between its runtime and its protocol cores.
pub struct Host<S: StateMachine> {
    pub(crate) config: HostConfig<S>,
    pub(crate) node: MulticastNode,
    /// Replicas of the partitions this node runs, one merge group each.
    pub(crate) replicas: BTreeMap<PartitionId, Replica<S>>,
    /// The configured partition map (`None`: the node runs no service).
    pub(crate) configured_map: Option<PartitionMap>,
    /// The newest map a replica here has executed, kept when replicas go;
    /// or, at a node that runs none, the newest a peer told it of.
    pub(crate) known_map: Option<PartitionMap>,
    /// The newest map a peer told this node of, kept even while replicas
    /// run here, but used only to find whom to ask for a signal
    /// (`crate::signal_asks`): a replica replaying far behind, at a node
    /// whose other replicas are just as far behind, would otherwise ask
    /// only the runners of maps its node executed long ago.
    pub(crate) heard_map: Option<Box<PartitionMap>>,
    /// Streams a peer sent this node a message for that it has not
    /// opened: opened at the next flush if the newest map heard of names
    /// this node an acceptor of one the map retired (`crate::late_streams`).
    pub(crate) asked_streams: std::collections::BTreeSet<amulet_types::StreamId>,
    /// The access configuration of the most advanced replica seen, by its
    /// global position (kept when replicas go, like `known_map`).
    pub(crate) known_access: Option<(u64, std::sync::Arc<amulet_smr::AccessControl>)>,
    /// Client requests waiting for their reply, by replica request id.
    pub(crate) pending: BTreeMap<(PartitionId, RequestId), Token>,
    /// The same, by token (to cancel).
    pub(crate) requests: BTreeMap<Token, (PartitionId, RequestId)>,
    pub(crate) checkpointer: Checkpointer,
    pub(crate) transfer: StateTransfer,
    /// Fetched checkpoints to check and install (see [`Fetched`]).
    pub(crate) fetched: Vec<Fetched<S>>,
    pub(crate) out: Vec<Command<S>>,
    pub(crate) last_trim: Option<TimeMicros>,
    pub(crate) last_async_sync: TimeMicros,
    /// The map version adoptions were last checked against (see
    /// `forget_abandoned_adoptions`).
    pub(crate) adoptions_checked_at: Option<amulet_types::MapVersion>,
    /// Per partition and node this node reported handed off
    /// (`Body::HandedOff`): the map version it reported at and when, so it
    /// reports again only if the map still lists it a while later (the
    /// report was lost).
    pub(crate) handed_off_reported:
        BTreeMap<(PartitionId, NodeId), (amulet_types::MapVersion, TimeMicros)>,
    /// Flush rounds in a row that did not settle.
    pub(crate) unsettled_rounds: u64,
    pub(crate) counters: HostCounters,
    /// This node's edge monitor (`None`: membership is off).
    pub(crate) monitor: Option<amulet_membership::Monitor>,
    /// The membership of the most advanced replica seen, by its global
    /// position (kept when replicas go, like `known_access`).
    pub(crate) known_membership: Option<(u64, std::sync::Arc<amulet_membership::Membership>)>,
    /// The membership last sent to each peer that runs no replica
    /// (`Host::tell_view_if_older`: such a peer's copy is refreshed when
    /// reports change within a view).
    pub(crate) views_told: BTreeMap<NodeId, std::sync::Arc<amulet_membership::Membership>>,
    /// What membership has done here (metrics).
    pub(crate) membership_counters: crate::monitoring::MembershipCounters,
    /// Self-healing's record (see `healing`).
    pub(crate) healing: crate::healing::Healing,
    /// The balancer's record (see `balancer`).
    pub(crate) balancing: crate::balancer::Balancing,
    /// When the node last asked for signals by its newest map
    /// (`crate::signal_asks`).
    pub(crate) newer_runners_asked_at: Option<TimeMicros>,
    /// When this node last nudged each partition it hands off
    /// (`Host::nudge_idle_hand_offs`).
    pub(crate) hand_off_nudged: BTreeMap<PartitionId, TimeMicros>,
}

impl<S: StateMachine> Host<S> {
    /// This node.
    pub fn me(&self) -> NodeId {
        self.config.me
    }

    /// This run's incarnation.
    pub fn incarnation(&self) -> u32 {
        self.config.incarnation
    }

    /// Moves the commands produced so far to `into` (appended), to carry
    /// out in order.
    pub fn drain_commands(&mut self, into: &mut Vec<Command<S>>) {
        into.append(&mut self.out);
    }

    /// The commands produced so far.
    pub fn take_commands(&mut self) -> Vec<Command<S>> {
        std::mem::take(&mut self.out)
    }

    /// A protocol message from `from`.
    pub fn on_envelope(&mut self, now: TimeMicros, from: NodeId, envelope: Envelope) {
        if !self.node.streams().contains_key(&envelope.stream) {
            self.note_late_stream(envelope.stream);
        }
        self.node.on_message(now, from, envelope);
    }

    /// A replica message from a peer (signals for the replicas, state
    /// transfer for the host).
    pub fn on_replica_message(&mut self, now: TimeMicros, message: ReplicaMessage) {
        if message.is_signal() {
            for replica in self.replicas.values_mut() {
                replica.on_message(message.clone());
            }
        } else if message.is_probe() {
            self.on_probe_message(message);
        } else if message.is_report() {
            self.on_weights(now, message);
        } else {
            self.on_transfer_message(now, message);
        }
    }

    /// Time passes: protocol timeouts, heartbeats and skips; replica
    /// timers; and, when due, trimming (with moves and transfer retries),
    /// background syncs of async logs, and checkpoints.
    pub fn tick(&mut self, now: TimeMicros) -> Result<(), crate::HostError> {
        self.node.tick(now);
        for replica in self.replicas.values_mut() {
            replica.tick(now.0);
        }
        let trim_due = self
            .last_trim
            .is_none_or(|at| now.since(at) >= TRIM_INTERVAL_MICROS);
        if trim_due {
            self.last_trim = Some(now);
            self.trim_logs(now);
        }
        if now.since(self.last_async_sync) >= ASYNC_SYNC_INTERVAL_MICROS {
            self.last_async_sync = now;
            let background = |mode| mode == StorageMode::AsyncDurable;
            self.sync_logs(background)?;
            self.report_sync(background);
        }
        self.start_checkpoints(now);
        self.ask_newer_runners(now);
        self.run_monitor(now);
        self.heal(now);
        self.balance(now);
        self.check_after_step();
        Ok(())
    }

    /// Multicasts `bytes` on `stream` (the ordering layer's own clients:
    /// `amulet order-demo`, load generators, the simulator's workloads).
    pub fn multicast(
        &mut self,
        now: TimeMicros,
        stream: StreamId,
        bytes: Bytes,
    ) -> Result<ValueId, MulticastError> {
        self.node.multicast(now, stream, bytes)
    }

    /// The node's streams and merges.
    pub fn multicast_node(&self) -> &MulticastNode {
        &self.node
    }

    /// The node's streams and merges, to drive directly: Elastic Paxos
    /// subscriptions, injected protocol bugs, load generators. Call
    /// [`Host::flush`] after.
    pub fn multicast_node_mut(&mut self) -> &mut MulticastNode {
        &mut self.node
    }

    /// The replicas this node runs.
    pub fn replicas(&self) -> &BTreeMap<PartitionId, Replica<S>> {
        &self.replicas
    }

    /// The replica of `partition`, for changes that keep its state equal
    /// ([`Replica::state_mut_same_value`]).
    pub fn replica_mut_same_value(&mut self, partition: PartitionId) -> Option<&mut Replica<S>> {
        self.replicas.get_mut(&partition)
    }

    /// What the host has done.
    pub fn counters(&self) -> HostCounters {
        self.counters
    }

    /// The newest partition map this node has executed (at a replica it
    /// runs, or ran: maps only move forward), or the configured one: what
    /// it decides by (trimming, moves, recovery) and tells clients.
    pub fn current_map(&self) -> Option<&PartitionMap> {
        let replicas = self.replicas.values().map(|r| r.map());
        replicas
            .chain(self.known_map.as_ref())
            .max_by_key(|m| m.version)
            .or(self.configured_map.as_ref())
    }

    /// The limits of a stream created at run time: the configured global
    /// stream's (opened from the configuration file and never removed,
    /// so they hold after the global stream itself is replaced), else
    /// the current global stream's.
    pub(crate) fn runtime_stream_limits(&self) -> amulet_types::StreamLimits {
        let streams = self.node.streams();
        self.configured_map
            .iter()
            .chain(self.current_map())
            .find_map(|map| streams.get(&map.global_stream))
            .map(|s| s.config().limits.clone())
            .unwrap_or_default()
    }

    /// The newest map this node executed or a peer told it of
    /// (`Host::heard_map`): for finding other nodes only (whom to ask for
    /// a signal, which retired stream a peer still runs); the node decides
    /// by [`Host::current_map`].
    pub(crate) fn newest_heard_map(&self) -> Option<&PartitionMap> {
        self.current_map()
            .into_iter()
            .chain(self.heard_map.as_deref())
            .max_by_key(|m| m.version)
    }

    /// The access configuration (docs/security.md) as the most advanced of
    /// this node's replicas executed it (or the last one that went), for
    /// what the node judges itself: bearer tokens, and reads served
    /// without ordering (snapshot pages, tails, reads at a version,
    /// eventual maps). Ordered requests are judged by the replicas.
    pub fn access(&self) -> std::sync::Arc<amulet_smr::AccessControl> {
        self.replicas
            .values()
            .map(|r| (r.global_position(), r.access_shared()))
            .chain(self.known_access.clone())
            .max_by_key(|(position, _)| *position)
            .map(|(_, access)| access)
            .unwrap_or_default()
    }

    /// Remembers the newest map the replicas have executed (before one
    /// goes, and after every flush).
    pub(crate) fn remember_maps(&mut self) {
        if let Some(replica) = self.replicas.values().max_by_key(|r| r.global_position()) {
            let position = replica.global_position();
            if let Some(membership) = replica.membership() {
                if self
                    .known_membership
                    .as_ref()
                    .is_none_or(|(known, _)| position > *known)
                {
                    self.known_membership = Some((position, membership.clone()));
                }
            }
            if self
                .known_access
                .as_ref()
                .is_none_or(|(known, _)| position > *known)
            {
                self.known_access = Some((position, replica.access_shared()));
            }
        }
        let newer = self
            .replicas
            .values()
            .map(|r| r.map())
            .max_by_key(|m| m.version)
            .filter(|m| {
                self.known_map
                    .as_ref()
                    .is_none_or(|known| m.version > known.version)
            })
            .cloned();
        if let Some(map) = newer {
            self.known_map = Some(map);
        }
    }

    /// The partition map's version this node has executed (0 without a
    /// service).
    pub fn map_version(&self) -> u64 {
        self.current_map().map_or(0, |m| m.version.0)
    }

    /// Whether this node waits for `partition`'s state after a move gave
    /// it the partition (its newest map names it; it runs no replica).
    pub fn adopting(&self, partition: PartitionId) -> bool {
        !self.replicas.contains_key(&partition)
            && self
                .current_map()
                .is_some_and(|m| m.partitions_of(self.config.me).contains(&partition))
    }

    /// Whether `partition`'s replica is waiting for a peer's checkpoint.
    pub fn fetching(&self, partition: PartitionId) -> bool {
        self.transfer.fetching(partition)
    }

    /// Each stream's state here.
    pub fn stream_status(&self) -> Vec<StreamStatus> {
        self.node
            .streams()
            .values()
            .map(|s| StreamStatus {
                stream: s.stream().0,
                decided_below: s.decided_below().0,
                learner_lag: s.learner_lag(),
                coordinator: s.is_coordinator(),
                voting: s.is_voting(),
                instances_proposed: s.stats().instances_proposed,
                skips_proposed: s.stats().skips_proposed,
                values_delivered: s.stats().values_delivered,
                trimmed_below: s.trimmed_below().0,
            })
            .collect()
    }

    /// Each replica's state here.
    pub fn replica_status(&self) -> Vec<ReplicaStatus> {
        self.replicas
            .iter()
            .map(|(partition, r)| ReplicaStatus {
                checkpoint: self.checkpointer.stats(*partition).into(),
                partition: partition.0,
                stream: r.stream().0,
                global_position: r.global_position(),
                queued: r.queued() as u64,
                sessions: r.sessions() as u64,
                maps: r.map().keyspaces.keys().cloned().collect(),
                waiting: r.is_waiting(),
                state: {
                    // The begins this replica executed without their
                    // signals yet, and the replies held behind them.
                    let mut gauges = r.state().gauges();
                    gauges.push(("unsignalled_commands", r.unsignalled() as u64));
                    gauges.push(("held_replies", r.held_replies() as u64));
                    // Requests routed by an older map: taken by fence
                    // keys, refused as stale (docs/dynatree.md).
                    let (taken, refused) = r.fence_key_verdicts();
                    gauges.push(("fence_key_taken_requests", taken));
                    gauges.push(("stale_map_refused_requests", refused));
                    // The balancer's last load window (splits by load).
                    if let Some(load) = self.measured_load(*partition) {
                        gauges.push(("ops_per_second", load.ops_per_second));
                    }
                    gauges
                },
            })
            .collect()
    }

    /// Micros between checkpoints (0: none).
    pub fn checkpoint_every_micros(&self) -> u64 {
        self.checkpointer.every_micros()
    }

    /// Syncs the dirty logs of streams whose storage mode `select`s.
    pub(crate) fn sync_logs(
        &mut self,
        select: impl Fn(StorageMode) -> bool,
    ) -> Result<(), crate::HostError> {
        let streams: Vec<(StreamId, StorageMode)> = self
            .node
            .streams()
            .iter()
            .map(|(id, s)| (*id, s.config().storage))
            .collect();
        for (stream, mode) in streams {
            if mode == StorageMode::Memory || !select(mode) {
                continue;
            }
            if let Some(node) = self.node.stream_mut(stream) {
                let log = node.log_mut();
                if log.dirty() {
                    log.sync().map_err(|e| crate::HostError::Sync {
                        stream: stream.0,
                        error: e.to_string(),
                    })?;
                }
            }
        }
        Ok(())
    }

    /// Hands every durable log's buffered writes to the OS (one write per
    /// log file instead of one per record).
    pub(crate) fn write_out_logs(&mut self) -> Result<(), crate::HostError> {
        let streams: Vec<StreamId> = self
            .node
            .streams()
            .iter()
            .filter(|(_, s)| s.config().storage != StorageMode::Memory)
            .map(|(id, _)| *id)
            .collect();
        for stream in streams {
            if let Some(node) = self.node.stream_mut(stream) {
                node.log_mut()
                    .write_out()
                    .map_err(|e| crate::HostError::Sync {
                        stream: stream.0,
                        error: e.to_string(),
                    })?;
            }
        }
        Ok(())
    }

    /// Reports the promises a sync of the logs whose mode `select`s just
    /// made durable (when asked to).
    pub(crate) fn report_sync(&mut self, select: impl Fn(StorageMode) -> bool) {
        if !self.config.report_syncs {
            return;
        }
        let promises = self
            .node
            .streams()
            .iter()
            .filter(|(_, s)| s.config().storage != StorageMode::Memory)
            .filter(|(_, s)| select(s.config().storage))
            .filter_map(|(id, s)| Some((*id, s.promised()?)))
            .collect();
        self.out.push(Command::Synced { promises });
    }

    /// Makes every acceptor log durable (a stop, or before a process
    /// goes).
    pub fn sync_all_logs(&mut self) -> Result<(), crate::HostError> {
        self.sync_logs(|_| true)
    }

    /// Records a clean stop in every log, so an async log knows at its
    /// next open that it lost nothing even if the machine restarts.
    pub fn close_logs(&mut self) -> Result<(), crate::HostError> {
        let streams: Vec<StreamId> = self.node.streams().keys().copied().collect();
        for stream in streams {
            if let Some(node) = self.node.stream_mut(stream) {
                node.log_mut()
                    .close()
                    .map_err(|e| crate::HostError::Close {
                        stream: stream.0,
                        error: e.to_string(),
                    })?;
            }
        }
        Ok(())
    }
}
