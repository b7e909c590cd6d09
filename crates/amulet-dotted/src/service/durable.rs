//! A node's eventual maps on disk (issue 23, durability): one journal of
//! records for all its replicas, each record one input of `journal.rs`
//! (or a replica made or dropped), and a checkpoint of every replica's
//! state. The runtime appends the records the service emits, syncs them
//! once per flush (group commit) before it sends anything the service
//! emitted after them, and at a checkpoint writes the service's state and
//! starts an empty journal. A restart replays the synced records over the
//! checkpoint, so every replica's clock is exactly what it was and no dot
//! is issued twice.

use super::replica::Replica;
use crate::dot::ReplicaId;
use crate::journal::Input;
use crate::ring::Ring;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One change of a node's eventual replicas.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Record {
    /// A replica made (its map's placement put it on this node).
    Created {
        /// The map.
        map: String,
        /// The configuration version that created the map.
        created_at: u64,
        /// The replica.
        replica: ReplicaId,
        /// The ring it starts from.
        ring: Ring,
        /// The MerkleDB baseline's store instead of DottedDB's.
        merkle: bool,
    },
    /// An input applied to a replica.
    Input {
        /// The map.
        map: String,
        /// The replica.
        replica: ReplicaId,
        /// The input.
        input: Input,
    },
    /// Every replica of the map here dropped (the map was dropped, or
    /// created again under its name).
    Dropped {
        /// The map.
        map: String,
    },
    /// One replica dropped: the placement replaced its id (this node's
    /// store was declared lost while this copy was away). Last, so the
    /// variants before it keep their encoding.
    DroppedReplica {
        /// The map.
        map: String,
        /// The replica.
        replica: ReplicaId,
    },
}

impl Record {
    /// The record's bytes (postcard; the runtime frames and checksums).
    pub fn encode(&self) -> Vec<u8> {
        postcard::to_allocvec(self).expect("a record encodes")
    }

    /// A record from its bytes (total).
    pub fn decode(bytes: &[u8]) -> Result<Record, String> {
        let (record, rest) =
            postcard::take_from_bytes::<Record>(bytes).map_err(|e| e.to_string())?;
        if !rest.is_empty() {
            return Err(format!("{} bytes after the record", rest.len()));
        }
        Ok(record)
    }
}

/// Every replica of a node: map → (created_at, replica → state).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Replicas {
    /// By map.
    pub maps: BTreeMap<String, (u64, BTreeMap<ReplicaId, Replica>)>,
}

impl Replicas {
    /// Applies `record` exactly as the live service did.
    pub fn apply(&mut self, record: &Record) -> Result<(), String> {
        match record {
            Record::Created {
                map,
                created_at,
                replica,
                ring,
                merkle,
            } => {
                let entry = self
                    .maps
                    .entry(map.clone())
                    .or_insert_with(|| (*created_at, BTreeMap::new()));
                if entry.0 != *created_at {
                    return Err(format!(
                        "{map}: replica {replica} of the map made at {created_at}, held is of {}",
                        entry.0
                    ));
                }
                if entry.1.contains_key(replica) {
                    return Err(format!("{map}: replica {replica} made twice"));
                }
                entry
                    .1
                    .insert(*replica, Replica::new(*replica, ring.clone(), *merkle));
            }
            Record::Input {
                map,
                replica,
                input,
            } => {
                let state = self
                    .maps
                    .get_mut(map)
                    .and_then(|(_, m)| m.get_mut(replica))
                    .ok_or_else(|| format!("{map}: an input for unknown replica {replica}"))?;
                state.apply(input);
            }
            Record::Dropped { map } => {
                self.maps.remove(map);
            }
            Record::DroppedReplica { map, replica } => {
                if let Some((_, states)) = self.maps.get_mut(map) {
                    states.remove(replica);
                }
            }
        }
        Ok(())
    }

    /// The checkpoint's bytes.
    pub fn encode(&self) -> Vec<u8> {
        postcard::to_allocvec(self).expect("replicas encode")
    }

    /// A checkpoint from its bytes (total; the runtime checksums the file).
    pub fn decode(bytes: &[u8]) -> Result<Replicas, String> {
        let (replicas, rest) =
            postcard::take_from_bytes::<Replicas>(bytes).map_err(|e| e.to_string())?;
        if !rest.is_empty() {
            return Err(format!("{} bytes after the checkpoint", rest.len()));
        }
        for (map, (_, states)) in &replicas.maps {
            for (id, state) in states {
                if state.id() != *id {
                    return Err(format!("{map}: state of {} filed as {id}", state.id()));
                }
                state.check();
            }
        }
        Ok(replicas)
    }
}
