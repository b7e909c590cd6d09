//! Merkle-tree anti-entropy between two MerkleDB replicas for one replica
//! group they share (DottedDB §III-A 1): the asker walks the tree top
//! down, asking for the hashes of the nodes it holds differently, then
//! the key-hash lists of the differing segments, then the objects whose
//! hashes differ, and merges them. Each step is one request and one
//! reply; nothing is sent below a subtree whose hashes agree.

use super::{object_hash, MerkleNode};
use crate::dot::ReplicaId;
use crate::object::Object;
use bytes::Bytes;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A step of an exchange, from the asker.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ExchangeRequest {
    /// The hashes of nodes `indices` at `level` of `group`'s tree.
    Tree {
        /// The asker.
        from: ReplicaId,
        /// The replica group.
        group: usize,
        /// The level (0: the root).
        level: usize,
        /// The nodes.
        indices: Vec<u32>,
    },
    /// The key-hash lists of `segments`.
    Segments {
        /// The asker.
        from: ReplicaId,
        /// The replica group.
        group: usize,
        /// The segments.
        segments: Vec<u32>,
    },
    /// The objects of `keys`.
    Objects {
        /// The asker.
        from: ReplicaId,
        /// The keys.
        keys: Vec<Bytes>,
    },
}

impl ExchangeRequest {
    /// The replica that asks.
    pub fn from(&self) -> ReplicaId {
        match self {
            ExchangeRequest::Tree { from, .. }
            | ExchangeRequest::Segments { from, .. }
            | ExchangeRequest::Objects { from, .. } => *from,
        }
    }
}

/// The answer to an [`ExchangeRequest`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ExchangeReply {
    /// Hashes at a level.
    Tree {
        /// The replica group.
        group: usize,
        /// The level.
        level: usize,
        /// (node, hash).
        hashes: Vec<(u32, u64)>,
    },
    /// Key-hash lists.
    Segments {
        /// The replica group.
        group: usize,
        /// (segment, its keys and hashes).
        entries: Vec<(u32, Vec<(Bytes, u64)>)>,
    },
    /// Objects.
    Objects {
        /// (key, object).
        objects: Vec<(Bytes, Object)>,
    },
}

impl MerkleNode {
    /// Starts an exchange with `peer` over the next replica group both
    /// hold (round robin); `None` when they share none.
    pub fn start_exchange(&mut self, peer: ReplicaId) -> Option<ExchangeRequest> {
        let theirs = self.ring.groups(peer);
        let shared: Vec<usize> = self
            .trees
            .keys()
            .copied()
            .filter(|g| theirs.contains(g))
            .collect();
        if shared.is_empty() {
            return None;
        }
        let group = shared[self.next_group % shared.len()];
        self.next_group += 1;
        self.exchange = Some((peer, group));
        Some(ExchangeRequest::Tree {
            from: self.id,
            group,
            level: 0,
            indices: vec![0],
        })
    }

    /// Answers a step of a peer's exchange.
    pub fn answer_exchange(&mut self, request: &ExchangeRequest) -> ExchangeReply {
        match request {
            ExchangeRequest::Tree {
                group,
                level,
                indices,
                ..
            } => ExchangeReply::Tree {
                group: *group,
                level: *level,
                hashes: self
                    .trees
                    .get_mut(group)
                    .map(|t| t.hashes(*level, indices))
                    .unwrap_or_default(),
            },
            ExchangeRequest::Segments {
                group, segments, ..
            } => ExchangeReply::Segments {
                group: *group,
                entries: segments
                    .iter()
                    .map(|&s| {
                        (
                            s,
                            self.trees
                                .get(group)
                                .map(|t| t.segment(s))
                                .unwrap_or_default(),
                        )
                    })
                    .collect(),
            },
            ExchangeRequest::Objects { keys, .. } => ExchangeReply::Objects {
                objects: keys
                    .iter()
                    .filter_map(|k| self.storage.get(k).map(|o| (k.clone(), o.clone())))
                    .collect(),
            },
        }
    }

    /// Takes a reply of the exchange this replica drives; returns the next
    /// step, or `None` when the exchange is over.
    pub fn on_exchange_reply(&mut self, reply: &ExchangeReply) -> Option<ExchangeRequest> {
        let (_, group) = self.exchange?;
        let next = match reply {
            ExchangeReply::Tree {
                group: g,
                level,
                hashes,
            } if *g == group => {
                let tree = self.trees.get_mut(&group)?;
                let indices: Vec<u32> = hashes.iter().map(|(i, _)| *i).collect();
                let mine: BTreeMap<u32, u64> = tree.hashes(*level, &indices).into_iter().collect();
                let differing: Vec<u32> = hashes
                    .iter()
                    .filter(|(i, h)| mine.get(i) != Some(h))
                    .map(|(i, _)| *i)
                    .collect();
                if differing.is_empty() {
                    None
                } else if level + 1 == tree.depth() {
                    Some(ExchangeRequest::Segments {
                        from: self.id,
                        group,
                        segments: differing,
                    })
                } else {
                    Some(ExchangeRequest::Tree {
                        from: self.id,
                        group,
                        level: level + 1,
                        indices: differing.iter().flat_map(|&i| tree.children(i)).collect(),
                    })
                }
            }
            ExchangeReply::Segments { group: g, entries } if *g == group => {
                let tree = self.trees.get(&group)?;
                let mut keys = Vec::new();
                for (s, theirs) in entries {
                    let mine: BTreeMap<Bytes, u64> = tree.segment(*s).into_iter().collect();
                    for (k, h) in theirs {
                        if mine.get(k) != Some(h) {
                            keys.push(k.clone());
                        }
                    }
                }
                (!keys.is_empty()).then(|| ExchangeRequest::Objects {
                    from: self.id,
                    keys,
                })
            }
            ExchangeReply::Objects { objects } => {
                for (key, object) in objects {
                    if self.replicates(key) {
                        let merged = self.update(key, object);
                        debug_assert_eq!(object_hash(&merged), object_hash(&self.fetch(key)));
                    }
                }
                None
            }
            _ => None, // a reply of another exchange: stale
        };
        if next.is_none() {
            self.exchange = None;
        }
        next
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ring::Ring;
    use crate::version_vector::VersionVector;

    fn b(s: &str) -> Bytes {
        Bytes::copy_from_slice(s.as_bytes())
    }

    /// Runs one exchange of `a` with `p` to its end; returns the steps.
    fn exchange(nodes: &mut [MerkleNode], a: usize, p: usize) -> usize {
        let peer = nodes[p].id();
        let mut steps = 0;
        let mut next = nodes[a].start_exchange(peer);
        while let Some(request) = next {
            steps += 1;
            let reply = nodes[p].answer_exchange(&request);
            next = nodes[a].on_exchange_reply(&reply);
        }
        steps
    }

    #[test]
    fn dotteddb_iii_a_a_merkle_exchange_repairs_the_asker_and_stops_where_trees_agree() {
        let ring = Ring::new(vec![ReplicaId(1), ReplicaId(2), ReplicaId(3)], 3);
        let mut n: Vec<MerkleNode> = (1..=3)
            .map(|i| MerkleNode::new(ReplicaId(i), ring.clone(), 64, 4))
            .collect();
        for i in 0..40 {
            n[0].coordinate(&b(&format!("k{i}")), Some(b("v")), &VersionVector::new())
                .unwrap();
        }
        let ctx = n[0].fetch(b"k3").read_context();
        n[0].coordinate(&b("k3"), None, &ctx).unwrap();
        // Three groups on a ring of three: one exchange per group.
        for _ in 0..3 {
            exchange(&mut n, 1, 0);
        }
        assert_eq!(n[1].stored_keys(), 40);
        assert_eq!(n[1].tombstones(), 1, "the delete is kept as a tombstone");
        for i in 0..40 {
            let k = format!("k{i}");
            assert_eq!(n[1].fetch(k.as_bytes()), n[0].fetch(k.as_bytes()));
        }
        // Equal trees: the root alone is compared.
        assert_eq!(exchange(&mut n, 1, 0), 1);
    }

    #[test]
    fn per_key_counters_start_at_one_for_every_key() {
        let ring = Ring::new(vec![ReplicaId(1), ReplicaId(2)], 2);
        let mut a = MerkleNode::new(ReplicaId(1), ring, 16, 4);
        let x = a
            .coordinate(&b("x"), Some(b("1")), &VersionVector::new())
            .unwrap();
        let y = a
            .coordinate(&b("y"), Some(b("1")), &VersionVector::new())
            .unwrap();
        assert_eq!(x.versions().keys().next().unwrap().counter, 1);
        assert_eq!(y.versions().keys().next().unwrap().counter, 1);
        let x2 = a
            .coordinate(&b("x"), Some(b("2")), &x.read_context())
            .unwrap();
        assert_eq!(x2.values(), vec![b("2")]);
        assert_eq!(x2.versions().keys().next().unwrap().counter, 2);
    }
}
