//! MerkleDB, the baseline DottedDB is measured against (DottedDB §V-B):
//! the same store on the same ring, but with per-key dotted version
//! vectors that are never stripped (an object's context keeps every id
//! that ever wrote it), tombstones kept for deleted keys, and anti-entropy
//! by Merkle-tree comparison per replica group (as Riak 2.0's active
//! anti-entropy). Selectable per map so the paper's comparison runs on
//! the same ring, network and workload.

pub mod exchange;
pub mod hash_tree;

pub use exchange::{ExchangeReply, ExchangeRequest};
pub use hash_tree::HashTree;

use crate::dot::{Dot, ReplicaId};
use crate::node_state::Refused;
use crate::object::Object;
use crate::ring::Ring;
use crate::version_vector::VersionVector;
use bytes::Bytes;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Segments per tree (Riak's default is 1024 * 1024 for millions of keys
/// per vnode; DottedDB §V-E varies the objects per leaf instead).
pub const SEGMENTS_DEFAULT: usize = 1024;
/// Children per inner node.
pub const WIDTH_DEFAULT: usize = 32;

/// One MerkleDB replica.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MerkleNode {
    pub(crate) id: ReplicaId,
    pub(crate) ring: Ring,
    /// Key → object (with its full context; deletes are tombstones).
    pub(crate) storage: BTreeMap<Bytes, Object>,
    /// Replica group (owner position) → its hash tree.
    pub(crate) trees: BTreeMap<usize, HashTree>,
    /// The exchange this replica is driving: (peer, group).
    pub(crate) exchange: Option<(ReplicaId, usize)>,
    /// Which shared group the next exchange with a peer compares.
    pub(crate) next_group: usize,
}

impl MerkleNode {
    /// Replica `id` of `ring`, with trees of `segments` leaves and fan-out
    /// `width` for each replica group it is in.
    pub fn new(id: ReplicaId, ring: Ring, segments: usize, width: usize) -> MerkleNode {
        let trees = ring
            .groups(id)
            .into_iter()
            .map(|g| (g, HashTree::new(segments, width)))
            .collect();
        MerkleNode {
            id,
            ring,
            storage: BTreeMap::new(),
            trees,
            exchange: None,
            next_group: 0,
        }
    }

    /// This replica's id.
    pub fn id(&self) -> ReplicaId {
        self.id
    }

    /// The ring.
    pub fn ring(&self) -> &Ring {
        &self.ring
    }

    /// Applies a ring change (a replacement elsewhere). Trees belong to
    /// replica groups, which are positions, so they stay.
    pub fn set_ring(&mut self, ring: Ring) {
        assert!(
            ring.members().contains(&self.id),
            "{} was replaced",
            self.id
        );
        self.ring = ring;
    }

    /// Whether it holds `key`.
    pub fn replicates(&self, key: &[u8]) -> bool {
        self.ring.replicates(self.id, key)
    }

    /// The stored object (nothing to fill: contexts are kept whole).
    pub fn fetch(&self, key: &[u8]) -> Object {
        self.storage.get(key).cloned().unwrap_or_default()
    }

    /// A client's write or delete: a new dot with this replica's next
    /// counter *for this key* (dotted version vectors count per key),
    /// superseding what `context` saw.
    pub fn coordinate(
        &mut self,
        key: &Bytes,
        value: Option<Bytes>,
        context: &VersionVector,
    ) -> Result<Object, Refused> {
        Refused::unless_replica(&self.ring, self.id, key)?;
        let mut object = self.fetch(key);
        let dot = Dot::new(self.id, object.read_context().get(self.id) + 1);
        object.discard(context);
        object.add(dot, value);
        self.store(key, object.clone());
        Ok(object)
    }

    /// A coordinator's or peer's object merged into the local one.
    pub fn update(&mut self, key: &Bytes, object: &Object) -> Object {
        let merged = object.merge(&self.fetch(key));
        self.store(key, merged.clone());
        merged
    }

    fn store(&mut self, key: &Bytes, object: Object) {
        let group = self.ring.group(key);
        let hash = object_hash(&object);
        if let Some(tree) = self.trees.get_mut(&group) {
            tree.insert(key, hash);
        }
        // Kept even with no value left: the tombstone.
        self.storage.insert(key.clone(), object);
    }

    /// Objects stored, tombstones included.
    pub fn stored_keys(&self) -> usize {
        self.storage.len()
    }

    /// Stored objects with no value (tombstones).
    pub fn tombstones(&self) -> usize {
        self.storage
            .values()
            .filter(|o| o.values().is_empty())
            .count()
    }

    /// The stored objects.
    pub fn stored(&self) -> impl Iterator<Item = (&Bytes, &Object)> + '_ {
        self.storage.iter()
    }

    /// Bytes of the anti-entropy metadata: the hash trees.
    pub fn metadata_bytes(&self) -> usize {
        self.trees.values().map(HashTree::metadata_bytes).sum()
    }

    /// Bytes of the stored objects' clocks: 16 per version dot and per
    /// context entry (never stripped here).
    pub fn object_clock_bytes(&self) -> usize {
        self.storage.values().map(Object::clock_bytes).sum()
    }
}

/// An object's hash for the trees (stable within a run).
pub(crate) fn object_hash(object: &Object) -> u64 {
    crate::ring::token(&postcard::to_allocvec(object).expect("an object encodes"))
}
