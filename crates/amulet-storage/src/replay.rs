//! Opening a log's files: every segment read in order, records applied to
//! the state of the stream they belong to, a torn tail cut off the newest
//! segment, any other damage refused (see `durable_log.rs`).

use crate::disk::Disk;
use crate::durable_log::{parse_segment_name, segment_name, Entry, Segment, StreamState, Tag};
use crate::log::StorageError;
use crate::record::{decode_at, Damage, Record, Tagged};
use std::collections::BTreeMap;

/// What replaying the segments found.
#[derive(Default)]
pub(crate) struct Replay {
    pub(crate) segments: Vec<Segment>,
    pub(crate) streams: BTreeMap<Tag, StreamState>,
    pub(crate) last_boot: Option<u128>,
    pub(crate) closed: bool,
    pub(crate) torn_bytes: u64,
}

impl Replay {
    fn apply(&mut self, (tag, record): Tagged, segment: u64, offset: u64, len: u32) {
        if !matches!(record, Record::Close) {
            self.closed = false;
        }
        let current = self.segments.last_mut().expect("a segment is open");
        let state = self.streams.entry(tag).or_default();
        match record {
            Record::Segment { snapshot, .. } => {
                state.absorb(&snapshot);
                let restated = current
                    .header_trimmed_below
                    .entry(tag)
                    .or_insert(snapshot.trimmed_below);
                *restated = (*restated).max(snapshot.trimmed_below);
                if tag.is_none() {
                    self.last_boot = Some(snapshot.boot_id);
                }
            }
            Record::Boot { boot_id } => self.last_boot = Some(boot_id),
            Record::Promise { ballot } => state.promised = state.promised.max(ballot),
            Record::InstancePromise { instance, ballot } => {
                let entry = state.instance_promises.entry(instance).or_insert(ballot);
                *entry = (*entry).max(ballot);
            }
            Record::Vote {
                instance,
                ballot,
                decided,
                ..
            } => {
                state.end = state.end.max(instance.next());
                current.touch(tag, instance);
                state.index.insert(
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
                current.touch(tag, instance);
                if let Some(entry) = state.index.get_mut(&instance) {
                    if entry.ballot == ballot {
                        entry.decided = true;
                    }
                }
            }
            Record::Trim { below } => state.trimmed_below = state.trimmed_below.max(below),
            Record::Close => self.closed = true,
            Record::Amnesia => state.amnesic = true,
        }
    }
}

/// Reads every segment in order, cutting a torn tail off the newest.
pub(crate) fn replay<D: Disk>(disk: &mut D) -> Result<Replay, StorageError> {
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
                Ok((tagged, next)) => {
                    let restates = match &tagged.1 {
                        Record::Segment { sequence: s, .. } => Some(*s),
                        _ => None,
                    };
                    if first {
                        if tagged.0.is_some() || restates != Some(sequence) {
                            return Err(StorageError::Corrupt(format!(
                                "{name}: does not start with its segment record"
                            )));
                        }
                        replay.segments.push(Segment::new(sequence));
                        first = false;
                    } else if let Some(s) = restates {
                        // A node log restates each stream after the first
                        // record; an untagged segment record or one naming
                        // another segment is damage.
                        if tagged.0.is_none() || s != sequence {
                            return Err(StorageError::Corrupt(format!(
                                "{name} offset {offset}: a segment record inside a segment"
                            )));
                        }
                    }
                    let len = (next - offset) as u32;
                    replay.apply(tagged, sequence, offset as u64, len);
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
        // Zeros after the last record are preallocated space, not damage:
        // only bytes up to the last nonzero one were torn.
        let written = data
            .iter()
            .rposition(|b| *b != 0)
            .map_or(0, |last| last + 1);
        if offset < written {
            replay.torn_bytes = (written - offset) as u64;
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
