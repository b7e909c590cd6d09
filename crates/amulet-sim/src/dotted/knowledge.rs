//! An oracle of what each replica has legitimately seen of each key, to
//! judge the contexts clients write with: a read's context must cover
//! what it returned (checked where reads return) and nothing its replicas
//! had not seen: a write whose context covers a dot of its key outside
//! that discards a version its client never read, a causality violation
//! even when the replicas agree on the result afterwards.
//!
//! Knowledge travels with the simulated messages, beside what the
//! protocol itself sends: a coordinator's write carries everything the
//! coordinator had seen of the key (its filled context goes into the
//! object), a sync reply or transfer page everything the answerer had
//! seen of each key it sends (the objects are filled from its clock). A
//! replica's knowledge never shrinks here (a crash that loses inputs
//! makes the oracle more permissive, never stricter).

use super::Write;
use amulet_dotted::{Dot, VersionVector};
use bytes::Bytes;
use std::collections::{BTreeMap, BTreeSet};

/// What each replica slot has seen, per key.
pub(crate) struct Knowledge {
    seen: Vec<BTreeMap<Bytes, BTreeSet<Dot>>>,
}

impl Knowledge {
    pub(crate) fn new(slots: usize) -> Knowledge {
        Knowledge {
            seen: vec![BTreeMap::new(); slots],
        }
    }

    /// Slot `slot` was replaced: the new replica has seen nothing.
    pub(crate) fn reset(&mut self, slot: usize) {
        self.seen[slot].clear();
    }

    /// What `slot` has seen of `key`.
    pub(crate) fn of(&self, slot: usize, key: &Bytes) -> BTreeSet<Dot> {
        self.seen[slot].get(key).cloned().unwrap_or_default()
    }

    /// `slot` learns `seen` of `key` (a message it applied).
    pub(crate) fn learn(&mut self, slot: usize, key: &Bytes, seen: &BTreeSet<Dot>) {
        self.seen[slot]
            .entry(key.clone())
            .or_default()
            .extend(seen.iter().copied());
    }

    /// What a read from `slots` had seen of `key`.
    pub(crate) fn read(&self, slots: &[usize], key: &Bytes) -> BTreeSet<Dot> {
        let mut seen = BTreeSet::new();
        for &slot in slots {
            if let Some(s) = self.seen[slot].get(key) {
                seen.extend(s.iter().copied());
            }
        }
        seen
    }

    /// Records the last of `writes` (coordinated at `coordinator` with
    /// `context`, from a read that had seen `read`), and returns the dots
    /// of its key the context covers beyond that read.
    pub(crate) fn write(
        &mut self,
        writes: &[Write],
        coordinator: usize,
        context: &VersionVector,
        read: &BTreeSet<Dot>,
    ) -> Vec<Dot> {
        let write = writes.last().expect("the write was recorded");
        let unseen = writes
            .iter()
            .filter(|w| w.key == write.key && !w.lost && w.dot != write.dot)
            .filter(|w| context.covers(w.dot) && !read.contains(&w.dot))
            .map(|w| w.dot)
            .collect();
        let mut learned = read.clone();
        learned.insert(write.dot);
        self.learn(coordinator, &write.key, &learned);
        unseen
    }
}
