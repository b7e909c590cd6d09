//! The node's eventual maps on disk (`<data_dir>/eventual/`): a checkpoint
//! of every local replica and the journal of records since it
//! (`amulet_dotted::service::durable`).
//!
//! - `checkpoint`: `[magic "AEVC"][generation u64][len u64][crc32c u32]`
//!   then the body (`Replicas::encode`); written to a temporary file,
//!   synced, renamed, the directory synced.
//! - `journal-<generation>`: records `[len u32][crc32c u32][body]`. A
//!   checkpoint of generation `g` holds every record of the journals
//!   below `g`; those are stale and removed, so a crash between the
//!   rename and their removal never replays a record twice. Recovery
//!   replays the journals from `g` up, in order: two when a crash came
//!   while a checkpoint was written in the background (see below). The file is preallocated with zeros
//!   (`amulet_storage::preallocate_file`, `PREALLOCATE_STEP_BYTES` ahead
//!   of its records), so a group commit's `fdatasync` writes the records
//!   only, not a new file size and blocks: the same lever as the acceptor
//!   logs' segments. A zero length ends the records (no record is empty).
//!   A version before preallocation stops at such zeros with an error;
//!   a clean stop leaves an empty journal (its checkpoint holds
//!   everything), which every version reads.
//!
//! - `incarnation`: this directory's identity, a random non-zero u64 in
//!   decimal, written (synced, the directory synced) when the directory is
//!   made. The node registers it in the partition map; a directory made
//!   afresh where the map names another one is a lost store, and the
//!   cluster gives the node's eventual replicas new ids (issue 23).
//!
//! A checkpoint is written off the event loop
//! ([`EventualStore::checkpoint_in_background`]): the loop syncs the
//! journal, starts `journal-<g + 1>` for the records that follow, and a
//! thread encodes the replicas taken at that point, writes them as
//! checkpoint `g + 1` and then removes `journal-<g>`. Writing a store of
//! tens of megabytes and syncing it took the loop (and every eventual
//! write of the node) hundreds of milliseconds; now the loop pays for
//! the copy of the replicas and one directory sync. One write is in
//! flight at a time; a failed one stops the node at the next poll, as a
//! failed synchronous one did.
//!
//! Recovery replays the last journal up to its
//! first torn or damaged record (a crash mid-append) and cuts it there: the
//! records after it were never synced, so nothing they caused was sent.
//! The cut file is preallocated again, so everything after the kept
//! records reads as zeros: a whole record written after a torn one before
//! the crash can never be replayed behind the records written after the
//! restart.

use amulet_dotted::service::durable::{Record, Replicas};
use amulet_storage::{preallocate_file, SteadyWriteback, PREALLOCATE_STEP_BYTES};
use anyhow::{bail, Context};
use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

const CHECKPOINT_MAGIC: &[u8; 4] = b"AEVC";
const CHECKPOINT_HEADER_BYTES: usize = 4 + 8 + 8 + 4;
const RECORD_HEADER_BYTES: usize = 8;
/// A record longer than this is damage, not a record.
const RECORD_BYTES_MAX: usize = 256 << 20;

/// The eventual directory of one node.
pub(crate) struct EventualStore {
    dir: PathBuf,
    generation: u64,
    journal: File,
    /// Records appended since the last sync.
    pending: Vec<u8>,
    /// Bytes of records in the journal (written out; the file is longer,
    /// preallocated).
    journal_bytes: u64,
    /// The journal file's length: zeros past `journal_bytes`.
    allocated: u64,
    /// This directory's identity (see the module's `incarnation`).
    incarnation: u64,
    /// Whether syncs reach the disk (off when every stream of the node
    /// keeps its log in memory: then writes reach the OS only, which
    /// survives a process crash, not a machine crash).
    fsync: bool,
    /// The checkpoint being written in the background, if any.
    writing: Option<std::thread::JoinHandle<anyhow::Result<()>>>,
}

impl EventualStore {
    /// Opens the directory, recovering the replicas it holds.
    pub(crate) fn open(data_dir: &Path, fsync: bool) -> anyhow::Result<(EventualStore, Replicas)> {
        let dir = data_dir.join("eventual");
        std::fs::create_dir_all(&dir)
            .with_context(|| format!("cannot create {}", dir.display()))?;
        let _ = std::fs::remove_file(dir.join("checkpoint.tmp"));
        let incarnation = read_or_make_incarnation(&dir)?;
        let (checkpointed, mut replicas) = read_checkpoint(&dir.join("checkpoint"))?;
        remove_journals_below(&dir, checkpointed)?;
        // The journals the checkpoint does not hold, oldest first: its
        // own generation's, and the next one's when a crash came while
        // the next checkpoint was written.
        let mut journals = journal_generations(&dir)?;
        journals.sort_unstable();
        let generation = journals.last().copied().unwrap_or(checkpointed);
        let journal_path = dir.join(format!("journal-{generation}"));
        let mut good = 0u64;
        for g in journals {
            let path = dir.join(format!("journal-{g}"));
            let (kept, torn) = replay_journal(&path, &mut replicas)?;
            if g != generation && torn {
                // It was synced whole before the next journal began.
                bail!("{}: damaged eventual journal (a record at {kept} does not read, and a later journal follows)", path.display());
            }
            good = kept;
        }
        let journal = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&journal_path)
            .with_context(|| format!("cannot open {}", journal_path.display()))?;
        // Cut: the next sync's preallocation extends it with zeros (see
        // the module's recovery).
        journal.set_len(good)?;
        let store = EventualStore {
            dir,
            generation,
            journal,
            pending: Vec::new(),
            journal_bytes: good,
            allocated: good,
            incarnation,
            fsync,
            writing: None,
        };
        Ok((store, replicas))
    }

    /// Appends `record` (written and synced by [`EventualStore::sync`]).
    pub(crate) fn append(&mut self, record: &Record) {
        let body = record.encode();
        self.pending
            .extend_from_slice(&(body.len() as u32).to_le_bytes());
        self.pending
            .extend_from_slice(&crc32c::crc32c(&body).to_le_bytes());
        self.pending.extend_from_slice(&body);
    }

    /// This directory's identity.
    pub(crate) fn incarnation(&self) -> u64 {
        self.incarnation
    }

    /// Whether records wait for a sync.
    pub(crate) fn dirty(&self) -> bool {
        !self.pending.is_empty()
    }

    /// Bytes of records waiting for a sync.
    pub(crate) fn pending_bytes(&self) -> usize {
        self.pending.len()
    }

    /// Preallocates the journal past `more` bytes after its records, a
    /// step ahead, when they would reach its end. The next `fdatasync`
    /// commits the new length once; the ones after it the records only.
    fn allocate(&mut self, more: u64) -> anyhow::Result<()> {
        let needed = self.journal_bytes + more;
        if needed < self.allocated {
            return Ok(());
        }
        let len = needed + PREALLOCATE_STEP_BYTES;
        preallocate_file(&self.journal, len).context("eventual journal preallocation")?;
        self.allocated = len;
        Ok(())
    }

    /// Writes the appended records and syncs them (one group commit).
    pub(crate) fn sync(&mut self) -> anyhow::Result<()> {
        if self.pending.is_empty() {
            return Ok(());
        }
        self.allocate(self.pending.len() as u64)?;
        self.journal
            .write_all_at(&self.pending, self.journal_bytes)
            .context("eventual journal write")?;
        if self.fsync {
            self.journal.sync_data().context("eventual journal sync")?;
        }
        self.journal_bytes += self.pending.len() as u64;
        self.pending.clear();
        Ok(())
    }

    /// Bytes in the journal since the last checkpoint.
    pub(crate) fn journal_bytes(&self) -> u64 {
        self.journal_bytes
    }

    /// Starts writing `replicas` (everything journaled so far: synced
    /// first) as the next generation's checkpoint on a thread of its own,
    /// and the next generation's empty journal for the records after it.
    /// Returns false, doing nothing, while the previous write is still in
    /// flight (the journal grows meanwhile).
    pub(crate) fn checkpoint_in_background(&mut self, replicas: Replicas) -> anyhow::Result<bool> {
        self.poll_checkpoint()?;
        if self.writing.is_some() {
            return Ok(false);
        }
        self.sync()?;
        let next = self.start_journal()?;
        let dir = self.dir.clone();
        let thread = std::thread::Builder::new()
            .name("eventual-checkpoint".into())
            .spawn(move || write_checkpoint(&dir, next, &replicas))
            .context("cannot start the eventual checkpoint's thread")?;
        self.writing = Some(thread);
        Ok(true)
    }

    /// Whether a background checkpoint is being written.
    pub(crate) fn checkpoint_in_flight(&self) -> bool {
        self.writing.is_some()
    }

    /// Collects a finished background checkpoint: its error, if it
    /// failed.
    pub(crate) fn poll_checkpoint(&mut self) -> anyhow::Result<()> {
        if self.writing.as_ref().is_some_and(|t| t.is_finished()) {
            self.wait_checkpoint()?;
        }
        Ok(())
    }

    /// Waits for the background checkpoint in flight, if any.
    fn wait_checkpoint(&mut self) -> anyhow::Result<()> {
        match self.writing.take() {
            None => Ok(()),
            Some(thread) => thread
                .join()
                .map_err(|_| anyhow::anyhow!("the eventual checkpoint's thread panicked"))?,
        }
    }

    /// Writes `replicas` (everything journaled so far, synced first) as
    /// the next generation's checkpoint and starts its empty journal, on
    /// the caller's thread (a clean stop: the restart replays nothing).
    pub(crate) fn checkpoint(&mut self, replicas: &Replicas) -> anyhow::Result<()> {
        self.wait_checkpoint()?;
        self.sync()?;
        let next = self.generation + 1;
        write_checkpoint(&self.dir, next, replicas)?;
        self.start_journal()?;
        Ok(())
    }

    /// Moves the records' appends to the next generation's journal,
    /// created empty and its name synced; returns that generation.
    fn start_journal(&mut self) -> anyhow::Result<u64> {
        let next = self.generation + 1;
        let journal_path = self.dir.join(format!("journal-{next}"));
        self.journal = File::create(&journal_path)
            .with_context(|| format!("cannot create {}", journal_path.display()))?;
        File::open(&self.dir).and_then(|d| d.sync_all())?;
        self.generation = next;
        // Preallocated at its first sync: a clean stop (which ends with
        // a checkpoint) leaves an empty journal, which a version before
        // preallocation also reads.
        self.journal_bytes = 0;
        self.allocated = 0;
        Ok(next)
    }
}

impl Drop for EventualStore {
    fn drop(&mut self) {
        // A write in flight finishes (or fails) on its own: either way the
        // files on disk recover (see the module's recovery).
        if let Some(thread) = self.writing.take() {
            let _ = thread.join();
        }
    }
}

/// Writes checkpoint `generation` (holding every journal below it):
/// a temporary file, synced, renamed over the last one, the directory
/// synced; then removes the journals it holds.
fn write_checkpoint(dir: &Path, generation: u64, replicas: &Replicas) -> anyhow::Result<()> {
    #[allow(clippy::disallowed_methods)] // measures the write, not protocol time
    let started = std::time::Instant::now();
    let body = replicas.encode();
    let mut header = Vec::with_capacity(CHECKPOINT_HEADER_BYTES);
    header.extend_from_slice(CHECKPOINT_MAGIC);
    header.extend_from_slice(&generation.to_le_bytes());
    header.extend_from_slice(&(body.len() as u64).to_le_bytes());
    header.extend_from_slice(&crc32c::crc32c(&body).to_le_bytes());
    let temporary = dir.join("checkpoint.tmp");
    let written = (|| -> std::io::Result<()> {
        let mut out = File::create(&temporary)?;
        out.write_all(&header)?;
        SteadyWriteback::new(&mut out)?.write_all(&body)?;
        out.sync_all()?;
        drop(out);
        std::fs::rename(&temporary, dir.join("checkpoint"))?;
        File::open(dir).and_then(|d| d.sync_all())
    })();
    written.with_context(|| {
        format!(
            "cannot write the eventual checkpoint {}",
            temporary.display()
        )
    })?;
    remove_journals_below(dir, generation)?;
    tracing::debug!(
        generation,
        bytes = body.len(),
        micros = started.elapsed().as_micros() as u64,
        "eventual checkpoint written"
    );
    Ok(())
}

/// Replays the records of journal `path` into `replicas`: the bytes of
/// whole records, and whether something other than zeros follows them
/// (a torn or damaged record).
fn replay_journal(path: &Path, replicas: &mut Replicas) -> anyhow::Result<(u64, bool)> {
    let mut bytes = Vec::new();
    File::open(path)
        .and_then(|mut f| f.read_to_end(&mut bytes))
        .with_context(|| format!("cannot read {}", path.display()))?;
    let mut at = 0usize;
    while let Some((body, next)) = record_at(&bytes, at) {
        let record = Record::decode(body)
            .map_err(|e| anyhow::anyhow!("{}: record at {at}: {e}", path.display()))?;
        replicas
            .apply(&record)
            .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
        at = next;
    }
    let torn = bytes[at..].iter().any(|&b| b != 0);
    if torn {
        tracing::warn!(
            journal = %path.display(),
            kept = at,
            cut = bytes.len() - at,
            "eventual journal: torn tail cut"
        );
    }
    Ok((at as u64, torn))
}

/// The checkpoint's generation and replicas (generation 0, none, when
/// there is no checkpoint yet).
fn read_checkpoint(path: &Path) -> anyhow::Result<(u64, Replicas)> {
    let bytes = match std::fs::read(path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok((0, Replicas::default())),
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
    };
    if bytes.len() < CHECKPOINT_HEADER_BYTES || &bytes[..4] != CHECKPOINT_MAGIC {
        bail!("{}: not an eventual checkpoint", path.display());
    }
    let generation = u64::from_le_bytes(bytes[4..12].try_into().expect("8 bytes"));
    let len = u64::from_le_bytes(bytes[12..20].try_into().expect("8 bytes"));
    let crc = u32::from_le_bytes(bytes[20..24].try_into().expect("4 bytes"));
    let body = &bytes[CHECKPOINT_HEADER_BYTES..];
    if body.len() as u64 != len || crc32c::crc32c(body) != crc {
        bail!("{}: damaged eventual checkpoint", path.display());
    }
    let replicas =
        Replicas::decode(body).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
    Ok((generation, replicas))
}

/// The body of the record at `at` and where the next starts, or `None`
/// at the end (the file's, or the preallocated zeros': a zero length) or
/// at a torn or damaged record.
fn record_at(bytes: &[u8], at: usize) -> Option<(&[u8], usize)> {
    let header = bytes.get(at..at + RECORD_HEADER_BYTES)?;
    let len = u32::from_le_bytes(header[..4].try_into().expect("4 bytes")) as usize;
    let crc = u32::from_le_bytes(header[4..].try_into().expect("4 bytes"));
    if len == 0 || len > RECORD_BYTES_MAX {
        return None;
    }
    let start = at + RECORD_HEADER_BYTES;
    let body = bytes.get(start..start + len)?;
    (crc32c::crc32c(body) == crc).then_some((body, start + len))
}

/// The generations of the journals in `dir`.
fn journal_generations(dir: &Path) -> anyhow::Result<Vec<u64>> {
    let mut generations = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let name = entry?.file_name();
        let Some(name) = name.to_str() else { continue };
        if let Some(g) = name
            .strip_prefix("journal-")
            .and_then(|g| g.parse::<u64>().ok())
        {
            generations.push(g);
        }
    }
    Ok(generations)
}

/// Removes the journals a checkpoint of `generation` holds.
fn remove_journals_below(dir: &Path, generation: u64) -> anyhow::Result<()> {
    for g in journal_generations(dir)? {
        if g < generation {
            std::fs::remove_file(dir.join(format!("journal-{g}")))?;
        }
    }
    Ok(())
}

/// The directory's incarnation: read, or made when the directory has none
/// (a new directory, or one from before incarnations, whose replicas the
/// partition map then records as this one's). A file that does not hold
/// one is an error, not a new identity: that would retire replicas whose
/// state is here.
fn read_or_make_incarnation(dir: &Path) -> anyhow::Result<u64> {
    let path = dir.join("incarnation");
    match std::fs::read_to_string(&path) {
        Ok(text) => match text.trim().parse::<u64>() {
            Ok(n) if n != 0 => Ok(n),
            _ => bail!("{} does not hold an incarnation: {text:?}", path.display()),
        },
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let n = loop {
                let n: u64 = rand::random();
                if n != 0 {
                    break n;
                }
            };
            let tmp = dir.join("incarnation.tmp");
            let mut file =
                File::create(&tmp).with_context(|| format!("cannot create {}", tmp.display()))?;
            file.write_all(format!("{n}\n").as_bytes())?;
            file.sync_all()?;
            std::fs::rename(&tmp, &path)
                .with_context(|| format!("cannot write {}", path.display()))?;
            File::open(dir)?.sync_all()?;
            Ok(n)
        }
        Err(e) => Err(e).with_context(|| format!("cannot read {}", path.display())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use amulet_dotted::{ReplicaId, Ring};

    fn dir(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("amulet-eventual-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        dir
    }

    fn created(id: u64) -> Record {
        Record::Created {
            map: "carts".into(),
            created_at: 3,
            replica: ReplicaId(id),
            ring: Ring::new((1..=4).map(ReplicaId).collect(), 2),
            merkle: false,
        }
    }

    #[test]
    fn dotteddb_durability_records_survive_a_restart_and_a_torn_tail_is_cut() {
        let d = dir("torn");
        let (mut store, replicas) = EventualStore::open(&d, true).unwrap();
        assert!(replicas.maps.is_empty());
        store.append(&created(1));
        store.sync().unwrap();
        store.append(&created(2));
        store.sync().unwrap();
        let whole = store.journal_bytes() as usize;
        drop(store);
        // A crash mid-append: half a record after the whole ones.
        let journal = d.join("eventual/journal-0");
        let mut bytes = std::fs::read(&journal).unwrap();
        bytes[whole..whole + 6].copy_from_slice(&[9, 0, 0, 0, 1, 2]);
        std::fs::write(&journal, &bytes).unwrap();
        let (store, replicas) = EventualStore::open(&d, true).unwrap();
        assert_eq!(replicas.maps["carts"].1.len(), 2);
        assert_eq!(store.journal_bytes(), whole as u64);
        let after = std::fs::read(&journal).unwrap();
        assert_eq!(after[..whole], bytes[..whole]);
        assert!(
            after[whole..].iter().all(|&b| b == 0),
            "the torn bytes are cut"
        );
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn dotteddb_durability_the_journal_is_preallocated_and_its_zeros_end_the_records() {
        let d = dir("preallocated");
        let (mut store, _) = EventualStore::open(&d, true).unwrap();
        store.append(&created(1));
        store.sync().unwrap();
        let written = store.journal_bytes();
        drop(store);
        let journal = d.join("eventual/journal-0");
        let len = std::fs::metadata(&journal).unwrap().len();
        assert!(
            len >= PREALLOCATE_STEP_BYTES && len > written,
            "{len} bytes"
        );
        // A restart without a checkpoint (a crash): the zeros are no
        // record and no torn tail.
        let (mut store, replicas) = EventualStore::open(&d, true).unwrap();
        assert_eq!(replicas.maps["carts"].1.len(), 1);
        assert_eq!(store.journal_bytes(), written);
        store.append(&created(2));
        store.sync().unwrap();
        drop(store);
        let (_, replicas) = EventualStore::open(&d, true).unwrap();
        assert_eq!(replicas.maps["carts"].1.len(), 2);
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn dotteddb_durability_a_whole_record_behind_a_torn_one_is_never_replayed() {
        // A crash kept record 3 but tore record 2 (sectors persist out of
        // order). Recovery keeps record 1; record 4, written after the
        // restart where record 2 was and just as long, must not be
        // followed by record 3 at the next recovery.
        let d = dir("behind-torn");
        let (mut store, _) = EventualStore::open(&d, true).unwrap();
        store.append(&created(1));
        store.sync().unwrap();
        let first = store.journal_bytes() as usize;
        store.append(&created(2));
        store.append(&created(3));
        store.sync().unwrap();
        drop(store);
        let journal = d.join("eventual/journal-0");
        let mut bytes = std::fs::read(&journal).unwrap();
        bytes[first + RECORD_HEADER_BYTES + 2] ^= 0xff;
        std::fs::write(&journal, &bytes).unwrap();
        let (mut store, replicas) = EventualStore::open(&d, true).unwrap();
        assert_eq!(replicas.maps["carts"].1.len(), 1);
        store.append(&created(4));
        store.sync().unwrap();
        drop(store);
        let (_, replicas) = EventualStore::open(&d, true).unwrap();
        let ids: Vec<u64> = replicas.maps["carts"].1.keys().map(|r| r.0).collect();
        assert_eq!(ids, vec![1, 4]);
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn dotteddb_durability_a_checkpoint_replaces_the_journal_without_replaying_it_twice() {
        let d = dir("checkpoint");
        let (mut store, mut replicas) = EventualStore::open(&d, false).unwrap();
        store.append(&created(1));
        replicas.apply(&created(1)).unwrap();
        store.checkpoint(&replicas).unwrap();
        // Empty until its first sync (what a clean stop leaves).
        assert_eq!(
            std::fs::metadata(d.join("eventual/journal-1"))
                .unwrap()
                .len(),
            0
        );
        store.append(&created(2));
        store.sync().unwrap();
        drop(store);
        let (_, recovered) = EventualStore::open(&d, false).unwrap();
        assert_eq!(recovered.maps["carts"].1.len(), 2);
        // A stale journal of the previous generation left behind by a
        // crash is not replayed (it would make replica 1 twice).
        std::fs::write(d.join("eventual/journal-0"), b"").unwrap();
        let (_, again) = EventualStore::open(&d, false).unwrap();
        assert_eq!(again, recovered);
        assert!(!d.join("eventual/journal-0").exists());
        let _ = std::fs::remove_dir_all(&d);
    }

    /// Waits (bounded) for the background checkpoint in flight.
    fn settle(store: &mut EventualStore) {
        for _ in 0..2_000 {
            store.poll_checkpoint().unwrap();
            if !store.checkpoint_in_flight() {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        panic!("the background checkpoint did not finish in 10 s");
    }

    /// What a crash leaves when the loop had started journal 1 for
    /// replica 2 but the checkpoint holding journal 0 (replica 1) never
    /// reached its rename.
    fn two_journals_without_their_checkpoint(d: &Path) {
        let (mut store, _) = EventualStore::open(d, true).unwrap();
        store.append(&created(1));
        store.sync().unwrap();
        assert_eq!(store.start_journal().unwrap(), 1);
        store.append(&created(2));
        store.sync().unwrap();
    }

    #[test]
    fn dotteddb_durability_a_background_checkpoint_holds_the_journal_before_it_only() {
        let d = dir("background");
        let (mut store, mut replicas) = EventualStore::open(&d, true).unwrap();
        store.append(&created(1));
        replicas.apply(&created(1)).unwrap();
        assert!(store.checkpoint_in_background(replicas.clone()).unwrap());
        // Records after the copy go to the next journal while it is
        // written; a second checkpoint waits for the first.
        store.append(&created(2));
        store.sync().unwrap();
        replicas.apply(&created(2)).unwrap();
        if store.checkpoint_in_flight() {
            assert!(!store.checkpoint_in_background(replicas.clone()).unwrap());
        }
        settle(&mut store);
        assert!(
            !d.join("eventual/journal-0").exists(),
            "held by checkpoint 1"
        );
        assert!(d.join("eventual/journal-1").exists());
        drop(store);
        let (_, recovered) = EventualStore::open(&d, true).unwrap();
        assert_eq!(recovered, replicas);
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn dotteddb_durability_a_crash_while_a_checkpoint_is_written_replays_both_journals() {
        // The loop started journal 1 but the checkpoint holding journal 0
        // never reached its rename.
        let d = dir("crash-mid-checkpoint");
        two_journals_without_their_checkpoint(&d);
        std::fs::write(d.join("eventual/checkpoint.tmp"), b"half a checkpoint").unwrap();
        let (mut store, replicas) = EventualStore::open(&d, true).unwrap();
        let ids: Vec<u64> = replicas.maps["carts"].1.keys().map(|r| r.0).collect();
        assert_eq!(ids, vec![1, 2]);
        // Appends continue in the last journal; the next checkpoint
        // holds both.
        store.append(&created(3));
        store.sync().unwrap();
        drop(store);
        let (mut store, mut replicas) = EventualStore::open(&d, true).unwrap();
        assert_eq!(replicas.maps["carts"].1.len(), 3);
        store.checkpoint(&replicas).unwrap();
        assert!(!d.join("eventual/journal-0").exists());
        assert!(!d.join("eventual/journal-1").exists());
        store.append(&created(4));
        store.sync().unwrap();
        replicas.apply(&created(4)).unwrap();
        drop(store);
        let (_, recovered) = EventualStore::open(&d, true).unwrap();
        assert_eq!(recovered, replicas);
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn a_damaged_journal_before_the_last_stops_the_node_with_its_path() {
        let d = dir("damaged-journal");
        two_journals_without_their_checkpoint(&d);
        let journal = d.join("eventual/journal-0");
        let mut bytes = std::fs::read(&journal).unwrap();
        bytes[RECORD_HEADER_BYTES + 2] ^= 0xff;
        std::fs::write(&journal, &bytes).unwrap();
        let error = EventualStore::open(&d, true).err().unwrap().to_string();
        assert!(
            error.contains("journal-0") && error.contains("damaged"),
            "{error}"
        );
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn a_damaged_checkpoint_stops_the_node_with_its_path() {
        let d = dir("damaged");
        let (mut store, replicas) = EventualStore::open(&d, false).unwrap();
        store.checkpoint(&replicas).unwrap();
        drop(store);
        let path = d.join("eventual/checkpoint");
        let mut bytes = std::fs::read(&path).unwrap();
        let last = bytes.len() - 1;
        bytes[last] ^= 1;
        std::fs::write(&path, &bytes).unwrap();
        let error = EventualStore::open(&d, false).err().unwrap().to_string();
        assert!(error.contains("checkpoint"), "{error}");
        let _ = std::fs::remove_dir_all(&d);
    }
}
