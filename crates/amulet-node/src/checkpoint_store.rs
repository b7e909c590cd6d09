//! Replica checkpoint files (thesis §3.4.2): one per partition a node
//! replicates, `<data_dir>/checkpoints/partition-<p>.ckpt`, replaced
//! atomically (write a temporary file, sync it, rename it over the old
//! one, sync the directory), so a crash mid-write leaves the previous
//! checkpoint. The format is the host core's
//! ([`amulet_host::encode_checkpoint_to`]).
//!
//! Writes and removals carry the host's numbers ([`WriteId`]): a write is
//! renamed into place only if no later write or removal of the same
//! partition came first (a background write that finishes after a newer
//! one written at a fence is discarded, not renamed over it).

use amulet_dmap::{MapReply, PartitionCheckpoint};
use amulet_host::{decode_checkpoint, encode_checkpoint_to, WriteId, WriteOutcome};
use amulet_types::PartitionId;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// What a DMap checkpoint file holds.
pub type CheckpointBody = amulet_host::CheckpointBody<PartitionCheckpoint, MapReply>;

/// Why a checkpoint file cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum CheckpointError {
    /// Reading or writing failed.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// The file is not a checkpoint of this format.
    #[error("{path}: {what}")]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        what: String,
    },
}

/// The checkpoint directory of a node.
#[derive(Clone, Debug)]
pub struct CheckpointStore {
    dir: PathBuf,
    /// Per partition, the number of the last write renamed into place or
    /// removal done.
    applied: Arc<Mutex<HashMap<PartitionId, WriteId>>>,
}

impl CheckpointStore {
    /// The store under `data_dir` (created on first write).
    pub fn new(data_dir: &Path) -> CheckpointStore {
        CheckpointStore {
            dir: data_dir.join("checkpoints"),
            applied: Arc::new(Mutex::new(HashMap::new())),
        }
    }

    /// Removes temporary files of writes a crash interrupted.
    pub fn remove_temporaries(&self) {
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return;
        };
        for entry in entries.flatten() {
            let name = entry.file_name();
            if name.to_string_lossy().contains(".ckpt.tmp") {
                let _ = std::fs::remove_file(entry.path());
            }
        }
    }

    /// The directory of the checkpoint files.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The file of `partition`'s checkpoint.
    pub fn path(&self, partition: PartitionId) -> PathBuf {
        self.dir.join(format!("partition-{}.ckpt", partition.0))
    }

    /// Writes `body` as `partition`'s checkpoint (write number `write`),
    /// durably. Blocking: run it off the event loop.
    pub fn write(
        &self,
        partition: PartitionId,
        write: WriteId,
        body: &CheckpointBody,
    ) -> WriteOutcome {
        self.write_with(partition, write, |out| {
            let mut buffered = std::io::BufWriter::with_capacity(1 << 20, out);
            let size = encode_checkpoint_to(body, &mut buffered)?;
            buffered.into_inner().map_err(|e| e.into_error())?;
            Ok(size)
        })
    }

    /// Installs `bytes` (a peer's checkpoint file, already decoded and
    /// checked) as `partition`'s checkpoint, atomically and durably.
    pub fn write_bytes(
        &self,
        partition: PartitionId,
        write: WriteId,
        bytes: &[u8],
    ) -> WriteOutcome {
        self.write_with(partition, write, |out| {
            std::io::Write::write_all(out, bytes)?;
            Ok(bytes.len() as u64)
        })
    }

    fn write_with(
        &self,
        partition: PartitionId,
        write: WriteId,
        fill: impl FnOnce(&mut std::fs::File) -> std::io::Result<u64>,
    ) -> WriteOutcome {
        let path = self.path(partition);
        let temporary = temporary_path(&path);
        let failed = |what: &str, error: std::io::Error| {
            let _ = std::fs::remove_file(&temporary);
            WriteOutcome::Failed(format!("{}: {what}: {error}", temporary.display()))
        };
        if let Err(e) = std::fs::create_dir_all(&self.dir) {
            return failed("create the directory", e);
        }
        let mut file = match std::fs::File::create(&temporary) {
            Ok(file) => file,
            Err(e) => return failed("create", e),
        };
        let size = match fill(&mut file) {
            Ok(size) => size,
            Err(e) => return failed("write", e),
        };
        if let Err(e) = file.sync_all() {
            return failed("sync", e);
        }
        drop(file);
        let mut applied = self.applied.lock().expect("checkpoint store lock");
        if applied.get(&partition).is_some_and(|last| *last > write) {
            drop(applied);
            let _ = std::fs::remove_file(&temporary);
            return WriteOutcome::Superseded;
        }
        if let Err(e) = std::fs::rename(&temporary, &path) {
            return failed("rename", e);
        }
        applied.insert(partition, write);
        drop(applied);
        if let Err(e) = std::fs::File::open(&self.dir).and_then(|d| d.sync_all()) {
            return WriteOutcome::Failed(format!("{}: sync: {e}", self.dir.display()));
        }
        WriteOutcome::Written(size)
    }

    /// The raw bytes of `partition`'s checkpoint file, if there is one (to
    /// send to a peer; the receiver decodes and checks them).
    pub fn read_bytes(&self, partition: PartitionId) -> Result<Option<Vec<u8>>, CheckpointError> {
        let path = self.path(partition);
        match std::fs::read(&path) {
            Ok(bytes) => Ok(Some(bytes)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(source) => Err(CheckpointError::Io { path, source }),
        }
    }

    /// `partition`'s checkpoint, if one was written.
    pub fn read(&self, partition: PartitionId) -> Result<Option<CheckpointBody>, CheckpointError> {
        let path = self.path(partition);
        let bytes = match std::fs::read(&path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(source) => return Err(CheckpointError::Io { path, source }),
        };
        decode_checkpoint(&bytes)
            .map(Some)
            .map_err(|what| CheckpointError::Corrupt { path, what })
    }
}

impl CheckpointStore {
    /// The partitions that have a checkpoint file here, ascending.
    pub fn partitions(&self) -> Vec<PartitionId> {
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return Vec::new();
        };
        let mut partitions: Vec<PartitionId> = entries
            .flatten()
            .filter_map(|e| {
                let name = e.file_name().into_string().ok()?;
                let id = name.strip_prefix("partition-")?.strip_suffix(".ckpt")?;
                id.parse().ok().map(PartitionId)
            })
            .collect();
        partitions.sort();
        partitions
    }

    /// Removes `partition`'s checkpoint (merged into another, moved
    /// away), as removal number `write`: no earlier write brings it back.
    pub fn remove(&self, partition: PartitionId, write: WriteId) -> Result<(), CheckpointError> {
        let path = self.path(partition);
        let mut applied = self.applied.lock().expect("checkpoint store lock");
        if applied.get(&partition).is_some_and(|last| *last > write) {
            return Ok(());
        }
        applied.insert(partition, write);
        match std::fs::remove_file(&path) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(source) => Err(CheckpointError::Io { path, source }),
        }
    }
}

/// A temporary file name of its own for each write, so that a background
/// write and one at shutdown (or a state transfer's) never share one.
fn temporary_path(path: &Path) -> PathBuf {
    static WRITES: AtomicU64 = AtomicU64::new(0);
    let n = WRITES.fetch_add(1, Ordering::Relaxed);
    path.with_extension(format!("ckpt.tmp-{}-{n}", std::process::id()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use amulet_dmap::{MapLimits, PartitionState};
    use amulet_multicast::{LanePosition, MergePosition};
    use amulet_smr::{PartitionInfo, PartitionMap, Replica, ReplicaConfig};
    use amulet_types::{Instance, NodeId, StreamId};

    fn body(global: u64) -> CheckpointBody {
        let map = PartitionMap::uniform(
            StreamId(1),
            vec![(
                PartitionId(1),
                PartitionInfo {
                    stream: StreamId(2),
                    replicas: vec![NodeId(1)],
                },
            )],
        );
        let config = ReplicaConfig::new(NodeId(1), 1, PartitionId(1));
        let replica = Replica::new(config, map, PartitionState::new(MapLimits::default()));
        let lane = |s: u32, next: u64| LanePosition {
            stream: StreamId(s),
            next: Instance(next),
            carry: 0,
            consumed: next,
            delivered: Default::default(),
            state: amulet_multicast::LaneState::Active,
            start: 0,
        };
        let mut checkpoint = replica.checkpoint().expect("idle replica");
        checkpoint.global_position = global;
        CheckpointBody {
            replica: checkpoint,
            position: MergePosition {
                lanes: vec![lane(1, 5), lane(2, 7)],
                turn: 0,
                remaining: 1,
                rounds: 5,
                waiting: None,
                completed: Default::default(),
                fence: None,
            },
        }
    }

    fn dir(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("amulet-ckpt-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        dir
    }

    #[test]
    fn thesis_3_4_2_a_written_checkpoint_reads_back() {
        let dir = dir("read-back");
        let store = CheckpointStore::new(&dir);
        assert!(store
            .read(PartitionId(1))
            .expect("no file is fine")
            .is_none());
        let written = body(3);
        let size = std::fs::metadata(&dir).map(|_| ()).is_err();
        assert!(size, "nothing written yet");
        assert!(matches!(
            store.write(PartitionId(1), 1, &written),
            WriteOutcome::Written(_)
        ));
        let read = store.read(PartitionId(1)).expect("read").expect("present");
        assert_eq!(read.position, written.position);
        assert_eq!(
            read.replica.global_position,
            written.replica.global_position
        );
        std::fs::remove_dir_all(&dir).expect("clean up");
    }

    #[test]
    fn thesis_3_4_2_a_write_finishing_after_a_later_one_is_discarded() {
        let dir = dir("superseded");
        let store = CheckpointStore::new(&dir);
        let p = PartitionId(1);
        assert!(matches!(
            store.write(p, 5, &body(50)),
            WriteOutcome::Written(_)
        ));
        // An older write (number 4) finishing late must not replace it.
        assert_eq!(store.write(p, 4, &body(40)), WriteOutcome::Superseded);
        assert_eq!(store.read(p).unwrap().unwrap().replica.global_position, 50);
        // A removal numbered after a write in flight keeps it away.
        store.remove(p, 7).expect("remove");
        assert_eq!(store.write(p, 6, &body(60)), WriteOutcome::Superseded);
        assert!(store.read(p).unwrap().is_none());
        assert!(matches!(
            store.write(p, 8, &body(80)),
            WriteOutcome::Written(_)
        ));
        assert_eq!(store.read(p).unwrap().unwrap().replica.global_position, 80);
        let leftovers = std::fs::read_dir(dir.join("checkpoints"))
            .unwrap()
            .filter(|e| {
                e.as_ref()
                    .unwrap()
                    .file_name()
                    .to_string_lossy()
                    .contains(".tmp")
            })
            .count();
        assert_eq!(leftovers, 0, "discarded writes leave no temporary file");
        std::fs::remove_dir_all(&dir).expect("clean up");
    }

    #[test]
    fn a_damaged_checkpoint_file_is_refused_with_its_path() {
        let dir = dir("damaged");
        let store = CheckpointStore::new(&dir);
        store.write(PartitionId(1), 1, &body(1));
        let path = store.path(PartitionId(1));
        let mut bytes = std::fs::read(&path).unwrap();
        let last = bytes.len() - 1;
        bytes[last] ^= 1;
        std::fs::write(&path, bytes).unwrap();
        match store.read(PartitionId(1)) {
            Err(CheckpointError::Corrupt { path: p, .. }) => assert_eq!(p, path),
            other => panic!("a damaged file must be refused, got {other:?}"),
        }
        std::fs::remove_dir_all(&dir).expect("clean up");
    }
}
