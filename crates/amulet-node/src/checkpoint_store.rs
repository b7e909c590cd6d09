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

use crate::log_segment_store::{LogSegmentStore, Pin, Spilled};
use amulet_dmap::log_segments::{with_log_segments, LogSegments};
use amulet_dmap::{MapReply, PartitionCheckpoint};
use amulet_host::{
    decode_checkpoint, encode_checkpoint, encode_checkpoint_to, WriteId, WriteOutcome,
};
use amulet_types::PartitionId;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// What a DMap checkpoint file holds.
pub type CheckpointBody = amulet_host::CheckpointBody<PartitionCheckpoint, MapReply>;

/// A checkpoint read at start, and the pin on the log segments it refers
/// to (with segments).
pub type Loaded = (CheckpointBody, Option<Arc<Pin>>);

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
    /// Where logs' older entries go (docs/logs.md "Segment files"); the
    /// checkpoints refer to them.
    segments: Option<Arc<LogSegmentStore>>,
}

impl CheckpointStore {
    /// The store under `data_dir` (created on first write).
    pub fn new(data_dir: &Path) -> CheckpointStore {
        CheckpointStore {
            dir: data_dir.join("checkpoints"),
            applied: Arc::new(Mutex::new(HashMap::new())),
            segments: None,
        }
    }

    /// The store, writing logs' older entries to `segments`.
    pub fn with_segments(mut self, segments: Arc<LogSegmentStore>) -> CheckpointStore {
        self.segments = Some(segments);
        self
    }

    /// The node's log segments, if it keeps any.
    pub fn segments(&self) -> Option<&Arc<LogSegmentStore>> {
        self.segments.as_ref()
    }

    /// A pin on the segments for one encode or decode, if there are any.
    fn pin(&self) -> Option<Arc<Pin>> {
        self.segments.as_ref().map(|s| s.pin())
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
    /// durably. With segments, the older entries of its logs go to
    /// segment files first and the file refers to them; what moved is
    /// returned for the live state to adopt (even when the write then
    /// failed: the segment files are in place, and the bytes the same).
    /// Blocking: run it off the event loop.
    pub fn write(
        &self,
        partition: PartitionId,
        write: WriteId,
        body: &mut CheckpointBody,
    ) -> (WriteOutcome, Vec<Spilled>) {
        let pin = self.pin();
        let mut spilled = Vec::new();
        if let (Some(segments), Some(pin)) = (&self.segments, &pin) {
            match segments.spill(pin, &mut body.replica.state.logs) {
                Ok(moved) => spilled = moved,
                Err(error) => {
                    let what = format!("{}: log segments: {error}", segments_dir(segments));
                    return (WriteOutcome::Failed(what), spilled);
                }
            }
        }
        let outcome = self.write_with(partition, write, |out| {
            let mut buffered = std::io::BufWriter::with_capacity(1 << 20, out);
            let encode = |buffered: &mut std::io::BufWriter<&mut std::fs::File>| {
                encode_checkpoint_to(&*body, buffered)
            };
            let size = match &pin {
                Some(pin) => with_log_segments(lend(pin), || encode(&mut buffered))?,
                None => encode(&mut buffered)?,
            };
            buffered.into_inner().map_err(|e| e.into_error())?;
            Ok(size)
        });
        self.committed(&outcome, partition, pin);
        (outcome, spilled)
    }

    /// After a write: a file in place refers to the segments its pin
    /// holds (none for a peer's file).
    fn committed(&self, outcome: &WriteOutcome, partition: PartitionId, pin: Option<Arc<Pin>>) {
        if let (WriteOutcome::Written(_), Some(segments)) = (outcome, &self.segments) {
            let pin = pin.unwrap_or_else(|| segments.pin());
            segments.commit(&pin, partition);
        }
    }

    /// Installs `bytes` (a peer's checkpoint file, already decoded and
    /// checked) as `partition`'s checkpoint, atomically and durably.
    pub fn write_bytes(
        &self,
        partition: PartitionId,
        write: WriteId,
        bytes: &[u8],
    ) -> WriteOutcome {
        let outcome = self.write_with(partition, write, |out| {
            std::io::Write::write_all(out, bytes)?;
            Ok(bytes.len() as u64)
        });
        self.committed(&outcome, partition, None);
        outcome
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

    /// `partition`'s checkpoint file as a peer can use it, if there is
    /// one (the receiver decodes and checks it): the file's bytes, or,
    /// when it refers to this node's log segments, the checkpoint encoded
    /// again with every entry inline.
    pub fn read_bytes(&self, partition: PartitionId) -> Result<Option<Vec<u8>>, CheckpointError> {
        let path = self.path(partition);
        let bytes = match std::fs::read(&path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(source) => return Err(CheckpointError::Io { path, source }),
        };
        let Some(pin) = self.pin() else {
            return Ok(Some(bytes));
        };
        let body: CheckpointBody = with_log_segments(lend(&pin), || decode_checkpoint(&bytes))
            .map_err(|what| CheckpointError::Corrupt {
                path: path.clone(),
                what: pin.missing().unwrap_or(what),
            })?;
        if !pin.holds_any() {
            return Ok(Some(bytes));
        }
        drop(bytes);
        Ok(Some(encode_checkpoint(&body)))
    }

    /// `partition`'s checkpoint, if one was written. With segments, the
    /// file's refers to them and the returned pin holds them until
    /// [`CheckpointStore::loaded`].
    pub fn read(&self, partition: PartitionId) -> Result<Option<Loaded>, CheckpointError> {
        let path = self.path(partition);
        let bytes = match std::fs::read(&path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(source) => return Err(CheckpointError::Io { path, source }),
        };
        let pin = self.pin();
        let decoded = match &pin {
            Some(pin) => with_log_segments(lend(pin), || decode_checkpoint(&bytes)),
            None => decode_checkpoint(&bytes),
        };
        let missing = pin.as_ref().and_then(|pin| pin.missing());
        decoded
            .map(|body| Some((body, pin)))
            .map_err(|what| CheckpointError::Corrupt {
                path,
                what: missing.unwrap_or(what),
            })
    }

    /// The checkpoints read at start ([`CheckpointStore::read`]), with
    /// their pins: each file refers to its pin's segments. Removes the
    /// segments none refers to (a crash's leftovers).
    pub fn loaded(&self, pins: Vec<(PartitionId, Arc<Pin>)>) {
        if let Some(segments) = &self.segments {
            for (partition, pin) in &pins {
                segments.hold_for(pin, *partition);
            }
            segments.collect_free();
        }
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
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(source) => return Err(CheckpointError::Io { path, source }),
        }
        drop(applied);
        if let Some(segments) = &self.segments {
            segments.forget(partition);
        }
        Ok(())
    }
}

/// `pin` as the codec's view of the segments.
fn lend(pin: &Arc<Pin>) -> Arc<dyn LogSegments> {
    pin.clone()
}

fn segments_dir(segments: &LogSegmentStore) -> String {
    segments.dir().display().to_string()
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
            store.write(PartitionId(1), 1, &mut written.clone()).0,
            WriteOutcome::Written(_)
        ));
        let (read, _) = store.read(PartitionId(1)).expect("read").expect("present");
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
            store.write(p, 5, &mut body(50)).0,
            WriteOutcome::Written(_)
        ));
        // An older write (number 4) finishing late must not replace it.
        assert_eq!(store.write(p, 4, &mut body(40)).0, WriteOutcome::Superseded);
        assert_eq!(
            store.read(p).unwrap().unwrap().0.replica.global_position,
            50
        );
        // A removal numbered after a write in flight keeps it away.
        store.remove(p, 7).expect("remove");
        assert_eq!(store.write(p, 6, &mut body(60)).0, WriteOutcome::Superseded);
        assert!(store.read(p).unwrap().is_none());
        assert!(matches!(
            store.write(p, 8, &mut body(80)).0,
            WriteOutcome::Written(_)
        ));
        assert_eq!(
            store.read(p).unwrap().unwrap().0.replica.global_position,
            80
        );
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
        store.write(PartitionId(1), 1, &mut body(1));
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

    fn with_log(mut body: CheckpointBody, entries: u64, entry_bytes: usize) -> CheckpointBody {
        let mut log = amulet_dmap::Log::default();
        for i in 0..entries {
            let mut entry = vec![(i % 251) as u8; entry_bytes];
            entry[..8].copy_from_slice(&i.to_le_bytes());
            log.append(bytes::Bytes::from(entry));
        }
        let name = amulet_dmap::MapName::new("events").unwrap();
        body.replica.state.logs.insert(name, log);
        body
    }

    fn events(body: &CheckpointBody) -> &amulet_dmap::Log {
        &body.replica.state.logs[&amulet_dmap::MapName::new("events").unwrap()]
    }

    fn segment_files(dir: &Path) -> usize {
        std::fs::read_dir(dir.join("segments"))
            .map(|d| d.count())
            .unwrap_or(0)
    }

    fn segmented(dir: &Path) -> (Arc<LogSegmentStore>, CheckpointStore) {
        let segments = LogSegmentStore::open(dir, 4096).expect("open segments");
        let store = CheckpointStore::new(dir).with_segments(segments.clone());
        (segments, store)
    }

    #[test]
    fn thesis_3_5_2_a_log_checkpointed_into_segments_reads_back_after_a_restart() {
        let dir = dir("segments");
        let p = PartitionId(1);
        let (segments, store) = segmented(&dir);
        // 100 entries of 200 bytes: four runs of at least 4096 bytes go
        // to segments, the last 16 entries stay in memory.
        let mut written = with_log(body(1), 100, 200);
        let (outcome, spilled) = store.write(p, 1, &mut written);
        let WriteOutcome::Written(size) = outcome else {
            panic!("{outcome:?}")
        };
        assert_eq!(spilled.len(), 4);
        assert_eq!(segments.stats().files, 4);
        assert_eq!(spilled.iter().map(|s| s.entries.len()).sum::<usize>(), 84);
        assert!(
            size < 5_000,
            "the file refers to the segments: {size} bytes"
        );
        let original = with_log(body(1), 100, 200);
        assert_eq!(events(&written), events(&original), "the same entries");
        drop((segments, store, spilled, written));

        // A restart maps them again and reads the same log.
        let (segments, store) = segmented(&dir);
        let (read, pin) = store.read(p).unwrap().unwrap();
        assert_eq!(events(&read), events(&original));
        store.loaded(vec![(p, pin.expect("segments on"))]);
        assert_eq!(segments.stats().files, 4, "every segment is referred to");

        // A peer gets every entry inline: it decodes without segments.
        let sent = store.read_bytes(p).unwrap().unwrap();
        let decoded: CheckpointBody = decode_checkpoint(&sent).expect("inline");
        assert_eq!(events(&decoded), events(&original));
        assert!(sent.len() > 20_000, "inline: {} bytes", sent.len());

        // A trim below 50 frees the two segments wholly below it.
        let mut trimmed = read.clone();
        let name = amulet_dmap::MapName::new("events").unwrap();
        trimmed
            .replica
            .state
            .logs
            .get_mut(&name)
            .unwrap()
            .trim(50)
            .unwrap();
        let (outcome, spilled) = store.write(p, 2, &mut trimmed);
        assert!(matches!(outcome, WriteOutcome::Written(_)));
        assert!(
            spilled.is_empty(),
            "the last 16 entries are below a segment"
        );
        assert_eq!(segments.stats().files, 2);
        assert_eq!(segments.stats().removed, 2);
        assert_eq!(segment_files(&dir), 2);
        drop((segments, store, read, trimmed));
        let (_, store) = segmented(&dir);
        let (read, _) = store.read(p).unwrap().unwrap();
        assert_eq!(events(&read).first(), 50);
        assert_eq!(
            events(&read).read(50, 100, usize::MAX).unwrap().entries,
            events(&original).read(50, 100, usize::MAX).unwrap().entries
        );
        std::fs::remove_dir_all(&dir).expect("clean up");
    }

    #[test]
    fn segments_no_checkpoint_refers_to_are_removed_at_start() {
        let dir = dir("orphans");
        let (segments, _) = segmented(&dir);
        let mut logs = with_log(body(1), 50, 200).replica.state.logs;
        // Moved into segments by a write that never finished.
        let pin = segments.pin();
        assert_eq!(segments.spill(&pin, &mut logs).unwrap().len(), 2);
        drop((pin, segments, logs));
        assert_eq!(segment_files(&dir), 2);
        let (segments, store) = segmented(&dir);
        store.loaded(Vec::new());
        assert_eq!(segments.stats().files, 0);
        assert_eq!(segment_files(&dir), 0);
        std::fs::remove_dir_all(&dir).expect("clean up");
    }

    #[test]
    fn a_damaged_log_segment_stops_the_node_with_its_path() {
        let dir = dir("damaged-segment");
        let (segments, store) = segmented(&dir);
        let (outcome, _) = store.write(PartitionId(1), 1, &mut with_log(body(1), 30, 200));
        assert!(matches!(outcome, WriteOutcome::Written(_)));
        drop((segments, store));
        let path = dir.join("segments").join("segment-0.seg");
        let mut bytes = std::fs::read(&path).unwrap();
        bytes[100] ^= 1;
        std::fs::write(&path, bytes).unwrap();
        let error = LogSegmentStore::open(&dir, 4096)
            .expect_err("damaged")
            .to_string();
        assert!(error.contains(&path.display().to_string()), "{error}");
        std::fs::remove_dir_all(&dir).expect("clean up");
    }

    #[test]
    fn a_checkpoint_refering_to_a_missing_segment_is_refused_with_its_path() {
        let dir = dir("missing-segment");
        let (segments, store) = segmented(&dir);
        let (outcome, _) = store.write(PartitionId(1), 1, &mut with_log(body(1), 30, 200));
        assert!(matches!(outcome, WriteOutcome::Written(_)));
        drop((segments, store));
        let path = dir.join("segments").join("segment-0.seg");
        std::fs::remove_file(&path).unwrap();
        let (_, store) = segmented(&dir);
        match store.read(PartitionId(1)) {
            Err(CheckpointError::Corrupt { what, .. }) => {
                assert!(what.contains(&path.display().to_string()), "{what}")
            }
            other => panic!("a missing segment must be refused, got {other:?}"),
        }
        std::fs::remove_dir_all(&dir).expect("clean up");
    }
}
