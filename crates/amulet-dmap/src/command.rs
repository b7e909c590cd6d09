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
        fn bound(end: &Option<KeyBound>) -> Bound<&Bytes> {
            match end {
                None => Bound::Unbounded,
                Some(b) if b.inclusive => Bound::Included(&b.key),
                Some(b) => Bound::Excluded(&b.key),
            }
        }
        (bound(&self.from), bound(&self.to))
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
            | OpenSnapshot { map, .. } => Some(map),
            ReleaseSnapshot { .. } => None,
        }
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
            | RemoveIfEquals { key, .. } => Some(key),
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
            _ => Ok(()),
        }
    }
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
