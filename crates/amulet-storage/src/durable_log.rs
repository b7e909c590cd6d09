//! The durable acceptor log (thesis §3.4.1, A.4): segmented, checksummed,
//! recovering from a torn tail, trimming to an instance.
//!
//! Records (see `record.rs`) are appended to the newest segment file
//! `<sequence:016x>.log`, preallocated with zeros ahead of its append point
//! in steps of [`PREALLOCATE_STEP_BYTES`] (a group commit's fdatasync then
//! writes data, not the file's size, except once a step: `disk.rs`); a
//! segment is closed (synced) when it reaches
//! `segment_bytes_max`, and the next one starts with a snapshot of the
//! promises and trim point. Trimming writes a trim record; a segment file
//! is deleted once the first record of the newest closed segment restates
//! a trim point above all its votes (so deletion lags trimming by about a
//! segment, and no torn tail can take away the trim point that allowed it).
//! Votes stay on disk; an in-memory index maps each instance to its latest
//! vote record, so a read is one positioned read of the page cache.
//!
//! Recovery replays every segment in order. In the newest segment, damage
//! that is a crash's doing is a torn tail: a short record, zeros, a bad
//! checksum in the last record, or a damaged record with a piece between
//! sector boundaries all zeros (a sector the crash lost: `record.rs`). No
//! sync completed after such a record was written, so nothing after it was
//! acted on: the file is cut there. Any other damage is
//! [`StorageError::Corrupt`]: the log cannot vouch for the votes after it,
//! and the node must not start.
//!
//! What each mode survives, and how the log knows:
//! - `Sync`: the runtime syncs before any message that depends on a write
//!   leaves the process, so whatever a crash loses was never acted on. The
//!   log is always intact.
//! - `Async`: synced in the background. A process crash loses nothing (the
//!   OS keeps written data); a machine crash may lose the unsynced tail,
//!   including votes already sent. The log records the machine's boot id
//!   when it opens and a close record when it is closed; it is intact only
//!   if it was closed cleanly or the machine did not restart since it was
//!   opened. A log that is not intact writes an amnesia record and stays
//!   not intact for good: the acceptor returns as a learner only.
//!
//! The same files can hold several streams ([`crate::NodeLog`]): each
//! record is then tagged with its stream, every segment restates each
//! stream's promises and trim point after its own first record, and a
//! segment goes once every stream's votes in it lie below that stream's
//! restated trim point. [`LogCore`] is that machinery; a [`DurableLog`] is
//! the core with one untagged stream.

use crate::disk::Disk;
use crate::log::{AcceptorLog, LogRecord, Recovered, StorageError};
use crate::record::{decode_at, Record, Snapshot};
use crate::replay::replay;
use amulet_types::{Ballot, Instance, StreamId};
use bytes::BytesMut;
use std::collections::BTreeMap;

/// When the log is made durable.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Durability {
    /// Synced in the background (group commit on a timer).
    Async,
    /// Synced before any dependent message leaves.
    Sync,
}

/// How far ahead of a segment's append point its file is preallocated: a
/// group commit that crosses the preallocated end commits a new file size
/// once a step, and a node's idle log holds at most this much of zeros
/// (test clusters start many nodes on one disk).
pub const PREALLOCATE_STEP_BYTES: u64 = 4 << 20;

/// Default size at which a segment is closed and a new one started.
pub const SEGMENT_BYTES_DEFAULT: u64 = 64 << 20;

/// Which stream a record belongs to: `None` for a per-stream log's own
/// (untagged) records, `Some` for a stream of a node-wide log.
pub(crate) type Tag = Option<StreamId>;

#[derive(Clone, Copy, Debug)]
pub(crate) struct Entry {
    pub(crate) segment: u64,
    pub(crate) offset: u64,
    pub(crate) len: u32,
    pub(crate) ballot: Ballot,
    pub(crate) decided: bool,
}

#[derive(Clone, Debug)]
pub(crate) struct Segment {
    pub(crate) sequence: u64,
    pub(crate) len: u64,
    /// Per stream, the trim point restated by the segment's header
    /// records (its first record, and a node log's restatements).
    pub(crate) header_trimmed_below: BTreeMap<Tag, Instance>,
    /// Per stream, the highest instance with a vote or decided record in
    /// this segment.
    max_instance: BTreeMap<Tag, Instance>,
}

impl Segment {
    pub(crate) fn new(sequence: u64) -> Segment {
        Segment {
            sequence,
            len: 0,
            header_trimmed_below: BTreeMap::new(),
            max_instance: BTreeMap::new(),
        }
    }

    pub(crate) fn touch(&mut self, tag: Tag, instance: Instance) {
        let max = self.max_instance.entry(tag).or_insert(instance);
        *max = (*max).max(instance);
    }
}

pub(crate) fn segment_name(sequence: u64) -> String {
    format!("{sequence:016x}.log")
}

pub(crate) fn parse_segment_name(name: &str) -> Option<u64> {
    let hex = name.strip_suffix(".log")?;
    if hex.len() != 16 {
        return None;
    }
    u64::from_str_radix(hex, 16).ok()
}

/// One stream's acceptor state in a log.
#[derive(Clone, Debug, Default)]
pub(crate) struct StreamState {
    pub(crate) index: BTreeMap<Instance, Entry>,
    pub(crate) promised: Ballot,
    pub(crate) instance_promises: BTreeMap<Instance, Ballot>,
    pub(crate) trimmed_below: Instance,
    pub(crate) end: Instance,
    pub(crate) amnesic: bool,
    recovered: Recovered,
}

impl StreamState {
    fn snapshot(&self, boot_id: u128) -> Snapshot {
        Snapshot {
            promised: self.promised,
            instance_promises: self
                .instance_promises
                .iter()
                .map(|(i, b)| (*i, *b))
                .collect(),
            trimmed_below: self.trimmed_below,
            end: self.end,
            boot_id,
            amnesic: self.amnesic,
        }
    }

    pub(crate) fn absorb(&mut self, snapshot: &Snapshot) {
        self.promised = self.promised.max(snapshot.promised);
        self.trimmed_below = self.trimmed_below.max(snapshot.trimmed_below);
        self.end = self.end.max(snapshot.end);
        self.amnesic |= snapshot.amnesic;
        for (instance, ballot) in &snapshot.instance_promises {
            let entry = self.instance_promises.entry(*instance).or_insert(*ballot);
            *entry = (*entry).max(*ballot);
        }
    }

    /// Drops what lies below the trim point (after replay).
    fn settle(&mut self) {
        self.index = self.index.split_off(&self.trimmed_below);
        self.instance_promises = self.instance_promises.split_off(&self.trimmed_below);
        self.end = self.end.max(self.trimmed_below);
    }

    fn recovered_now(&self, intact: bool) -> Recovered {
        let snapshot = self.snapshot(0);
        Recovered {
            promised: snapshot.promised,
            instance_promises: snapshot.instance_promises,
            trimmed_below: snapshot.trimmed_below,
            end: snapshot.end,
            intact,
        }
    }
}

/// The segmented files of one or more streams' acceptor logs on a
/// [`Disk`]. Not an [`AcceptorLog`] itself: [`DurableLog`] is its
/// one-stream form and [`crate::NodeLog`] hands out one log per stream.
pub(crate) struct LogCore<D: Disk> {
    disk: D,
    durability: Durability,
    segment_bytes_max: u64,
    /// Oldest first; the last one is appended to.
    segments: Vec<Segment>,
    streams: BTreeMap<Tag, StreamState>,
    dirty: bool,
    /// Bytes the torn tail repair cut off at open (for logs and tests).
    torn_bytes: u64,
    /// Records written to the newest segment but not yet handed to the
    /// disk: a flush round's records go out in one write (`write_out`,
    /// before any message leaves, and before every sync) instead of one
    /// system call each.
    pending: BytesMut,
    /// Where `pending` starts in the newest segment.
    pending_from: u64,
    /// How far the newest segment's file is preallocated.
    preallocated: u64,
}

impl<D: Disk> LogCore<D> {
    /// Opens (or creates) the files on `disk`, repairing a torn tail. Every
    /// stream found is marked amnesic if the files cannot vouch for it.
    pub(crate) fn open(
        disk: D,
        durability: Durability,
        segment_bytes_max: u64,
    ) -> Result<LogCore<D>, StorageError> {
        let mut disk = disk;
        let replay = replay(&mut disk)?;
        let fresh = replay.segments.is_empty();
        let boot_id = disk.boot_id();
        let intact = match durability {
            Durability::Sync => true,
            Durability::Async => fresh || replay.closed || replay.last_boot == Some(boot_id),
        };
        let mut core = LogCore {
            disk,
            durability,
            segment_bytes_max: segment_bytes_max.max(256),
            segments: replay.segments,
            streams: replay.streams,
            dirty: false,
            torn_bytes: replay.torn_bytes,
            pending: BytesMut::new(),
            pending_from: 0,
            preallocated: 0,
        };
        core.streams.entry(None).or_default();
        match core.segments.last() {
            None => core.start_segment(1)?,
            // Replay cut the newest segment to its last record; appends go
            // on into zeros again.
            Some(newest) if newest.len < core.segment_bytes_max => {
                let (sequence, len) = (newest.sequence, newest.len);
                core.preallocate_past(sequence, len)?;
            }
            Some(_) => {}
        }
        let tags: Vec<Tag> = core.streams.keys().copied().collect();
        for tag in tags {
            let state = core.streams.get_mut(&tag).expect("listed");
            state.settle();
            let stream_intact = intact && !state.amnesic;
            if !stream_intact && !state.amnesic {
                state.amnesic = true;
                core.append(tag, &Record::Amnesia)?;
            }
            let state = core.streams.get_mut(&tag).expect("listed");
            state.recovered = state.recovered_now(stream_intact);
        }
        core.append(None, &Record::Boot { boot_id })?;
        core.sync_now()?;
        Ok(core)
    }

    pub(crate) fn disk(&self) -> &D {
        &self.disk
    }

    pub(crate) fn torn_bytes(&self) -> u64 {
        self.torn_bytes
    }

    pub(crate) fn segment_count(&self) -> usize {
        self.segments.len()
    }

    pub(crate) fn durability(&self) -> Durability {
        self.durability
    }

    /// Whether the files know `stream` (it has written to them).
    pub(crate) fn knows(&self, stream: StreamId) -> bool {
        self.streams.contains_key(&Some(stream))
    }

    /// Streams the files hold, other than the untagged one.
    pub(crate) fn tagged_streams(&self) -> Vec<StreamId> {
        self.streams.keys().filter_map(|t| *t).collect()
    }

    /// Starts a stream new to the files: a restatement record says it
    /// exists, synced at once, so that after a machine crash the files
    /// still know the stream and can tell it lost writes.
    pub(crate) fn add_stream(&mut self, stream: StreamId) -> Result<(), StorageError> {
        if self.knows(stream) {
            return Ok(());
        }
        let state = StreamState {
            recovered: Recovered {
                intact: true,
                ..Recovered::default()
            },
            ..StreamState::default()
        };
        let snapshot = state.snapshot(self.disk.boot_id());
        self.streams.insert(Some(stream), state);
        // Rolled over first: the record names the segment it lands in.
        self.roll_if_full()?;
        let sequence = self.segments.last().expect("a segment is open").sequence;
        self.write(Some(stream), &Record::Segment { sequence, snapshot })?;
        self.sync()
    }

    fn state(&self, tag: Tag) -> &StreamState {
        self.streams.get(&tag).expect("a stream of this log")
    }

    fn state_mut(&mut self, tag: Tag) -> &mut StreamState {
        self.streams.get_mut(&tag).expect("a stream of this log")
    }

    /// Starts segment `sequence` with its header: a snapshot of the
    /// untagged stream, then one of every tagged stream. The previous
    /// segment (if any) was synced by the caller.
    fn start_segment(&mut self, sequence: u64) -> Result<(), StorageError> {
        let name = segment_name(sequence);
        debug_assert!(
            self.pending.is_empty(),
            "the previous segment was written out"
        );
        self.disk.create(&name)?;
        // Appends then overwrite allocated zeros, so a group commit's
        // fdatasync writes data only, never the file's size (`disk.rs`).
        self.preallocated = 0;
        self.preallocate_past(sequence, 0)?;
        self.disk.sync_dir()?;
        let mut segment = Segment::new(sequence);
        for (tag, state) in &self.streams {
            segment
                .header_trimmed_below
                .insert(*tag, state.trimmed_below);
        }
        self.segments.push(segment);
        // The untagged stream (always there, `open` makes it) first: it is
        // the record replay checks a segment starts with; `None` sorts
        // before every tagged stream.
        let boot_id = self.disk.boot_id();
        let headers: Vec<(Tag, Snapshot)> = self
            .streams
            .iter()
            .map(|(tag, state)| (*tag, state.snapshot(boot_id)))
            .collect();
        debug_assert_eq!(headers.first().map(|(t, _)| *t), Some(None));
        for (tag, snapshot) in headers {
            self.write(tag, &Record::Segment { sequence, snapshot })?;
        }
        Ok(())
    }

    /// Appends a record, rolling to a new segment when the current one is
    /// full. Returns where the record went.
    fn append(&mut self, tag: Tag, record: &Record) -> Result<(u64, u64, u32), StorageError> {
        self.roll_if_full()?;
        self.write(tag, record)
    }

    /// Closes the current segment and starts the next if it is full.
    fn roll_if_full(&mut self) -> Result<(), StorageError> {
        let current = self.segments.last().expect("a segment is open");
        if current.len >= self.segment_bytes_max {
            let sequence = current.sequence;
            self.write_out()?;
            self.disk.sync(&segment_name(sequence))?;
            self.start_segment(sequence + 1)?;
            self.delete_trimmed_segments()?;
        }
        Ok(())
    }

    fn write(&mut self, tag: Tag, record: &Record) -> Result<(u64, u64, u32), StorageError> {
        let start = self.pending.len();
        record.encode_tagged(tag, &mut self.pending);
        let len = u32::try_from(self.pending.len() - start).expect("record fits u32");
        let segment = self.segments.last_mut().expect("a segment is open");
        let offset = segment.len;
        if start == 0 {
            self.pending_from = offset;
        }
        debug_assert_eq!(self.pending_from + start as u64, offset);
        segment.len += u64::from(len);
        // A decided mark lives as long as its vote: both keep the segment.
        if let Record::Vote { instance, .. } | Record::Decided { instance, .. } = record {
            segment.touch(tag, *instance);
        }
        self.dirty = true;
        Ok((segment.sequence, offset, len))
    }

    /// Preallocates segment `sequence` (the newest) a step past `end`
    /// when `end` reaches its preallocated length, never past the segment
    /// size unless `end` already is.
    fn preallocate_past(&mut self, sequence: u64, end: u64) -> Result<(), StorageError> {
        if end < self.preallocated && self.preallocated > 0 {
            return Ok(());
        }
        let wanted = (end + PREALLOCATE_STEP_BYTES).min(self.segment_bytes_max.max(end));
        if wanted > end || self.preallocated == 0 {
            self.disk.preallocate(&segment_name(sequence), wanted)?;
        }
        self.preallocated = wanted.max(end);
        Ok(())
    }

    /// Hands the pending records to the disk in one write.
    pub(crate) fn write_out(&mut self) -> Result<(), StorageError> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let current = self.segments.last().expect("a segment is open");
        let (sequence, end) = (current.sequence, current.len);
        self.preallocate_past(sequence, end)?;
        self.disk.append(&segment_name(sequence), &self.pending)?;
        self.pending.clear();
        Ok(())
    }

    /// Deletes segments all of whose votes lie below their stream's trim
    /// point restated by the header of the newest *closed* segment (synced,
    /// and not the one a crash can tear). A trim record at the tail alone
    /// never deletes anything: if a torn tail took it, the votes it
    /// released would be missing without a trim point that says so.
    /// Promises are restated by every later segment, so nothing else is
    /// lost.
    fn delete_trimmed_segments(&mut self) -> Result<(), StorageError> {
        let count = self.segments.len();
        if count < 3 {
            return Ok(());
        }
        let authority = self.segments[count - 2].header_trimmed_below.clone();
        let mut keep = Vec::with_capacity(count);
        let mut removed = false;
        for (i, segment) in self.segments.drain(..).enumerate() {
            let obsolete = i < count - 2
                && segment
                    .max_instance
                    .iter()
                    .all(|(tag, max)| authority.get(tag).is_some_and(|below| *max < *below));
            if obsolete {
                self.disk.remove(&segment_name(segment.sequence))?;
                removed = true;
            } else {
                keep.push(segment);
            }
        }
        self.segments = keep;
        if removed {
            self.disk.sync_dir()?;
        }
        Ok(())
    }

    pub(crate) fn save_promise(&mut self, tag: Tag, ballot: Ballot) -> Result<(), StorageError> {
        if ballot > self.state(tag).promised {
            self.append(tag, &Record::Promise { ballot })?;
            self.state_mut(tag).promised = ballot;
        }
        Ok(())
    }

    pub(crate) fn save_instance_promise(
        &mut self,
        tag: Tag,
        instance: Instance,
        ballot: Ballot,
    ) -> Result<(), StorageError> {
        let state = self.state(tag);
        if instance < state.trimmed_below
            || state
                .instance_promises
                .get(&instance)
                .is_some_and(|b| *b >= ballot)
        {
            return Ok(());
        }
        self.append(tag, &Record::InstancePromise { instance, ballot })?;
        self.state_mut(tag)
            .instance_promises
            .insert(instance, ballot);
        Ok(())
    }

    pub(crate) fn save(&mut self, tag: Tag, record: &LogRecord) -> Result<(), StorageError> {
        if record.instance < self.state(tag).trimmed_below {
            return Ok(());
        }
        let (segment, offset, len) = self.append(
            tag,
            &Record::Vote {
                instance: record.instance,
                ballot: record.ballot,
                decided: record.decided,
                batch: record.batch.clone(),
            },
        )?;
        let state = self.state_mut(tag);
        state.index.insert(
            record.instance,
            Entry {
                segment,
                offset,
                len,
                ballot: record.ballot,
                decided: record.decided,
            },
        );
        state.end = state.end.max(record.instance.next());
        Ok(())
    }

    pub(crate) fn mark_decided(
        &mut self,
        tag: Tag,
        instance: Instance,
        ballot: Ballot,
    ) -> Result<(), StorageError> {
        let Some(entry) = self.state(tag).index.get(&instance) else {
            return Ok(());
        };
        if entry.ballot != ballot || entry.decided {
            return Ok(());
        }
        self.append(tag, &Record::Decided { instance, ballot })?;
        if let Some(entry) = self.state_mut(tag).index.get_mut(&instance) {
            entry.decided = true;
        }
        Ok(())
    }

    /// `instance`'s vote from the index: its ballot and whether decided.
    pub(crate) fn vote(&self, tag: Tag, instance: Instance) -> Option<(Ballot, bool)> {
        let state = self.state(tag);
        if instance < state.trimmed_below {
            return None;
        }
        state
            .index
            .get(&instance)
            .map(|entry| (entry.ballot, entry.decided))
    }

    pub(crate) fn read(
        &self,
        tag: Tag,
        instance: Instance,
    ) -> Result<Option<LogRecord>, StorageError> {
        let state = self.state(tag);
        if instance < state.trimmed_below {
            return Ok(None);
        }
        let Some(entry) = state.index.get(&instance) else {
            return Ok(None);
        };
        let name = segment_name(entry.segment);
        let current = self.segments.last().expect("a segment is open").sequence;
        let bytes = if entry.segment == current
            && entry.offset >= self.pending_from
            && !self.pending.is_empty()
        {
            // Not written out yet: the record is in `pending`.
            let at =
                usize::try_from(entry.offset - self.pending_from).expect("pending fits memory");
            self.pending
                .get(at..at + entry.len as usize)
                .ok_or_else(|| {
                    StorageError::Corrupt(format!(
                        "instance {} past the pending records",
                        instance.0
                    ))
                })?
                .to_vec()
        } else {
            self.disk.read_at(&name, entry.offset, entry.len as usize)?
        };
        match decode_at(&bytes, 0) {
            Ok((
                (
                    found_tag,
                    Record::Vote {
                        instance: found,
                        ballot,
                        batch,
                        ..
                    },
                ),
                _,
            )) if found_tag == tag && found == instance && ballot == entry.ballot => {
                Ok(Some(LogRecord {
                    instance,
                    ballot,
                    batch,
                    decided: entry.decided,
                }))
            }
            Ok(_) => Err(StorageError::Corrupt(format!(
                "{name} offset {}: not the vote of instance {}",
                entry.offset, instance.0
            ))),
            Err(damage) => Err(StorageError::Corrupt(format!(
                "{name} offset {}: {damage:?} (damaged after it was written)",
                entry.offset
            ))),
        }
    }

    pub(crate) fn trim(&mut self, tag: Tag, below: Instance) -> Result<(), StorageError> {
        if below <= self.state(tag).trimmed_below {
            return Ok(());
        }
        self.append(tag, &Record::Trim { below })?;
        let state = self.state_mut(tag);
        state.trimmed_below = below;
        state.end = state.end.max(below);
        state.index = state.index.split_off(&below);
        state.instance_promises = state.instance_promises.split_off(&below);
        self.delete_trimmed_segments()
    }

    pub(crate) fn trimmed_below(&self, tag: Tag) -> Instance {
        self.state(tag).trimmed_below
    }

    pub(crate) fn end(&self, tag: Tag) -> Instance {
        self.state(tag).end
    }

    /// Makes the writes so far durable; an async log only starts that
    /// (`Disk::sync_soon`: its group commit runs beside the caller, which
    /// does not wait for what an async log never promised).
    pub(crate) fn sync(&mut self) -> Result<(), StorageError> {
        if self.dirty {
            self.write_out()?;
            let current = segment_name(self.segments.last().expect("a segment is open").sequence);
            match self.durability {
                Durability::Sync => self.disk.sync(&current)?,
                Durability::Async => self.disk.sync_soon(&current)?,
            }
            self.dirty = false;
        }
        Ok(())
    }

    /// Makes the writes so far durable and waits for it, in either mode.
    fn sync_now(&mut self) -> Result<(), StorageError> {
        self.write_out()?;
        let current = segment_name(self.segments.last().expect("a segment is open").sequence);
        self.disk.sync(&current)?;
        self.dirty = false;
        Ok(())
    }

    pub(crate) fn dirty(&self) -> bool {
        self.dirty
    }

    pub(crate) fn recovered(&self, tag: Tag) -> Recovered {
        self.state(tag).recovered.clone()
    }

    /// Writes a close record and syncs: the next open knows nothing was
    /// lost even if the machine restarts in between.
    pub(crate) fn close(&mut self) -> Result<(), StorageError> {
        self.append(None, &Record::Close)?;
        self.sync_now()
    }
}

/// A segmented, checksummed acceptor log of one stream on a [`Disk`].
pub struct DurableLog<D: Disk> {
    core: LogCore<D>,
}

impl<D: Disk> DurableLog<D> {
    /// Opens (or creates) the log on `disk`, repairing a torn tail.
    pub fn open(
        disk: D,
        durability: Durability,
        segment_bytes_max: u64,
    ) -> Result<DurableLog<D>, StorageError> {
        let core = LogCore::open(disk, durability, segment_bytes_max)?;
        if let Some(stream) = core.tagged_streams().first() {
            return Err(StorageError::Corrupt(format!(
                "holds records of stream {} of a node-wide log, not a stream's own log",
                stream.0
            )));
        }
        Ok(DurableLog { core })
    }

    /// The disk (for tests and the simulator).
    pub fn disk(&self) -> &D {
        self.core.disk()
    }

    /// Bytes cut off as a torn tail when the log was opened.
    pub fn torn_bytes(&self) -> u64 {
        self.core.torn_bytes()
    }

    /// Number of segment files.
    pub fn segment_count(&self) -> usize {
        self.core.segment_count()
    }

    /// The durability mode.
    pub fn durability(&self) -> Durability {
        self.core.durability()
    }
}

impl<D: Disk> AcceptorLog for DurableLog<D> {
    fn save_promise(&mut self, ballot: Ballot) -> Result<(), StorageError> {
        self.core.save_promise(None, ballot)
    }

    fn save_instance_promise(
        &mut self,
        instance: Instance,
        ballot: Ballot,
    ) -> Result<(), StorageError> {
        self.core.save_instance_promise(None, instance, ballot)
    }

    fn save(&mut self, record: &LogRecord) -> Result<(), StorageError> {
        self.core.save(None, record)
    }

    fn mark_decided(&mut self, instance: Instance, ballot: Ballot) -> Result<(), StorageError> {
        self.core.mark_decided(None, instance, ballot)
    }

    fn read(&self, instance: Instance) -> Result<Option<LogRecord>, StorageError> {
        self.core.read(None, instance)
    }

    fn vote(&self, instance: Instance) -> Option<(Ballot, bool)> {
        self.core.vote(None, instance)
    }

    fn trim(&mut self, below: Instance) -> Result<(), StorageError> {
        self.core.trim(None, below)
    }

    fn trimmed_below(&self) -> Instance {
        self.core.trimmed_below(None)
    }

    fn end(&self) -> Instance {
        self.core.end(None)
    }

    fn write_out(&mut self) -> Result<(), StorageError> {
        self.core.write_out()
    }

    fn sync(&mut self) -> Result<(), StorageError> {
        self.core.sync()
    }

    fn dirty(&self) -> bool {
        self.core.dirty()
    }

    fn recovered(&self) -> Recovered {
        self.core.recovered(None)
    }

    fn close(&mut self) -> Result<(), StorageError> {
        self.core.close()
    }
}
