//! The commands of the map API (DMap §III: the `java.util.SortedMap`
//! operations, plus range reads and snapshots).

use crate::{MapError, MapLimits, MapName};
use bytes::Bytes;
use serde::{Deserialize, Serialize};
use std::ops::Bound;

/// One end of a key range.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeyBound {
    /// The key.
    pub key: Bytes,
    /// Whether the key itself is in the range.
    pub inclusive: bool,
}

/// A range read: entries with keys between `from` and `to` (either open),
/// at most `limit`, in ascending key order or descending if `reverse`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RangeQuery {
    /// Lower end; `None` for the first key.
    pub from: Option<KeyBound>,
    /// Upper end; `None` past the last key.
    pub to: Option<KeyBound>,
    /// Most entries to return, 1..=`range_entries_max`.
    pub limit: u32,
    /// Descending order: the `limit` highest keys of the range.
    pub reverse: bool,
}

impl RangeQuery {
    /// The range's ends as `Bound`s.
    pub fn bounds(&self) -> (Bound<&Bytes>, Bound<&Bytes>) {
        RangeQuery::bounds_of(&self.from, &self.to)
    }

    fn bounds_of<'a>(
        from: &'a Option<KeyBound>,
        to: &'a Option<KeyBound>,
    ) -> (Bound<&'a Bytes>, Bound<&'a Bytes>) {
        fn bound(end: &Option<KeyBound>) -> Bound<&Bytes> {
            match end {
                None => Bound::Unbounded,
                Some(b) if b.inclusive => Bound::Included(&b.key),
                Some(b) => Bound::Excluded(&b.key),
            }
        }
        (bound(from), bound(to))
    }

    /// Whether `key` lies in the range.
    pub fn contains(&self, key: &[u8]) -> bool {
        let above_from = match &self.from {
            None => true,
            Some(b) if b.inclusive => key >= &b.key[..],
            Some(b) => key > &b.key[..],
        };
        let below_to = match &self.to {
            None => true,
            Some(b) if b.inclusive => key <= &b.key[..],
            Some(b) => key < &b.key[..],
        };
        above_from && below_to
    }
}

/// A range of keys, either end open (a transaction's read conflict range).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeyRange {
    /// Lower end; `None` for the first key.
    pub from: Option<KeyBound>,
    /// Upper end; `None` past the last key.
    pub to: Option<KeyBound>,
}

impl KeyRange {
    /// The range holding `key` alone.
    pub fn single(key: Bytes) -> KeyRange {
        KeyRange {
            from: Some(KeyBound {
                key: key.clone(),
                inclusive: true,
            }),
            to: Some(KeyBound {
                key,
                inclusive: true,
            }),
        }
    }

    /// The range's ends as `Bound`s.
    pub fn bounds(&self) -> (Bound<&Bytes>, Bound<&Bytes>) {
        RangeQuery::bounds_of(&self.from, &self.to)
    }

    /// The one key the range holds, if it is a single key.
    pub fn single_key(&self) -> Option<&Bytes> {
        match (&self.from, &self.to) {
            (Some(from), Some(to)) if from.inclusive && to.inclusive && from.key == to.key => {
                Some(&from.key)
            }
            _ => None,
        }
    }

    /// Whether no key lies in the range (`range()` of an ordered map would
    /// panic on it).
    pub fn is_empty(&self) -> bool {
        match (&self.from, &self.to) {
            (Some(from), Some(to)) => {
                from.key > to.key || (from.key == to.key && !(from.inclusive && to.inclusive))
            }
            _ => false,
        }
    }
}

/// A read conflict range of a transaction: committing fails if a key in
/// it was written after the transaction's read version, whether or not
/// the key existed when read (phantoms count).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReadConflict {
    /// The map read.
    pub map: MapName,
    /// The keys read (a single key, or the part of a range the read
    /// covered).
    pub range: KeyRange,
}

/// A write of a transaction.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TxnWrite {
    /// The map.
    pub map: MapName,
    /// The key.
    pub key: Bytes,
    /// The new value; `None` removes the key.
    pub value: Option<Bytes>,
}

/// Which neighbour of a key to find (`NavigableMap`'s floor, ceiling,
/// higher and lower).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Nearest {
    /// Greatest key <= the key.
    Floor,
    /// Least key >= the key.
    Ceiling,
    /// Least key > the key.
    Higher,
    /// Greatest key < the key.
    Lower,
}

impl Nearest {
    /// Whether the answer is the greatest candidate (floor, lower) rather
    /// than the least (ceiling, higher).
    pub fn wants_greatest(self) -> bool {
        matches!(self, Nearest::Floor | Nearest::Lower)
    }
}

/// A command on a map. Single-key commands run in the key's partition;
/// the others (marked "every partition") run in every partition of the
/// map and their partial replies are combined.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum MapCommand {
    /// Creates an empty map (every partition), spread by `layout`.
    CreateMap {
        /// The map.
        map: MapName,
        /// Hash or range partitioning, fixed for the map's life.
        layout: amulet_smr::Layout,
    },
    /// Drops a map and its entries (every partition).
    DropMap {
        /// The map.
        map: MapName,
    },
    /// The value of `key`.
    Get {
        /// The map.
        map: MapName,
        /// The key.
        key: Bytes,
    },
    /// Whether `key` has a value.
    ContainsKey {
        /// The map.
        map: MapName,
        /// The key.
        key: Bytes,
    },
    /// Sets `key` to `value`; replies with the previous value.
    Put {
        /// The map.
        map: MapName,
        /// The key.
        key: Bytes,
        /// The new value.
        value: Bytes,
    },
    /// Removes `key`; replies with the removed value.
    Remove {
        /// The map.
        map: MapName,
        /// The key.
        key: Bytes,
    },
    /// Sets `key` only if it has no value; replies with the existing value
    /// (`None`: it was set).
    PutIfAbsent {
        /// The map.
        map: MapName,
        /// The key.
        key: Bytes,
        /// The value to set.
        value: Bytes,
    },
    /// Sets `key` only if it has a value; replies with the previous value.
    Replace {
        /// The map.
        map: MapName,
        /// The key.
        key: Bytes,
        /// The new value.
        value: Bytes,
    },
    /// Sets `key` to `value` only if it is `expected`; replies whether it
    /// did.
    ReplaceIfEquals {
        /// The map.
        map: MapName,
        /// The key.
        key: Bytes,
        /// The value it must have.
        expected: Bytes,
        /// The new value.
        value: Bytes,
    },
    /// Removes `key` only if its value is `expected`; replies whether it
    /// did.
    RemoveIfEquals {
        /// The map.
        map: MapName,
        /// The key.
        key: Bytes,
        /// The value it must have.
        expected: Bytes,
    },
    /// Sets all entries atomically (every partition that owns one of the
    /// keys). A key given twice takes its last value.
    PutAll {
        /// The map.
        map: MapName,
        /// Entries to set.
        entries: Vec<(Bytes, Bytes)>,
    },
    /// Whether some key has `value` (every partition).
    ContainsValue {
        /// The map.
        map: MapName,
        /// The value.
        value: Bytes,
    },
    /// Number of entries (every partition).
    Size {
        /// The map.
        map: MapName,
    },
    /// Whether the map has no entries (every partition).
    IsEmpty {
        /// The map.
        map: MapName,
    },
    /// Removes every entry (every partition).
    Clear {
        /// The map.
        map: MapName,
    },
    /// The entry with the least key (every partition).
    FirstEntry {
        /// The map.
        map: MapName,
    },
    /// The entry with the greatest key (every partition).
    LastEntry {
        /// The map.
        map: MapName,
    },
    /// The floor, ceiling, higher or lower entry of `key` (every partition
    /// that can hold it).
    NearestEntry {
        /// The map.
        map: MapName,
        /// The key.
        key: Bytes,
        /// Which neighbour.
        nearest: Nearest,
    },
    /// A range read (every partition that holds part of the range).
    Range {
        /// The map.
        map: MapName,
        /// The range.
        range: RangeQuery,
    },
    /// Takes a snapshot of the map at this point of the order, held for
    /// `lease_micros` of replicated time unless released first (every
    /// partition). Its pages are then read from any replica that executed
    /// this command, without ordering.
    OpenSnapshot {
        /// The map.
        map: MapName,
        /// Lease, µs.
        lease_micros: u64,
    },
    /// Releases a snapshot (every partition).
    ReleaseSnapshot {
        /// The snapshot.
        snapshot: u64,
    },
    /// Takes a read version for a transaction: every partition keeps a
    /// copy-on-write snapshot of all its maps at this point of the global
    /// order, for `lease_micros` of replicated time unless ended first
    /// (every partition, with the signal exchange, so the version is at
    /// or after everything completed before it was asked for). Replies
    /// with the version, its global position.
    BeginTransaction {
        /// Lease, µs.
        lease_micros: u64,
        /// Read versions ended first (a client ends the ones it is done
        /// with in its next begin).
        end: Vec<u64>,
    },
    /// Ends a read version (every partition).
    EndTransaction {
        /// The read version.
        read_version: u64,
    },
    /// Commits a transaction: each partition it involves votes on its own
    /// read conflict ranges (no key in them written since the read
    /// version) and all apply the writes or none does.
    Commit {
        /// The version the transaction read at; `None` for blind writes,
        /// which conflict with nothing.
        read_version: Option<u64>,
        /// What the transaction read.
        reads: Vec<ReadConflict>,
        /// What it writes, in order (a key written twice takes its last
        /// write).
        writes: Vec<TxnWrite>,
    },
    /// Sets and removes fields of the field record stored at `key`
    /// (docs/field-records.md) in one step, keeping its other fields: a
    /// field with a value is set, one without is removed. Replies whether
    /// the key had a value; a missing key stays missing. A value that is
    /// not a field record is refused and left as it is.
    MergeFields {
        /// The map.
        map: MapName,
        /// The key.
        key: Bytes,
        /// Field names and their new values (`None`: remove the field).
        fields: Vec<(Bytes, Option<Bytes>)>,
    },
    /// Creates an empty log (DLog, thesis §3.5.2; every partition, so
    /// every partition knows the name; its entries live in the one
    /// partition that owns the log's name). Maps and logs share one
    /// namespace.
    CreateLog {
        /// The log.
        log: MapName,
    },
    /// Drops a log and its entries (every partition).
    DropLog {
        /// The log.
        log: MapName,
    },
    /// Appends `value` to `log`; replies with its position.
    Append {
        /// The log.
        log: MapName,
        /// The entry.
        value: Bytes,
    },
    /// Appends each value to its log, all or none, in one step of the
    /// order (every partition holding one of the logs); replies with the
    /// positions, in the order given. A log named twice gets consecutive
    /// positions.
    MultiAppend {
        /// Logs and entries.
        appends: Vec<(MapName, Bytes)>,
    },
    /// Up to `max_entries` entries of `log` from position `from` (at most
    /// `log_read_bytes_max` bytes, but at least one entry when one exists).
    /// `from` equal to the log's end reads nothing: the way to poll.
    ReadLog {
        /// The log.
        log: MapName,
        /// The first position to read.
        from: u64,
        /// Most entries, 1..=`range_entries_max`.
        max_entries: u32,
    },
    /// Drops the entries of `log` below position `below`; replies with the
    /// log's bounds after.
    TrimLog {
        /// The log.
        log: MapName,
        /// The new first position (at most the log's end).
        below: u64,
    },
    /// The log's first position and its end (the next append's).
    LogBounds {
        /// The log.
        log: MapName,
    },
    /// A node registers its eventual store (every partition, through the
    /// global stream): the node sends it itself, never a client. The
    /// partition map records it; another incarnation than the recorded
    /// one replaces the node's eventual replica ids
    /// (`PartitionMap::register_eventual_store`). Last, so the variants
    /// before it keep their encoding.
    RegisterEventualStore {
        /// The node.
        node: u32,
        /// Its eventual store's incarnation.
        incarnation: u64,
    },
}

impl MapCommand {
    /// The map the command names (`None` for `ReleaseSnapshot`).
    pub fn map(&self) -> Option<&MapName> {
        use MapCommand::*;
        match self {
            CreateMap { map, .. }
            | DropMap { map }
            | Get { map, .. }
            | ContainsKey { map, .. }
            | Put { map, .. }
            | Remove { map, .. }
            | PutIfAbsent { map, .. }
            | Replace { map, .. }
            | ReplaceIfEquals { map, .. }
            | RemoveIfEquals { map, .. }
            | PutAll { map, .. }
            | ContainsValue { map, .. }
            | Size { map }
            | IsEmpty { map }
            | Clear { map }
            | FirstEntry { map }
            | LastEntry { map }
            | NearestEntry { map, .. }
            | Range { map, .. }
            | MergeFields { map, .. }
            | OpenSnapshot { map, .. } => Some(map),
            ReleaseSnapshot { .. }
            | RegisterEventualStore { .. }
            | BeginTransaction { .. }
            | EndTransaction { .. }
            | Commit { .. }
            | CreateLog { .. }
            | DropLog { .. }
            | Append { .. }
            | MultiAppend { .. }
            | ReadLog { .. }
            | TrimLog { .. }
            | LogBounds { .. } => None,
        }
    }

    /// The one log a log command names (`None` for `MultiAppend`, which
    /// names several, and for map commands).
    pub fn log(&self) -> Option<&MapName> {
        use MapCommand::*;
        match self {
            CreateLog { log }
            | DropLog { log }
            | Append { log, .. }
            | ReadLog { log, .. }
            | TrimLog { log, .. }
            | LogBounds { log } => Some(log),
            _ => None,
        }
    }

    /// Whether the command is one of DLog's.
    pub fn is_log_command(&self) -> bool {
        self.log().is_some() || matches!(self, MapCommand::MultiAppend { .. })
    }

    /// The one key a single-key command reads or writes.
    pub fn single_key(&self) -> Option<&Bytes> {
        use MapCommand::*;
        match self {
            Get { key, .. }
            | ContainsKey { key, .. }
            | Put { key, .. }
            | Remove { key, .. }
            | PutIfAbsent { key, .. }
            | Replace { key, .. }
            | ReplaceIfEquals { key, .. }
            | RemoveIfEquals { key, .. }
            | MergeFields { key, .. } => Some(key),
            _ => None,
        }
    }

    /// Whether the command never changes state, so a replica may skip
    /// recording its reply for exactly-once (a retried read just reads
    /// again).
    pub fn is_read_only(&self) -> bool {
        use MapCommand::*;
        matches!(
            self,
            Get { .. }
                | ContainsKey { .. }
                | ContainsValue { .. }
                | Size { .. }
                | IsEmpty { .. }
                | FirstEntry { .. }
                | LastEntry { .. }
                | NearestEntry { .. }
                | Range { .. }
                | ReadLog { .. }
                | LogBounds { .. }
        )
    }

    /// Checks every size and shape rule. Run at the edge, before the
    /// command is ordered, and again before it executes.
    pub fn validate(&self, limits: &MapLimits) -> Result<(), MapError> {
        use MapCommand::*;
        if let Some(key) = self.single_key() {
            check_key(key, limits)?;
        }
        match self {
            Put { value, .. } | PutIfAbsent { value, .. } | Replace { value, .. } => {
                check_value(value, limits)
            }
            ReplaceIfEquals {
                expected, value, ..
            } => check_value(expected, limits).and_then(|()| check_value(value, limits)),
            RemoveIfEquals { expected, .. } => check_value(expected, limits),
            ContainsValue { value, .. } => check_value(value, limits),
            NearestEntry { key, .. } => check_key(key, limits),
            PutAll { entries, .. } => check_put_all(entries, limits),
            Range { range, .. } => check_range(range, limits),
            OpenSnapshot { lease_micros, .. } => {
                if *lease_micros == 0 || *lease_micros > limits.snapshot_lease_micros_max {
                    return Err(MapError::BadLease {
                        micros: *lease_micros,
                        max: limits.snapshot_lease_micros_max,
                    });
                }
                Ok(())
            }
            BeginTransaction { lease_micros, end } => {
                if *lease_micros == 0 || *lease_micros > limits.read_version_lease_micros_max {
                    return Err(MapError::BadLease {
                        micros: *lease_micros,
                        max: limits.read_version_lease_micros_max,
                    });
                }
                if end.len() > limits.read_versions_max {
                    return Err(MapError::BadTransaction(format!(
                        "a begin ends at most read_versions_max = {} read versions, not {}",
                        limits.read_versions_max,
                        end.len()
                    )));
                }
                Ok(())
            }
            Commit {
                read_version,
                reads,
                writes,
            } => check_commit(*read_version, reads, writes, limits),
            MergeFields { fields, .. } => check_fields(fields, limits),
            Append { value, .. } => check_value(value, limits),
            MultiAppend { appends } => check_multi_append(appends, limits),
            ReadLog { max_entries, .. } => {
                if *max_entries == 0 || *max_entries > limits.range_entries_max {
                    return Err(MapError::BadLogRequest(format!(
                        "max_entries {max_entries} outside 1..={}",
                        limits.range_entries_max
                    )));
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }
}

/// A `multiAppend`: at least one entry, at most `put_all_entries_max`
/// entries and `put_all_bytes_max` bytes (it travels as one value of the
/// global stream), each entry within `value_bytes_max`.
fn check_multi_append(appends: &[(MapName, Bytes)], limits: &MapLimits) -> Result<(), MapError> {
    if appends.is_empty() {
        return Err(MapError::BadLogRequest(
            "a multiAppend needs at least one entry".to_string(),
        ));
    }
    let bytes: usize = appends
        .iter()
        .map(|(log, v)| log.as_str().len() + v.len())
        .sum();
    if appends.len() > limits.put_all_entries_max || bytes > limits.put_all_bytes_max {
        return Err(MapError::BadLogRequest(format!(
            "multiAppend of {} entries ({bytes} bytes) exceeds put_all_entries_max = {} or put_all_bytes_max = {}",
            appends.len(),
            limits.put_all_entries_max,
            limits.put_all_bytes_max
        )));
    }
    for (_, value) in appends {
        check_value(value, limits)?;
    }
    Ok(())
}

/// A `mergeFields`'s fields: at least one, at most `put_all_entries_max`,
/// each named once, names and values together within `value_bytes_max`
/// (the record they make must fit in a value).
fn check_fields(fields: &[(Bytes, Option<Bytes>)], limits: &MapLimits) -> Result<(), MapError> {
    if fields.is_empty() {
        return Err(MapError::BadFields("no fields to merge".to_string()));
    }
    if fields.len() > limits.put_all_entries_max {
        return Err(MapError::BadFields(format!(
            "{} fields exceed put_all_entries_max = {}",
            fields.len(),
            limits.put_all_entries_max
        )));
    }
    let bytes: usize = fields
        .iter()
        .map(|(name, value)| name.len() + value.as_ref().map_or(0, Bytes::len))
        .sum();
    if bytes > limits.value_bytes_max {
        return Err(MapError::ValueTooLarge {
            bytes,
            max: limits.value_bytes_max,
        });
    }
    let mut names: Vec<&Bytes> = fields.iter().map(|(name, _)| name).collect();
    names.sort_unstable();
    if let Some(twice) = names.windows(2).find(|pair| pair[0] == pair[1]) {
        return Err(MapError::BadFields(format!(
            "field {:?} named twice",
            String::from_utf8_lossy(twice[0])
        )));
    }
    Ok(())
}

fn check_key(key: &[u8], limits: &MapLimits) -> Result<(), MapError> {
    if key.len() > limits.key_bytes_max {
        return Err(MapError::KeyTooLarge {
            bytes: key.len(),
            max: limits.key_bytes_max,
        });
    }
    Ok(())
}

fn check_value(value: &[u8], limits: &MapLimits) -> Result<(), MapError> {
    if value.len() > limits.value_bytes_max {
        return Err(MapError::ValueTooLarge {
            bytes: value.len(),
            max: limits.value_bytes_max,
        });
    }
    Ok(())
}

fn check_put_all(entries: &[(Bytes, Bytes)], limits: &MapLimits) -> Result<(), MapError> {
    let bytes: usize = entries.iter().map(|(k, v)| k.len() + v.len()).sum();
    if entries.len() > limits.put_all_entries_max || bytes > limits.put_all_bytes_max {
        return Err(MapError::TooManyEntries {
            entries: entries.len(),
            bytes,
            entries_max: limits.put_all_entries_max,
            bytes_max: limits.put_all_bytes_max,
        });
    }
    for (key, value) in entries {
        check_key(key, limits)?;
        check_value(value, limits)?;
    }
    Ok(())
}

fn check_commit(
    read_version: Option<u64>,
    reads: &[ReadConflict],
    writes: &[TxnWrite],
    limits: &MapLimits,
) -> Result<(), MapError> {
    let bytes: usize = writes
        .iter()
        .map(|w| w.key.len() + w.value.as_ref().map_or(0, Bytes::len))
        .sum::<usize>()
        + reads
            .iter()
            .map(|r| {
                let ends = [&r.range.from, &r.range.to];
                ends.into_iter()
                    .flatten()
                    .map(|b| b.key.len())
                    .sum::<usize>()
            })
            .sum::<usize>();
    if writes.len() > limits.txn_writes_max
        || reads.len() > limits.txn_read_ranges_max
        || bytes > limits.txn_bytes_max
    {
        return Err(MapError::TransactionTooLarge {
            writes: writes.len(),
            read_ranges: reads.len(),
            bytes,
            writes_max: limits.txn_writes_max,
            read_ranges_max: limits.txn_read_ranges_max,
            bytes_max: limits.txn_bytes_max,
        });
    }
    if writes.is_empty() && reads.is_empty() {
        return Err(MapError::BadTransaction(
            "a commit with neither reads nor writes (a read-only transaction sends none)"
                .to_string(),
        ));
    }
    if read_version.is_none() && !reads.is_empty() {
        return Err(MapError::BadTransaction(
            "read conflict ranges without a read version".to_string(),
        ));
    }
    for write in writes {
        check_key(&write.key, limits)?;
        if let Some(value) = &write.value {
            check_value(value, limits)?;
        }
    }
    for read in reads {
        for bound in [&read.range.from, &read.range.to].into_iter().flatten() {
            check_key(&bound.key, limits)?;
        }
        if let (Some(from), Some(to)) = (&read.range.from, &read.range.to) {
            if from.key > to.key {
                return Err(MapError::BadRange("start key is above end key".to_string()));
            }
        }
    }
    Ok(())
}

fn check_range(range: &RangeQuery, limits: &MapLimits) -> Result<(), MapError> {
    if range.limit == 0 || range.limit > limits.range_entries_max {
        return Err(MapError::BadRange(format!(
            "limit {} outside 1..={}",
            range.limit, limits.range_entries_max
        )));
    }
    for bound in [&range.from, &range.to].into_iter().flatten() {
        check_key(&bound.key, limits)?;
    }
    if let (Some(from), Some(to)) = (&range.from, &range.to) {
        if from.key > to.key {
            return Err(MapError::BadRange("start key is above end key".to_string()));
        }
    }
    Ok(())
}
