//! `amulet-sim --dotted`: eventual maps (DottedDB, `amulet-dotted`) under
//! a faulty network. Replicas on a ring, clients that read, write over
//! what they read, write blind and delete through random coordinators,
//! replication messages lost, delayed and reordered, partitions, crashes
//! (a replica loses what it had not synced and restarts from its
//! checkpoint and synced journal), anti-entropy with replies
//! cut at small budgets, and strip passes. Then the faults heal, clients
//! stop, and anti-entropy runs to quiescence; the checkers
//! (`checker.rs`) judge convergence, causality and leftover metadata.
//!
//! The data path of an eventual map does not go through the ordering
//! layer, so this mode drives the sans-IO core directly rather than the
//! host core's harness.

mod checker;
pub mod compare;
mod compare_node;
mod faults;
mod knowledge;
mod options;
mod service_swarm;

pub use options::DottedOptions;
pub use service_swarm::run_service_seed;

use crate::rng::Rng;
use crate::runner::{SeedOutcome, SeedStats};
use crate::trace::TraceHash;
use amulet_dotted::{
    Dot, DottedBug, Input, NodeState, Object, ReplicaId, Ring, Skips, SyncReply, SyncRequest,
    TransferPage, TransferRequest, VersionVector,
};
use amulet_types::{NodeId, TimeMicros};
use bytes::Bytes;
use std::collections::{BTreeMap, BTreeSet};

/// Rounds of all-pairs anti-entropy allowed to reach quiescence.
const QUIESCENCE_ROUNDS_MAX: usize = 30;

/// A write as its coordinator executed it (what the checker judges).
#[derive(Clone, Debug)]
pub(crate) struct Write {
    pub key: Bytes,
    pub dot: Dot,
    pub value: Option<Bytes>,
    /// The context the client gave: the versions it supersedes.
    pub context: VersionVector,
    /// Possibly lost with its coordinator's disk: no other replica of the
    /// key had it durably when the node was replaced. Not expected to
    /// survive; allowed to (a replica may hold it unsynced).
    pub lost: bool,
}

#[derive(Clone)]
enum Message {
    /// With what the coordinator had seen of the key (the oracle's).
    Replicate {
        key: Bytes,
        object: Object,
        seen: BTreeSet<Dot>,
        skips: Option<Skips>,
    },
    SyncRequest(SyncRequest),
    /// With what the answerer had seen of each key sent (the oracle's).
    SyncReply(SyncReply, Vec<BTreeSet<Dot>>),
    TransferRequest(TransferRequest),
    TransferPage(TransferPage, Vec<BTreeSet<Dot>>),
}

enum Event {
    Client(usize),
    Deliver {
        from: usize,
        to: usize,
        /// The incarnations of both ends when sent: a replaced replica's
        /// messages die with it.
        incarnations: (u64, u64),
        message: Box<Message>,
    },
    Replace(usize),
    SetRing(usize, Box<Ring>),
    AntiEntropy(usize),
    Strip(usize),
    GroupCommit(usize),
    Crash(usize),
    Restart(usize),
    Partition(Vec<bool>),
    Heal,
}

struct World {
    options: DottedOptions,
    rng: Rng,
    nodes: Vec<NodeState>,
    /// Per replica, what survives a crash: a checkpoint and the inputs
    /// after it, of which the first `synced` are on disk.
    disks: Vec<Disk>,
    bug: DottedBug,
    up: Vec<bool>,
    /// Which slot runs each replica id (replacements take the slot).
    slot_of: BTreeMap<ReplicaId, usize>,
    /// Per slot, bumped when its node is replaced.
    incarnation: Vec<u64>,
    /// The next replica id a replacement gets.
    next_id: u64,
    /// What reads got wrong, as seen when they returned.
    read_violations: Vec<String>,
    /// Each client's last read context per key (for stale writes), with
    /// what that read's replicas had seen.
    contexts: BTreeMap<(usize, Bytes), (VersionVector, BTreeSet<Dot>)>,
    /// What every replica has legitimately seen (`knowledge.rs`).
    knowledge: knowledge::Knowledge,
    /// Side of each node while partitioned.
    side: Option<Vec<bool>>,
    events: BTreeMap<(u64, u64), Event>,
    seq: u64,
    now: u64,
    healed: bool,
    writes: Vec<Write>,
    trace: TraceHash,
    verbose: bool,
    stats: DottedStats,
}

/// A replica's durable state (`amulet_dotted::journal`).
struct Disk {
    checkpoint: NodeState,
    journal: Vec<Input>,
    synced: usize,
}

/// Inputs after which a replica checkpoints (when its journal is synced).
const CHECKPOINT_EVERY_INPUTS: usize = 64;

/// Mean time between a replica's group commits.
const GROUP_COMMIT_MICROS: u64 = 5_000;

/// What a seed did.
#[derive(Clone, Copy, Debug, Default)]
struct DottedStats {
    reads: u64,
    writes: u64,
    refused: u64,
    replicate_sent: u64,
    replicate_lost: u64,
    syncs: u64,
    sync_objects: u64,
    cut_replies: u64,
    crashes: u64,
    inputs_lost: u64,
    replacements: u64,
    transfer_pages: u64,
}

/// Runs one seed of the eventual-map simulation.
pub fn run_dotted_seed(seed: u64, verbose: bool, bug: DottedBug) -> SeedOutcome {
    let mut rng = Rng::new(seed);
    let options = DottedOptions::draw(&mut rng);
    if verbose {
        println!("seed={seed} bug={bug:?} options={options:#?}");
    }
    // Ring order interleaves the nodes (vnode v of node n is replica
    // `1 + v * nodes + n`), so N consecutive replicas are on N nodes.
    let ids: Vec<ReplicaId> = (1..=options.replicas() as u64).map(ReplicaId).collect();
    let ring = Ring::new(ids.clone(), options.replication);
    let nodes: Vec<NodeState> = ids
        .iter()
        .map(|&id| NodeState::new(id, ring.clone()).with_bug(bug))
        .collect();
    let disks = nodes_disks(&nodes);
    let mut world = World {
        disks,
        bug,
        up: vec![true; options.replicas()],
        slot_of: ids.iter().enumerate().map(|(i, id)| (*id, i)).collect(),
        incarnation: vec![0; options.replicas()],
        next_id: options.replicas() as u64 + 1,
        contexts: BTreeMap::new(),
        knowledge: knowledge::Knowledge::new(options.replicas()),
        read_violations: Vec::new(),
        side: None,
        events: BTreeMap::new(),
        seq: 0,
        now: 0,
        healed: false,
        writes: Vec::new(),
        trace: TraceHash::new(),
        verbose,
        stats: DottedStats::default(),
        rng: rng.fork(),
        nodes,
        options,
    };
    world.schedule_start(&mut rng);
    let end = world.options.safety_micros + world.options.healed_micros;
    while let Some(((time, _), event)) = world.events.pop_first() {
        if time > end {
            break;
        }
        world.now = time;
        if !world.healed && time >= world.options.safety_micros {
            world.heal_all();
        }
        world.handle(event);
    }
    world.heal_all();
    let converged = world.quiesce();
    let mut violations = checker::check(&world.nodes, &world.writes);
    for message in &world.read_violations {
        violations.push(crate::violation::Violation::new(
            crate::violation::Property::Causality,
            message.clone(),
        ));
    }
    if !converged {
        violations.push(crate::violation::Violation::new(
            crate::violation::Property::Progress,
            format!("anti-entropy did not settle in {QUIESCENCE_ROUNDS_MAX} all-pairs rounds"),
        ));
    }
    if verbose {
        println!("stats {:?}", world.stats);
        for node in &world.nodes {
            println!(
                "{} stored={} clock_words={} dkm={} nsk={} {:?}",
                node.id(),
                node.stored_keys(),
                node.clock().bitmap_words(),
                node.dot_keys_len(),
                node.non_stripped_len(),
                node.stats()
            );
        }
    }
    SeedOutcome {
        violations,
        trace_hash: world.trace.value(),
        stats: SeedStats {
            values_proposed: world.stats.writes,
            deliveries: world.stats.sync_objects,
            virtual_micros: world.now,
            trace_events: world.trace.events(),
            ..SeedStats::default()
        },
    }
}

fn nodes_disks(nodes: &[NodeState]) -> Vec<Disk> {
    nodes
        .iter()
        .map(|n| Disk {
            checkpoint: n.clone(),
            journal: Vec::new(),
            synced: 0,
        })
        .collect()
}

impl World {
    /// Applies `input` to replica `i` and appends it to its journal.
    fn apply(&mut self, i: usize, input: Input) {
        let closed = self.nodes[i].closed().len();
        self.nodes[i].apply(&input);
        if self.verbose && self.nodes[i].closed().len() != closed {
            self.log(format!(
                "{} closed {:?}",
                self.nodes[i].id(),
                self.nodes[i].closed()
            ));
        }
        self.disks[i].journal.push(input);
        self.nodes[i].check_invariants();
    }

    /// A group commit: everything journaled so far is on disk; a long
    /// journal becomes a checkpoint.
    fn commit(&mut self, i: usize) {
        let disk = &mut self.disks[i];
        disk.synced = disk.journal.len();
        if disk.journal.len() >= CHECKPOINT_EVERY_INPUTS {
            disk.checkpoint = self.nodes[i].clone();
            disk.journal.clear();
            disk.synced = 0;
        }
    }

    fn at(&mut self, delay: u64, event: Event) {
        self.seq += 1;
        self.events.insert((self.now + delay, self.seq), event);
    }

    fn schedule_start(&mut self, rng: &mut Rng) {
        for c in 0..self.options.clients {
            let delay = rng.exponential(self.options.think_micros);
            self.at(delay, Event::Client(c));
        }
        for i in 0..self.options.replicas() {
            let (sync, strip) = (
                rng.exponential(self.options.sync_every_micros),
                rng.exponential(self.options.strip_every_micros),
            );
            self.at(sync, Event::AntiEntropy(i));
            self.at(strip, Event::Strip(i));
            let commit = rng.exponential(GROUP_COMMIT_MICROS);
            self.at(commit, Event::GroupCommit(i));
        }
        // The nemesis' schedule over the faulty phase.
        let safety = self.options.safety_micros;
        if self.options.crashes {
            for _ in 0..rng.range(1, 4) {
                let (node, at) = (
                    rng.below(self.options.nodes as u64) as usize,
                    rng.below(safety),
                );
                let down = rng.range(10_000, safety / 2);
                self.at(at, Event::Crash(node));
                self.at(at + down, Event::Restart(node));
            }
        }
        if self.options.replacement {
            let (node, at) = (
                rng.below(self.options.nodes as u64) as usize,
                rng.range(safety / 4, safety * 3 / 4),
            );
            self.at(at, Event::Replace(node));
        }
        if self.options.partitions {
            for _ in 0..rng.range(1, 3) {
                let side: Vec<bool> = (0..self.options.nodes).map(|_| rng.chance(0.5)).collect();
                let at = rng.below(safety);
                self.at(at, Event::Partition(side));
                self.at(at + rng.range(50_000, safety / 2), Event::Heal);
            }
        }
    }

    fn heal_all(&mut self) {
        if self.healed {
            return;
        }
        self.healed = true;
        self.side = None;
        self.up.iter_mut().for_each(|u| *u = true);
        self.options.replicate_loss = 0.0;
        self.options.sync_loss = 0.0;
    }

    /// Whether replicas `a` and `b` are on nodes on different sides.
    fn cut(&self, a: usize, b: usize) -> bool {
        let nodes = self.options.nodes;
        self.side
            .as_ref()
            .is_some_and(|s| s[a % nodes] != s[b % nodes])
    }

    fn send(&mut self, from: usize, to: usize, message: Message, loss: f64) -> bool {
        if !self.up[from] || self.cut(from, to) || self.rng.chance(loss) {
            return false;
        }
        let incarnations = (self.incarnation[from], self.incarnation[to]);
        if self.rng.chance(self.options.duplicate) {
            let again = self.rng.range(1, self.options.delay_max_micros);
            let copy = Box::new(message.clone());
            self.at(
                again,
                Event::Deliver {
                    from,
                    to,
                    incarnations,
                    message: copy,
                },
            );
        }
        let delay = self.rng.range(1, self.options.delay_max_micros);
        self.at(
            delay,
            Event::Deliver {
                from,
                to,
                incarnations,
                message: Box::new(message),
            },
        );
        true
    }

    fn index(&self, id: ReplicaId) -> usize {
        self.slot_of[&id]
    }

    fn handle(&mut self, event: Event) {
        match event {
            Event::Client(c) => {
                if !self.healed {
                    self.client_step(c);
                    let think = self.rng.exponential(self.options.think_micros);
                    self.at(think, Event::Client(c));
                }
            }
            Event::Deliver {
                from,
                to,
                incarnations,
                message,
            } => {
                let alive = incarnations == (self.incarnation[from], self.incarnation[to]);
                if !alive || !self.up[to] || self.cut(from, to) {
                    return;
                }
                self.deliver(from, to, *message);
                self.nodes[to].check_invariants();
            }
            Event::SetRing(j, ring) => self.set_ring(j, *ring),
            Event::Replace(node) => {
                if !self.healed {
                    self.replace(node);
                }
            }
            Event::AntiEntropy(i) => {
                if self.up[i] {
                    if let Some((peer, request)) = self.nodes[i].transfer_request() {
                        let to = self.index(peer);
                        let loss = self.options.sync_loss;
                        self.send(i, to, Message::TransferRequest(request), loss);
                    }
                    let peers: Vec<ReplicaId> = self.nodes[i]
                        .ring()
                        .peers(self.nodes[i].id())
                        .into_iter()
                        .filter(|&p| p != self.nodes[i].id())
                        .collect();
                    if let Some(&p) = self.rng.pick(&peers) {
                        let to = self.index(p);
                        let request = self.nodes[i].sync_request(p);
                        let loss = self.options.sync_loss;
                        self.send(i, to, Message::SyncRequest(request), loss);
                    }
                }
                let next = self.rng.exponential(self.options.sync_every_micros);
                self.at(next, Event::AntiEntropy(i));
            }
            Event::Strip(i) => {
                if self.up[i] {
                    let max_keys = self.options.strip_keys;
                    self.apply(i, Input::Strip { max_keys });
                }
                let next = self.rng.exponential(self.options.strip_every_micros);
                self.at(next, Event::Strip(i));
            }
            Event::GroupCommit(i) => {
                if self.up[i] {
                    self.commit(i);
                }
                let next = self.rng.exponential(GROUP_COMMIT_MICROS);
                self.at(next, Event::GroupCommit(i));
            }
            Event::Crash(node) => {
                if !self.healed && self.up[node] {
                    for i in (node..self.nodes.len()).step_by(self.options.nodes) {
                        self.crash(i);
                    }
                }
            }
            Event::Restart(node) => {
                // Rebuilt at the crash from what was synced (its clock
                // included, so no acknowledged dot is reissued).
                for i in (node..self.nodes.len()).step_by(self.options.nodes) {
                    self.up[i] = true;
                }
            }
            Event::Partition(side) => {
                if !self.healed {
                    self.log(format!("partition {side:?}"));
                    self.side = Some(side);
                }
            }
            Event::Heal => self.side = None,
        }
    }

    fn deliver(&mut self, from: usize, to: usize, message: Message) {
        match message {
            Message::Replicate {
                key,
                object,
                seen,
                skips,
            } => {
                self.knowledge.learn(to, &key, &seen);
                self.trace.event(
                    TimeMicros(self.now),
                    1,
                    node(from),
                    node(to),
                    TraceHash::digest_debug(&object),
                );
                self.apply(to, Input::Update { key, object });
                if let Some(skips) = skips {
                    self.apply(to, Input::Skips(skips));
                }
            }
            Message::SyncRequest(request) => {
                // A reply describes only synced state (journal.rs).
                self.commit(to);
                let budget = self.options.budget;
                let reply = self.nodes[to].answer_sync(&request, budget);
                self.apply(
                    to,
                    Input::PeerBases {
                        peer: request.from,
                        bases: request.bases(),
                    },
                );
                if reply.covered < self.nodes[to].clock().entry(self.nodes[to].id()).max() {
                    self.stats.cut_replies += 1;
                }
                let loss = self.options.sync_loss;
                let seen = reply
                    .objects
                    .iter()
                    .map(|(k, _)| self.knowledge.of(to, k))
                    .collect();
                self.send(to, from, Message::SyncReply(reply, seen), loss);
            }
            Message::TransferRequest(request) => {
                // A page describes only synced state, like a sync reply.
                self.commit(to);
                let Some(page) = self.nodes[to].answer_transfer(&request, self.options.budget)
                else {
                    return; // the ring change has not reached it: asked again later
                };
                let loss = self.options.sync_loss;
                let seen = page
                    .objects
                    .iter()
                    .map(|(k, _)| self.knowledge.of(to, k))
                    .collect();
                self.send(to, from, Message::TransferPage(page, seen), loss);
            }
            Message::TransferPage(page, seen) => {
                for ((key, _), seen) in page.objects.iter().zip(&seen) {
                    self.knowledge.learn(to, key, seen);
                }
                if page.next.is_none() {
                    // The last page closes the answerer's entry: what its
                    // clock covers of keys it no longer stores (deleted
                    // and forgotten) is seen through the clock.
                    for k in 0..self.options.keys {
                        let key = Bytes::from(format!("k{k}"));
                        if self.nodes[to].replicates(&key) {
                            let theirs = self.knowledge.of(from, &key);
                            self.knowledge.learn(to, &key, &theirs);
                        }
                    }
                }
                self.stats.transfer_pages += 1;
                self.apply(to, Input::ApplyTransfer(page));
            }
            Message::SyncReply(reply, seen) => {
                for ((key, _), seen) in reply.objects.iter().zip(&seen) {
                    self.knowledge.learn(to, key, seen);
                }
                self.trace.event(
                    TimeMicros(self.now),
                    2,
                    node(from),
                    node(to),
                    TraceHash::digest_debug(&(reply.covered, reply.objects.len())),
                );
                self.stats.syncs += 1;
                self.stats.sync_objects += reply.objects.len() as u64;
                self.apply(to, Input::ApplySync(reply));
            }
        }
    }

    /// One client operation: a read, or a write (after a read unless
    /// blind) or a delete, at random live replicas of a random key.
    fn client_step(&mut self, client: usize) {
        let key = Bytes::from(format!("k{}", self.rng.below(self.options.keys as u64)));
        let replicas = self.nodes[0].ring().replicas(&key);
        let mut live: Vec<usize> = replicas
            .iter()
            .map(|&r| self.index(r))
            .filter(|&i| self.up[i])
            .collect();
        self.rng.shuffle(&mut live);
        if live.is_empty() {
            self.stats.refused += 1;
            return;
        }
        let read = |world: &World| {
            let from: Vec<usize> = live
                .iter()
                .take(world.options.read_quorum)
                .copied()
                .collect();
            let object = from.iter().fold(Object::new(), |acc, &i| {
                acc.merge(&world.nodes[i].fetch(&key))
            });
            let seen = world.knowledge.read(&from, &key);
            (object, seen)
        };
        let roll = self.rng.unit();
        if roll < 0.3 {
            let (object, seen) = read(self);
            self.stats.reads += 1;
            self.check_read(&key, &object);
            self.contexts
                .insert((client, key.clone()), (object.read_context(), seen));
            self.trace.event(
                TimeMicros(self.now),
                3,
                NodeId(client as u32),
                NodeId(0),
                TraceHash::digest_debug(&object.values()),
            );
            return;
        }
        let stale = self.contexts.get(&(client, key.clone())).cloned();
        let (context, seen) = if self.rng.chance(self.options.blind_share) {
            (VersionVector::new(), BTreeSet::new())
        } else if let Some(old) = stale.filter(|_| self.rng.chance(self.options.stale_share)) {
            // A context from an earlier read: versions written since are
            // kept as siblings.
            old
        } else {
            let (object, seen) = read(self);
            self.check_read(&key, &object);
            let context = object.read_context();
            self.contexts
                .insert((client, key.clone()), (context.clone(), seen.clone()));
            (context, seen)
        };
        let value = if self.rng.chance(self.options.delete_share) {
            None
        } else {
            Some(Bytes::from(format!("v{}-{}", client, self.stats.writes)))
        };
        let coordinator = live[0];
        let object = match self.nodes[coordinator].coordinate(&key, value.clone(), &context) {
            Ok(object) => object,
            Err(refused) => panic!("a live replica of {key:?} refused: {refused:?}"),
        };
        self.disks[coordinator].journal.push(Input::Coordinate {
            key: key.clone(),
            value: value.clone(),
            context: context.clone(),
        });
        // Synced before the client hears of it or a replica gets it.
        if self.bug != DottedBug::AckBeforeSync {
            self.commit(coordinator);
        }
        let id = self.nodes[coordinator].id();
        let dot = Dot::new(id, self.nodes[coordinator].clock().base(id));
        assert!(
            object.versions().contains_key(&dot),
            "the write's dot {dot} is in its object"
        );
        self.nodes[coordinator].check_invariants();
        self.stats.writes += 1;
        self.writes.push(Write {
            key: key.clone(),
            dot,
            value,
            context: context.clone(),
            lost: false,
        });
        let unseen = self
            .knowledge
            .write(&self.writes, coordinator, &context, &seen);
        for covered in unseen {
            self.read_violations.push(format!(
                "{key:?}: the write {dot} discards {covered}, which no replica its client read had seen"
            ));
        }
        let coordinator_seen = self.knowledge.of(coordinator, &key);
        self.trace.event(
            TimeMicros(self.now),
            4,
            NodeId(client as u32),
            node(coordinator),
            TraceHash::digest_debug(&dot),
        );
        for &r in &replicas {
            let to = self.index(r);
            if to != coordinator {
                let loss = self.options.replicate_loss;
                self.stats.replicate_sent += 1;
                let message = Message::Replicate {
                    key: key.clone(),
                    object: object.clone(),
                    seen: coordinator_seen.clone(),
                    skips: self.nodes[coordinator].skips_for(r, dot),
                };
                if !self.send(coordinator, to, message, loss) {
                    self.stats.replicate_lost += 1;
                }
            }
        }
    }

    /// A read's context covers every version it returned (so a write with
    /// it supersedes them), and it returned only values that were written.
    fn check_read(&mut self, key: &Bytes, object: &Object) {
        let context = object.read_context();
        for (dot, value) in object.versions() {
            if !context.covers(*dot) {
                self.read_violations
                    .push(format!("{key:?}: a read's context misses {dot}"));
            }
            if value.is_some()
                && !self
                    .writes
                    .iter()
                    .any(|w| w.dot == *dot && &w.value == value)
            {
                self.read_violations.push(format!(
                    "{key:?}: a read returned {dot}={value:?}, never written"
                ));
            }
        }
    }

    fn log(&self, line: String) {
        if self.verbose {
            println!("{:>9}us {line}", self.now);
        }
    }
}

fn node(i: usize) -> NodeId {
    NodeId(i as u32 + 1)
}
