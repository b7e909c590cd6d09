//! One virtual node of the DottedDB/MerkleDB comparison (`compare.rs`):
//! either core behind the operations the comparison drives.

use amulet_dotted::{Dot, MerkleNode, NodeState, Object, ReplicaId, Skips, VersionVector};
use bytes::Bytes;

/// A DottedDB replica or a MerkleDB one.
pub(super) enum Node {
    Dotted(Box<NodeState>),
    Merkle(MerkleNode),
}

impl Node {
    pub(super) fn fetch(&self, key: &[u8]) -> Object {
        match self {
            Node::Dotted(n) => n.fetch(key),
            Node::Merkle(n) => n.fetch(key),
        }
    }
    pub(super) fn coordinate(
        &mut self,
        key: &Bytes,
        value: Bytes,
        context: &VersionVector,
    ) -> Object {
        match self {
            Node::Dotted(n) => n.coordinate(key, Some(value), context),
            Node::Merkle(n) => n.coordinate(key, Some(value), context),
        }
        .expect("the coordinator replicates the key")
    }
    /// The skip hint for replicating the dot just coordinated here to
    /// `to` (DottedDB only).
    pub(super) fn skips_for(&self, to: ReplicaId) -> Option<Skips> {
        match self {
            Node::Dotted(n) => n.skips_for(to, Dot::new(n.id(), n.clock().base(n.id()))),
            Node::Merkle(_) => None,
        }
    }
    pub(super) fn update(&mut self, key: &Bytes, object: &Object, skips: Option<&Skips>) {
        match self {
            Node::Dotted(n) => {
                n.update(key, object);
                if let Some(skips) = skips {
                    n.note_skips(skips);
                }
            }
            Node::Merkle(n) => {
                n.update(key, object);
            }
        }
    }
    pub(super) fn metadata_bytes(&self) -> usize {
        match self {
            Node::Dotted(n) => n.metadata_bytes(),
            Node::Merkle(n) => n.metadata_bytes(),
        }
    }
    pub(super) fn object_clock_bytes(&self) -> usize {
        match self {
            Node::Dotted(n) => n.object_clock_bytes(),
            Node::Merkle(n) => n.object_clock_bytes(),
        }
    }
    pub(super) fn stored_keys(&self) -> usize {
        match self {
            Node::Dotted(n) => n.stored_keys(),
            Node::Merkle(n) => n.stored_keys(),
        }
    }
}
