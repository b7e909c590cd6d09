//! DottedDB against its MerkleDB baseline on the same ring, workload and
//! simulated network (DottedDB §V-E, Table I, Figs. 3–5), in virtual
//! time: `amulet-dotted-bench OUTDIR` writes `anti_entropy.csv`,
//! `latency.csv` and `deletes.csv` (plotted by
//! `scripts/plot_dotted_compare.py`).
//!
//! Scaled from the paper's 500,000 keys and 2,500 updates/s over 64 vnodes
//! for 20 minutes: 10,000 keys, 1,000 read-modify-write updates/s over 16
//! virtual nodes (4 nodes x 4), N = 3, 30 virtual seconds. The paper's
//! three parameters: objects per Merkle leaf (H: about 300, L: about 1),
//! state changed between a replica's anti-entropy runs (H: 10%, L: 1%,
//! set by the sync interval `f * keys / rate`), replication loss (H: 100%,
//! L: 10%). Anti-entropy runs as one exchange per replica per interval,
//! completed at once (its bytes counted message by message); replication
//! messages take 1–5 ms and are lost at the configured rate.

use super::compare_node::Node;
use crate::rng::Rng;
use amulet_dotted::merkle::ExchangeReply;
use amulet_dotted::{
    Dot, MerkleNode, NodeState, Object, ReplicaId, Ring, Skips, SyncBudget, SyncReply, SyncRequest,
    VersionVector,
};
use bytes::Bytes;
use serde::Serialize;
use std::collections::{BTreeMap, VecDeque};

/// One configuration of the comparison.
#[derive(Clone, Copy, Debug)]
pub struct Config {
    /// DottedDB, or MerkleDB with this many objects per leaf (H/L).
    pub system: System,
    /// Share of a replica's keys updated between its anti-entropy runs.
    pub state_changed: f64,
    /// Replication message loss.
    pub loss: f64,
}

impl Config {
    /// `system` with `state_changed` and `loss`.
    fn at(state_changed: f64, system: System, loss: f64) -> Config {
        Config {
            system,
            state_changed,
            loss,
        }
    }
}

/// Replication loss in the deletes and churn experiments.
const DELETES_CHURN_LOSS: f64 = 0.1;

/// The store under test.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum System {
    /// Node-wide dot clocks.
    Dotted,
    /// Per-key clocks and Merkle trees.
    Merkle {
        /// Leaves per tree.
        segments: usize,
        /// Children per inner node.
        width: usize,
    },
}

/// The scale of a run.
#[derive(Clone, Copy, Debug)]
pub struct Scale {
    /// Nodes x virtual nodes.
    pub vnodes: usize,
    /// Replicas per key.
    pub replication: usize,
    /// Keys, all loaded before the run.
    pub keys: usize,
    /// Updates per virtual second.
    pub rate: u64,
    /// Virtual seconds.
    pub seconds: u64,
}

impl Default for Scale {
    fn default() -> Scale {
        Scale {
            vnodes: 16,
            replication: 3,
            keys: 10_000,
            rate: 1_000,
            seconds: 30,
        }
    }
}

/// What one run measured.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Measured {
    /// Anti-entropy bytes per virtual second, all messages.
    pub ae_bytes_per_s: f64,
    /// Of which keys and values of objects sent.
    pub object_data_per_s: f64,
    /// Of which the objects' clocks (16 bytes per dot and context entry).
    pub object_meta_per_s: f64,
    /// Of which the protocol's own metadata (clocks, hashes, key lists).
    pub sync_meta_per_s: f64,
    /// Node metadata per virtual node at the end (DottedDB: clock,
    /// dot-key map, watermark, non-stripped keys; MerkleDB: hash trees).
    pub metadata_per_vnode: f64,
    /// DottedDB's share of it by structure: clock, dot-key map,
    /// watermark, non-stripped keys (zeros for MerkleDB).
    pub metadata_parts_per_vnode: [f64; 4],
    /// The stored objects' clocks per virtual node at the end.
    pub object_clocks_per_vnode: f64,
    /// Replication latencies (write to stored at another replica), ms.
    pub latencies_ms: Vec<f64>,
    /// Writes never replicated everywhere by the end.
    pub unreplicated: u64,
}

/// A replication message in flight: arrival, replica slot, key, object,
/// the coordinator's skip hint.
type Flight = (u64, usize, Bytes, Object, Option<Skips>);

/// Bytes of a message by category: (total, object data, object
/// metadata), each as encoded (postcard): data is the keys and values of
/// the objects carried, metadata their version dots and contexts, and the
/// rest of the message is the protocol's own metadata.
fn sizes<T: Serialize>(message: &T, objects: &[(Bytes, Object)]) -> (usize, usize, usize) {
    let encoded = |v: &dyn erased::Encode| v.encoded_len();
    let total = postcard::to_allocvec(message).expect("encodes").len();
    let data = objects.iter().map(|(k, o)| k.len() + o.value_bytes()).sum();
    let meta = objects
        .iter()
        .map(|(_, o)| {
            let dots: Vec<Dot> = o.versions().keys().copied().collect();
            encoded(&(dots, o.context().clone()))
        })
        .sum();
    (total, data, meta)
}

mod erased {
    /// Encoded length, for any serializable value.
    pub trait Encode {
        fn encoded_len(&self) -> usize;
    }
    impl<T: serde::Serialize> Encode for T {
        fn encoded_len(&self) -> usize {
            postcard::to_allocvec(self).expect("encodes").len()
        }
    }
}

struct Run {
    nodes: Vec<Node>,
    ring: Ring,
    rng: Rng,
    /// (key, replica) → writes not yet there: (dot, time written).
    pending: BTreeMap<(Bytes, usize), Vec<(Dot, u64)>>,
    latencies_ms: Vec<f64>,
    bytes: (usize, usize, usize),
}

impl Run {
    /// A run with every key loaded.
    fn loaded(config: Config, scale: Scale, seed: u64) -> Run {
        let mut run = Run::new(config, scale, seed);
        run.load(scale);
        run
    }

    /// A random peer of slot `a` (not itself).
    fn random_peer(&mut self, a: usize) -> usize {
        let me = self.ring.members()[a];
        let peers: Vec<ReplicaId> = self
            .ring
            .peers(me)
            .into_iter()
            .filter(|p| *p != me)
            .collect();
        run_slot(&self.ring, *self.rng.pick(&peers).expect("peers"))
    }

    fn new(config: Config, scale: Scale, seed: u64) -> Run {
        let ids: Vec<ReplicaId> = (1..=scale.vnodes as u64).map(ReplicaId).collect();
        let ring = Ring::new(ids.clone(), scale.replication);
        let nodes = ids
            .iter()
            .map(|&id| match config.system {
                System::Dotted => Node::Dotted(Box::new(NodeState::new(id, ring.clone()))),
                System::Merkle { segments, width } => {
                    Node::Merkle(MerkleNode::new(id, ring.clone(), segments, width))
                }
            })
            .collect();
        Run {
            nodes,
            ring,
            rng: Rng::new(seed),
            pending: BTreeMap::new(),
            latencies_ms: Vec::new(),
            bytes: (0, 0, 0),
        }
    }

    fn key(i: usize) -> Bytes {
        Bytes::from(format!("user{i:08}"))
    }

    fn settle(&mut self, r: usize, key: &Bytes, now: u64) {
        let Some(waiting) = self.pending.get_mut(&(key.clone(), r)) else {
            return;
        };
        let object = self.nodes[r].fetch(key);
        let context = object.read_context();
        let before = waiting.len();
        let mut done = Vec::new();
        waiting.retain(|(dot, t)| {
            let there = object.versions().contains_key(dot) || context.covers(*dot);
            if there {
                // `converges` settles at time 0 (it measures rounds, not
                // latency), after writes stamped later.
                done.push(now.saturating_sub(*t) as f64 / 1000.0);
            }
            !there
        });
        if waiting.is_empty() && before > 0 {
            self.pending.remove(&(key.clone(), r));
        }
        self.latencies_ms.extend(done);
    }

    /// Every key written once and replicated everywhere (the loading
    /// phase), anti-entropy state settled.
    fn load(&mut self, scale: Scale) {
        for i in 0..scale.keys {
            let key = Run::key(i);
            let replicas = self.ring.replicas(&key);
            let c = run_slot(&self.ring, replicas[0]);
            let object =
                self.nodes[c].coordinate(&key, Bytes::from(vec![7u8; 100]), &VersionVector::new());
            for r in &replicas[1..] {
                let skips = self.nodes[c].skips_for(*r);
                self.nodes[run_slot(&self.ring, *r)].update(&key, &object, skips.as_ref());
            }
        }
        for _ in 0..3 {
            for a in 0..self.nodes.len() {
                for p in self.ring.peers(self.ring.members()[a]) {
                    let p = run_slot(&self.ring, p);
                    if p != a {
                        self.anti_entropy(a, p, 0, false);
                    }
                }
            }
        }
        if let Node::Dotted(_) = self.nodes[0] {
            for node in &mut self.nodes {
                if let Node::Dotted(n) = node {
                    n.strip_some(usize::MAX);
                }
            }
        }
    }

    /// One anti-entropy session of `a` with `p`, completed at once.
    fn anti_entropy(&mut self, a: usize, p: usize, now: u64, count: bool) {
        let add = |s: (usize, usize, usize), bytes: &mut (usize, usize, usize)| {
            if count {
                bytes.0 += s.0;
                bytes.1 += s.1;
                bytes.2 += s.2;
            }
        };
        let mut touched: Vec<Bytes> = Vec::new();
        match (&self.nodes[a], &self.nodes[p]) {
            (Node::Dotted(asker), Node::Dotted(answerer)) => {
                let request: SyncRequest = asker.sync_request(answerer.id());
                add(sizes(&request, &[]), &mut self.bytes);
                let reply: SyncReply = answerer.answer_sync(&request, SyncBudget::default());
                add(sizes(&reply, &reply.objects), &mut self.bytes);
                touched.extend(reply.objects.iter().map(|(k, _)| k.clone()));
                if let Node::Dotted(answerer) = &mut self.nodes[p] {
                    answerer.note_peer_bases(request.from, &request.bases());
                }
                if let Node::Dotted(asker) = &mut self.nodes[a] {
                    asker.apply_sync(&reply);
                }
            }
            (Node::Merkle(_), Node::Merkle(_)) => {
                let peer = self.ring.members()[p];
                let Node::Merkle(asker) = &mut self.nodes[a] else {
                    unreachable!()
                };
                let mut next = asker.start_exchange(peer);
                while let Some(request) = next {
                    add(sizes(&request, &[]), &mut self.bytes);
                    let Node::Merkle(answerer) = &mut self.nodes[p] else {
                        unreachable!()
                    };
                    let reply = answerer.answer_exchange(&request);
                    let objects: &[(Bytes, Object)] = match &reply {
                        ExchangeReply::Objects { objects } => objects,
                        _ => &[],
                    };
                    add(sizes(&reply, objects), &mut self.bytes);
                    touched.extend(objects.iter().map(|(k, _)| k.clone()));
                    let Node::Merkle(asker) = &mut self.nodes[a] else {
                        unreachable!()
                    };
                    next = asker.on_exchange_reply(&reply);
                }
            }
            _ => unreachable!("one system per run"),
        }
        for key in touched {
            self.settle(a, &key, now);
        }
    }
}

/// The slot (ring position) of replica `id`.
fn run_slot(ring: &Ring, id: ReplicaId) -> usize {
    ring.members()
        .iter()
        .position(|&m| m == id)
        .expect("a member")
}

/// Runs one configuration.
pub fn run(config: Config, scale: Scale, seed: u64) -> Measured {
    run_keeping_state(config, scale, seed).1
}

/// Runs one configuration, then exchanges between every pair of peers
/// (every shared replica group for MerkleDB) round after round until
/// every replica of every key holds the same versions: returns the
/// rounds it took, or the first key still differing after 60 rounds. The
/// baseline's exchange is checked the same way as DottedDB's.
pub fn converges(config: Config, scale: Scale, seed: u64) -> Result<usize, String> {
    let (mut run, _) = run_keeping_state(config, scale, seed);
    let differing = |run: &Run| {
        (0..scale.keys).map(Run::key).find(|key| {
            let replicas = run.ring.replicas(key);
            let first = run.nodes[run_slot(&run.ring, replicas[0])].fetch(key);
            replicas[1..].iter().any(|r| {
                run.nodes[run_slot(&run.ring, *r)].fetch(key).versions() != first.versions()
            })
        })
    };
    for round in 0..60 {
        if differing(&run).is_none() {
            return Ok(round);
        }
        for a in 0..run.nodes.len() {
            let me = run.ring.members()[a];
            for peer in run.ring.peers(me) {
                if peer == me {
                    continue;
                }
                let p = run_slot(&run.ring, peer);
                for _ in 0..scale.replication {
                    run.anti_entropy(a, p, 0, false);
                }
            }
            if let Node::Dotted(n) = &mut run.nodes[a] {
                n.strip_some(usize::MAX);
            }
        }
    }
    Err(format!(
        "{:?} still differs after 60 rounds",
        differing(&run)
    ))
}

fn run_keeping_state(config: Config, scale: Scale, seed: u64) -> (Run, Measured) {
    let mut run = Run::loaded(config, scale, seed);
    let interval_micros =
        ((config.state_changed * scale.keys as f64 / scale.rate as f64) * 1e6) as u64;
    let end = scale.seconds * 1_000_000;
    let step = 1_000_000 / scale.rate;
    // Replication messages in flight: (arrival, replica, key, object).
    let mut flight: VecDeque<Flight> = VecDeque::new();
    let mut next_ae: Vec<u64> = (0..run.nodes.len())
        .map(|_| run.rng.below(interval_micros.max(1)))
        .collect();
    let mut now = 0;
    let mut writes = 0u64;
    while now < end {
        now += step;
        // Deliver what arrived.
        while flight.front().is_some_and(|(t, ..)| *t <= now) {
            let (_, r, key, object, skips) = flight.pop_front().expect("checked");
            run.nodes[r].update(&key, &object, skips.as_ref());
            run.settle(r, &key, now);
        }
        // One read-modify-write update at a random replica of a random key.
        let key = Run::key(run.rng.below(scale.keys as u64) as usize);
        let replicas = run.ring.replicas(&key);
        let c = run_slot(&run.ring, *run.rng.pick(&replicas).expect("replicas"));
        let context = run.nodes[c].fetch(&key).read_context();
        let value = Bytes::from(vec![(writes % 251) as u8; 100]);
        let object = run.nodes[c].coordinate(&key, value, &context);
        let dot = *object
            .versions()
            .keys()
            .filter(|d| d.id == run.ring.members()[c])
            .max()
            .expect("the new version");
        writes += 1;
        for id in &replicas {
            let r = run_slot(&run.ring, *id);
            if r == c {
                continue;
            }
            let skips = run.nodes[c].skips_for(*id);
            run.pending
                .entry((key.clone(), r))
                .or_default()
                .push((dot, now));
            if !run.rng.chance(config.loss) {
                let delay = run.rng.range(1_000, 5_000);
                let at = now + delay;
                let place = flight.partition_point(|(t, ..)| *t <= at);
                flight.insert(place, (at, r, key.clone(), object.clone(), skips));
            }
        }
        // Anti-entropy (and, for DottedDB, strip passes) when due.
        let due: Vec<usize> = (0..run.nodes.len())
            .filter(|&a| next_ae[a] <= now)
            .collect();
        for a in due {
            {
                next_ae[a] = now + interval_micros.max(1);
                let p = run.random_peer(a);
                run.anti_entropy(a, p, now, true);
                if let Node::Dotted(n) = &mut run.nodes[a] {
                    n.strip_some(usize::MAX);
                }
            }
        }
    }
    let seconds = scale.seconds as f64;
    let metadata: usize = run.nodes.iter().map(Node::metadata_bytes).sum();
    // DottedDB's node metadata by structure (clock, dot-key map,
    // watermark, non-stripped keys); zero for the baseline.
    let mut parts = [0usize; 4];
    for node in &run.nodes {
        if let Node::Dotted(n) = node {
            for (sum, part) in parts.iter_mut().zip(n.metadata_parts()) {
                *sum += part;
            }
        }
    }
    let clocks: usize = run.nodes.iter().map(Node::object_clock_bytes).sum();
    let unreplicated = run.pending.values().map(|w| w.len() as u64).sum();
    let measured = Measured {
        ae_bytes_per_s: run.bytes.0 as f64 / seconds,
        object_data_per_s: run.bytes.1 as f64 / seconds,
        object_meta_per_s: run.bytes.2 as f64 / seconds,
        sync_meta_per_s: run.bytes.0.saturating_sub(run.bytes.1 + run.bytes.2) as f64 / seconds,
        metadata_per_vnode: metadata as f64 / run.nodes.len() as f64,
        metadata_parts_per_vnode: parts.map(|p| p as f64 / run.nodes.len() as f64),
        object_clocks_per_vnode: clocks as f64 / run.nodes.len() as f64,
        latencies_ms: run.latencies_ms.clone(),
        unreplicated,
    };
    (run, measured)
}

/// The deletes experiment (Fig. 3): `keys` loaded, then `rate` operations
/// per second, half updates and half deletes of random keys, for
/// `seconds`; the objects stored (over all replicas, divided by N) each
/// second, and the live keys.
pub fn deletes(
    system: System,
    keys: usize,
    rate: u64,
    seconds: u64,
    seed: u64,
) -> Vec<(u64, f64, usize)> {
    let scale = Scale {
        keys,
        rate,
        seconds,
        ..Scale::default()
    };
    let mut run = Run::loaded(Config::at(0.01, system, DELETES_CHURN_LOSS), scale, seed);
    let mut live: BTreeMap<Bytes, bool> = (0..keys).map(|i| (Run::key(i), true)).collect();
    let interval = 250_000u64;
    let mut series = Vec::new();
    let step = 1_000_000 / rate;
    let mut now = 0;
    let mut next_ae = 0;
    while now < seconds * 1_000_000 {
        now += step;
        let key = Run::key(run.rng.below(keys as u64) as usize);
        let replicas = run.ring.replicas(&key);
        let c = (run.replicas_first(&replicas)) as usize;
        let context = run.nodes[c].fetch(&key).read_context();
        let delete = run.rng.chance(0.5);
        let object = match &mut run.nodes[c] {
            Node::Dotted(n) => {
                n.coordinate(&key, (!delete).then(|| Bytes::from_static(b"v")), &context)
            }
            Node::Merkle(n) => {
                n.coordinate(&key, (!delete).then(|| Bytes::from_static(b"v")), &context)
            }
        }
        .expect("a replica");
        live.insert(key.clone(), !delete);
        for r in &replicas[1..] {
            if !run.rng.chance(DELETES_CHURN_LOSS) {
                let skips = run.nodes[c].skips_for(*r);
                run.nodes[run_slot(&run.ring, *r)].update(&key, &object, skips.as_ref());
            }
        }
        if now >= next_ae {
            next_ae = now + interval;
            for a in 0..run.nodes.len() {
                let peers: Vec<ReplicaId> = run.ring.peers(run.ring.members()[a]);
                let p = run_slot(&run.ring, *run.rng.pick(&peers).expect("peers"));
                if p != a {
                    run.anti_entropy(a, p, now, false);
                }
                if let Node::Dotted(n) = &mut run.nodes[a] {
                    n.strip_some(usize::MAX);
                }
            }
        }
        if now % 1_000_000 < step {
            let stored: usize = run.nodes.iter().map(Node::stored_keys).sum();
            let alive = live.values().filter(|l| **l).count();
            series.push((
                now / 1_000_000,
                stored as f64 / scale.replication as f64,
                alive,
            ));
        }
    }
    series
}

impl Run {
    /// The coordinator of a delete-experiment operation: the key's first
    /// replica (its owner), as a Dynamo client with a preference list.
    fn replicas_first(&self, replicas: &[ReplicaId]) -> u64 {
        run_slot(&self.ring, replicas[0]) as u64
    }
}

/// The strip-latency experiment (Fig. 2, DottedDB only): 5,000 keys loaded,
/// `rate` updates per second at a random replica of a random key for
/// `seconds`, anti-entropy every 100 ms per replica, strip passes every
/// `strip_micros`, replication loss `loss`. Returns, per update and other
/// replica of its key, the time (ms) from the update until that replica
/// stores the key with the update (or a later version) and an empty
/// context: the update's causal past wholly in the replica's node clock.
pub fn strip_latency(strip_micros: u64, loss: f64, rate: u64, seconds: u64, seed: u64) -> Vec<f64> {
    let scale = Scale {
        keys: 5_000,
        rate,
        seconds,
        ..Scale::default()
    };
    let mut run = Run::loaded(Config::at(0.01, System::Dotted, loss), scale, seed);
    let step = 1_000_000 / rate;
    let sync_micros = 100_000u64;
    let mut next_sync: Vec<u64> = (0..run.nodes.len())
        .map(|_| run.rng.below(sync_micros))
        .collect();
    let mut next_strip: Vec<u64> = (0..run.nodes.len())
        .map(|_| run.rng.below(strip_micros))
        .collect();
    // Per replica: (key, dot, time written) not yet there and stripped.
    let mut waiting: Vec<Vec<(Bytes, Dot, u64)>> = vec![Vec::new(); run.nodes.len()];
    let mut flight: VecDeque<Flight> = VecDeque::new();
    let mut latencies = Vec::new();
    let mut now = 0;
    let end = seconds * 1_000_000;
    let settle =
        |node: &Node, waiting: &mut Vec<(Bytes, Dot, u64)>, now: u64, out: &mut Vec<f64>| {
            let Node::Dotted(n) = node else {
                unreachable!("DottedDB only")
            };
            waiting.retain(|(key, dot, t)| {
                let stored = n.stored().find(|(k, _)| *k == key).map(|(_, o)| o.clone());
                let filled = n.fetch(key);
                let there =
                    filled.versions().contains_key(dot) || filled.read_context().covers(*dot);
                let done = there && stored.is_none_or(|o| o.context().is_empty());
                if done {
                    out.push((now - t) as f64 / 1000.0);
                }
                !done
            });
        };
    while now < end {
        now += step;
        while flight.front().is_some_and(|(t, ..)| *t <= now) {
            let (_, r, key, object, skips) = flight.pop_front().expect("checked");
            run.nodes[r].update(&key, &object, skips.as_ref());
            settle(&run.nodes[r], &mut waiting[r], now, &mut latencies);
        }
        let key = Run::key(run.rng.below(scale.keys as u64) as usize);
        let replicas = run.ring.replicas(&key);
        let c = run_slot(&run.ring, *run.rng.pick(&replicas).expect("replicas"));
        let context = run.nodes[c].fetch(&key).read_context();
        let object = run.nodes[c].coordinate(&key, Bytes::from_static(b"v"), &context);
        let dot = Dot::new(ReplicaId(c as u64 + 1), {
            let Node::Dotted(n) = &run.nodes[c] else {
                unreachable!()
            };
            n.clock().base(ReplicaId(c as u64 + 1))
        });
        for id in &replicas {
            let r = run_slot(&run.ring, *id);
            if r == c {
                continue;
            }
            let skips = run.nodes[c].skips_for(*id);
            waiting[r].push((key.clone(), dot, now));
            if !run.rng.chance(loss) {
                let at = now + run.rng.range(1_000, 5_000);
                let place = flight.partition_point(|(t, ..)| *t <= at);
                flight.insert(place, (at, r, key.clone(), object.clone(), skips));
            }
        }
        let due: Vec<usize> = (0..run.nodes.len())
            .filter(|&a| next_sync[a] <= now || next_strip[a] <= now)
            .collect();
        for a in due {
            if next_sync[a] <= now {
                next_sync[a] = now + sync_micros;
                let p = run.random_peer(a);
                run.anti_entropy(a, p, now, false);
            }
            if next_strip[a] <= now {
                next_strip[a] = now + strip_micros;
                if let Node::Dotted(n) = &mut run.nodes[a] {
                    n.strip_some(usize::MAX);
                }
            }
            settle(&run.nodes[a], &mut waiting[a], now, &mut latencies);
        }
    }
    latencies
}

/// Clock entries per stored object under churn (Fig. 1): 16 virtual
/// nodes, `replication` replicas per key, 5,000 keys loaded, 150 updates
/// per second, one virtual node replaced every 4 s (its state lost, a new
/// id at its position); anti-entropy and strip passes every 100 ms per
/// replica. Each second, the average number of entries in the stored
/// objects' clocks (context entries plus the ids of their versions' dots).
/// DottedDB replaces by its protocol (full transfers, retired ids closed
/// and forgotten), MerkleDB by a fresh replica its Merkle exchanges fill.
pub fn churn(system: System, replication: usize, seconds: u64, seed: u64) -> Vec<(u64, f64)> {
    let scale = Scale {
        keys: 5_000,
        rate: 150,
        seconds,
        replication,
        ..Scale::default()
    };
    let mut run = Run::loaded(Config::at(0.01, system, DELETES_CHURN_LOSS), scale, seed);
    let step = 1_000_000 / scale.rate;
    let tick = 100_000u64;
    let mut next_tick = tick;
    let mut next_replace = 4_000_000u64;
    let mut next_id = scale.vnodes as u64 + 1;
    let mut series = Vec::new();
    let mut now = 0;
    while now < seconds * 1_000_000 {
        now += step;
        let key = Run::key(run.rng.below(scale.keys as u64) as usize);
        let replicas = run.ring.replicas(&key);
        let c = run_slot(&run.ring, *run.rng.pick(&replicas).expect("replicas"));
        let context = run.nodes[c].fetch(&key).read_context();
        let object = run.nodes[c].coordinate(&key, Bytes::from_static(b"v"), &context);
        for id in &replicas {
            let r = run_slot(&run.ring, *id);
            if r != c && !run.rng.chance(DELETES_CHURN_LOSS) {
                let skips = run.nodes[c].skips_for(*id);
                run.nodes[r].update(&key, &object, skips.as_ref());
            }
        }
        if now >= next_replace {
            next_replace += 4_000_000;
            let slot = run.rng.below(scale.vnodes as u64) as usize;
            let old = run.ring.members()[slot];
            let new = ReplicaId(next_id);
            next_id += 1;
            let ring = run.ring.replace(old, new);
            run.ring = ring.clone();
            for (i, node) in run.nodes.iter_mut().enumerate() {
                match node {
                    Node::Dotted(n) if i != slot => n.set_ring(ring.clone()),
                    Node::Merkle(n) if i != slot => n.set_ring(ring.clone()),
                    _ => {}
                }
            }
            run.nodes[slot] = match system {
                System::Dotted => Node::Dotted(Box::new(NodeState::new_replacement(new, ring))),
                System::Merkle { segments, width } => {
                    Node::Merkle(MerkleNode::new(new, ring, segments, width))
                }
            };
        }
        if now >= next_tick {
            next_tick += tick;
            for a in 0..run.nodes.len() {
                // A replacement's transfers, then one exchange with a peer.
                if let Node::Dotted(n) = &run.nodes[a] {
                    if let Some((peer, request)) = n.transfer_request() {
                        let p = run_slot(&run.ring, peer);
                        let Node::Dotted(answerer) = &run.nodes[p] else {
                            unreachable!()
                        };
                        if let Some(page) =
                            answerer.answer_transfer(&request, SyncBudget::default())
                        {
                            if let Node::Dotted(n) = &mut run.nodes[a] {
                                n.apply_transfer(&page);
                            }
                        }
                    }
                }
                let p = run.random_peer(a);
                run.anti_entropy(a, p, now, false);
                if let Node::Dotted(n) = &mut run.nodes[a] {
                    n.strip_some(usize::MAX);
                }
            }
        }
        if now % 1_000_000 < step {
            let (entries, objects) = run
                .nodes
                .iter()
                .flat_map(|node| match node {
                    Node::Dotted(n) => n
                        .stored()
                        .map(|(_, o)| clock_entries(o))
                        .collect::<Vec<_>>(),
                    Node::Merkle(n) => n.stored().map(|(_, o)| clock_entries(o)).collect(),
                })
                .fold((0usize, 0usize), |(e, n), x| (e + x, n + 1));
            series.push((now / 1_000_000, entries as f64 / objects.max(1) as f64));
        }
    }
    series
}

/// Entries of an object's clock: its context's ids and its versions' ids.
fn clock_entries(object: &Object) -> usize {
    let mut ids: Vec<ReplicaId> = object.context().iter().map(|(id, _)| id).collect();
    ids.extend(object.versions().keys().map(|d| d.id));
    ids.sort();
    ids.dedup();
    ids.len()
}
