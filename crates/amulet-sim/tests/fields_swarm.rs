//! Field records (docs/field-records.md) under DMap's fault swarm: the
//! clients of `amulet-sim --fields` put records and merge fields among the
//! usual map operations (merges meet missing keys, records and plain
//! values, and repeat a name now and then, which the edge refuses), and
//! every history is checked for linearizability against a sequential map
//! whose merge is the documented one. The long run is `amulet-sim --fields
//! --seeds 3000`.

use amulet_sim::dmap::{run_fields_seed, DmapBug};
use amulet_sim::runner::{run_catching, run_swarm_replayed_by};
use std::panic;

#[test]
fn field_records_merges_are_linearizable_under_faults() {
    let summary = run_swarm_replayed_by(3_000_000, 60, "amulet-sim --fields", |seed| {
        run_fields_seed(seed, false, DmapBug::None)
    });
    println!(
        "seeds={} violations={} elapsed={:?}",
        summary.seeds, summary.violations, summary.elapsed
    );
    assert_eq!(
        summary.violations, 0,
        "failing seeds {:?}: replay with `amulet-sim --fields --seed N`",
        summary.failed_seeds
    );
}

#[test]
fn field_records_the_same_seed_gives_the_same_trace_hash() {
    let first = run_fields_seed(5, false, DmapBug::None);
    let second = run_fields_seed(5, false, DmapBug::None);
    assert_eq!(first.trace_hash, second.trace_hash);
    assert!(
        first.stats.deliveries > 0,
        "the seed completed no operation"
    );
}

#[test]
fn field_records_a_merge_that_drops_the_other_fields_is_caught() {
    let hook = panic::take_hook();
    panic::set_hook(Box::new(|_| {}));
    let caught = (0..50).find_map(|seed| {
        let outcome = run_catching(seed, &|seed| {
            run_fields_seed(seed, false, DmapBug::MergeReplacesRecord)
        });
        outcome.violations.first().map(|v| (seed, v.to_string()))
    });
    panic::set_hook(hook);
    let (seed, how) = caught.expect("a merge dropping the other fields survived 50 seeds");
    println!("caught at seed {seed}: {how}");
}

/// Seed 3002177: a global-stream coordinator whose pipeline was full of
/// instances the acceptors had decided and trimmed since (under a higher
/// ballot it never heard of) got no answer to its retries, so it never
/// raised its ballot and the stream stopped; acceptors now refuse such a
/// ballot (thesis §2.3: phase 2 with a ballot below the promise).
#[test]
fn thesis_2_3_a_stale_coordinator_of_trimmed_instances_hears_of_the_higher_ballot() {
    let outcome = run_fields_seed(3_002_177, false, DmapBug::None);
    assert!(
        outcome.violations.is_empty(),
        "{:?}",
        outcome.violations.first().map(ToString::to_string)
    );
}
