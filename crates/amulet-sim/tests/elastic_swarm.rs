//! Elastic Paxos (thesis ch. 4) under the fault swarm: groups subscribing
//! to and unsubscribing from streams, concurrently and crosswise (Fig.
//! 4.2), while nodes crash and links fail; every replica's delivery
//! sequence is checked for integrity, acyclic order across groups,
//! agreement within each group and progress after healing. Two tests of
//! 100 seeds run in parallel; the long run is `amulet-sim --elastic
//! --seeds 5000`.

use amulet_sim::elastic::{run_elastic_seed, ElasticBug};
use amulet_sim::runner::{run_catching, run_swarm_replayed_by};
use std::panic;

const SEEDS_PER_TEST: u64 = 100;

fn swarm(part: u64) {
    let start = 2_000_000 + part * SEEDS_PER_TEST;
    let summary = run_swarm_replayed_by(start, SEEDS_PER_TEST, "amulet-sim --elastic", |seed| {
        run_elastic_seed(seed, false, ElasticBug::None)
    });
    println!(
        "seeds={} violations={} subscription_changes={} elapsed={:?}",
        summary.seeds, summary.violations, summary.subscription_changes, summary.elapsed
    );
    assert_eq!(
        summary.violations, 0,
        "failing seeds {:?}: replay with `amulet-sim --elastic --seed N`",
        summary.failed_seeds
    );
    assert!(
        summary.subscription_changes >= SEEDS_PER_TEST,
        "the swarm changed subscriptions only {} times in {} seeds",
        summary.subscription_changes,
        summary.seeds
    );
}

#[test]
fn thesis_4_4_subscriptions_keep_atomic_multicast_under_faults_part_0() {
    swarm(0);
}

#[test]
fn thesis_4_4_subscriptions_keep_atomic_multicast_under_faults_part_1() {
    swarm(1);
}

#[test]
fn elastic_same_seed_twice_gives_the_same_trace_hash() {
    for seed in [3, 17] {
        let first = run_elastic_seed(seed, false, ElasticBug::None);
        let second = run_elastic_seed(seed, false, ElasticBug::None);
        assert_eq!(first.trace_hash, second.trace_hash, "seed {seed}");
        assert_eq!(first.stats, second.stats, "seed {seed}");
    }
}

#[test]
fn thesis_4_3_a_merge_point_from_the_new_stream_alone_is_caught() {
    let hook = panic::take_hook();
    panic::set_hook(Box::new(|_| {}));
    let caught = (0..100).find_map(|seed| {
        let outcome = run_catching(seed, &|seed| {
            run_elastic_seed(seed, false, ElasticBug::MergePointFromNewStreamOnly)
        });
        outcome.violations.first().map(|v| (seed, v.to_string()))
    });
    panic::set_hook(hook);
    let (seed, how) = caught.expect("the one-stream merge point survived 100 seeds");
    println!("caught at seed {seed}: {}", &how[..how.len().min(300)]);
}
