//! `amulet-sim`: run one seed verbosely (`--seed N`) or a swarm of seeds
//! (`--seeds N [--start S]`). Exits non-zero on any violation.

use amulet_sim::runner::{print_failure, run_seed, run_swarm};
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
}

fn main() -> ExitCode {
    let arguments = Arguments::parse();
    match (arguments.seed, arguments.seeds) {
        (Some(seed), _) => replay(seed, arguments.check_determinism),
        (None, Some(count)) => swarm(arguments.start, count),
        (None, None) => {
            eprintln!("error: give --seed N or --seeds N (see --help)");
            ExitCode::from(2)
        }
    }
}

fn replay(seed: u64, check_determinism: bool) -> ExitCode {
    let outcome = run_seed(seed, true);
    println!("seed={seed} trace_hash={:016x}", outcome.trace_hash);
    if check_determinism {
        let again = run_seed(seed, false);
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

fn swarm(start: u64, count: u64) -> ExitCode {
    let summary = run_swarm(start, count, |seed| run_seed(seed, false));
    println!("elapsed_seconds={:.3}", summary.elapsed.as_secs_f64());
    println!("seeds={} violations={}", summary.seeds, summary.violations);
    if summary.violations == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
