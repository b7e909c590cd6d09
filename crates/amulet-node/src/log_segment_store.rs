//! A node's log segment files (docs/logs.md "Segment files"; thesis
//! §3.5.2: recent appends in memory, the rest on disk).
//!
//! When a replica's checkpoint is written, the older entries of each log
//! it holds go, in runs of at least `segment_bytes`, to immutable files
//! `<data_dir>/segments/segment-<id>.seg`; the entries are re-pointed at
//! the file's mapping (the same bytes: replicated state is unchanged), so
//! their memory becomes page cache the kernel can drop, and the checkpoint
//! names each run as (segment, index, count) instead of copying it
//! (`amulet_dmap::log_segments`). A restart maps the segments again.
//!
//! Files: `MAGIC`, then each entry as its length (u32 LE) and bytes, then
//! the entry count (u64 LE) and the crc32c of all before it (u32 LE). A
//! segment is written to a temporary file, synced and renamed, and the
//! directory synced, before any checkpoint refers to it.
//!
//! A segment is removed when no checkpoint file of this node refers to it
//! and no checkpoint being written has found or made it (its pins): what
//! a trim dropped, what a move took away. Ids only grow, so a removed
//! segment's id never names another file.

use amulet_dmap::log_segments::LogSegments;
use amulet_dmap::{Log, MapName};
use amulet_types::PartitionId;
use bytes::Bytes;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

const MAGIC: &[u8; 8] = b"AMLSEG\x00\x01";
const TRAILER_BYTES: usize = 12;

/// One mapped segment file.
#[derive(Debug)]
struct Segment {
    id: u64,
    /// Address of the mapping's first byte.
    base: usize,
    /// Length of the mapping.
    len: usize,
    /// Each entry's offset in the mapping, ascending.
    offsets: Vec<usize>,
    /// The entries, as slices of the mapping (they keep it mapped).
    entries: Arc<[Bytes]>,
    bytes: u64,
}

impl Segment {
    /// `entry`'s index here, if its bytes are exactly one of these
    /// entries' (not merely inside the mapping).
    fn index_of(&self, entry: &Bytes) -> Option<u32> {
        let address = entry.as_ptr() as usize;
        if entry.is_empty() || address < self.base || address >= self.base + self.len {
            return None;
        }
        let index = self.offsets.binary_search(&(address - self.base)).ok()?;
        (self.entries[index].len() == entry.len()).then_some(index as u32)
    }
}

#[derive(Debug, Default)]
struct Inner {
    next_id: u64,
    /// Mapped segments by the address of their mapping.
    by_address: BTreeMap<usize, Arc<Segment>>,
    by_id: HashMap<u64, Arc<Segment>>,
    /// Per partition, the segments its checkpoint file refers to.
    durable: HashMap<PartitionId, BTreeSet<u64>>,
    /// Per checkpoint encode or decode in progress, the segments it made
    /// or found: kept until it ends.
    pins: HashMap<u64, BTreeSet<u64>>,
    next_pin: u64,
    removed: u64,
}

/// A run of a log's entries moved into a segment: the live state adopts
/// it ([`amulet_dmap::PartitionState::adopt_log_entries`]).
#[derive(Clone, Debug)]
pub struct Spilled {
    /// The log.
    pub log: MapName,
    /// Position of `entries[0]`.
    pub from: u64,
    /// The entries, backed by the segment file.
    pub entries: Arc<[Bytes]>,
    /// The entries they replace (kept alive until adopted, so an entry
    /// at the same address is the same bytes).
    pub was: Vec<Bytes>,
}

/// Counts for metrics and status.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct SegmentStats {
    /// Segment files in place.
    pub files: u64,
    /// Bytes of entries in them.
    pub bytes: u64,
    /// Segment files removed since start.
    pub removed: u64,
}

/// The segment directory of a node.
#[derive(Debug)]
pub struct LogSegmentStore {
    dir: PathBuf,
    /// Least bytes of a run moved into one segment (0: logs stay in
    /// memory).
    segment_bytes: u64,
    inner: Mutex<Inner>,
}

impl LogSegmentStore {
    /// Opens `<data_dir>/segments`, mapping every segment in it and
    /// removing temporaries a crash left. A damaged segment stops the
    /// node with its path: it was synced before any checkpoint named it.
    pub fn open(data_dir: &Path, segment_bytes: u64) -> anyhow::Result<Arc<LogSegmentStore>> {
        let dir = data_dir.join("segments");
        let mut inner = Inner::default();
        if let Ok(listing) = std::fs::read_dir(&dir) {
            for entry in listing.flatten() {
                let name = entry.file_name().to_string_lossy().into_owned();
                if name.contains(".seg.tmp") {
                    let _ = std::fs::remove_file(entry.path());
                    continue;
                }
                let Some(id) = name
                    .strip_prefix("segment-")
                    .and_then(|n| n.strip_suffix(".seg"))
                    .and_then(|n| n.parse::<u64>().ok())
                else {
                    continue;
                };
                let segment = map_segment(&entry.path(), id)?;
                inner.next_id = inner.next_id.max(id + 1);
                inner.register(segment);
            }
        }
        Ok(Arc::new(LogSegmentStore {
            dir,
            segment_bytes,
            inner: Mutex::new(inner),
        }))
    }

    /// Whether logs go to segment files at all.
    pub fn enabled(&self) -> bool {
        self.segment_bytes > 0
    }

    fn path(&self, id: u64) -> PathBuf {
        self.dir.join(format!("segment-{id}.seg"))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().expect("segment store lock")
    }

    /// A pin for one checkpoint encode or decode: lend
    /// [`Pin::segments`] to it, then [`LogSegmentStore::commit`] or drop
    /// it.
    pub fn pin(self: &Arc<Self>) -> Arc<Pin> {
        let mut inner = self.lock();
        let token = inner.next_pin;
        inner.next_pin += 1;
        inner.pins.insert(token, BTreeSet::new());
        Arc::new(Pin {
            store: self.clone(),
            token,
            last: Mutex::new(None),
            missing: Mutex::new(None),
        })
    }

    /// The segment directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Moves the older entries of `logs` (a checkpoint's copy) into new
    /// segment files, pinned to `pin`, and re-points the copy's entries
    /// at them. Runs of entries not yet in a segment go in pieces of at
    /// least `segment_bytes`; a log's last piece below that stays in
    /// memory (the recent appends). Returns what moved, for the live
    /// state to adopt. Blocking: run it off the event loop.
    pub fn spill(
        self: &Arc<Self>,
        pin: &Pin,
        logs: &mut BTreeMap<MapName, Log>,
    ) -> std::io::Result<Vec<Spilled>> {
        if !self.enabled() {
            return Ok(Vec::new());
        }
        // (log, first position, entries) of each piece to write.
        let mut pieces: Vec<(MapName, u64, Vec<Bytes>)> = Vec::new();
        for (name, log) in logs.iter() {
            let mut piece: Vec<Bytes> = Vec::new();
            let mut piece_from = log.first();
            let mut piece_bytes = 0u64;
            for (position, entry) in (log.first()..).zip(log.entries().iter()) {
                if entry.is_empty() && piece.is_empty() {
                    // Nothing to move (and never located, so it would be
                    // moved again at every checkpoint).
                    continue;
                }
                if !entry.is_empty() && pin.locate(entry).is_some() {
                    // An older run cut short by one already in a segment
                    // will not grow: it goes whole.
                    if !piece.is_empty() {
                        pieces.push((name.clone(), piece_from, std::mem::take(&mut piece)));
                        piece_bytes = 0;
                    }
                    continue;
                }
                if piece.is_empty() {
                    piece_from = position;
                }
                piece_bytes += entry.len() as u64 + 4;
                piece.push(entry.clone());
                if piece_bytes >= self.segment_bytes {
                    pieces.push((name.clone(), piece_from, std::mem::take(&mut piece)));
                    piece_bytes = 0;
                }
            }
        }
        if pieces.is_empty() {
            return Ok(Vec::new());
        }
        std::fs::create_dir_all(&self.dir)?;
        let mut written = Vec::new();
        for (name, from, entries) in pieces {
            let id = {
                let mut inner = self.lock();
                let id = inner.next_id;
                inner.next_id += 1;
                id
            };
            let path = self.path(id);
            write_segment(&path, &entries)?;
            written.push((name, from, id, path, entries));
        }
        std::fs::File::open(&self.dir)?.sync_all()?;
        let mut spilled = Vec::new();
        for (name, from, id, path, was) in written {
            let segment = map_segment(&path, id).map_err(std::io::Error::other)?;
            let entries = segment.entries.clone();
            {
                let mut inner = self.lock();
                inner.register(segment);
                inner.pins.entry(pin.token).or_default().insert(id);
            }
            if let Some(log) = logs.get_mut(&name) {
                log.adopt(from, &entries, &was);
            }
            spilled.push(Spilled {
                log: name,
                from,
                entries,
                was,
            });
        }
        Ok(spilled)
    }

    /// `pin`'s checkpoint of `partition` is now the file in place: its
    /// segments are the ones that file refers to. Removes every segment
    /// no file and no pin holds.
    pub fn commit(&self, pin: &Pin, partition: PartitionId) {
        let mut inner = self.lock();
        let held = inner.pins.remove(&pin.token).unwrap_or_default();
        tracing::debug!(
            partition = partition.0,
            segments = held.len(),
            "a checkpoint refers to log segments"
        );
        inner.durable.insert(partition, held);
        self.collect(&mut inner);
    }

    /// As [`LogSegmentStore::commit`] for a file read at start, without
    /// removing anything yet (the other files are still being read).
    pub fn hold_for(&self, pin: &Pin, partition: PartitionId) {
        let mut inner = self.lock();
        let held = inner.pins.remove(&pin.token).unwrap_or_default();
        inner.durable.insert(partition, held);
    }

    /// Removes every segment no file and no pin holds.
    pub fn collect_free(&self) {
        let mut inner = self.lock();
        self.collect(&mut inner);
    }

    /// `partition`'s checkpoint file is gone: its segments are free.
    pub fn forget(&self, partition: PartitionId) {
        let mut inner = self.lock();
        if inner.durable.remove(&partition).is_some() {
            self.collect(&mut inner);
        }
    }

    fn collect(&self, inner: &mut Inner) {
        let held: BTreeSet<u64> = inner
            .durable
            .values()
            .chain(inner.pins.values())
            .flatten()
            .copied()
            .collect();
        let free: Vec<u64> = inner
            .by_id
            .keys()
            .filter(|id| !held.contains(id))
            .copied()
            .collect();
        if !free.is_empty() {
            tracing::info!(segments = ?free, "removing log segments no checkpoint refers to");
        }
        for id in free {
            // Entries still pointing at it (a checkpoint being dropped)
            // keep the mapping; the file goes now.
            if let Some(segment) = inner.by_id.remove(&id) {
                inner.by_address.remove(&segment.base);
            }
            match std::fs::remove_file(self.path(id)) {
                Ok(()) => inner.removed += 1,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(error) => {
                    tracing::warn!(%error, segment = id, "cannot remove a log segment")
                }
            }
        }
    }

    /// Counts for metrics.
    pub fn stats(&self) -> SegmentStats {
        let inner = self.lock();
        SegmentStats {
            files: inner.by_id.len() as u64,
            bytes: inner.by_id.values().map(|s| s.bytes).sum(),
            removed: inner.removed,
        }
    }
}

impl Inner {
    fn register(&mut self, segment: Segment) {
        let segment = Arc::new(segment);
        self.by_address.insert(segment.base, segment.clone());
        self.by_id.insert(segment.id, segment);
    }
}

/// One checkpoint encode's or decode's hold on the segments it makes or
/// finds; lend [`Pin::segments`] to the codec.
#[derive(Debug)]
pub struct Pin {
    store: Arc<LogSegmentStore>,
    token: u64,
    /// The segment found last: consecutive entries are usually in it.
    last: Mutex<Option<Arc<Segment>>>,
    /// Why a segment a decode asked for is not here (the codec's error
    /// loses the message).
    missing: Mutex<Option<String>>,
}

impl Pin {
    /// Why a decode could not have a segment it asked for, if it could
    /// not.
    pub fn missing(&self) -> Option<String> {
        self.missing.lock().expect("pin lock").clone()
    }

    /// Whether the encode or decode found or made any segment.
    pub fn holds_any(&self) -> bool {
        let inner = self.store.lock();
        inner.pins.get(&self.token).is_some_and(|p| !p.is_empty())
    }
}

impl Drop for Pin {
    fn drop(&mut self) {
        let mut inner = self.store.lock();
        // A pin committed already left the table.
        inner.pins.remove(&self.token);
    }
}

impl LogSegments for Pin {
    fn locate(&self, entry: &Bytes) -> Option<(u64, u32)> {
        let mut last = self.last.lock().expect("pin cache lock");
        if let Some(segment) = last.as_ref() {
            if let Some(index) = segment.index_of(entry) {
                return Some((segment.id, index));
            }
        }
        let address = entry.as_ptr() as usize;
        let mut inner = self.store.lock();
        let segment = inner
            .by_address
            .range(..=address)
            .next_back()
            .map(|(_, s)| s.clone())?;
        let index = segment.index_of(entry)?;
        inner.pins.entry(self.token).or_default().insert(segment.id);
        drop(inner);
        let id = segment.id;
        *last = Some(segment);
        Some((id, index))
    }

    fn entries(&self, segment: u64) -> Result<Arc<[Bytes]>, String> {
        let mut inner = self.store.lock();
        let found = inner.by_id.get(&segment).map(|s| s.entries.clone());
        match found {
            Some(entries) => {
                inner.pins.entry(self.token).or_default().insert(segment);
                Ok(entries)
            }
            None => {
                let why = format!(
                    "log segment {} is missing (the checkpoint refers to it)",
                    self.store.path(segment).display()
                );
                *self.missing.lock().expect("pin lock") = Some(why.clone());
                Err(why)
            }
        }
    }
}

/// Writes `entries` as a segment at `path`, durably (through a temporary
/// file renamed into place; the caller syncs the directory).
fn write_segment(path: &Path, entries: &[Bytes]) -> std::io::Result<()> {
    let temporary = path.with_extension(format!("seg.tmp-{}", std::process::id()));
    let result = (|| {
        let file = std::fs::File::create(&temporary)?;
        let mut out = std::io::BufWriter::with_capacity(1 << 20, file);
        let mut crc = crc32c::crc32c(MAGIC);
        out.write_all(MAGIC)?;
        for entry in entries {
            let len = u32::try_from(entry.len())
                .map_err(|_| std::io::Error::other("a log entry above 4 GiB"))?
                .to_le_bytes();
            crc = crc32c::crc32c_append(crc, &len);
            crc = crc32c::crc32c_append(crc, entry);
            out.write_all(&len)?;
            out.write_all(entry)?;
        }
        out.write_all(&(entries.len() as u64).to_le_bytes())?;
        out.write_all(&crc.to_le_bytes())?;
        let file = out.into_inner().map_err(|e| e.into_error())?;
        file.sync_all()?;
        std::fs::rename(&temporary, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&temporary);
    }
    result
}

/// Checks the segment at `path` and maps it. The check reads the file
/// (from the page cache, after a write) rather than the mapping, so the
/// mapping's pages are not made resident: they become so only when an
/// entry is read, and stay page cache the kernel can drop.
fn map_segment(path: &Path, id: u64) -> anyhow::Result<Segment> {
    use std::io::Read;
    let damaged = |what: &str| anyhow::anyhow!("{}: a damaged log segment: {what}", path.display());
    let cannot = |what: &str, e: std::io::Error| {
        anyhow::anyhow!("{}: cannot {what} a log segment: {e}", path.display())
    };
    let mut file = std::fs::File::open(path).map_err(|e| cannot("open", e))?;
    let len = file.metadata().map_err(|e| cannot("read", e))?.len() as usize;
    if len < MAGIC.len() + TRAILER_BYTES {
        return Err(damaged("not a segment file"));
    }
    let body_end = len - TRAILER_BYTES;
    // One pass over the file: the crc of everything before the trailer,
    // and each entry's offset from the lengths.
    let mut reader = std::io::BufReader::with_capacity(1 << 20, &mut file);
    let mut magic = [0u8; 8];
    reader
        .read_exact(&mut magic)
        .map_err(|e| cannot("read", e))?;
    if &magic != MAGIC {
        return Err(damaged("not a segment file"));
    }
    let mut crc = crc32c::crc32c(&magic);
    let mut offsets = Vec::new();
    let mut at = MAGIC.len();
    let mut chunk = vec![0u8; 1 << 20];
    while at < body_end {
        if body_end - at < 4 {
            return Err(damaged("an entry's length is cut"));
        }
        let mut len_bytes = [0u8; 4];
        reader
            .read_exact(&mut len_bytes)
            .map_err(|e| cannot("read", e))?;
        crc = crc32c::crc32c_append(crc, &len_bytes);
        let entry_len = u32::from_le_bytes(len_bytes) as usize;
        at += 4;
        if body_end - at < entry_len {
            return Err(damaged("an entry is cut"));
        }
        offsets.push(at);
        let mut left = entry_len;
        while left > 0 {
            let n = left.min(chunk.len());
            reader
                .read_exact(&mut chunk[..n])
                .map_err(|e| cannot("read", e))?;
            crc = crc32c::crc32c_append(crc, &chunk[..n]);
            left -= n;
        }
        at += entry_len;
    }
    let mut trailer = [0u8; TRAILER_BYTES];
    reader
        .read_exact(&mut trailer)
        .map_err(|e| cannot("read", e))?;
    let count = u64::from_le_bytes(trailer[..8].try_into().expect("8 bytes"));
    if u32::from_le_bytes(trailer[8..].try_into().expect("4 bytes")) != crc {
        return Err(damaged("checksum mismatch"));
    }
    if offsets.len() as u64 != count {
        return Err(damaged("the entry count differs"));
    }
    drop(reader);
    // SAFETY: segment files are never written after they are renamed into
    // place (only removed, which keeps a mapping valid on Linux), so the
    // mapped bytes do not change under the slices taken from them.
    let map = unsafe { memmap2::Mmap::map(&file) }.map_err(|e| cannot("map", e))?;
    if map.len() != len {
        return Err(damaged("its length changed while it was read"));
    }
    let base = map.as_ptr() as usize;
    let whole = Bytes::from_owner(map);
    let mut entries = Vec::with_capacity(offsets.len());
    let mut bytes = 0u64;
    for (i, &offset) in offsets.iter().enumerate() {
        let end = offsets.get(i + 1).map_or(body_end, |next| next - 4);
        bytes += (end - offset) as u64;
        entries.push(whole.slice(offset..end));
    }
    Ok(Segment {
        id,
        base,
        len,
        offsets,
        entries: entries.into(),
        bytes,
    })
}
