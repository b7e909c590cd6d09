//! One DLog log (thesis §3.5.2, Table 3.2): a sequence of entries at dense
//! positions `first..end`, appended at `end`, trimmed from `first`.
//!
//! Positions are never reused: `end` only grows (a trim moves `first`, not
//! `end`), and the log travels whole in checkpoints, state transfers, moves
//! and splits, so a restarted or moved replica continues at the same `end`.
//! Entries are an `imbl::Vector`, so a checkpoint or a split clones the log
//! in O(1) and a trim drops a prefix in O(log n).
//!
//! Serialized as (first, runs, bytes): a run is entries inline or, when a
//! node lent its segment files to the codec, a range of a segment file
//! (`crate::log_segments`). Checkpoint formats up to 9 hold the entries
//! inline as one sequence.

use crate::log_segments;
use bytes::Bytes;
use serde::{Deserialize, Serialize};

/// One log's entries and its first position.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Log {
    /// Position of `entries[0]`: everything below was trimmed.
    first: u64,
    /// The entries held, at positions `first..first + len`.
    entries: imbl::Vector<Bytes>,
    /// Bytes of the entries held (for metrics and read limits).
    bytes: u64,
}

/// A read's answer: entries from `from`, and the log's bounds when read.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LogRead {
    /// Position of the first entry returned (the position asked for).
    pub from: u64,
    /// The entries, at `from`, `from + 1`, ...
    pub entries: Vec<Bytes>,
    /// The log's first position.
    pub first: u64,
    /// The log's end (the position its next append gets).
    pub end: u64,
}

impl Log {
    /// The first position held (entries below were trimmed).
    pub fn first(&self) -> u64 {
        self.first
    }

    /// The position the next append gets.
    pub fn end(&self) -> u64 {
        self.first + self.entries.len() as u64
    }

    /// Entries held.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether no entry is held (all trimmed, or none appended).
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Bytes of the entries held.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Appends `value`; returns its position.
    pub fn append(&mut self, value: Bytes) -> u64 {
        let position = self.end();
        self.bytes += value.len() as u64;
        self.entries.push_back(value);
        position
    }

    /// Up to `max_entries` entries from `from`, stopping before the one
    /// that would take the answer past `max_bytes` (but always at least
    /// one when one exists, so a large entry is never unreadable). `from`
    /// may be `end` (nothing yet: an empty answer to poll with).
    pub fn read(
        &self,
        from: u64,
        max_entries: usize,
        max_bytes: usize,
    ) -> Result<LogRead, Refused> {
        if from < self.first {
            return Err(Refused::Trimmed { first: self.first });
        }
        if from > self.end() {
            return Err(Refused::PastEnd { end: self.end() });
        }
        let start = (from - self.first) as usize;
        let mut entries = Vec::new();
        let mut bytes = 0usize;
        // A focus narrowed to the range starts at `start` in O(log n);
        // `iter().skip(start)` would walk every entry before it, so
        // reading a long log page by page (a tail from 0) would be
        // quadratic.
        let held = self.entries.len();
        let pages = self.entries.focus().narrow(start.min(held)..held);
        for entry in pages.into_iter().take(max_entries) {
            if !entries.is_empty() && bytes + entry.len() > max_bytes {
                break;
            }
            bytes += entry.len();
            entries.push(entry.clone());
        }
        Ok(LogRead {
            from,
            entries,
            first: self.first,
            end: self.end(),
        })
    }

    /// Drops every entry below `below` (a trim below `first` changes
    /// nothing). A trim past `end` is refused: it would skip positions no
    /// append has taken yet.
    pub fn trim(&mut self, below: u64) -> Result<(), Refused> {
        if below > self.end() {
            return Err(Refused::PastEnd { end: self.end() });
        }
        if below <= self.first {
            return Ok(());
        }
        let drop = (below - self.first) as usize;
        let kept = self.entries.split_off(drop);
        let dropped: u64 = self.entries.iter().map(|e| e.len() as u64).sum();
        self.entries = kept;
        self.bytes -= dropped;
        self.first = below;
        Ok(())
    }

    /// Re-points the entries at positions `from..` to `entries`, each
    /// where the entry held is still `was` (the same allocation and
    /// length: a node moved those bytes into a segment file's mapping,
    /// `crate::log_segments`); positions trimmed or not held, and entries
    /// no longer `was`, keep theirs. Returns how many were re-pointed.
    /// Replicated state is unchanged. O(count + log n): the range is
    /// rebuilt and spliced, the bytes are not compared (`was` keeps its
    /// allocation alive, so an equal address is the same bytes).
    pub fn adopt(&mut self, from: u64, entries: &[Bytes], was: &[Bytes]) -> usize {
        let count = entries.len().min(was.len()) as u64;
        let start = from.max(self.first);
        let end = from.saturating_add(count).min(self.end());
        if start >= end {
            return 0;
        }
        let (a, b) = ((start - self.first) as usize, (end - self.first) as usize);
        let mut range = self.entries.split_off(a);
        let rest = range.split_off(b - a);
        let offset = (start - from) as usize;
        let mut adopted = 0;
        let rebuilt: imbl::Vector<Bytes> = range
            .into_iter()
            .zip(entries[offset..].iter().zip(&was[offset..]))
            .map(|(held, (new, old))| {
                let same = held.as_ptr() == old.as_ptr() && held.len() == old.len();
                if same && new.len() == held.len() {
                    debug_assert_eq!(*new, held, "a segment's entry differs from the log's");
                    adopted += 1;
                    new.clone()
                } else {
                    held
                }
            })
            .collect();
        self.entries.append(rebuilt);
        self.entries.append(rest);
        adopted
    }

    /// The entries held, in order (a node's segment spilling reads them).
    pub fn entries(&self) -> &imbl::Vector<Bytes> {
        &self.entries
    }

    /// The same entries at positions from 0 (the broken variant
    /// `log_positions_not_checkpointed` only).
    pub(crate) fn with_positions_from_zero(&self) -> Log {
        Log {
            first: 0,
            ..self.clone()
        }
    }

    /// Asserts the log's invariants (the simulator calls it after every
    /// step).
    pub fn check_invariants(&self) {
        let bytes: u64 = self.entries.iter().map(|e| e.len() as u64).sum();
        assert_eq!(bytes, self.bytes, "a log's byte count drifted");
        assert!(self.end() >= self.first, "a log ends before it starts");
    }
}

/// A run of a log's entries as serialized: inline, or a range of a
/// segment file (`crate::log_segments`).
#[derive(Deserialize)]
enum Run {
    Inline(Vec<Bytes>),
    Segment(u64, u32, u32),
}

/// A run about to be written: entries `start..end` of the log, inline or
/// found at `index..` of `segment`.
enum PlannedRun {
    Inline {
        start: usize,
        end: usize,
    },
    Segment {
        segment: u64,
        index: u32,
        count: u32,
    },
}

struct PlannedRuns<'a> {
    entries: &'a imbl::Vector<Bytes>,
    runs: Vec<PlannedRun>,
}

struct InlineEntries<'a>(&'a imbl::Vector<Bytes>, usize, usize);

impl Serialize for InlineEntries<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeSeq;
        let mut seq = serializer.serialize_seq(Some(self.2 - self.1))?;
        for entry in self.0.focus().narrow(self.1..self.2).into_iter() {
            seq.serialize_element(entry)?;
        }
        seq.end()
    }
}

impl Serialize for PlannedRuns<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::{SerializeSeq, SerializeTupleVariant};
        let mut seq = serializer.serialize_seq(Some(self.runs.len()))?;
        for run in &self.runs {
            match *run {
                PlannedRun::Inline { start, end } => {
                    struct Inline<'a>(InlineEntries<'a>);
                    impl Serialize for Inline<'_> {
                        fn serialize<S: serde::Serializer>(
                            &self,
                            serializer: S,
                        ) -> Result<S::Ok, S::Error> {
                            serializer.serialize_newtype_variant("Run", 0, "Inline", &self.0)
                        }
                    }
                    seq.serialize_element(&Inline(InlineEntries(self.entries, start, end)))?;
                }
                PlannedRun::Segment {
                    segment,
                    index,
                    count,
                } => {
                    struct Segment(u64, u32, u32);
                    impl Serialize for Segment {
                        fn serialize<S: serde::Serializer>(
                            &self,
                            serializer: S,
                        ) -> Result<S::Ok, S::Error> {
                            let mut v =
                                serializer.serialize_tuple_variant("Run", 1, "Segment", 3)?;
                            v.serialize_field(&self.0)?;
                            v.serialize_field(&self.1)?;
                            v.serialize_field(&self.2)?;
                            v.end()
                        }
                    }
                    seq.serialize_element(&Segment(segment, index, count))?;
                }
            }
        }
        seq.end()
    }
}

impl Log {
    /// The runs to write: entries the lent segments locate become
    /// segment runs (consecutive indices of one segment merge), the rest
    /// inline runs.
    fn planned_runs(&self) -> PlannedRuns<'_> {
        let mut runs = Vec::new();
        let segments = log_segments::lent();
        for (i, entry) in self.entries.iter().enumerate() {
            let found = segments.as_ref().and_then(|s| s.locate(entry));
            match (runs.last_mut(), found) {
                (
                    Some(PlannedRun::Segment {
                        segment,
                        index,
                        count,
                    }),
                    Some((s, at)),
                ) if *segment == s && index.checked_add(*count) == Some(at) => *count += 1,
                (_, Some((segment, index))) => runs.push(PlannedRun::Segment {
                    segment,
                    index,
                    count: 1,
                }),
                (Some(PlannedRun::Inline { end, .. }), None) => *end = i + 1,
                (_, None) => runs.push(PlannedRun::Inline {
                    start: i,
                    end: i + 1,
                }),
            }
        }
        PlannedRuns {
            entries: &self.entries,
            runs,
        }
    }
}

impl Serialize for Log {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeTuple;
        let mut tuple = serializer.serialize_tuple(3)?;
        tuple.serialize_element(&self.first)?;
        tuple.serialize_element(&self.planned_runs())?;
        tuple.serialize_element(&self.bytes)?;
        tuple.end()
    }
}

impl<'de> Deserialize<'de> for Log {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        use serde::de::{Error, SeqAccess, Visitor};
        struct Fields {
            runs: bool,
        }
        impl<'de> Visitor<'de> for Fields {
            type Value = Log;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a log: first position, entries, bytes")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Log, A::Error> {
                let missing = |i| A::Error::invalid_length(i, &"3 fields");
                let first: u64 = seq.next_element()?.ok_or_else(|| missing(0))?;
                let entries: imbl::Vector<Bytes> = if self.runs {
                    let runs: Vec<Run> = seq.next_element()?.ok_or_else(|| missing(1))?;
                    let mut entries = imbl::Vector::new();
                    for run in runs {
                        match run {
                            Run::Inline(inline) => entries.extend(inline),
                            Run::Segment(segment, index, count) => {
                                let lent = log_segments::lent().ok_or_else(|| {
                                    A::Error::custom(format!(
                                        "a log refers to segment {segment}, and no segment \
                                         files are open here"
                                    ))
                                })?;
                                let held = lent.entries(segment).map_err(A::Error::custom)?;
                                let range = (index as usize)
                                    .checked_add(count as usize)
                                    .filter(|end| *end <= held.len())
                                    .map(|end| index as usize..end)
                                    .ok_or_else(|| {
                                        A::Error::custom(format!(
                                            "a log refers to entries {index}..+{count} of \
                                             segment {segment}, which holds {}",
                                            held.len()
                                        ))
                                    })?;
                                entries.extend(held[range].iter().cloned());
                            }
                        }
                    }
                    entries
                } else {
                    seq.next_element()?.ok_or_else(|| missing(1))?
                };
                let bytes: u64 = seq.next_element()?.ok_or_else(|| missing(2))?;
                let held: u64 = entries.iter().map(|e| e.len() as u64).sum();
                if held != bytes {
                    return Err(A::Error::custom(format!(
                        "a log says it holds {bytes} bytes, and its entries hold {held}"
                    )));
                }
                if first.checked_add(entries.len() as u64).is_none() {
                    return Err(A::Error::custom("a log's end overflows"));
                }
                Ok(Log {
                    first,
                    entries,
                    bytes,
                })
            }
        }
        // Formats up to 9 hold the entries inline as one sequence.
        let runs = amulet_types::checkpoint_format::decoding_format() > 9;
        deserializer.deserialize_tuple(3, Fields { runs })
    }
}

/// Why a log refused a read or trim (the caller names the log).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refused {
    /// Below the first position held.
    Trimmed {
        /// The first position held.
        first: u64,
    },
    /// Past the end.
    PastEnd {
        /// The end.
        end: u64,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    fn log_of(n: u64) -> Log {
        let mut log = Log::default();
        for i in 0..n {
            assert_eq!(log.append(Bytes::from(format!("e{i}"))), i);
        }
        log
    }

    #[test]
    fn thesis_3_5_2_appends_take_dense_positions_and_reads_return_them() {
        let log = log_of(5);
        let read = log.read(1, 3, usize::MAX).unwrap();
        assert_eq!(read.from, 1);
        assert_eq!(read.entries, vec!["e1", "e2", "e3"]);
        assert_eq!((read.first, read.end), (0, 5));
        assert!(log.read(5, 10, usize::MAX).unwrap().entries.is_empty());
        assert_eq!(log.read(6, 1, usize::MAX), Err(Refused::PastEnd { end: 5 }));
    }

    #[test]
    fn thesis_3_5_2_a_trim_drops_a_prefix_and_never_reuses_a_position() {
        let mut log = log_of(5);
        log.trim(3).unwrap();
        assert_eq!((log.first(), log.end(), log.len()), (3, 5, 2));
        assert_eq!(
            log.read(2, 1, usize::MAX),
            Err(Refused::Trimmed { first: 3 })
        );
        log.trim(1).unwrap();
        assert_eq!(log.first(), 3, "a trim below first changes nothing");
        assert_eq!(log.trim(6), Err(Refused::PastEnd { end: 5 }));
        log.trim(5).unwrap();
        assert!(log.is_empty());
        assert_eq!(log.append(Bytes::from_static(b"x")), 5);
        log.check_invariants();
        assert_eq!(log.bytes(), 1);
    }

    #[test]
    fn a_read_stops_at_its_byte_limit_but_returns_one_large_entry() {
        let log = log_of(4);
        assert_eq!(log.read(0, 10, 5).unwrap().entries.len(), 2);
        assert_eq!(log.read(0, 10, 1).unwrap().entries.len(), 1);
    }

    /// Segments held in memory, as a node's files would be.
    struct Held(Vec<Arc<[Bytes]>>);

    impl log_segments::LogSegments for Held {
        fn locate(&self, entry: &Bytes) -> Option<(u64, u32)> {
            self.0.iter().enumerate().find_map(|(s, held)| {
                let i = held.iter().position(|e| e.as_ptr() == entry.as_ptr())?;
                Some((s as u64, i as u32))
            })
        }
        fn entries(&self, segment: u64) -> Result<Arc<[Bytes]>, String> {
            self.0
                .get(segment as usize)
                .cloned()
                .ok_or_else(|| format!("no segment {segment}"))
        }
    }

    use std::sync::Arc;

    fn encoded(log: &Log) -> Vec<u8> {
        postcard::to_allocvec(log).unwrap()
    }

    #[test]
    fn thesis_3_5_2_a_log_in_segments_encodes_runs_and_decodes_the_same_entries() {
        let mut log = log_of(10);
        log.trim(2).unwrap();
        // Entries 3..7 moved to a segment (the same bytes elsewhere).
        let moved: Arc<[Bytes]> = (3..7)
            .map(|i| Bytes::from(format!("e{i}").into_bytes()))
            .collect();
        let was: Vec<Bytes> = log.read(3, 4, usize::MAX).unwrap().entries;
        assert_eq!(log.adopt(3, &moved, &was), 4);
        let held = Arc::new(Held(vec![moved.clone()]));
        let with = log_segments::with_log_segments(held.clone(), || encoded(&log));
        let inline = encoded(&log);
        assert!(with.len() < inline.len(), "runs refer to the segment");
        let back: Log =
            log_segments::with_log_segments(held, || postcard::from_bytes(&with).unwrap());
        assert_eq!(back, log);
        assert_eq!(
            back.read(3, 1, usize::MAX).unwrap().entries[0].as_ptr(),
            moved[0].as_ptr()
        );
        assert_eq!(postcard::from_bytes::<Log>(&inline).unwrap(), log);
        // Without the segments, a file that refers to them is an error.
        assert!(postcard::from_bytes::<Log>(&with).is_err());
    }

    #[test]
    fn a_log_of_format_9_decodes_from_one_inline_sequence() {
        #[derive(Serialize)]
        struct Format9 {
            first: u64,
            entries: Vec<Bytes>,
            bytes: u64,
        }
        let old = Format9 {
            first: 4,
            entries: vec![Bytes::from_static(b"ab"), Bytes::from_static(b"c")],
            bytes: 3,
        };
        let bytes = postcard::to_allocvec(&old).unwrap();
        let log: Log = amulet_types::checkpoint_format::with_decoding_format(9, || {
            postcard::from_bytes(&bytes).unwrap()
        });
        assert_eq!((log.first(), log.end(), log.bytes()), (4, 6, 3));
        let lying = Format9 { bytes: 5, ..old };
        let bytes = postcard::to_allocvec(&lying).unwrap();
        let refused = amulet_types::checkpoint_format::with_decoding_format(9, || {
            postcard::from_bytes::<Log>(&bytes)
        });
        assert!(refused.is_err(), "a byte count that differs is refused");
    }

    #[test]
    fn adopting_entries_keeps_the_log_and_skips_what_is_no_longer_the_same() {
        let mut log = log_of(5);
        let mut was = log.read(0, 5, usize::MAX).unwrap().entries;
        was.push(Bytes::from_static(b"e5"));
        log.trim(1).unwrap();
        // Another allocation of the same bytes is not the entry held.
        was[2] = Bytes::from(b"e2".to_vec());
        let before = log.clone();
        let other: Vec<Bytes> = ["e0", "e1", "e2", "e3", "e4", "e5"]
            .iter()
            .map(|s| Bytes::from(s.as_bytes().to_vec()))
            .collect();
        // e0 is trimmed, e2 is not the same, e5 is past the end.
        assert_eq!(log.adopt(0, &other, &was), 3);
        assert_eq!(log, before);
        let held = log.read(1, 4, usize::MAX).unwrap().entries;
        assert_eq!(held[0].as_ptr(), other[1].as_ptr());
        assert_ne!(held[1].as_ptr(), other[2].as_ptr());
        assert_eq!(held[3].as_ptr(), other[4].as_ptr());
        log.check_invariants();
    }
}
