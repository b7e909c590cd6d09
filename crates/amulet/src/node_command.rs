//! `amulet node`: runs one node until its duration ends, it is
//! interrupted, or (with `--stop-on-stdin-eof`) its standard input closes.

use amulet_node::{LoadSpec, Node, NodeConfig, NodeReport};
use amulet_types::StreamId;
use anyhow::Context;
use std::path::PathBuf;
use std::time::Duration;

/// Options of `amulet node`.
#[derive(clap::Args)]
pub struct NodeArgs {
    /// The node's configuration file (TOML).
    #[arg(long)]
    config: PathBuf,
    /// Run the built-in load generator on these streams (comma separated).
    #[arg(long, value_delimiter = ',')]
    load_streams: Vec<u32>,
    /// Bytes per generated value.
    #[arg(long, default_value_t = 64)]
    load_value_bytes: usize,
    /// Generated values outstanding at once.
    #[arg(long, default_value_t = 16)]
    load_window: usize,
    /// Warm-up before measuring, in milliseconds.
    #[arg(long, default_value_t = 500)]
    load_warmup_ms: u64,
    /// Stop cleanly after this many milliseconds.
    #[arg(long)]
    duration_ms: Option<u64>,
    /// Write the JSON report here at the end.
    #[arg(long)]
    report: Option<PathBuf>,
    /// Print a status line (values delivered, digest) this often.
    #[arg(long, default_value_t = 1000)]
    status_interval_ms: u64,
    /// Stop cleanly when standard input closes (used by `amulet dev`).
    #[arg(long)]
    stop_on_stdin_eof: bool,
    /// Threads of the node's async runtime: 1 runs the event loop, the
    /// peer connections and the client API on one thread (hand-offs
    /// between them are queue pushes, not thread wakeups); more spreads
    /// them over a work-stealing pool. File work (checkpoints) runs on
    /// blocking threads either way.
    #[arg(long, env = "AMULET_NODE_THREADS", default_value_t = 1)]
    threads: usize,
}

/// Runs the node.
pub fn run(args: NodeArgs) -> anyhow::Result<()> {
    let config = NodeConfig::load(&args.config)?;
    let load = (!args.load_streams.is_empty()).then(|| LoadSpec {
        streams: args.load_streams.iter().map(|s| StreamId(*s)).collect(),
        value_bytes: args.load_value_bytes,
        window: args.load_window,
        warmup_micros: args.load_warmup_ms * 1000,
    });
    let runtime = match args.threads {
        0 => anyhow::bail!("--threads must be at least 1"),
        1 => tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build(),
        threads => tokio::runtime::Builder::new_multi_thread()
            .worker_threads(threads)
            .enable_all()
            .build(),
    }
    .context("cannot start the async runtime")?;
    let report = runtime.block_on(serve(config, load, &args))?;
    // Tasks still blocked on sockets must not hold the exit up.
    runtime.shutdown_timeout(Duration::from_millis(200));
    let digest = format!("{:016x}", report.delivered.digest);
    // Output goes to whoever started us; if they went away, the report
    // file still matters more than a broken-pipe panic.
    say(format_args!(
        "final node={} delivered={} digest={} values={} p50_us={} p99_us={}",
        report.node,
        report.delivered.count,
        digest,
        report.load.values,
        report.load.latency_p50_micros,
        report.load.latency_p99_micros
    ));
    if let Some(path) = &args.report {
        let json = serde_json::to_string_pretty(&report)?;
        std::fs::write(path, json).with_context(|| format!("cannot write {}", path.display()))?;
    }
    Ok(())
}

async fn serve(
    config: NodeConfig,
    load: Option<LoadSpec>,
    args: &NodeArgs,
) -> anyhow::Result<NodeReport> {
    // Before the node listens: a SIGHUP that arrives once it serves must
    // never meet the default action, which ends the process.
    let mut hangups = hangups();
    let node = Node::start(config, load, None).await?;
    let handle = node.handle();
    let tls = node.tls();
    let deadline = async {
        match args.duration_ms {
            Some(ms) => tokio::time::sleep(Duration::from_millis(ms)).await,
            None => std::future::pending().await,
        }
    };
    tokio::pin!(deadline);
    let stdin_closed = wait_for_stdin_eof(args.stop_on_stdin_eof);
    tokio::pin!(stdin_closed);
    let mut status = tokio::time::interval(Duration::from_millis(args.status_interval_ms.max(10)));
    status.tick().await;
    let mut join = tokio::spawn(node.join());
    let interrupted = tokio::signal::ctrl_c();
    tokio::pin!(interrupted);
    let sigterm = terminated();
    tokio::pin!(sigterm);
    loop {
        tokio::select! {
            _ = &mut deadline => break,
            _ = &mut stdin_closed => break,
            _ = &mut interrupted => {
                tracing::info!("interrupted; stopping");
                break;
            }
            _ = &mut sigterm => {
                tracing::info!("terminated; stopping");
                break;
            }
            Some(()) = hangups.recv() => match &tls {
                Some(tls) => match tls.reload() {
                    Ok(()) => tracing::info!(cert = %tls.files().cert.display(), "SIGHUP: TLS files read again; new connections use them"),
                    Err(error) => tracing::warn!(%error, "SIGHUP: TLS files do not load; keeping the previous ones"),
                },
                None => tracing::info!("SIGHUP: TLS is off; nothing to read again"),
            },
            finished = &mut join => {
                // The node stopped by itself: that is an error path.
                return finished?;
            }
            _ = status.tick() => {
                if let Some(stats) = handle.stats().await {
                    say(format_args!(
                        "status delivered={} digest={:016x}",
                        stats.delivered.count, stats.delivered.digest
                    ));
                }
            }
        }
    }
    handle.shutdown();
    join.await?
}

/// Resolves when standard input reaches its end (if `enabled`).
async fn wait_for_stdin_eof(enabled: bool) {
    if !enabled {
        return std::future::pending().await;
    }
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    std::thread::spawn(move || {
        let mut sink = Vec::new();
        let _ = std::io::Read::read_to_end(&mut std::io::stdin(), &mut sink);
        let _ = tx.send(());
    });
    let _ = rx.await;
}

/// One message per SIGHUP (none where signals do not exist).
fn hangups() -> tokio::sync::mpsc::Receiver<()> {
    let (tx, rx) = tokio::sync::mpsc::channel(1);
    #[cfg(unix)]
    {
        if let Ok(mut signal) =
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup())
        {
            tokio::spawn(async move {
                while signal.recv().await.is_some() {
                    // A full channel: a reload is pending already.
                    let _ = tx.try_send(());
                }
            });
            return rx;
        }
    }
    drop(tx);
    rx
}

/// Resolves on SIGTERM.
async fn terminated() {
    #[cfg(unix)]
    {
        if let Ok(mut signal) =
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        {
            signal.recv().await;
            return;
        }
    }
    std::future::pending::<()>().await
}

/// Prints one line to stdout, ignoring a closed stdout.
fn say(line: std::fmt::Arguments<'_>) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
}
