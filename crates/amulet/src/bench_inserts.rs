//! `amulet bench-inserts`: DynaTree's growth on real processes (issue 24,
//! docs/dynatree.md "Growth on real processes"). On a running cluster
//! whose balancer bounds partitions at `--split-entries`, creates a range
//! map in one partition, inserts `--random` keys in random order, then
//! `--sequential` keys in key order (all after the random ones: the
//! map's tail), each with one put per key from `--concurrency` tasks;
//! waits for the balancer to settle; reads every key back with a
//! page-by-page scan; and reports the inserts per second of each phase,
//! the client's map refreshes (requests a replica sent back for a stale
//! map), and the partitions' sizes. Run it once against nodes with fence
//! keys and once with `[smr] fence_keys = false` to compare the
//! refreshes (`scripts/bench-dynatree-inserts` does both).

use amulet_client::{Bytes, Client, ClientConfig, DMap};
use amulet_smr::Layout;
use anyhow::Context;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Options of `amulet bench-inserts`.
#[derive(clap::Args)]
pub struct BenchInsertsArgs {
    /// Client API addresses of the cluster (comma separated).
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "127.0.0.1:7101,127.0.0.1:7102,127.0.0.1:7103"
    )]
    addr: Vec<String>,
    /// Keys inserted in random order first.
    #[arg(long, default_value_t = 2_000_000)]
    random: u64,
    /// Keys inserted in key order after them.
    #[arg(long, default_value_t = 2_000_000)]
    sequential: u64,
    /// Tasks putting at once.
    #[arg(long, default_value_t = 64)]
    concurrency: u64,
    /// The cluster's `[balancer] split_entries` (what "within its bounds"
    /// is checked against).
    #[arg(long)]
    split_entries: u64,
    /// How long to wait for the balancer to settle after the inserts.
    #[arg(long, default_value_t = 180)]
    settle_secs: u64,
    /// A name for this run in the report (say, fence-keys).
    #[arg(long, default_value = "run")]
    label: String,
    /// Append a CSV row here (a header first if the file is new).
    #[arg(long)]
    csv: Option<std::path::PathBuf>,
}

/// Runs the benchmark.
pub fn run(args: BenchInsertsArgs) -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    runtime.block_on(run_async(args))
}

/// SplitMix64's finalizer: a bijection on u64, so distinct indexes give
/// distinct keys in an order unrelated to theirs.
fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The i-th key of a phase: random keys ("r" + 16 hex digits) sort
/// before every sequential one ("s" + 12 digits), which go in key order.
fn key(sequential: bool, i: u64) -> Bytes {
    if sequential {
        Bytes::from(format!("s{i:012}"))
    } else {
        Bytes::from(format!("r{:016x}", mix(i)))
    }
}

/// A key's value: checkable on the read back.
fn value(key: &[u8]) -> Bytes {
    let mut v = key.to_vec();
    v.reverse();
    Bytes::from(v)
}

/// Puts keys `0..count` of a phase from `tasks` tasks (task t: t, t +
/// tasks, ...); the seconds it took.
#[allow(clippy::disallowed_methods)] // a benchmark measures wall-clock time
async fn insert(map: &DMap, sequential: bool, count: u64, tasks: u64) -> anyhow::Result<f64> {
    let started = Instant::now();
    let mut running = tokio::task::JoinSet::new();
    for task in 0..tasks.max(1) {
        let map = map.clone();
        running.spawn(async move {
            let mut i = task;
            while i < count {
                let k = key(sequential, i);
                let v = value(&k);
                map.put(k, v).await?;
                i += tasks.max(1);
            }
            Ok::<(), amulet_client::Error>(())
        });
    }
    while let Some(done) = running.join_next().await {
        done.context("an insert task panicked")??;
    }
    Ok(started.elapsed().as_secs_f64())
}

/// Entries per partition of the map's ranges, from a node's status (each
/// node of a 3-node cluster holds every partition).
async fn sizes(client: &Client, name: &str) -> anyhow::Result<Vec<u64>> {
    client.refresh_map().await;
    let map = client.partition_map();
    let Some(Layout::Range(ranges)) = map.keyspaces.get(name) else {
        anyhow::bail!("{name} is not a range map");
    };
    let mut entries: BTreeMap<u32, u64> = BTreeMap::new();
    for address in client.node_addresses().values() {
        if let Ok(status) = client.status(address).await {
            for replica in status.replicas {
                let seen = entries.entry(replica.partition).or_default();
                *seen = (*seen).max(replica.entries);
            }
        }
    }
    Ok(ranges
        .iter()
        .map(|(_, p)| entries.get(&p.0).copied().unwrap_or(0))
        .collect())
}

#[allow(clippy::disallowed_methods)] // a benchmark measures wall-clock time
async fn run_async(args: BenchInsertsArgs) -> anyhow::Result<()> {
    let config = ClientConfig {
        operation_timeout: Duration::from_secs(60),
        ..Default::default()
    };
    let client = Arc::new(
        Client::connect_with(args.addr.clone(), config)
            .await
            .context("cannot reach the cluster")?,
    );
    let name = format!("inserts-{}", std::process::id());
    let first = *client
        .partition_map()
        .partitions
        .keys()
        .next()
        .context("the cluster has no partition")?;
    let map = client
        .create_map_with(&name, Layout::Range(vec![(Bytes::new(), first)]))
        .await?;
    let random_s = insert(&map, false, args.random, args.concurrency).await?;
    let refreshes_random = client.map_refreshes();
    println!(
        "{}: {} random inserts in {random_s:.1} s ({:.0}/s), {refreshes_random} map refreshes",
        args.label,
        args.random,
        args.random as f64 / random_s
    );
    let sequential_s = insert(&map, true, args.sequential, args.concurrency).await?;
    let refreshes = client.map_refreshes();
    println!(
        "{}: {} sequential inserts in {sequential_s:.1} s ({:.0}/s), {} map refreshes",
        args.label,
        args.sequential,
        args.sequential as f64 / sequential_s,
        refreshes - refreshes_random
    );
    // Settled: every partition within the bound, and the same ranges over
    // three polls 2 s apart.
    let settling = Instant::now();
    let mut last = Vec::new();
    let mut same = 0;
    let sizes = loop {
        let now = sizes(&client, &name).await?;
        same = if now.len() == last.len() { same + 1 } else { 0 };
        last = now.clone();
        if same >= 3 && now.iter().all(|n| *n <= args.split_entries) {
            break now;
        }
        anyhow::ensure!(
            settling.elapsed() < Duration::from_secs(args.settle_secs),
            "the balancer did not settle within {} s: {now:?}",
            args.settle_secs
        );
        tokio::time::sleep(Duration::from_secs(2)).await;
    };
    let settle_s = settling.elapsed().as_secs_f64();
    let total: u64 = sizes.iter().sum();
    let mean = total as f64 / sizes.len().max(1) as f64;
    let largest = sizes.iter().copied().max().unwrap_or(0);
    // Every key back, in order, with its value.
    let reading = Instant::now();
    let mut scan = map.scan(None, None, 1_000);
    let (mut read, mut wrong, mut previous) = (0u64, 0u64, None::<Bytes>);
    while let Some(page) = scan.next_page().await? {
        for (k, v) in page {
            if v != value(&k) || previous.as_ref().is_some_and(|p| *p >= k) {
                wrong += 1;
            }
            previous = Some(k);
            read += 1;
        }
    }
    let read_s = reading.elapsed().as_secs_f64();
    let expected = args.random + args.sequential;
    println!(
        "{}: settled in {settle_s:.0} s: {} partitions, entries mean {mean:.0}, largest {largest} ({:.2}x the mean), bound {}",
        args.label,
        sizes.len(),
        largest as f64 / mean.max(1.0),
        args.split_entries
    );
    println!(
        "{}: read back {read} of {expected} keys in {read_s:.1} s ({} range reads), {wrong} wrong",
        args.label,
        scan.reads()
    );
    if let Some(path) = &args.csv {
        let new = !path.exists();
        let mut row = String::new();
        if new {
            row.push_str("label,random,sequential,random_per_s,sequential_per_s,refreshes_random,refreshes_sequential,partitions,mean_entries,largest_entries,largest_over_mean,split_entries,settle_s,read_back,wrong\n");
        }
        row.push_str(&format!(
            "{},{},{},{:.0},{:.0},{},{},{},{:.0},{},{:.2},{},{:.0},{},{}\n",
            args.label,
            args.random,
            args.sequential,
            args.random as f64 / random_s,
            args.sequential as f64 / sequential_s,
            refreshes_random,
            refreshes - refreshes_random,
            sizes.len(),
            mean,
            largest,
            largest as f64 / mean.max(1.0),
            args.split_entries,
            settle_s,
            read,
            wrong
        ));
        use std::io::Write;
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)?
            .write_all(row.as_bytes())?;
    }
    anyhow::ensure!(
        read == expected && wrong == 0,
        "read back {read} of {expected} keys, {wrong} wrong"
    );
    client.close().await;
    Ok(())
}
