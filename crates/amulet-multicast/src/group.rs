//! Merge groups: the subscribers of atomic multicast.

use serde::{Deserialize, Serialize};

/// A merge group: one subscriber's merge of its streams (a DMap replica
/// group: every replica of a partition merges its streams as group
/// number = partition number, on whichever node it runs).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct GroupId(pub u32);

impl std::fmt::Display for GroupId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "g{}", self.0)
    }
}
