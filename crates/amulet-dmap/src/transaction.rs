//! Transactions without locks (SCONEKV §4–§5, realised on the total
//! order and S-SMR's signals instead of two-phase locking): one
//! partition's read versions and its index of recent writes.
//!
//! - A **read version** is the global position of a `BeginTransaction`:
//!   every partition keeps an O(1) copy-on-write snapshot of all its maps
//!   there, leased by replicated time. Begin runs on every partition with
//!   the signal exchange, so no partition executes anything after it
//!   before every partition has executed it: a commit that completed
//!   before the begin was asked for is in every partition's snapshot, and
//!   one that begins after a snapshot-excluded commit completed is
//!   excluded everywhere too (strict serializability, not only
//!   serializability; see `docs/transactions.md`).
//! - **Recent writes**: for every key written while some read version is
//!   open, the global position of its last write (`put`, `remove`, a
//!   committed transaction, ...); `clear`, `create` and `drop` stamp the
//!   whole map. A write at position `p` happened after read version `v`
//!   exactly when `p >= v` (the begin is the `v`-th global command; every
//!   command executed after it here sees a global position of at least
//!   `v`). Entries older than every open read version can conflict with
//!   nothing and are dropped.
//! - A **commit** is voted: each involved partition checks its part of the
//!   read conflict ranges against its recent writes and votes; all apply
//!   the writes or none does (`finish`).

use crate::partition_state::Entries;
use crate::{KeyRange, MapError, MapName, ReadConflict, TxnWrite};
use bytes::Bytes;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::ops::Bound;

/// A read version: a global position.
pub type ReadVersion = u64;

/// One open read version at this partition.
#[derive(Clone, Debug)]
pub(crate) struct OpenVersion {
    /// Every map as it was at the read version; `None` in a replica
    /// restored from a checkpoint since (checkpoints keep the lease, not
    /// a second copy of the maps): its reads go to other replicas.
    pub(crate) maps: Option<BTreeMap<MapName, Entries>>,
    pub(crate) lease_until_micros: u64,
    /// The user who began it, whose share it counts against (`None`:
    /// nobody was checked).
    pub(crate) holder: Option<String>,
}

/// What a checkpoint keeps of the transactions' state.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct TransactionCheckpoint {
    /// Lease ends of the open read versions.
    pub read_version_leases: BTreeMap<ReadVersion, u64>,
    /// Global position of each recent write, by map and key.
    pub recent_writes: BTreeMap<MapName, BTreeMap<Bytes, u64>>,
    /// Global position at which each map was last cleared, created or
    /// dropped, while a read version was open.
    pub map_changes: BTreeMap<MapName, u64>,
}

/// One partition's read versions and recent writes.
#[derive(Clone, Debug, Default)]
pub(crate) struct Transactions {
    pub(crate) open: BTreeMap<ReadVersion, OpenVersion>,
    /// key → global position of its last write, per map.
    recent: BTreeMap<MapName, imbl::OrdMap<Bytes, u64>>,
    /// Writes by position, to drop old ones in order. May name a key
    /// written again later; dropping checks the position.
    by_position: BTreeMap<u64, Vec<(MapName, Bytes)>>,
    map_changes: BTreeMap<MapName, u64>,
    /// The earliest lease end of the open read versions (a bound: the
    /// versions are only scanned once replicated time reaches it, not at
    /// every command).
    next_expiry_micros: u64,
}

impl Transactions {
    /// Whether a write now must be remembered: only an open read version
    /// can conflict with it.
    fn recording(&self) -> bool {
        !self.open.is_empty()
    }

    /// `key` of `map` was written at global position `position`.
    pub(crate) fn wrote(&mut self, map: &MapName, key: &Bytes, position: u64) {
        if !self.recording() {
            return;
        }
        self.recent
            .entry(map.clone())
            .or_default()
            .insert(key.clone(), position);
        self.by_position
            .entry(position)
            .or_default()
            .push((map.clone(), key.clone()));
    }

    /// `map` as a whole changed (cleared, created, dropped) at `position`.
    pub(crate) fn map_changed(&mut self, map: &MapName, position: u64) {
        if self.recording() {
            self.map_changes.insert(map.clone(), position);
        }
        if let Some(recent) = self.recent.get_mut(map) {
            // The whole map conflicts now; its keys need not.
            *recent = imbl::OrdMap::new();
        }
    }

    /// Opens read version `version` over `maps` for `holder`: at most
    /// `max` open here, at most `per_user_max` of them one user's (so no
    /// user can take every slot from the others).
    pub(crate) fn open(
        &mut self,
        version: ReadVersion,
        maps: BTreeMap<MapName, Entries>,
        lease_until_micros: u64,
        holder: Option<&str>,
        (max, per_user_max): (usize, usize),
    ) -> Result<(), MapError> {
        if !self.open.contains_key(&version) {
            if self.open.len() >= max {
                return Err(MapError::TooManyReadVersions(max));
            }
            if let Some(user) = holder {
                let held = self
                    .open
                    .values()
                    .filter(|v| v.holder.as_deref() == Some(user))
                    .count();
                if held >= per_user_max {
                    return Err(MapError::TooManyUserReadVersions(per_user_max));
                }
            }
        }
        self.open.insert(
            version,
            OpenVersion {
                maps: Some(maps),
                lease_until_micros,
                holder: holder.map(str::to_string),
            },
        );
        self.next_expiry_micros = self.next_expiry_micros.min(lease_until_micros);
        Ok(())
    }

    /// Ends read version `version` (idempotent).
    pub(crate) fn end(&mut self, version: ReadVersion) {
        self.open.remove(&version);
        self.forget_old();
    }

    /// Ends read versions whose lease passed by replicated time `now`.
    pub(crate) fn expire(&mut self, now_micros: u64) {
        if now_micros < self.next_expiry_micros {
            return;
        }
        let before = self.open.len();
        self.open.retain(|_, v| v.lease_until_micros > now_micros);
        self.next_expiry_micros = self
            .open
            .values()
            .map(|v| v.lease_until_micros)
            .min()
            .unwrap_or(u64::MAX);
        if self.open.len() != before {
            self.forget_old();
        }
    }

    /// Drops recent writes no open read version can conflict with: those
    /// at positions below the oldest open read version.
    fn forget_old(&mut self) {
        let Some(oldest) = self.open.keys().next().copied() else {
            self.recent.clear();
            self.by_position.clear();
            self.map_changes.clear();
            return;
        };
        let keep = self.by_position.split_off(&oldest);
        let old = std::mem::replace(&mut self.by_position, keep);
        for (_, keys) in old {
            for (map, key) in keys {
                if let Some(recent) = self.recent.get_mut(&map) {
                    if recent.get(&key).is_some_and(|p| *p < oldest) {
                        recent.remove(&key);
                    }
                }
            }
        }
        self.recent.retain(|_, recent| !recent.is_empty());
        self.map_changes.retain(|_, position| *position >= oldest);
    }

    /// This partition's vote on a commit that read at `read_version`: a
    /// conflict if a key in one of `reads` (or its whole map) was written
    /// here at or after the read version. `position` is the global
    /// position this partition executes the commit at.
    pub(crate) fn vote(
        &self,
        read_version: ReadVersion,
        reads: &[ReadConflict],
        position: u64,
    ) -> Result<(), MapError> {
        if read_version > position {
            return Err(MapError::FutureReadVersion(read_version));
        }
        if !self.open.contains_key(&read_version) {
            return Err(MapError::ReadVersionTooOld(read_version));
        }
        for read in reads {
            if let Some(key) = self.written_since(&read.map, &read.range, read_version) {
                return Err(MapError::Conflict {
                    map: read.map.to_string(),
                    key,
                });
            }
        }
        Ok(())
    }

    /// Whether a key of `range` in `map` was written at or after
    /// `version`: `Some(Some(key))` names one, `Some(None)` the map as a
    /// whole changed.
    pub(crate) fn written_since(
        &self,
        map: &MapName,
        range: &KeyRange,
        version: ReadVersion,
    ) -> Option<Option<Vec<u8>>> {
        if self.map_changes.get(map).is_some_and(|p| *p >= version) {
            return Some(None);
        }
        if range.is_empty() {
            return None;
        }
        let recent = self.recent.get(map)?;
        let (from, to) = range.bounds();
        let bounds = (from.map(|k| &k[..]), to.map(|k| &k[..]));
        recent
            .range::<(Bound<&[u8]>, Bound<&[u8]>), [u8]>(bounds)
            .find(|(_, position)| **position >= version)
            .map(|(key, _)| Some(key.to_vec()))
    }

    /// The maps of read version `version` as this replica holds them.
    pub(crate) fn maps_at(
        &self,
        version: ReadVersion,
    ) -> Result<&BTreeMap<MapName, Entries>, MapError> {
        let open = self
            .open
            .get(&version)
            .ok_or(MapError::ReadVersionTooOld(version))?;
        open.maps
            .as_ref()
            .ok_or(MapError::ReadVersionElsewhere(version))
    }

    /// Open read versions.
    pub(crate) fn open_count(&self) -> usize {
        self.open.len()
    }

    /// Keys in the index of recent writes.
    pub(crate) fn recent_count(&self) -> usize {
        self.recent.values().map(imbl::OrdMap::len).sum()
    }

    pub(crate) fn to_checkpoint(&self) -> TransactionCheckpoint {
        TransactionCheckpoint {
            read_version_leases: self
                .open
                .iter()
                .map(|(v, o)| (*v, o.lease_until_micros))
                .collect(),
            recent_writes: self
                .recent
                .iter()
                .map(|(m, r)| (m.clone(), r.iter().map(|(k, p)| (k.clone(), *p)).collect()))
                .collect(),
            map_changes: self.map_changes.clone(),
        }
    }

    /// Who holds each open read version that has a holder.
    pub(crate) fn holders(&self) -> BTreeMap<ReadVersion, String> {
        self.open
            .iter()
            .filter_map(|(v, o)| Some((*v, o.holder.clone()?)))
            .collect()
    }

    pub(crate) fn from_checkpoint(
        checkpoint: TransactionCheckpoint,
        mut holders: BTreeMap<ReadVersion, String>,
    ) -> Transactions {
        let mut by_position: BTreeMap<u64, Vec<(MapName, Bytes)>> = BTreeMap::new();
        for (map, keys) in &checkpoint.recent_writes {
            for (key, position) in keys {
                by_position
                    .entry(*position)
                    .or_default()
                    .push((map.clone(), key.clone()));
            }
        }
        Transactions {
            open: checkpoint
                .read_version_leases
                .into_iter()
                .map(|(v, lease_until_micros)| {
                    let open = OpenVersion {
                        maps: None,
                        lease_until_micros,
                        holder: holders.remove(&v),
                    };
                    (v, open)
                })
                .collect(),
            recent: checkpoint
                .recent_writes
                .into_iter()
                .map(|(m, keys)| (m, keys.into_iter().collect()))
                .collect(),
            by_position,
            map_changes: checkpoint.map_changes,
            // Scanned at the first command.
            next_expiry_micros: 0,
        }
    }

    /// The part a split moves away (`moves` holds for its keys): recent
    /// writes of those keys, every lease and map change (they hold for
    /// every partition). The read versions' snapshots stay here.
    pub(crate) fn split_off(
        &mut self,
        moves: &dyn Fn(&str, &[u8]) -> bool,
    ) -> TransactionCheckpoint {
        let mut moved = self.to_checkpoint();
        for (map, keys) in moved.recent_writes.iter_mut() {
            keys.retain(|key, _| moves(map.as_str(), key));
        }
        moved.recent_writes.retain(|_, keys| !keys.is_empty());
        for (map, recent) in self.recent.iter_mut() {
            let kept: imbl::OrdMap<Bytes, u64> = recent
                .iter()
                .filter(|(key, _)| !moves(map.as_str(), key))
                .map(|(k, p)| (k.clone(), *p))
                .collect();
            *recent = kept;
        }
        self.recent.retain(|_, recent| !recent.is_empty());
        moved
    }

    /// Takes in a merged partition's part (disjoint keys). Its read
    /// versions keep their leases but no snapshot here (half a snapshot
    /// is none): reads of them go elsewhere or begin again.
    pub(crate) fn absorb(
        &mut self,
        other: TransactionCheckpoint,
        mut holders: BTreeMap<ReadVersion, String>,
    ) {
        // Leases join these: scanned again at the next command.
        self.next_expiry_micros = 0;
        for (version, lease_until_micros) in other.read_version_leases {
            let open = self.open.entry(version).or_insert(OpenVersion {
                maps: None,
                lease_until_micros,
                holder: holders.remove(&version),
            });
            open.maps = None;
            open.lease_until_micros = open.lease_until_micros.max(lease_until_micros);
        }
        for (map, keys) in other.recent_writes {
            for (key, position) in keys {
                let recent = self.recent.entry(map.clone()).or_default();
                recent.insert(key.clone(), position);
                self.by_position
                    .entry(position)
                    .or_default()
                    .push((map.clone(), key));
            }
        }
        for (map, position) in other.map_changes {
            let mine = self.map_changes.entry(map).or_insert(position);
            *mine = (*mine).max(position);
        }
    }

    /// Checks that the index agrees with itself: every recent write is
    /// listed at its position, and nothing older than the oldest open
    /// read version is kept.
    pub(crate) fn check_invariants(&self) {
        let oldest = self.open.keys().next().copied();
        for (map, recent) in &self.recent {
            for (key, position) in recent.iter() {
                assert!(
                    self.by_position
                        .get(position)
                        .is_some_and(|keys| keys.iter().any(|(m, k)| m == map && k == key)),
                    "invariant 'every recent write is listed at its position' broken: \
                     {map} {key:?} at {position}"
                );
                assert!(
                    oldest.is_some_and(|oldest| *position >= oldest),
                    "invariant 'no recent write older than every read version' broken: \
                     {map} {key:?} at {position}, oldest open {oldest:?}"
                );
            }
        }
    }
}

/// The writes of a commit this partition applies: those of its keys, the
/// last write of a key written twice winning (they are applied in order).
pub(crate) fn owned_writes<'a>(
    writes: &'a [TxnWrite],
    owns: &'a dyn Fn(&str, &[u8]) -> bool,
) -> impl Iterator<Item = &'a TxnWrite> + 'a {
    writes.iter().filter(move |w| owns(w.map.as_str(), &w.key))
}
