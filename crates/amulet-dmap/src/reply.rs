//! What a map command answers.

use crate::MapError;
use bytes::Bytes;
use serde::{Deserialize, Serialize};

/// A key and its value.
pub type Entry = (Bytes, Bytes);

/// The reply to a [`crate::MapCommand`], or one partition's part of it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum MapReply {
    /// A value, or none (get, put, remove, putIfAbsent, replace).
    Value(Option<Bytes>),
    /// Yes or no (containsKey, containsValue, isEmpty, conditional
    /// replace and remove).
    Flag(bool),
    /// A count (size).
    Count(u64),
    /// An entry, or none (first, last, floor, ceiling, higher, lower).
    Entry(Option<Entry>),
    /// Entries of a range in the order asked; `more` when the range has
    /// entries beyond the last one returned.
    Entries {
        /// The entries.
        entries: Vec<Entry>,
        /// Whether the limit cut the range short.
        more: bool,
    },
    /// A snapshot was opened.
    Snapshot(u64),
    /// A read version was taken.
    ReadVersion(u64),
    /// Done, nothing to return (create, drop, putAll, clear, release).
    Done,
    /// The command failed and changed nothing.
    Failed(MapError),
    /// An append's position.
    Position(u64),
    /// A multi-append's positions, in the order of its entries; one
    /// partition's partial holds `None` for the entries of logs it does
    /// not own.
    Positions(Vec<Option<u64>>),
    /// Entries of a log read.
    LogEntries(crate::LogRead),
    /// A log's first position and its end (trim, bounds).
    LogBounds {
        /// The first position held.
        first: u64,
        /// The position the next append gets.
        end: u64,
    },
}
