//! `amulet log`: DLog's logs from the command line (docs/logs.md).
//!
//! ```text
//! amulet log create events
//! amulet log append events "user 7 signed in"     # prints the position
//! amulet log multi-append events=a audit=b        # one step, all or none
//! amulet log read events --from 0 --limit 100      # POSITION<TAB>ENTRY lines
//! amulet log tail events --from 0                  # follows until Ctrl-C
//! amulet log trim events 1000                      # drops positions below 1000
//! amulet log bounds events                         # first and end
//! amulet log drop events
//! ```

use amulet_client::{Client, Error};
use std::io::Write;
use std::time::Duration;

/// Arguments of `amulet log`.
#[derive(clap::Subcommand, Clone)]
pub enum LogOp {
    /// Create the log NAME.
    Create { name: String },
    /// Drop the log NAME and its entries.
    Drop { name: String },
    /// Append ENTRY to NAME; prints its position.
    Append { name: String, entry: String },
    /// Append each LOG=ENTRY, all or none, in one step of the order;
    /// prints the positions, one a line.
    MultiAppend {
        #[arg(required = true)]
        entries: Vec<String>,
    },
    /// Print entries of NAME from --from as POSITION<TAB>ENTRY lines.
    Read {
        name: String,
        /// The first position to read (default: the log's first).
        #[arg(long)]
        from: Option<u64>,
        /// Most entries.
        #[arg(long, default_value_t = 1000)]
        limit: u64,
    },
    /// Print entries of NAME from --from (default: its end) and follow
    /// new ones until Ctrl-C (or --count entries): a server stream from a
    /// replica of the log, reopened at another from the next position if
    /// it breaks.
    Tail {
        name: String,
        #[arg(long)]
        from: Option<u64>,
        /// Stop after this many entries.
        #[arg(long)]
        count: Option<u64>,
        /// Longest pause between polls when caught up, ms (only against a
        /// node without the TailLog stream).
        #[arg(long, default_value_t = 100)]
        poll_ms: u64,
    },
    /// Drop the entries of NAME below BELOW; prints the bounds after.
    Trim { name: String, below: u64 },
    /// Print the first position held and the end of NAME.
    Bounds { name: String },
}

fn show(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Runs one `amulet log` operation.
pub async fn run(client: &Client, op: &LogOp) -> anyhow::Result<()> {
    match op {
        LogOp::Create { name } => {
            client.create_log(name).await?;
            println!("created log {name:?}");
        }
        LogOp::Drop { name } => {
            client.drop_log(name).await?;
            println!("dropped log {name:?}");
        }
        LogOp::Append { name, entry } => {
            let position = client.log(name)?.append(entry.clone()).await?;
            println!("{position}");
        }
        LogOp::MultiAppend { entries } => {
            let mut appends = Vec::new();
            for e in entries {
                let (log, entry) = e
                    .split_once('=')
                    .ok_or_else(|| anyhow::anyhow!("{e:?}: expected LOG=ENTRY"))?;
                appends.push((log.to_string(), entry.to_string()));
            }
            for position in client.multi_append(appends).await? {
                println!("{position}");
            }
        }
        LogOp::Read { name, from, limit } => {
            let log = client.log(name)?;
            let mut next = match from {
                Some(from) => *from,
                None => log.bounds().await?.first,
            };
            let mut left = *limit;
            while left > 0 {
                let read = log.read(next, left.min(1000) as u32).await?;
                if read.entries.is_empty() {
                    break;
                }
                for (i, entry) in read.entries.iter().enumerate() {
                    println!("{}\t{}", read.from + i as u64, show(entry));
                }
                next += read.entries.len() as u64;
                left -= read.entries.len() as u64;
            }
        }
        LogOp::Tail {
            name,
            from,
            count,
            poll_ms,
        } => {
            let log = client.log(name)?;
            let from = match from {
                Some(from) => *from,
                None => log.bounds().await?.end,
            };
            let mut tail = log.tail(from, Duration::from_millis((*poll_ms).max(1)));
            let mut seen = 0u64;
            while count.is_none_or(|c| seen < c) {
                let (position, entry) = match tail.next().await {
                    Ok(next) => next,
                    // The client gave up resending (a node unreachable for
                    // the whole operation timeout): keep following.
                    Err(Error::Unavailable(_) | Error::OutcomeUnknown(_)) => continue,
                    Err(e) => return Err(e.into()),
                };
                println!("{position}\t{}", show(&entry));
                std::io::stdout().flush()?;
                seen += 1;
            }
        }
        LogOp::Trim { name, below } => {
            let bounds = client.log(name)?.trim(*below).await?;
            println!("first {} end {}", bounds.first, bounds.end);
        }
        LogOp::Bounds { name } => {
            let bounds = client.log(name)?.bounds().await?;
            println!("first {} end {}", bounds.first, bounds.end);
        }
    }
    Ok(())
}
