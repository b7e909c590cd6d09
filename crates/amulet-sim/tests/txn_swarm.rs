//! SCONEKV §4–§5 on the total order (docs/transactions.md) under the fault
//! swarm: list-append transactions of 4–6 clients across partitions
//! (single-key reads, range reads of every list, appends; read-only ones
//! at one read version), the operator splitting, merging and moving
//! partitions, replicas restarting from checkpoints; every history judged
//! strictly serializable by Elle's method (the `adya` crate), then
//! progress after healing. The long run is `amulet-sim --txn --seeds 3000`.
//! Broken variants are caught (tests expecting failure).

use amulet_sim::dmap::{run_txn_seed, DmapBug};
use amulet_sim::runner::{run_catching, run_swarm_replayed_by};
use std::panic;

const SEEDS_PER_TEST: u64 = 40;

fn swarm(part: u64) {
    let start = 2_000_000 + part * SEEDS_PER_TEST;
    let summary = run_swarm_replayed_by(start, SEEDS_PER_TEST, "amulet-sim --txn", |seed| {
        run_txn_seed(seed, false, DmapBug::None)
    });
    println!(
        "seeds={} violations={} elapsed={:?}",
        summary.seeds, summary.violations, summary.elapsed
    );
    assert_eq!(
        summary.violations, 0,
        "failing seeds {:?}: replay with `amulet-sim --txn --seed N`",
        summary.failed_seeds
    );
}

#[test]
fn sconekv_4_strictly_serializable_under_faults_part_0() {
    swarm(0);
}

#[test]
fn sconekv_4_strictly_serializable_under_faults_part_1() {
    swarm(1);
}

#[test]
fn sconekv_4_same_seed_twice_gives_the_same_trace_hash() {
    let first = run_txn_seed(5, false, DmapBug::None);
    let second = run_txn_seed(5, false, DmapBug::None);
    assert_eq!(first.trace_hash, second.trace_hash);
    assert_eq!(first.stats, second.stats);
}

/// Runs `bug` from seed 0 until a checker catches it; the test fails if
/// `seeds` seeds pass. Panics inside a seed are the seed's violation.
fn caught_within(bug: DmapBug, seeds: u64) {
    let hook = panic::take_hook();
    panic::set_hook(Box::new(|_| {}));
    let caught = (0..seeds).find_map(|seed| {
        let outcome = run_catching(seed, &|seed| run_txn_seed(seed, false, bug));
        outcome.violations.first().map(|v| (seed, v.to_string()))
    });
    panic::set_hook(hook);
    let (seed, how) = caught.unwrap_or_else(|| panic!("{bug:?} survived {seeds} seeds"));
    println!("{bug:?} caught at seed {seed}: {how}");
}

#[test]
fn sconekv_4_committing_on_the_local_vote_alone_is_caught() {
    caught_within(DmapBug::CompleteWithoutSignals, 100);
}

#[test]
fn sconekv_4_a_partition_skipping_validation_is_caught() {
    caught_within(DmapBug::SkipValidationWithoutWrites, 100);
}

#[test]
fn sconekv_4_range_reads_not_validated_are_caught() {
    caught_within(DmapBug::RangesNotValidated, 100);
}

#[test]
fn sconekv_4_a_stale_read_version_is_caught_as_not_strict() {
    caught_within(DmapBug::ReuseReadVersions, 100);
}

#[test]
fn sconekv_4_recent_writes_missing_from_checkpoints_are_caught() {
    caught_within(DmapBug::RecentWritesNotCheckpointed, 100);
}
