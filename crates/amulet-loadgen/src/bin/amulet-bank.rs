//! `amulet-bank`: the bank benchmark of transactions (see
//! `amulet_loadgen::bank`) against Amulet and etcd in one run, one CSV row
//! per system x distribution x multi-partition share, and the latency of
//! a plain Amulet put measured in the same run (the commit's reference).
//!
//! ```text
//! amulet-bank --backend amulet,etcd --amulet-addr 127.0.0.1:27101 \
//!     --etcd-endpoints 127.0.0.1:23791 --clients 64 --seconds 10 --csv bank.csv
//! ```

use amulet_loadgen::bank::amulet::{AmuletBank, MAP};
use amulet_loadgen::bank::{account_key, run_bank, BankBackend, BankResult, BankSpec};
use clap::Parser;
use hdrhistogram::Histogram;
use rand::{Rng, SeedableRng};
use std::io::Write as _;
use std::path::PathBuf;
use std::time::Duration;

#[derive(Parser, Debug)]
#[command(
    name = "amulet-bank",
    about = "Bank transfers with audits: Amulet transactions against etcd Txn"
)]
struct Args {
    /// Systems, in order: amulet, etcd (etcd needs the `etcd` feature).
    #[arg(long, value_delimiter = ',', default_value = "amulet")]
    backend: Vec<String>,
    /// Amulet client API addresses.
    #[arg(long, value_delimiter = ',', default_value = "127.0.0.1:7101")]
    amulet_addr: Vec<String>,
    /// etcd endpoints.
    #[arg(long, value_delimiter = ',', default_value = "127.0.0.1:23791")]
    etcd_endpoints: Vec<String>,
    /// Accounts.
    #[arg(long, default_value_t = 1_000)]
    accounts: u64,
    /// Closed-loop clients.
    #[arg(long, default_value_t = 64)]
    clients: usize,
    /// Shared connections (clients are spread over them).
    #[arg(long, default_value_t = 4)]
    connections: usize,
    /// Measured seconds per run.
    #[arg(long, default_value_t = 10)]
    seconds: u64,
    /// Warmup seconds per run.
    #[arg(long, default_value_t = 2)]
    warmup: u64,
    /// Key distributions: uniform, zipfian.
    #[arg(long, value_delimiter = ',', default_value = "uniform,zipfian")]
    distributions: Vec<String>,
    /// Shares of transfers between accounts of different partitions.
    #[arg(long, value_delimiter = ',', default_value = "0,0.5,1")]
    multi_shares: Vec<f64>,
    /// One operation in this many is an audit.
    #[arg(long, default_value_t = 10)]
    audit_every: u32,
    /// Seconds of plain Amulet puts measured first (0: none).
    #[arg(long, default_value_t = 5)]
    put_seconds: u64,
    /// Append the rows here (header written if the file is new).
    #[arg(long)]
    csv: Option<PathBuf>,
    /// Per-operation timeout, seconds.
    #[arg(long, default_value_t = 30)]
    op_timeout: u64,
}

fn write_row(csv: &Option<PathBuf>, row: &str) -> anyhow::Result<()> {
    println!("{row}");
    if let Some(path) = csv {
        let new = !path.exists();
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)?;
        if new {
            writeln!(file, "{}", BankResult::csv_header())?;
        }
        writeln!(file, "{row}")?;
    }
    Ok(())
}

async fn run_all<B: BankBackend + Clone>(
    args: &Args,
    backends: Vec<B>,
    name: &str,
) -> anyhow::Result<()> {
    eprintln!("{name}: loading {} accounts", args.accounts);
    backends[0].load(args.accounts).await?;
    let multi_shares: Vec<f64> = if name == "etcd" {
        vec![0.0] // one Raft group: no partitions
    } else {
        args.multi_shares.clone()
    };
    for distribution in &args.distributions {
        for &multi_share in &multi_shares {
            let spec = BankSpec {
                accounts: args.accounts,
                clients: args.clients,
                zipfian: distribution == "zipfian",
                multi_share,
                audit_every: args.audit_every,
                duration: Duration::from_secs(args.seconds),
                warmup: Duration::from_secs(args.warmup),
                seed: 42,
            };
            let result = run_bank(backends.clone(), &spec).await?;
            if let Some(e) = &result.first_error {
                eprintln!("{name}: first error: {e}");
            }
            write_row(&args.csv, &result.csv_row(name, &spec))?;
            let total = backends[0].audit(args.accounts).await?;
            anyhow::ensure!(
                total == amulet_loadgen::bank::INITIAL_BALANCE * args.accounts as i64,
                "{name}: the final audit saw a total of {total}"
            );
        }
    }
    Ok(())
}

/// Plain puts of one account each through the map API: the latency a
/// single-partition commit is compared with.
async fn put_baseline(args: &Args) -> anyhow::Result<()> {
    let config = amulet_client::ClientConfig::default();
    let client = amulet_client::Client::connect_with(args.amulet_addr.clone(), config).await?;
    let map = client.create_map_if_absent(MAP).await?;
    let end = amulet_loadgen::clock::now() + Duration::from_secs(args.put_seconds);
    let mut tasks = Vec::new();
    for c in 0..args.clients {
        let map = map.clone();
        let accounts = args.accounts;
        tasks.push(tokio::spawn(async move {
            let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(c as u64);
            let mut h = Histogram::<u64>::new_with_bounds(1, 60_000_000, 3).expect("bounds");
            while amulet_loadgen::clock::now() < end {
                // A key of its own, so the accounts keep their balances.
                let key = format!("put-{c}-{}", rng.random_range(0..accounts));
                let started = amulet_loadgen::clock::now();
                if map.put(key, "1").await.is_ok() {
                    h.saturating_record(started.elapsed().as_micros() as u64);
                }
            }
            h
        }));
    }
    let mut all = Histogram::<u64>::new_with_bounds(1, 60_000_000, 3).expect("bounds");
    for task in tasks {
        all.add(task.await?)?;
    }
    let row = format!(
        "amulet-put,uniform,0.00,{},{},{:.1},{:.1},0.0,0,0,0,0,0.000,{},{},{},{},0,0.000",
        args.clients,
        args.put_seconds,
        all.len() as f64 / args.put_seconds as f64,
        all.len() as f64 / args.put_seconds as f64,
        all.value_at_quantile(0.5),
        all.value_at_quantile(0.99),
        all.value_at_quantile(0.5),
        all.value_at_quantile(0.99),
    );
    write_row(&args.csv, &row)?;
    let _ = account_key(0);
    client.close().await;
    Ok(())
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let timeout = Duration::from_secs(args.op_timeout);
    for backend in &args.backend {
        match backend.as_str() {
            "amulet" => {
                if args.put_seconds > 0 {
                    put_baseline(&args).await?;
                }
                let backends =
                    AmuletBank::connect(&args.amulet_addr, args.clients, args.connections, timeout)
                        .await?;
                run_all(&args, backends, "amulet").await?;
            }
            #[cfg(feature = "etcd")]
            "etcd" => {
                let backends = amulet_loadgen::bank::etcd::EtcdBank::connect(
                    &args.etcd_endpoints,
                    args.clients,
                    args.connections,
                    timeout,
                )
                .await?;
                run_all(&args, backends, "etcd").await?;
            }
            other => anyhow::bail!("unknown backend {other:?} (etcd needs --features etcd)"),
        }
    }
    Ok(())
}
