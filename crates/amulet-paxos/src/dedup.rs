//! Which value ids a learner has delivered, so a value decided twice (a
//! proposer retried after a timeout and both copies won an instance) is
//! delivered once. The state is a function of the delivered prefix, so every
//! learner filters identically.

use amulet_types::{NodeId, ValueId};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

/// Delivered sequences of one proposer incarnation: everything below
/// `contiguous` plus the sparse set above it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
struct Window {
    contiguous: u64,
    above: BTreeSet<u64>,
}

/// Delivered value ids, compact when proposers number their values densely.
/// A merge keeps one per stream as part of its restorable position, so a
/// replica restored from a checkpoint still delivers a value decided twice
/// (once on each side of the checkpoint) once.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Delivered {
    windows: BTreeMap<(NodeId, u32), Window>,
}

impl Delivered {
    /// Records `id`; returns false if it was delivered before.
    pub fn insert(&mut self, id: ValueId) -> bool {
        let window = self
            .windows
            .entry((id.proposer, id.incarnation))
            .or_default();
        if id.sequence < window.contiguous || !window.above.insert(id.sequence) {
            return false;
        }
        // Sequences start at 1: `contiguous` is the lowest not yet seen.
        if window.contiguous == 0 {
            window.contiguous = 1;
        }
        while window.above.remove(&window.contiguous) {
            window.contiguous += 1;
        }
        true
    }

    /// Whether `id` was delivered.
    pub fn contains(&self, id: ValueId) -> bool {
        self.windows
            .get(&(id.proposer, id.incarnation))
            .is_some_and(|w| id.sequence < w.contiguous || w.above.contains(&id.sequence))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(sequence: u64) -> ValueId {
        ValueId {
            proposer: NodeId(1),
            incarnation: 1,
            sequence,
        }
    }

    #[test]
    fn a_value_decided_twice_is_delivered_once() {
        let mut d = Delivered::default();
        assert!(d.insert(id(2)));
        assert!(d.insert(id(1)));
        assert!(!d.insert(id(2)));
        assert!(!d.insert(id(1)));
        assert!(d.insert(id(3)));
        assert!(d.contains(id(3)) && !d.contains(id(4)));
        assert_eq!(d.windows[&(NodeId(1), 1)].above.len(), 0);
    }
}
