//! DLog tail benchmark (a program, not a test; docs/logs.md): how a
//! `TailLog` follower keeps up with appends, and how fast a long log reads
//! from position 0. Driven by `scripts/bench-dlog-tail`.
//!
//! - `follow`: closed-loop appenders (1 KiB entries by default, each
//!   carrying its send time) for a while, and one tail from the log's end
//!   when they start; reports appends/s, entries/s the tail delivered in
//!   the same window, the most entries the tail was behind the
//!   acknowledged end (sampled every 10 ms), and the time from an append's
//!   send to its delivery by the tail (p50, p99).
//! - `read`: fills a log to `--bytes` with multi-appends of 1 MiB (unless
//!   it already holds them), then (without `--fill-only`) tails it from
//!   its first position to its end and reports MB/s.
//!
//! One CSV row per run (`--csv`, header when the file is new).

// A benchmark measures wall-clock time; no protocol core runs here.
#![allow(clippy::disallowed_methods)]

use amulet_client::{Bytes, Client, ClientConfig, Error};
use clap::{Parser, Subcommand};
use hdrhistogram::Histogram;
use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

#[derive(Parser)]
struct Args {
    /// Amulet client addresses (comma-separated).
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "127.0.0.1:7101,127.0.0.1:7102,127.0.0.1:7103"
    )]
    addr: Vec<String>,
    /// The log (created if absent).
    #[arg(long, default_value = "tailbench")]
    log: String,
    /// Append a result row to this CSV.
    #[arg(long)]
    csv: Option<PathBuf>,
    #[command(subcommand)]
    run: Run,
}

#[derive(Subcommand)]
enum Run {
    /// Appenders and one tail at once.
    Follow {
        #[arg(long, default_value_t = 64)]
        clients: usize,
        #[arg(long, default_value_t = 1024)]
        value_size: usize,
        #[arg(long, default_value_t = 10)]
        seconds: u64,
    },
    /// Fill the log to --bytes, then tail it from its first position.
    Read {
        #[arg(long, default_value_t = 1 << 30)]
        bytes: u64,
        #[arg(long, default_value_t = 1024)]
        value_size: usize,
        /// Only fill the log (a later run reads it, once the replicas'
        /// checkpoints of it are written).
        #[arg(long)]
        fill_only: bool,
    },
}

const CSV_HEADER: &str = "started_unix,test,clients,value_size,seconds,appends_per_s,tail_entries_per_s,tail_lag_max_entries,e2e_p50_ms,e2e_p99_ms,read_bytes,read_seconds,read_mb_per_s";

fn micros_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as u64)
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let config = ClientConfig {
        operation_timeout: Duration::from_secs(60),
        ..ClientConfig::default()
    };
    let client = Client::connect_with(args.addr.clone(), config).await?;
    let log = client.create_log_if_absent(&args.log).await?;
    let started = micros_now() / 1_000_000;
    let row = match args.run {
        Run::Follow {
            clients,
            value_size,
            seconds,
        } => {
            let value_size = value_size.max(8);
            let from = log.bounds().await?.end;
            let stop = Arc::new(AtomicBool::new(false));
            let acked_end = Arc::new(AtomicU64::new(from));
            let tailed = Arc::new(AtomicU64::new(0));
            let tail_position = Arc::new(AtomicU64::new(from));
            let tailer = {
                let (log, stop, tailed, tail_position) = (
                    log.clone(),
                    stop.clone(),
                    tailed.clone(),
                    tail_position.clone(),
                );
                tokio::spawn(async move {
                    let mut e2e = Histogram::<u64>::new(3).expect("histogram");
                    let mut tail = log.tail(from, Duration::from_millis(10));
                    while !stop.load(Ordering::Relaxed) {
                        match tokio::time::timeout(Duration::from_millis(100), tail.next()).await {
                            Ok(Ok((position, entry))) => {
                                let sent = u64::from_le_bytes(entry[..8].try_into().unwrap());
                                let _ = e2e.record(micros_now().saturating_sub(sent));
                                tailed.fetch_add(1, Ordering::Relaxed);
                                tail_position.store(position + 1, Ordering::Relaxed);
                            }
                            Ok(Err(e)) => return Err(e),
                            Err(_) => {}
                        }
                    }
                    Ok::<_, Error>((e2e, tail.reconnects()))
                })
            };
            let appended = Arc::new(AtomicU64::new(0));
            let mut appenders = Vec::new();
            for _ in 0..clients {
                let (log, stop, appended, acked_end) = (
                    log.clone(),
                    stop.clone(),
                    appended.clone(),
                    acked_end.clone(),
                );
                appenders.push(tokio::spawn(async move {
                    let mut value = vec![b'x'; value_size];
                    while !stop.load(Ordering::Relaxed) {
                        value[..8].copy_from_slice(&micros_now().to_le_bytes());
                        let position = log.append(Bytes::from(value.clone())).await?;
                        appended.fetch_add(1, Ordering::Relaxed);
                        acked_end.fetch_max(position + 1, Ordering::Relaxed);
                    }
                    Ok::<_, Error>(())
                }));
            }
            let window = Instant::now();
            let mut lag_max = 0;
            while window.elapsed() < Duration::from_secs(seconds) {
                tokio::time::sleep(Duration::from_millis(10)).await;
                let lag = acked_end
                    .load(Ordering::Relaxed)
                    .saturating_sub(tail_position.load(Ordering::Relaxed));
                lag_max = lag_max.max(lag);
            }
            let (appends, delivered) = (
                appended.load(Ordering::Relaxed),
                tailed.load(Ordering::Relaxed),
            );
            let elapsed = window.elapsed().as_secs_f64();
            stop.store(true, Ordering::Relaxed);
            for a in appenders {
                a.await??;
            }
            let (e2e, reconnects) = tailer.await??;
            eprintln!(
                "follow: {clients} clients, {:.0} appends/s, tail {:.0} entries/s, lag max {lag_max} entries, send-to-tail p50 {:.2} ms p99 {:.2} ms, {reconnects} reconnects",
                appends as f64 / elapsed,
                delivered as f64 / elapsed,
                e2e.value_at_quantile(0.5) as f64 / 1000.0,
                e2e.value_at_quantile(0.99) as f64 / 1000.0,
            );
            format!(
                "{started},follow,{clients},{value_size},{elapsed:.2},{:.1},{:.1},{lag_max},{:.3},{:.3},,,",
                appends as f64 / elapsed,
                delivered as f64 / elapsed,
                e2e.value_at_quantile(0.5) as f64 / 1000.0,
                e2e.value_at_quantile(0.99) as f64 / 1000.0,
            )
        }
        Run::Read {
            bytes,
            value_size,
            fill_only,
        } => {
            let value_size = value_size.max(1);
            let per_command = (1 << 20) / value_size;
            let entry = Bytes::from(vec![b'r'; value_size]);
            let want_entries = bytes.div_ceil(value_size as u64);
            let bounds = log.bounds().await?;
            let mut held = bounds.end - bounds.first;
            let fill = Instant::now();
            // Four multi-appends in flight.
            while held < want_entries {
                let mut batch = Vec::new();
                for _ in 0..4 {
                    let n = per_command.min((want_entries - held) as usize);
                    if n == 0 {
                        break;
                    }
                    held += n as u64;
                    let client = client.clone();
                    let (name, entry) = (args.log.clone(), entry.clone());
                    batch.push(tokio::spawn(async move {
                        client
                            .multi_append((0..n).map(|_| (name.as_str(), entry.clone())))
                            .await
                    }));
                }
                for b in batch {
                    b.await??;
                }
            }
            eprintln!(
                "read: the log holds {held} entries of {value_size} B (filled in {:.1} s)",
                fill.elapsed().as_secs_f64()
            );
            if fill_only {
                return Ok(());
            }
            let bounds = log.bounds().await?;
            let mut tail = log.tail(bounds.first, Duration::from_millis(10));
            let read = Instant::now();
            let mut read_bytes = 0u64;
            let mut position = bounds.first;
            while position < bounds.end {
                let (p, entry) = tokio::time::timeout(Duration::from_secs(30), tail.next())
                    .await
                    .map_err(|_| anyhow::anyhow!("no entry in 30 s at {position}"))??;
                anyhow::ensure!(p == position, "entry {p} where {position} was due");
                read_bytes += entry.len() as u64;
                position += 1;
            }
            let seconds = read.elapsed().as_secs_f64();
            let mb_per_s = read_bytes as f64 / seconds / 1e6;
            eprintln!(
                "read: {read_bytes} bytes from position {} in {seconds:.2} s: {mb_per_s:.1} MB/s ({} reconnects)",
                bounds.first,
                tail.reconnects()
            );
            format!("{started},read,1,{value_size},,,,,,,{read_bytes},{seconds:.3},{mb_per_s:.1}")
        }
    };
    println!("{row}");
    if let Some(path) = args.csv {
        let new = !path.exists();
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)?;
        if new {
            writeln!(file, "{CSV_HEADER}")?;
        }
        writeln!(file, "{row}")?;
    }
    Ok(())
}
