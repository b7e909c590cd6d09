//! Acceptor storage (thesis §3.4.1, A.4).
//!
//! The Paxos core reads and writes an [`AcceptorLog`] synchronously, like
//! etcd raft's `Storage`: writes are appended at once and become durable at
//! the next [`AcceptorLog::sync`]. The runtime decides when to sync: in
//! `SyncDurable` mode before any message produced by the step leaves the
//! process (group commit: one fsync per batch of inputs), in `AsyncDurable`
//! mode in the background.
//!
//! Implemented so far: [`MemoryRing`] (`StorageMode::Memory`). It survives
//! the crash of a minority of acceptors; a restarted memory acceptor is
//! built with [`MemoryRing::after_restart`], reports `intact: false` and must
//! never vote again (learner only). The durable log is not written yet.
#![deny(missing_docs)]

mod log;
mod memory_ring;

pub use log::{AcceptorLog, LogRecord, Recovered, StorageError};
pub use memory_ring::MemoryRing;
