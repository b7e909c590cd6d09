//! Tailing a log (DLog, thesis §3.5.2; docs/logs.md): a tailer reads a
//! log from a position at one replica of the partition that holds it,
//! without ordering, and reads again when the replica has executed more.
//!
//! What a replica executed is a prefix of the agreed order, so every entry
//! it serves is decided and sits at the same position on every replica: a
//! tail may run late (a replica behind its peers), never wrong. A tailer
//! that reconnects to another replica resumes at the position after the
//! last entry it got; if that replica has not reached it yet, it is
//! [`TailAnswer::Behind`] and the tailer waits.

use crate::host::Host;
use amulet_dmap::{Log, LogRead, MapError, MapName, PartitionState, Refused};
use amulet_smr::PartitionMap;
use amulet_types::{MapVersion, PartitionId};

/// The answer to a tail's read of a log at this node.
#[derive(Debug)]
pub enum TailAnswer {
    /// Entries from the position asked for (none when the tail is at the
    /// log's end: read again after the next change), with the log's
    /// bounds at this replica.
    Read(LogRead),
    /// The position asked for is past the log's end at this replica: it
    /// has not executed that far (another replica had), or the position
    /// was never reached anywhere.
    Behind {
        /// The log's first position here.
        first: u64,
        /// The log's end here.
        end: u64,
    },
    /// The replica holding the log is far behind its streams (a restarted
    /// node replaying them): another replica serves sooner.
    CatchingUp,
    /// No local replica has reached the client's map version yet (the
    /// log's creation, say): wait, or ask another replica.
    MapBehind,
    /// No replica here holds the log (it lives in a partition this node
    /// does not replicate, or moved away): the newest map here, if any.
    NotHeld(Option<Box<PartitionMap>>),
    /// The log is unknown, or the position was trimmed: the tail ends.
    Failed(MapError),
}

impl Host<PartitionState> {
    /// Up to `max_bytes` (at most the limit `log_read_bytes_max`) of
    /// `log`'s entries from `from` (at least one when one exists), read from the local replica of the partition
    /// that holds the log under that replica's own map.
    ///
    /// Replicas whose map is older than `map_version` (the client's) are
    /// not asked: they may not know the log yet.
    pub fn tail_read(
        &self,
        log: &MapName,
        from: u64,
        max_bytes: usize,
        map_version: MapVersion,
    ) -> TailAnswer {
        let name = log.as_str();
        let mut behind = false;
        for (partition, replica) in &self.replicas {
            if replica.map().version < map_version {
                behind = true;
                continue;
            }
            // An unknown keyspace in this replica's map is a log it does
            // not know (yet, or any more).
            if !owns_log(replica.map(), *partition, log) {
                continue;
            }
            if self.catching_up(*partition) {
                return TailAnswer::CatchingUp;
            }
            // The keyspace of a map of that name, not a log.
            let Some(entries) = replica.state().log(log) else {
                return TailAnswer::Failed(MapError::UnknownLog(name.to_string()));
            };
            let skips = self.config.bugs.tail_skips_an_entry
                && from > entries.first()
                && from < entries.end();
            let max_bytes = max_bytes.min(replica.state().limits().log_read_bytes_max);
            return match entries.read(from + u64::from(skips), usize::MAX, max_bytes) {
                // The injected bug labels what it read from one past with
                // the position asked for.
                Ok(read) if skips => TailAnswer::Read(LogRead { from, ..read }),
                Ok(read) => TailAnswer::Read(read),
                Err(Refused::PastEnd { end }) => TailAnswer::Behind {
                    first: entries.first(),
                    end,
                },
                Err(Refused::Trimmed { first }) => TailAnswer::Failed(MapError::LogTrimmed {
                    log: name.to_string(),
                    first,
                }),
            };
        }
        if behind {
            return TailAnswer::MapBehind;
        }
        match self.current_map() {
            // No local replica knows the keyspace and the newest map has
            // none either: no such log (a later create reaches this node
            // through its replicas' maps).
            Some(map) if map.partition_of(name, name.as_bytes()).is_err() => {
                TailAnswer::Failed(MapError::UnknownLog(name.to_string()))
            }
            map => TailAnswer::NotHeld(map.cloned().map(Box::new)),
        }
    }

    /// A count that moves whenever a local replica executes a command
    /// that changes a log (not replicated: compared between two calls in
    /// one process, it tells tailers to read again).
    pub fn log_changes(&self) -> u64 {
        self.replicas
            .values()
            .fold(0u64, |n, r| n.wrapping_add(r.state().log_changes()))
    }

    /// The logs this node's replicas hold, each from the replica of the
    /// partition that owns it under that replica's map (the others keep
    /// empty placeholders of it).
    pub fn held_logs(&self) -> Vec<(PartitionId, &MapName, &Log)> {
        let mut held = Vec::new();
        for (partition, replica) in &self.replicas {
            let state = replica.state();
            for name in state.log_names() {
                if let (true, Some(log)) =
                    (owns_log(replica.map(), *partition, name), state.log(name))
                {
                    held.push((*partition, name, log));
                }
            }
        }
        held
    }

    /// The logs this node's replicas hold, for metrics.
    pub fn log_status(&self) -> Vec<LogStatus> {
        self.held_logs()
            .into_iter()
            .map(|(partition, name, log)| LogStatus {
                log: name.to_string(),
                partition: partition.0,
                first: log.first(),
                end: log.end(),
                bytes: log.bytes(),
            })
            .collect()
    }
}

/// Whether `partition` owns log `name` under `map` (a log is the key of
/// its own name in the hash keyspace named like it).
fn owns_log(map: &PartitionMap, partition: PartitionId, name: &MapName) -> bool {
    let name = name.as_str();
    map.partition_of(name, name.as_bytes()) == Ok(partition)
}

/// One log held by a local replica, for metrics.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogStatus {
    /// The log's name.
    pub log: String,
    /// The partition holding it.
    pub partition: u32,
    /// Its first position held.
    pub first: u64,
    /// The position of its next append.
    pub end: u64,
    /// Bytes of the entries held.
    pub bytes: u64,
}
