//! Every size limit of a map, named, with its unit and why.

use serde::{Deserialize, Serialize};

/// Limits checked at the edge (the node refuses a request that breaks one)
/// and again on execution, so a command that slipped through still changes
/// nothing.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MapLimits {
    /// Longest key, bytes. Keys are compared and copied on every level of
    /// the tree; 16 KiB is far above any sensible key.
    pub key_bytes_max: usize,
    /// Longest value, bytes. A value travels in one multicast batch, whose
    /// `value_bytes_max` (4 MiB) bounds it from above.
    pub value_bytes_max: usize,
    /// Most entries one range read or snapshot page returns.
    pub range_entries_max: u32,
    /// Most entries in one `putAll`.
    pub put_all_entries_max: usize,
    /// Most key and value bytes in one `putAll`; it travels as one value of
    /// the global stream.
    pub put_all_bytes_max: usize,
    /// Longest snapshot lease, µs. A snapshot keeps old versions alive; a
    /// forgotten one must not pin memory for long.
    pub snapshot_lease_micros_max: u64,
    /// Most open snapshots per partition.
    pub snapshots_max: usize,
    /// Most open snapshots of one user per partition: a quarter of
    /// `snapshots_max`, so one user (or one leaking client) cannot take
    /// every slot from the others.
    pub snapshots_per_user_max: usize,
    /// Longest read version lease, µs. A read version keeps a snapshot of
    /// every map and the index of writes since it alive; transactions are
    /// meant to be short (FoundationDB allows 5 s).
    pub read_version_lease_micros_max: u64,
    /// Most open read versions per partition. Clients share one read
    /// version among transactions that begin together.
    pub read_versions_max: usize,
    /// Most open read versions of one user per partition: a quarter of
    /// `read_versions_max`, for the same reason.
    pub read_versions_per_user_max: usize,
    /// Most writes in one commit.
    pub txn_writes_max: usize,
    /// Most read conflict ranges in one commit.
    pub txn_read_ranges_max: usize,
    /// Most key, value and range bytes in one commit; it travels as one
    /// value of a stream.
    pub txn_bytes_max: usize,
    /// Most entry bytes one log read returns (a read returns at least one
    /// entry, however large): a reply travels in one gRPC message.
    pub log_read_bytes_max: usize,
}

impl Default for MapLimits {
    fn default() -> Self {
        MapLimits {
            key_bytes_max: 16 * 1024,
            value_bytes_max: 1024 * 1024,
            range_entries_max: 10_000,
            put_all_entries_max: 10_000,
            put_all_bytes_max: 3 * 1024 * 1024,
            snapshot_lease_micros_max: 10 * 60 * 1_000_000,
            snapshots_max: 1024,
            snapshots_per_user_max: 256,
            read_version_lease_micros_max: 60 * 1_000_000,
            read_versions_max: 4096,
            read_versions_per_user_max: 1024,
            txn_writes_max: 10_000,
            txn_read_ranges_max: 10_000,
            txn_bytes_max: 3 * 1024 * 1024,
            log_read_bytes_max: 4 * 1024 * 1024,
        }
    }
}
