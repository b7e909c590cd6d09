//! Acceptor storage (thesis §3.4.1, A.4).
//!
//! The Paxos core reads and writes an [`AcceptorLog`] synchronously, like
//! etcd raft's `Storage`: writes are appended at once and become durable at
//! the next [`AcceptorLog::sync`]. The runtime decides when to sync: in
//! `SyncDurable` mode before any message produced by the step leaves the
//! process (group commit: one fsync per batch of inputs), in `AsyncDurable`
//! mode in the background.
//!
//! Modes and what each survives:
//! - [`MemoryRing`] (`StorageMode::Memory`): the crash of a minority of
//!   acceptors. A restarted memory acceptor is built with
//!   [`MemoryRing::after_restart`], reports `intact: false` and never votes
//!   again in the stream (learner only).
//! - [`DurableLog`] with [`Durability::Async`]: process crashes of any
//!   acceptors, machine crashes of a minority (an acceptor whose machine
//!   restarted before its log was synced or closed is not intact).
//! - [`DurableLog`] with [`Durability::Sync`]: any crash.
//!
//! A node keeps its durable streams in one [`NodeLog`] (one file set, one
//! fsync per group commit for all of them); each stream's [`StreamLog`]
//! survives what a [`DurableLog`] of the same durability survives.
//!
//! [`open_log`] opens the right one for a stream's mode.
#![deny(missing_docs)]

mod disk;
mod durable_log;
mod log;
mod memory_ring;
mod node_log;
mod open;
mod record;
mod replay;
mod sim_disk;

pub use disk::{preallocate_file, Disk, FsDisk, SteadyWriteback, WRITEBACK_STEP_BYTES};
pub use durable_log::{Durability, DurableLog, PREALLOCATE_STEP_BYTES, SEGMENT_BYTES_DEFAULT};
pub use log::{AcceptorLog, LogRecord, Recovered, StorageError};
pub use memory_ring::MemoryRing;
pub use node_log::{NodeLog, StreamLog};
pub use open::open_log;
pub use sim_disk::SimDisk;
