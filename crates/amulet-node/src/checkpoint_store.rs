//! Replica checkpoint files (thesis §3.4.2): one per partition a node
//! replicates, `<data_dir>/checkpoints/partition-<p>.ckpt`, replaced
//! atomically (write a temporary file, sync it, rename it over the old
//! one, sync the directory), so a crash mid-write leaves the previous
//! checkpoint.
//!
//! Layout: `MAGIC` (8 bytes), format version (u32 LE), the postcard
//! payload, then its length (u64 LE) and crc32c (u32 LE). Decoding is
//! total: a short, truncated, corrupt or foreign file is an error, never a
//! panic.

use amulet_dmap::{MapReply, PartitionCheckpoint};
use amulet_multicast::MergePosition;
use amulet_smr::ReplicaCheckpoint;
use amulet_types::PartitionId;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

const MAGIC: &[u8; 8] = b"AMCKPT\x00\x01";
const VERSION: u32 = 2;
const HEADER_BYTES: usize = 12;
const TRAILER_BYTES: usize = 12;

/// What a checkpoint file holds: a replica's state and the merge position
/// of its streams it reflects.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct CheckpointBody {
    /// The replica's replicated state.
    pub replica: ReplicaCheckpoint<PartitionCheckpoint, MapReply>,
    /// Where its merge stood: the learners resume from each lane's `next`.
    pub position: MergePosition,
}

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
}

impl CheckpointStore {
    /// The store under `data_dir` (created on first write).
    pub fn new(data_dir: &Path) -> CheckpointStore {
        CheckpointStore {
            dir: data_dir.join("checkpoints"),
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

    /// The file of `partition`'s checkpoint.
    pub fn path(&self, partition: PartitionId) -> PathBuf {
        self.dir.join(format!("partition-{}.ckpt", partition.0))
    }

    /// Writes `body` as `partition`'s checkpoint, durably; returns the
    /// file's size. Blocking: run it off the event loop.
    pub fn write(
        &self,
        partition: PartitionId,
        body: &CheckpointBody,
    ) -> Result<u64, CheckpointError> {
        let path = self.path(partition);
        let temporary = temporary_path(&path);
        let io = |source| CheckpointError::Io {
            path: temporary.clone(),
            source,
        };
        std::fs::create_dir_all(&self.dir).map_err(io)?;
        let file = std::fs::File::create(&temporary).map_err(io)?;
        let mut out = std::io::BufWriter::with_capacity(1 << 20, file);
        out.write_all(MAGIC).map_err(io)?;
        out.write_all(&VERSION.to_le_bytes()).map_err(io)?;
        let mut payload = Checksummed {
            inner: &mut out,
            crc: 0,
            len: 0,
        };
        postcard::to_io(body, &mut payload).map_err(|e| CheckpointError::Corrupt {
            path: temporary.clone(),
            what: format!("cannot encode: {e}"),
        })?;
        let (len, crc) = (payload.len, payload.crc);
        out.write_all(&len.to_le_bytes()).map_err(io)?;
        out.write_all(&crc.to_le_bytes()).map_err(io)?;
        let file = out.into_inner().map_err(|e| io(e.into_error()))?;
        file.sync_all().map_err(io)?;
        drop(file);
        std::fs::rename(&temporary, &path).map_err(io)?;
        std::fs::File::open(&self.dir)
            .and_then(|d| d.sync_all())
            .map_err(io)?;
        Ok(len + (HEADER_BYTES + TRAILER_BYTES) as u64)
    }

    /// Installs `bytes` (a peer's checkpoint file, already decoded and
    /// checked) as `partition`'s checkpoint, atomically and durably.
    pub fn write_bytes(&self, partition: PartitionId, bytes: &[u8]) -> Result<(), CheckpointError> {
        let path = self.path(partition);
        let temporary = temporary_path(&path);
        let io = |source| CheckpointError::Io {
            path: temporary.clone(),
            source,
        };
        std::fs::create_dir_all(&self.dir).map_err(io)?;
        let mut file = std::fs::File::create(&temporary).map_err(io)?;
        file.write_all(bytes).map_err(io)?;
        file.sync_all().map_err(io)?;
        drop(file);
        std::fs::rename(&temporary, &path).map_err(io)?;
        std::fs::File::open(&self.dir)
            .and_then(|d| d.sync_all())
            .map_err(io)
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
        decode(&bytes)
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

    /// Removes `partition`'s checkpoint (it was merged into another).
    pub fn remove(&self, partition: PartitionId) -> Result<(), CheckpointError> {
        let path = self.path(partition);
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

/// Decodes a checkpoint file's bytes (also those a peer sent in a state
/// transfer).
pub(crate) fn decode(bytes: &[u8]) -> Result<CheckpointBody, String> {
    if bytes.len() < HEADER_BYTES + TRAILER_BYTES {
        return Err(format!(
            "{} bytes is too short for a checkpoint",
            bytes.len()
        ));
    }
    if &bytes[..8] != MAGIC {
        return Err("not an amulet checkpoint (bad magic)".into());
    }
    let version = u32::from_le_bytes(bytes[8..12].try_into().expect("4 bytes"));
    if version != VERSION {
        return Err(format!(
            "checkpoint format {version}, this build reads {VERSION}"
        ));
    }
    let trailer = &bytes[bytes.len() - TRAILER_BYTES..];
    let len = u64::from_le_bytes(trailer[..8].try_into().expect("8 bytes"));
    let crc = u32::from_le_bytes(trailer[8..].try_into().expect("4 bytes"));
    let payload = &bytes[HEADER_BYTES..bytes.len() - TRAILER_BYTES];
    if len != payload.len() as u64 {
        return Err(format!(
            "payload of {} bytes, trailer says {len} (truncated?)",
            payload.len()
        ));
    }
    if crc32c::crc32c(payload) != crc {
        return Err("payload checksum mismatch".into());
    }
    postcard::from_bytes(payload).map_err(|e| format!("payload does not decode: {e}"))
}

/// Counts and checksums what passes through.
struct Checksummed<'a, W: Write> {
    inner: &'a mut W,
    crc: u32,
    len: u64,
}

impl<W: Write> Write for Checksummed<'_, W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.crc = crc32c::crc32c_append(self.crc, &buf[..n]);
        self.len += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use amulet_dmap::{MapLimits, PartitionState};
    use amulet_multicast::{LanePosition, MergePosition};
    use amulet_smr::{PartitionInfo, PartitionMap, Replica, ReplicaConfig};
    use amulet_types::{Instance, NodeId, StreamId};

    fn body() -> CheckpointBody {
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
        CheckpointBody {
            replica: replica.checkpoint().expect("idle replica"),
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

    #[test]
    fn section_3_4_2_a_written_checkpoint_reads_back() {
        let dir = std::env::temp_dir().join(format!("amulet-ckpt-{}", std::process::id()));
        let store = CheckpointStore::new(&dir);
        assert!(store
            .read(PartitionId(1))
            .expect("no file is fine")
            .is_none());
        let written = body();
        store.write(PartitionId(1), &written).expect("write");
        let read = store.read(PartitionId(1)).expect("read").expect("present");
        assert_eq!(read.position, written.position);
        assert_eq!(
            read.replica.global_position,
            written.replica.global_position
        );
        std::fs::remove_dir_all(&dir).expect("clean up");
    }

    #[test]
    fn every_damaged_checkpoint_is_an_error_not_a_panic() {
        let dir = std::env::temp_dir().join(format!("amulet-ckpt-bad-{}", std::process::id()));
        let store = CheckpointStore::new(&dir);
        store.write(PartitionId(1), &body()).expect("write");
        let good = std::fs::read(store.path(PartitionId(1))).expect("read");
        assert!(decode(&good).is_ok());
        // Every truncation and every single-byte flip is refused.
        for cut in 0..good.len() {
            assert!(decode(&good[..cut]).is_err(), "truncated to {cut} accepted");
        }
        for i in 0..good.len() {
            let mut bad = good.clone();
            bad[i] ^= 0x40;
            assert!(decode(&bad).is_err(), "flip at byte {i} accepted");
        }
        std::fs::remove_dir_all(&dir).expect("clean up");
    }
}
