//! An eventual map's placement as the replicated configuration holds it
//! (issue 23, placement): the ring of virtual nodes (replica ids in ring
//! order, each key on `replication` consecutive ones) and the node that
//! holds every id ever used. Made and changed only by commands of the
//! global stream, so every node computes the same placement from the same
//! point of the order; the data path never goes through Ring Paxos.
//!
//! Virtual node `i` goes to node `nodes[i % nodes.len()]` with the count
//! rounded up to a multiple of the node count, so any `replication`
//! consecutive virtual nodes (wrapping around too) sit on distinct nodes
//! when `replication <= nodes.len()` (Dynamo's preference list, without
//! skipping).

use crate::dot::ReplicaId;
use crate::ring::Ring;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Virtual nodes when a request gives 0.
pub const VNODES_DEFAULT: u32 = 16;
/// The most virtual nodes a request may ask for (before rounding up to a
/// multiple of the node count).
pub const VNODES_MAX: u32 = 1024;

/// Where an eventual map's replicas live.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Placement {
    /// Replica ids in ring order, the replication factor, retired ids.
    pub ring: Ring,
    /// Every id ever used (members and retired) → the node holding it.
    pub nodes: BTreeMap<ReplicaId, u32>,
    /// The configuration version that created the map: a map dropped and
    /// created again under its name is another map (its replicas'
    /// messages never mix with the old one's).
    pub created_at: u64,
    /// The MerkleDB baseline's store (per-key clocks, tombstones,
    /// Merkle-tree anti-entropy) instead of DottedDB's: for comparisons
    /// (DottedDB §V) on the same ring, nodes and network.
    pub merkle: bool,
}

/// Why a placement cannot be made.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PlacementError {
    /// `replication` is 0 or above the node count.
    Replication {
        /// Asked for.
        replication: u32,
        /// Nodes available.
        nodes: usize,
    },
    /// `vnodes` above [`VNODES_MAX`].
    Vnodes(u32),
}

impl std::fmt::Display for PlacementError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PlacementError::Replication { replication, nodes } => write!(
                f,
                "an eventual map needs 1 to {nodes} replicas (one per node), not {replication}"
            ),
            PlacementError::Vnodes(v) => {
                write!(f, "{v} virtual nodes (at most {VNODES_MAX})")
            }
        }
    }
}

impl std::error::Error for PlacementError {}

impl Placement {
    /// A new map's placement over `nodes` (distinct, any order: sorted
    /// here so every node computes the same ring), made at configuration
    /// version `created_at`. Replica ids start at 1.
    pub fn new(
        replication: u32,
        vnodes: u32,
        nodes: &[u32],
        created_at: u64,
    ) -> Result<Placement, PlacementError> {
        let mut nodes = nodes.to_vec();
        nodes.sort_unstable();
        nodes.dedup();
        if replication == 0 || replication as usize > nodes.len() {
            return Err(PlacementError::Replication {
                replication,
                nodes: nodes.len(),
            });
        }
        if vnodes > VNODES_MAX {
            return Err(PlacementError::Vnodes(vnodes));
        }
        let asked = if vnodes == 0 { VNODES_DEFAULT } else { vnodes } as usize;
        let count = asked.div_ceil(nodes.len()) * nodes.len();
        let ids: Vec<ReplicaId> = (1..=count as u64).map(ReplicaId).collect();
        let placed = ids
            .iter()
            .enumerate()
            .map(|(i, id)| (*id, nodes[i % nodes.len()]))
            .collect();
        let placement = Placement {
            ring: Ring::new(ids, replication as usize),
            nodes: placed,
            created_at,
            merkle: false,
        };
        placement.check();
        Ok(placement)
    }

    /// The node holding `id` (member or retired).
    pub fn node_of(&self, id: ReplicaId) -> Option<u32> {
        self.nodes.get(&id).copied()
    }

    /// The members `node` holds.
    pub fn held_by(&self, node: u32) -> Vec<ReplicaId> {
        self.ring
            .members()
            .iter()
            .copied()
            .filter(|id| self.nodes.get(id) == Some(&node))
            .collect()
    }

    /// The placement with `old` replaced by a fresh id on the same node
    /// (the replica lost its state; ids are never reused).
    pub fn replace(&self, old: ReplicaId) -> Placement {
        let fresh = ReplicaId(self.nodes.keys().next_back().map_or(1, |id| id.0 + 1));
        let node = self.nodes[&old];
        let mut next = self.clone();
        next.ring = self.ring.replace(old, fresh);
        next.nodes.insert(fresh, node);
        next.check();
        next
    }

    /// Every key's replicas are on distinct nodes, and every id has a node.
    pub fn check(&self) {
        let members = self.ring.members();
        for id in members.iter().chain(self.ring.retired().keys()) {
            assert!(self.nodes.contains_key(id), "{id} has no node");
        }
        let n = self.ring.replication();
        for at in 0..members.len() {
            let mut on: Vec<u32> = (0..n)
                .map(|i| self.nodes[&members[(at + i) % members.len()]])
                .collect();
            on.sort_unstable();
            on.dedup();
            assert_eq!(on.len(), n, "replicas from position {at} share a node");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dynamo_preference_lists_sit_on_distinct_nodes_also_across_the_wrap() {
        let p = Placement::new(2, 4, &[3, 1, 2], 7).unwrap();
        assert_eq!(p.ring.members().len(), 6, "4 rounded up to 2 per node");
        assert_eq!(p.held_by(1), vec![ReplicaId(1), ReplicaId(4)]);
        for k in 0..200u32 {
            let key = k.to_be_bytes();
            let mut on: Vec<u32> = p
                .ring
                .replicas(&key)
                .iter()
                .map(|r| p.node_of(*r).unwrap())
                .collect();
            on.dedup();
            assert_eq!(on.len(), 2);
        }
    }

    #[test]
    fn refuses_more_replicas_than_nodes_and_too_many_vnodes() {
        assert!(Placement::new(0, 0, &[1, 2, 3], 1).is_err());
        assert!(Placement::new(4, 0, &[1, 2, 3], 1).is_err());
        assert!(Placement::new(3, VNODES_MAX + 1, &[1, 2, 3], 1).is_err());
        assert_eq!(
            Placement::new(3, 0, &[1, 2, 3], 1)
                .unwrap()
                .ring
                .members()
                .len(),
            18
        );
    }

    #[test]
    fn a_replacement_takes_an_id_never_used_on_the_same_node() {
        let p = Placement::new(3, 3, &[1, 2, 3], 1).unwrap();
        let q = p.replace(ReplicaId(2));
        assert_eq!(
            q.ring.members(),
            &[ReplicaId(1), ReplicaId(4), ReplicaId(3)]
        );
        assert_eq!(q.node_of(ReplicaId(4)), Some(2));
        let r = q.replace(ReplicaId(4));
        assert_eq!(r.node_of(ReplicaId(5)), Some(2));
        assert!(r.ring.is_retired(ReplicaId(2)) && r.ring.is_retired(ReplicaId(4)));
    }
}
