//! What one `--dotted` seed draws (swarm testing: every seed a different
//! mix of ring shape, losses, partitions, crashes and budgets).

use crate::rng::Rng;
use amulet_dotted::SyncBudget;

/// One seed's configuration.
#[derive(Clone, Debug)]
pub struct DottedOptions {
    /// Nodes (processes: they crash and are partitioned whole).
    pub nodes: usize,
    /// Virtual nodes per node; the ring holds `nodes * vnodes` replicas,
    /// interleaved so that consecutive ones sit on distinct nodes.
    pub vnodes: usize,
    /// Replicas per key (on distinct nodes).
    pub replication: usize,
    /// Keys the clients use (few, so writes conflict).
    pub keys: usize,
    /// Concurrent clients.
    pub clients: usize,
    /// Mean pause between a client's operations.
    pub think_micros: u64,
    /// Share of writes that are deletes.
    pub delete_share: f64,
    /// Share of writes sent without reading first (empty context: they
    /// become siblings of everything).
    pub blind_share: f64,
    /// Share of writes sent with the client's older context for the key
    /// (from an earlier read), not a fresh one.
    pub stale_share: f64,
    /// Replicas a read merges.
    pub read_quorum: usize,
    /// Chance a coordinator's replication message is lost (1.0: anti-entropy
    /// does all the replicating, DottedDB §V-E's "H" loss).
    pub replicate_loss: f64,
    /// Chance an anti-entropy message is lost.
    pub sync_loss: f64,
    /// Chance a message is delivered twice.
    pub duplicate: f64,
    /// Largest one-way delay (messages overtake each other).
    pub delay_max_micros: u64,
    /// Mean time between a replica's anti-entropy rounds.
    pub sync_every_micros: u64,
    /// Mean time between a replica's strip passes.
    pub strip_every_micros: u64,
    /// Keys a strip pass visits.
    pub strip_keys: usize,
    /// What one sync reply may carry (small ones cut most replies).
    pub budget: SyncBudget,
    /// Whether the network partitions.
    pub partitions: bool,
    /// Whether replicas crash (and restart with their durable state).
    pub crashes: bool,
    /// Whether a node loses its disks and is replaced (new replica ids).
    pub replacement: bool,
    /// The faulty phase; then clients stop, faults heal, anti-entropy runs.
    pub safety_micros: u64,
    /// The healed phase before the quiescence rounds.
    pub healed_micros: u64,
}

impl DottedOptions {
    /// Replicas on the ring.
    pub fn replicas(&self) -> usize {
        self.nodes * self.vnodes
    }

    /// Draws a configuration.
    pub fn draw(rng: &mut Rng) -> DottedOptions {
        let nodes = rng.range(3, 6) as usize;
        let replication = *rng
            .pick(
                &[2usize, 3, 5]
                    .into_iter()
                    .filter(|&n| n <= nodes)
                    .collect::<Vec<_>>(),
            )
            .expect("2 fits");
        let pick = |rng: &mut Rng, items: &[f64]| *rng.pick(items).expect("not empty");
        let budget = if rng.chance(0.5) {
            SyncBudget {
                objects: rng.range(1, 6) as usize,
                bytes: rng.range(16, 256) as usize,
                dots: rng.range(2, 40) as usize,
            }
        } else {
            SyncBudget::default()
        };
        DottedOptions {
            nodes,
            vnodes: rng.range(1, 3) as usize,
            replication,
            keys: rng.range(2, 12) as usize,
            clients: rng.range(1, 6) as usize,
            think_micros: rng.range(1_000, 20_000),
            delete_share: pick(rng, &[0.0, 0.1, 0.3, 0.5]),
            blind_share: pick(rng, &[0.0, 0.1, 0.3]),
            stale_share: pick(rng, &[0.0, 0.1, 0.3]),
            read_quorum: rng.range(1, replication as u64) as usize,
            replicate_loss: pick(rng, &[0.0, 0.1, 0.5, 1.0]),
            sync_loss: pick(rng, &[0.0, 0.05, 0.2]),
            duplicate: pick(rng, &[0.0, 0.05, 0.2]),
            delay_max_micros: rng.range(100, 30_000),
            sync_every_micros: rng.range(2_000, 200_000),
            strip_every_micros: rng.range(2_000, 300_000),
            strip_keys: rng.range(1, 16) as usize,
            budget,
            partitions: rng.chance(0.5),
            crashes: rng.chance(0.5),
            replacement: rng.chance(0.4),
            safety_micros: rng.range(500_000, 3_000_000),
            healed_micros: 1_000_000,
        }
    }
}
