//! DottedDB's node-wide dot-based clocks (NDC), sans-IO (R. Gonçalves,
//! P. S. Almeida, C. Baquero, V. Fonte, *DottedDB: Anti-Entropy without
//! Merkle Trees, Deletes without Tombstones*, §IV): the core of Amulet's
//! eventually consistent maps.
//!
//! - [`Dot`]s name updates (replica id + node-wide counter);
//! - the [`NodeClock`] summarises every dot a replica has seen, as a base
//!   plus a bitmap per replica id ([`ClockEntry`]);
//! - an [`Object`] holds a key's concurrent versions and a causal context
//!   ([`VersionVector`]) stripped of what the node clock covers;
//! - a [`NodeState`] is one replica's five structures (NC, DKM, WM, NSK,
//!   ST) and the client and replication operations of Alg. 1–2;
//! - anti-entropy ([`SyncRequest`], [`SyncReply`]) compares node clocks
//!   instead of Merkle trees (Alg. 3);
//! - a [`Ring`] places keys on replicas.
//!
//! Nothing here does I/O or reads a clock: the runtime delivers messages
//! and decides when to sync and strip.
#![deny(missing_docs)]

pub mod anti_entropy;
pub mod clock_entry;
pub mod dot;
pub mod dot_key_map;
pub mod journal;
pub mod merkle;
pub mod node_clock;
pub mod node_state;
pub mod object;
pub mod placement;
pub mod replacement;
pub mod ring;
pub mod service;
pub mod skips;
pub mod version_vector;
pub mod watermark;

#[cfg(test)]
mod test_vectors;

pub use anti_entropy::{SyncApplied, SyncBudget, SyncReply, SyncRequest};
pub use clock_entry::ClockEntry;
pub use dot::{Dot, ReplicaId};
pub use dot_key_map::DotKeyMap;
pub use journal::Input;
pub use merkle::MerkleNode;
pub use node_clock::NodeClock;
pub use node_state::{DottedBug, NodeState, NodeStats, Refused};
pub use object::Object;
pub use placement::{Placement, PlacementError};
pub use replacement::{Transfer, TransferPage, TransferRequest};
pub use ring::Ring;
pub use service::{Operation, Output, Refusal, Service, ServiceConfig};
pub use skips::Skips;
pub use version_vector::{ContextError, VersionVector};
pub use watermark::Watermark;
