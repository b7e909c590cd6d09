//! What a map command can fail with. Each variant is one the client reacts
//! to differently (and maps to its own gRPC status at the node).

use serde::{Deserialize, Serialize};

/// Why a map command failed. A failed command changed nothing.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error, Serialize, Deserialize)]
pub enum MapError {
    /// The map does not exist (never created, or dropped).
    #[error("no map named {0:?}")]
    UnknownMap(String),
    /// `create` of a map that exists.
    #[error("a map named {0:?} already exists")]
    MapExists(String),
    /// A map name outside the allowed alphabet or length.
    #[error("bad map name {0:?}: use 1 to 128 ASCII letters, digits, '_', '-' or '.'")]
    BadMapName(String),
    /// A key longer than `key_bytes_max`.
    #[error("key of {bytes} bytes exceeds key_bytes_max = {max}")]
    KeyTooLarge {
        /// Key length.
        bytes: usize,
        /// The limit.
        max: usize,
    },
    /// A value longer than `value_bytes_max`.
    #[error("value of {bytes} bytes exceeds value_bytes_max = {max}")]
    ValueTooLarge {
        /// Value length.
        bytes: usize,
        /// The limit.
        max: usize,
    },
    /// A range whose start is above its end, or a limit of zero or above
    /// `range_entries_max`.
    #[error("bad range: {0}")]
    BadRange(String),
    /// A `putAll` with more entries or bytes than allowed.
    #[error("putAll of {entries} entries ({bytes} bytes) exceeds put_all_entries_max = {entries_max} or put_all_bytes_max = {bytes_max}")]
    TooManyEntries {
        /// Entries given.
        entries: usize,
        /// Bytes given.
        bytes: usize,
        /// Entry limit.
        entries_max: usize,
        /// Byte limit.
        bytes_max: usize,
    },
    /// The snapshot was released, its lease ended, or it never existed.
    #[error("snapshot {0} is unknown (released, expired or never opened)")]
    UnknownSnapshot(u64),
    /// A snapshot lease of zero or above `snapshot_lease_micros_max`.
    #[error("snapshot lease of {micros} µs outside 1..={max}")]
    BadLease {
        /// Requested lease.
        micros: u64,
        /// The limit.
        max: u64,
    },
    /// The partition holds `snapshots_max` open snapshots already.
    #[error("too many open snapshots (snapshots_max = {0}); release some")]
    TooManySnapshots(usize),
}
