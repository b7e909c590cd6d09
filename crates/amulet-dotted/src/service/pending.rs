//! Client requests in flight at a node: a read waiting for R replicas, a
//! write waiting for its coordinator, and, at the coordinator, a write
//! waiting for W - 1 replicas to hold it.

use super::message::Versioned;
use crate::object::Object;

/// A request in flight, by the op number its messages carry.
#[derive(Debug)]
pub(super) enum Pending {
    /// A read: objects from the replicas so far.
    Get {
        /// The runtime's token.
        token: u64,
        /// Replicas to hear from.
        needed: u32,
        /// What they answered.
        got: Vec<Object>,
        /// When it fails.
        deadline: u64,
    },
    /// A write handed to a replica's node (maybe this one) to coordinate.
    Forward {
        /// The runtime's token.
        token: u64,
        /// Replicas asked for.
        needed: u32,
        /// When it fails (after the coordinator's own deadline, so its
        /// answer, with the replicas that did answer, comes first).
        deadline: u64,
    },
    /// At the coordinator: the replicas' acknowledgements so far.
    Write {
        /// The node that forwarded the write.
        node: u32,
        /// Its op number.
        op: u64,
        /// Replicas that hold it, besides the coordinator.
        acks: u32,
        /// Acknowledgements needed (W - 1).
        needed: u32,
        /// The answer once they came.
        versioned: Versioned,
        /// When it fails.
        deadline: u64,
    },
}

impl Pending {
    /// When it fails.
    pub(super) fn deadline(&self) -> u64 {
        match self {
            Pending::Get { deadline, .. }
            | Pending::Forward { deadline, .. }
            | Pending::Write { deadline, .. } => *deadline,
        }
    }
}
