//! Opens what a node keeps on disk: its incarnation counter and one
//! acceptor log per stream.

use crate::config::NodeConfig;
use amulet_storage::{open_log, AcceptorLog};
use amulet_types::StreamConfig;
use anyhow::Context;
use std::io::Write;
use std::path::Path;

/// The node's logs and its run number.
pub struct OpenedLogs {
    /// One log per stream this node is a member of.
    pub logs: Vec<(StreamConfig, Box<dyn AcceptorLog>)>,
    /// This run's incarnation (1 on the first run of the data directory).
    pub incarnation: u32,
}

/// Bumps the incarnation counter and opens every stream's log.
pub fn open_logs(config: &NodeConfig) -> anyhow::Result<OpenedLogs> {
    std::fs::create_dir_all(&config.data_dir)
        .with_context(|| format!("cannot create data_dir {}", config.data_dir.display()))?;
    let incarnation = next_incarnation(&config.data_dir)?;
    let mut logs: Vec<(StreamConfig, Box<dyn AcceptorLog>)> = Vec::new();
    for stream in config.my_streams() {
        // Memory rings: only the first run of the data directory may vote
        // (a ring cannot vouch for promises an earlier run made). Durable
        // logs find out from their files whether they lost anything.
        let log = open_stream_log(&config.data_dir, &stream, config.me(), incarnation == 1)?;
        logs.push((stream, log));
    }
    Ok(OpenedLogs { logs, incarnation })
}

/// Opens (creating it if new) the log of one stream under `data_dir`:
/// a stream of the configuration, or one created at run time by a
/// reconfiguration (`first_run`: nothing of it can exist from an earlier
/// run, so a memory ring may vote).
pub fn open_stream_log(
    data_dir: &Path,
    stream: &StreamConfig,
    me: amulet_types::NodeId,
    first_run: bool,
) -> anyhow::Result<Box<dyn AcceptorLog>> {
    let dir = data_dir.join(format!("stream-{}", stream.stream.0));
    let log = open_log(
        stream.storage,
        &dir,
        usize::try_from(stream.limits.memory_ring_slots).context("memory_ring_slots too large")?,
        first_run,
    )
    .with_context(|| {
        format!(
            "stream {}: cannot open its log in {}",
            stream.stream.0,
            dir.display()
        )
    })?;
    if !log.recovered().intact && stream.is_acceptor(me) {
        tracing::warn!(
            stream = stream.stream.0,
            "acceptor log is not intact (lost promises or votes): learner only in this stream"
        );
    }
    Ok(log)
}

/// Reads, increments and durably rewrites `<data_dir>/incarnation`.
/// Written to a temporary file, fsynced and renamed, so a crash leaves
/// either the old or the new number, never a torn one.
fn next_incarnation(data_dir: &Path) -> anyhow::Result<u32> {
    let path = data_dir.join("incarnation");
    let previous: u32 = match std::fs::read_to_string(&path) {
        Ok(text) => text
            .trim()
            .parse()
            .with_context(|| format!("{} does not hold a number", path.display()))?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => 0,
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
    };
    let next = previous
        .checked_add(1)
        .context("incarnation counter overflow")?;
    let temporary = data_dir.join("incarnation.tmp");
    let mut file = std::fs::File::create(&temporary)?;
    writeln!(file, "{next}")?;
    file.sync_all()?;
    std::fs::rename(&temporary, &path)?;
    std::fs::File::open(data_dir)?.sync_all()?;
    Ok(next)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn incarnation_grows_at_every_start() {
        let dir = std::env::temp_dir().join(format!("amulet-inc-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        assert_eq!(next_incarnation(&dir).unwrap(), 1);
        assert_eq!(next_incarnation(&dir).unwrap(), 2);
        std::fs::write(dir.join("incarnation"), "junk").unwrap();
        assert!(next_incarnation(&dir).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
