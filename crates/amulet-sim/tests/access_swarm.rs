//! Access control (docs/security.md) under DMap's fault swarm: the clients
//! of `amulet-sim --access` run as a user an administrator assigns a role
//! and grants and revokes read and write on the map (or on every map)
//! while they run, and splits, merges, moves, crashes, restarts from
//! checkpoints and state transfers go on. Denied operations are checked
//! as taking no effect (a replica that applied one shows in later reads),
//! and every replica of every partition must hold the same access
//! configuration at each global position: grants and revocations take
//! effect at the same point of the order everywhere. The long run is
//! `amulet-sim --access --seeds 3000`.

use amulet_sim::dmap::{run_access_seed, DmapBug};
use amulet_sim::runner::{run_catching, run_swarm_replayed_by};
use std::panic;

#[test]
fn security_grants_and_revocations_take_effect_at_one_position_on_every_replica() {
    let summary = run_swarm_replayed_by(5_000_000, 100, "amulet-sim --access", |seed| {
        run_access_seed(seed, false, DmapBug::None)
    });
    println!(
        "seeds={} violations={} elapsed={:?}",
        summary.seeds, summary.violations, summary.elapsed
    );
    assert_eq!(
        summary.violations, 0,
        "failing seeds {:?}: replay with `amulet-sim --access --seed N`",
        summary.failed_seeds
    );
}

#[test]
fn security_the_same_access_seed_gives_the_same_trace_hash() {
    let first = run_access_seed(11, false, DmapBug::None);
    let second = run_access_seed(11, false, DmapBug::None);
    assert_eq!(first.trace_hash, second.trace_hash);
    assert!(
        first.stats.deliveries > 0,
        "the seed completed no operation"
    );
}

#[test]
fn security_an_access_change_applied_before_it_is_ordered_is_caught() {
    let hook = panic::take_hook();
    panic::set_hook(Box::new(|_| {}));
    let caught = (0..20).find_map(|seed| {
        let outcome = run_catching(seed, &|seed| {
            run_access_seed(seed, false, DmapBug::AccessAtEdge)
        });
        outcome.violations.first().map(|v| (seed, v.to_string()))
    });
    panic::set_hook(hook);
    let (seed, how) = caught.expect("access changes taking effect at the edge survived 20 seeds");
    println!("caught at seed {seed}: {how}");
}
