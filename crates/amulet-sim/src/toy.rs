//! HARNESS SELF-TEST ONLY: a toy cluster (one fixed sequencer, clients
//! that propose and learn) driven through the real simulator machinery
//! (network, nemesis, history, checkers, trace hash), so that machinery is
//! exercised end to end before the Ring Paxos cluster exists. Replace the
//! call in `runner::run_seed` with the real cluster; keep this as the
//! simulator's own test.

pub mod node;

use crate::checker;
use crate::history::History;
use crate::nemesis::{next_instant, FaultEvent, Nemesis, NemesisConfig};
use crate::network::Network;
use crate::rng::Rng;
use crate::runner::{SeedOutcome, SeedStats};
use crate::swarm::SwarmOptions;
use crate::trace::TraceHash;
use amulet_types::{NodeId, StorageMode, StreamId, TimeMicros};
use node::{Client, Sends, Sequencer, ToyBug, ToyMessage, SEQUENCER};
use std::collections::{BTreeMap, BTreeSet};

/// Virtual micros between two ticks of every node.
const TICK_MICROS: u64 = 1_000;
/// Probability per tick that a client multicasts a value.
const PROPOSE_PROBABILITY: f64 = 0.005;
/// Trace event kinds.
const TRACE_MESSAGE: u8 = 0;
const TRACE_FAULT: u8 = 1;

/// A client node's slot: its live incarnation, if up.
struct Slot {
    subscriptions: BTreeSet<StreamId>,
    incarnations: u32,
    client: Option<Client>,
}

/// The toy cluster of one seed.
pub struct ToyCluster {
    options: SwarmOptions,
    bug: ToyBug,
    verbose: bool,
    workload: Rng,
    network: Network<ToyMessage>,
    nemesis: Nemesis,
    sequencer: Option<Sequencer>,
    sequencer_disk: Vec<(StreamId, amulet_types::ValueId)>,
    slots: BTreeMap<NodeId, Slot>,
    streams: Vec<StreamId>,
    history: History,
    trace: TraceHash,
    now: TimeMicros,
}

/// Runs one seed of the toy with the fault mix the seed draws.
pub fn run_seed(seed: u64, verbose: bool, bug: ToyBug) -> SeedOutcome {
    let mut rng = Rng::new(seed);
    let options = SwarmOptions::draw(&mut rng);
    run_with(seed, options, bug, verbose)
}

/// Runs the toy with the given fault mix (tests force mixes this way).
pub fn run_with(seed: u64, options: SwarmOptions, bug: ToyBug, verbose: bool) -> SeedOutcome {
    if verbose {
        println!("seed={seed} options={options:#?}");
    }
    let mut cluster = ToyCluster::new(seed, options, bug, verbose);
    cluster.run();
    cluster.outcome()
}

impl ToyCluster {
    fn new(seed: u64, options: SwarmOptions, bug: ToyBug, verbose: bool) -> ToyCluster {
        let mut rng = Rng::new(seed ^ 0x746F_7921); // Independent of the options' draw.
        let client_count = rng.range(2, 5) as u32;
        let streams: Vec<StreamId> = (0..rng.range(1, 3) as u32).map(StreamId).collect();
        let mut slots = BTreeMap::new();
        for node in (1..=client_count).map(NodeId) {
            let mut subscriptions: BTreeSet<StreamId> = streams
                .iter()
                .copied()
                .filter(|_| rng.chance(0.6))
                .collect();
            if subscriptions.is_empty() {
                subscriptions.insert(*rng.pick(&streams).expect("at least one stream"));
            }
            let slot = Slot {
                subscriptions,
                incarnations: 0,
                client: None,
            };
            slots.insert(node, slot);
        }
        let nodes: Vec<NodeId> = std::iter::once(SEQUENCER)
            .chain(slots.keys().copied())
            .collect();
        let config = NemesisConfig {
            storage: BTreeMap::from([(SEQUENCER, StorageMode::SyncDurable)]),
            groups: Vec::new(),
            down_max: nodes.len().div_ceil(2),
            nodes,
        };
        let safety_end = TimeMicros(options.safety_phase_micros);
        let nemesis = Nemesis::new(config, options.faults.clone(), safety_end, rng.fork());
        let network = Network::new(options.network.clone(), rng.fork());
        let mut cluster = ToyCluster {
            options,
            bug,
            verbose,
            workload: rng.fork(),
            network,
            nemesis,
            sequencer: Some(Sequencer::default()),
            sequencer_disk: Vec::new(),
            slots,
            streams,
            history: History::new(),
            trace: TraceHash::new(),
            now: TimeMicros(0),
        };
        let clients: Vec<NodeId> = cluster.slots.keys().copied().collect();
        for node in clients {
            cluster.start_client(node);
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
            let sequencer_up = self.sequencer.is_some();
            let events = self.nemesis.poll(next, || {
                if sequencer_up {
                    vec![SEQUENCER]
                } else {
                    vec![]
                }
            });
            for event in events {
                self.apply(event);
            }
            for (from, to, message) in self.network.deliver_due(next) {
                self.trace
                    .event(next, TRACE_MESSAGE, from, to, TraceHash::digest(&message));
                self.receive(from, to, message);
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
        }
        SeedOutcome {
            violations,
            trace_hash: self.trace.value(),
            stats,
        }
    }

    fn apply(&mut self, event: FaultEvent) {
        if self.verbose {
            println!("t={}us fault {event:?}", self.now.0);
        }
        let digest = TraceHash::digest_debug(&event);
        match event {
            FaultEvent::PartitionStart { blocked, .. } => self.network.block_links(&blocked),
            FaultEvent::PartitionEnd => self.network.unblock_all(),
            FaultEvent::CrashProcess { node, .. } | FaultEvent::CrashMachine { node } => {
                self.crash(node)
            }
            FaultEvent::RestartProcess { node } | FaultEvent::RestartMachine { node } => {
                self.restart(node)
            }
            FaultEvent::Heal => {
                self.network.heal();
                self.history.healed(self.now);
            }
        }
        self.trace
            .event(self.now, TRACE_FAULT, SEQUENCER, SEQUENCER, digest);
    }

    fn crash(&mut self, node: NodeId) {
        self.network.drop_to(node);
        if node == SEQUENCER {
            let sequencer = self
                .sequencer
                .take()
                .expect("nemesis crashes only up nodes");
            self.sequencer_disk = sequencer.log;
            return;
        }
        let slot = self.slots.get_mut(&node).expect("known node");
        let client = slot.client.take().expect("nemesis crashes only up nodes");
        self.history.proposer_crashed(node, client.incarnation);
        self.history.learner_crashed(node);
    }

    fn restart(&mut self, node: NodeId) {
        if node == SEQUENCER {
            let log = match self.bug {
                ToyBug::SequencerForgetsLog => Vec::new(),
                _ => std::mem::take(&mut self.sequencer_disk),
            };
            self.sequencer = Some(Sequencer::recover(log));
            return;
        }
        self.start_client(node);
    }

    fn start_client(&mut self, node: NodeId) {
        let slot = self.slots.get_mut(&node).expect("known node");
        slot.incarnations += 1;
        let (incarnation, subscriptions) = (slot.incarnations, slot.subscriptions.clone());
        slot.client = Some(Client::new(node, incarnation, subscriptions.clone()));
        self.history
            .learner_started(self.now, node, incarnation, subscriptions);
    }

    fn tick(&mut self, proposing: bool) {
        let now = self.now;
        let mut outbox: Vec<(NodeId, Sends)> = Vec::new();
        for (node, slot) in self.slots.iter_mut() {
            let Some(client) = slot.client.as_mut() else {
                continue;
            };
            let mut sends = Sends::new();
            if proposing && self.workload.chance(PROPOSE_PROBABILITY) {
                let stream = *self.workload.pick(&self.streams).expect("streams exist");
                let value = client.propose(now, stream, &mut sends);
                let streams = BTreeSet::from([stream]);
                self.history
                    .propose(now, value, streams, *node, client.incarnation);
            }
            client.tick(now, &mut sends);
            outbox.push((*node, sends));
        }
        for (from, sends) in outbox {
            self.send_all(from, sends);
        }
    }

    fn receive(&mut self, from: NodeId, to: NodeId, message: ToyMessage) {
        let mut sends = Sends::new();
        if to == SEQUENCER {
            if let Some(sequencer) = self.sequencer.as_mut() {
                sequencer.receive(from, message, &mut sends);
            }
        } else if let Some(client) = self.slots.get_mut(&to).and_then(|s| s.client.as_mut()) {
            for (stream, value) in client.receive(self.now, message, self.bug, &mut sends) {
                self.history.deliver(to, stream, value);
            }
        }
        self.send_all(to, sends);
    }

    fn send_all(&mut self, from: NodeId, sends: Sends) {
        for (to, message) in sends {
            self.network.send(self.now, from, to, message);
        }
    }
}

#[cfg(test)]
#[path = "toy_tests.rs"]
mod tests;
