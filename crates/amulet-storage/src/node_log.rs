//! One durable log for every stream of a node: a group commit then costs
//! one fsync however many streams it touched.
//!
//! With a log per stream, a node playing acceptor in the global stream and
//! in several partition streams synced one file per stream at each group
//! commit (about 1,100 fdatasyncs a second per node in the DMap
//! benchmark), so CPU per operation grew with the number of partitions.
//! On this machine's ext4, five small appends to five files each followed
//! by fdatasync cost 660-1,040 µs, the same five appends to one file and
//! one fdatasync 135 µs. Every production log-structured store makes the
//! same choice (one WAL per node).
//!
//! The files are those of [`crate::DurableLog`] with each record tagged by
//! its stream (`record.rs`); [`LogCore`] keeps the streams apart, restates
//! each one's promises and trim point at the start of every segment and
//! deletes a segment once every stream's votes in it are trimmed. A stream
//! the log has not seen before is added with a record synced at once, so a
//! machine crash cannot make the log forget a stream it voted in.
//!
//! [`NodeLog::stream`] hands out each stream's [`StreamLog`], an
//! [`AcceptorLog`]. They share the files behind a mutex (the node's event
//! loop is the only user, so it is never contended): `sync` on any of them
//! makes every stream's writes durable, after which the others are clean.
//! A stream whose trim point never advances keeps the segments its votes
//! are in, and with them the other streams' records in those segments.

use crate::disk::Disk;
use crate::durable_log::{Durability, LogCore};
use crate::log::{AcceptorLog, LogRecord, Recovered, StorageError};
use amulet_types::{Ballot, Instance, StreamId};
use std::sync::{Arc, Mutex, MutexGuard};

/// The acceptor log shared by every stream of a node.
pub struct NodeLog<D: Disk> {
    core: Arc<Mutex<LogCore<D>>>,
}

fn lock<D: Disk>(core: &Mutex<LogCore<D>>) -> MutexGuard<'_, LogCore<D>> {
    // A panic while holding the lock left the core in an unknown state;
    // the node stops anyway (a panicking event loop ends the process).
    core.lock().expect("node log lock poisoned by a panic")
}

impl<D: Disk> NodeLog<D> {
    /// Opens (or creates) the node's log on `disk`, repairing a torn tail.
    pub fn open(
        disk: D,
        durability: Durability,
        segment_bytes_max: u64,
    ) -> Result<NodeLog<D>, StorageError> {
        let core = LogCore::open(disk, durability, segment_bytes_max)?;
        Ok(NodeLog {
            core: Arc::new(Mutex::new(core)),
        })
    }

    /// The log of `stream`, added to the files if they do not know it.
    pub fn stream(&self, stream: StreamId) -> Result<StreamLog<D>, StorageError> {
        lock(&self.core).add_stream(stream)?;
        Ok(StreamLog {
            core: Arc::clone(&self.core),
            stream: Some(stream),
        })
    }

    /// Streams the files hold records of.
    pub fn streams(&self) -> Vec<StreamId> {
        lock(&self.core).tagged_streams()
    }

    /// Number of segment files.
    pub fn segment_count(&self) -> usize {
        lock(&self.core).segment_count()
    }

    /// Whether writes of any stream since the last sync exist.
    pub fn dirty(&self) -> bool {
        lock(&self.core).dirty()
    }
}

/// One stream's acceptor log inside a [`NodeLog`].
pub struct StreamLog<D: Disk> {
    core: Arc<Mutex<LogCore<D>>>,
    /// The stream's tag (never the untagged one of a `DurableLog`).
    stream: Option<StreamId>,
}

impl<D: Disk> AcceptorLog for StreamLog<D> {
    fn save_promise(&mut self, ballot: Ballot) -> Result<(), StorageError> {
        lock(&self.core).save_promise(self.stream, ballot)
    }

    fn save_instance_promise(
        &mut self,
        instance: Instance,
        ballot: Ballot,
    ) -> Result<(), StorageError> {
        lock(&self.core).save_instance_promise(self.stream, instance, ballot)
    }

    fn save(&mut self, record: &LogRecord) -> Result<(), StorageError> {
        lock(&self.core).save(self.stream, record)
    }

    fn mark_decided(&mut self, instance: Instance, ballot: Ballot) -> Result<(), StorageError> {
        lock(&self.core).mark_decided(self.stream, instance, ballot)
    }

    fn read(&self, instance: Instance) -> Result<Option<LogRecord>, StorageError> {
        lock(&self.core).read(self.stream, instance)
    }

    fn vote(&self, instance: Instance) -> Option<(Ballot, bool)> {
        lock(&self.core).vote(self.stream, instance)
    }

    fn trim(&mut self, below: Instance) -> Result<(), StorageError> {
        lock(&self.core).trim(self.stream, below)
    }

    fn trimmed_below(&self) -> Instance {
        lock(&self.core).trimmed_below(self.stream)
    }

    fn end(&self) -> Instance {
        lock(&self.core).end(self.stream)
    }

    fn write_out(&mut self) -> Result<(), StorageError> {
        lock(&self.core).write_out()
    }

    fn sync(&mut self) -> Result<(), StorageError> {
        lock(&self.core).sync()
    }

    fn dirty(&self) -> bool {
        lock(&self.core).dirty()
    }

    fn recovered(&self) -> Recovered {
        lock(&self.core).recovered(self.stream)
    }

    fn close(&mut self) -> Result<(), StorageError> {
        lock(&self.core).close()
    }
}
