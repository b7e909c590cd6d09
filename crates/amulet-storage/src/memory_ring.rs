//! A fixed-slot acceptor log in memory (thesis §3.4.1: "in-memory storage
//! with a circular buffer").
//!
//! Instance `i` lives in slot `i % slots`. Writing an instance at or beyond
//! `end` evicts the instance `slots` back, and `trimmed_below` rises with it,
//! so a reader of an overwritten instance gets `Ok(None)` together with a
//! trim point above that instance: an explicit "trimmed" answer, never a
//! silent gap.
//!
//! Nothing survives the process. A ring built by [`MemoryRing::after_restart`]
//! reports `intact: false`: the acceptor lost the promises and votes it made
//! before the restart, so it must never vote again in this stream.

use crate::log::{AcceptorLog, LogRecord, Recovered, StorageError};
use amulet_types::{Ballot, Instance};
use std::collections::BTreeMap;

/// Promises and the last `slots` instances' votes, in memory.
pub struct MemoryRing {
    /// `records[i % len]` holds instance `i` when `i` is in
    /// `[trimmed_below, end)` and was written; a stale occupant is always
    /// below `trimmed_below`, so reads check the instance number.
    records: Vec<Option<LogRecord>>,
    promised: Ballot,
    /// Promises above `promised` for single instances (gap repair).
    instance_promises: BTreeMap<Instance, Ballot>,
    trimmed_below: Instance,
    end: Instance,
    intact: bool,
}

impl MemoryRing {
    /// A fresh ring keeping the last `slots` instances (`slots >= 1`). It
    /// vouches for everything the acceptor did: `recovered().intact` is true.
    pub fn new(slots: usize) -> MemoryRing {
        assert!(slots >= 1, "a memory ring needs at least one slot");
        MemoryRing {
            records: vec![None; slots],
            promised: Ballot::ZERO,
            instance_promises: BTreeMap::new(),
            trimmed_below: Instance(0),
            end: Instance(0),
            intact: true,
        }
    }

    /// A ring for an acceptor that restarted and lost its memory:
    /// `recovered().intact` is false, so the core runs it as a learner only.
    pub fn after_restart(slots: usize) -> MemoryRing {
        MemoryRing {
            intact: false,
            ..MemoryRing::new(slots)
        }
    }

    /// How many instances the ring keeps.
    pub fn slots(&self) -> usize {
        self.records.len()
    }

    fn slot_of(&self, instance: Instance) -> usize {
        // The remainder is below `records.len()`, so it fits a usize.
        (instance.0 % self.records.len() as u64) as usize
    }

    /// Raise the trim point (never lowers it) and drop what lies below.
    fn forget_below(&mut self, below: Instance) {
        if below <= self.trimmed_below {
            return;
        }
        // Clear at most one lap of slots: stale occupants are invisible to
        // reads anyway, clearing only frees their memory early.
        let clear_to = below.0.min(self.end.0);
        let first = self
            .trimmed_below
            .0
            .max(clear_to.saturating_sub(self.records.len() as u64));
        for instance in first..clear_to {
            let slot = self.slot_of(Instance(instance));
            if self.records[slot]
                .as_ref()
                .is_some_and(|r| r.instance.0 == instance)
            {
                self.records[slot] = None;
            }
        }
        self.trimmed_below = below;
        self.instance_promises = self.instance_promises.split_off(&below);
    }
}

impl AcceptorLog for MemoryRing {
    fn save_promise(&mut self, ballot: Ballot) -> Result<(), StorageError> {
        self.promised = self.promised.max(ballot);
        Ok(())
    }

    fn save_instance_promise(
        &mut self,
        instance: Instance,
        ballot: Ballot,
    ) -> Result<(), StorageError> {
        if instance >= self.trimmed_below {
            let entry = self.instance_promises.entry(instance).or_insert(ballot);
            *entry = (*entry).max(ballot);
        }
        Ok(())
    }

    fn save(&mut self, record: &LogRecord) -> Result<(), StorageError> {
        if record.instance < self.trimmed_below {
            // Already overwritten or trimmed: the vote cannot be kept, and
            // readers are told so by the trim point.
            return Ok(());
        }
        if record.instance >= self.end {
            self.end = record.instance.next();
            let keep_from = Instance(self.end.0.saturating_sub(self.records.len() as u64));
            self.forget_below(keep_from);
        }
        let slot = self.slot_of(record.instance);
        debug_assert!(
            self.records[slot].as_ref().is_none_or(
                |old| old.instance == record.instance || old.instance < self.trimmed_below
            )
        );
        self.records[slot] = Some(record.clone());
        Ok(())
    }

    fn mark_decided(&mut self, instance: Instance, ballot: Ballot) -> Result<(), StorageError> {
        if instance < self.trimmed_below {
            return Ok(());
        }
        let slot = self.slot_of(instance);
        if let Some(record) = self.records[slot].as_mut() {
            if record.instance == instance && record.ballot == ballot {
                record.decided = true;
            }
        }
        Ok(())
    }

    fn read(&self, instance: Instance) -> Result<Option<LogRecord>, StorageError> {
        if instance < self.trimmed_below {
            return Ok(None);
        }
        let record = self.records[self.slot_of(instance)].as_ref();
        Ok(record.filter(|r| r.instance == instance).cloned())
    }

    fn trim(&mut self, below: Instance) -> Result<(), StorageError> {
        self.forget_below(below);
        Ok(())
    }

    fn trimmed_below(&self) -> Instance {
        self.trimmed_below
    }

    fn end(&self) -> Instance {
        self.end
    }

    fn sync(&mut self) -> Result<(), StorageError> {
        Ok(())
    }

    fn dirty(&self) -> bool {
        false
    }

    fn recovered(&self) -> Recovered {
        // Memory holds nothing from before the process started.
        Recovered {
            intact: self.intact,
            ..Recovered::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use amulet_wire::Batch;

    fn vote(instance: u64, round: u32) -> LogRecord {
        LogRecord {
            instance: Instance(instance),
            ballot: Ballot { round, node: 1 },
            batch: Batch::Skip(instance + 1),
            decided: false,
        }
    }

    #[test]
    fn fresh_ring_is_intact_and_empty() {
        let ring = MemoryRing::new(4);
        let recovered = ring.recovered();
        assert!(recovered.intact);
        assert_eq!(
            recovered,
            Recovered {
                intact: true,
                ..Recovered::default()
            }
        );
        assert!(!ring.dirty());
    }

    #[test]
    fn restarted_ring_is_not_intact() {
        assert!(!MemoryRing::after_restart(4).recovered().intact);
    }

    #[test]
    fn overwritten_instance_reads_none_with_trim_point_above_it() {
        let mut ring = MemoryRing::new(4);
        for i in 0..10 {
            ring.save(&vote(i, 1)).unwrap();
        }
        assert_eq!(ring.end(), Instance(10));
        assert_eq!(ring.trimmed_below(), Instance(6));
        for i in 0..6 {
            assert_eq!(ring.read(Instance(i)).unwrap(), None);
            assert!(ring.trimmed_below() > Instance(i));
        }
        for i in 6..10 {
            assert_eq!(ring.read(Instance(i)).unwrap(), Some(vote(i, 1)));
        }
        // A late write below the trim point is not kept.
        ring.save(&vote(2, 3)).unwrap();
        assert_eq!(ring.read(Instance(2)).unwrap(), None);
        assert_eq!(ring.read(Instance(6)).unwrap(), Some(vote(6, 1)));
    }

    #[test]
    fn jump_ahead_evicts_everything_older() {
        let mut ring = MemoryRing::new(3);
        ring.save(&vote(0, 1)).unwrap();
        ring.save(&vote(1, 1)).unwrap();
        ring.save(&vote(100, 1)).unwrap();
        assert_eq!(ring.trimmed_below(), Instance(98));
        assert_eq!(ring.read(Instance(1)).unwrap(), None);
        assert_eq!(ring.read(Instance(99)).unwrap(), None);
        assert_eq!(ring.read(Instance(100)).unwrap(), Some(vote(100, 1)));
    }

    #[test]
    fn rewrite_replaces_and_mark_decided_checks_ballot() {
        let mut ring = MemoryRing::new(4);
        ring.save(&vote(5, 1)).unwrap();
        ring.save(&vote(5, 2)).unwrap();
        ring.mark_decided(Instance(5), Ballot { round: 1, node: 1 })
            .unwrap();
        assert!(!ring.read(Instance(5)).unwrap().unwrap().decided);
        ring.mark_decided(Instance(5), Ballot { round: 2, node: 1 })
            .unwrap();
        assert_eq!(
            ring.read(Instance(5)).unwrap(),
            Some(LogRecord {
                decided: true,
                ..vote(5, 2)
            })
        );
        assert_eq!(ring.end(), Instance(6));
    }

    #[test]
    fn trim_never_moves_back_and_drops_instance_promises() {
        let mut ring = MemoryRing::new(8);
        for i in 0..5 {
            ring.save(&vote(i, 1)).unwrap();
        }
        ring.save_instance_promise(Instance(2), Ballot { round: 4, node: 2 })
            .unwrap();
        ring.save_instance_promise(Instance(7), Ballot { round: 4, node: 2 })
            .unwrap();
        ring.trim(Instance(3)).unwrap();
        ring.trim(Instance(1)).unwrap();
        assert_eq!(ring.trimmed_below(), Instance(3));
        assert_eq!(ring.read(Instance(2)).unwrap(), None);
        assert_eq!(ring.read(Instance(3)).unwrap(), Some(vote(3, 1)));
        assert_eq!(
            ring.instance_promises.keys().copied().collect::<Vec<_>>(),
            vec![Instance(7)]
        );
        ring.save_promise(Ballot { round: 2, node: 1 }).unwrap();
        ring.save_promise(Ballot { round: 1, node: 1 }).unwrap();
        assert_eq!(ring.promised, Ballot { round: 2, node: 1 });
    }
}
