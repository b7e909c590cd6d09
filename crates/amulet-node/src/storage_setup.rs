//! Opens what a node keeps on disk: its incarnation counter and the
//! acceptor logs of its streams.
//!
//! Every durable stream of a node lives in one node-wide log per
//! durability mode (`<data_dir>/acceptor-log-sync/`,
//! `<data_dir>/acceptor-log-async/`; `amulet_storage::NodeLog`), so a
//! group commit is one fsync however many streams it touched. A data
//! directory from before the node-wide log keeps a stream's own log in
//! `<data_dir>/stream-<id>/`; such a stream goes on using it.

use crate::config::NodeConfig;
use amulet_storage::{open_log, AcceptorLog, Durability, FsDisk, NodeLog, SEGMENT_BYTES_DEFAULT};
use amulet_types::{NodeId, StorageMode, StreamConfig};
use anyhow::Context;
use std::io::Write;
use std::path::{Path, PathBuf};

/// The node's logs and its run number.
pub struct OpenedLogs {
    /// One log per stream this node is a member of.
    pub logs: Vec<(StreamConfig, Box<dyn AcceptorLog>)>,
    /// This run's incarnation (1 on the first run of the data directory).
    pub incarnation: u32,
    /// Opens the logs of streams created later.
    pub opener: LogOpener,
}

/// Bumps the incarnation counter and opens every stream's log.
pub fn open_logs(config: &NodeConfig) -> anyhow::Result<OpenedLogs> {
    std::fs::create_dir_all(&config.data_dir)
        .with_context(|| format!("cannot create data_dir {}", config.data_dir.display()))?;
    let incarnation = next_incarnation(&config.data_dir)?;
    let mut opener = LogOpener::new(&config.data_dir, config.me(), incarnation);
    let mut logs: Vec<(StreamConfig, Box<dyn AcceptorLog>)> = Vec::new();
    for stream in config.my_streams() {
        // Memory rings: only the first run of the data directory may vote
        // (a ring cannot vouch for promises an earlier run made). Durable
        // logs find out from their files whether they lost anything.
        let log = opener.open(&stream, false)?;
        logs.push((stream, log));
    }
    Ok(OpenedLogs {
        logs,
        incarnation,
        opener,
    })
}

/// Opens streams' acceptor logs: memory rings, or a stream's place in the
/// node-wide log of its durability mode (opened at its first stream).
pub struct LogOpener {
    data_dir: PathBuf,
    me: NodeId,
    /// This run's incarnation (1: the data directory's first run).
    incarnation: u32,
    /// Memory rings opened by this run: one opened again lost what it
    /// held (its votes and promises of this run).
    rings_opened: std::collections::BTreeSet<amulet_types::StreamId>,
    sync: Option<NodeLog<FsDisk>>,
    background: Option<NodeLog<FsDisk>>,
}

impl LogOpener {
    /// An opener for the node `me` keeping its data in `data_dir`, in its
    /// run `incarnation`.
    pub fn new(data_dir: &Path, me: NodeId, incarnation: u32) -> LogOpener {
        LogOpener {
            data_dir: data_dir.to_path_buf(),
            me,
            incarnation,
            rings_opened: std::collections::BTreeSet::new(),
            sync: None,
            background: None,
        }
    }

    /// Opens (creating it if new) the log of `stream`: a stream of the
    /// configuration, or one created at run time by a reconfiguration
    /// (`created_now`: nothing of it can exist from an earlier run).
    /// A memory ring may vote when nothing it could have held is lost:
    /// its stream is created now, or this is the data directory's first
    /// run and the ring was not opened before in it (a node that joined,
    /// or took a partition whose fence it did not execute, opens its
    /// streams on installing a peer's checkpoint; before, such a node
    /// was a learner only there, and a memory stream moved onto it lost
    /// a vote for good).
    pub fn open(
        &mut self,
        stream: &StreamConfig,
        created_now: bool,
    ) -> anyhow::Result<Box<dyn AcceptorLog>> {
        let first_run =
            created_now || (self.incarnation == 1 && !self.rings_opened.contains(&stream.stream));
        if stream.storage == StorageMode::Memory {
            self.rings_opened.insert(stream.stream);
        }
        let own_dir = self.data_dir.join(format!("stream-{}", stream.stream.0));
        let context = |dir: &Path| {
            format!(
                "stream {}: cannot open its log in {}",
                stream.stream.0,
                dir.display()
            )
        };
        let log: Box<dyn AcceptorLog> = match stream.storage {
            StorageMode::Memory => open_log(
                stream.storage,
                &own_dir,
                usize::try_from(stream.limits.memory_ring_slots)
                    .context("memory_ring_slots too large")?,
                first_run,
            )
            .with_context(|| context(&own_dir))?,
            // A stream's own log from before the node-wide one.
            _ if holds_files(&own_dir) => open_log(stream.storage, &own_dir, 0, first_run)
                .with_context(|| context(&own_dir))?,
            StorageMode::SyncDurable | StorageMode::AsyncDurable => {
                let (slot, durability, name) = match stream.storage {
                    StorageMode::SyncDurable => (&mut self.sync, Durability::Sync, "sync"),
                    _ => (&mut self.background, Durability::Async, "async"),
                };
                let dir = self.data_dir.join(format!("acceptor-log-{name}"));
                if slot.is_none() {
                    let disk = FsDisk::open(&dir).with_context(|| context(&dir))?;
                    let log = NodeLog::open(disk, durability, SEGMENT_BYTES_DEFAULT)
                        .with_context(|| context(&dir))?;
                    *slot = Some(log);
                }
                let log = slot.as_ref().expect("opened above");
                Box::new(log.stream(stream.stream).with_context(|| context(&dir))?)
            }
        };
        if !log.recovered().intact && stream.is_acceptor(self.me) {
            tracing::warn!(
                stream = stream.stream.0,
                "acceptor log is not intact (lost promises or votes): learner only in this stream"
            );
        }
        Ok(log)
    }
}

/// Whether `dir` exists and holds a file.
impl amulet_host::LogOpener for LogOpener {
    fn open(
        &mut self,
        config: &StreamConfig,
        created_now: bool,
    ) -> Result<Box<dyn AcceptorLog>, String> {
        LogOpener::open(self, config, created_now).map_err(|e| format!("{e:#}"))
    }
}

fn holds_files(dir: &Path) -> bool {
    std::fs::read_dir(dir).is_ok_and(|mut entries| entries.next().is_some())
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

    fn stream(id: u32, storage: StorageMode) -> StreamConfig {
        StreamConfig {
            stream: amulet_types::StreamId(id),
            acceptors: vec![NodeId(1), NodeId(2), NodeId(3)],
            learners: Vec::new(),
            storage,
            limits: Default::default(),
            base_position: 0,
        }
    }

    #[test]
    fn thesis_3_4_2_a_memory_ring_votes_only_if_nothing_it_held_is_lost() {
        let dir = std::env::temp_dir().join(format!("amulet-rings-{}", std::process::id()));
        let memory = stream(6, StorageMode::Memory);
        // The data directory's first run opens a ring late (a partition
        // moved here, its state from a peer's checkpoint): nothing lost.
        let mut opener = LogOpener::new(&dir, NodeId(1), 1);
        assert!(opener.open(&memory, false).unwrap().recovered().intact);
        // Opened again in the same run: what the first ring held is gone.
        assert!(!opener.open(&memory, false).unwrap().recovered().intact);
        // A later run cannot vouch for the rings of earlier ones, unless
        // the stream is created now.
        let mut opener = LogOpener::new(&dir, NodeId(1), 2);
        assert!(!opener.open(&memory, false).unwrap().recovered().intact);
        assert!(
            opener
                .open(&stream(7, StorageMode::Memory), true)
                .unwrap()
                .recovered()
                .intact
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn durable_streams_share_one_log_per_mode_and_an_older_own_log_is_kept() {
        let dir = std::env::temp_dir().join(format!("amulet-logs-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        // Stream 4's own log, as a data directory from before the node-wide
        // log has it.
        {
            let own = amulet_storage::FsDisk::open(&dir.join("stream-4")).unwrap();
            amulet_storage::DurableLog::open(own, Durability::Sync, 4096).unwrap();
        }
        let mut opener = LogOpener::new(&dir, NodeId(1), 1);
        let mut logs: Vec<_> = [1, 2, 3, 4]
            .map(|id| {
                opener
                    .open(&stream(id, StorageMode::SyncDurable), true)
                    .unwrap()
            })
            .into_iter()
            .collect();
        let fifth = opener
            .open(&stream(5, StorageMode::AsyncDurable), true)
            .unwrap();
        let mut names: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        assert_eq!(
            names,
            ["acceptor-log-async", "acceptor-log-sync", "stream-4"]
        );
        for log in &mut logs {
            log.save_promise(amulet_types::Ballot { round: 2, node: 1 })
                .unwrap();
        }
        // One sync covers streams 1-3 (the node log); stream 4 has its own.
        logs[0].sync().unwrap();
        assert!(!logs[1].dirty() && !logs[2].dirty() && logs[3].dirty());
        // Written out, as the host does before any message leaves: the
        // process going keeps it.
        logs[3].write_out().unwrap();
        drop((logs, fifth, opener));
        let mut opener = LogOpener::new(&dir, NodeId(1), 1);
        for id in [1, 2, 3, 4] {
            let log = opener
                .open(&stream(id, StorageMode::SyncDurable), false)
                .unwrap();
            assert_eq!(log.recovered().promised.round, 2, "stream {id}");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
