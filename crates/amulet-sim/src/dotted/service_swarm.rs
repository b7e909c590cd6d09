//! `amulet-sim --dotted-service`: the node's eventual-map service
//! (`amulet_dotted::Service`, the code the node runs) under faults. Nodes
//! that apply the map's placement at different times, clients that read
//! with R, write with W through random nodes (forwarded to a replica),
//! write over what they read, write blind and delete; messages lost,
//! duplicated, delayed and reordered; partitions; crashes that restart a
//! node from its checkpoint and journal, as the node's runtime keeps them
//! (every record synced before the messages and replies after it, a
//! batch with nothing to send left unsynced until then). Then
//! the faults heal, clients stop, and the timers run to quiescence; the
//! same checkers as `--dotted` judge the replicas' final state against
//! every write the journals hold, and every acknowledged write and every
//! read is checked against them.
//!
//! In some seeds one node loses its store (journal and checkpoint gone, a
//! disk replaced): it restarts empty and makes no replicas until its store
//! is registered through the global stream, which replaces its replica
//! ids in the placement (new ids on the same node, as the node runtime's
//! `RegisterEventualStore`); the new replicas start from full transfers.
//! Writes no other replica held durably at the loss may be gone; a write
//! acknowledged by at least two replicas must survive.

use super::{checker, Write};
use crate::rng::Rng;
use crate::runner::{SeedOutcome, SeedStats};
use crate::trace::TraceHash;
use crate::violation::{Property, Violation};
use amulet_dotted::service::batch::Batch;
use amulet_dotted::service::durable::{Record, Replicas};
use amulet_dotted::service::message::{Message, Versioned};
use amulet_dotted::{
    Dot, DottedBug, Input, NodeState, Operation, Output, Placement, ReplicaId, Service,
    ServiceConfig, VersionVector,
};
use amulet_types::{NodeId, TimeMicros};
use bytes::Bytes;
use std::collections::{BTreeMap, BTreeSet};

const MAP: &str = "m";
/// How long the healed phase may run before the replicas must be
/// quiescent.
const QUIESCENCE_MICROS_MAX: u64 = 300_000_000;
/// The configuration version that created the map.
const VERSION: u64 = 3;
/// The share of seeds in which one node loses its store.
const STORE_LOSS_SHARE: f64 = 0.3;

enum Event {
    Deliver {
        from: u32,
        to: u32,
        bytes: Vec<u8>,
    },
    Tick {
        node: u32,
    },
    Place {
        node: u32,
    },
    /// A client's next step, or its request's timeout (`step` names the
    /// request; a stale one does nothing).
    Client {
        client: usize,
        step: u64,
    },
    Crash {
        node: u32,
    },
    Restart {
        node: u32,
    },
    /// The node's journal and checkpoint are destroyed.
    LoseStore {
        node: u32,
    },
    /// The restarted node's new store is registered through the global
    /// stream: its replica ids are replaced in the placement.
    Register {
        node: u32,
    },
}

struct Node {
    service: Option<Service>,
    placed: bool,
    checkpoint: Replicas,
    journal: Vec<Record>,
    /// Records not synced yet: batches with nothing to send, and with
    /// `--bug ack-before-sync` everything (the runtime sends before it
    /// syncs). A crash loses these.
    unsynced: Vec<Record>,
    epoch: u32,
    /// The placement version from which the cluster knows this node's
    /// store (`None`: always; `u64::MAX`: lost, not registered yet). The
    /// service makes replicas only from then on (the runtime's hosting).
    hosting_from: Option<u64>,
}

struct Client {
    /// The context of this client's last read of each key.
    contexts: BTreeMap<Bytes, Vec<u8>>,
    /// The request in flight: token, key, written value, replicas that
    /// must acknowledge a write.
    waiting: Option<(u64, Bytes, Option<Option<Bytes>>, u32)>,
    /// Requests issued so far.
    step: u64,
}

struct World {
    rng: Rng,
    now: u64,
    seq: u64,
    events: BTreeMap<(u64, u64), Event>,
    nodes: Vec<Node>,
    clients: Vec<Client>,
    placement: Placement,
    /// The configuration version of `placement` (a store registration
    /// makes a new one).
    version: u64,
    config: ServiceConfig,
    bug: DottedBug,
    /// Every coordinated write a synced journal holds, in order, per
    /// replica: its dot is its position (counters from 1).
    history: BTreeMap<ReplicaId, Vec<(Bytes, Option<Bytes>, VersionVector)>>,
    /// Coordinated writes no other replica held durably when their
    /// coordinator's store was lost.
    lost: BTreeSet<Dot>,
    /// Acknowledged writes: key, value, replicas that acknowledged.
    acknowledged: Vec<(Bytes, Option<Bytes>, u32)>,
    reads: Vec<(Bytes, Vec<Bytes>)>,
    tokens: u64,
    /// Token → client.
    owners: BTreeMap<u64, usize>,
    side: Option<BTreeSet<u32>>,
    loss: f64,
    /// Replication messages only (so that only anti-entropy repairs).
    replicate_loss: f64,
    duplicate: f64,
    delay_max: u64,
    faulty_until: u64,
    trace: TraceHash,
    stats: (u64, u64, u64, u64),
    /// Store losses: draws of their own (`run_service_seed`).
    losses: Rng,
    stores_lost: u64,
}

/// Runs one seed of the service swarm.
pub fn run_service_seed(seed: u64, verbose: bool, bug: DottedBug) -> SeedOutcome {
    let mut rng = Rng::new(seed);
    let node_count = rng.range(3, 5) as u32;
    let replication = rng.range(2, 3.min(u64::from(node_count))) as u32;
    let vnodes = node_count * rng.range(1, 3) as u32;
    let ids: Vec<u32> = (1..=node_count).collect();
    let placement = Placement::new(replication, vnodes, &ids, VERSION).expect("a valid placement");
    let mut config = ServiceConfig {
        sync_interval_micros: rng.range(20_000, 200_000),
        strip_interval_micros: rng.range(20_000, 200_000),
        strip_keys: rng.range(1, 64) as usize,
        // Both are the runtime's bugs, not the replicas'.
        bug: if matches!(bug, DottedBug::AckBeforeSync | DottedBug::ReuseReplicaId) {
            DottedBug::None
        } else {
            bug
        },
        ..ServiceConfig::default()
    };
    if rng.chance(0.5) {
        config.budget.objects = rng.range(1, 4) as usize;
        config.budget.dots = rng.range(1, 8) as usize;
    }
    let keys = rng.range(2, 8);
    let clients = rng.range(1, 4) as usize;
    if verbose {
        println!(
            "seed={seed} bug={bug:?} nodes={node_count} replication={replication} ring={:?} keys={keys} clients={clients} config={config:?}",
            placement.ring.members()
        );
    }
    let mut world = World {
        now: 0,
        seq: 0,
        events: BTreeMap::new(),
        nodes: Vec::new(),
        clients: (0..clients)
            .map(|_| Client {
                contexts: BTreeMap::new(),
                waiting: None,
                step: 0,
            })
            .collect(),
        placement,
        version: VERSION,
        config,
        bug,
        history: BTreeMap::new(),
        lost: BTreeSet::new(),
        acknowledged: Vec::new(),
        reads: Vec::new(),
        tokens: 0,
        owners: BTreeMap::new(),
        side: None,
        loss: *rng.pick(&[0.0, 0.05, 0.3]).expect("listed"),
        duplicate: *rng.pick(&[0.0, 0.05]).expect("listed"),
        replicate_loss: *rng.pick(&[0.0, 0.0, 1.0]).expect("listed"),
        delay_max: rng.range(100, 20_000),
        faulty_until: 4_000_000,
        trace: TraceHash::new(),
        stats: (0, 0, 0, 0),
        rng: rng.fork(),
        // A generator of their own, so that seeds without a loss run
        // exactly as before store losses were simulated.
        losses: Rng::new(seed ^ 0x6c6f_7374_5f73_746f),
        stores_lost: 0,
    };
    for node in 1..=node_count {
        let mut service = Service::new(node, 1, config, Replicas::default());
        service.set_placements(0, VERSION - 1, BTreeMap::new());
        world.nodes.push(Node {
            service: Some(service),
            placed: false,
            checkpoint: Replicas::default(),
            journal: Vec::new(),
            unsynced: Vec::new(),
            epoch: 1,
            hosting_from: None,
        });
        // The map's creation reaches nodes at different times.
        let at = rng.range(0, 300_000);
        world.at(at, Event::Place { node });
        world.at(1_000, Event::Tick { node });
    }
    for client in 0..clients {
        world.at(
            rng.range(300_000, 400_000),
            Event::Client { client, step: 0 },
        );
    }
    let crashes = rng.chance(0.5);
    if crashes {
        for _ in 0..rng.range(1, 3) {
            let node = rng.range(1, u64::from(node_count)) as u32;
            world.at(rng.range(500_000, 3_500_000), Event::Crash { node });
        }
    }
    if rng.chance(0.4) {
        let cut = rng.range(1, u64::from(node_count) - 1) as u32;
        world.side = Some((1..=cut).collect());
    }
    if world.losses.chance(STORE_LOSS_SHARE) {
        let node = world.losses.range(1, u64::from(node_count)) as u32;
        let at = world.losses.range(500_000, 3_000_000);
        world.at(at, Event::LoseStore { node });
    }
    // The faulty phase and 10 s healed; then on, a second at a time, until
    // every replica is quiescent (small budgets close a few dots per
    // round) or QUIESCENCE_MICROS_MAX.
    let mut end = world.faulty_until + 10_000_000;
    loop {
        while let Some(((time, _), event)) = world.events.pop_first() {
            if time > end {
                world.events.insert((time, 0), event);
                break;
            }
            world.now = time;
            if time >= world.faulty_until {
                world.side = None;
            }
            world.handle(event, keys);
        }
        if world.quiescent() || end >= world.faulty_until + QUIESCENCE_MICROS_MAX {
            break;
        }
        end += 1_000_000;
    }
    world.check(verbose)
}

impl World {
    fn at(&mut self, delay: u64, event: Event) {
        self.seq += 1;
        self.events.insert((self.now + delay, self.seq), event);
    }

    fn up(&self, node: u32) -> bool {
        self.nodes[node as usize - 1].service.is_some()
    }

    fn cut(&self, a: u32, b: u32) -> bool {
        self.side
            .as_ref()
            .is_some_and(|side| side.contains(&a) != side.contains(&b))
    }

    fn handle(&mut self, event: Event, keys: u64) {
        let now = self.now;
        match event {
            Event::Deliver { from, to, bytes } => {
                if let Some(service) = self.nodes[to as usize - 1].service.as_mut() {
                    service
                        .on_message(now, from, &bytes)
                        .expect("a sent message decodes");
                    self.carry_out(to);
                }
            }
            Event::Tick { node } => {
                let i = node as usize - 1;
                if let Some(service) = self.nodes[i].service.as_mut() {
                    service.tick(now);
                    self.carry_out(node);
                    // Under the bug the runtime syncs every 50 ms, after
                    // the replies and messages went out.
                    if now % 50_000 < 1_000 {
                        let unsynced = std::mem::take(&mut self.nodes[i].unsynced);
                        self.sync(node, unsynced);
                    }
                    // Now and then a checkpoint folds the journal.
                    if self.rng.chance(0.01) {
                        // The runtime syncs what waits before it folds.
                        let unsynced = std::mem::take(&mut self.nodes[i].unsynced);
                        self.sync(node, unsynced);
                        let n = &mut self.nodes[i];
                        n.checkpoint = n.service.as_ref().expect("up").replicas();
                        n.journal.clear();
                    }
                }
                self.at(1_000, Event::Tick { node });
            }
            Event::Place { node } => {
                let i = node as usize - 1;
                self.nodes[i].placed = true;
                let hosting = self.nodes[i]
                    .hosting_from
                    .is_none_or(|from| self.version >= from);
                if let Some(service) = self.nodes[i].service.as_mut() {
                    let placements = BTreeMap::from([(MAP.to_string(), self.placement.clone())]);
                    service.set_hosting(hosting);
                    service.set_placements(now, self.version, placements);
                    self.carry_out(node);
                }
            }
            Event::Client { client, step } => {
                if step == self.clients[client].step {
                    self.client_step(client, keys);
                }
            }
            Event::Crash { node } => {
                let i = node as usize - 1;
                if self.nodes[i].service.take().is_some() {
                    self.stats.2 += 1;
                    // What was not synced is gone.
                    self.nodes[i].unsynced.clear();
                    // Its clients' requests go unanswered.
                    let after = self.rng.range(50_000, 500_000);
                    self.at(after, Event::Restart { node });
                }
            }
            Event::Restart { node } => {
                let i = node as usize - 1;
                let n = &mut self.nodes[i];
                let mut replicas = n.checkpoint.clone();
                for record in &n.journal {
                    replicas.apply(record).expect("a synced journal replays");
                }
                n.epoch += 1;
                let mut service = Service::new(node, n.epoch, self.config, replicas);
                // Not hosting until the configuration that registered the
                // store comes (a lost store's replicas are not made again
                // under their old ids).
                service.set_hosting(n.hosting_from.is_none());
                // The host restarts from an older checkpoint and replays
                // the global stream: first a configuration from before the
                // map, the map's creation a moment later.
                service.set_placements(now, VERSION - 1, BTreeMap::new());
                let placed = n.placed;
                n.service = Some(service);
                self.carry_out(node);
                if placed {
                    let after = self.rng.range(0, 300_000);
                    self.at(after, Event::Place { node });
                }
            }
            Event::LoseStore { node } => {
                if now < self.faulty_until {
                    self.lose_store(node);
                }
            }
            Event::Register { node } => self.register(node),
        }
    }

    /// Node `node`'s disk is destroyed while it runs: it stops, and comes
    /// back empty. Writes its replicas coordinated that no other replica
    /// of their key holds durably (in its checkpoint and synced journal)
    /// may be gone with it.
    fn lose_store(&mut self, node: u32) {
        let i = node as usize - 1;
        let durable: Vec<Replicas> = (0..self.nodes.len())
            .filter(|&j| j != i)
            .map(|j| {
                let mut replicas = self.nodes[j].checkpoint.clone();
                for record in &self.nodes[j].journal {
                    replicas.apply(record).expect("a synced journal replays");
                }
                replicas
            })
            .collect();
        for id in self.placement.held_by(node) {
            for (k, (key, _, _)) in self.history.get(&id).into_iter().flatten().enumerate() {
                let dot = Dot::new(id, k as u64 + 1);
                // A replica of the key whose clock has the dot stored the
                // version or a later one.
                let held = durable.iter().any(|replicas| {
                    replicas.maps.get(MAP).is_some_and(|(_, states)| {
                        states.values().any(|s| {
                            s.replicates(key) && s.dotted().is_some_and(|d| d.clock().contains(dot))
                        })
                    })
                });
                if !held {
                    self.lost.insert(dot);
                }
            }
        }
        self.stores_lost += 1;
        let n = &mut self.nodes[i];
        n.service = None;
        n.unsynced.clear();
        n.checkpoint = Replicas::default();
        n.journal.clear();
        // Under the bug the node comes back under its old ids at once.
        if self.bug != DottedBug::ReuseReplicaId {
            n.hosting_from = Some(u64::MAX);
        }
        let restart = self.losses.range(50_000, 500_000);
        self.at(restart, Event::Restart { node });
        if self.bug != DottedBug::ReuseReplicaId {
            let register = restart + self.losses.range(10_000, 300_000);
            self.at(register, Event::Register { node });
        }
        self.trace.event(
            TimeMicros(self.now),
            6,
            NodeId(node),
            NodeId(0),
            self.lost.len() as u64,
        );
    }

    /// The lost store's registration is ordered: a new configuration
    /// replaces each of the node's replica ids by a fresh one on the same
    /// node, and reaches every node at its own time.
    fn register(&mut self, node: u32) {
        for old in self.placement.held_by(node) {
            self.placement = self.placement.replace(old);
        }
        self.version += 1;
        self.nodes[node as usize - 1].hosting_from = Some(self.version);
        for other in 1..=self.nodes.len() as u32 {
            let after = self.losses.range(0, 300_000);
            self.at(after, Event::Place { node: other });
        }
    }

    /// The runtime: records synced first (late under the bug), then
    /// messages and replies. A batch with nothing to send stays unsynced
    /// (a crash loses it) until a batch that sends something syncs it.
    fn carry_out(&mut self, node: u32) {
        let i = node as usize - 1;
        let batch = Batch::split(self.nodes[i].service.as_mut().expect("up").drain());
        let must_sync = batch.must_sync();
        self.nodes[i].unsynced.extend(batch.records);
        if self.bug != DottedBug::AckBeforeSync && must_sync {
            let unsynced = std::mem::take(&mut self.nodes[i].unsynced);
            self.sync(node, unsynced);
        }
        for output in batch.visible {
            match output {
                Output::Journal(_) => unreachable!("records are split off"),
                Output::Send { to, bytes } => self.send(node, to, bytes),
                Output::Reply { token, result } => self.reply(token, result),
            }
        }
    }

    fn sync(&mut self, node: u32, records: Vec<Record>) {
        for record in records {
            if let Record::Input {
                replica,
                input:
                    Input::Coordinate {
                        key,
                        value,
                        context,
                    },
                ..
            } = &record
            {
                self.history.entry(*replica).or_default().push((
                    key.clone(),
                    value.clone(),
                    context.clone(),
                ));
            }
            self.nodes[node as usize - 1].journal.push(record);
        }
    }

    fn send(&mut self, from: u32, to: u32, bytes: Vec<u8>) {
        let faulty = self.now < self.faulty_until;
        if self.cut(from, to) || (faulty && self.rng.chance(self.loss)) {
            self.stats.3 += 1;
            return;
        }
        if faulty
            && self.replicate_loss > 0.0
            && matches!(Message::decode(&bytes), Ok(Message::Replicate { .. }))
            && self.rng.chance(self.replicate_loss)
        {
            self.stats.3 += 1;
            return;
        }
        let copies = if faulty && self.rng.chance(self.duplicate) {
            2
        } else {
            1
        };
        for _ in 0..copies {
            let delay = self.rng.range(50, self.delay_max);
            let bytes = bytes.clone();
            self.at(delay, Event::Deliver { from, to, bytes });
        }
    }

    fn reply(&mut self, token: u64, result: Result<Versioned, amulet_dotted::Refusal>) {
        let Some(client) = self.owners.remove(&token) else {
            return;
        };
        let Some((waiting, key, written, needed)) = self.clients[client].waiting.take() else {
            return;
        };
        assert_eq!(waiting, token, "a client waits for one request");
        if let Ok(versioned) = &result {
            match written {
                Some(value) => self.acknowledged.push((key.clone(), value, needed)),
                None => {
                    self.reads.push((key.clone(), versioned.values.clone()));
                    self.clients[client]
                        .contexts
                        .insert(key.clone(), versioned.context.clone());
                }
            }
            self.trace.event(
                TimeMicros(self.now),
                5,
                NodeId(client as u32),
                NodeId(0),
                TraceHash::digest_debug(&versioned.values),
            );
        }
        let think = self.rng.range(1_000, 30_000);
        let step = self.clients[client].step;
        self.at(think, Event::Client { client, step });
    }

    fn client_step(&mut self, client: usize, keys: u64) {
        if self.now >= self.faulty_until {
            return;
        }
        if let Some((token, _, _, _)) = self.clients[client].waiting.take() {
            // Unanswered for 3 s (its node crashed): outcome unknown.
            self.owners.remove(&token);
        }
        self.clients[client].step += 1;
        let step = self.clients[client].step;
        let live: Vec<u32> = (1..=self.nodes.len() as u32)
            .filter(|&n| self.up(n))
            .collect();
        let Some(&node) = self.rng.pick(&live) else {
            self.at(100_000, Event::Client { client, step });
            return;
        };
        let key = Bytes::from(format!("k{}", self.rng.below(keys)));
        let n = self.placement.ring.replication() as u64;
        let quorum = self.rng.range(0, n) as u32;
        let roll = self.rng.unit();
        let (operation, written) = if roll < 0.35 {
            (Operation::Get { r: quorum }, None)
        } else {
            let context = if self.rng.chance(0.2) {
                Vec::new()
            } else {
                self.clients[client]
                    .contexts
                    .get(&key)
                    .cloned()
                    .unwrap_or_default()
            };
            self.stats.0 += 1;
            let value = if roll < 0.45 {
                None
            } else {
                Some(Bytes::from(format!("c{client}-{}", self.stats.0)))
            };
            let operation = Operation::Write {
                value: value.clone(),
                context,
                w: quorum,
            };
            (operation, Some(value))
        };
        self.tokens += 1;
        let token = self.tokens;
        self.owners.insert(token, client);
        // The service's quorum: 0 asks for a majority.
        let needed = if quorum == 0 {
            n as u32 / 2 + 1
        } else {
            quorum
        };
        self.clients[client].waiting = Some((token, key.clone(), written, needed));
        let now = self.now;
        let service = self.nodes[node as usize - 1]
            .service
            .as_mut()
            .expect("live");
        service.submit(now, token, MAP, key, operation);
        self.carry_out(node);
        self.at(3_000_000, Event::Client { client, step });
    }

    /// Every node up and every replica without metadata left.
    /// Every node up, every replica of the placement made, without
    /// metadata left, and done replacing (transfers finished, retired ids
    /// closed and forgotten).
    fn quiescent(&self) -> bool {
        self.nodes.iter().enumerate().all(|(i, n)| {
            n.service.as_ref().is_some_and(|s| {
                let replaced = self.placement.held_by(i as u32 + 1).iter().all(|id| {
                    s.replica(MAP, *id)
                        .and_then(|r| r.dotted())
                        .is_some_and(|d| {
                            d.transfers_pending() == 0
                                && d.retired_in_flight() == 0
                                && !d.clock().ids().any(|id| d.ring().is_retired(id))
                        })
                });
                replaced
                    && s.status()
                        .iter()
                        .all(|r| r.dot_keys == 0 && r.non_stripped == 0 && r.clock_bitmap_bits == 0)
            })
        })
    }

    fn check(self, verbose: bool) -> SeedOutcome {
        let mut violations = Vec::new();
        let mut states: Vec<NodeState> = Vec::new();
        for (i, n) in self.nodes.iter().enumerate() {
            let Some(service) = &n.service else {
                violations.push(Violation::new(
                    Property::Progress,
                    format!("node {} is down at the end", i + 1),
                ));
                continue;
            };
            for id in self.placement.held_by(i as u32 + 1) {
                match service.replica(MAP, id).and_then(|r| r.dotted()) {
                    Some(state) => states.push(state.clone()),
                    None => violations.push(Violation::new(
                        Property::Progress,
                        format!("{id} was never made on node {}", i + 1),
                    )),
                }
            }
        }
        let mut writes = Vec::new();
        for (id, coordinated) in &self.history {
            for (k, (key, value, context)) in coordinated.iter().enumerate() {
                writes.push(Write {
                    key: key.clone(),
                    dot: Dot::new(*id, k as u64 + 1),
                    value: value.clone(),
                    context: context.clone(),
                    lost: self.lost.contains(&Dot::new(*id, k as u64 + 1)),
                });
            }
        }
        if violations.is_empty() {
            violations.extend(checker::check(&states, &writes));
        }
        let journaled: BTreeSet<(Bytes, Option<Bytes>)> = writes
            .iter()
            .map(|w| (w.key.clone(), w.value.clone()))
            .collect();
        for (key, value, needed) in &self.acknowledged {
            if value.is_none() {
                continue;
            }
            let Some(write) = writes.iter().find(|w| w.key == *key && w.value == *value) else {
                violations.push(Violation::new(
                    Property::Causality,
                    format!("{key:?}: the acknowledged write {value:?} is in no journal"),
                ));
                continue;
            };
            // Two replicas synced it before it was acknowledged: one store
            // lost leaves a durable copy.
            if write.lost && *needed >= 2 {
                violations.push(Violation::new(
                    Property::Causality,
                    format!(
                        "{key:?}: the write {}={value:?}, acknowledged by {needed} replicas, \
                         was on no other replica's disk when its coordinator's store was lost",
                        write.dot
                    ),
                ));
            }
        }
        for (key, values) in &self.reads {
            for value in values {
                if !journaled.contains(&(key.clone(), Some(value.clone()))) {
                    violations.push(Violation::new(
                        Property::Causality,
                        format!("{key:?}: a read returned {value:?}, never durably written"),
                    ));
                }
            }
        }
        if verbose {
            println!(
                "writes={} acknowledged={} reads={} crashes={} dropped={} stores_lost={} writes_lost={} violations={}",
                writes.len(),
                self.acknowledged.len(),
                self.reads.len(),
                self.stats.2,
                self.stats.3,
                self.stores_lost,
                self.lost.len(),
                violations.len()
            );
        }
        let trace_hash = self.trace.value();
        SeedOutcome {
            violations,
            trace_hash,
            stats: SeedStats {
                values_proposed: self.stats.0,
                virtual_micros: self.now,
                trace_events: self.trace.events(),
                stores_lost: self.stores_lost,
                ..SeedStats::default()
            },
        }
    }
}
