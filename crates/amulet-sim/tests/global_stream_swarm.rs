//! The global stream's replacement (thesis §4.2; issue 22) under the DMap
//! fault swarm, and the seeds its swarms found: self-healing replaces the
//! global stream of a removed acceptor, a joiner outside it learns a new
//! one, a new one's acceptors are active members of the view, it is
//! trimmed only past every partition's fence, and the seeds of the
//! 2026-12-07 swarms. Each test replays one seed: `amulet-sim --dmap
//! --seed N` shows it verbosely.

use amulet_sim::dmap::{run_dmap_seed, DmapBug};

/// Self-healing replaces the global stream when the view removes one of
/// its acceptors (thesis §4.2; issue 22). In seed 9 the view removes node
/// 2, an acceptor of the configured global stream (nodes 1-3); the
/// operator of this seed never replaces the global stream, so the newest
/// map's other global stream is self-healing's, and the healing checker
/// finds no removed acceptor left in it.
#[test]
fn thesis_4_2_self_healing_replaces_the_global_stream_of_a_removed_acceptor() {
    const SEED: u64 = 9;
    let run = run_dmap_seed(SEED, false, DmapBug::None);
    assert!(run.violations.is_empty(), "{:?}", run.violations);
    assert_eq!(run.stats.global_stream_replaced, 1);
}

/// A node that does not run the global stream joins and is given a
/// partition (SCONEKV §2; thesis §4.2; issue 22, "adding capacity"). In
/// seed 3 node 7 starts outside the first view and outside the global
/// stream (a new machine's configuration names no stream). The operator's
/// `Join` and its observers admit it; self-healing then replaces the
/// global stream with node 7 among its learners, node 7 opens it on its
/// peers' messages, and the balancer gives it a partition.
#[test]
fn sconekv_2_a_joiner_outside_the_global_stream_learns_a_new_one_and_takes_a_partition() {
    const SEED: u64 = 3;
    let run = run_dmap_seed(SEED, false, DmapBug::None);
    assert!(run.violations.is_empty(), "{:?}", run.violations);
    assert_eq!(run.stats.outsider_joiners, 1, "seed {SEED} has no outsider");
    assert_eq!(run.stats.joiners_admitted, 1);
    assert_eq!(run.stats.outsiders_in_global, 1);
    assert!(run.stats.spare_replicas > 0, "{:?}", run.stats);
}

/// A new global stream's acceptors are active members of the view (DMap
/// seed 9018875 of the 2026-12-07 swarm: the operator made node 4, a
/// joiner not yet admitted, an acceptor; nobody probes a node outside
/// the view, so it never learned the map that made it one, and with
/// node 3 killed for good the global stream stopped, the join with it).
/// The operator now draws them from the view, and the edge refuses
/// others (`global-stream-stranger`, checked on real processes in
/// `amulet/tests/dev_nodes.rs`).
#[test]
fn thesis_4_2_a_new_global_streams_acceptors_are_active_members_of_the_view() {
    const SEED: u64 = 9_018_875;
    let run = run_dmap_seed(SEED, false, DmapBug::None);
    assert!(run.violations.is_empty(), "{:?}", run.violations);
}

/// A new global stream is not trimmed before every partition reached the
/// fence where it replaced the old one (DMap seed 9030800 of the
/// 2026-12-07 swarm: p1 swapped to stream 5 at its fence while p3, on the
/// same nodes, had still to reach it; each node reported p1's checkpoint
/// as its safe instance of stream 5, stream 5 was trimmed below 2 before
/// p3 merged its first instance, and the whole order stopped). A replica
/// whose checkpoint does not merge the global stream yet holds none of
/// it (`Checkpointer::safe_instance`).
#[test]
fn thesis_3_4_2_a_new_global_stream_is_trimmed_only_past_every_partitions_fence() {
    const SEED: u64 = 9_030_800;
    let run = run_dmap_seed(SEED, false, DmapBug::None);
    assert!(run.violations.is_empty(), "{:?}", run.violations);
    assert!(run.stats.global_stream_replaced > 0, "{:?}", run.stats);
}

/// Two learners repairing one gap of the global stream at once (thesis
/// A.1.4; DMap seed 9023174 of the 2026-12-07 swarm): an acceptor that
/// learned the instance decided refuses the lower competing ballot's
/// value and keeps running (it stopped on a false assertion before; the
/// core's test is `amulet-paxos/tests/gap_repair_thesis_a_1_4.rs`).
#[test]
fn thesis_a_1_4_competing_gap_repairs_of_a_decided_instance_stop_no_node() {
    const SEED: u64 = 9_023_174;
    let run = run_dmap_seed(SEED, false, DmapBug::None);
    assert!(run.violations.is_empty(), "{:?}", run.violations);
}

/// A move onto a node the view removed is refused at the edge
/// (`inactive-node`), and self-healing replaces the global stream of a
/// removed acceptor (DMap seed 9023100 of the 2026-12-07 swarm: the
/// operator moved the only partition onto removed node 1, the active
/// members then replicated nothing, proposed no repair, and the global
/// stream kept node 1 as an acceptor for good).
#[test]
fn thesis_4_2_a_move_onto_a_removed_node_is_refused_and_the_global_stream_is_repaired() {
    const SEED: u64 = 9_023_100;
    let run = run_dmap_seed(SEED, false, DmapBug::None);
    assert!(run.violations.is_empty(), "{:?}", run.violations);
    assert!(run.stats.global_stream_replaced > 0, "{:?}", run.stats);
}
