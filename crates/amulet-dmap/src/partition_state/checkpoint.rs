//! A partition's state in a replica checkpoint: the file's shape (and
//! the older formats it still decodes), and how a partition writes,
//! restores, splits off and absorbs one.

use super::{PartitionState, Snapshot, SnapshotId};
use crate::log::Log;
use crate::transaction::{ReadVersion, TransactionCheckpoint, Transactions};
use crate::{Entries, MapName};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Who holds each open snapshot and read version (checkpoint format 6;
/// older files decode with none, so what was open then counts against
/// nobody's share until it ends).
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct Holders {
    /// The user of each snapshot opened by a checked user.
    pub snapshots: BTreeMap<SnapshotId, String>,
    /// The user of each read version begun by a checked user.
    pub read_versions: BTreeMap<ReadVersion, String>,
}

/// A partition's state in a replica checkpoint (see
/// [`amulet_smr::StateMachine::checkpoint`]). Serialized as its fields in
/// order (postcard); a file of checkpoint format 3 has no `logs`, and
/// decodes with none (`amulet_smr::checkpoint_format`).
#[derive(Clone, Debug, Serialize)]
pub struct PartitionCheckpoint {
    /// Every map's entries (copy-on-write clones of the live maps).
    pub maps: BTreeMap<MapName, Entries>,
    /// Lease ends of the open snapshots, by snapshot.
    pub snapshot_leases: BTreeMap<SnapshotId, u64>,
    /// Read versions and recent writes.
    pub transactions: TransactionCheckpoint,
    /// Every log this partition knows: the entries of the logs it owns,
    /// an empty placeholder for the others (the catalog).
    pub logs: BTreeMap<MapName, Log>,
    /// Who holds the open snapshots and read versions.
    pub holders: Holders,
}

impl<'de> Deserialize<'de> for PartitionCheckpoint {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        use serde::de::{Error, SeqAccess, Visitor};
        struct Fields(usize);
        impl<'de> Visitor<'de> for Fields {
            type Value = PartitionCheckpoint;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                write!(f, "a partition checkpoint of {} fields", self.0)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let missing = |i| A::Error::invalid_length(i, &self);
                Ok(PartitionCheckpoint {
                    maps: seq.next_element()?.ok_or_else(|| missing(0))?,
                    snapshot_leases: seq.next_element()?.ok_or_else(|| missing(1))?,
                    transactions: seq.next_element()?.ok_or_else(|| missing(2))?,
                    logs: if self.0 > 3 {
                        seq.next_element()?.ok_or_else(|| missing(3))?
                    } else {
                        BTreeMap::new()
                    },
                    holders: if self.0 > 4 {
                        seq.next_element()?.ok_or_else(|| missing(4))?
                    } else {
                        Holders::default()
                    },
                })
            }
        }
        // Format 3 files predate logs, formats 4 and 5 holders.
        let fields = match amulet_smr::checkpoint_format::decoding_format() {
            ..=3 => 3,
            4 | 5 => 4,
            _ => 5,
        };
        deserializer.deserialize_tuple(fields, Fields(fields))
    }
}

impl PartitionState {
    /// The state as a checkpoint: O(number of maps and snapshots).
    pub fn to_checkpoint(&self) -> PartitionCheckpoint {
        PartitionCheckpoint {
            maps: self.maps.clone(),
            logs: if self.bugs.log_positions_not_checkpointed {
                self.logs
                    .iter()
                    .map(|(name, log)| (name.clone(), log.with_positions_from_zero()))
                    .collect()
            } else {
                self.logs.clone()
            },
            snapshot_leases: self.snapshot_leases(),
            transactions: if self.bugs.recent_writes_not_checkpointed {
                TransactionCheckpoint {
                    read_version_leases: self.txns.to_checkpoint().read_version_leases,
                    ..TransactionCheckpoint::default()
                }
            } else {
                self.txns.to_checkpoint()
            },
            holders: self.holders(),
        }
    }

    /// Lease ends of the open snapshots, by snapshot.
    fn snapshot_leases(&self) -> BTreeMap<SnapshotId, u64> {
        self.snapshots
            .iter()
            .map(|(id, s)| (*id, s.lease_until_micros))
            .collect()
    }

    /// Who holds the open snapshots and read versions.
    fn holders(&self) -> Holders {
        Holders {
            snapshots: self
                .snapshots
                .iter()
                .filter_map(|(id, s)| Some((*id, s.holder.clone()?)))
                .collect(),
            read_versions: self.txns.holders(),
        }
    }

    /// Replaces the maps and snapshots by a checkpoint's; the limits stay.
    pub fn restore_checkpoint(&mut self, checkpoint: PartitionCheckpoint) {
        self.maps = checkpoint.maps;
        self.logs = checkpoint.logs;
        let mut holders = checkpoint.holders;
        self.txns = Transactions::from_checkpoint(checkpoint.transactions, holders.read_versions);
        self.snapshots = checkpoint
            .snapshot_leases
            .into_iter()
            .map(|(id, lease_until_micros)| {
                let snapshot = Snapshot {
                    entries: None,
                    map: None,
                    lease_until_micros,
                    holder: holders.snapshots.remove(&id),
                };
                (id, snapshot)
            })
            .collect();
    }

    /// Removes the entries a split moves to a new partition (`moves`
    /// holds for them) and returns them as the new partition's state: the
    /// same catalog of maps, and the open snapshots as leases only (their
    /// pages stay with this partition, which still holds them whole).
    /// O(entries) to find what moves, O(moved · log n) to remove it.
    pub fn split_off(&mut self, moves: &dyn Fn(&str, &[u8]) -> bool) -> PartitionCheckpoint {
        let mut moved_maps = BTreeMap::new();
        for (name, entries) in self.maps.iter_mut() {
            let moved = entries.filtered(|key| moves(name.as_str(), key));
            if moved.len() * 2 > entries.len() {
                *entries = entries.filtered(|key| !moved.contains_key(key));
            } else {
                for entry in moved.iter() {
                    entries.remove(entry.key());
                }
            }
            moved_maps.insert(name.clone(), moved);
        }
        // A log is never split: it moves whole with its name's key, and
        // the side without it keeps an empty placeholder.
        let mut moved_logs = BTreeMap::new();
        for (name, log) in self.logs.iter_mut() {
            let moved = if moves(name.as_str(), name.as_str().as_bytes()) {
                std::mem::take(log)
            } else {
                Log::default()
            };
            moved_logs.insert(name.clone(), moved);
        }
        PartitionCheckpoint {
            maps: moved_maps,
            logs: moved_logs,
            snapshot_leases: self.snapshot_leases(),
            transactions: self.txns.split_off(moves),
            holders: self.holders(),
        }
    }

    /// Takes in the entries of a partition merged into this one (their
    /// keys are disjoint from these). A snapshot open in the merged
    /// partition keeps its lease here but no pages (its own pages went
    /// with the merged partition, this partition's alone are not the
    /// snapshot): reads of it are refused and the reader opens a new one.
    pub fn absorb_checkpoint(&mut self, other: PartitionCheckpoint) {
        for (name, theirs) in other.maps {
            let mine = self.maps.entry(name).or_default();
            *mine = std::mem::take(mine).union(theirs);
        }
        // One side holds the log, the other a placeholder (never
        // appended, so its end is 0): keep the one that went further.
        for (name, theirs) in other.logs {
            let mine = self.logs.entry(name).or_default();
            if theirs.end() > mine.end() {
                *mine = theirs;
            }
        }
        let mut holders = other.holders;
        self.txns.absorb(other.transactions, holders.read_versions);
        for (id, lease_until_micros) in other.snapshot_leases {
            let snapshot = self.snapshots.entry(id).or_insert(Snapshot {
                entries: None,
                map: None,
                lease_until_micros,
                holder: holders.snapshots.remove(&id),
            });
            snapshot.entries = None;
            snapshot.map = None;
            snapshot.lease_until_micros = snapshot.lease_until_micros.max(lease_until_micros);
        }
    }
}
