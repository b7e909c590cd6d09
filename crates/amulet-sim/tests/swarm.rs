//! The simulator swarm that runs with every `cargo test`: 500 seeds, each
//! with its own topology, storage mode and fault mix, checked for
//! integrity, uniform agreement, order and (after healing) validity
//! (thesis §2.5). Split in four tests so the test harness runs them in
//! parallel. The long run (20,000+ seeds) is `amulet-sim --seeds 20000`.

use amulet_sim::order::{run_seed, Bug};
use amulet_sim::runner::run_swarm;

/// Seeds per test; four tests make the 500-seed swarm.
const SEEDS_PER_TEST: u64 = 125;

fn swarm(part: u64) {
    let start = part * SEEDS_PER_TEST;
    let summary = run_swarm(start, SEEDS_PER_TEST, |seed| {
        run_seed(seed, false, Bug::None)
    });
    println!(
        "seeds={} violations={} elapsed={:?}",
        summary.seeds, summary.violations, summary.elapsed
    );
    assert_eq!(
        summary.violations, 0,
        "failing seeds {:?}: replay with `amulet-sim --seed N`",
        summary.failed_seeds
    );
}

#[test]
fn thesis_2_5_swarm_seeds_0_to_124() {
    swarm(0);
}

#[test]
fn thesis_2_5_swarm_seeds_125_to_249() {
    swarm(1);
}

#[test]
fn thesis_2_5_swarm_seeds_250_to_374() {
    swarm(2);
}

#[test]
fn thesis_2_5_swarm_seeds_375_to_499() {
    swarm(3);
}

#[test]
fn same_seed_twice_gives_the_same_trace_hash() {
    for seed in [0, 7, 4242] {
        let first = run_seed(seed, false, Bug::None);
        let second = run_seed(seed, false, Bug::None);
        assert_eq!(first.trace_hash, second.trace_hash, "seed {seed}");
        assert_eq!(first.stats, second.stats, "seed {seed}");
        assert!(first.stats.deliveries > 0, "seed {seed} delivered nothing");
    }
    let other = run_seed(1, false, Bug::None);
    assert_ne!(other.trace_hash, run_seed(0, false, Bug::None).trace_hash);
}
