//! Elastic Paxos under simulation (thesis ch. 4): replication groups that
//! subscribe to and unsubscribe from streams while values are multicast
//! and the nemesis crashes nodes, cuts links and loses messages.
//!
//! One seed draws 3 or 5 acceptors, 2 or 3 streams (3 acceptors each),
//! and 2 or 3 merge groups, each replicated on every node and starting
//! with a stream of its own. Every node learns every stream (a group can
//! only subscribe to streams its nodes learn). During the faulty phase a
//! controller at a random live node subscribes a random group to a
//! random stream it does not merge, or unsubscribes it from one; in one
//! seed of three two groups first subscribe to each other's stream in
//! the same instant (Fig. 4.2). After the heal, every stream gets a
//! marker value.
//!
//! Checkers: integrity and partial order over every replica's delivery
//! sequence (no cycle across groups: Proposition 3 and 4), agreement
//! within each group (same sequence, same subscription changes), and,
//! after the healed phase, progress: no merge is left waiting for a
//! subscription and every replica delivers the marker of every stream its
//! group merges at the end. A restarted node replays its streams from
//! instance 0 with its groups' initial subscriptions: the subscription
//! requests in the streams rebuild the same subscriptions.

use crate::checker::{group_agreement, integrity, order, value_name};
use crate::cluster::{envelope_digest, sim_limits, sync_logs};
use crate::history::History;
use crate::nemesis::{next_instant, CrashGroup, FaultEvent, Nemesis, NemesisConfig};
use crate::network::Network;
use crate::rng::Rng;
use crate::runner::{SeedOutcome, SeedStats};
use crate::sim_log::{crash_stores, SimStore};
use crate::swarm::SwarmOptions;
use crate::trace::TraceHash;
use crate::violation::{Property, Violation};
use amulet_multicast::{GroupId, MergeBug, MulticastNode, SubscriptionEvent};
use amulet_types::{Ballot, NodeId, StorageMode, StreamConfig, StreamId, TimeMicros, ValueId};
use amulet_wire::Envelope;
use bytes::Bytes;
use std::collections::{BTreeMap, BTreeSet};

const TICK_MICROS: u64 = 1_000;
const ASYNC_SYNC_MICROS: u64 = 5_000;
/// Probability per tick that some node multicasts a value.
const PROPOSE_PROBABILITY: f64 = 0.05;
/// Probability per tick that the controller changes a subscription.
const CHANGE_PROBABILITY: f64 = 0.002;
const TRACE_MESSAGE: u8 = 0;
const TRACE_FAULT: u8 = 1;
const TRACE_PROPOSE: u8 = 2;
const TRACE_DELIVER: u8 = 3;
const TRACE_SUBSCRIBE: u8 = 4;

/// Deliberately broken variants of Elastic Paxos.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ElasticBug {
    /// The correct protocol.
    #[default]
    None,
    /// Every merge takes a subscription's merge point from the new
    /// stream's copy alone.
    MergePointFromNewStreamOnly,
}

struct Slot {
    stores: BTreeMap<StreamId, SimStore>,
    vouched: BTreeMap<StreamId, Ballot>,
    incarnation: u32,
    process: Option<MulticastNode>,
}

/// The cluster of one seed.
struct Cluster {
    options: SwarmOptions,
    bug: ElasticBug,
    verbose: bool,
    configs: Vec<StreamConfig>,
    groups: Vec<(GroupId, Vec<StreamId>)>,
    workload: Rng,
    disk_rng: Rng,
    network: Network<Envelope>,
    nemesis: Nemesis,
    slots: BTreeMap<NodeId, Slot>,
    history: History,
    /// Runs (history learner index) of each group, by group.
    runs: BTreeMap<String, Vec<usize>>,
    /// Subscription changes of each run.
    events: BTreeMap<usize, Vec<SubscriptionEvent>>,
    /// Markers multicast after the heal, by stream.
    markers: BTreeMap<StreamId, ValueId>,
    requests: u64,
    /// Subscribe copies broadcast again, by processes that ended.
    rebroadcasts: u64,
    trace: TraceHash,
    now: TimeMicros,
}

/// Runs one seed of the elastic simulation.
pub fn run_elastic_seed(seed: u64, verbose: bool, bug: ElasticBug) -> SeedOutcome {
    let mut rng = Rng::new(seed);
    let options = SwarmOptions::draw(&mut rng);
    if verbose {
        println!("seed={seed} bug={bug:?} options={options:#?}");
    }
    let mut cluster = Cluster::new(seed, options, bug, verbose);
    cluster.run();
    cluster.outcome()
}

/// The learner id of `node`'s replica of `group` in the history.
fn replica_id(node: NodeId, group: GroupId) -> NodeId {
    NodeId(node.0 * 100 + group.0)
}

impl Cluster {
    fn new(seed: u64, options: SwarmOptions, bug: ElasticBug, verbose: bool) -> Cluster {
        let mut rng = Rng::new(seed ^ 0x656C_6173); // Independent of the options' draw.
        let storage = match rng.below(3) {
            0 => StorageMode::Memory,
            1 => StorageMode::AsyncDurable,
            _ => StorageMode::SyncDurable,
        };
        let acceptor_count = if rng.chance(0.7) { 3 } else { 5 };
        let nodes: Vec<NodeId> = (1..=acceptor_count).map(NodeId).collect();
        let stream_count = rng.range(2, 3) as u32;
        let mut configs = Vec::new();
        for s in 1..=stream_count {
            let mut acceptors = nodes.clone();
            rng.shuffle(&mut acceptors);
            acceptors.truncate(3);
            acceptors.sort();
            configs.push(StreamConfig {
                stream: StreamId(s),
                acceptors,
                learners: nodes.clone(),
                storage,
                limits: sim_limits(),
                base_position: 0,
            });
        }
        let group_count = rng.range(2, stream_count as u64) as u32;
        let groups: Vec<(GroupId, Vec<StreamId>)> = (1..=group_count)
            .map(|g| (GroupId(g), vec![StreamId(g)]))
            .collect();
        if verbose {
            println!("storage={storage:?} streams={configs:#?} groups={groups:?}");
        }
        let slots = nodes
            .iter()
            .map(|&node| {
                let stores = configs
                    .iter()
                    .map(|c| (c.stream, SimStore::new(storage)))
                    .collect();
                let slot = Slot {
                    stores,
                    vouched: BTreeMap::new(),
                    incarnation: 0,
                    process: None,
                };
                (node, slot)
            })
            .collect();
        let config = NemesisConfig {
            storage: nodes.iter().map(|n| (*n, storage)).collect(),
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
        let mut cluster = Cluster {
            options,
            bug,
            verbose,
            configs,
            groups,
            workload: rng.fork(),
            disk_rng: rng.fork(),
            network,
            nemesis,
            slots,
            history: History::new(),
            runs: BTreeMap::new(),
            events: BTreeMap::new(),
            markers: BTreeMap::new(),
            requests: 0,
            rebroadcasts: 0,
            trace: TraceHash::new(),
            now: TimeMicros(0),
        };
        for node in nodes {
            cluster.start(node);
        }
        cluster
    }

    fn run(&mut self) {
        let safety_end = self.options.safety_phase_micros;
        let end = TimeMicros(safety_end + self.options.liveness_phase_micros);
        let propose_until = TimeMicros(safety_end + self.options.liveness_phase_micros / 2);
        // In a third of the seeds, Fig. 4.2: groups 1 and 2 subscribe to
        // each other's stream at the same instant, from different nodes.
        let crossed_at = self
            .workload
            .chance(1.0 / 3.0)
            .then(|| TimeMicros(self.workload.range(100_000, safety_end.max(100_001))));
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
                self.trace.event(next, TRACE_MESSAGE, from, to, digest);
                if let Some(process) = self.process_mut(to) {
                    process.on_message(next, from, envelope);
                    self.flush(to);
                }
            }
            if next_tick <= next {
                let now = next;
                if crossed_at.is_some_and(|t| t <= now && now < t.plus(TICK_MICROS)) {
                    self.cross_subscribe();
                }
                if now.0 < safety_end && self.workload.chance(CHANGE_PROBABILITY) {
                    self.change_subscription();
                }
                if now < propose_until && self.workload.chance(PROPOSE_PROBABILITY) {
                    self.propose(None);
                }
                if self.markers.is_empty() && now >= propose_until {
                    let streams: Vec<StreamId> = self.configs.iter().map(|c| c.stream).collect();
                    for stream in streams {
                        self.propose(Some(stream));
                    }
                }
                self.tick();
                next_tick = next_tick.plus(TICK_MICROS);
            }
        }
        self.now = end;
        self.history.finished(end);
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

    fn live_nodes(&self) -> Vec<NodeId> {
        self.slots
            .iter()
            .filter(|(_, s)| s.process.is_some())
            .map(|(n, _)| *n)
            .collect()
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
        let process = slot
            .process
            .take()
            .expect("the nemesis crashes only nodes that are up");
        self.rebroadcasts += process.rebroadcasts();
        self.history.proposer_crashed(node, slot.incarnation);
        for (group, _) in &self.groups {
            self.history.learner_crashed(replica_id(node, *group));
        }
    }

    fn start(&mut self, node: NodeId) {
        let now = self.now;
        let slot = self.slots.get_mut(&node).expect("known node");
        slot.incarnation += 1;
        let streams = self
            .configs
            .iter()
            .map(|c| (c.clone(), slot.stores[&c.stream].open()))
            .collect();
        let mut process =
            MulticastNode::with_groups(node, streams, self.groups.clone(), slot.incarnation, now);
        if self.bug == ElasticBug::MergePointFromNewStreamOnly {
            process.set_merge_bug(MergeBug::MergePointFromNewStreamOnly);
        }
        for (stream, s) in process.streams() {
            let vouched = slot.vouched.get(stream).copied().unwrap_or(Ballot::ZERO);
            if let Some(promised) = s.promised() {
                assert!(
                    promised >= vouched,
                    "{node} restarted as a voting acceptor of {stream} promising {promised}, \
                     below the {vouched} its log made durable"
                );
            }
        }
        slot.process = Some(process);
        let incarnation = slot.incarnation;
        let all: BTreeSet<StreamId> = self.configs.iter().map(|c| c.stream).collect();
        for (group, _) in &self.groups {
            let id = replica_id(node, *group);
            self.history
                .learner_started(now, id, incarnation, all.clone());
            let index = self.history.learners().len() - 1;
            self.runs.entry(group.to_string()).or_default().push(index);
        }
    }

    fn tick(&mut self) {
        let now = self.now;
        let sync_async = now.0.is_multiple_of(ASYNC_SYNC_MICROS);
        for node in self.slots.keys().copied().collect::<Vec<_>>() {
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

    /// A random live node multicasts a fresh value to a random stream (or
    /// the marker of `marker`).
    fn propose(&mut self, marker: Option<StreamId>) {
        let now = self.now;
        let up = self.live_nodes();
        let Some(&node) = self.workload.pick(&up) else {
            return;
        };
        let streams: Vec<StreamId> = self.configs.iter().map(|c| c.stream).collect();
        let stream = match marker {
            Some(stream) => stream,
            None => *self.workload.pick(&streams).expect("streams drawn"),
        };
        let payload = Bytes::from(self.workload.next_u64().to_le_bytes().to_vec());
        let slot = self.slots.get_mut(&node).expect("picked from slots");
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
            if marker.is_some() {
                self.markers.insert(stream, name);
            }
        }
        self.flush(node);
    }

    /// The controller: a random live node subscribes a random group to a
    /// stream it does not merge, or unsubscribes it from one of two or
    /// more, as that node's replica of the group sees it.
    fn change_subscription(&mut self) {
        let now = self.now;
        let up = self.live_nodes();
        let Some(&node) = self.workload.pick(&up) else {
            return;
        };
        let groups: Vec<GroupId> = self.groups.iter().map(|(g, _)| *g).collect();
        let group = *self.workload.pick(&groups).expect("groups drawn");
        let streams: Vec<StreamId> = self.configs.iter().map(|c| c.stream).collect();
        let stream = *self.workload.pick(&streams).expect("streams drawn");
        let process = self.process_mut(node).expect("picked among live nodes");
        let Some(merger) = process.merger(group) else {
            return;
        };
        let merged: Vec<StreamId> = merger.streams().to_vec();
        let Some(&via) = merged.get((stream.0 as usize) % merged.len().max(1)) else {
            return;
        };
        let result = if merged.contains(&stream) {
            if merged.len() < 2 {
                return;
            }
            process.unsubscribe(now, group, stream, via)
        } else {
            process.subscribe(now, group, stream, via)
        };
        self.requests += 1;
        if self.verbose {
            println!(
                "t={}us {node} {group} change {stream} via {via}: {result:?}",
                now.0
            );
        }
        self.trace.event(
            now,
            TRACE_SUBSCRIBE,
            node,
            node,
            TraceHash::digest(&(group.0, stream.0, via.0)),
        );
        self.flush(node);
    }

    /// Fig. 4.2: group 1 subscribes to stream 2 from one node while group
    /// 2 subscribes to stream 1 from another, in the same tick.
    fn cross_subscribe(&mut self) {
        let now = self.now;
        let up = self.live_nodes();
        if up.len() < 2 {
            return;
        }
        let pairs = [
            (up[0], GroupId(1), StreamId(2), StreamId(1)),
            (up[up.len() - 1], GroupId(2), StreamId(1), StreamId(2)),
        ];
        for (node, group, stream, via) in pairs {
            let process = self.process_mut(node).expect("live");
            let result = process.subscribe(now, group, stream, via);
            if self.verbose {
                println!(
                    "t={}us {node} {group} crossed subscribe {stream} via {via}: {result:?}",
                    now.0
                );
            }
            self.requests += 1;
            self.flush(node);
        }
    }

    fn vouch(&mut self, node: NodeId) {
        let slot = self.slots.get_mut(&node).expect("known node");
        let Some(process) = slot.process.as_ref() else {
            return;
        };
        for (stream, s) in process.streams() {
            if s.config().storage == StorageMode::Memory {
                continue;
            }
            if let Some(promised) = s.promised() {
                let entry = slot.vouched.entry(*stream).or_insert(promised);
                *entry = (*entry).max(promised);
            }
        }
    }

    fn flush(&mut self, node: NodeId) {
        let now = self.now;
        let Some(process) = self.process_mut(node) else {
            return;
        };
        let mut effects = process.drain();
        if !effects.sends_after_sync.is_empty() {
            sync_logs(process);
            self.vouch(node);
        }
        for (group, merged) in &effects.delivered {
            let digest = TraceHash::digest(&(group.0, merged.stream.0, merged.value.id.sequence));
            self.trace.event(now, TRACE_DELIVER, node, node, digest);
            let name = history_name(merged.stream, merged.value.id);
            self.history
                .deliver(replica_id(node, *group), merged.stream, name);
        }
        for (group, event) in &effects.subscriptions {
            if self.verbose {
                println!("t={}us {node} {group} {event:?}", now.0);
            }
            if let Some(run) = self.run_index(node, *group) {
                self.events.entry(run).or_default().push(*event);
            }
        }
        for (to, envelope) in effects
            .sends
            .drain(..)
            .chain(effects.sends_after_sync.drain(..))
        {
            self.network.send(now, node, to, envelope);
        }
    }

    /// The history index of `node`'s live replica of `group`.
    fn run_index(&self, node: NodeId, group: GroupId) -> Option<usize> {
        let id = replica_id(node, group);
        self.runs
            .get(&group.to_string())?
            .iter()
            .rev()
            .copied()
            .find(|&i| self.history.learners()[i].node == id && !self.history.learners()[i].crashed)
    }

    fn outcome(self) -> SeedOutcome {
        let mut violations = integrity::check(&self.history);
        violations.extend(order::check(&self.history));
        violations.extend(group_agreement::check(
            &self.history,
            &self.runs,
            &self.events,
        ));
        violations.extend(self.check_progress());
        let stats = SeedStats {
            values_proposed: self.history.proposals().len() as u64,
            deliveries: self.history.delivery_count() as u64,
            learner_incarnations: self.history.learners().len() as u64,
            virtual_micros: self.now.0,
            trace_events: self.trace.events(),
            network: self.network.stats(),
            nemesis: self.nemesis.stats(),
            subscription_changes: self
                .events
                .values()
                .map(|e| {
                    e.iter()
                        .filter(|e| {
                            matches!(
                                e,
                                SubscriptionEvent::Joined { .. } | SubscriptionEvent::Left { .. }
                            )
                        })
                        .count() as u64
                })
                .max()
                .unwrap_or(0),
            ..SeedStats::default()
        };
        if self.verbose {
            let rebroadcasts = self.rebroadcasts
                + self
                    .slots
                    .values()
                    .filter_map(|s| s.process.as_ref())
                    .map(MulticastNode::rebroadcasts)
                    .sum::<u64>();
            println!(
                "stats={stats:#?} requests={} rebroadcasts={rebroadcasts}",
                self.requests
            );
            for (run, events) in &self.events {
                println!("{} events {events:?}", self.history.learners()[*run].name());
            }
        }
        SeedOutcome {
            violations,
            trace_hash: self.trace.value(),
            stats,
        }
    }

    /// After the healed phase: no merge waits for a subscription, and
    /// every replica delivered the marker of every stream its group
    /// merges at the end.
    fn check_progress(&self) -> Vec<Violation> {
        let mut violations = Vec::new();
        for (node, slot) in &self.slots {
            let Some(process) = slot.process.as_ref() else {
                continue;
            };
            for (group, _) in &self.groups {
                let Some(merger) = process.merger(*group) else {
                    continue;
                };
                let name = format!("{node}/{group}");
                if let Some(waiting) = merger.waiting() {
                    violations.push(Violation::new(
                        Property::Progress,
                        format!("{name} still waits for subscription {waiting:?} after the heal"),
                    ));
                }
                let Some(run) = self.history.live_learner(replica_id(*node, *group)) else {
                    continue;
                };
                for stream in merger.streams() {
                    let Some(marker) = self.markers.get(stream) else {
                        continue;
                    };
                    if !run.deliveries.iter().any(|(_, v)| v == marker) {
                        violations.push(Violation::new(
                            Property::Validity,
                            format!(
                                "{name} merges {stream} but never delivered its marker {}",
                                value_name(*marker)
                            ),
                        ));
                    }
                }
            }
        }
        violations
    }
}

/// The name of a value in the history: its stream folded into the
/// sequence, as in the multicast cluster.
fn history_name(stream: StreamId, id: ValueId) -> ValueId {
    ValueId {
        sequence: (id.sequence << 8) | stream.0 as u64,
        ..id
    }
}
