//! `amulet bench-scan`: snapshot iteration against a client's get loop
//! (issue 3: iteration throughput >= 10x a get loop). Fills a map with
//! `--entries` entries through putAll, then, with one client, reads every
//! entry once through a snapshot iterator and once with one get per key
//! (one at a time: the loop a program ported from a local map would run),
//! and prints entries/s for both. Talks to a running cluster.

use amulet_client::{Bytes, Client, ClientConfig};
use anyhow::Context;
use std::time::Duration;

/// Options of `amulet bench-scan`.
#[derive(clap::Args)]
pub struct BenchScanArgs {
    /// Client API addresses of the cluster (comma separated).
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "127.0.0.1:7101,127.0.0.1:7102,127.0.0.1:7103"
    )]
    addr: Vec<String>,
    /// Entries in the map.
    #[arg(long, default_value_t = 100_000)]
    entries: u32,
    /// Value bytes.
    #[arg(long, default_value_t = 256)]
    value_size: usize,
    /// Entries per snapshot page.
    #[arg(long, default_value_t = 1_000)]
    page: u32,
    /// Stop the get loop after this many seconds (its rate is what counts).
    #[arg(long, default_value_t = 20)]
    get_seconds: u64,
    /// Append a CSV row here.
    #[arg(long)]
    csv: Option<std::path::PathBuf>,
}

/// Runs the comparison.
pub fn run(args: BenchScanArgs) -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    runtime.block_on(run_async(args))
}

#[allow(clippy::disallowed_methods)] // a benchmark measures wall-clock time
async fn run_async(args: BenchScanArgs) -> anyhow::Result<()> {
    let config = ClientConfig {
        page_entries: args.page,
        operation_timeout: Duration::from_secs(60),
        ..Default::default()
    };
    let client = Client::connect_with(args.addr.clone(), config)
        .await
        .context("cannot reach the cluster")?;
    let name = format!("bench-scan-{}", std::process::id());
    let map = client.create_map(&name).await?;
    let value = Bytes::from(vec![b'v'; args.value_size]);
    let key = |i: u32| Bytes::from(format!("key{i:010}"));
    let batch = (3 * 1024 * 1024 / (args.value_size + 16)).clamp(1, 10_000) as u32 - 1;
    let started = std::time::Instant::now();
    let mut i = 0;
    while i < args.entries {
        let end = (i + batch).min(args.entries);
        map.put_all((i..end).map(|k| (key(k), value.clone())))
            .await?;
        i = end;
    }
    println!(
        "loaded {} entries of {} B in {:.1} s",
        args.entries,
        args.value_size,
        started.elapsed().as_secs_f64()
    );

    let started = std::time::Instant::now();
    let mut snapshot = map.snapshot().await?;
    let mut scanned = 0u64;
    while let Some((k, v)) = snapshot.next().await? {
        anyhow::ensure!(v.len() == args.value_size, "wrong value for {k:?}");
        scanned += 1;
    }
    snapshot.close().await?;
    let scan_secs = started.elapsed().as_secs_f64();
    anyhow::ensure!(scanned == u64::from(args.entries), "scanned {scanned}");
    let scan_rate = scanned as f64 / scan_secs;

    let started = std::time::Instant::now();
    let mut got = 0u64;
    for k in 0..args.entries {
        anyhow::ensure!(map.get(key(k)).await?.is_some(), "key {k} missing");
        got += 1;
        if started.elapsed() >= Duration::from_secs(args.get_seconds) {
            break;
        }
    }
    let get_rate = got as f64 / started.elapsed().as_secs_f64();
    let ratio = scan_rate / get_rate;
    println!("snapshot iteration: {scanned} entries in {scan_secs:.2} s = {scan_rate:.0} entries/s (pages of {})", args.page);
    println!("get loop (one client, one get at a time): {got} gets = {get_rate:.0} entries/s");
    println!("ratio: {ratio:.1}x");
    if let Some(path) = &args.csv {
        let new = !path.exists();
        let mut text = String::new();
        if new {
            text.push_str("entries,value_size,page,scan_entries_per_s,get_entries_per_s,ratio\n");
        }
        text.push_str(&format!(
            "{},{},{},{scan_rate:.0},{get_rate:.0},{ratio:.2}\n",
            args.entries, args.value_size, args.page
        ));
        use std::io::Write;
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)?
            .write_all(text.as_bytes())?;
    }
    client.drop_map(&name).await?;
    client.close().await;
    Ok(())
}
