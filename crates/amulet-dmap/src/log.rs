//! One DLog log (thesis §3.5.2, Table 3.2): a sequence of entries at dense
//! positions `first..end`, appended at `end`, trimmed from `first`.
//!
//! Positions are never reused: `end` only grows (a trim moves `first`, not
//! `end`), and the log travels whole in checkpoints, state transfers, moves
//! and splits, so a restarted or moved replica continues at the same `end`.
//! Entries are an `imbl::Vector`, so a checkpoint or a split clones the log
//! in O(1) and a trim drops a prefix in O(log n).

use bytes::Bytes;
use serde::{Deserialize, Serialize};

/// One log's entries and its first position.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
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
}
