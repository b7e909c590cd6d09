//! The DMap cluster of one seed: partitions × 3 replicas, the global
//! stream, simulated clients, the network and the nemesis.

use crate::checker::linearizability::{self, Call, Verdict};
use crate::cluster::{envelope_digest, sim_limits, sync_logs};
use crate::dmap::client::{Phase, Send, SimClient};
use crate::dmap::workload;
use crate::dmap::{MapOp, Observed, SortedMapModel};
use crate::nemesis::{next_instant, CrashGroup, FaultEvent, Nemesis, NemesisConfig};
use crate::network::Network;
use crate::rng::Rng;
use crate::runner::{SeedOutcome, SeedStats};
use crate::sim_log::{crash_stores, store_for, NodeDisk};
use crate::swarm::SwarmOptions;
use crate::trace::TraceHash;
use crate::violation::{Property, Violation};
use amulet_dmap::{
    ExecContext, MapCommand, MapLimits, MapReply, PartitionCheckpoint, PartitionState,
};
use amulet_multicast::{checkpoint_reaches, MergePosition, MulticastNode};
use amulet_smr::{
    group_of, handed_off, newest_map, open_streams, replicas_to_hand_off, trim_point, work_fences,
    ClientReply, ClientRequest, FenceHost, Layout, Output, PartitionInfo, PartitionMap,
    Reconfiguration, Replica, ReplicaCheckpoint, ReplicaConfig, ReplicaMessage, RequestId,
    StreamSpec, TrimQuorum,
};
use amulet_types::{
    Instance, NodeId, PartitionId, SessionId, StorageMode, StreamConfig, StreamId, TimeMicros,
};
use amulet_wire::{Envelope, ValueKind};
use bytes::Bytes;
use std::collections::BTreeMap;

mod operator;
mod transfer;

const TICK_MICROS: u64 = 1_000;
const ASYNC_SYNC_MICROS: u64 = 5_000;
/// Replicas per partition.
const REPLICAS: u32 = 3;
/// Client addresses start here (nodes are numbered from 1).
const CLIENT_ENDPOINT_BASE: u32 = 1_000;
/// Configurations the linearizability search may explore per seed.
const CHECK_STEP_BUDGET: u64 = 20_000_000;
/// The healed phase stops starting operations this long before the end,
/// so the last ones can complete.
const DRAIN_MICROS: u64 = 3_000_000;

/// Rounds of one node's outputs feeding its inputs within one event.
const FLUSH_ROUNDS_MAX: u64 = 100_000;

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
}

/// What a sim checkpoint file holds: the replica's checkpoint and the
/// merge position it reflects, encoded as the node encodes them.
type CheckpointBody = (
    ReplicaCheckpoint<PartitionCheckpoint, MapReply>,
    MergePosition,
);

/// How a seed checkpoints (drawn per seed).
#[derive(Clone, Copy, Debug)]
struct CheckpointPolicy {
    /// Virtual micros between checkpoints; 0: never (replicas replay
    /// their streams from the start, which must keep working).
    every_micros: u64,
    /// Longest time a checkpoint write takes; a crash meanwhile loses it.
    write_micros_max: u64,
    /// Who must hold a checkpoint before acceptors trim.
    quorum: TrimQuorum,
}

/// How long a state transfer request waits for its answer before the
/// next peer is asked.
const TRANSFER_RETRY_MICROS: u64 = 200_000;

/// Sends reconfigurations (splits, stream replacements, merges) to the
/// cluster at random times, as an administrator would.
struct Operator {
    next: TimeMicros,
    next_partition: u32,
    next_stream: u32,
    rng: Rng,
}

/// The operator's address (past the clients').
const OPERATOR_ENDPOINT: NodeId = NodeId(CLIENT_ENDPOINT_BASE + 999);

/// Messages on the simulated network.
#[derive(Clone, Debug)]
enum SimMessage {
    Paxos(Envelope),
    Replica(ReplicaMessage),
    Request {
        tag: u64,
        partition: Option<PartitionId>,
        request: ClientRequest<MapCommand>,
    },
    Reply {
        tag: u64,
        reply: ClientReply<MapReply>,
    },
}

struct NodeProcess {
    multicast: MulticastNode,
    /// The replicas this node runs, one merge group each.
    replicas: BTreeMap<PartitionId, Replica<PartitionState>>,
    /// Requests received here: who asked, with which tag.
    pending: BTreeMap<(PartitionId, RequestId), (NodeId, u64)>,
}

struct NodeSlot {
    /// The partition the node replicates from the start.
    partition: PartitionId,
    stores: BTreeMap<StreamId, crate::sim_log::SimStore>,
    /// The disk of the node-wide log holding every durable stream of the
    /// node, as in the real node (odd seeds); `None`: a log per stream.
    node_disk: Option<NodeDisk>,
    incarnation: u32,
    process: Option<NodeProcess>,
    /// Per partition, the last checkpoint written completely (survives
    /// crashes), and the merge position it reflects.
    checkpoints: BTreeMap<PartitionId, (Vec<u8>, MergePosition)>,
    /// Checkpoints being written, durable at the given time.
    writing: BTreeMap<PartitionId, (TimeMicros, Vec<u8>, MergePosition)>,
    next_checkpoint: TimeMicros,
    /// State transfers in progress: peers asked so far, when last asked.
    transfers: BTreeMap<PartitionId, (usize, TimeMicros)>,
}

struct DmapCluster {
    bug: DmapBug,
    verbose: bool,
    options: SwarmOptions,
    configs: Vec<StreamConfig>,
    initial_map: PartitionMap,
    initial_state: PartitionState,
    network: Network<SimMessage>,
    nemesis: Nemesis,
    slots: BTreeMap<NodeId, NodeSlot>,
    clients: Vec<SimClient>,
    client_rng: Rng,
    disk_rng: Rng,
    checkpoint_rng: Rng,
    checkpoints: CheckpointPolicy,
    /// Replicas started from a checkpoint.
    restores: u64,
    /// Peer checkpoints installed by state transfer.
    transfers: u64,
    /// Replicas dropped after a move (handed off, or found moved away
    /// after being down through it).
    hand_offs: u64,
    /// Acceptor storage of every stream.
    storage: StorageMode,
    /// Reconfigures the cluster now and then (in two seeds of three).
    operator: Option<Operator>,
    /// Replicas created or removed by reconfigurations.
    reconfigured: u64,
    calls: Vec<Call<MapOp, Observed>>,
    violations: Vec<Violation>,
    trace: TraceHash,
    now: TimeMicros,
    healed: bool,
}

/// Runs one DMap seed with the fault mix it draws.
pub fn run_dmap_seed(seed: u64, verbose: bool, bug: DmapBug) -> SeedOutcome {
    let mut rng = Rng::new(seed ^ 0x646D_6170);
    let mut options = SwarmOptions::draw(&mut rng);
    // Shorter phases than the multicast swarm: every client operation is
    // checked, and the search grows with the history.
    options.safety_phase_micros = options.safety_phase_micros.min(4_000_000);
    options.liveness_phase_micros = 6_000_000;
    run_dmap_with(seed, options, bug, verbose)
}

/// Runs one DMap seed with the given fault mix.
pub fn run_dmap_with(seed: u64, options: SwarmOptions, bug: DmapBug, verbose: bool) -> SeedOutcome {
    if verbose {
        println!("dmap seed={seed} bug={bug:?} options={options:#?}");
    }
    let mut cluster = DmapCluster::new(seed, options, bug, verbose);
    cluster.run();
    cluster.outcome()
}

/// The initial partition map and its keyspace layout for `partitions`.
fn initial_map(rng: &mut Rng, partitions: u32) -> (PartitionMap, Layout) {
    let infos = (1..=partitions)
        .map(|p| {
            let first = (p - 1) * REPLICAS + 1;
            (
                PartitionId(p),
                PartitionInfo {
                    stream: StreamId(p + 1),
                    replicas: (first..first + REPLICAS).map(NodeId).collect(),
                },
            )
        })
        .collect();
    let mut map = PartitionMap::uniform(StreamId(1), infos);
    let layout = if rng.chance(0.5) {
        Layout::Hash
    } else {
        // Split the keys a..f evenly.
        let splits: [&[u8]; 3] = [b"", b"c", b"e"];
        let step = if partitions == 2 { 2 } else { 1 };
        Layout::Range(
            (0..partitions)
                .map(|p| {
                    let split = if p == 0 {
                        b"" as &[u8]
                    } else {
                        splits[(p * step).min(2) as usize]
                    };
                    (Bytes::copy_from_slice(split), PartitionId(p + 1))
                })
                .collect(),
        )
    };
    map.create_keyspace(workload::map_name().as_str(), layout.clone())
        .expect("the initial layout is valid");
    (map, layout)
}

impl DmapCluster {
    fn new(seed: u64, options: SwarmOptions, bug: DmapBug, verbose: bool) -> DmapCluster {
        let mut rng = Rng::new(seed ^ 0x7265_706C);
        let storage = match rng.below(3) {
            0 => StorageMode::Memory,
            1 => StorageMode::AsyncDurable,
            _ => StorageMode::SyncDurable,
        };
        let partitions = rng.range(1, 3) as u32;
        let (initial_map, layout) = initial_map(&mut rng, partitions);
        let mut initial_state = PartitionState::new(MapLimits::default());
        let everything = |_: &[u8]| true;
        let created = initial_state.execute(
            &MapCommand::CreateMap {
                map: workload::map_name(),
                layout,
            },
            &ExecContext {
                now_micros: 0,
                snapshot_id: 0,
                owns_key: &everything,
            },
        );
        assert_eq!(created, MapReply::Done);
        let nodes: Vec<NodeId> = initial_map
            .partitions
            .values()
            .flat_map(|p| p.replicas.iter().copied())
            .collect();
        let mut configs = vec![StreamConfig {
            stream: initial_map.global_stream,
            acceptors: initial_map.partitions[&PartitionId(1)].replicas.clone(),
            learners: nodes[REPLICAS as usize..].to_vec(),
            storage,
            limits: sim_limits(),
            base_position: 0,
        }];
        for info in initial_map.partitions.values() {
            configs.push(StreamConfig {
                stream: info.stream,
                acceptors: info.replicas.clone(),
                learners: Vec::new(),
                storage,
                limits: sim_limits(),
                base_position: 0,
            });
        }
        if verbose {
            println!("storage={storage:?} partitions={partitions} map={initial_map:#?}");
        }
        let mut slots = BTreeMap::new();
        for (partition, info) in &initial_map.partitions {
            for &node in &info.replicas {
                // Drawn from the seed, not the rng, so the rest of the
                // seed's scenario is the same either way.
                let node_disk = NodeDisk::new(storage).filter(|_| seed % 2 == 1);
                let stores = configs
                    .iter()
                    .filter(|c| c.members().contains(&node))
                    .map(|c| (c.stream, store_for(&node_disk, storage, c.stream)))
                    .collect();
                slots.insert(
                    node,
                    NodeSlot {
                        partition: *partition,
                        stores,
                        node_disk,
                        incarnation: 0,
                        process: None,
                        checkpoints: BTreeMap::new(),
                        writing: BTreeMap::new(),
                        next_checkpoint: TimeMicros(0),
                        transfers: BTreeMap::new(),
                    },
                );
            }
        }
        let nemesis_config = NemesisConfig {
            storage: nodes.iter().map(|n| (*n, storage)).collect(),
            groups: configs
                .iter()
                .map(|c| CrashGroup::minority(c.acceptors.clone()))
                .collect(),
            down_max: nodes.len() / 2,
            nodes: nodes.clone(),
        };
        let safety_end = TimeMicros(options.safety_phase_micros);
        let nemesis = Nemesis::new(
            nemesis_config,
            options.faults.clone(),
            safety_end,
            rng.fork(),
        );
        let network = Network::new(options.network.clone(), rng.fork());
        let client_count = rng.range(2, 4) as u32;
        let churn = rng.chance(0.5);
        let clients = (0..client_count)
            .map(|c| {
                let mut client = SimClient::new(
                    NodeId(CLIENT_ENDPOINT_BASE + c),
                    SessionId(u64::from(c) + 1),
                    initial_map.clone(),
                );
                client.churns_maps = churn && c == 0;
                client
            })
            .collect();
        // A separate generator, so the rest of the seed draws as before.
        let mut checkpoint_rng = Rng::new(seed ^ 0x636B_7074);
        let checkpoints = CheckpointPolicy {
            every_micros: if checkpoint_rng.chance(0.25) {
                0
            } else {
                checkpoint_rng.range(50_000, 1_000_000)
            },
            write_micros_max: checkpoint_rng.range(0, 30_000),
            quorum: if checkpoint_rng.chance(0.5) {
                TrimQuorum::All
            } else {
                TrimQuorum::Majority
            },
        };
        if verbose {
            println!("checkpoints={checkpoints:?}");
        }
        // A separate generator, so the rest of the seed draws as before.
        let mut operator_rng = Rng::new(seed ^ 0x6F70_6572);
        let operator = operator_rng.chance(2.0 / 3.0).then(|| Operator {
            next: TimeMicros(operator_rng.range(100_000, 1_500_000)),
            next_partition: partitions + 1,
            next_stream: partitions + 2,
            rng: operator_rng.fork(),
        });
        let mut cluster = DmapCluster {
            bug,
            verbose,
            options,
            configs,
            initial_map,
            initial_state,
            network,
            nemesis,
            slots,
            clients,
            client_rng: rng.fork(),
            disk_rng: rng.fork(),
            checkpoint_rng: checkpoint_rng.fork(),
            checkpoints,
            restores: 0,
            transfers: 0,
            hand_offs: 0,
            storage,
            reconfigured: 0,
            operator,
            calls: Vec::new(),
            violations: Vec::new(),
            trace: TraceHash::new(),
            now: TimeMicros(0),
            healed: false,
        };
        for node in nodes {
            cluster.start(node);
        }
        for c in 0..cluster.clients.len() {
            let send = cluster.clients[c].start(0, &mut cluster.client_rng);
            cluster.send_request(c, send);
        }
        cluster
    }

    fn run(&mut self) {
        let end = TimeMicros(self.options.safety_phase_micros + self.options.liveness_phase_micros);
        let issue_until = end.0 - DRAIN_MICROS;
        let mut next_tick = TimeMicros(0);
        loop {
            let next = next_instant(&self.network, &self.nemesis, next_tick);
            if next > end {
                break;
            }
            self.now = next;
            let coordinators = self.coordinators();
            for event in self.nemesis.poll(next, || coordinators.clone()) {
                self.apply(event);
            }
            for (from, to, message) in self.network.deliver_due(next) {
                self.trace
                    .event(next, 0, from, to, message_digest(&message));
                self.deliver(from, to, message);
            }
            if next_tick <= next {
                self.tick(next.0 < issue_until);
                next_tick = next_tick.plus(TICK_MICROS);
            }
        }
        self.now = end;
    }

    fn coordinators(&self) -> Vec<NodeId> {
        self.slots
            .iter()
            .filter(|(_, slot)| {
                slot.process
                    .as_ref()
                    .is_some_and(|p| p.multicast.coordinates_any())
            })
            .map(|(node, _)| *node)
            .collect()
    }

    fn apply(&mut self, event: FaultEvent) {
        if self.verbose {
            println!("t={}us fault {event:?}", self.now.0);
        }
        self.trace.event(
            self.now,
            1,
            NodeId(0),
            NodeId(0),
            TraceHash::digest_debug(&event),
        );
        match event {
            FaultEvent::PartitionStart { blocked, .. } => self.network.block_links(&blocked),
            FaultEvent::PartitionEnd => self.network.unblock_all(),
            FaultEvent::CrashProcess { node, .. } => {
                self.crash(node);
                crash_stores(self.slots[&node].stores.values(), None);
            }
            FaultEvent::CrashMachine { node } => {
                self.crash(node);
                crash_stores(self.slots[&node].stores.values(), Some(&mut self.disk_rng));
            }
            FaultEvent::RestartProcess { node } | FaultEvent::RestartMachine { node } => {
                self.start(node)
            }
            FaultEvent::Heal => {
                self.network.heal();
                self.healed = true;
            }
        }
    }

    fn crash(&mut self, node: NodeId) {
        self.network.drop_to(node);
        let slot = self.slots.get_mut(&node).expect("known node");
        slot.process
            .take()
            .expect("the nemesis crashes only nodes that are up");
        // A checkpoint write in progress is lost (the file is renamed into
        // place only once written and synced).
        slot.writing.clear();
    }

    /// Finishes the checkpoint writes of `node` that are due, and starts
    /// new ones when they are due and the replicas are between deliveries.
    fn checkpoint(&mut self, node: NodeId) {
        let now = self.now;
        let slot = self.slots.get_mut(&node).expect("known node");
        let done: Vec<PartitionId> = slot
            .writing
            .iter()
            .filter(|(_, (at, _, _))| *at <= now)
            .map(|(p, _)| *p)
            .collect();
        for partition in done {
            let (_, bytes, position) = slot.writing.remove(&partition).expect("listed");
            slot.checkpoints.insert(partition, (bytes, position));
        }
        if self.checkpoints.every_micros == 0 || now < slot.next_checkpoint {
            return;
        }
        let Some(process) = slot.process.as_ref() else {
            return;
        };
        for (partition, replica) in &process.replicas {
            if slot.writing.contains_key(partition) {
                continue;
            }
            let (Some(checkpoint), Some(position)) = (
                replica.checkpoint(),
                process.multicast.group_position(group_of(*partition)),
            ) else {
                continue;
            };
            let body: CheckpointBody = (checkpoint, position);
            let bytes = postcard::to_allocvec(&body).expect("a checkpoint encodes");
            let write = self
                .checkpoint_rng
                .range(0, self.checkpoints.write_micros_max + 1);
            slot.writing
                .insert(*partition, (now.plus(write), bytes, body.1));
        }
        slot.next_checkpoint = now.plus(self.checkpoints.every_micros);
    }

    /// Tells `node`'s streams its safe instances (the least position of
    /// its durable checkpoints that merge each stream; 0 while a replica
    /// merging it has none) and trims its acceptor logs below what the
    /// trim quorum holds (thesis §3.4.2).
    fn trim(&mut self, node: NodeId) {
        let bug = self.bug;
        let slot = self.slots.get_mut(&node).expect("known node");
        let Some(process) = slot.process.as_mut() else {
            return;
        };
        let Some(map) = newest_map(&process.replicas) else {
            return;
        };
        // A partition moved here whose state is still to be fetched: the
        // node holds nothing of it yet and reports 0 everywhere, as the
        // node runtime does.
        let adopting = map
            .partitions_of(node)
            .iter()
            .any(|p| !process.replicas.contains_key(p));
        let streams: Vec<StreamId> = process.multicast.streams().keys().copied().collect();
        for stream in streams {
            let mut safe: Option<Instance> = adopting.then_some(Instance(0));
            for partition in process.replicas.keys() {
                let merges = process
                    .multicast
                    .merger(group_of(*partition))
                    .is_some_and(|m| m.feeds_on(stream));
                if !merges {
                    continue;
                }
                let next = slot
                    .checkpoints
                    .get(partition)
                    .and_then(|(_, p)| p.lanes.iter().find(|l| l.stream == stream))
                    .map_or(Instance(0), |l| l.next);
                safe = Some(safe.map_or(next, |s| s.min(next)));
            }
            let safe = safe.unwrap_or(Instance(0));
            let node_stream = process.multicast.stream_mut(stream).expect("listed");
            node_stream.set_safe_instance(safe);
            let point = match bug {
                DmapBug::TrimWithoutQuorum => Some(safe),
                _ => trim_point(
                    &map,
                    stream,
                    &node_stream.safe_instances(),
                    self.checkpoints.quorum,
                ),
            };
            if let Some(point) = point {
                // No further than this node's merges stand, as the node
                // runtime trims (`MulticastNode::trim_stream`).
                process.multicast.trim_stream(stream, point);
            }
        }
        self.hand_off(node);
    }

    /// Starts `node` as a new incarnation: its acceptor logs reopen; each
    /// replica it had continues from its last checkpoint (those of
    /// partitions the newest of them no longer gives the node are dropped:
    /// merged away), or the node's first partition starts from the initial
    /// state; every replica gets its streams from there on.
    fn start(&mut self, node: NodeId) {
        let now = self.now;
        let storage = self.storage;
        let slot = self.slots.get_mut(&node).expect("known node");
        slot.incarnation += 1;
        let mut restored: BTreeMap<
            PartitionId,
            (
                ReplicaCheckpoint<PartitionCheckpoint, MapReply>,
                MergePosition,
            ),
        > = BTreeMap::new();
        for (partition, (bytes, _)) in &slot.checkpoints {
            let (checkpoint, mut position): CheckpointBody =
                postcard::from_bytes(bytes).expect("a written checkpoint decodes");
            if self.bug == DmapBug::CheckpointPastPosition {
                let partition_stream = checkpoint.map.partitions[partition].stream;
                for lane in &mut position.lanes {
                    if lane.stream == partition_stream {
                        lane.next = lane.next.next();
                    }
                }
            }
            restored.insert(*partition, (checkpoint, position));
        }
        let newest = restored
            .values()
            .map(|(c, _)| &c.map)
            .max_by_key(|m| m.version)
            .cloned();
        if let Some(map) = &newest {
            let mut mine = map.partitions_of(node);
            mine.extend(map.leaving(node));
            restored.retain(|p, _| mine.contains(p));
            slot.checkpoints.retain(|p, _| mine.contains(p));
        }
        let mut streams: Vec<(StreamConfig, Box<dyn amulet_storage::AcceptorLog>)> = self
            .configs
            .iter()
            .filter(|c| slot.stores.contains_key(&c.stream))
            .map(|c| (c.clone(), slot.stores[&c.stream].open()))
            .collect();
        if let Some(map) = &newest {
            for spec in map.streams.values() {
                if spec.members().contains(&node)
                    && !streams.iter().any(|(c, _)| c.stream == spec.stream)
                {
                    let config = sim_stream_config(spec, storage);
                    let store = slot
                        .stores
                        .entry(spec.stream)
                        .or_insert_with(|| store_for(&slot.node_disk, storage, spec.stream));
                    streams.push((config, store.open()));
                }
            }
        }
        // The node's partition of the initial map starts afresh (replaying
        // its streams) when it has no checkpoint, unless the newest map
        // says it was merged away: a node may hold only the checkpoint of
        // a partition split off at a fence (written at the fork).
        let home = slot.partition;
        let mut partitions: Vec<PartitionId> = restored.keys().copied().collect();
        if self.verbose {
            println!(
                "t={}us node {node} starts from checkpoints of {:?} (newest map v{:?})",
                now.0,
                partitions,
                newest.as_ref().map(|m| m.version.0)
            );
        }
        let home_alive = newest
            .as_ref()
            .is_none_or(|m| m.partitions_of(node).contains(&home));
        if !restored.contains_key(&home) && home_alive {
            partitions.push(home);
        }
        let groups = partitions
            .iter()
            .map(|p| {
                let streams = match restored.get(p) {
                    Some((_, position)) => position.lanes.iter().map(|l| l.stream).collect(),
                    None => {
                        let map = &self.initial_map;
                        vec![map.global_stream, map.partitions[p].stream]
                    }
                };
                (group_of(*p), streams)
            })
            .collect();
        let mut multicast =
            MulticastNode::with_groups(node, streams, groups, slot.incarnation, now);
        let mut replicas = BTreeMap::new();
        for partition in partitions {
            let config = ReplicaConfig::new(node, slot.incarnation, partition);
            let mut replica = match restored.remove(&partition) {
                Some((checkpoint, position)) => {
                    multicast
                        .restore_group(group_of(partition), &position)
                        .expect("the checkpoint's streams are the node's");
                    self.restores += 1;
                    Replica::restore(config, checkpoint, self.initial_state.clone())
                        .expect("the checkpoint is of this partition")
                }
                None => Replica::new(config, self.initial_map.clone(), self.initial_state.clone()),
            };
            replica.set_bug_complete_without_signals(self.bug == DmapBug::CompleteWithoutSignals);
            replica.set_bug_answer_reads_locally(self.bug == DmapBug::AnswerReadsLocally);
            replicas.insert(partition, replica);
        }
        slot.process = Some(NodeProcess {
            multicast,
            replicas,
            pending: BTreeMap::new(),
        });
    }

    fn deliver(&mut self, from: NodeId, to: NodeId, message: SimMessage) {
        let now = self.now;
        if to.0 >= CLIENT_ENDPOINT_BASE {
            let client = (to.0 - CLIENT_ENDPOINT_BASE) as usize;
            match message {
                SimMessage::Reply { tag, reply } if client < self.clients.len() => {
                    self.client_reply(client, tag, reply);
                }
                SimMessage::Reply { reply, .. } if self.verbose => {
                    println!("t={}us operator: {reply:?}", now.0);
                }
                _ => {}
            }
            return;
        }
        let Some(process) = self.slots.get_mut(&to).and_then(|s| s.process.as_mut()) else {
            return;
        };
        match message {
            SimMessage::Paxos(envelope) => process.multicast.on_message(now, from, envelope),
            SimMessage::Replica(message) if !message.is_signal() => self.on_transfer(to, message),
            SimMessage::Replica(message) => {
                for replica in process.replicas.values_mut() {
                    replica.on_message(message.clone());
                }
            }
            SimMessage::Request {
                tag,
                partition,
                request,
            } => {
                let partition = partition.or_else(|| process.replicas.keys().next().copied());
                match partition.and_then(|p| process.replicas.get_mut(&p).map(|r| (p, r))) {
                    Some((partition, replica)) => {
                        let id = replica.submit(now.0, request);
                        process.pending.insert((partition, id), (from, tag));
                    }
                    None => {
                        // A node whose replicas all moved away knows no
                        // map any more: the client tries another.
                        let reply = match newest_map(&process.replicas) {
                            Some(map) => ClientReply::NotAReplica(Box::new(map)),
                            None => ClientReply::Behind,
                        };
                        self.network
                            .send(now, to, from, SimMessage::Reply { tag, reply });
                    }
                }
            }
            SimMessage::Reply { .. } => {}
        }
        self.flush(to);
    }

    fn tick(&mut self, issuing: bool) {
        let now = self.now;
        if issuing && self.operator.as_ref().is_some_and(|o| now >= o.next) {
            self.reconfigure();
        }
        let sync_async = now.0.is_multiple_of(ASYNC_SYNC_MICROS);
        let nodes: Vec<NodeId> = self.slots.keys().copied().collect();
        for node in nodes {
            let Some(process) = self.slots.get_mut(&node).and_then(|s| s.process.as_mut()) else {
                continue;
            };
            process.multicast.tick(now);
            for replica in process.replicas.values_mut() {
                replica.tick(now.0);
            }
            if sync_async {
                sync_logs(&mut process.multicast);
            }
            self.flush(node);
            self.checkpoint(node);
            self.trim(node);
            self.request_checkpoint(node);
        }
        for c in 0..self.clients.len() {
            self.read_snapshot(c);
            let send = self.clients[c].tick(now.0, issuing, &mut self.client_rng, &mut self.calls);
            if let Some(send) = send {
                self.send_request(c, send);
            }
        }
    }

    fn send_request(&mut self, client: usize, send: Send) {
        let from = self.clients[client].endpoint;
        let message = SimMessage::Request {
            tag: send.tag,
            partition: send.partition,
            request: send.request,
        };
        self.network.send(self.now, from, send.to, message);
    }

    fn client_reply(&mut self, client: usize, tag: u64, reply: ClientReply<MapReply>) {
        let result = self.clients[client].on_reply(
            self.now.0,
            tag,
            reply,
            self.healed,
            &mut self.client_rng,
            &mut self.calls,
        );
        match result {
            Ok(Some(send)) => self.send_request(client, send),
            Ok(None) => {}
            Err(message) => self.violations.push(Violation::new(
                Property::Linearizability,
                format!("client {client}: {message}"),
            )),
        }
    }

    /// A client reading a snapshot takes every partition's pages from a
    /// live replica that executed the snapshot's opening. Snapshots never
    /// change, so the pages are read directly (no ordering, no network).
    fn read_snapshot(&mut self, client: usize) {
        let Phase::Reading {
            call,
            snapshot,
            opened_at,
            partitions,
        } = self.clients[client].phase.clone()
        else {
            return;
        };
        let mut entries = Vec::new();
        for partition in partitions {
            let ready = self.slots.values().find_map(|slot| {
                let replica = slot.process.as_ref()?.replicas.get(&partition)?;
                (replica.global_position() >= snapshot
                    && !replica.state().snapshot_held_elsewhere(snapshot))
                .then_some(replica)
            });
            let Some(replica) = ready else {
                // Every replica of the partition restored from a checkpoint
                // taken after the opening: nobody holds the pages.
                let gone = self.slots.values().all(|slot| {
                    slot.process.as_ref().is_none_or(|p| {
                        p.replicas
                            .get(&partition)
                            .is_none_or(|r| r.state().snapshot_held_elsewhere(snapshot))
                    })
                });
                if gone {
                    let now = self.now.0;
                    self.clients[client].abandon_scan(now, &mut self.client_rng);
                }
                return; // try again next tick
            };
            let mut after: Option<Bytes> = None;
            loop {
                match replica.state().snapshot_page(snapshot, after.as_deref(), 2) {
                    Ok(page) => {
                        after = page.entries.last().map(|(k, _)| k.clone());
                        entries.extend(page.entries);
                        if !page.more {
                            break;
                        }
                    }
                    Err(error) => {
                        self.violations.push(Violation::new(
                            Property::Linearizability,
                            format!("snapshot {snapshot} unreadable at {partition}: {error}"),
                        ));
                        self.clients[client].phase = Phase::Thinking { until: u64::MAX };
                        return;
                    }
                }
            }
        }
        entries.sort_by(|a, b| a.0.cmp(&b.0));
        let now = self.now.0;
        let healed = self.healed;
        self.clients[client].scanned(
            now,
            healed,
            &mut self.client_rng,
            &mut self.calls[call],
            entries,
            opened_at,
        );
        // Release it; release is idempotent, so no session is needed.
        let version = self.clients[client].map.version;
        let to = self.initial_map.partitions[&PartitionId(1)].replicas[0];
        let request = ClientRequest {
            map_version: version,
            session: None,
            body: amulet_smr::Body::App(MapCommand::ReleaseSnapshot { snapshot }),
        };
        let from = self.clients[client].endpoint;
        let message = SimMessage::Request {
            tag: 0,
            partition: None,
            request,
        };
        self.network.send(self.now, from, to, message);
    }

    /// Moves a node's outputs along until it is quiet: multicast
    /// deliveries feed the replicas, whose proposals feed the multicast;
    /// merges stopped at a barrier's fence are reconfigured and released
    /// once their replicas executed everything before it.
    fn flush(&mut self, node: NodeId) {
        let now = self.now;
        let storage = self.storage;
        for round in 0.. {
            // A node's outputs settle in a few rounds; one that keeps
            // producing is a livelock of the node (an invariant, not a
            // simulator hang).
            assert!(
                round < FLUSH_ROUNDS_MAX,
                "node {node} never settles: a livelock"
            );
            let Some(slot) = self.slots.get_mut(&node) else {
                return;
            };
            let incarnation = slot.incarnation;
            let Some(process) = slot.process.as_mut() else {
                return;
            };
            let mut effects = process.multicast.drain();
            if !effects.sends_after_sync.is_empty() {
                sync_logs(&mut process.multicast);
            }
            for (group, merged) in &effects.delivered {
                if let Some(replica) = process.replicas.get_mut(&PartitionId(group.0)) {
                    replica.on_deliver(merged.stream, &merged.value.bytes);
                }
            }
            let mut replies = Vec::new();
            let mut proposed = false;
            for (partition, replica) in process.replicas.iter_mut() {
                for output in replica.drain() {
                    match output {
                        Output::Propose {
                            stream,
                            value,
                            barrier,
                        } => {
                            let kind = if barrier {
                                ValueKind::Barrier
                            } else {
                                ValueKind::Application
                            };
                            // A refusal (queue full) is retried by the client.
                            let _ = process.multicast.multicast_kind(now, stream, kind, value);
                            proposed = true;
                        }
                        Output::Send { to, message } => {
                            replies.push((to, SimMessage::Replica(message)));
                        }
                        Output::Reply { request, reply } => {
                            if let Some((client, tag)) =
                                process.pending.remove(&(*partition, request))
                            {
                                replies.push((client, SimMessage::Reply { tag, reply }));
                            }
                        }
                    }
                }
            }
            let state = self.initial_state.clone();
            let new_state = || state.clone();
            let stream_config = |spec: &StreamSpec| sim_stream_config(spec, storage);
            let stores = &mut slot.stores;
            let node_disk = &slot.node_disk;
            let mut open_log = |config: &StreamConfig| -> Box<dyn amulet_storage::AcceptorLog> {
                stores
                    .entry(config.stream)
                    .or_insert_with(|| store_for(node_disk, storage, config.stream))
                    .open()
            };
            let mut host = FenceHost {
                me: node,
                incarnation,
                new_state: &new_state,
                stream_config: &stream_config,
                open_log: &mut open_log,
                now,
            };
            let done = work_fences(&mut process.multicast, &mut process.replicas, &mut host);
            for (partition, position) in &done.added {
                if self.bug == DmapBug::SplitWithoutTransfer {
                    let replica = &process.replicas[partition];
                    let mut checkpoint = replica.checkpoint().expect("a forked replica is idle");
                    checkpoint.state = amulet_smr::StateMachine::checkpoint(&self.initial_state);
                    let config = ReplicaConfig::new(node, incarnation, *partition);
                    let empty = Replica::restore(config, checkpoint, self.initial_state.clone())
                        .expect("a checkpoint of the same partition");
                    process.replicas.insert(*partition, empty);
                }
                // The new partition's checkpoint at the fork is durable at
                // once: a restart must find it (its source's later
                // checkpoints are past the fork).
                let replica = &process.replicas[partition];
                let body: CheckpointBody = (
                    replica.checkpoint().expect("a forked replica is idle"),
                    position.clone(),
                );
                let bytes = postcard::to_allocvec(&body).expect("a checkpoint encodes");
                slot.checkpoints.insert(*partition, (bytes, body.1));
            }
            for (partition, position) in &done.absorbed {
                // Durable before the merged partition's checkpoint goes.
                let replica = &process.replicas[partition];
                let body: CheckpointBody = (
                    replica
                        .checkpoint()
                        .expect("a replica at its fence is idle"),
                    position.clone(),
                );
                let bytes = postcard::to_allocvec(&body).expect("a checkpoint encodes");
                slot.checkpoints.insert(*partition, (bytes, body.1));
                slot.writing.remove(partition);
            }
            for partition in &done.removed {
                slot.checkpoints.remove(partition);
                slot.writing.remove(partition);
                process.pending.retain(|(p, _), _| p != partition);
            }
            if self.verbose && done.released > 0 {
                println!(
                    "t={}us node {node} fences released={} added={:?} removed={:?} streams={:?} versions={:?}",
                    now.0,
                    done.released,
                    done.added.iter().map(|(p, _)| p).collect::<Vec<_>>(),
                    done.removed,
                    done.created,
                    process
                        .replicas
                        .iter()
                        .map(|(p, r)| (p.0, r.map().version.0, r.global_position()))
                        .collect::<Vec<_>>()
                );
                if let Ok(key) = std::env::var("DBG_KEY") {
                    for (p, r) in &process.replicas {
                        let cp = amulet_smr::StateMachine::checkpoint(r.state());
                        let keys: Vec<String> = cp
                            .maps
                            .values()
                            .flat_map(|m| m.keys().map(|k| String::from_utf8_lossy(k).to_string()))
                            .collect();
                        eprintln!(
                            "DEBUGS t={} {node} {p} keys={keys:?} has_{key}={}",
                            now.0,
                            keys.contains(&key)
                        );
                    }
                }
            }
            self.reconfigured += done.added.len() as u64 + done.removed.len() as u64;
            let quiet = effects.delivered.is_empty() && !proposed && done.released == 0;
            for (to, envelope) in effects
                .sends
                .drain(..)
                .chain(effects.sends_after_sync.drain(..))
            {
                self.network
                    .send(now, node, to, SimMessage::Paxos(envelope));
            }
            for (to, message) in replies {
                self.network.send(now, node, to, message);
            }
            if quiet {
                return;
            }
        }
    }

    fn outcome(mut self) -> SeedOutcome {
        if let Ok(key) = std::env::var("DBG_KEY") {
            for c in &self.calls {
                let text = format!("{:?}", c.op);
                if text.contains(&format!("b\"{key}\""))
                    || text.contains("Size")
                    || text.contains("PutAll")
                    || text.contains("Clear")
                {
                    eprintln!(
                        "DEBUGK {} {:?} {} -> {:?}",
                        c.invoke,
                        c.complete,
                        text.chars().take(90).collect::<String>(),
                        format!("{:?}", c.result)
                            .chars()
                            .take(100)
                            .collect::<String>()
                    );
                }
            }
        }
        self.check_progress();
        let verdict =
            linearizability::check(SortedMapModel::default(), &self.calls, CHECK_STEP_BUDGET);
        match verdict {
            Verdict::Linearizable => {}
            Verdict::NotLinearizable { deepest, stuck_at } => {
                let mut sorted: Vec<&Call<MapOp, Observed>> = self.calls.iter().collect();
                sorted.sort_by_key(|c| c.invoke);
                let call = sorted.get(stuck_at);
                self.violations.push(Violation::new(
                    Property::Linearizability,
                    format!(
                        "no linearization of {} calls; the deepest order placed {deepest} completed calls, then could not place {call:?}",
                        self.calls.len()
                    ),
                ));
            }
            Verdict::Unknown => self.violations.push(Violation::new(
                Property::Linearizability,
                format!(
                    "checker gave up after {CHECK_STEP_BUDGET} steps on {} calls",
                    self.calls.len()
                ),
            )),
        }
        if self.verbose {
            let completed = self.calls.iter().filter(|c| c.complete.is_some()).count();
            let versions: Vec<u64> = self
                .slots
                .values()
                .filter_map(|s| s.process.as_ref())
                .filter_map(|p| newest_map(&p.replicas))
                .map(|m| m.version.0)
                .collect();
            println!(
                "calls={} completed={completed} violations={} map versions at the end={versions:?}",
                self.calls.len(),
                self.violations.len()
            );
            for (node, slot) in &self.slots {
                let Some(p) = slot.process.as_ref() else {
                    println!("node {node}: down");
                    continue;
                };
                for (partition, r) in &p.replicas {
                    println!(
                        "node {node} {partition}: global_position={} queued={} waiting={} pending={:?} fenced={:?}",
                        r.global_position(),
                        r.queued(),
                        r.is_waiting(),
                        r.pending_reconfiguration(),
                        p.multicast.fenced(group_of(*partition)),
                    );
                }
                for (stream, s) in p.multicast.streams() {
                    println!(
                        "  {stream:?} trimmed_below={} learner_trimmed={:?} {}",
                        s.trimmed_below(),
                        s.learner_trimmed(),
                        s.debug_state()
                    );
                }
            }
        }
        SeedOutcome {
            violations: self.violations,
            trace_hash: self.trace.value(),
            stats: SeedStats {
                values_proposed: self.calls.len() as u64,
                deliveries: self.calls.iter().filter(|c| c.complete.is_some()).count() as u64,
                learner_incarnations: self.slots.values().map(|s| u64::from(s.incarnation)).sum(),
                checkpoint_restores: self.restores,
                state_transfers: self.transfers,
                hand_offs: self.hand_offs,
                trimmed_instances: self
                    .slots
                    .values()
                    .filter_map(|s| s.process.as_ref())
                    .flat_map(|p| p.multicast.streams().values())
                    .map(|s| s.trimmed_below().0)
                    .sum(),
                subscription_changes: self.reconfigured,
                virtual_micros: self.now.0,
                trace_events: self.trace.events(),
                network: self.network.stats(),
                nemesis: self.nemesis.stats(),
            },
        }
    }

    /// After healing every client completes operations, and the last one
    /// each started has completed by the end.
    fn check_progress(&mut self) {
        for (node, slot) in &self.slots {
            let Some(process) = slot.process.as_ref() else {
                continue;
            };
            // A stream retired by a reconfiguration is merged by no group:
            // its learner may stay behind for good.
            let retired = newest_map(&process.replicas)
                .map(|m| m.retired_streams)
                .unwrap_or_default();
            for (stream, s) in process.multicast.streams() {
                // Nor does a stream no replica here merges any more (the
                // node's replicas of it moved away).
                let merged = process.replicas.keys().any(|p| {
                    process
                        .multicast
                        .merger(group_of(*p))
                        .is_some_and(|m| m.feeds_on(*stream))
                });
                if retired.contains(stream) || !merged {
                    continue;
                }
                if let Some(below) = s.learner_trimmed() {
                    self.violations.push(Violation::new(
                        Property::Progress,
                        format!(
                            "node {node}: stream {stream:?} was trimmed below {below} past its learner; it cannot catch up"
                        ),
                    ));
                }
            }
        }
        for (c, client) in self.clients.iter().enumerate() {
            let idle = matches!(client.phase, Phase::Thinking { .. });
            if client.completed_after_heal == 0 || !idle {
                self.violations.push(Violation::new(
                    Property::Progress,
                    format!(
                        "client {c} completed {} operations after healing and ends in {:?}",
                        client.completed_after_heal, client.phase
                    ),
                ));
            }
        }
    }
}

/// The configuration of a stream created at run time in the simulator.
fn sim_stream_config(spec: &StreamSpec, storage: StorageMode) -> StreamConfig {
    StreamConfig {
        stream: spec.stream,
        acceptors: spec.acceptors.clone(),
        learners: spec.learners.clone(),
        storage,
        limits: sim_limits(),
        base_position: spec.base_position,
    }
}

fn message_digest(message: &SimMessage) -> u64 {
    match message {
        SimMessage::Paxos(envelope) => envelope_digest(envelope),
        SimMessage::Replica(m) => TraceHash::digest(&(1u8, m.encode().to_vec())),
        SimMessage::Request { tag, request, .. } => {
            TraceHash::digest(&(2u8, *tag, request.map_version.0))
        }
        SimMessage::Reply { tag, .. } => TraceHash::digest(&(3u8, *tag)),
    }
}
