//! A bounded in-memory acceptor log, used until `amulet-storage` ships its
//! memory ring and durable log. It keeps the last `slots` instances, like
//! the ring, and reports itself intact only on the first run of a data
//! directory: after a restart its promises are gone, so the acceptor must
//! not vote again (the core then runs it as a learner only).

use amulet_storage::{AcceptorLog, LogRecord, Recovered, StorageError};
use amulet_types::{Ballot, Instance};
use std::collections::BTreeMap;

/// Promises and votes held in memory.
pub struct InterimMemoryLog {
    slots: u64,
    promised: Ballot,
    instance_promises: BTreeMap<Instance, Ballot>,
    records: BTreeMap<Instance, LogRecord>,
    trimmed_below: Instance,
    end: Instance,
    intact: bool,
}

impl InterimMemoryLog {
    /// A log keeping `slots` instances; `intact` is false after a restart.
    pub fn new(slots: u64, intact: bool) -> InterimMemoryLog {
        InterimMemoryLog {
            slots: slots.max(1),
            promised: Ballot::ZERO,
            instance_promises: BTreeMap::new(),
            records: BTreeMap::new(),
            trimmed_below: Instance(0),
            end: Instance(0),
            intact,
        }
    }

    fn forget_below(&mut self, below: Instance) {
        if below <= self.trimmed_below {
            return;
        }
        self.trimmed_below = below;
        self.records = self.records.split_off(&below);
        self.instance_promises = self.instance_promises.split_off(&below);
    }
}

impl AcceptorLog for InterimMemoryLog {
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
            return Ok(());
        }
        self.records.insert(record.instance, record.clone());
        self.end = self.end.max(record.instance.next());
        // Ring semantics: a new instance overwrites the one `slots` back.
        let keep_from = Instance(self.end.0.saturating_sub(self.slots));
        self.forget_below(keep_from);
        Ok(())
    }

    fn mark_decided(&mut self, instance: Instance, ballot: Ballot) -> Result<(), StorageError> {
        if let Some(record) = self.records.get_mut(&instance) {
            if record.ballot == ballot {
                record.decided = true;
            }
        }
        Ok(())
    }

    fn read(&self, instance: Instance) -> Result<Option<LogRecord>, StorageError> {
        Ok(self.records.get(&instance).cloned())
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
        Recovered {
            promised: Ballot::ZERO,
            instance_promises: Vec::new(),
            trimmed_below: Instance(0),
            end: Instance(0),
            intact: self.intact,
        }
    }
}
