//! `amulet order-demo`: the ordering layer alone. Writes configurations
//! for three nodes on 127.0.0.1, runs each as a child `amulet node` with a
//! small load, prints what every node delivered once a second, then stops
//! them and shows that their delivery orders agree.

use amulet_node::{common_prefix, free_local_ports, local_cluster_toml, DigestPoint};
use anyhow::Context;
use serde::Deserialize;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

const NODES: usize = 3;
const STREAMS: u32 = 2;
/// Children stop by themselves this long after the planned end, so they
/// never outlive a parent that was killed outright.
const CHILD_GRACE_MS: u64 = 30_000;
/// How long stopping children may take before they are killed.
const STOP_TIMEOUT: Duration = Duration::from_secs(10);

/// Options of `amulet order-demo`.
#[derive(clap::Args)]
pub struct OrderDemoArgs {
    /// How long to run the cluster.
    #[arg(long, default_value_t = 10)]
    seconds: u64,
    /// Where configurations, data and logs go (default: a fresh temporary
    /// directory).
    #[arg(long)]
    dir: Option<PathBuf>,
    /// Acceptor storage: memory, async or sync.
    #[arg(long, default_value = "memory")]
    storage: String,
}

/// The parts of a node report `dev` reads back.
#[derive(Deserialize)]
struct Report {
    node: u32,
    values_all: u64,
    window_micros: u64,
    latency_p50_micros: u64,
    latency_p99_micros: u64,
    delivered: DigestPoint,
    digest_checkpoints: Vec<DigestPoint>,
}

/// Kills every child still running when dropped: no path out of `dev`,
/// error or panic included, leaves nodes behind.
pub struct Children(pub Vec<Child>);

impl Drop for Children {
    fn drop(&mut self) {
        for child in &mut self.0 {
            if let Ok(None) = child.try_wait() {
                let _ = child.kill();
            }
            let _ = child.wait();
        }
    }
}

/// Runs the local cluster.
pub fn run(args: OrderDemoArgs) -> anyhow::Result<()> {
    anyhow::ensure!(
        ["memory", "async", "sync"].contains(&args.storage.as_str()),
        "--storage must be memory, async or sync"
    );
    let dir = args.dir.clone().unwrap_or_else(|| {
        std::env::temp_dir().join(format!("amulet-order-demo-{}", std::process::id()))
    });
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let ports = free_local_ports(NODES)?;
    let exe = std::env::current_exe().context("cannot find the amulet executable")?;
    println!(
        "amulet order-demo: {NODES} nodes, {STREAMS} streams, {} storage, in {}",
        args.storage,
        dir.display()
    );
    let interrupted = watch_interrupt()?;
    let delivered: Arc<Vec<AtomicU64>> = Arc::new((0..NODES).map(|_| AtomicU64::new(0)).collect());
    let mut children = Children(Vec::new());
    for node in 1..=NODES as u32 {
        let data_dir = dir.join(format!("node-{node}"));
        // A fresh cluster: memory acceptors only vote in a data
        // directory's first run.
        let _ = std::fs::remove_dir_all(&data_dir);
        // A report left by an earlier run must not pass for this one's.
        let _ = std::fs::remove_file(report_path(&dir, node));
        let config_path = dir.join(format!("node-{node}.toml"));
        let text = local_cluster_toml(
            u64::from(std::process::id()),
            &ports,
            node,
            &data_dir,
            STREAMS,
            &args.storage,
        );
        std::fs::write(&config_path, text)?;
        let log = std::fs::File::create(dir.join(format!("node-{node}.log")))?;
        let mut child = Command::new(&exe)
            .arg("node")
            .arg("--config")
            .arg(&config_path)
            .args([
                "--load-streams",
                "1,2",
                "--load-window",
                "8",
                "--load-warmup-ms",
                "0",
            ])
            .arg("--duration-ms")
            .arg((args.seconds * 1000 + CHILD_GRACE_MS).to_string())
            .arg("--report")
            .arg(report_path(&dir, node))
            .arg("--stop-on-stdin-eof")
            .args(["--status-interval-ms", "200"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::from(log))
            .spawn()
            .context("cannot start a node")?;
        let stdout = child.stdout.take().context("no child stdout")?;
        let delivered = delivered.clone();
        std::thread::spawn(move || follow_status(stdout, &delivered[node as usize - 1]));
        children.0.push(child);
    }
    for second in 1..=args.seconds {
        for _ in 0..10 {
            std::thread::sleep(Duration::from_millis(100));
            if interrupted.load(Ordering::Relaxed) {
                break;
            }
        }
        if interrupted.load(Ordering::Relaxed) {
            println!("interrupted");
            break;
        }
        for (i, child) in children.0.iter_mut().enumerate() {
            if let Some(status) = child.try_wait()? {
                anyhow::bail!(
                    "node {} exited early ({status}); see its log in {}",
                    i + 1,
                    dir.display()
                );
            }
        }
        let counts: Vec<String> = delivered
            .iter()
            .enumerate()
            .map(|(i, d)| format!("n{}={}", i + 1, d.load(Ordering::Relaxed)))
            .collect();
        println!("t={second:>3}s delivered: {}", counts.join(" "));
    }
    stop(&mut children)?;
    summarize(&dir)
}

/// Closes every child's stdin (they stop cleanly and write reports), waits
/// for them, and kills any that does not stop in time.
pub fn stop(children: &mut Children) -> anyhow::Result<()> {
    for child in &mut children.0 {
        drop(child.stdin.take());
    }
    #[allow(clippy::disallowed_methods)] // a wall-clock bound on waiting, not protocol time
    let started = std::time::Instant::now();
    for (i, child) in children.0.iter_mut().enumerate() {
        loop {
            if let Some(status) = child.try_wait()? {
                anyhow::ensure!(status.success(), "node {} failed ({status})", i + 1);
                break;
            }
            if started.elapsed() > STOP_TIMEOUT {
                let _ = child.kill();
                anyhow::bail!("node {} did not stop in time and was killed", i + 1);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    Ok(())
}

fn summarize(dir: &Path) -> anyhow::Result<()> {
    let mut reports = Vec::new();
    for node in 1..=NODES as u32 {
        let path = report_path(dir, node);
        let text = std::fs::read_to_string(&path)
            .with_context(|| format!("cannot read {}", path.display()))?;
        let report: Report = serde_json::from_str(&text)?;
        reports.push(report);
    }
    for r in &reports {
        let rate = r.values_all * 1_000_000 / r.window_micros.max(1);
        println!(
            "node {}: delivered {} values, digest {:016x}; {} values/s, latency p50 {} us p99 {} us",
            r.node,
            r.delivered.count,
            r.delivered.digest,
            rate,
            r.latency_p50_micros,
            r.latency_p99_micros
        );
    }
    let points: Vec<Vec<DigestPoint>> = reports
        .iter()
        .map(|r| {
            let mut points = r.digest_checkpoints.clone();
            points.push(r.delivered);
            points
        })
        .collect();
    match common_prefix(&points) {
        Ok(agreed) => {
            println!(
                "all {NODES} nodes agree on the order of the first {} values (digest {:016x})",
                agreed.count, agreed.digest
            );
            Ok(())
        }
        Err(disagreement) => anyhow::bail!("nodes DISAGREE: {disagreement}"),
    }
}

fn report_path(dir: &Path, node: u32) -> PathBuf {
    dir.join(format!("report-{node}.json"))
}

/// Reads a child's status lines, keeping its latest delivered count.
fn follow_status(stdout: std::process::ChildStdout, delivered: &AtomicU64) {
    for line in BufReader::new(stdout).lines() {
        let Ok(line) = line else { return };
        let count = line
            .split_whitespace()
            .find_map(|field| field.strip_prefix("delivered="))
            .and_then(|n| n.parse().ok());
        if let Some(count) = count {
            delivered.store(count, Ordering::Relaxed);
        }
    }
}

/// A flag set by Ctrl-C.
pub fn watch_interrupt() -> anyhow::Result<Arc<AtomicBool>> {
    let flag = Arc::new(AtomicBool::new(false));
    let set = flag.clone();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    std::thread::spawn(move || {
        runtime.block_on(async {
            if tokio::signal::ctrl_c().await.is_ok() {
                set.store(true, Ordering::Relaxed);
            }
        })
    });
    Ok(flag)
}
