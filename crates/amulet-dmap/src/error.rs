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
    /// A key the transaction read (or a range it read, or the map itself)
    /// was written after its read version: nothing was applied, and the
    /// transaction may run again from a new read version.
    #[error("transaction conflict: {} written after the read version", describe_conflict(.map, .key))]
    Conflict {
        /// The map.
        map: String,
        /// The key, or `None` when the map itself changed (cleared,
        /// dropped or created).
        key: Option<Vec<u8>>,
    },
    /// The read version ended (its lease passed or it was ended) or was
    /// never taken here: begin again.
    #[error("read version {0} is too old (its lease ended, or it was ended); begin again")]
    ReadVersionTooOld(u64),
    /// A read version this partition has not reached: no client got it
    /// from the cluster.
    #[error("read version {0} is not one the cluster gave")]
    FutureReadVersion(u64),
    /// The partition holds `read_versions_max` open read versions already.
    #[error("too many open read versions (read_versions_max = {0}); end some")]
    TooManyReadVersions(usize),
    /// A commit above the limits.
    #[error("commit of {writes} writes, {read_ranges} read ranges, {bytes} bytes exceeds txn_writes_max = {writes_max}, txn_read_ranges_max = {read_ranges_max} or txn_bytes_max = {bytes_max}")]
    TransactionTooLarge {
        /// Writes given.
        writes: usize,
        /// Read conflict ranges given.
        read_ranges: usize,
        /// Bytes given.
        bytes: usize,
        /// Write limit.
        writes_max: usize,
        /// Range limit.
        read_ranges_max: usize,
        /// Byte limit.
        bytes_max: usize,
    },
    /// A commit of a shape no transaction produces.
    #[error("bad transaction: {0}")]
    BadTransaction(String),
    /// The replica asked holds the read version's lease but not its
    /// snapshot (it was restored from a checkpoint since): read from
    /// another replica.
    #[error("read version {0} is held by other replicas; read from another")]
    ReadVersionElsewhere(u64),
    /// A `mergeFields` whose stored value is not a field record
    /// (docs/field-records.md).
    #[error("the value is not a field record: {0}")]
    NotARecord(String),
    /// A `mergeFields` with no fields, a field named twice, or more fields
    /// than `fields_max`.
    #[error("bad fields: {0}")]
    BadFields(String),
    /// The log does not exist (never created, or dropped), or the name is
    /// a map's.
    #[error("no log named {0:?}")]
    UnknownLog(String),
    /// `create` of a log whose name a log or a map already has (maps and
    /// logs share one namespace).
    #[error("a log or map named {0:?} already exists")]
    LogExists(String),
    /// A read from a position below the log's first: those entries were
    /// trimmed and are gone.
    #[error("log {log:?} is trimmed below position {first}; read from {first} or later")]
    LogTrimmed {
        /// The log.
        log: String,
        /// Its first position still held.
        first: u64,
    },
    /// A read or trim past the log's end (the position its next append
    /// gets).
    #[error("position {position} is past the end of log {log:?} (next append: {end})")]
    PastLogEnd {
        /// The log.
        log: String,
        /// The position asked for.
        position: u64,
        /// The log's end.
        end: u64,
    },
    /// A `multiAppend` with no entries or above its limits, or a read
    /// asking for no entries or more than `range_entries_max`.
    #[error("bad log request: {0}")]
    BadLogRequest(String),
    /// The user holds `snapshots_per_user_max` open snapshots in this
    /// partition already. (Variants are appended: replies are kept in
    /// session records, in checkpoints.)
    #[error("too many open snapshots for this user (snapshots_per_user_max = {0}); release some")]
    TooManyUserSnapshots(usize),
    /// The user holds `read_versions_per_user_max` open read versions in
    /// this partition already.
    #[error(
        "too many open read versions for this user (read_versions_per_user_max = {0}); end some"
    )]
    TooManyUserReadVersions(usize),
}

impl MapError {
    /// Whether the same request may succeed if the transaction starts
    /// over (a conflict, an ended read version).
    pub fn is_retryable_transaction_error(&self) -> bool {
        matches!(
            self,
            MapError::Conflict { .. } | MapError::ReadVersionTooOld(_)
        )
    }
}

fn describe_conflict(map: &str, key: &Option<Vec<u8>>) -> String {
    match key {
        Some(key) => format!("key {:?} of map {map:?}", String::from_utf8_lossy(key)),
        None => format!("map {map:?}"),
    }
}
