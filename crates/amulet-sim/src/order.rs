//! The ordering swarm: several Ring Paxos streams, each with its acceptors
//! and learners, on the harness (every node the host core the node
//! process runs, merging every stream it is a member of), values
//! multicast at random, deliveries recorded in a [`History`] for the
//! atomic multicast checkers (thesis §2.5).
//!
//! One seed draws the topology (3 or 5 acceptors, 1–3 streams, extra
//! learner-only nodes subscribing to subsets), the storage mode, the fault
//! mix and the workload.

use crate::checker;
use crate::harness::{self, Harness, Workload};
use crate::history::History;
use crate::nemesis::{FaultEvent, Nemesis};
use crate::network::Network;
use crate::rng::Rng;
use crate::runner::{SeedOutcome, SeedStats};
use crate::swarm::SwarmOptions;
use amulet_dmap::{MapLimits, PartitionState};
use amulet_host::Host;
use amulet_multicast::{GroupId, MergeBug, Merged};
use amulet_paxos::Bugs;
use amulet_types::{
    NodeId, StorageMode, StreamConfig, StreamId, StreamLimits, TimeMicros, ValueId,
};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

/// Probability per tick that some node multicasts a value.
const PROPOSE_PROBABILITY: f64 = 0.05;

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

/// The workload of one seed.
struct Order {
    bug: Bug,
    configs: Vec<StreamConfig>,
    /// Streams each node learns and merges.
    subscriptions: BTreeMap<NodeId, BTreeSet<StreamId>>,
    workload: Rng,
    history: History,
    propose_until: TimeMicros,
    bug_learner: Option<NodeId>,
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
    let safety_end = options.safety_phase_micros;
    let end = TimeMicros(safety_end + options.liveness_phase_micros);
    let (mut order, mut harness) = Order::new(seed, options, bug, verbose);
    harness.run(&mut order, end);
    order.history.finished(end);
    order.outcome(&harness, verbose)
}

/// The limits the simulated streams run with: the defaults, except a
/// memory ring large enough that a learner restarting from instance 0 can
/// always catch up within a run (trimming is exercised by the DMap swarm
/// and the storage tests).
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

impl Order {
    fn new(seed: u64, options: SwarmOptions, bug: Bug, verbose: bool) -> (Order, Harness) {
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
        let subscriptions = nodes
            .iter()
            .map(|node| {
                let streams = configs
                    .iter()
                    .filter(|c| c.members().contains(node))
                    .map(|c| c.stream)
                    .collect();
                (*node, streams)
            })
            .collect();
        let slots = harness::slots(&nodes, storage, seed);
        let acceptors: BTreeSet<NodeId> = configs
            .iter()
            .flat_map(|c| c.acceptors.iter().copied())
            .collect();
        let config = harness::nemesis_config(&nodes, acceptors, &configs, storage);
        let safety_end = TimeMicros(options.safety_phase_micros);
        let nemesis = Nemesis::new(config, options.faults.clone(), safety_end, rng.fork());
        let network = Network::new(options.network.clone(), rng.fork());
        let workload = rng.fork();
        let disk_rng = rng.fork();
        let harness = Harness::new(verbose, network, nemesis, slots, disk_rng, rng.fork(), 0);
        let order = Order {
            bug,
            configs,
            subscriptions,
            workload,
            history: History::new(),
            // Stop proposing halfway through the healed phase so that what
            // was proposed has time to reach everyone.
            propose_until: TimeMicros(
                options.safety_phase_micros + options.liveness_phase_micros / 2,
            ),
            bug_learner: (bug == Bug::MergeIgnoresSkipCounts).then(|| nodes[0]),
        };
        (order, harness)
    }

    /// A random live node multicasts a fresh value to one of its streams.
    fn propose(&mut self, harness: &mut Harness) {
        let now = harness.now;
        let up = harness.live_nodes();
        let Some(&node) = self.workload.pick(&up) else {
            return;
        };
        let streams: Vec<StreamId> = self.subscriptions[&node].iter().copied().collect();
        let Some(&stream) = self.workload.pick(&streams) else {
            return;
        };
        if let Some((id, incarnation)) = harness.multicast_random(node, stream, &mut self.workload)
        {
            let name = history_name(stream, id);
            self.history
                .propose(now, name, BTreeSet::from([stream]), node, incarnation);
        }
        harness.step(self, node);
    }

    fn outcome(self, harness: &Harness, verbose: bool) -> SeedOutcome {
        let violations = checker::check_all(&self.history);
        let stats = SeedStats {
            values_proposed: self.history.proposals().len() as u64,
            deliveries: self.history.delivery_count() as u64,
            learner_incarnations: self.history.learners().len() as u64,
            virtual_micros: harness.now.0,
            trace_events: harness.trace.events(),
            network: harness.network.stats(),
            nemesis: harness.nemesis.stats(),
            ..SeedStats::default()
        };
        if verbose {
            println!("stats={stats:#?}");
            for (node, host) in harness.hosts() {
                let process = host.multicast_node();
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
            trace_hash: harness.trace.value(),
            stats,
        }
    }
}

impl Workload for Order {
    fn start(&mut self, harness: &mut Harness, node: NodeId) -> Host<PartitionState> {
        let now = harness.now;
        let slot = harness.slots.get_mut(&node).expect("known node");
        let configs = harness::member_configs(&self.configs, node);
        if self.bug == Bug::AmnesiacAcceptorVotes {
            for config in &configs {
                slot.storage
                    .store(config.stream, config.storage)
                    .pretend_intact();
            }
        }
        let logs = slot.storage.open_all(&configs);
        let incarnation = slot.incarnation;
        let config = harness::host_config(
            node,
            incarnation,
            Arc::new(|| PartitionState::new(MapLimits::default())),
        );
        let mut host = Host::start(config, logs, None, BTreeMap::new(), &mut slot.storage, now)
            .unwrap_or_else(|e| panic!("node {node} does not start: {e}"));
        let restarted = incarnation > 1;
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
        host.multicast_node_mut().set_bugs(bugs);
        if self.bug_learner == Some(node) {
            host.multicast_node_mut()
                .set_merge_bug(MergeBug::IgnoreSkipCounts);
        }
        self.history
            .learner_started(now, node, incarnation, self.subscriptions[&node].clone());
        host
    }

    fn tick(&mut self, harness: &mut Harness) {
        if harness.now < self.propose_until && self.workload.chance(PROPOSE_PROBABILITY) {
            self.propose(harness);
        }
    }

    fn delivered(
        &mut self,
        _now: TimeMicros,
        node: NodeId,
        _incarnation: u32,
        _group: GroupId,
        merged: &Merged,
    ) {
        let name = history_name(merged.stream, merged.value.id);
        self.history.deliver(node, merged.stream, name);
    }

    fn crashing(&mut self, node: NodeId, incarnation: u32, _host: &Host<PartitionState>) {
        self.history.proposer_crashed(node, incarnation);
        self.history.learner_crashed(node);
    }

    fn fault(&mut self, now: TimeMicros, event: &FaultEvent) {
        if matches!(event, FaultEvent::Heal) {
            self.history.healed(now);
        }
    }
}

/// The name of a value in the history. Value ids are unique within a
/// stream (each stream's proposer numbers its values densely, which keeps
/// learners' duplicate filters compact), so the history names a value by
/// its stream and id, folded into one id: streams number below 256 here.
pub(crate) fn history_name(stream: StreamId, id: ValueId) -> ValueId {
    assert!(stream.0 < 256, "the simulator draws few streams");
    ValueId {
        sequence: (id.sequence << 8) | stream.0 as u64,
        ..id
    }
}
