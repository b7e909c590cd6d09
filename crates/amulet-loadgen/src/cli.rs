//! The `amulet-loadgen` command line (also `amulet bench`): YCSB-style
//! closed-loop benchmark of key-value backends.
//!
//! ```text
//! amulet-loadgen --backend etcd,zookeeper,redis --workloads put-only,a --clients 64 \
//!     --duration 10 --warmup 3 --csv results.csv --series-csv series.csv
//! ```
//! Each backend is loaded with `--record-count` keys, then runs every
//! workload under every distribution; the table goes to stdout, progress and
//! warnings to stderr.

use crate::backends::memory::MemoryBackend;
use crate::backends::redis::RedisBackend;
use crate::output::{self, append_csv, SERIES_HEADER};
use crate::runner::{run_suite, Suite};
use crate::stats::RunResult;
use crate::{Distribution, KvBackend, Workload};
use anyhow::Context as _;
use clap::Parser;
use std::path::PathBuf;
use std::time::Duration;

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum BackendKind {
    /// etcd v3 over gRPC (needs the `etcd` cargo feature).
    Etcd,
    /// ZooKeeper getData/setData (needs the `zookeeper` cargo feature).
    Zookeeper,
    /// Redis GET/SET.
    Redis,
    /// In-process map: the load generator's own ceiling.
    Memory,
    /// Amulet through its Rust client.
    Amulet,
    /// An Amulet eventual map (DottedDB; `--amulet-map` + `-dotted`).
    AmuletEventual,
    /// An Amulet eventual map on the MerkleDB baseline's store
    /// (`--amulet-map` + `-merkle`).
    AmuletMerkle,
}

#[derive(Parser, Debug)]
#[command(
    name = "amulet-loadgen",
    about = "YCSB-style closed-loop key-value benchmark (etcd, zookeeper, redis, amulet, memory)",
    after_help = "Each backend: load --record-count keys (parallel over the clients), then run every \
workload x distribution for --warmup + --duration seconds. Workloads: a (50% read / 50% update), \
b (95/5), c (read only), f (50% read / 50% read-modify-write), put-only (100% update)."
)]
struct Args {
    /// Backends to measure, in order (comma-separated).
    #[arg(long, value_delimiter = ',', default_value = "etcd,redis")]
    backend: Vec<BackendKind>,
    /// Workloads to run (comma-separated): a, b, c, f, put-only.
    #[arg(long, value_delimiter = ',', default_value = "put-only,a")]
    workloads: Vec<Workload>,
    /// Request distributions (comma-separated): uniform, zipfian (YCSB's
    /// scrambled zipfian, constant 0.99).
    #[arg(long, value_delimiter = ',', default_value = "uniform")]
    distribution: Vec<Distribution>,
    /// Closed-loop clients (one operation in flight each).
    #[arg(long, default_value_t = 64)]
    clients: usize,
    /// Connections each backend's clients share round-robin [default: redis
    /// one per client; etcd 4 gRPC clients, each balanced over all endpoints;
    /// zookeeper 4 sessions, session i on endpoint i mod n; amulet 4].
    #[arg(long)]
    connections: Option<usize>,
    /// Keys inserted by the load phase and drawn from by the workloads.
    #[arg(long, default_value_t = 100_000)]
    record_count: u64,
    /// Value size in bytes.
    #[arg(long, default_value_t = 256)]
    value_size: usize,
    /// Measured seconds per workload.
    #[arg(long, default_value_t = 10.0)]
    duration: f64,
    /// Warmup seconds before each measurement (not measured).
    #[arg(long, default_value_t = 3.0)]
    warmup: f64,
    /// Bound on one operation in milliseconds (longer counts as an error).
    #[arg(long, default_value_t = 5000)]
    op_timeout_ms: u64,
    /// Bound on the load phase in seconds.
    #[arg(long, default_value_t = 600.0)]
    load_timeout: f64,
    /// Skip the load phase (the keys are already there).
    #[arg(long)]
    skip_load: bool,
    /// Seed of the clients' random streams.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Operations per second all clients together start at most in the
    /// measured runs (default: closed loop). At a rate every system
    /// serves, CPU per operation compares builds without the throughput
    /// each one reaches weighing in.
    #[arg(long)]
    rate: Option<f64>,
    /// etcd client endpoints (comma-separated).
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "127.0.0.1:23791,127.0.0.1:23792,127.0.0.1:23793"
    )]
    etcd_endpoints: Vec<String>,
    /// ZooKeeper client endpoints (comma-separated host:port); session i
    /// connects to endpoint i mod n.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "127.0.0.1:21811,127.0.0.1:21812,127.0.0.1:21813"
    )]
    zookeeper_endpoints: Vec<String>,
    /// Amulet client API addresses (comma-separated).
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "127.0.0.1:7101,127.0.0.1:7102,127.0.0.1:7103"
    )]
    amulet_addr: Vec<String>,
    /// The Amulet map the benchmark uses (created if absent).
    #[arg(long, default_value = "bench")]
    amulet_map: String,
    /// ExecuteBatch calls each Amulet client keeps in flight per node
    /// (operations issued meanwhile ride the next one); 0 sends one
    /// Execute call per operation.
    #[arg(long, default_value_t = amulet_client::ClientConfig::default().batches_in_flight)]
    amulet_batches_in_flight: usize,
    /// Amulet: each operation to a random replica of its partition instead
    /// of the one its client prefers (the clients' default before
    /// 2026-11-28; for comparisons).
    #[arg(long)]
    amulet_random_replica: bool,
    /// Amulet: create the map split by key ranges over the cluster's first
    /// N partitions, cut where the keys fall evenly (0: a hashed map).
    #[arg(long, default_value_t = 0)]
    amulet_range_partitions: usize,
    /// Amulet: fetch the partition map from a node before every operation,
    /// as a client without a cache of it would (DynaTree's Fig. 3).
    #[arg(long)]
    amulet_no_map_cache: bool,
    /// Logs (Amulet) or streams (Redis) the `append` workload spreads its
    /// appends over, picked by the key.
    #[arg(long, default_value_t = 1)]
    log_count: usize,
    /// Redis URL.
    #[arg(long, default_value = "redis://127.0.0.1:26379/")]
    redis_url: String,
    /// Append result rows to this CSV (created with a header when new).
    #[arg(long)]
    csv: Option<PathBuf>,
    /// Append per-second throughput rows to this CSV.
    #[arg(long)]
    series_csv: Option<PathBuf>,
    /// Free-form note stored in every CSV row, `backend=note` pairs
    /// (comma-separated), e.g. `redis=appendfsync always,etcd=fsync`.
    #[arg(long, value_delimiter = ',')]
    label: Vec<String>,
    /// Tokio worker threads [default: one per core].
    #[arg(long)]
    threads: Option<usize>,
}

struct Out<'a> {
    args: &'a Args,
    label: String,
    rows: Vec<String>,
    failed_writes: usize,
}

impl Out<'_> {
    fn report(&mut self, r: &RunResult) {
        let lines = output::table_rows(r);
        for l in &lines {
            eprintln!("{l}");
        }
        self.rows.extend(lines);
        let total = r.ops.total();
        if let Some(e) = &total.first_error {
            eprintln!(
                "loadgen: {} {}: {} errors, first: {e}",
                r.backend,
                r.workload,
                r.errors()
            );
        }
        if r.misses() > 0 {
            eprintln!(
                "loadgen: {} {}: {} reads found no value (was the load phase skipped?)",
                r.backend,
                r.workload,
                r.misses()
            );
        }
        if let Some(path) = &self.args.csv {
            let row = format!("{}\n", output::results_row(r, &self.label));
            if let Err(e) = append_csv(path, &output::results_header(), &row) {
                eprintln!("loadgen: {e:#}");
                self.failed_writes += 1;
            }
        }
        if let Some(path) = &self.args.series_csv {
            if let Err(e) = append_csv(path, SERIES_HEADER, &output::series_rows(r, &self.label)) {
                eprintln!("loadgen: {e:#}");
                self.failed_writes += 1;
            }
        }
    }
}

fn label_for(args: &Args, kind: BackendKind) -> String {
    let name = clap::ValueEnum::to_possible_value(&kind)
        .map_or_else(|| format!("{kind:?}"), |v| v.get_name().to_string());
    args.label
        .iter()
        .find_map(|l| l.strip_prefix(&format!("{name}=")).map(str::to_string))
        .unwrap_or_default()
}

async fn measure<B: KvBackend>(handles: Vec<B>, suite: &Suite, out: &mut Out<'_>) {
    run_suite(handles, suite, |r| out.report(r)).await;
}

fn default_connections(kind: BackendKind, clients: usize) -> usize {
    match kind {
        BackendKind::Etcd
        | BackendKind::Zookeeper
        | BackendKind::Amulet
        | BackendKind::AmuletEventual
        | BackendKind::AmuletMerkle => 4.min(clients),
        BackendKind::Redis | BackendKind::Memory => clients,
    }
}

/// Connects one backend and runs the suite on it.
async fn run_backend(
    kind: BackendKind,
    args: &Args,
    suite: &Suite,
    out: &mut Out<'_>,
) -> anyhow::Result<()> {
    let op_timeout = suite.op_timeout;
    let (clients, conns) = (args.clients, suite.connections);
    match kind {
        BackendKind::Memory => {
            let store = MemoryBackend::new();
            measure(vec![store; clients], suite, out).await;
        }
        BackendKind::Amulet => {
            use crate::backends::amulet::AmuletBackend;
            let handles = AmuletBackend::connect(
                &args.amulet_addr,
                &args.amulet_map,
                clients,
                conns,
                crate::backends::amulet::Routing {
                    op_timeout,
                    batches_in_flight: args.amulet_batches_in_flight,
                    random_replica: args.amulet_random_replica,
                    range_partitions: args.amulet_range_partitions,
                    records: args.record_count,
                    no_map_cache: args.amulet_no_map_cache,
                },
                if args.workloads.contains(&Workload::Append) {
                    args.log_count
                } else {
                    0
                },
            )
            .await?;
            measure(handles, suite, out).await;
        }
        BackendKind::AmuletEventual | BackendKind::AmuletMerkle => {
            use crate::backends::amulet_eventual::EventualBackend;
            let merkle = kind == BackendKind::AmuletMerkle;
            let map = format!(
                "{}-{}",
                args.amulet_map,
                if merkle { "merkle" } else { "dotted" }
            );
            let handles = EventualBackend::connect(
                &args.amulet_addr,
                &map,
                merkle,
                clients,
                conns,
                op_timeout,
            )
            .await?;
            measure(handles, suite, out).await;
        }
        BackendKind::Redis => {
            let handles =
                RedisBackend::connect(&args.redis_url, clients, conns, op_timeout, args.log_count)
                    .await?;
            measure(handles, suite, out).await;
        }
        #[cfg(feature = "etcd")]
        BackendKind::Etcd => {
            use crate::backends::etcd::EtcdBackend;
            let handles =
                EtcdBackend::connect(&args.etcd_endpoints, clients, conns, op_timeout).await?;
            measure(handles, suite, out).await;
        }
        #[cfg(not(feature = "etcd"))]
        BackendKind::Etcd => {
            let _ = &args.etcd_endpoints;
            anyhow::bail!(
                "the etcd backend is not built in: build with `--features etcd` \
                 (needs protoc, Debian package protobuf-compiler)"
            )
        }
        #[cfg(feature = "zookeeper")]
        BackendKind::Zookeeper => {
            use crate::backends::zookeeper::ZookeeperBackend;
            let handles =
                ZookeeperBackend::connect(&args.zookeeper_endpoints, clients, conns, op_timeout)
                    .await?;
            measure(handles, suite, out).await;
        }
        #[cfg(not(feature = "zookeeper"))]
        BackendKind::Zookeeper => {
            let _ = &args.zookeeper_endpoints;
            anyhow::bail!(
                "the zookeeper backend is not built in: build with `--features zookeeper`"
            )
        }
    }
    Ok(())
}

fn seconds(s: f64, what: &str) -> anyhow::Result<Duration> {
    Duration::try_from_secs_f64(s).with_context(|| format!("--{what} {s}"))
}

/// Runs the command line `args` (the first item is the program name).
pub fn main_from<I, T>(args: I) -> anyhow::Result<()>
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    let args = Args::parse_from(args);
    anyhow::ensure!(args.clients > 0, "--clients must be positive");
    anyhow::ensure!(args.record_count > 0, "--record-count must be positive");
    anyhow::ensure!(!args.workloads.is_empty(), "no workloads");
    let mut rt = tokio::runtime::Builder::new_multi_thread();
    rt.enable_all();
    if let Some(t) = args.threads {
        rt.worker_threads(t.max(1));
    }
    let rt = rt.build().context("starting the tokio runtime")?;
    let mut table = vec![output::table_header()];
    let mut failed = Vec::new();
    let mut failed_writes = 0;
    eprintln!("{}", output::table_header());
    for &kind in &args.backend {
        let suite = Suite {
            workloads: args.workloads.clone(),
            distributions: args.distribution.clone(),
            record_count: args.record_count,
            value_size: args.value_size,
            warmup: seconds(args.warmup, "warmup")?,
            duration: seconds(args.duration, "duration")?,
            op_timeout: Duration::from_millis(args.op_timeout_ms.max(1)),
            load: !args.skip_load,
            load_time_limit: seconds(args.load_timeout, "load-timeout")?,
            seed: args.seed,
            rate: args.rate,
            connections: args
                .connections
                .unwrap_or_else(|| default_connections(kind, args.clients))
                .clamp(1, args.clients),
        };
        let mut out = Out {
            args: &args,
            label: label_for(&args, kind),
            rows: Vec::new(),
            failed_writes: 0,
        };
        if let Err(e) = rt.block_on(run_backend(kind, &args, &suite, &mut out)) {
            eprintln!("loadgen: {kind:?}: {e:#}");
            failed.push(format!("{kind:?}").to_ascii_lowercase());
        }
        table.append(&mut out.rows);
        failed_writes += out.failed_writes;
    }
    rt.shutdown_timeout(Duration::from_secs(2));
    println!("{}", table.join("\n"));
    anyhow::ensure!(failed.is_empty(), "backends failed: {}", failed.join(", "));
    anyhow::ensure!(failed_writes == 0, "{failed_writes} CSV writes failed");
    Ok(())
}
