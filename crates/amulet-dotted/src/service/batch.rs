//! The runtime's rule for what the service produced in one step: its
//! journal records are synced before any message or reply of the same
//! step goes out (a write's dot, a merge a peer is told about, a clock a
//! sync answer reports: nothing outside this node may see an effect a
//! crash could undo). A step with nothing to send may stay unsynced: no
//! one has seen its effect, and the next step that sends something syncs
//! it first. The node (`amulet-node`'s eventual runtime) and the
//! simulator's service swarm both carry out batches by this one rule.

use super::durable::Record;
use super::Output;

/// One step's outputs, split by the rule above.
#[derive(Debug, Default)]
pub struct Batch {
    /// Records to append, in order.
    pub records: Vec<Record>,
    /// Messages and replies, in order, to carry out after the records.
    pub visible: Vec<Output>,
}

impl Batch {
    /// Splits `outputs` (`Service::drain`) into records and the rest.
    pub fn split(outputs: Vec<Output>) -> Batch {
        let mut batch = Batch::default();
        for output in outputs {
            match output {
                Output::Journal(record) => batch.records.push(record),
                other => batch.visible.push(other),
            }
        }
        batch
    }

    /// Whether the records (and any appended before) must be synced
    /// before `visible` goes out.
    pub fn must_sync(&self) -> bool {
        !self.visible.is_empty()
    }

    /// Whether the step produced nothing.
    pub fn is_empty(&self) -> bool {
        self.records.is_empty() && self.visible.is_empty()
    }
}
