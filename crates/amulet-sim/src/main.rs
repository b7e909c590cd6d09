//! `amulet-sim`: run one seed verbosely (`--seed N`) or a swarm of seeds
//! (`--seeds N [--start S]`), of the multicast cluster, (`--dmap`) of
//! DMap on it, (`--txn`) of transactions on DMap, (`--dotted`) of
//! eventual maps, or (`--membership`) of consistent membership. Exits
//! non-zero on any violation.

use amulet_dotted::DottedBug;
use amulet_membership::MembershipBug;
use amulet_sim::dmap::{
    run_access_seed, run_dmap_pauses_only_seed, run_dmap_seed, run_fields_seed, run_logs_seed,
    run_txn_seed, DmapBug,
};
use amulet_sim::dotted::{run_dotted_seed, run_service_seed};
use amulet_sim::elastic::{run_elastic_seed, ElasticBug};
use amulet_sim::membership::run_membership_seed;
use amulet_sim::order::{self, Bug};
use amulet_sim::runner::{print_failure_replayed_by, run_swarm_replayed_by};
use amulet_sim::SeedOutcome;
use clap::{Parser, ValueEnum};
use std::process::ExitCode;

/// Deterministic simulation of Amulet under faults, with checkers.
#[derive(Parser, Debug)]
#[command(name = "amulet-sim", version)]
struct Arguments {
    /// Run this one seed verbosely (replay of a failure).
    #[arg(long, conflicts_with = "seeds")]
    seed: Option<u64>,
    /// Run this many seeds and print a summary.
    #[arg(long)]
    seeds: Option<u64>,
    /// First seed of a swarm.
    #[arg(long, default_value_t = 0, requires = "seeds")]
    start: u64,
    /// With --seed: run it twice and require equal trace hashes.
    #[arg(long, requires = "seed")]
    check_determinism: bool,
    /// Run a deliberately broken variant (to see the checkers catch it).
    #[arg(long, value_enum, default_value = "none")]
    bug: BugArg,
    /// Simulate DMap (partitioned replicas, clients, linearizability
    /// checker) instead of the bare multicast layer.
    #[arg(long, conflicts_with = "elastic")]
    dmap: bool,
    /// With --dmap: no crashes and no partitions, only the network's
    /// delays and losses, process pauses shorter than failure detection,
    /// kills for good and joins; the views must remove no node but those
    /// killed for good.
    #[arg(long, requires = "dmap")]
    pauses_only: bool,
    /// Simulate transactions (list-append across partitions on DMap's
    /// cluster, strict serializability checked by Elle's method).
    #[arg(long, conflicts_with_all = ["elastic", "dmap"])]
    txn: bool,
    /// Simulate DMap with field records among the operations (puts of
    /// records and `MergeFields`, docs/field-records.md), checked for
    /// linearizability like `--dmap`.
    #[arg(long, conflicts_with_all = ["elastic", "dmap", "txn"])]
    fields: bool,
    /// Simulate DMap with DLog's logs among the operations (appends,
    /// multi-appends, reads, trims, bounds on two logs, docs/logs.md),
    /// checked for linearizability like `--dmap`.
    #[arg(long, conflicts_with_all = ["elastic", "dmap", "txn", "fields"])]
    logs: bool,
    /// Simulate DMap with clients running as a user whose permission an
    /// administrator grants and revokes while they run (docs/security.md):
    /// denied operations checked as taking no effect, and every replica
    /// holding the same access configuration at each global position.
    #[arg(long, conflicts_with_all = ["elastic", "dmap", "txn", "fields", "logs"])]
    access: bool,
    /// Simulate eventual maps (DottedDB's node-wide dot clocks: replicas
    /// on a ring, lossy replication, anti-entropy by clock exchange),
    /// checked for convergence, causality and leftover metadata.
    #[arg(long, conflicts_with_all = ["elastic", "dmap", "txn", "fields", "logs"])]
    dotted: bool,
    /// Simulate the node's eventual-map service (the code the node runs:
    /// R/W quorums, forwarding, replication, anti-entropy and strip
    /// timers, journals, nodes that learn of the map at different
    /// times), with the same checkers as `--dotted`.
    #[arg(long, conflicts_with_all = ["elastic", "dmap", "txn", "fields", "logs", "dotted"])]
    dotted_service: bool,
    /// Check a transactional history instead of running seeds: a file of
    /// list-append operations in Elle's JSON format (one op a line, or an
    /// array), judged strictly serializable with the same checker as
    /// `--txn` (the fault suite's `append` and `bank` workloads use it).
    #[arg(long, value_name = "FILE", conflicts_with_all = ["seed", "seeds"])]
    check_history: Option<std::path::PathBuf>,
    /// Simulate Elastic Paxos (groups subscribing to and unsubscribing
    /// from streams under faults) instead of static subscriptions.
    #[arg(long)]
    elastic: bool,
    /// Simulate consistent membership (Rapid-style monitoring, stable cuts,
    /// views ordered on the global stream) under kills, pauses, lossy and
    /// broken links, bridge partitions, joins and leaves
    /// (docs/membership.md).
    #[arg(long, conflicts_with_all = ["elastic", "dmap", "txn", "fields", "logs", "access", "dotted", "dotted_service"])]
    membership: bool,
}

/// The broken variants selectable from the command line.
#[derive(clap::ValueEnum, Clone, Copy, Debug)]
enum BugArg {
    None,
    ForgetPromise,
    AmnesiacAcceptor,
    DeliverBeforeDecision,
    IgnorePhase1Votes,
    MergeIgnoresSkips,
    /// DMap: multi-partition commands complete without signals.
    SkipSignals,
    /// DMap: a restored replica resumes one instance past its checkpoint.
    CheckpointPastPosition,
    /// DMap: acceptors trim below their own checkpoints, without a quorum.
    TrimWithoutQuorum,
    /// DMap: a partition split off starts empty (no range handed over).
    SplitWithoutTransfer,
    /// DMap: replicas answer single-partition reads from their own state
    /// without ordering them.
    LocalReads,
    /// DMap: a replica moved away drops its state at the move's fence.
    HandOffAtFence,
    /// DMap: state transfer (in the host core) assembles a peer's
    /// checkpoint without its last chunk.
    TransferDropsLastChunk,
    /// Elastic: a subscription's merge point comes from the new stream's
    /// copy alone.
    MergePointFromNewStream,
    /// Transactions: a read version's begin completes without signals.
    BeginWithoutSignals,
    /// Transactions: a partition holding none of a commit's writes votes
    /// yes unchecked.
    SkipValidation,
    /// Transactions: checkpoints leave out the index of recent writes.
    RecentWritesNotCheckpointed,
    /// Transactions: range conflicts are not checked.
    RangesNotValidated,
    /// Transactions: clients reuse their last read version.
    ReuseReadVersions,
    /// Field records (`--fields`): a merge drops the fields it does not
    /// name.
    MergeReplacesRecord,
    /// Logs (`--logs`): a trim answers as if it dropped the entries but
    /// keeps them.
    TrimKeepsEntries,
    /// Logs (`--logs`): checkpoints restart every log's positions at 0.
    LogPositionsNotCheckpointed,
    /// Logs (`--logs`): tail reads from inside a log start one entry late.
    TailSkipsAnEntry,
    /// Access (`--access`): a grant or revocation takes effect at the
    /// receiving replica before it is ordered.
    AccessAtEdge,
    /// Membership (`--dmap`): a node's alerts and cuts take effect at its
    /// own replicas when proposed, before they are ordered.
    MembershipAtEdge,
    /// Self-healing (`--dmap`): a repair keeps one of the partition's
    /// removed replicas in place of a live node.
    HealingKeepsRemovedReplica,
    /// Self-healing (`--dmap`): a repair's new stream keeps an acceptor
    /// on a removed node.
    HealingKeepsRemovedAcceptor,
    /// Membership (`--dmap --pauses-only`): monitors call an edge failed
    /// after 150 ms of silence, shorter than the pauses.
    HastyFailureDetector,
    /// Moves (`--dmap`): a node a move takes a partition from reports
    /// that it holds nothing while its replica still serves the state.
    HandedOffWhileHolding,
    /// Membership (`--dmap`): a removed node stops as soon as the map
    /// retires its streams, before their replicas pass the fence.
    LeaveBeforeRetiredStreamsPass,
    /// Moves (`--dmap`): the balancer moves replicas onto members that
    /// sent no weight report lately.
    BalancerMovesToSilentNodes,
    /// Fence keys (`--dmap`): a request routed by an older map is taken
    /// without checking its key against the partition's current range.
    FenceKeysUnchecked,
    /// Fence keys (`--dmap`): a client refused as stale keeps its cached
    /// ranges.
    ClientKeepsStaleRanges,
    /// Not a bug (`--dmap`): whole-map versions, the behaviour before
    /// fence keys, to compare `map_refreshes` with.
    WholeMapVersions,
    /// Eventual maps (`--dotted`): anti-entropy closes the answerer's
    /// whole clock entry even when its reply was cut.
    SyncAdvancesWholeClock,
    /// Eventual maps: strip drops context entries across clock gaps.
    StripPastGaps,
    /// Eventual maps: a deleted object is forgotten before its context is
    /// stripped.
    ForgetUnstrippedDeletes,
    /// Eventual maps: the dot-key map is pruned before every peer has
    /// the dot.
    PruneBeforeEveryPeer,
    /// Eventual maps: a replica closes a retired id before every peer
    /// covered it.
    CloseWithoutCoverage,
    /// Eventual maps: a replacement gets the id of the replica it
    /// replaces.
    ReuseReplicaId,
    /// Eventual maps: a write is answered and replicated before its
    /// journal is synced (a crash then reissues its dot).
    AckBeforeSync,
    /// Eventual maps: a replication message's skip hint leaves out the
    /// coordinator's earlier dots for the receiver's keys.
    SkipsOwnKeys,
    /// Membership: a subject is cut on the first alert about it.
    CutOnFirstAlert,
    /// Membership: failed observers do not count as implicit reports.
    NoImplicitEdges,
}

impl BugArg {
    fn dmap_bug(self) -> DmapBug {
        match self {
            BugArg::SkipSignals => DmapBug::CompleteWithoutSignals,
            BugArg::CheckpointPastPosition => DmapBug::CheckpointPastPosition,
            BugArg::TrimWithoutQuorum => DmapBug::TrimWithoutQuorum,
            BugArg::SplitWithoutTransfer => DmapBug::SplitWithoutTransfer,
            BugArg::LocalReads => DmapBug::AnswerReadsLocally,
            BugArg::HandOffAtFence => DmapBug::HandOffAtFence,
            BugArg::TransferDropsLastChunk => DmapBug::TransferDropsLastChunk,
            BugArg::BeginWithoutSignals => DmapBug::BeginWithoutSignals,
            BugArg::SkipValidation => DmapBug::SkipValidationWithoutWrites,
            BugArg::RecentWritesNotCheckpointed => DmapBug::RecentWritesNotCheckpointed,
            BugArg::RangesNotValidated => DmapBug::RangesNotValidated,
            BugArg::ReuseReadVersions => DmapBug::ReuseReadVersions,
            BugArg::MergeReplacesRecord => DmapBug::MergeReplacesRecord,
            BugArg::TrimKeepsEntries => DmapBug::TrimKeepsEntries,
            BugArg::LogPositionsNotCheckpointed => DmapBug::LogPositionsNotCheckpointed,
            BugArg::TailSkipsAnEntry => DmapBug::TailSkipsAnEntry,
            BugArg::AccessAtEdge => DmapBug::AccessAtEdge,
            BugArg::MembershipAtEdge => DmapBug::MembershipAtEdge,
            BugArg::HealingKeepsRemovedReplica => DmapBug::HealingKeepsRemovedReplica,
            BugArg::HealingKeepsRemovedAcceptor => DmapBug::HealingKeepsRemovedAcceptor,
            BugArg::HastyFailureDetector => DmapBug::HastyFailureDetector,
            BugArg::HandedOffWhileHolding => DmapBug::HandedOffWhileHolding,
            BugArg::LeaveBeforeRetiredStreamsPass => DmapBug::LeaveBeforeRetiredStreamsPass,
            BugArg::BalancerMovesToSilentNodes => DmapBug::BalancerMovesToSilentNodes,
            BugArg::FenceKeysUnchecked => DmapBug::FenceKeysUnchecked,
            BugArg::ClientKeepsStaleRanges => DmapBug::ClientKeepsStaleRanges,
            BugArg::WholeMapVersions => DmapBug::WholeMapVersions,
            _ => DmapBug::None,
        }
    }

    fn dotted_bug(self) -> DottedBug {
        match self {
            BugArg::SyncAdvancesWholeClock => DottedBug::SyncAdvancesWholeClock,
            BugArg::StripPastGaps => DottedBug::StripPastGaps,
            BugArg::ForgetUnstrippedDeletes => DottedBug::ForgetUnstrippedDeletes,
            BugArg::AckBeforeSync => DottedBug::AckBeforeSync,
            BugArg::PruneBeforeEveryPeer => DottedBug::PruneBeforeEveryPeer,
            BugArg::CloseWithoutCoverage => DottedBug::CloseWithoutCoverage,
            BugArg::ReuseReplicaId => DottedBug::ReuseReplicaId,
            BugArg::SkipsOwnKeys => DottedBug::SkipsOwnKeys,
            _ => DottedBug::None,
        }
    }

    fn membership_bug(self) -> MembershipBug {
        match self {
            BugArg::CutOnFirstAlert => MembershipBug::CutOnFirstAlert,
            BugArg::NoImplicitEdges => MembershipBug::NoImplicitEdges,
            _ => MembershipBug::None,
        }
    }

    fn elastic_bug(self) -> ElasticBug {
        match self {
            BugArg::MergePointFromNewStream => ElasticBug::MergePointFromNewStreamOnly,
            _ => ElasticBug::None,
        }
    }

    fn bug(self) -> Bug {
        match self {
            BugArg::SkipSignals
            | BugArg::CheckpointPastPosition
            | BugArg::TrimWithoutQuorum
            | BugArg::SplitWithoutTransfer
            | BugArg::LocalReads
            | BugArg::HandOffAtFence
            | BugArg::TransferDropsLastChunk
            | BugArg::MergePointFromNewStream
            | BugArg::BeginWithoutSignals
            | BugArg::SkipValidation
            | BugArg::RecentWritesNotCheckpointed
            | BugArg::RangesNotValidated
            | BugArg::ReuseReadVersions
            | BugArg::MergeReplacesRecord
            | BugArg::TrimKeepsEntries
            | BugArg::LogPositionsNotCheckpointed
            | BugArg::TailSkipsAnEntry
            | BugArg::AccessAtEdge
            | BugArg::MembershipAtEdge
            | BugArg::HealingKeepsRemovedReplica
            | BugArg::HealingKeepsRemovedAcceptor
            | BugArg::HastyFailureDetector
            | BugArg::HandedOffWhileHolding
            | BugArg::LeaveBeforeRetiredStreamsPass
            | BugArg::BalancerMovesToSilentNodes
            | BugArg::FenceKeysUnchecked
            | BugArg::ClientKeepsStaleRanges
            | BugArg::WholeMapVersions
            | BugArg::SyncAdvancesWholeClock
            | BugArg::StripPastGaps
            | BugArg::ForgetUnstrippedDeletes
            | BugArg::AckBeforeSync
            | BugArg::PruneBeforeEveryPeer
            | BugArg::CloseWithoutCoverage
            | BugArg::ReuseReplicaId
            | BugArg::SkipsOwnKeys
            | BugArg::CutOnFirstAlert
            | BugArg::NoImplicitEdges => Bug::None,
            BugArg::None => Bug::None,
            BugArg::ForgetPromise => Bug::ForgetPromiseOnRestart,
            BugArg::AmnesiacAcceptor => Bug::AmnesiacAcceptorVotes,
            BugArg::DeliverBeforeDecision => Bug::DeliverBeforeDecision,
            BugArg::IgnorePhase1Votes => Bug::IgnorePhase1Votes,
            BugArg::MergeIgnoresSkips => Bug::MergeIgnoresSkipCounts,
        }
    }
}

fn main() -> ExitCode {
    let arguments = Arguments::parse();
    // The host core's own log lines (what the node would log), tagged
    // with the node and the virtual time, for replaying one seed:
    // AMULET_SIM_LOG=info amulet-sim --dmap --seed N.
    if let (Some(_), Ok(filter)) = (arguments.seed, std::env::var("AMULET_SIM_LOG")) {
        tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::new(filter))
            .without_time()
            .with_target(false)
            .with_ansi(false)
            .with_writer(std::io::stdout)
            .init();
    }
    if let Some(path) = &arguments.check_history {
        return check_history(path);
    }
    let (bug, dmap_bug) = (arguments.bug.bug(), arguments.bug.dmap_bug());
    let elastic_bug = arguments.bug.elastic_bug();
    let dotted_bug = arguments.bug.dotted_bug();
    let membership_bug = arguments.bug.membership_bug();
    let run = move |seed: u64, verbose: bool| -> SeedOutcome {
        if arguments.membership {
            run_membership_seed(seed, verbose, membership_bug)
        } else if arguments.dotted {
            run_dotted_seed(seed, verbose, dotted_bug)
        } else if arguments.dotted_service {
            run_service_seed(seed, verbose, dotted_bug)
        } else if arguments.txn {
            run_txn_seed(seed, verbose, dmap_bug)
        } else if arguments.fields {
            run_fields_seed(seed, verbose, dmap_bug)
        } else if arguments.logs {
            run_logs_seed(seed, verbose, dmap_bug)
        } else if arguments.access {
            run_access_seed(seed, verbose, dmap_bug)
        } else if arguments.dmap && arguments.pauses_only {
            run_dmap_pauses_only_seed(seed, verbose, dmap_bug)
        } else if arguments.dmap {
            run_dmap_seed(seed, verbose, dmap_bug)
        } else if arguments.elastic {
            run_elastic_seed(seed, verbose, elastic_bug)
        } else {
            order::run_seed(seed, verbose, bug)
        }
    };
    let command = match (
        arguments.dmap
            || arguments.txn
            || arguments.fields
            || arguments.logs
            || arguments.access
            || arguments.dotted
            || arguments.dotted_service
            || arguments.membership,
        arguments.elastic,
        arguments.bug,
    ) {
        (false, false, BugArg::None) => "amulet-sim".to_string(),
        (dmap, elastic, bug) => {
            let mut command = "amulet-sim".to_string();
            if arguments.membership {
                command.push_str(" --membership");
            } else if arguments.dotted {
                command.push_str(" --dotted");
            } else if arguments.dotted_service {
                command.push_str(" --dotted-service");
            } else if arguments.txn {
                command.push_str(" --txn");
            } else if arguments.fields {
                command.push_str(" --fields");
            } else if arguments.logs {
                command.push_str(" --logs");
            } else if arguments.access {
                command.push_str(" --access");
            } else if dmap {
                command.push_str(" --dmap");
                if arguments.pauses_only {
                    command.push_str(" --pauses-only");
                }
            }
            if elastic {
                command.push_str(" --elastic");
            }
            if !matches!(bug, BugArg::None) {
                let name = bug.to_possible_value().expect("not skipped");
                command.push_str(&format!(" --bug {}", name.get_name()));
            }
            command
        }
    };
    match (arguments.seed, arguments.seeds) {
        (Some(seed), _) => replay(seed, arguments.check_determinism, &command, run),
        (None, Some(count)) => swarm(arguments.start, count, &command, run),
        (None, None) => {
            eprintln!("error: give --seed N or --seeds N (see --help)");
            ExitCode::from(2)
        }
    }
}

fn replay(
    seed: u64,
    check_determinism: bool,
    command: &str,
    run: impl Fn(u64, bool) -> SeedOutcome,
) -> ExitCode {
    let outcome = run(seed, true);
    println!("seed={seed} trace_hash={:016x}", outcome.trace_hash);
    if check_determinism {
        let again = run(seed, false);
        if again.trace_hash != outcome.trace_hash {
            println!(
                "NONDETERMINISTIC seed={seed}: trace_hash {:016x} then {:016x}",
                outcome.trace_hash, again.trace_hash
            );
            return ExitCode::FAILURE;
        }
        println!("deterministic: second run has the same trace hash");
    }
    if outcome.violations.is_empty() {
        println!("seeds=1 violations=0");
        return ExitCode::SUCCESS;
    }
    print_failure_replayed_by(seed, &outcome, command);
    println!("seeds=1 violations={}", outcome.violations.len());
    ExitCode::FAILURE
}

fn swarm(
    start: u64,
    count: u64,
    command: &str,
    run: impl Fn(u64, bool) -> SeedOutcome,
) -> ExitCode {
    let summary = run_swarm_replayed_by(start, count, command, |seed| run(seed, false));
    println!("elapsed_seconds={:.3}", summary.elapsed.as_secs_f64());
    if summary.subscription_changes > 0 {
        println!("subscription_changes={}", summary.subscription_changes);
    }
    if summary.checkpoint_restores > 0 {
        println!("checkpoint_restores={}", summary.checkpoint_restores);
        println!("trimmed_instances={}", summary.trimmed_instances);
        println!("state_transfers={}", summary.state_transfers);
        println!("state_transfer_chunks={}", summary.state_transfer_chunks);
        println!("hand_offs={}", summary.hand_offs);
    }
    if summary.balancer_splits + summary.balancer_merges + summary.balancer_moves > 0 {
        println!("balancer_splits={}", summary.balancer_splits);
        println!("balancer_load_splits={}", summary.balancer_load_splits);
        println!("balancer_tail_splits={}", summary.balancer_tail_splits);
        println!("balancer_merges={}", summary.balancer_merges);
        println!("balancer_moves={}", summary.balancer_moves);
        println!("balancer_weight_moves={}", summary.balancer_weight_moves);
    }
    if summary.killed_for_good > 0 {
        println!("killed_for_good={}", summary.killed_for_good);
    }
    if summary.nodes_stopped > 0 {
        println!("nodes_stopped={}", summary.nodes_stopped);
    }
    if summary.stores_lost > 0 {
        println!("stores_lost={}", summary.stores_lost);
    }
    if summary.pauses > 0 {
        println!("pauses={}", summary.pauses);
    }
    if summary.flaky_nodes > 0 {
        println!("flaky_nodes={}", summary.flaky_nodes);
    }
    if summary.global_stream_replaced > 0 {
        println!("global_stream_replaced={}", summary.global_stream_replaced);
    }
    if summary.outsider_joiners > 0 {
        println!(
            "outsider_joiners={} outsiders_in_global={}",
            summary.outsider_joiners, summary.outsiders_in_global
        );
    }
    if summary.spare_nodes > 0 {
        println!("spare_nodes={}", summary.spare_nodes);
        println!("spare_replicas_at_end={}", summary.spare_replicas);
        println!(
            "joiners={} joiners_admitted={}",
            summary.joiners, summary.joiners_admitted
        );
    }
    if summary.stale_key_refusals + summary.stale_other_refusals > 0 {
        println!("stale_key_refusals={}", summary.stale_key_refusals);
        println!("stale_other_refusals={}", summary.stale_other_refusals);
    }
    println!("seeds={} violations={}", summary.seeds, summary.violations);
    if summary.violations == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// `--check-history FILE`: prints `valid` or the anomalies, exits 0 only
/// for a strictly serializable history.
fn check_history(path: &std::path::Path) -> ExitCode {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) => {
            eprintln!("error: cannot read {}: {e}", path.display());
            return ExitCode::from(2);
        }
    };
    match amulet_sim::checker::transactions::check_elle_json(&text) {
        Ok(None) => {
            println!("valid: strictly serializable");
            ExitCode::SUCCESS
        }
        Ok(Some(anomalies)) => {
            println!("invalid: {anomalies}");
            ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("error: {} is not a history: {e}", path.display());
            ExitCode::from(2)
        }
    }
}
