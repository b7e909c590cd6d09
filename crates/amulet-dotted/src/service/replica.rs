//! One virtual node's store, as the service runs it: DottedDB's
//! (`NodeState`), or the MerkleDB baseline's (`MerkleNode`: per-key
//! clocks, tombstones, hash-tree anti-entropy; DottedDB §V-B), chosen per
//! map so the paper's comparison runs on the same ring, nodes, network,
//! journal and workload.

use crate::dot::ReplicaId;
use crate::journal::Input;
use crate::merkle::{MerkleNode, SEGMENTS_DEFAULT, WIDTH_DEFAULT};
use crate::node_state::{NodeState, Refused};
use crate::object::Object;
use crate::ring::Ring;
use crate::version_vector::VersionVector;
use bytes::Bytes;
use serde::{Deserialize, Serialize};

/// A virtual node's store.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[allow(clippy::large_enum_variant)] // one per virtual node, never moved in bulk
pub enum Replica {
    /// Node-wide dot clocks (DottedDB).
    Dotted(NodeState),
    /// The baseline.
    Merkle(MerkleNode),
}

impl Replica {
    /// A new replica `id` of `ring` that has seen nothing; for DottedDB, a
    /// replacement (`id` holds a retired id's position) starts with full
    /// transfers from its peers. Decided by the ring alone, so replaying
    /// the journal's `Created` makes the same replica.
    pub fn new(id: ReplicaId, ring: Ring, merkle: bool) -> Replica {
        if merkle {
            Replica::Merkle(MerkleNode::new(id, ring, SEGMENTS_DEFAULT, WIDTH_DEFAULT))
        } else if ring.is_replacement(id) {
            Replica::Dotted(NodeState::new_replacement(id, ring))
        } else {
            Replica::Dotted(NodeState::new(id, ring))
        }
    }

    /// The replica with `bug` (DottedDB's store only; for the simulator).
    pub fn with_bug(self, bug: crate::node_state::DottedBug) -> Replica {
        match self {
            Replica::Dotted(s) => Replica::Dotted(s.with_bug(bug)),
            merkle => merkle,
        }
    }

    /// Its id.
    pub fn id(&self) -> ReplicaId {
        match self {
            Replica::Dotted(s) => s.id(),
            Replica::Merkle(m) => m.id(),
        }
    }

    /// Its ring.
    pub fn ring(&self) -> &Ring {
        match self {
            Replica::Dotted(s) => s.ring(),
            Replica::Merkle(m) => m.ring(),
        }
    }

    /// Whether it holds `key`.
    pub fn replicates(&self, key: &[u8]) -> bool {
        self.ring().replicates(self.id(), key)
    }

    /// What a read of `key` here returns (filled from the node clock for
    /// DottedDB; the whole object for the baseline).
    pub fn fetch(&self, key: &[u8]) -> Object {
        match self {
            Replica::Dotted(s) => s.fetch(key),
            Replica::Merkle(m) => m.fetch(key),
        }
    }

    /// A client's write coordinated here.
    pub fn coordinate(
        &mut self,
        key: &Bytes,
        value: Option<Bytes>,
        context: &VersionVector,
    ) -> Result<Object, Refused> {
        match self {
            Replica::Dotted(s) => s.coordinate(key, value, context),
            Replica::Merkle(m) => m.coordinate(key, value, context),
        }
    }

    /// The skip hint for replicating own dot `dot` to `to` (`skips.rs`;
    /// the baseline sends none).
    pub fn skips_for(&self, to: ReplicaId, dot: crate::dot::Dot) -> Option<crate::skips::Skips> {
        match self {
            Replica::Dotted(s) => s.skips_for(to, dot),
            Replica::Merkle(_) => None,
        }
    }

    /// Applies a journaled input exactly as the live call did. The
    /// baseline journals writes, merges and ring changes only (its
    /// anti-entropy ends in merges).
    pub fn apply(&mut self, input: &Input) {
        match self {
            Replica::Dotted(s) => s.apply(input),
            Replica::Merkle(m) => match input {
                Input::Coordinate {
                    key,
                    value,
                    context,
                } => {
                    m.coordinate(key, value.clone(), context)
                        .expect("a journaled write was accepted");
                }
                Input::Update { key, object } => {
                    m.update(key, object);
                }
                Input::SetRing(ring) => m.set_ring(ring.clone()),
                // The baseline keeps no watermark and sends no hints.
                Input::PeerBases { .. } | Input::Skips(_) => {}
                other => panic!("the baseline never journals {other:?}"),
            },
        }
    }

    /// The replica's invariants (all of them in debug builds; a full
    /// check walks every key).
    pub fn check(&self) {
        if cfg!(debug_assertions) {
            if let Replica::Dotted(s) = self {
                s.check_invariants();
            }
        }
    }

    /// Whether `other` holds the same data: the whole state for
    /// DottedDB; the stored objects for the baseline (its hash trees'
    /// cached levels and exchange cursor are derived, not journaled).
    pub fn same_data(&self, other: &Replica) -> bool {
        match (self, other) {
            (Replica::Dotted(a), Replica::Dotted(b)) => a == b,
            (Replica::Merkle(a), Replica::Merkle(b)) => a.stored().eq(b.stored()),
            _ => false,
        }
    }

    /// The DottedDB state, if it is one.
    pub fn dotted(&self) -> Option<&NodeState> {
        match self {
            Replica::Dotted(s) => Some(s),
            Replica::Merkle(_) => None,
        }
    }

    /// Objects stored (the baseline's tombstones included).
    pub fn stored_keys(&self) -> usize {
        match self {
            Replica::Dotted(s) => s.stored_keys(),
            Replica::Merkle(m) => m.stored_keys(),
        }
    }

    /// Stored objects with no value.
    pub fn tombstones(&self) -> usize {
        match self {
            Replica::Dotted(s) => s.stored().filter(|(_, o)| o.values().is_empty()).count(),
            Replica::Merkle(m) => m.tombstones(),
        }
    }

    /// Bytes of causality and anti-entropy metadata: the node clock,
    /// dot-key map, watermark and stored contexts (DottedDB), or the hash
    /// trees and the objects' per-key clocks (the baseline).
    pub fn metadata_bytes(&self) -> usize {
        match self {
            Replica::Dotted(s) => s.metadata_bytes() + s.object_clock_bytes(),
            Replica::Merkle(m) => m.metadata_bytes() + m.object_clock_bytes(),
        }
    }
}
