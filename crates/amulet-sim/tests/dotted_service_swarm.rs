//! The node's eventual-map service (`amulet_dotted::Service`, the code the
//! node runs) under the `--dotted-service` swarm: nodes that apply the
//! map's placement at different times, clients reading with R and writing
//! with W through random nodes (forwarded to a replica), lost, duplicated
//! and reordered messages, partitions, crashes that restart a node from its
//! checkpoint and journal. Once healed and quiescent, every seed is checked
//! with `--dotted`'s checkers (integrity, convergence, causality, garbage)
//! against the writes the journals hold, and every acknowledged write and
//! every read value against them. The long run is `amulet-sim
//! --dotted-service --seeds 3000`.

use amulet_dotted::DottedBug;
use amulet_sim::dotted::run_service_seed;
use amulet_sim::runner::{run_catching, run_swarm_replayed_by};

#[test]
fn dotteddb_iv_the_nodes_service_converges_on_every_acknowledged_write_without_tombstones() {
    let summary = run_swarm_replayed_by(7_000_000, 300, "amulet-sim --dotted-service", |seed| {
        run_service_seed(seed, false, DottedBug::None)
    });
    println!(
        "seeds={} violations={} elapsed={:?}",
        summary.seeds, summary.violations, summary.elapsed
    );
    assert_eq!(
        summary.violations, 0,
        "failing seeds {:?}: replay with `amulet-sim --dotted-service --seed N`",
        summary.failed_seeds
    );
}

#[test]
fn dotteddb_iv_the_service_gives_the_same_trace_hash_for_the_same_seed() {
    let first = run_service_seed(8, false, DottedBug::None);
    let second = run_service_seed(8, false, DottedBug::None);
    assert_eq!(first.trace_hash, second.trace_hash);
    assert!(first.stats.trace_events > 10, "the seed did something");
}

/// Asserts one of `seeds` fails with `bug`.
fn assert_caught(bug: DottedBug, seeds: std::ops::Range<u64>) {
    let caught = seeds.clone().find_map(|seed| {
        let outcome = run_catching(seed, &|s| run_service_seed(s, false, bug));
        outcome.violations.first().map(|v| (seed, v.to_string()))
    });
    assert!(caught.is_some(), "no seed of {seeds:?} caught {bug:?}");
    println!("caught: {caught:?}");
}

#[test]
fn dotteddb_journal_a_runtime_that_answers_before_it_syncs_is_caught() {
    assert_caught(DottedBug::AckBeforeSync, 0..100);
}

#[test]
fn dotteddb_iv_g_the_service_closing_a_whole_clock_entry_after_a_cut_reply_is_caught() {
    assert_caught(DottedBug::SyncAdvancesWholeClock, 0..100);
}

#[test]
fn dotteddb_iv_g_the_service_pruning_before_every_peer_is_caught() {
    assert_caught(DottedBug::PruneBeforeEveryPeer, 0..20);
}

/// Rare in the service swarm (a gap must sit under a stripped context
/// when a stale copy comes back): about 1 seed in 100, so the whole
/// 300-seed budget of the issue is scanned rather than one pinned seed
/// that any change to the traces moves.
#[test]
fn dotteddb_iv_c_the_service_stripping_across_clock_gaps_is_caught_within_300_seeds() {
    assert_caught(DottedBug::StripPastGaps, 0..300);
}

#[test]
fn dotteddb_iv_g_the_service_sending_a_skip_hint_that_leaves_out_the_receivers_keys_is_caught() {
    assert_caught(DottedBug::SkipsOwnKeys, 0..100);
}

/// Stores lost (about 30% of seeds): the seeds that found a retired id
/// never closed under a small dot budget (470, 887) and the checker
/// ignoring the supersession of a write counted lost that survived
/// (1730) run clean.
#[test]
fn dotteddb_replacement_a_lost_store_is_replaced_and_its_retired_ids_closed_and_forgotten() {
    for seed in [470, 887, 1730] {
        let outcome = run_catching(seed, &|s| run_service_seed(s, false, DottedBug::None));
        assert_eq!(outcome.stats.stores_lost, 1, "seed {seed} loses a store");
        assert!(
            outcome.violations.is_empty(),
            "seed {seed}: {:?}",
            outcome.violations
        );
    }
}

#[test]
fn dotteddb_replacement_a_node_back_under_the_ids_of_its_lost_store_is_caught() {
    assert_caught(DottedBug::ReuseReplicaId, 0..100);
}

/// Rare here (a client must write over a read at the replica that closed
/// early while the retired id's version is still on its way): 6 of 300.
#[test]
fn dotteddb_replacement_the_service_closing_a_retired_id_without_coverage_is_caught_within_300_seeds(
) {
    assert_caught(DottedBug::CloseWithoutCoverage, 0..300);
}
