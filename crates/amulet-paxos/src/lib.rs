//! Ring Paxos for one stream, sans-IO (thesis §2.4, §3.3, A.1).
//!
//! A [`StreamNode`] plays every role its node has in one stream: proposer,
//! acceptor (and coordinator when it is the lowest live voting acceptor),
//! learner. It is a deterministic state machine: the caller passes messages,
//! ticks with the current time and proposals, and drains an [`Output`] of
//! messages to send (some only after the acceptor log is synced) and
//! decided instances to deliver, in instance order. Messages a node sends
//! to itself must be delivered back to it.
#![deny(missing_docs)]

mod acceptor;
mod bugs;
mod coordinator;
mod dedup;
mod learner;
mod output;
mod proposer;
mod repair;
mod ring;
mod stream_node;

pub use bugs::Bugs;
pub use dedup::Delivered;
pub use output::{Decided, Output};
pub use stream_node::{Input, ProposeError, StreamNode, StreamStats};
