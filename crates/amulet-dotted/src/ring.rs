//! Where an eventual map's keys live (DottedDB §V-A, Dynamo's consistent
//! hashing): replicas in ring order, the keyspace cut into one equal range
//! per replica, and a key replicated by the owner of its range and the
//! next `n - 1` replicas. Peers are replicas that share a range.
//!
//! In a cluster the ring is part of the replicated configuration (changed
//! only through the global stream), so every replica computes the same
//! placement.

use crate::dot::ReplicaId;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Replicas in ring order, the replication factor, and the ids retired
/// from each position (a replica that lost its state is replaced by a new
/// id at its position; its old id is never used again).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ring {
    members: Vec<ReplicaId>,
    replication: usize,
    /// Retired id → the position it held.
    retired: BTreeMap<ReplicaId, usize>,
}

impl Ring {
    /// A ring of `members` (in ring order, distinct) replicating each key
    /// `replication` times (at most the member count).
    pub fn new(members: Vec<ReplicaId>, replication: usize) -> Ring {
        assert!(!members.is_empty(), "a ring needs a member");
        assert!(
            (1..=members.len()).contains(&replication),
            "replication {replication} with {} members",
            members.len()
        );
        let mut sorted = members.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted.len(), members.len(), "ring members repeat");
        Ring {
            members,
            replication,
            retired: BTreeMap::new(),
        }
    }

    /// The ring with `new` in `old`'s position and `old` retired.
    pub fn replace(&self, old: ReplicaId, new: ReplicaId) -> Ring {
        let at = self
            .members
            .iter()
            .position(|&m| m == old)
            .unwrap_or_else(|| panic!("{old} is not a member"));
        assert!(
            !self.members.contains(&new) && !self.retired.contains_key(&new),
            "{new} was used before: replica ids are never reused"
        );
        let mut ring = self.clone();
        ring.members[at] = new;
        ring.retired.insert(old, at);
        ring
    }

    /// The retired ids, with the positions they held.
    pub fn retired(&self) -> &BTreeMap<ReplicaId, usize> {
        &self.retired
    }

    /// Whether member `id` took the position of a retired id (a
    /// replacement: it starts from full transfers).
    pub fn is_replacement(&self, id: ReplicaId) -> bool {
        self.members
            .iter()
            .position(|&m| m == id)
            .is_some_and(|at| self.retired.values().any(|&r| r == at))
    }

    /// Whether `id` was retired.
    pub fn is_retired(&self, id: ReplicaId) -> bool {
        self.retired.contains_key(&id)
    }

    /// The retired ids that held one of `key`'s positions (their versions
    /// of `key` may still be around).
    pub fn retired_replicas(&self, key: &[u8]) -> Vec<ReplicaId> {
        let positions = self.positions(key);
        self.retired
            .iter()
            .filter(|(_, at)| positions.contains(at))
            .map(|(id, _)| *id)
            .collect()
    }

    /// The replica group of `key`: the position owning its range (its
    /// replicas are the group's `n` positions from there).
    pub fn group(&self, key: &[u8]) -> usize {
        let m = self.members.len() as u128;
        ((u128::from(token(key)) * m) >> 64) as usize
    }

    /// The replicas of every group, indexed by group (what `replicas`
    /// gives for a key of that group).
    pub fn group_replicas(&self) -> Vec<Vec<ReplicaId>> {
        let len = self.members.len();
        (0..len)
            .map(|owner| {
                (0..self.replication)
                    .map(|i| self.members[(owner + i) % len])
                    .collect()
            })
            .collect()
    }

    /// The groups `id` replicates (the owner positions whose `n`
    /// positions include its own).
    pub fn groups(&self, id: ReplicaId) -> Vec<usize> {
        let Some(at) = self.members.iter().position(|&m| m == id) else {
            return Vec::new();
        };
        let len = self.members.len();
        (0..self.replication)
            .map(|i| (at + len - i) % len)
            .collect()
    }

    fn positions(&self, key: &[u8]) -> Vec<usize> {
        let owner = self.group(key);
        (0..self.replication)
            .map(|i| (owner + i) % self.members.len())
            .collect()
    }

    fn position(&self, id: ReplicaId) -> Option<usize> {
        self.members
            .iter()
            .position(|&m| m == id)
            .or_else(|| self.retired.get(&id).copied())
    }

    /// The members, in ring order.
    pub fn members(&self) -> &[ReplicaId] {
        &self.members
    }

    /// Replicas per key.
    pub fn replication(&self) -> usize {
        self.replication
    }

    /// The replicas of `key`: its range's owner first.
    pub fn replicas(&self, key: &[u8]) -> Vec<ReplicaId> {
        self.positions(key)
            .into_iter()
            .map(|at| self.members[at])
            .collect()
    }

    /// Whether `id` replicates `key`.
    pub fn replicates(&self, id: ReplicaId, key: &[u8]) -> bool {
        self.replicas(key).contains(&id)
    }

    /// The peers of `id`, itself included: every replica that shares a
    /// range with it (DottedDB §II-B), in ring order from `n - 1` before
    /// it. For a retired id: the members around the position it held
    /// (its replacement in its place). Empty for an id never on the ring.
    pub fn peers(&self, id: ReplicaId) -> Vec<ReplicaId> {
        let Some(at) = self.position(id) else {
            return Vec::new();
        };
        let len = self.members.len();
        let reach = self.replication - 1;
        if 2 * reach + 1 >= len {
            return self.members.clone();
        }
        (0..=2 * reach)
            .map(|i| self.members[(at + len - reach + i) % len])
            .collect()
    }
}

/// A key's place on the ring: FNV-1a, then splitmix64's finaliser (FNV
/// alone leaves the high bits of short keys clustered, and the range is
/// chosen by the high bits). Stable across versions and platforms, which
/// placement must be.
pub fn token(key: &[u8]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in key {
        hash ^= u64::from(b);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    hash = (hash ^ (hash >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    hash = (hash ^ (hash >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    hash ^ (hash >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ring(m: u64, n: usize) -> Ring {
        Ring::new((1..=m).map(ReplicaId).collect(), n)
    }

    #[test]
    fn dotteddb_ii_b_a_key_lives_on_n_consecutive_replicas_that_are_peers() {
        let r = ring(7, 3);
        for k in 0..500u32 {
            let key = k.to_be_bytes();
            let replicas = r.replicas(&key);
            assert_eq!(replicas.len(), 3);
            for a in &replicas {
                for b in &replicas {
                    assert!(r.peers(*a).contains(b), "{a} and {b} share {k}");
                }
            }
        }
        assert_eq!(
            r.peers(ReplicaId(1)),
            vec![6, 7, 1, 2, 3]
                .into_iter()
                .map(ReplicaId)
                .collect::<Vec<_>>()
        );
        assert_eq!(ring(4, 3).peers(ReplicaId(2)).len(), 4);
        assert!(r.peers(ReplicaId(99)).is_empty());
    }

    #[test]
    fn a_replaced_id_is_retired_at_its_position_and_never_reused() {
        let r = ring(5, 3).replace(ReplicaId(2), ReplicaId(9));
        assert!(r.is_retired(ReplicaId(2)));
        assert_eq!(r.members()[1], ReplicaId(9));
        assert_eq!(r.peers(ReplicaId(2)), r.peers(ReplicaId(9)));
        for k in 0..200u32 {
            let key = k.to_be_bytes();
            assert_eq!(
                r.replicas(&key).contains(&ReplicaId(9)),
                r.retired_replicas(&key) == vec![ReplicaId(2)]
            );
        }
        let reuse = std::panic::catch_unwind(|| r.replace(ReplicaId(9), ReplicaId(2)));
        assert!(reuse.is_err(), "a retired id cannot come back");
    }

    #[test]
    fn dotteddb_ii_b_keys_spread_over_every_range() {
        let r = ring(5, 1);
        let mut counts = [0usize; 5];
        for k in 0..5000u32 {
            counts[(r.replicas(&k.to_be_bytes())[0].0 - 1) as usize] += 1;
        }
        assert!(counts.iter().all(|&c| c > 700), "{counts:?}");
    }
}
