//! Field records (docs/field-records.md) under DMap's fault swarm: the
//! clients of `amulet-sim --fields` put records and merge fields among the
//! usual map operations (merges meet missing keys, records and plain
//! values, and repeat a name now and then, which the edge refuses), and
//! every history is checked for linearizability against a sequential map
//! whose merge is the documented one. The long run is `amulet-sim --fields
//! --seeds 3000`.

use amulet_sim::dmap::{run_fields_seed, DmapBug};
use amulet_sim::runner::run_swarm_replayed_by;

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
