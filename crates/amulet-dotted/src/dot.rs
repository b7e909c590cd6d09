//! Dots (DottedDB §IV, key idea 1): every update is named by the replica
//! that coordinated it and that replica's node-wide counter.

use serde::{Deserialize, Serialize};
use std::fmt;

/// A replica's id: a virtual node of an eventual map's ring. Never reused:
/// a replica that lost its state takes a new id (DottedDB §II-A; Riak's
/// "kv679" data loss came from reusing one).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct ReplicaId(pub u64);

impl fmt::Display for ReplicaId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "r{}", self.0)
    }
}

/// A globally unique update id: `(replica, counter)`, counters from 1.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Dot {
    /// The replica that coordinated the update.
    pub id: ReplicaId,
    /// That replica's counter for it (1, 2, ...).
    pub counter: u64,
}

impl Dot {
    /// The dot `(id, counter)`.
    pub fn new(id: ReplicaId, counter: u64) -> Dot {
        assert!(counter > 0, "dot counters start at 1");
        Dot { id, counter }
    }
}

impl fmt::Display for Dot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "({},{})", self.id, self.counter)
    }
}
