//! The durable acceptor log (thesis §3.4.1, A.4): segmented, checksummed,
//! recovering from a torn tail, trimming to an instance.
//!
//! Records (see `record.rs`) are appended to the newest segment file
//! `<sequence:016x>.log`; a segment is closed (synced) when it reaches
//! `segment_bytes_max`, and the next one starts with a snapshot of the
//! promises and trim point. Trimming writes a trim record; a segment file
//! is deleted once the first record of the newest closed segment restates
//! a trim point above all its votes (so deletion lags trimming by about a
//! segment, and no torn tail can take away the trim point that allowed it).
//! Votes stay on disk; an in-memory index maps each instance to its latest
//! vote record, so a read is one positioned read of the page cache.
//!
//! Recovery replays every segment in order. Damage that reaches the end of
//! the newest segment (a short record, zeros, or a bad checksum in its last
//! record) is a torn tail from a crash in the middle of an append: the file
//! is cut there. Any other damage is [`StorageError::Corrupt`]: the log
//! cannot vouch for the votes after it, and the node must not start.
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

use crate::disk::Disk;
use crate::log::{AcceptorLog, LogRecord, Recovered, StorageError};
use crate::record::{decode_at, Damage, Record, Snapshot};
use amulet_types::{Ballot, Instance};
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

/// Default size at which a segment is closed and a new one started.
pub const SEGMENT_BYTES_DEFAULT: u64 = 64 << 20;

#[derive(Clone, Copy, Debug)]
struct Entry {
    segment: u64,
    offset: u64,
    len: u32,
    ballot: Ballot,
    decided: bool,
}

#[derive(Clone, Debug)]
struct Segment {
    sequence: u64,
    len: u64,
    /// The trim point restated by the segment's first record.
    header_trimmed_below: Instance,
    /// Highest instance with a vote or decided record in this segment.
    max_instance: Option<Instance>,
}

fn segment_name(sequence: u64) -> String {
    format!("{sequence:016x}.log")
}

fn parse_segment_name(name: &str) -> Option<u64> {
    let hex = name.strip_suffix(".log")?;
    if hex.len() != 16 {
        return None;
    }
    u64::from_str_radix(hex, 16).ok()
}

/// A segmented, checksummed acceptor log on a [`Disk`].
pub struct DurableLog<D: Disk> {
    disk: D,
    durability: Durability,
    segment_bytes_max: u64,
    /// Oldest first; the last one is appended to.
    segments: Vec<Segment>,
    index: BTreeMap<Instance, Entry>,
    promised: Ballot,
    instance_promises: BTreeMap<Instance, Ballot>,
    trimmed_below: Instance,
    end: Instance,
    amnesic: bool,
    dirty: bool,
    recovered: Recovered,
    /// Bytes the torn tail repair cut off at open (for logs and tests).
    torn_bytes: u64,
    scratch: BytesMut,
}

/// What replaying the segments found.
#[derive(Default)]
struct Replay {
    segments: Vec<Segment>,
    index: BTreeMap<Instance, Entry>,
    promised: Ballot,
    instance_promises: BTreeMap<Instance, Ballot>,
    trimmed_below: Instance,
    end: Instance,
    amnesic: bool,
    last_boot: Option<u128>,
    closed: bool,
    torn_bytes: u64,
}

impl Replay {
    fn apply(&mut self, record: Record, segment: u64, offset: u64, len: u32) {
        if !matches!(record, Record::Close) {
            self.closed = false;
        }
        match record {
            Record::Segment { snapshot, .. } => {
                self.promised = self.promised.max(snapshot.promised);
                self.trimmed_below = self.trimmed_below.max(snapshot.trimmed_below);
                self.end = self.end.max(snapshot.end);
                self.amnesic |= snapshot.amnesic;
                self.last_boot = Some(snapshot.boot_id);
                for (instance, ballot) in snapshot.instance_promises {
                    let entry = self.instance_promises.entry(instance).or_insert(ballot);
                    *entry = (*entry).max(ballot);
                }
            }
            Record::Boot { boot_id } => self.last_boot = Some(boot_id),
            Record::Promise { ballot } => self.promised = self.promised.max(ballot),
            Record::InstancePromise { instance, ballot } => {
                let entry = self.instance_promises.entry(instance).or_insert(ballot);
                *entry = (*entry).max(ballot);
            }
            Record::Vote {
                instance,
                ballot,
                decided,
                ..
            } => {
                self.end = self.end.max(instance.next());
                let current = self.segments.last_mut().expect("a segment is open");
                current.max_instance = current.max_instance.max(Some(instance));
                self.index.insert(
                    instance,
                    Entry {
                        segment,
                        offset,
                        len,
                        ballot,
                        decided,
                    },
                );
            }
            Record::Decided { instance, ballot } => {
                let current = self.segments.last_mut().expect("a segment is open");
                current.max_instance = current.max_instance.max(Some(instance));
                if let Some(entry) = self.index.get_mut(&instance) {
                    if entry.ballot == ballot {
                        entry.decided = true;
                    }
                }
            }
            Record::Trim { below } => self.trimmed_below = self.trimmed_below.max(below),
            Record::Close => self.closed = true,
            Record::Amnesia => self.amnesic = true,
        }
    }
}

impl<D: Disk> DurableLog<D> {
    /// Opens (or creates) the log on `disk`, repairing a torn tail.
    pub fn open(
        disk: D,
        durability: Durability,
        segment_bytes_max: u64,
    ) -> Result<DurableLog<D>, StorageError> {
        let mut disk = disk;
        let replay = replay(&mut disk)?;
        let fresh = replay.segments.is_empty();
        let boot_id = disk.boot_id();
        let intact = !replay.amnesic
            && match durability {
                Durability::Sync => true,
                Durability::Async => fresh || replay.closed || replay.last_boot == Some(boot_id),
            };
        let mut index = replay.index;
        let mut instance_promises = replay.instance_promises;
        let trimmed_below = replay.trimmed_below;
        index = index.split_off(&trimmed_below);
        instance_promises = instance_promises.split_off(&trimmed_below);
        let mut log = DurableLog {
            disk,
            durability,
            segment_bytes_max: segment_bytes_max.max(256),
            segments: replay.segments,
            index,
            promised: replay.promised,
            instance_promises,
            trimmed_below,
            end: replay.end.max(trimmed_below),
            amnesic: replay.amnesic || !intact,
            dirty: false,
            recovered: Recovered::default(),
            torn_bytes: replay.torn_bytes,
            scratch: BytesMut::new(),
        };
        if log.segments.is_empty() {
            log.start_segment(1)?;
        }
        if !intact && !replay.amnesic {
            log.append(&Record::Amnesia)?;
        }
        log.append(&Record::Boot { boot_id })?;
        log.sync()?;
        log.recovered = Recovered {
            promised: log.promised,
            instance_promises: log
                .instance_promises
                .iter()
                .map(|(i, b)| (*i, *b))
                .collect(),
            trimmed_below: log.trimmed_below,
            end: log.end,
            intact,
        };
        Ok(log)
    }

    /// The disk (for tests and the simulator).
    pub fn disk(&self) -> &D {
        &self.disk
    }

    /// Bytes cut off as a torn tail when the log was opened.
    pub fn torn_bytes(&self) -> u64 {
        self.torn_bytes
    }

    /// Number of segment files.
    pub fn segment_count(&self) -> usize {
        self.segments.len()
    }

    /// The durability mode.
    pub fn durability(&self) -> Durability {
        self.durability
    }

    fn snapshot(&self) -> Snapshot {
        Snapshot {
            promised: self.promised,
            instance_promises: self
                .instance_promises
                .iter()
                .map(|(i, b)| (*i, *b))
                .collect(),
            trimmed_below: self.trimmed_below,
            end: self.end,
            boot_id: self.disk.boot_id(),
            amnesic: self.amnesic,
        }
    }

    /// Starts segment `sequence` with a snapshot record; the previous
    /// segment (if any) was synced by the caller.
    fn start_segment(&mut self, sequence: u64) -> Result<(), StorageError> {
        let name = segment_name(sequence);
        self.disk.create(&name)?;
        self.disk.sync_dir()?;
        self.segments.push(Segment {
            sequence,
            len: 0,
            header_trimmed_below: self.trimmed_below,
            max_instance: None,
        });
        let header = Record::Segment {
            sequence,
            snapshot: self.snapshot(),
        };
        self.write(&header)?;
        Ok(())
    }

    /// Appends a record, rolling to a new segment when the current one is
    /// full. Returns where the record went.
    fn append(&mut self, record: &Record) -> Result<(u64, u64, u32), StorageError> {
        let current = self.segments.last().expect("a segment is open");
        if current.len >= self.segment_bytes_max {
            let sequence = current.sequence;
            self.disk.sync(&segment_name(sequence))?;
            self.start_segment(sequence + 1)?;
            self.delete_trimmed_segments()?;
        }
        self.write(record)
    }

    fn write(&mut self, record: &Record) -> Result<(u64, u64, u32), StorageError> {
        self.scratch.clear();
        record.encode(&mut self.scratch);
        let segment = self.segments.last_mut().expect("a segment is open");
        let offset = segment.len;
        let len = u32::try_from(self.scratch.len()).expect("record fits u32");
        self.disk
            .append(&segment_name(segment.sequence), &self.scratch)?;
        segment.len += u64::from(len);
        // A decided mark lives as long as its vote: both keep the segment.
        if let Record::Vote { instance, .. } | Record::Decided { instance, .. } = record {
            segment.max_instance = segment.max_instance.max(Some(*instance));
        }
        self.dirty = true;
        Ok((segment.sequence, offset, len))
    }

    /// Deletes segments whose votes all lie below the trim point restated
    /// by the first record of the newest *closed* segment (synced, and not
    /// the one a crash can tear). A trim record at the tail alone never
    /// deletes anything: if a torn tail took it, the votes it released
    /// would be missing without a trim point that says so. Promises are
    /// restated by every later segment, so nothing else is lost.
    fn delete_trimmed_segments(&mut self) -> Result<(), StorageError> {
        let count = self.segments.len();
        if count < 3 {
            return Ok(());
        }
        let authority = count - 2;
        let below = self.segments[authority].header_trimmed_below;
        let mut keep = Vec::with_capacity(count);
        let mut removed = false;
        for (i, segment) in self.segments.drain(..).enumerate() {
            let obsolete = i < authority && segment.max_instance.is_none_or(|max| max < below);
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
}

/// Reads every segment in order, cutting a torn tail off the newest.
fn replay<D: Disk>(disk: &mut D) -> Result<Replay, StorageError> {
    let mut sequences: Vec<u64> = disk
        .list()?
        .iter()
        .filter_map(|name| parse_segment_name(name))
        .collect();
    sequences.sort_unstable();
    let mut replay = Replay::default();
    let count = sequences.len();
    for (position, sequence) in sequences.into_iter().enumerate() {
        let newest = position + 1 == count;
        let name = segment_name(sequence);
        let data = disk.read_all(&name)?;
        let mut offset = 0usize;
        let mut first = true;
        while offset < data.len() {
            match decode_at(&data, offset) {
                Ok((record, next)) => {
                    if first {
                        match &record {
                            Record::Segment { sequence: s, .. } if *s == sequence => {}
                            _ => {
                                return Err(StorageError::Corrupt(format!(
                                    "{name}: does not start with its segment record"
                                )))
                            }
                        }
                        let header_trimmed_below = match &record {
                            Record::Segment { snapshot, .. } => snapshot.trimmed_below,
                            _ => unreachable!("checked above"),
                        };
                        replay.segments.push(Segment {
                            sequence,
                            len: 0,
                            header_trimmed_below,
                            max_instance: None,
                        });
                        first = false;
                    } else if matches!(record, Record::Segment { .. }) {
                        return Err(StorageError::Corrupt(format!(
                            "{name} offset {offset}: a segment record inside a segment"
                        )));
                    }
                    let len = (next - offset) as u32;
                    replay.apply(record, sequence, offset as u64, len);
                    offset = next;
                }
                Err(Damage::Torn) if newest => break,
                Err(Damage::Torn) => {
                    return Err(StorageError::Corrupt(format!(
                        "{name} offset {offset}: an older segment ends in a torn record"
                    )))
                }
                Err(Damage::Bad(why)) => {
                    return Err(StorageError::Corrupt(format!(
                        "{name} offset {offset}: {why}"
                    )))
                }
            }
        }
        if offset < data.len() {
            replay.torn_bytes = (data.len() - offset) as u64;
        }
        if first {
            // The newest segment's own first record was torn: the crash
            // came while the segment was being started. Nothing in it.
            if !newest {
                return Err(StorageError::Corrupt(format!("{name}: empty segment")));
            }
            disk.remove(&name)?;
            disk.sync_dir()?;
            continue;
        }
        if offset < data.len() {
            disk.truncate(&name, offset as u64)?;
            disk.sync(&name)?;
        }
        replay
            .segments
            .last_mut()
            .expect("pushed at its first record")
            .len = offset as u64;
    }
    Ok(replay)
}

impl<D: Disk> AcceptorLog for DurableLog<D> {
    fn save_promise(&mut self, ballot: Ballot) -> Result<(), StorageError> {
        if ballot > self.promised {
            self.append(&Record::Promise { ballot })?;
            self.promised = ballot;
        }
        Ok(())
    }

    fn save_instance_promise(
        &mut self,
        instance: Instance,
        ballot: Ballot,
    ) -> Result<(), StorageError> {
        if instance < self.trimmed_below {
            return Ok(());
        }
        if self
            .instance_promises
            .get(&instance)
            .is_some_and(|b| *b >= ballot)
        {
            return Ok(());
        }
        self.append(&Record::InstancePromise { instance, ballot })?;
        self.instance_promises.insert(instance, ballot);
        Ok(())
    }

    fn save(&mut self, record: &LogRecord) -> Result<(), StorageError> {
        if record.instance < self.trimmed_below {
            return Ok(());
        }
        let (segment, offset, len) = self.append(&Record::Vote {
            instance: record.instance,
            ballot: record.ballot,
            decided: record.decided,
            batch: record.batch.clone(),
        })?;
        self.index.insert(
            record.instance,
            Entry {
                segment,
                offset,
                len,
                ballot: record.ballot,
                decided: record.decided,
            },
        );
        self.end = self.end.max(record.instance.next());
        Ok(())
    }

    fn mark_decided(&mut self, instance: Instance, ballot: Ballot) -> Result<(), StorageError> {
        let Some(entry) = self.index.get(&instance) else {
            return Ok(());
        };
        if entry.ballot != ballot || entry.decided {
            return Ok(());
        }
        self.append(&Record::Decided { instance, ballot })?;
        if let Some(entry) = self.index.get_mut(&instance) {
            entry.decided = true;
        }
        Ok(())
    }

    fn read(&self, instance: Instance) -> Result<Option<LogRecord>, StorageError> {
        if instance < self.trimmed_below {
            return Ok(None);
        }
        let Some(entry) = self.index.get(&instance) else {
            return Ok(None);
        };
        let name = segment_name(entry.segment);
        let bytes = self.disk.read_at(&name, entry.offset, entry.len as usize)?;
        match decode_at(&bytes, 0) {
            Ok((
                Record::Vote {
                    instance: found,
                    ballot,
                    batch,
                    ..
                },
                _,
            )) if found == instance && ballot == entry.ballot => Ok(Some(LogRecord {
                instance,
                ballot,
                batch,
                decided: entry.decided,
            })),
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

    fn trim(&mut self, below: Instance) -> Result<(), StorageError> {
        if below <= self.trimmed_below {
            return Ok(());
        }
        self.append(&Record::Trim { below })?;
        self.trimmed_below = below;
        self.end = self.end.max(below);
        self.index = self.index.split_off(&below);
        self.instance_promises = self.instance_promises.split_off(&below);
        self.delete_trimmed_segments()
    }

    fn trimmed_below(&self) -> Instance {
        self.trimmed_below
    }

    fn end(&self) -> Instance {
        self.end
    }

    fn sync(&mut self) -> Result<(), StorageError> {
        if self.dirty {
            let current = self.segments.last().expect("a segment is open");
            self.disk.sync(&segment_name(current.sequence))?;
            self.dirty = false;
        }
        Ok(())
    }

    fn dirty(&self) -> bool {
        self.dirty
    }

    fn recovered(&self) -> Recovered {
        self.recovered.clone()
    }

    /// Writes a close record and syncs: the next open knows nothing was
    /// lost even if the machine restarts in between.
    fn close(&mut self) -> Result<(), StorageError> {
        self.append(&Record::Close)?;
        self.sync()
    }
}
