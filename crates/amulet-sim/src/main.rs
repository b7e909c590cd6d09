//! `amulet-sim`: run one seed verbosely (`--seed N`) or a swarm of seeds
//! (`--seeds N [--start S]`). Exits non-zero on any violation.

use amulet_sim::cluster::{self, Bug};
use amulet_sim::runner::{print_failure, run_swarm};
use clap::Parser;
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
}

impl BugArg {
    fn bug(self) -> Bug {
        match self {
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
    let bug = arguments.bug.bug();
    match (arguments.seed, arguments.seeds) {
        (Some(seed), _) => replay(seed, arguments.check_determinism, bug),
        (None, Some(count)) => swarm(arguments.start, count, bug),
        (None, None) => {
            eprintln!("error: give --seed N or --seeds N (see --help)");
            ExitCode::from(2)
        }
    }
}

fn replay(seed: u64, check_determinism: bool, bug: Bug) -> ExitCode {
    let outcome = cluster::run_seed(seed, true, bug);
    println!("seed={seed} trace_hash={:016x}", outcome.trace_hash);
    if check_determinism {
        let again = cluster::run_seed(seed, false, bug);
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
    print_failure(seed, &outcome);
    println!("seeds=1 violations={}", outcome.violations.len());
    ExitCode::FAILURE
}

fn swarm(start: u64, count: u64, bug: Bug) -> ExitCode {
    let summary = run_swarm(start, count, |seed| cluster::run_seed(seed, false, bug));
    println!("elapsed_seconds={:.3}", summary.elapsed.as_secs_f64());
    println!("seeds={} violations={}", summary.seeds, summary.violations);
    if summary.violations == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
