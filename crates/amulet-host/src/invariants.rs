//! What must hold of a host between any two steps. Checked after every
//! step when [`crate::HostConfig::check_invariants`] is on (the simulator)
//! and in debug builds; each assertion names the invariant and the values.

use crate::host::Host;
use amulet_smr::{group_of, StateMachine};

impl<S: StateMachine> Host<S> {
    /// Checks the host's invariants, and its merges' and streams'
    /// (`MulticastNode::check_invariants`); panics naming the first that
    /// does not hold.
    pub fn check_invariants(&self) {
        self.node.check_invariants();
        let me = self.config.me;
        for (partition, replica) in &self.replicas {
            replica.check_invariants();
            assert!(
                self.node.merger(group_of(*partition)).is_some(),
                "node {me}: replica of {partition} without its merge group"
            );
            assert!(
                self.checkpointer.partitions().any(|p| p == *partition),
                "node {me}: replica of {partition} whose checkpoints nobody schedules"
            );
        }
        assert_eq!(
            self.pending.len(),
            self.requests.len(),
            "node {me}: waiting requests by id and by token differ"
        );
        for (token, key) in &self.requests {
            assert_eq!(
                self.pending.get(key),
                Some(token),
                "node {me}: request {token} waits at {key:?} under another token"
            );
            assert!(
                self.replicas.contains_key(&key.0),
                "node {me}: request {token} waits at {}, which has no replica here",
                key.0
            );
        }
        for partition in self.transfer.fetched_partitions() {
            assert!(
                self.replicas.contains_key(&partition) || self.adopting(partition),
                "node {me}: fetching {partition}, neither replicated here nor adopted"
            );
        }
    }

    /// Runs [`Host::check_invariants`] when they are on.
    pub(crate) fn check_after_step(&self) {
        if self.config.checking() {
            self.check_invariants();
        }
    }
}
