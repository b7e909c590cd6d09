//! Acceptor storage (thesis §3.4.1, A.4).
//!
//! The Paxos core reads and writes an [`AcceptorLog`] synchronously, like
//! etcd raft's `Storage`: writes are appended at once and become durable at
//! the next [`AcceptorLog::sync`]. The runtime decides when to sync: in
//! `SyncDurable` mode before any message produced by the step leaves the
//! process (group commit: one fsync per batch of inputs), in `AsyncDurable`
//! mode in the background.
#![deny(missing_docs)]

mod log;

pub use log::{AcceptorLog, LogRecord, Recovered, StorageError};
