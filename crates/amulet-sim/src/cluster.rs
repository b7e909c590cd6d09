//! The Ring Paxos cluster under simulation: several streams, each with its
//! acceptors and learners, every node a real [`MulticastNode`] (the same
//! code the node process runs), stepped in virtual time over the faulty
//! [`Network`], crashed and restarted by the [`Nemesis`], its deliveries
//! recorded in a [`History`] for the checkers.
//!
//! One seed draws the topology (3 or 5 acceptors, 1–3 streams, extra
//! learner-only nodes subscribing to subsets), the storage mode, the fault
//! mix and the workload. Nothing else is random and nothing reads the
//! clock, so a seed replays exactly.

use crate::checker;
use crate::history::History;
use crate::nemesis::{next_instant, CrashGroup, FaultEvent, Nemesis, NemesisConfig};
use crate::network::Network;
use crate::rng::Rng;
use crate::runner::{SeedOutcome, SeedStats};
use crate::sim_log::{crash_stores, store_for, NodeDisk, SimStore};
use crate::swarm::SwarmOptions;
use crate::trace::TraceHash;
use amulet_multicast::{GroupId, MergeBug, MulticastNode};
use amulet_paxos::Bugs;
use amulet_types::{
    Ballot, NodeId, StorageMode, StreamConfig, StreamId, StreamLimits, TimeMicros, ValueId,
};
use amulet_wire::{Batch, Envelope, Message};
use bytes::Bytes;
use std::collections::{BTreeMap, BTreeSet};

/// Virtual micros between two ticks of every node.
const TICK_MICROS: u64 = 1_000;
/// How often async-durable logs are synced in the background.
const ASYNC_SYNC_MICROS: u64 = 5_000;
/// Probability per tick that some node multicasts a value.
const PROPOSE_PROBABILITY: f64 = 0.05;
/// Trace event kinds.
const TRACE_MESSAGE: u8 = 0;
const TRACE_FAULT: u8 = 1;
const TRACE_PROPOSE: u8 = 2;
const TRACE_DELIVER: u8 = 3;

/// Deliberately broken variants the cluster can run with.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Bug {
    /// The correct protocol.
    #[default]
    None,
    /// Acceptors restart with their promises forgotten (votes kept).
    ForgetPromiseOnRestart,
    /// Memory-mode acceptors come back from a crash with an empty log and
    /// vote again, as if the log were intact.
    AmnesiacAcceptorVotes,
    /// Learners deliver on phase 2, before the decision.
    DeliverBeforeDecision,
    /// New coordinators ignore phase 1 votes.
    IgnorePhase1Votes,
    /// The lowest-numbered learner's merge counts a skip as one instance.
    MergeIgnoresSkipCounts,
}

/// One node's slot: its storage (which outlives its processes) and its
/// running process, if up.
struct Slot {
    stores: BTreeMap<StreamId, SimStore>,
    /// Per stream, the highest promise the node's log vouched for at a
    /// sync (durable from then on in every durable mode): a voting
    /// acceptor that restarts must come back promising at least that
    /// (Paxos: an acceptor never goes back on a promise).
    vouched: BTreeMap<StreamId, Ballot>,
    incarnation: u32,
    process: Option<MulticastNode>,
    /// Streams this node learns and merges.
    subscriptions: BTreeSet<StreamId>,
}

/// The cluster of one seed.
pub struct Cluster {
    options: SwarmOptions,
    bug: Bug,
    verbose: bool,
    configs: Vec<StreamConfig>,
    workload: Rng,
    disk_rng: Rng,
    network: Network<Envelope>,
    nemesis: Nemesis,
    slots: BTreeMap<NodeId, Slot>,
    history: History,
    trace: TraceHash,
    now: TimeMicros,
    bug_learner: Option<NodeId>,
    /// With verbose runs, every message of this stream is printed
    /// (`AMULET_SIM_TRACE_STREAM=N`).
    trace_stream: Option<u32>,
}

/// Runs one seed with the fault mix it draws.
pub fn run_seed(seed: u64, verbose: bool, bug: Bug) -> SeedOutcome {
    let mut rng = Rng::new(seed);
    let options = SwarmOptions::draw(&mut rng);
    run_with(seed, options, bug, verbose)
}

/// Runs one seed with the given fault mix (tests force mixes this way).
pub fn run_with(seed: u64, options: SwarmOptions, bug: Bug, verbose: bool) -> SeedOutcome {
    if verbose {
        println!("seed={seed} bug={bug:?} options={options:#?}");
    }
    let mut cluster = Cluster::new(seed, options, bug, verbose);
    cluster.run();
    cluster.outcome()
}

/// The limits the simulated streams run with: the defaults, except a
/// memory ring large enough that a learner restarting from instance 0 can
/// always catch up within a run (trimming is exercised by storage tests).
pub(crate) fn sim_limits() -> StreamLimits {
    StreamLimits {
        memory_ring_slots: 1 << 20,
        ..StreamLimits::default()
    }
}

/// Draws the topology: stream configurations over nodes `1..`.
fn draw_topology(rng: &mut Rng, storage: StorageMode) -> (Vec<StreamConfig>, Vec<NodeId>) {
    let acceptor_count = if rng.chance(0.7) { 3 } else { 5 };
    let acceptors: Vec<NodeId> = (1..=acceptor_count).map(NodeId).collect();
    let extra_learners: Vec<NodeId> = (0..rng.range(0, 2) as u32)
        .map(|i| NodeId(acceptor_count + 1 + i))
        .collect();
    let stream_count = rng.range(1, 3) as u32;
    let mut configs = Vec::new();
    for s in 0..stream_count {
        let mut stream_acceptors = acceptors.clone();
        if acceptor_count == 5 && rng.chance(0.5) {
            rng.shuffle(&mut stream_acceptors);
            stream_acceptors.truncate(3);
            stream_acceptors.sort();
        }
        let mut learners = stream_acceptors.clone();
        for learner in &extra_learners {
            // The first stream has every extra learner, so each subscribes
            // to something; later streams take a random subset.
            if s == 0 || rng.chance(0.6) {
                learners.push(*learner);
            }
        }
        configs.push(StreamConfig {
            stream: StreamId(s + 1),
            acceptors: stream_acceptors,
            learners,
            storage,
            limits: sim_limits(),
            base_position: 0,
        });
    }
    let nodes = acceptors.into_iter().chain(extra_learners).collect();
    (configs, nodes)
}

impl Cluster {
    fn new(seed: u64, options: SwarmOptions, bug: Bug, verbose: bool) -> Cluster {
        let mut rng = Rng::new(seed ^ 0x7269_6E67); // Independent of the options' draw.
        let storage = match rng.below(3) {
            _ if bug == Bug::AmnesiacAcceptorVotes => StorageMode::Memory,
            0 => StorageMode::Memory,
            1 => StorageMode::AsyncDurable,
            _ => StorageMode::SyncDurable,
        };
        let (configs, nodes) = draw_topology(&mut rng, storage);
        if verbose {
            println!("storage={storage:?} streams={configs:#?}");
        }
        let mut slots = BTreeMap::new();
        for &node in &nodes {
            let subscriptions: BTreeSet<StreamId> = configs
                .iter()
                .filter(|c| c.members().contains(&node))
                .map(|c| c.stream)
                .collect();
            // Odd seeds keep every durable stream of a node in one
            // node-wide log, as the real node does; even seeds a log per
            // stream. Drawn from the seed, not the rng, so the rest of the
            // seed's scenario is the same either way.
            let node_disk = NodeDisk::new(storage).filter(|_| seed % 2 == 1);
            let stores = configs
                .iter()
                .filter(|c| c.members().contains(&node))
                .map(|c| (c.stream, store_for(&node_disk, storage, c.stream)))
                .collect();
            slots.insert(
                node,
                Slot {
                    stores,
                    vouched: BTreeMap::new(),
                    incarnation: 0,
                    process: None,
                    subscriptions,
                },
            );
        }
        let acceptors: BTreeSet<NodeId> = configs
            .iter()
            .flat_map(|c| c.acceptors.iter().copied())
            .collect();
        let config = NemesisConfig {
            storage: acceptors.iter().map(|n| (*n, storage)).collect(),
            groups: configs
                .iter()
                .map(|c| CrashGroup::minority(c.acceptors.clone()))
                .collect(),
            down_max: nodes.len() / 2,
            nodes: nodes.clone(),
        };
        let safety_end = TimeMicros(options.safety_phase_micros);
        let nemesis = Nemesis::new(config, options.faults.clone(), safety_end, rng.fork());
        let network = Network::new(options.network.clone(), rng.fork());
        let bug_learner = (bug == Bug::MergeIgnoresSkipCounts).then(|| nodes[0]);
        let mut cluster = Cluster {
            options,
            bug,
            verbose,
            configs,
            workload: rng.fork(),
            disk_rng: rng.fork(),
            network,
            nemesis,
            slots,
            history: History::new(),
            trace: TraceHash::new(),
            now: TimeMicros(0),
            bug_learner,
            trace_stream: verbose
                .then(|| std::env::var("AMULET_SIM_TRACE_STREAM").ok())
                .flatten()
                .and_then(|s| s.parse().ok()),
        };
        for node in nodes {
            cluster.start(node);
        }
        cluster
    }

    fn run(&mut self) {
        let safety_end = self.options.safety_phase_micros;
        let end = TimeMicros(safety_end + self.options.liveness_phase_micros);
        // Stop proposing halfway through the healed phase so that what was
        // proposed has time to reach everyone.
        let propose_until = TimeMicros(safety_end + self.options.liveness_phase_micros / 2);
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
            for (from, to, envelope) in self.network.deliver_due(next) {
                let digest = envelope_digest(&envelope);
                if self.trace_stream == Some(envelope.stream.0) {
                    println!("t={} {from}->{to} {:?}", next.0, envelope.message);
                }
                self.trace.event(next, TRACE_MESSAGE, from, to, digest);
                if let Some(process) = self.process_mut(to) {
                    process.on_message(next, from, envelope);
                    self.flush(to);
                }
            }
            if next_tick <= next {
                self.tick(next < propose_until);
                next_tick = next_tick.plus(TICK_MICROS);
            }
        }
        self.now = end;
        self.history.finished(end);
    }

    fn outcome(self) -> SeedOutcome {
        let violations = checker::check_all(&self.history);
        let stats = SeedStats {
            values_proposed: self.history.proposals().len() as u64,
            deliveries: self.history.delivery_count() as u64,
            learner_incarnations: self.history.learners().len() as u64,
            checkpoint_restores: 0,
            trimmed_instances: 0,
            state_transfers: 0,
            hand_offs: 0,
            subscription_changes: 0,
            virtual_micros: self.now.0,
            trace_events: self.trace.events(),
            network: self.network.stats(),
            nemesis: self.nemesis.stats(),
        };
        if self.verbose {
            println!("stats={stats:#?}");
            for (node, slot) in &self.slots {
                let Some(process) = slot.process.as_ref() else {
                    continue;
                };
                for (stream, s) in process.streams() {
                    println!(
                        "end {node} {stream}: decided_below={} coordinator={} voting={} in_flight={} merge_next={:?} waiting_on={:?} stats={:?}",
                        s.decided_below().0,
                        s.is_coordinator(),
                        s.is_voting(),
                        s.proposals_in_flight(),
                        process.merger(GroupId(0)).and_then(|m| m.next_instance(*stream)),
                        process.merger(GroupId(0)).and_then(|m| m.waiting_on()),
                        s.stats(),
                    );
                    println!("    {}", s.debug_state());
                }
            }
        }
        SeedOutcome {
            violations,
            trace_hash: self.trace.value(),
            stats,
        }
    }

    fn coordinators(&self) -> Vec<NodeId> {
        self.slots
            .iter()
            .filter(|(_, slot)| slot.process.as_ref().is_some_and(|p| p.coordinates_any()))
            .map(|(node, _)| *node)
            .collect()
    }

    fn process_mut(&mut self, node: NodeId) -> Option<&mut MulticastNode> {
        self.slots.get_mut(&node).and_then(|s| s.process.as_mut())
    }

    fn apply(&mut self, event: FaultEvent) {
        if self.verbose {
            println!("t={}us fault {event:?}", self.now.0);
        }
        let digest = TraceHash::digest_debug(&event);
        self.trace
            .event(self.now, TRACE_FAULT, NodeId(0), NodeId(0), digest);
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
                self.history.healed(self.now);
            }
        }
    }

    fn crash(&mut self, node: NodeId) {
        self.network.drop_to(node);
        let slot = self.slots.get_mut(&node).expect("known node");
        slot.process
            .take()
            .expect("the nemesis crashes only nodes that are up");
        self.history.proposer_crashed(node, slot.incarnation);
        self.history.learner_crashed(node);
    }

    fn start(&mut self, node: NodeId) {
        let now = self.now;
        let slot = self.slots.get_mut(&node).expect("known node");
        slot.incarnation += 1;
        if self.bug == Bug::AmnesiacAcceptorVotes {
            for store in slot.stores.values() {
                store.pretend_intact();
            }
        }
        let streams = self
            .configs
            .iter()
            .filter(|c| slot.stores.contains_key(&c.stream))
            .map(|c| (c.clone(), slot.stores[&c.stream].open()))
            .collect();
        let mut process = MulticastNode::new(node, streams, slot.incarnation, now);
        let restarted = slot.incarnation > 1;
        let bugs = match self.bug {
            Bug::ForgetPromiseOnRestart => Bugs {
                forget_promise_on_restart: restarted,
                ..Bugs::default()
            },
            Bug::DeliverBeforeDecision => Bugs {
                deliver_before_decision: true,
                ..Bugs::default()
            },
            Bug::IgnorePhase1Votes => Bugs {
                ignore_phase1_votes: true,
                ..Bugs::default()
            },
            Bug::None | Bug::MergeIgnoresSkipCounts | Bug::AmnesiacAcceptorVotes => Bugs::default(),
        };
        process.set_bugs(bugs);
        for (stream, s) in process.streams() {
            let vouched = slot.vouched.get(stream).copied().unwrap_or(Ballot::ZERO);
            if let Some(promised) = s.promised() {
                assert!(
                    promised >= vouched,
                    "{node} restarted as a voting acceptor of {stream} promising {promised}, \
                     below the {vouched} its log made durable: it went back on a promise"
                );
            }
        }
        if self.bug_learner == Some(node) {
            process.set_merge_bug(MergeBug::IgnoreSkipCounts);
        }
        slot.process = Some(process);
        let subscriptions = slot.subscriptions.clone();
        let incarnation = slot.incarnation;
        self.history
            .learner_started(now, node, incarnation, subscriptions);
    }

    fn tick(&mut self, proposing: bool) {
        let now = self.now;
        if proposing && self.workload.chance(PROPOSE_PROBABILITY) {
            self.propose();
        }
        let sync_async = now.0.is_multiple_of(ASYNC_SYNC_MICROS);
        let nodes: Vec<NodeId> = self.slots.keys().copied().collect();
        for node in nodes {
            let Some(process) = self.process_mut(node) else {
                continue;
            };
            process.tick(now);
            if sync_async {
                sync_logs(process);
                self.vouch(node);
            }
            self.flush(node);
        }
    }

    /// A random live node multicasts a fresh value to one of its streams.
    fn propose(&mut self) {
        let now = self.now;
        let up: Vec<NodeId> = self
            .slots
            .iter()
            .filter(|(_, s)| s.process.is_some())
            .map(|(n, _)| *n)
            .collect();
        let Some(&node) = self.workload.pick(&up) else {
            return;
        };
        let slot = self.slots.get_mut(&node).expect("picked from slots");
        let streams: Vec<StreamId> = slot.subscriptions.iter().copied().collect();
        let Some(&stream) = self.workload.pick(&streams) else {
            return;
        };
        let payload = Bytes::from(self.workload.next_u64().to_le_bytes().to_vec());
        let incarnation = slot.incarnation;
        let process = slot.process.as_mut().expect("picked among live nodes");
        if let Ok(id) = process.multicast(now, stream, payload) {
            self.trace.event(
                now,
                TRACE_PROPOSE,
                node,
                node,
                TraceHash::digest(&(id.sequence, stream.0)),
            );
            let name = history_name(stream, id);
            self.history
                .propose(now, name, BTreeSet::from([stream]), node, incarnation);
        }
        self.flush(node);
    }

    /// Records the promises `node`'s logs just made durable.
    fn vouch(&mut self, node: NodeId) {
        let slot = self.slots.get_mut(&node).expect("known node");
        let Some(process) = slot.process.as_ref() else {
            return;
        };
        for (stream, s) in process.streams() {
            // A memory log makes nothing durable: it vouches for nothing.
            if s.config().storage == StorageMode::Memory {
                continue;
            }
            if let Some(promised) = s.promised() {
                let entry = slot.vouched.entry(*stream).or_insert(promised);
                *entry = (*entry).max(promised);
            }
        }
    }

    /// Hands a process' effects to the network and the history. Messages
    /// that must wait for durability leave after the node's logs synced.
    fn flush(&mut self, node: NodeId) {
        let now = self.now;
        let Some(process) = self.process_mut(node) else {
            return;
        };
        let mut effects = process.drain();
        let synced = !effects.sends_after_sync.is_empty();
        if synced {
            sync_logs(process);
            self.vouch(node);
        }
        for (_, merged) in &effects.delivered {
            let digest = TraceHash::digest(&(merged.stream.0, merged.value.id.sequence));
            self.trace.event(now, TRACE_DELIVER, node, node, digest);
            let name = history_name(merged.stream, merged.value.id);
            self.history.deliver(node, merged.stream, name);
        }
        for (to, envelope) in effects
            .sends
            .drain(..)
            .chain(effects.sends_after_sync.drain(..))
        {
            self.network.send(now, node, to, envelope);
        }
    }
}

/// The name of a value in the history. Value ids are unique within a
/// stream (each stream's proposer numbers its values densely, which keeps
/// learners' duplicate filters compact), so the history names a value by
/// its stream and id, folded into one id: streams number below 256 here.
fn history_name(stream: StreamId, id: ValueId) -> ValueId {
    assert!(stream.0 < 256, "the simulator draws at most 3 streams");
    ValueId {
        sequence: (id.sequence << 8) | stream.0 as u64,
        ..id
    }
}

/// Group commit: every dirty log of the process becomes durable.
pub(crate) fn sync_logs(process: &mut MulticastNode) {
    let streams: Vec<StreamId> = process.streams().keys().copied().collect();
    for stream in streams {
        let log = process.stream_mut(stream).expect("listed stream").log_mut();
        if log.dirty() {
            log.sync().expect("simulated storage does not fail");
        }
    }
}

/// A cheap digest of a message for the trace: its stream, kind, and the
/// numbers that identify it. (Hashing whole batches would dominate the run.)
pub(crate) fn envelope_digest(envelope: &Envelope) -> u64 {
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
