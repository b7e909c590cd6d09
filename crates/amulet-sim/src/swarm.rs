//! Swarm options: the fault mix of one seed (TigerBeetle `options_swarm`).
//!
//! Swarm testing draws a different mix per seed instead of running every
//! seed with every fault at a fixed rate: a seed with only duplication and
//! reordering reaches states that a seed drowning in crashes never does.
//! Some seeds draw no faults at all (the protocol's plain path must work),
//! some draw an extreme mix. Everything is `Debug`, so a failing seed prints
//! the mix it ran with.

use crate::rng::Rng;

/// Virtual micros in one second, to keep the ranges below readable.
const SECOND_MICROS: u64 = 1_000_000;

/// Shortest and longest faulty safety phase, in virtual micros.
pub const SAFETY_PHASE_MICROS_MIN: u64 = 2 * SECOND_MICROS;
/// See [`SAFETY_PHASE_MICROS_MIN`].
pub const SAFETY_PHASE_MICROS_MAX: u64 = 10 * SECOND_MICROS;
/// Shortest and longest healed liveness phase, in virtual micros. Long
/// enough for a failure detector (500 ms suspicion by default) to elect a
/// coordinator and for learners to catch up after the heal.
pub const LIVENESS_PHASE_MICROS_MIN: u64 = 10 * SECOND_MICROS;
/// See [`LIVENESS_PHASE_MICROS_MIN`].
pub const LIVENESS_PHASE_MICROS_MAX: u64 = 15 * SECOND_MICROS;

/// How a seed's faults were drawn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SwarmProfile {
    /// No fault at all; latency only.
    NoFaults,
    /// Each fault kind independently on or off, at a random rate.
    Swarm,
    /// Every fault kind on, at high rates.
    Extreme,
}

/// The ways the nemesis cuts the network.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum PartitionKind {
    /// Nodes split in two random sides that cannot talk either way.
    Symmetric,
    /// Nodes split in two random sides; one side's messages to the other
    /// are lost, the other direction works.
    OneWay,
    /// One node cut off from every other node, both directions.
    IsolateOne,
    /// A majority side and a minority side (the minority as large as it
    /// can be), both directions.
    MajorityMinority,
    /// Two nodes cannot reach each other, both reach everyone else (a
    /// non-transitive cut: a ring link breaks while every node still hears
    /// the coordinator).
    Bridge,
}

impl PartitionKind {
    /// Every kind.
    pub const ALL: [PartitionKind; 5] = [
        PartitionKind::Symmetric,
        PartitionKind::OneWay,
        PartitionKind::IsolateOne,
        PartitionKind::MajorityMinority,
        PartitionKind::Bridge,
    ];
}

/// Faults of the network while it is not healed. Latency is uniform in
/// `[latency_micros_min, latency_micros_max]` (which reorders messages);
/// with `delay_tail_probability` a message is instead held back up to
/// `delay_tail_micros_max`, overtaken by everything sent after it.
#[derive(Clone, Debug, PartialEq)]
pub struct NetworkOptions {
    /// Probability that a message is lost.
    pub loss_probability: f64,
    /// Probability that a message is delivered twice (each copy with its
    /// own latency).
    pub duplicate_probability: f64,
    /// Smallest one-way latency, in virtual micros; at least 1.
    pub latency_micros_min: u64,
    /// Largest ordinary one-way latency, in virtual micros.
    pub latency_micros_max: u64,
    /// Probability that a message takes a long tail delay instead.
    pub delay_tail_probability: f64,
    /// Longest tail delay, in virtual micros.
    pub delay_tail_micros_max: u64,
}

impl NetworkOptions {
    /// A fault-free network with the given latency range.
    pub fn reliable(latency_micros_min: u64, latency_micros_max: u64) -> NetworkOptions {
        NetworkOptions {
            loss_probability: 0.0,
            duplicate_probability: 0.0,
            latency_micros_min,
            latency_micros_max,
            delay_tail_probability: 0.0,
            delay_tail_micros_max: latency_micros_max,
        }
    }

    /// What the network becomes when healed: no loss, no duplication, no
    /// tail, latency within twice the fastest latency.
    pub fn healed(&self) -> NetworkOptions {
        let min = self.latency_micros_min.max(1);
        NetworkOptions::reliable(min, min * 2)
    }
}

/// Process, machine and partition faults scheduled by the nemesis during
/// the safety phase. A `None` interval means that fault kind is off.
/// Intervals are means of exponential waits, in virtual micros.
#[derive(Clone, Debug, PartialEq)]
pub struct FaultOptions {
    /// Mean wait between partitions (one partition at a time).
    pub partition_interval_micros_mean: Option<u64>,
    /// Shortest partition, in virtual micros.
    pub partition_micros_min: u64,
    /// Longest partition, in virtual micros.
    pub partition_micros_max: u64,
    /// The kinds partitions are drawn from; never empty.
    pub partition_kinds: Vec<PartitionKind>,
    /// Mean wait between process crashes of a random node.
    pub process_crash_interval_micros_mean: Option<u64>,
    /// Mean wait between machine crashes (un-fsynced writes lost).
    pub machine_crash_interval_micros_mean: Option<u64>,
    /// Mean wait between process crashes aimed at a current coordinator.
    pub coordinator_crash_interval_micros_mean: Option<u64>,
    /// Shortest time a crashed node stays down, in virtual micros.
    pub restart_delay_micros_min: u64,
    /// Longest time a crashed node stays down, in virtual micros.
    pub restart_delay_micros_max: u64,
}

impl FaultOptions {
    /// No crash and no partition.
    pub fn none() -> FaultOptions {
        FaultOptions {
            partition_interval_micros_mean: None,
            partition_micros_min: 0,
            partition_micros_max: 0,
            partition_kinds: PartitionKind::ALL.to_vec(),
            process_crash_interval_micros_mean: None,
            machine_crash_interval_micros_mean: None,
            coordinator_crash_interval_micros_mean: None,
            restart_delay_micros_min: 0,
            restart_delay_micros_max: 0,
        }
    }

    /// Whether the nemesis may crash a node or partition the network.
    pub fn crashes_or_partitions(&self) -> bool {
        self.partition_interval_micros_mean.is_some()
            || self.process_crash_interval_micros_mean.is_some()
            || self.machine_crash_interval_micros_mean.is_some()
            || self.coordinator_crash_interval_micros_mean.is_some()
    }
}

/// The whole fault mix of one seed.
#[derive(Clone, Debug, PartialEq)]
pub struct SwarmOptions {
    /// How the mix was drawn.
    pub profile: SwarmProfile,
    /// The network's faults during the safety phase.
    pub network: NetworkOptions,
    /// The nemesis' faults during the safety phase.
    pub faults: FaultOptions,
    /// Length of the faulty phase, in virtual micros; safety is checked.
    pub safety_phase_micros: u64,
    /// Length of the healed phase that follows, in virtual micros; at its
    /// end validity (liveness) is checked too.
    pub liveness_phase_micros: u64,
}

impl SwarmOptions {
    /// Draws a fault mix: about 10% of seeds without faults, 15% extreme,
    /// the rest a swarm mix where each fault kind is on with probability
    /// one half at a log-uniform rate.
    pub fn draw(rng: &mut Rng) -> SwarmOptions {
        let safety_phase_micros = rng.range(SAFETY_PHASE_MICROS_MIN, SAFETY_PHASE_MICROS_MAX);
        let liveness_phase_micros = rng.range(LIVENESS_PHASE_MICROS_MIN, LIVENESS_PHASE_MICROS_MAX);
        let roll = rng.below(100);
        let (profile, network, faults) = if roll < 10 {
            let min = rng.range(50, 2_000);
            let max = min + rng.range(0, 5_000);
            (
                SwarmProfile::NoFaults,
                NetworkOptions::reliable(min, max),
                FaultOptions::none(),
            )
        } else if roll < 25 {
            (
                SwarmProfile::Extreme,
                draw_extreme_network(rng),
                draw_extreme_faults(rng),
            )
        } else {
            (
                SwarmProfile::Swarm,
                draw_swarm_network(rng),
                draw_swarm_faults(rng),
            )
        };
        SwarmOptions {
            profile,
            network,
            faults,
            safety_phase_micros,
            liveness_phase_micros,
        }
    }

    /// A mix without faults, for tests and smoke runs.
    pub fn no_faults(safety_phase_micros: u64, liveness_phase_micros: u64) -> SwarmOptions {
        SwarmOptions {
            profile: SwarmProfile::NoFaults,
            network: NetworkOptions::reliable(100, 1_000),
            faults: FaultOptions::none(),
            safety_phase_micros,
            liveness_phase_micros,
        }
    }
}

/// Log-uniform in `[min, max]`: small and large rates equally often.
fn log_uniform(rng: &mut Rng, min: u64, max: u64) -> u64 {
    assert!(0 < min && min <= max, "log_uniform needs 0 < min <= max");
    let (low, high) = ((min as f64).ln(), (max as f64).ln());
    let sample = (low + rng.unit() * (high - low)).exp() as u64;
    sample.clamp(min, max)
}

/// `Some(log-uniform interval)` with probability `probability`.
fn maybe_interval(rng: &mut Rng, probability: f64, min: u64, max: u64) -> Option<u64> {
    if rng.chance(probability) {
        Some(log_uniform(rng, min, max))
    } else {
        None
    }
}

fn draw_swarm_network(rng: &mut Rng) -> NetworkOptions {
    let latency_micros_min = rng.range(50, 2_000);
    let latency_micros_max = latency_micros_min + log_uniform(rng, 1, 50_000);
    let delay_tail_probability = if rng.chance(0.5) {
        rng.unit() * 0.05
    } else {
        0.0
    };
    NetworkOptions {
        loss_probability: if rng.chance(0.5) {
            rng.unit() * 0.2
        } else {
            0.0
        },
        duplicate_probability: if rng.chance(0.5) {
            rng.unit() * 0.2
        } else {
            0.0
        },
        latency_micros_min,
        latency_micros_max,
        delay_tail_probability,
        delay_tail_micros_max: latency_micros_max + log_uniform(rng, 1_000, 2 * SECOND_MICROS),
    }
}

fn draw_extreme_network(rng: &mut Rng) -> NetworkOptions {
    let latency_micros_min = rng.range(1, 500);
    let latency_micros_max = latency_micros_min + rng.range(50_000, 200_000);
    NetworkOptions {
        loss_probability: 0.2 + rng.unit() * 0.3,
        duplicate_probability: 0.1 + rng.unit() * 0.3,
        latency_micros_min,
        latency_micros_max,
        delay_tail_probability: 0.02 + rng.unit() * 0.08,
        delay_tail_micros_max: latency_micros_max + rng.range(SECOND_MICROS, 3 * SECOND_MICROS),
    }
}

/// A non-empty random subset of the partition kinds.
fn draw_partition_kinds(rng: &mut Rng) -> Vec<PartitionKind> {
    let mut kinds: Vec<PartitionKind> = PartitionKind::ALL
        .into_iter()
        .filter(|_| rng.chance(0.6))
        .collect();
    if kinds.is_empty() {
        let any = *rng.pick(&PartitionKind::ALL).expect("ALL is not empty");
        kinds.push(any);
    }
    kinds
}

fn draw_swarm_faults(rng: &mut Rng) -> FaultOptions {
    let partition_micros_min = rng.range(10_000, 500_000);
    let restart_delay_micros_min = rng.range(1_000, 500_000);
    FaultOptions {
        partition_interval_micros_mean: maybe_interval(rng, 0.5, 100_000, 5 * SECOND_MICROS),
        partition_micros_min,
        partition_micros_max: partition_micros_min + rng.range(0, 2 * SECOND_MICROS),
        partition_kinds: draw_partition_kinds(rng),
        process_crash_interval_micros_mean: maybe_interval(rng, 0.5, 100_000, 5 * SECOND_MICROS),
        machine_crash_interval_micros_mean: maybe_interval(rng, 0.4, 200_000, 5 * SECOND_MICROS),
        coordinator_crash_interval_micros_mean: maybe_interval(
            rng,
            0.4,
            200_000,
            5 * SECOND_MICROS,
        ),
        restart_delay_micros_min,
        restart_delay_micros_max: restart_delay_micros_min + rng.range(0, 2 * SECOND_MICROS),
    }
}

fn draw_extreme_faults(rng: &mut Rng) -> FaultOptions {
    FaultOptions {
        partition_interval_micros_mean: Some(rng.range(50_000, 300_000)),
        partition_micros_min: rng.range(1_000, 50_000),
        partition_micros_max: rng.range(100_000, SECOND_MICROS),
        partition_kinds: PartitionKind::ALL.to_vec(),
        process_crash_interval_micros_mean: Some(rng.range(50_000, 300_000)),
        machine_crash_interval_micros_mean: Some(rng.range(100_000, 500_000)),
        coordinator_crash_interval_micros_mean: Some(rng.range(100_000, 500_000)),
        restart_delay_micros_min: rng.range(1_000, 10_000),
        restart_delay_micros_max: rng.range(100_000, SECOND_MICROS),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn draws_are_deterministic_and_cover_every_profile() {
        let mut seen = Vec::new();
        for seed in 0..200 {
            let options = SwarmOptions::draw(&mut Rng::new(seed));
            assert_eq!(options, SwarmOptions::draw(&mut Rng::new(seed)));
            assert!(options.network.latency_micros_min >= 1);
            assert!(options.network.latency_micros_min <= options.network.latency_micros_max);
            assert!(options.faults.partition_micros_min <= options.faults.partition_micros_max);
            assert!(
                options.faults.restart_delay_micros_min <= options.faults.restart_delay_micros_max
            );
            assert!(!options.faults.partition_kinds.is_empty());
            assert!((0.0..=1.0).contains(&options.network.loss_probability));
            if !seen.contains(&options.profile) {
                seen.push(options.profile);
            }
        }
        assert_eq!(seen.len(), 3, "200 seeds draw every profile: {seen:?}");
    }

    #[test]
    fn healed_network_has_no_faults() {
        let options = SwarmOptions::draw(&mut Rng::new(3)).network.healed();
        assert_eq!(options.loss_probability, 0.0);
        assert_eq!(options.duplicate_probability, 0.0);
        assert_eq!(options.delay_tail_probability, 0.0);
        assert!(options.latency_micros_max <= 2 * options.latency_micros_min);
    }
}
