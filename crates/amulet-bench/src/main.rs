//! `amulet-bench-order`: the ordering-layer benchmark (a program, not a
//! test). Runs three real `amulet node` processes on 127.0.0.1 per scenario,
//! measures loopback TCP in the same run as the denominator, prints a table
//! and writes `results.csv` and `summary.md` (`scripts/plot_bench.py` turns
//! the CSV into a PNG; `scripts/bench-order` does all of it).

mod baseline;
mod clock;
mod cluster;
mod links;
mod output;
mod scenario;

use clap::Parser;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(Parser, Debug)]
#[command(
    name = "amulet-bench-order",
    about = "Ordering-layer benchmark: 3 amulet node processes on loopback, \
             against a loopback TCP baseline"
)]
struct Args {
    /// The node binary (default: `amulet` next to this program).
    #[arg(long)]
    amulet: Option<PathBuf>,
    /// Output directory (default: bench-results/order-<unix time>).
    #[arg(long)]
    out: Option<PathBuf>,
    /// Measured seconds per scenario (and for each loopback baseline).
    #[arg(long)]
    seconds: Option<u64>,
    /// Warmup before measuring, per scenario (default 4000: a node's
    /// throughput ramps up over its first seconds, with a dip around the
    /// third; see the summary's delivery timeline).
    #[arg(long)]
    warmup_ms: Option<u64>,
    /// Outstanding values at the proposer, for every scenario (default:
    /// by value size: 2048 for 200 B, 1024 for 1 KiB, 256 for 32 KiB).
    #[arg(long)]
    window: Option<u32>,
    /// Runs per scenario, in rounds over the matrix; the median is
    /// reported (default 3, or 1 with --quick).
    #[arg(long)]
    repeat: Option<usize>,
    /// Short run: 2 s per scenario, 1 s warmup, one run each (a smoke
    /// test: it measures the ramp-up, not the steady state).
    #[arg(long)]
    quick: bool,
    /// Only scenarios whose name contains one of these (comma-separated).
    #[arg(long, value_delimiter = ',')]
    only: Vec<String>,
    /// Skip iperf3 even if it is on the PATH.
    #[arg(long)]
    no_iperf: bool,
    /// Keep the nodes' data directories (durable modes write a lot).
    #[arg(long)]
    keep_data: bool,
    /// Do not sample per-link bytes with `ss` during the scenarios.
    #[arg(long)]
    no_link_stats: bool,
    /// Override a stream limit in every stream's `[streams.limits]`, e.g.
    /// `--stream-limit pipeline_instances_max=256` (repeatable).
    #[arg(long, value_name = "KEY=VALUE")]
    stream_limit: Vec<String>,
}

fn default_amulet() -> PathBuf {
    std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent().map(|dir| dir.join("amulet")))
        .unwrap_or_else(|| PathBuf::from("amulet"))
}

fn write(path: &Path, text: &str) {
    if let Err(e) = fs::write(path, text) {
        eprintln!("cannot write {}: {e}", path.display());
    }
}

/// Copies the node binary to `out/bin/amulet` and returns the copy.
fn snapshot(amulet: &Path, out: &Path) -> std::io::Result<PathBuf> {
    let dir = out.join("bin");
    fs::create_dir_all(&dir)?;
    let copy = dir.join("amulet");
    fs::copy(amulet, &copy)?;
    Ok(copy)
}

fn main() -> ExitCode {
    let args = Args::parse();
    let started_unix = clock::unix_seconds();
    let seconds = args
        .seconds
        .unwrap_or(if args.quick { 2 } else { 5 })
        .max(1);
    let warmup_ms = args
        .warmup_ms
        .unwrap_or(if args.quick { 1000 } else { 4000 });
    let repeat = args.repeat.unwrap_or(if args.quick { 1 } else { 3 }).max(1);
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from(format!("bench-results/order-{started_unix}")));
    if let Err(e) = fs::create_dir_all(&out) {
        eprintln!("cannot create {}: {e}", out.display());
        return ExitCode::FAILURE;
    }
    let out = fs::canonicalize(&out).unwrap_or(out);
    let amulet = args.amulet.clone().unwrap_or_else(default_amulet);
    if !amulet.is_file() {
        eprintln!(
            "node binary {} not found (build it: cargo build --release -p amulet)",
            amulet.display()
        );
        return ExitCode::FAILURE;
    }
    let mut limits = Vec::new();
    for kv in &args.stream_limit {
        let Some((key, value)) = kv.split_once('=') else {
            eprintln!("--stream-limit wants KEY=VALUE, got {kv:?}");
            return ExitCode::FAILURE;
        };
        limits.push(format!("{} = {}", key.trim(), value.trim()));
    }
    let load_before = cluster::load_average();
    let cpus = std::thread::available_parallelism().map_or(0, |n| n.get());
    if let Some(load) = load_before.filter(|&l| l > cpus as f64 * 0.5) {
        eprintln!(
            "warning: load average {load:.2} on {cpus} CPUs before the run; \
             other processes will depress the figures"
        );
    }
    // Run a copy: the workspace's binary may be rebuilt during the run.
    let amulet = match snapshot(&amulet, &out) {
        Ok(copy) => copy,
        Err(e) => {
            eprintln!(
                "cannot copy {} into {}: {e}",
                amulet.display(),
                out.display()
            );
            return ExitCode::FAILURE;
        }
    };
    let scenarios: Vec<_> = scenario::matrix(args.window)
        .into_iter()
        .filter(|s| args.only.is_empty() || args.only.iter().any(|o| s.name().contains(o)))
        .collect();
    println!(
        "amulet-bench-order: {} scenarios x {repeat} run(s) x {seconds} s (+{warmup_ms} ms warmup), out {}",
        scenarios.len(),
        out.display()
    );

    // The denominator, measured in the same run before the scenarios.
    let mut loopback = baseline::Loopback::default();
    match baseline::blast(seconds as f64) {
        Ok(mb) => {
            println!("loopback blast: {mb:.1} MB/s");
            loopback.blast_mb_per_s = Some(mb);
        }
        Err(e) => eprintln!("loopback blast failed: {e}"),
    }
    if args.no_iperf {
        loopback.iperf3_note = Some("skipped (--no-iperf)".into());
    } else if !baseline::on_path("iperf3") {
        loopback.iperf3_note = Some("iperf3 not on PATH; apt-get install iperf3".into());
    } else {
        match baseline::iperf3(seconds) {
            Ok(mb) => {
                println!("loopback iperf3: {mb:.1} MB/s");
                loopback.iperf3_mb_per_s = Some(mb);
            }
            Err(e) => {
                eprintln!("iperf3 failed: {e}");
                loopback.iperf3_note = Some(format!("failed: {e}"));
            }
        }
    }
    // The durable modes' denominator: the disk the nodes' logs share.
    if scenarios.iter().any(|s| s.mode != scenario::Mode::Memory) {
        match baseline::disk_fdatasync(&out, seconds as f64) {
            Ok(mb) => {
                println!("disk (32 KiB appends, fdatasync each): {mb:.1} MB/s");
                loopback.disk_mb_per_s = Some(mb);
            }
            Err(e) => eprintln!("disk baseline failed: {e}"),
        }
    }
    println!("{}", scenario::HOPS_RATIONALE);

    let settings = cluster::RunSettings {
        amulet: amulet.clone(),
        seconds,
        warmup_ms,
        keep_data: args.keep_data,
        limits: limits.clone(),
        link_stats: !args.no_link_stats,
    };
    let info = output::RunInfo {
        started_unix,
        seconds,
        warmup_ms,
        repeat,
        cpus,
        amulet: amulet.display().to_string(),
        limits,
        load_before,
    };
    let csv_path = out.join("results.csv");
    let summary_path = out.join("summary.md");
    let mut runs: Vec<Vec<Result<cluster::Measured, String>>> = vec![Vec::new(); scenarios.len()];
    let rows_of = |runs: &[Vec<Result<cluster::Measured, String>>],
                   loopback: &baseline::Loopback| {
        scenarios
            .iter()
            .zip(runs)
            .filter(|(_, r)| !r.is_empty())
            .map(|(s, r)| output::Row::new(s.clone(), r, loopback))
            .collect::<Vec<_>>()
    };
    for round in 0..repeat {
        for (i, s) in scenarios.iter().enumerate() {
            let name = s.name();
            println!(
                "running {name} (window {}, run {} of {repeat}) ...",
                s.window,
                round + 1
            );
            let dir = if repeat == 1 {
                out.join(&name)
            } else {
                out.join(&name).join(format!("run-{}", round + 1))
            };
            let result = cluster::run_scenario(&settings, s, &dir);
            match &result {
                Ok(m) => println!(
                    "  {:.0} msgs/s, {:.1} MB/s, p50 {:.3} ms, p99 {:.3} ms, order {}",
                    m.msgs_per_s,
                    m.mb_per_s,
                    m.report.latency_p50_micros as f64 / 1000.0,
                    m.report.latency_p99_micros as f64 / 1000.0,
                    m.agreement.label()
                ),
                Err(e) => println!("  FAILED: {e}"),
            }
            runs[i].push(result);
            // Rewritten after every run, so an interrupted run keeps its rows.
            let rows = rows_of(&runs, &loopback);
            write(&csv_path, &output::csv(&rows, &loopback));
            write(&summary_path, &output::summary(&rows, &loopback, &info));
        }
    }
    // Loopback again at the end: the higher figure is the denominator.
    if let Ok(mb) = baseline::blast(seconds as f64) {
        println!("loopback blast (end): {mb:.1} MB/s");
        loopback.blast_mb_per_s = Some(loopback.blast_mb_per_s.map_or(mb, |b| b.max(mb)));
    }
    let rows = rows_of(&runs, &loopback);
    write(&csv_path, &output::csv(&rows, &loopback));
    write(&summary_path, &output::summary(&rows, &loopback, &info));
    println!();
    print!("{}", output::table(&rows));
    if let Some(lb) = loopback.best() {
        println!(
            "loopback {lb:.1} MB/s ({}); 32 KiB target = 0.5 x {lb:.1} / {} = {:.1} MB/s",
            loopback.source(),
            scenario::PAYLOAD_HOPS,
            0.5 * lb / f64::from(scenario::PAYLOAD_HOPS)
        );
    }
    println!(
        "wrote {} and {}",
        csv_path.display(),
        summary_path.display()
    );
    if rows.iter().any(|r| r.result.is_err()) {
        ExitCode::from(2)
    } else {
        ExitCode::SUCCESS
    }
}
