//! DMap §III-B under the fault swarm: partitions of three replicas, each
//! node a real multicast node feeding a real replica, simulated clients
//! issuing single- and multi-partition map operations and snapshot scans,
//! and every history checked for linearizability against a sequential
//! sorted map, then for progress after healing. Three tests of 100 seeds
//! run in parallel; the long run is `amulet-sim --dmap --seeds 2000`.
//! Replicas restart from checkpoints in most seeds (thesis §3.4.2).

use amulet_sim::dmap::{run_dmap_seed, DmapBug, Draws, PinnedBefore};
use amulet_sim::runner::{run_catching, run_swarm_replayed_by};
use std::panic;

const SEEDS_PER_TEST: u64 = 100;

fn swarm(part: u64) {
    let start = 1_000_000 + part * SEEDS_PER_TEST;
    let summary = run_swarm_replayed_by(start, SEEDS_PER_TEST, "amulet-sim --dmap", |seed| {
        run_dmap_seed(seed, false, DmapBug::None)
    });
    println!(
        "seeds={} violations={} elapsed={:?}",
        summary.seeds, summary.violations, summary.elapsed
    );
    assert_eq!(
        summary.violations, 0,
        "failing seeds {:?}: replay with `amulet-sim --dmap --seed N`",
        summary.failed_seeds
    );
}

#[test]
fn dmap_iii_b_linearizable_under_faults_part_0() {
    swarm(0);
}

#[test]
fn dmap_iii_b_linearizable_under_faults_part_1() {
    swarm(1);
}

#[test]
fn dmap_iii_b_linearizable_under_faults_part_2() {
    swarm(2);
}

#[test]
fn dmap_same_seed_twice_gives_the_same_trace_hash() {
    for seed in [0, 11] {
        let first = run_dmap_seed(seed, false, DmapBug::None);
        let second = run_dmap_seed(seed, false, DmapBug::None);
        assert_eq!(first.trace_hash, second.trace_hash, "seed {seed}");
        assert_eq!(first.stats, second.stats, "seed {seed}");
        assert!(
            first.stats.deliveries > 0,
            "seed {seed} completed no operation"
        );
    }
}

/// Runs `bug` from seed 0 until a checker catches it; panics (the test
/// fails) if 50 seeds pass. Panics inside a seed are the seed's violation.
fn caught_within_50_seeds(bug: DmapBug, survived: &str) {
    caught_within_seeds(bug, 50, survived);
}

/// Like [`caught_within_50_seeds`], searching seeds `0..seeds`: for a bug
/// that only a rare schedule exposes (few seeds move a partition while a
/// new replica still needs the old one's state).
fn caught_within_seeds(bug: DmapBug, seeds: u64, survived: &str) {
    let hook = panic::take_hook();
    panic::set_hook(Box::new(|_| {}));
    let caught = (0..seeds).find_map(|seed| {
        let outcome = run_catching(seed, &|seed| run_dmap_seed(seed, false, bug));
        outcome.violations.first().map(|v| (seed, v.to_string()))
    });
    panic::set_hook(hook);
    let (seed, how) = caught.expect(survived);
    println!("caught at seed {seed}: {how}");
}

#[test]
fn dmap_iii_b_c_completing_without_signals_is_caught() {
    caught_within_50_seeds(
        DmapBug::CompleteWithoutSignals,
        "completing without signals survived 50 seeds",
    );
}

/// DMap §III-B: a read is a command like any other, ordered before it is
/// executed. A replica answering reads from its own state (behind the
/// others, or cut off from them) gives stale answers.
#[test]
fn dmap_iii_b_reads_answered_without_ordering_are_caught() {
    caught_within_50_seeds(
        DmapBug::AnswerReadsLocally,
        "reads answered without ordering survived 50 seeds",
    );
}

#[test]
fn thesis_3_4_2_replicas_restore_from_checkpoints_in_the_swarm() {
    // The swarm restarts replicas from checkpoints (not only by replay):
    // the seeds of the parts above do, so a checkpoint bug shows there.
    let restores: u64 = (0..20)
        .map(|seed| {
            run_dmap_seed(seed, false, DmapBug::None)
                .stats
                .checkpoint_restores
        })
        .sum();
    assert!(
        restores > 0,
        "20 seeds restored no replica from a checkpoint"
    );
}

#[test]
fn thesis_3_4_2_a_checkpoint_labelled_past_its_position_is_caught() {
    caught_within_50_seeds(
        DmapBug::CheckpointPastPosition,
        "a checkpoint resumed past its position survived 50 seeds",
    );
}

#[test]
fn thesis_3_4_2_acceptors_trim_below_the_trim_quorum() {
    let trimmed: u64 = (0..20)
        .map(|seed| {
            run_dmap_seed(seed, false, DmapBug::None)
                .stats
                .trimmed_instances
        })
        .sum();
    assert!(trimmed > 0, "20 seeds trimmed nothing");
}

#[test]
fn thesis_3_4_2_trimming_without_a_quorum_is_caught() {
    caught_within_50_seeds(
        DmapBug::TrimWithoutQuorum,
        "trimming without a quorum survived 50 seeds",
    );
}

#[test]
fn thesis_3_4_2_replicas_behind_the_trim_point_install_a_peers_checkpoint() {
    // Half the seeds trim at a majority of each partition: a replica left
    // behind (down, cut off, slow) fetches a peer's checkpoint. The parts
    // above check those seeds' histories; here, that it happens, and that
    // it pulls checkpoints in several chunks as the node does (the swarm
    // draws chunks of 64 to 256 B, smaller than its checkpoints).
    let (mut transfers, mut chunks) = (0, 0);
    for seed in 0..40 {
        let stats = run_dmap_seed(seed, false, DmapBug::None).stats;
        transfers += stats.state_transfers;
        chunks += stats.state_transfer_chunks;
    }
    assert!(transfers > 0, "40 seeds installed no peer checkpoint");
    assert!(
        chunks >= 2 * transfers,
        "{transfers} transfers pulled only {chunks} chunks"
    );
}

#[test]
fn dmap_iii_c_splits_merges_and_stream_replacements_happen_in_the_swarm() {
    // Two seeds in three run an operator that splits and merges
    // partitions and replaces streams at barriers while clients run and
    // the nemesis strikes; the parts above check those histories.
    let changes: u64 = (0..12)
        .map(|seed| {
            run_dmap_seed(seed, false, DmapBug::None)
                .stats
                .subscription_changes
        })
        .sum();
    assert!(changes > 0, "12 seeds split or merged no partition");
}

/// DynaTree's oracle as Amulet's balancer (docs/dynatree.md): in every
/// seed with a range map, range partitions past a few entries (or, in a
/// quarter of the seeds, past a few commands per second) split by
/// themselves, in half of them small neighbours merge, and a node holding
/// two partitions more than another gives it one, alongside the
/// operator's changes and the nemesis; the parts above check those
/// histories for linearizability.
#[test]
fn dynatree_oracle_the_balancer_splits_merges_and_moves_in_the_swarm() {
    let (mut splits, mut load_splits, mut merges, mut moves) = (0, 0, 0, 0);
    for seed in 0..16 {
        let stats = run_dmap_seed(seed, false, DmapBug::None).stats;
        splits += stats.balancer_splits;
        load_splits += stats.balancer_load_splits;
        merges += stats.balancer_merges;
        moves += stats.balancer_moves;
    }
    assert!(splits > 0, "16 seeds: the balancer split nothing");
    assert!(
        load_splits > 0,
        "16 seeds: the balancer split nothing by load"
    );
    assert!(
        splits > load_splits,
        "16 seeds: the balancer split nothing by size"
    );
    assert!(merges > 0, "16 seeds: the balancer merged nothing");
    assert!(moves > 0, "16 seeds: the balancer moved nothing");
}

#[test]
fn dmap_iii_c_a_split_that_hands_over_nothing_is_caught() {
    caught_within_50_seeds(
        DmapBug::SplitWithoutTransfer,
        "a split handing over nothing survived 50 seeds",
    );
}

#[test]
fn dmap_iii_c_partitions_move_to_other_nodes_in_the_swarm() {
    // Seeds that checkpoint also move partitions to one node or to three
    // nodes hosting something; the old replicas hand off once the new
    // group holds the state. The parts above check those histories.
    let hand_offs: u64 = (0..12)
        .map(|seed| run_dmap_seed(seed, false, DmapBug::None).stats.hand_offs)
        .sum();
    assert!(hand_offs > 0, "12 seeds moved no partition away");
}

/// DMap §III-C: "the new set of replicas first recover the state from the
/// currently available partition". Old replicas dropping the partition at
/// the move's fence, before the new group holds its state, lose it.
#[test]
fn dmap_iii_c_a_move_handing_off_at_its_fence_is_caught() {
    // With fence keys (DynaTree §III-A) clients refresh their map less
    // often, which changes every seed's schedule: the first seed that
    // exposes this bug moved from 4 to 58.
    caught_within_seeds(
        DmapBug::HandOffAtFence,
        100,
        "handing a moved partition off at the fence survived 100 seeds",
    );
}

/// DMap §III-C, a move ordered before the previous move's new group holds
/// the state (docs/ARCHITECTURE.md, hand-off sets): seed 1000070 has the
/// operator move p2 from n4-n6 to n2/n7/n9 and, while those still fetch
/// its state, the balancer move it on. The nodes a partition is still
/// handed off from learn the second stream and carry on to it; a node
/// reporting it holds nothing while its replica still serves the state
/// lets the balancer move again without them, they drop the only copy at
/// the second fence, and clients of p2 complete nothing after healing.
#[test]
fn dmap_iii_c_a_hand_off_reported_while_holding_is_caught() {
    const SEED: u64 = 1_000_070;
    let _pinned = PinnedBefore::new(Draws::GlobalReplacement);
    // Found without splits by load. Since members replicating nothing
    // take part in the balancer's moves (docs/dynatree.md), the nodes the
    // operator's move empties are given partitions back, and the seed so
    // pinned no longer runs into it; with splits by load it does again.
    let correct = run_dmap_seed(SEED, false, DmapBug::None);
    assert!(
        correct.violations.is_empty(),
        "seed {SEED}: {:?}",
        correct.violations
    );
    assert!(
        correct.stats.balancer_moves > 0,
        "seed {SEED} moved nothing"
    );
    let hook = panic::take_hook();
    panic::set_hook(Box::new(|_| {}));
    let broken = run_catching(SEED, &|seed| {
        run_dmap_seed(seed, false, DmapBug::HandedOffWhileHolding)
    });
    panic::set_hook(hook);
    assert!(
        !broken.violations.is_empty(),
        "a hand-off reported while holding survived seed {SEED}"
    );
}

/// DMap §III-C, reconfigurations one after another: seed 2001189 merges
/// p3 into p4 and orders p1's stream replacement right behind it. The
/// merge's work released p4's fence and p4's merge went on to the
/// replacement's fence at once; the same pass then worked p4's (already
/// released) fence again and released the replacement's before p4 had
/// executed it. p4 kept the old map, refused the balancer's next split
/// as stale while p1 applied it, and a whole-map read spanning p1, p4
/// and p5 waited for p4's signals for good. A fence is now worked only
/// while its group is still stopped at it.
#[test]
fn dmap_iii_c_a_fence_released_by_a_merge_is_not_worked_again() {
    const SEED: u64 = 2_001_189;
    let _pinned = PinnedBefore::new(Draws::GlobalReplacement);
    let run = run_dmap_seed(SEED, false, DmapBug::None);
    assert!(
        run.violations.is_empty(),
        "seed {SEED}: {:?}",
        run.violations
    );
    assert!(run.stats.balancer_splits > 0, "seed {SEED} split nothing");
}

/// `seed` runs clean, and recovers a replica from a peer's checkpoint on
/// the way (the regression seeds of §3.4.2 recovery below).
fn recovers_by_state_transfer(seed: u64) {
    let _pinned = PinnedBefore::new(Draws::KillsAndJoins);
    let run = run_dmap_seed(seed, false, DmapBug::None);
    assert!(
        run.violations.is_empty(),
        "seed {seed}: {:?}",
        run.violations
    );
    assert!(
        run.stats.state_transfer_chunks > 0,
        "seed {seed} transferred nothing"
    );
}

/// DynaTree's oracle moving a replica onto a member that replicated
/// nothing (docs/dynatree.md, "Members replicating nothing"): seed 10 has
/// a spare node 7, down while the global stream was trimmed, which the
/// balancer then gives p5. Its placeholder merge group 0 (a node started
/// without replicas merges its streams there) held the global stream's
/// learner below the trim point, so the replica moved there never
/// executed the global order again. The placeholder is dropped once a
/// replica's group is added.
#[test]
fn dynatree_oracle_a_spare_node_given_a_partition_follows_the_global_stream() {
    const SEED: u64 = 10;
    let _pinned = PinnedBefore::new(Draws::GlobalReplacement);
    let run = clean_run_with_a_spare(SEED);
    assert!(
        run.stats.spare_replicas > 0,
        "seed {SEED} gave the spare node nothing"
    );
}

/// DynaTree's oracle moves replicas only between nodes that reported
/// lately (docs/dynatree.md, "Only nodes that report take part"): seed
/// 9034457 has node 2 down for good and node 4 crash-looping, both still
/// in the view, when the balancer plans a move of p3. Counting them, it
/// moved p3 onto nodes 1, 2 and 4; the view then removed 2 and 4, p3's
/// stream kept one voter of three, and no client completed anything
/// after healing.
#[test]
fn dynatree_oracle_a_move_onto_nodes_that_sent_no_report_is_caught() {
    const SEED: u64 = 9_034_457;
    let correct = run_dmap_seed(SEED, false, DmapBug::None);
    assert!(
        correct.violations.is_empty(),
        "seed {SEED}: {:?}",
        correct.violations
    );
    let hook = panic::take_hook();
    panic::set_hook(Box::new(|_| {}));
    let broken = run_catching(SEED, &|seed| {
        run_dmap_seed(seed, false, DmapBug::BalancerMovesToSilentNodes)
    });
    panic::set_hook(hook);
    assert!(
        !broken.violations.is_empty(),
        "moves onto nodes that sent no report survived seed {SEED}"
    );
}

/// Memory-mode acceptors that restart never vote again (they lost their
/// promises), so the nemesis lets at most a minority of a stream's
/// acceptors ever lose state. It counted a node that had lost state once
/// as lost for good, also in streams created after that: in seed 7002295
/// nodes 1 and 4 (the spare) restarted in memory mode early on, the
/// balancer then put p5's stream on nodes 1, 2 and 4, and both crashed
/// again: a stream with one voter, which never decided again (every
/// client waiting at the end). Losses now count per stream, from when the
/// stream is budgeted.
#[test]
fn dynatree_oracle_a_spare_node_counts_in_the_state_loss_budget() {
    clean_run_with_a_spare(7_002_295);
}

/// Runs `seed` (correct code), which must have a spare node and no
/// violation. The spare is a member of the first view, as when these
/// seeds were pinned (before joins).
fn clean_run_with_a_spare(seed: u64) -> amulet_sim::SeedOutcome {
    let _pinned = PinnedBefore::new(Draws::KillsAndJoins);
    let run = run_dmap_seed(seed, false, DmapBug::None);
    assert!(
        run.violations.is_empty(),
        "seed {seed}: {:?}",
        run.violations
    );
    assert_eq!(run.stats.spare_nodes, 1, "seed {seed} has no spare node");
    run
}

/// Thesis §3.4.2 recovery from a peer never goes back: seed 2002022
/// splits p4 into p5 while another replica's newer map already placed p5
/// on nodes 1-3, which began fetching it as if it had moved there; the
/// split then forked p5 on each of them and the acceptors trimmed p5's
/// stream past the forks' checkpoints. The stale fetch finished later
/// and installed a checkpoint two global positions behind the forked
/// replica on two nodes, below the trim point: no replica of p5 could
/// catch up. A fork cancels the fetch, and an install older than the
/// replica here is dropped.
#[test]
fn thesis_3_4_2_a_fetch_overtaken_by_a_split_does_not_rewind_the_replica() {
    const SEED: u64 = 2_002_022;
    let _pinned = PinnedBefore::new(Draws::GlobalReplacement);
    // The scenario it was found in, from before splits by load.
    let _pinned = amulet_sim::dmap::WithoutLoadSplits::new();
    recovers_by_state_transfer(SEED);
}

/// Thesis §3.4.2 recovery through a chain of merges: seed 2001595 merges
/// p4 into p3 and p3 into p1 while node 2 is down (memory acceptors, a
/// machine crash). Back from checkpoints of p3 and p4, behind the global
/// stream's trim point, node 2 fetches p1's state (p3 retires at p1's
/// fence), but p4's replica waited for p3 for good: its peers answered
/// with p1's checkpoint, older than the replica of p1 here, which was
/// ignored, and p4 asked again every 100 ms. A peer's checkpoint of the
/// partition the asked one was merged into drops the asked replica.
#[test]
fn thesis_3_4_2_a_replica_merged_away_twice_while_down_is_dropped() {
    const SEED: u64 = 2_001_595;
    let _pinned = PinnedBefore::new(Draws::GlobalReplacement);
    recovers_by_state_transfer(SEED);
}

/// Thesis §3.4.2 recovery past a merge whose source never came: seed
/// 2001683 splits p1 into p3 while node 1 is down; back, node 1 restores
/// p1 and begins fetching p3 as moved to it, but p3 merges into p1 before
/// that fetch ends, and the newer map abandons it. Node 1's p1 then
/// stopped at the merge's fence waiting for a p3 replica it would never
/// have, and node 3, trimmed past, installed node 1's checkpoint at that
/// fence and stopped there too. A replica stranded at a merge's fence
/// fetches its own partition from a peer, past the merge; a checkpoint at
/// the same global position with a newer map is newer.
#[test]
fn thesis_3_4_2_a_replica_stranded_at_a_merge_fence_fetches_past_it() {
    const SEED: u64 = 2_001_683;
    let _pinned = PinnedBefore::new(Draws::GlobalReplacement);
    recovers_by_state_transfer(SEED);
}

/// DMap §III-B signals across a move's hand-off: seed 2000129 moves p2
/// from nodes 4-6 to node 2 while p6's only replica (node 5) still waits,
/// at an older position, for p2's signal. It asked p2's runners by its
/// own map (4-6), which had handed p2 off and no longer answered; node 2,
/// p2's replica by the newer map, had executed that position long ago.
/// Every replica waiting for p6 in turn waited too, and no client
/// completed anything after healing. The node now also asks the runners
/// its newest map names.
#[test]
fn dmap_iii_b_a_replica_asks_for_signals_by_the_newest_map_after_a_hand_off() {
    const SEED: u64 = 2_000_129;
    let _pinned = PinnedBefore::new(Draws::GlobalReplacement);
    let run = run_dmap_seed(SEED, false, DmapBug::None);
    assert!(
        run.violations.is_empty(),
        "seed {SEED}: {:?}",
        run.violations
    );
    assert!(run.stats.hand_offs > 0, "seed {SEED} handed nothing off");
}

/// Thesis §3.4.2 recovery into a partition this node learns it holds only
/// from the checkpoint: seed 2000664 moves p1 onto nodes 4-6 and merges
/// p2 into it while node 4, back from p2's checkpoint under an older map,
/// is behind the trim point. Its peers answered its requests for p2 with
/// p1's checkpoint (p2 merged into it), which node 4 dropped every 100 ms
/// as a partition it did not hold; no client completed anything after
/// healing. A checkpoint of the partition the asked one merged into, whose
/// map gives it to this node, is installed.
#[test]
fn thesis_3_4_2_a_replica_merged_into_a_partition_moved_here_installs_it() {
    const SEED: u64 = 2_000_664;
    let _pinned = PinnedBefore::new(Draws::GlobalReplacement);
    recovers_by_state_transfer(SEED);
}

/// Thesis §3.4.2 recovery from a peer, as the node does it: the host core
/// (which the node runs too) pulls a peer's checkpoint chunk by chunk.
/// State transfer that assembles the file without its last chunk never
/// installs one, and a replica trimmed past stays behind for good.
#[test]
fn thesis_3_4_2_state_transfer_dropping_its_last_chunk_is_caught() {
    caught_within_50_seeds(
        DmapBug::TransferDropsLastChunk,
        "state transfer dropping its last chunk survived 50 seeds",
    );
}

/// Thesis §3.4.4 non-disruptive recovery when the peers are behind the
/// asker: seed 7000818 moves partition 2 onto a new stream whose acceptors
/// include two nodes trimmed past and fetching checkpoints. The old
/// replicas cannot merge the new stream until one of those nodes installs
/// a checkpoint and opens it, so their checkpoints never reach what the
/// askers hold; they wrote checkpoint after checkpoint (1,609 writes in
/// the run) while the askers waited out every peer twice, and a client
/// completed nothing after healing. A peer now serves the second
/// checkpoint written since the request, whatever it reaches.
#[test]
fn thesis_3_4_4_a_peer_behind_the_asker_serves_what_it_has() {
    let outcome = run_dmap_seed(7_000_818, false, DmapBug::None);
    assert!(
        outcome.violations.is_empty(),
        "seed 7000818: {}",
        outcome.violations[0]
    );
}

/// DynaTree §III-A: a replica validates a request routed by a stale
/// cache with the partition's fence keys. One that takes it without
/// checking executes keys that moved to another partition there.
#[test]
fn dynatree_iii_a_replica_accepting_a_key_outside_its_range_is_caught() {
    caught_within_50_seeds(
        DmapBug::FenceKeysUnchecked,
        "fence keys unchecked survived 50 seeds",
    );
}

/// DynaTree §III-A: a client told its cache is stale refreshes it. One
/// that keeps its cached ranges sends to the old partition forever.
#[test]
fn dynatree_iii_a_client_trusting_its_cache_after_a_refusal_is_caught() {
    caught_within_50_seeds(
        DmapBug::ClientKeepsStaleRanges,
        "a client keeping its stale ranges survived 50 seeds",
    );
}

/// DynaTree §III-A: fence keys exist to cut needless invalidations. Over
/// the same seeds (the same faults and reconfigurations), fewer
/// single-key requests are sent back for a refresh than with whole-map
/// versions, where any map change refuses every request routed before it.
#[test]
fn dynatree_iii_a_fence_keys_refuse_fewer_requests_than_whole_map_versions() {
    let refusals = |bug| {
        (1_000_000..1_000_008)
            .map(|seed| {
                let outcome = run_dmap_seed(seed, false, bug);
                assert!(
                    outcome.violations.is_empty(),
                    "seed {seed}: {:?}",
                    outcome.violations
                );
                outcome.stats.stale_key_refusals
            })
            .sum::<u64>()
    };
    let (fenced, whole) = (refusals(DmapBug::None), refusals(DmapBug::WholeMapVersions));
    println!("single-key stale refusals: fence keys {fenced}, whole-map versions {whole}");
    assert!(
        whole > 0,
        "no reconfiguration made a request stale: the test shows nothing"
    );
    assert!(
        fenced < whole,
        "fence keys {fenced} >= whole-map versions {whole}"
    );
}

/// A join under the DMap workload (SCONEKV §2; docs/membership.md): seed
/// 39's spare node 4 is not in the first view; the operator orders its
/// `Join` through a replica's edge, its observers probe it, a cut admits
/// it under the clients' load, and the balancer then gives it replicas.
/// Every checker (linearizability, membership agreement, healing) holds.
#[test]
fn sconekv_2_a_node_that_joins_under_the_dmap_workload_is_admitted_and_given_partitions() {
    const SEED: u64 = 39;
    let _pinned = PinnedBefore::new(Draws::GlobalReplacement);
    let run = run_dmap_seed(SEED, false, DmapBug::None);
    assert!(run.violations.is_empty(), "{:?}", run.violations);
    assert_eq!(run.stats.joiners, 1, "seed {SEED} has no joiner");
    assert_eq!(run.stats.joiners_admitted, 1, "the joiner was not admitted");
    assert!(
        run.stats.spare_replicas > 0,
        "the joined node was given nothing"
    );
}

/// Safe instances name the map they cover (thesis §3.4.2). In seed
/// 9000706 a partition stops p3's old group from a majority; the view
/// removes nodes 2, 6, 7 and 8 and self-healing moves p3 to nodes 9, 3
/// and 5. Nodes 3 and 5 had reported safe instances of the global stream
/// over the partitions they ran before, and nodes 1 and 2 counted those
/// reports for p3 too: they trimmed the global stream past p3's only
/// state, and p3 never executed again. Reports now carry their map's
/// version, and a report older than the trimming node's map counts as 0.
#[test]
fn thesis_3_4_2_reports_from_before_a_move_do_not_trim_the_moved_partitions_state() {
    const SEED: u64 = 9_000_706;
    let _pinned = PinnedBefore::new(Draws::GlobalReplacement);
    let run = run_dmap_seed(SEED, false, DmapBug::None);
    assert!(run.violations.is_empty(), "{:?}", run.violations);
}

/// A session opening answered after the attempt's timeout still opens the
/// session (DMap §III-B, client sessions). In seed 9001528, after the heal,
/// the global stream ordered each opening 0.3-0.6 s after it was sent,
/// longer than the simulated client's 0.3 s attempt timeout. The client
/// dropped those late `SessionOk`s and sent openings from 4.0 s to 7.2 s
/// before one was answered in time, so it completed nothing for 3 s after
/// the heal. A late `SessionOk` now opens the session
/// (`Resend::on_late_outcome`).
#[test]
fn dmap_iii_b_a_session_opening_answered_after_its_timeout_still_opens_the_session() {
    const SEED: u64 = 9_001_528;
    let _pinned = PinnedBefore::new(Draws::GlobalReplacement);
    let run = run_dmap_seed(SEED, false, DmapBug::None);
    assert!(run.violations.is_empty(), "{:?}", run.violations);
}

/// A failed member of a two-member view reports its joiner implicitly
/// (Rapid §4.2). In seed 9003189 view 2 is nodes 1 and 2, with node 4
/// joining; node 2 is killed for good. Node 2 has one observer, node 1,
/// whose report made it stable but not an implicit reporter (that needed
/// two reports), and it observes the joiner with node 1: the joiner
/// waited for node 2's report for good, unstable, and blocked the cut
/// that removes node 2. A subject witnessed by all of its observers now
/// counts as an implicit reporter.
#[test]
fn rapid_4_2_a_node_killed_in_a_two_member_view_with_a_joiner_is_removed() {
    const SEED: u64 = 9_003_189;
    let _pinned = PinnedBefore::new(Draws::GlobalReplacement);
    let run = run_dmap_seed(SEED, false, DmapBug::None);
    assert!(run.violations.is_empty(), "{:?}", run.violations);
}

/// An admitted joiner must learn the global stream to order its alerts
/// (Rapid §4.2: every observer's report counts towards the cut). Seed
/// 9061930 runs without checkpoints, where self-healing did nothing, so
/// the global stream was never replaced with joiner 7 among its
/// learners; node 7 observed node 2, which then died for good, and node 2
/// stayed unstable at five of six reports until the end. Without
/// checkpoints self-healing now still replaces the global stream.
#[test]
fn rapid_4_2_a_joiner_without_checkpoints_learns_the_global_stream_and_reports() {
    const SEED: u64 = 9_061_930;
    let run = run_dmap_seed(SEED, false, DmapBug::None);
    assert!(run.violations.is_empty(), "{:?}", run.violations);
}

/// An observer without replicas says the stay opinions asked of it
/// (Rapid §4.2). In seed 9008124 node 1 reports node 7 (down then) and
/// dies for good; nodes 4, 5 and 7 run no replica by the end.
/// Node 7 stayed unstable (one change report, from the dead node 1) until
/// every observer spoke, and node 5 never did: its stay opinion was lost
/// with its proposal, and its copy of the membership, refreshed only at a
/// new view, showed neither that nor that node 7 still waited for it. The
/// cut removing node 1 never came. Both halves are fixed: a copy's stay
/// opinion is said again while the copy does not record it, and a peer
/// running no replica is sent the membership whenever its reports change
/// within the view.
#[test]
fn rapid_4_2_a_dead_nodes_cut_is_not_held_by_an_observer_without_replicas() {
    const SEED: u64 = 9_008_124;
    let _pinned = PinnedBefore::new(Draws::GlobalReplacement);
    let run = run_dmap_seed(SEED, false, DmapBug::None);
    assert!(run.violations.is_empty(), "{:?}", run.violations);
}

/// A replica replaying from far back asks the runners of the newest map
/// any peer told its node of (DMap §III-B, signals). In seed
/// 9007420 node 4 restarted with no state (in-memory storage), so its
/// only replica, of p2, replayed from the start of the order and waited at
/// position 5 for p1's signal from nodes 1-3, which had moved p1 away
/// long before. Node 4's own newest map was that replica's, so it asked
/// no one else; as the cluster's proposer it then held self-healing too,
/// and node 2, killed for good, kept handing p1 off.
#[test]
fn dmap_iii_b_a_replica_replaying_from_far_back_asks_the_runners_peers_know() {
    const SEED: u64 = 9_007_420;
    let _pinned = PinnedBefore::new(Draws::GlobalReplacement);
    let run = run_dmap_seed(SEED, false, DmapBug::None);
    assert!(run.violations.is_empty(), "{:?}", run.violations);
}

/// A retired stream an acceptor never opened is opened when a peer asks
/// (thesis §3.4.1: a stream lives while a majority of its acceptors vote).
/// In seed 9008438 node 8, cut off and then waiting for a peer's
/// checkpoint, never reached the split that created p5's stream 6 (nodes
/// 7-9); node 7 restarted without its votes there. Self-healing moved p5
/// to a new stream, retiring stream 6, but p5's replicas reach that
/// move's fence through stream 6, which node 9 then prepared alone for
/// good.
#[test]
fn thesis_3_4_1_a_retired_stream_an_acceptor_never_opened_is_opened_when_asked() {
    const SEED: u64 = 9_008_438;
    let _pinned = PinnedBefore::new(Draws::GlobalReplacement);
    let run = run_dmap_seed(SEED, false, DmapBug::None);
    assert!(run.violations.is_empty(), "{:?}", run.violations);
}

/// A node the view removed keeps its vote in a retired stream until the
/// stream's members still in the view are past it (thesis §3.4.1). In
/// seed 9008438 node 8, removed, opens p5's retired stream 6 when node 9
/// asks; stopping as soon as the map retired the stream (the behaviour
/// before) leaves node 9 alone in it again, with node 7's votes lost, and
/// p5 never reaches the fence of its move.
#[test]
fn thesis_3_4_1_a_removed_node_stopping_before_its_retired_streams_pass_is_caught() {
    const SEED: u64 = 9_008_438;
    let _pinned = PinnedBefore::new(Draws::GlobalReplacement);
    let broken = run_dmap_seed(SEED, false, DmapBug::LeaveBeforeRetiredStreamsPass);
    assert!(
        !broken.violations.is_empty(),
        "a removed node stopping before its retired streams passed survived seed {SEED}"
    );
}

/// A member does not order a cut that removes itself (Rapid §4.3: a view
/// change is the members' decision). In seed 9012624, three nodes, node
/// 1 reported nodes 2 and 3 while a partition cut it off and died before
/// taking the reports back; a later partition had nodes 2 and 3 report
/// each other. A cut proposed by node 2 then removed nodes 2 and 3 and
/// kept only node 1, dead.
#[test]
fn rapid_4_3_stale_reports_do_not_remove_the_live_members_of_a_small_cluster() {
    const SEED: u64 = 9_012_624;
    let _pinned = PinnedBefore::new(Draws::GlobalReplacement);
    let run = run_dmap_seed(SEED, false, DmapBug::None);
    assert!(run.violations.is_empty(), "{:?}", run.violations);
}

/// A removed node does not stop while the newest map names it an
/// acceptor of a stream it has not opened (SCONEKV §2: a node leaves once
/// it has nothing left to do). In seed 9013389 the balancer moved p1 to
/// nodes 1, 2 and 4; node 4, still fetching p1's state, was removed by a
/// partition and stopped, and with node 1 killed for good p1's stream
/// kept one voter, so the move self-healing ordered never reached its
/// fence.
#[test]
fn sconekv_2_a_removed_node_does_not_stop_before_opening_a_stream_it_votes_in() {
    const SEED: u64 = 9_013_389;
    let _pinned = PinnedBefore::new(Draws::GlobalReplacement);
    let run = run_dmap_seed(SEED, false, DmapBug::None);
    assert!(run.violations.is_empty(), "{:?}", run.violations);
}

/// A join within a view reaches observers that run no replica (SCONEKV
/// §2). In seed 1000263 the spare, node 10, is killed for good before the
/// operator orders its `Join`; its nine expected observers must all say
/// it is unreachable for it to be refused. Nodes 2 and 6 ran no replica
/// and held a copy of view 1 from before the join: probes compared view
/// numbers only, a join keeps the number, so they never learned of the
/// joiner, never probed it, and it stayed a joiner for good. Probes now
/// carry the view's next node id too.
#[test]
fn sconekv_2_a_joiner_killed_before_admission_is_refused_by_observers_running_no_replica() {
    const SEED: u64 = 1_000_263;
    let _pinned = PinnedBefore::new(Draws::GlobalReplacement);
    let run = run_dmap_seed(SEED, false, DmapBug::None);
    assert!(run.violations.is_empty(), "{:?}", run.violations);
    assert_eq!(run.stats.joiners, 1, "seed {SEED} has no joiner");
    assert_eq!(run.stats.killed_for_good, 1, "seed {SEED} kills no node");
    assert_eq!(run.stats.joiners_admitted, 0);
}
