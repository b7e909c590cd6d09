//! Runs seeds and reports: one seed verbosely for replay, or a swarm of
//! seeds with a one-line summary. Every failure names its replay command.

use crate::nemesis::NemesisStats;
use crate::network::NetworkStats;
use crate::order;
use crate::violation::{Property, Violation};
use std::time::{Duration, Instant};

/// Violations printed per failing seed (the rest are counted).
const VIOLATIONS_SHOWN_MAX: usize = 20;

/// What one run did, for reports and coverage.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SeedStats {
    /// Values multicast.
    pub values_proposed: u64,
    /// Deliveries over all learner incarnations (recovered ones included).
    pub deliveries: u64,
    /// Learner incarnations started.
    pub learner_incarnations: u64,
    /// Replicas started from a checkpoint (DMap seeds).
    pub checkpoint_restores: u64,
    /// Peer checkpoints installed by state transfer (DMap seeds).
    pub state_transfers: u64,
    /// Chunks of peer checkpoints received by state transfers (DMap
    /// seeds).
    pub state_transfer_chunks: u64,
    /// Replicas dropped after their partition moved to other nodes
    /// (DMap seeds).
    pub hand_offs: u64,
    /// Instances trimmed from acceptor logs, summed over the logs of the
    /// nodes up at the end (DMap seeds).
    pub trimmed_instances: u64,
    /// Subscriptions joined or left by the replica that made the most
    /// (elastic seeds).
    pub subscription_changes: u64,
    /// Single-key requests refused as routed by a stale partition map
    /// (DMap seeds): what fence keys save.
    pub stale_key_refusals: u64,
    /// Splits the balancer proposed (DMap seeds that run it).
    pub balancer_splits: u64,
    /// Of those, splits by load (of a hot partition).
    pub balancer_load_splits: u64,
    /// Of those, tail splits (the map's end written in key order).
    pub balancer_tail_splits: u64,
    /// Merges the balancer proposed (DMap seeds that run it).
    pub balancer_merges: u64,
    /// Moves the balancer proposed (DMap seeds that run it).
    pub balancer_moves: u64,
    /// Of those, moves by weight (bytes and load).
    pub balancer_weight_moves: u64,
    /// 1 when the seed had a spare node (a member replicating nothing at
    /// the start), else 0.
    pub spare_nodes: u64,
    /// Replicas the spare node ran at the end.
    pub spare_replicas: u64,
    /// 1 when the newest map's global stream is not the one the run
    /// started with (thesis §4.2: replaced by the operator or by
    /// self-healing), else 0.
    pub global_stream_replaced: u64,
    /// 1 when the joiner did not run the global stream at the start, else
    /// 0.
    pub outsider_joiners: u64,
    /// 1 when that joiner learns the newest map's global stream at the
    /// end (self-healing made it a learner), else 0.
    pub outsiders_in_global: u64,
    /// 1 when the spare was not in the first view and joins, else 0.
    pub joiners: u64,
    /// 1 when that joiner was an active member of the newest view at the
    /// end, else 0.
    pub joiners_admitted: u64,
    /// Nodes the nemesis killed for good (never restarted).
    pub killed_for_good: u64,
    /// Nodes that stopped by themselves, removed from the view with no
    /// replica or vote left (`Host::left_cluster`).
    pub nodes_stopped: u64,
    /// Eventual stores lost (`--dotted-service`: a node's journal and
    /// checkpoint destroyed).
    pub stores_lost: u64,
    /// Process pauses started (DMap seeds).
    pub pauses: u64,
    /// 1 when a node's links were lossy until the heal (DMap seeds).
    pub flaky_nodes: u64,
    /// Other requests (spanning partitions, snapshots) refused as routed
    /// by a stale partition map (DMap seeds).
    pub stale_other_refusals: u64,
    /// Virtual time at the end, in micros.
    pub virtual_micros: u64,
    /// Events fed to the trace hash.
    pub trace_events: u64,
    /// The network's counts.
    pub network: NetworkStats,
    /// The nemesis' counts.
    pub nemesis: NemesisStats,
}

/// The result of one seed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SeedOutcome {
    /// Every violation the checkers found; empty when the seed passed.
    pub violations: Vec<Violation>,
    /// Hash of every event of the run: equal for two runs of one seed.
    pub trace_hash: u64,
    /// What the run did.
    pub stats: SeedStats,
}

/// The result of a swarm of seeds.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SwarmSummary {
    /// Seeds run.
    pub seeds: u64,
    /// Violations over all seeds.
    pub violations: u64,
    /// The seeds that had any.
    pub failed_seeds: Vec<u64>,
    /// Replicas started from a checkpoint, over all seeds.
    pub checkpoint_restores: u64,
    /// Instances trimmed, over all seeds.
    pub trimmed_instances: u64,
    /// State transfers, over all seeds.
    pub state_transfers: u64,
    /// Chunks of peer checkpoints received, over all seeds.
    pub state_transfer_chunks: u64,
    /// Replicas handed off after a move, over all seeds.
    pub hand_offs: u64,
    /// Subscription changes, over all seeds (elastic seeds).
    pub subscription_changes: u64,
    /// Single-key requests refused as stale, over all seeds.
    pub stale_key_refusals: u64,
    /// Splits the balancer proposed, over all seeds.
    pub balancer_splits: u64,
    /// Of those, splits by load, over all seeds.
    pub balancer_load_splits: u64,
    /// Of those, tail splits, over all seeds.
    pub balancer_tail_splits: u64,
    /// Merges the balancer proposed, over all seeds.
    pub balancer_merges: u64,
    /// Moves the balancer proposed, over all seeds.
    pub balancer_moves: u64,
    /// Of those, moves by weight (bytes and load).
    pub balancer_weight_moves: u64,
    /// Seeds with a spare node, over all seeds.
    pub spare_nodes: u64,
    /// Replicas the spare nodes ran at the end, over all seeds.
    pub spare_replicas: u64,
    /// Seeds whose global stream was replaced, over all seeds.
    pub global_stream_replaced: u64,
    /// Seeds whose joiner did not run the global stream at the start.
    pub outsider_joiners: u64,
    /// Of those, joiners learning the newest global stream at the end.
    pub outsiders_in_global: u64,
    /// Seeds whose spare joined (not in the first view), over all seeds.
    pub joiners: u64,
    /// Of those, joiners active in the newest view at the end.
    pub joiners_admitted: u64,
    /// Nodes killed for good, over all seeds.
    pub killed_for_good: u64,
    /// Nodes that stopped by themselves, over all seeds.
    pub nodes_stopped: u64,
    /// Eventual stores lost, over all seeds.
    pub stores_lost: u64,
    /// Process pauses, over all seeds.
    pub pauses: u64,
    /// Nodes with lossy links, over all seeds.
    pub flaky_nodes: u64,
    /// Other requests refused as stale, over all seeds.
    pub stale_other_refusals: u64,
    /// Wall-clock time taken.
    pub elapsed: Duration,
}

/// Runs one seed: draws its fault mix, runs the cluster, checks the
/// history. `verbose` prints the options, every fault and the stats.
///
/// The cluster is the Ring Paxos one of [`crate::order`], running the
/// same `MulticastNode` code as the node process.
pub fn run_seed(seed: u64, verbose: bool) -> SeedOutcome {
    order::run_seed(seed, verbose, order::Bug::None)
}

/// Prints a failing seed's replay command and its violations.
pub fn print_failure(seed: u64, outcome: &SeedOutcome) {
    print_failure_replayed_by(seed, outcome, "amulet-sim");
}

/// Like [`print_failure`], with the command (and flags) that replays it.
pub fn print_failure_replayed_by(seed: u64, outcome: &SeedOutcome, command: &str) {
    println!("FAILED seed={seed} (replay: {command} --seed {seed})");
    for violation in outcome.violations.iter().take(VIOLATIONS_SHOWN_MAX) {
        println!("  {violation}");
    }
    let hidden = outcome
        .violations
        .len()
        .saturating_sub(VIOLATIONS_SHOWN_MAX);
    if hidden > 0 {
        println!("  ... and {hidden} more");
    }
}

/// Runs one seed; a panic (a failed protocol assertion) becomes an
/// [`Property::Invariant`] violation of that seed instead of ending the swarm.
pub fn run_catching(seed: u64, run: &impl Fn(u64) -> SeedOutcome) -> SeedOutcome {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run(seed))) {
        Ok(outcome) => outcome,
        Err(payload) => {
            let message = payload
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "non-string panic".to_string());
            SeedOutcome {
                violations: vec![Violation::new(Property::Invariant, message)],
                trace_hash: 0,
                stats: SeedStats::default(),
            }
        }
    }
}

/// Runs seeds `start .. start + count` with `run`, printing each failure.
pub fn run_swarm(start: u64, count: u64, run: impl Fn(u64) -> SeedOutcome) -> SwarmSummary {
    run_swarm_replayed_by(start, count, "amulet-sim", run)
}

/// Like [`run_swarm`], naming the command that replays a failed seed.
pub fn run_swarm_replayed_by(
    start: u64,
    count: u64,
    command: &str,
    run: impl Fn(u64) -> SeedOutcome,
) -> SwarmSummary {
    // Wall-clock time of the swarm, for the report only; runs never see it.
    #[allow(clippy::disallowed_methods)]
    let began = Instant::now();
    let mut summary = SwarmSummary::default();
    for seed in start..start.saturating_add(count) {
        let outcome = run_catching(seed, &run);
        summary.seeds += 1;
        summary.checkpoint_restores += outcome.stats.checkpoint_restores;
        summary.trimmed_instances += outcome.stats.trimmed_instances;
        summary.state_transfers += outcome.stats.state_transfers;
        summary.state_transfer_chunks += outcome.stats.state_transfer_chunks;
        summary.hand_offs += outcome.stats.hand_offs;
        summary.balancer_splits += outcome.stats.balancer_splits;
        summary.balancer_load_splits += outcome.stats.balancer_load_splits;
        summary.balancer_tail_splits += outcome.stats.balancer_tail_splits;
        summary.balancer_merges += outcome.stats.balancer_merges;
        summary.balancer_moves += outcome.stats.balancer_moves;
        summary.balancer_weight_moves += outcome.stats.balancer_weight_moves;
        summary.spare_nodes += outcome.stats.spare_nodes;
        summary.spare_replicas += outcome.stats.spare_replicas;
        summary.global_stream_replaced += outcome.stats.global_stream_replaced;
        summary.outsider_joiners += outcome.stats.outsider_joiners;
        summary.outsiders_in_global += outcome.stats.outsiders_in_global;
        summary.joiners += outcome.stats.joiners;
        summary.joiners_admitted += outcome.stats.joiners_admitted;
        summary.killed_for_good += outcome.stats.killed_for_good;
        summary.nodes_stopped += outcome.stats.nodes_stopped;
        summary.stores_lost += outcome.stats.stores_lost;
        summary.pauses += outcome.stats.pauses;
        summary.flaky_nodes += outcome.stats.flaky_nodes;
        summary.subscription_changes += outcome.stats.subscription_changes;
        summary.stale_key_refusals += outcome.stats.stale_key_refusals;
        summary.stale_other_refusals += outcome.stats.stale_other_refusals;
        if !outcome.violations.is_empty() {
            summary.violations += outcome.violations.len() as u64;
            summary.failed_seeds.push(seed);
            print_failure_replayed_by(seed, &outcome, command);
        }
    }
    summary.elapsed = began.elapsed();
    summary
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn swarm_counts_seeds_and_violations_and_names_failed_seeds() {
        let summary = run_swarm(10, 3, |seed| SeedOutcome {
            violations: if seed == 11 {
                vec![Violation::new(crate::Property::Order, "x")]
            } else {
                Vec::new()
            },
            trace_hash: seed,
            stats: SeedStats::default(),
        });
        assert_eq!(summary.seeds, 3);
        assert_eq!(summary.violations, 1);
        assert_eq!(summary.failed_seeds, vec![11]);
    }
}
