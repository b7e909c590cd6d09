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
use crate::harness::{self, Harness, Workload, TRACE_SUBSCRIBE};
use crate::history::History;
use crate::nemesis::{FaultEvent, Nemesis};
use crate::network::Network;
use crate::order::{history_name, sim_limits};
use crate::rng::Rng;
use crate::runner::{SeedOutcome, SeedStats};
use crate::swarm::SwarmOptions;
use crate::trace::TraceHash;
use crate::violation::{Property, Violation};
use amulet_dmap::{MapLimits, PartitionState};
use amulet_host::Host;
use amulet_multicast::{GroupId, MergeBug, Merged, SubscriptionEvent};
use amulet_types::{NodeId, StorageMode, StreamConfig, StreamId, TimeMicros, ValueId};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

/// Probability per tick that some node multicasts a value.
const PROPOSE_PROBABILITY: f64 = 0.05;
/// Probability per tick that the controller changes a subscription.
const CHANGE_PROBABILITY: f64 = 0.002;

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

/// The workload of one seed.
struct Elastic {
    bug: ElasticBug,
    verbose: bool,
    configs: Vec<StreamConfig>,
    groups: Vec<(GroupId, Vec<StreamId>)>,
    workload: Rng,
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
    safety_end: TimeMicros,
    propose_until: TimeMicros,
    /// Fig. 4.2's crossed subscriptions, at this time (a third of the
    /// seeds).
    crossed_at: Option<TimeMicros>,
}

/// Runs one seed of the elastic simulation.
pub fn run_elastic_seed(seed: u64, verbose: bool, bug: ElasticBug) -> SeedOutcome {
    let mut rng = Rng::new(seed);
    let options = SwarmOptions::draw(&mut rng);
    if verbose {
        println!("seed={seed} bug={bug:?} options={options:#?}");
    }
    let end = TimeMicros(options.safety_phase_micros + options.liveness_phase_micros);
    let (mut elastic, mut harness) = Elastic::new(seed, options, bug, verbose);
    harness.run(&mut elastic, end);
    elastic.history.finished(end);
    elastic.outcome(&harness)
}

/// The learner id of `node`'s replica of `group` in the history.
fn replica_id(node: NodeId, group: GroupId) -> NodeId {
    NodeId(node.0 * 100 + group.0)
}

impl Elastic {
    fn new(seed: u64, options: SwarmOptions, bug: ElasticBug, verbose: bool) -> (Elastic, Harness) {
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
        let slots = harness::slots(&nodes, storage, seed);
        let config = harness::nemesis_config(&nodes, nodes.iter().copied(), &configs, storage);
        let safety_end = TimeMicros(options.safety_phase_micros);
        let nemesis = Nemesis::new(config, options.faults.clone(), safety_end, rng.fork());
        let network = Network::new(options.network.clone(), rng.fork());
        let mut workload = rng.fork();
        let disk_rng = rng.fork();
        let harness = Harness::new(verbose, network, nemesis, slots, disk_rng, rng.fork(), 0);
        let crossed_at = workload
            .chance(1.0 / 3.0)
            .then(|| TimeMicros(workload.range(100_000, safety_end.0.max(100_001))));
        let elastic = Elastic {
            bug,
            verbose,
            configs,
            groups,
            workload,
            history: History::new(),
            runs: BTreeMap::new(),
            events: BTreeMap::new(),
            markers: BTreeMap::new(),
            requests: 0,
            rebroadcasts: 0,
            safety_end,
            propose_until: TimeMicros(
                options.safety_phase_micros + options.liveness_phase_micros / 2,
            ),
            crossed_at,
        };
        (elastic, harness)
    }

    /// A random live node multicasts a fresh value to a random stream (or
    /// the marker of `marker`).
    fn propose(&mut self, harness: &mut Harness, marker: Option<StreamId>) {
        let now = harness.now;
        let up = harness.live_nodes();
        let Some(&node) = self.workload.pick(&up) else {
            return;
        };
        let streams: Vec<StreamId> = self.configs.iter().map(|c| c.stream).collect();
        let stream = match marker {
            Some(stream) => stream,
            None => *self.workload.pick(&streams).expect("streams drawn"),
        };
        if let Some((id, incarnation)) = harness.multicast_random(node, stream, &mut self.workload)
        {
            let name = history_name(stream, id);
            self.history
                .propose(now, name, BTreeSet::from([stream]), node, incarnation);
            if marker.is_some() {
                self.markers.insert(stream, name);
            }
        }
        harness.step(self, node);
    }

    /// The controller: a random live node subscribes a random group to a
    /// stream it does not merge, or unsubscribes it from one of two or
    /// more, as that node's replica of the group sees it.
    fn change_subscription(&mut self, harness: &mut Harness) {
        let now = harness.now;
        let up = harness.live_nodes();
        let Some(&node) = self.workload.pick(&up) else {
            return;
        };
        let groups: Vec<GroupId> = self.groups.iter().map(|(g, _)| *g).collect();
        let group = *self.workload.pick(&groups).expect("groups drawn");
        let streams: Vec<StreamId> = self.configs.iter().map(|c| c.stream).collect();
        let stream = *self.workload.pick(&streams).expect("streams drawn");
        let process = harness
            .host_mut(node)
            .expect("picked among live nodes")
            .multicast_node_mut();
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
        harness.trace.event(
            now,
            TRACE_SUBSCRIBE,
            node,
            node,
            TraceHash::digest(&(group.0, stream.0, via.0)),
        );
        harness.step(self, node);
    }

    /// Fig. 4.2: group 1 subscribes to stream 2 from one node while group
    /// 2 subscribes to stream 1 from another, in the same tick.
    fn cross_subscribe(&mut self, harness: &mut Harness) {
        let now = harness.now;
        let up = harness.live_nodes();
        if up.len() < 2 {
            return;
        }
        let pairs = [
            (up[0], GroupId(1), StreamId(2), StreamId(1)),
            (up[up.len() - 1], GroupId(2), StreamId(1), StreamId(2)),
        ];
        for (node, group, stream, via) in pairs {
            let process = harness.host_mut(node).expect("live").multicast_node_mut();
            let result = process.subscribe(now, group, stream, via);
            if self.verbose {
                println!(
                    "t={}us {node} {group} crossed subscribe {stream} via {via}: {result:?}",
                    now.0
                );
            }
            self.requests += 1;
            harness.step(self, node);
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

    fn outcome(self, harness: &Harness) -> SeedOutcome {
        let mut violations = integrity::check(&self.history);
        violations.extend(order::check(&self.history));
        violations.extend(group_agreement::check(
            &self.history,
            &self.runs,
            &self.events,
        ));
        violations.extend(self.check_progress(harness));
        let stats = SeedStats {
            values_proposed: self.history.proposals().len() as u64,
            deliveries: self.history.delivery_count() as u64,
            learner_incarnations: self.history.learners().len() as u64,
            virtual_micros: harness.now.0,
            trace_events: harness.trace.events(),
            network: harness.network.stats(),
            nemesis: harness.nemesis.stats(),
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
                + harness
                    .hosts()
                    .map(|(_, h)| h.multicast_node().rebroadcasts())
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
            trace_hash: harness.trace.value(),
            stats,
        }
    }

    /// After the healed phase: no merge waits for a subscription, and
    /// every replica delivered the marker of every stream its group
    /// merges at the end.
    fn check_progress(&self, harness: &Harness) -> Vec<Violation> {
        let mut violations = Vec::new();
        for (node, host) in harness.hosts() {
            let process = host.multicast_node();
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
                let Some(run) = self.history.live_learner(replica_id(node, *group)) else {
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

impl Workload for Elastic {
    fn start(&mut self, harness: &mut Harness, node: NodeId) -> Host<PartitionState> {
        let now = harness.now;
        let slot = harness.slots.get_mut(&node).expect("known node");
        let logs = slot.storage.open_all(&self.configs);
        let incarnation = slot.incarnation;
        let mut config = harness::host_config(
            node,
            incarnation,
            Arc::new(|| PartitionState::new(MapLimits::default())),
        );
        config.groups = Some(self.groups.clone());
        let mut host = Host::start(config, logs, None, BTreeMap::new(), &mut slot.storage, now)
            .unwrap_or_else(|e| panic!("node {node} does not start: {e}"));
        if self.bug == ElasticBug::MergePointFromNewStreamOnly {
            host.multicast_node_mut()
                .set_merge_bug(MergeBug::MergePointFromNewStreamOnly);
        }
        // A restarted node replays its streams from instance 0 with its
        // groups' initial subscriptions: the subscription requests in the
        // streams rebuild the same subscriptions.
        let all: BTreeSet<StreamId> = self.configs.iter().map(|c| c.stream).collect();
        for (group, _) in &self.groups {
            let id = replica_id(node, *group);
            self.history
                .learner_started(now, id, incarnation, all.clone());
            let index = self.history.learners().len() - 1;
            self.runs.entry(group.to_string()).or_default().push(index);
        }
        host
    }

    fn tick(&mut self, harness: &mut Harness) {
        let now = harness.now;
        if self
            .crossed_at
            .is_some_and(|t| t <= now && now < t.plus(crate::harness::TICK_MICROS))
        {
            self.cross_subscribe(harness);
        }
        if now < self.safety_end && self.workload.chance(CHANGE_PROBABILITY) {
            self.change_subscription(harness);
        }
        if now < self.propose_until && self.workload.chance(PROPOSE_PROBABILITY) {
            self.propose(harness, None);
        }
        if self.markers.is_empty() && now >= self.propose_until {
            let streams: Vec<StreamId> = self.configs.iter().map(|c| c.stream).collect();
            for stream in streams {
                self.propose(harness, Some(stream));
            }
        }
    }

    fn delivered(
        &mut self,
        _now: TimeMicros,
        node: NodeId,
        _incarnation: u32,
        group: GroupId,
        merged: &Merged,
    ) {
        let name = history_name(merged.stream, merged.value.id);
        self.history
            .deliver(replica_id(node, group), merged.stream, name);
    }

    fn subscription(
        &mut self,
        now: TimeMicros,
        node: NodeId,
        group: GroupId,
        event: SubscriptionEvent,
    ) {
        if self.verbose {
            println!("t={}us {node} {group} {event:?}", now.0);
        }
        if let Some(run) = self.run_index(node, group) {
            self.events.entry(run).or_default().push(event);
        }
    }

    fn crashing(&mut self, node: NodeId, incarnation: u32, host: &Host<PartitionState>) {
        self.rebroadcasts += host.multicast_node().rebroadcasts();
        self.history.proposer_crashed(node, incarnation);
        for (group, _) in &self.groups {
            self.history.learner_crashed(replica_id(node, *group));
        }
    }

    fn fault(&mut self, now: TimeMicros, event: &FaultEvent) {
        if matches!(event, FaultEvent::Heal) {
            self.history.healed(now);
        }
    }
}
