//! Acceptor storage in the simulator (thesis §3.4.1).
//!
//! Durable modes run the real `DurableLog` on a `SimDisk`, or, as the node
//! does, every durable stream of a node in one real `NodeLog` on one
//! `SimDisk` (a [`NodeDisk`]): a machine crash keeps each file's synced
//! prefix plus a random part of its unsynced tail (tearing records), and
//! the log must recover from exactly that. Memory
//! mode uses the model below (a memory ring's eviction is not exercised:
//! learners cannot yet recover from a trimmed answer without checkpoints).
//!
//! The model:
//! Writes are visible at once and reach the "OS" at once; `sync` makes them
//! durable. A process crash keeps everything written (the OS has it). A
//! machine crash keeps what was synced plus a random prefix of the rest
//! (the disk may have flushed some of it, in order). After a machine crash
//! an async-durable log is not intact (it may have lost votes it sent); a
//! sync-durable one is (nothing it acted on was unsynced). A memory log
//! loses everything at any crash and is never intact again.

use crate::rng::Rng;
use amulet_storage::{
    AcceptorLog, Durability, DurableLog, LogRecord, NodeLog, Recovered, SimDisk, StorageError,
};
use amulet_types::{Ballot, Instance, StorageMode, StreamId};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

/// One write, replayed in order.
#[derive(Clone, Debug)]
enum Op {
    Promise(Ballot),
    InstancePromise(Instance, Ballot),
    Save(LogRecord),
    MarkDecided(Instance, Ballot),
    Trim(Instance),
}

/// The state a sequence of writes produces.
#[derive(Clone, Debug, Default)]
struct State {
    promised: Ballot,
    instance_promises: BTreeMap<Instance, Ballot>,
    records: BTreeMap<Instance, LogRecord>,
    trimmed_below: Instance,
}

impl State {
    fn apply(&mut self, op: &Op) {
        match op {
            Op::Promise(ballot) => self.promised = self.promised.max(*ballot),
            Op::InstancePromise(instance, ballot) => {
                if *instance >= self.trimmed_below {
                    self.instance_promises.insert(*instance, *ballot);
                }
            }
            Op::Save(record) => {
                if record.instance >= self.trimmed_below {
                    self.records.insert(record.instance, record.clone());
                }
            }
            Op::MarkDecided(instance, ballot) => {
                if let Some(record) = self.records.get_mut(instance) {
                    if record.ballot == *ballot {
                        record.decided = true;
                    }
                }
            }
            Op::Trim(below) => {
                if *below > self.trimmed_below {
                    self.trimmed_below = *below;
                    self.records = self.records.split_off(below);
                    self.instance_promises = self.instance_promises.split_off(below);
                }
            }
        }
    }

    fn end(&self) -> Instance {
        self.records
            .last_key_value()
            .map_or(self.trimmed_below, |(i, _)| i.next())
            .max(self.trimmed_below)
    }
}

#[derive(Debug)]
struct Inner {
    mode: StorageMode,
    /// Everything written (what the OS holds).
    written: State,
    /// What is on the platter.
    durable: State,
    /// Written but not synced, in order.
    unsynced: Vec<Op>,
    /// Whether the current process may vote from this log.
    intact: bool,
}

/// Segment size of simulated durable logs: small, so runs roll segments.
const SIM_SEGMENT_BYTES: u64 = 64 << 10;

/// The storage of one acceptor in one stream; survives its process.
#[derive(Clone, Debug)]
pub enum SimStore {
    /// The model (memory mode).
    Model(ModelStore),
    /// The real durable log on a simulated disk.
    Durable {
        /// The disk, shared by every incarnation of the process.
        disk: SimDisk,
        /// Async or sync.
        durability: Durability,
    },
    /// One stream of the node-wide durable log on the node's disk.
    Shared {
        /// The node's disk and log.
        node: NodeDisk,
        /// The stream.
        stream: StreamId,
    },
}

/// The disk a node keeps all its durable streams on, and the `NodeLog`
/// its current process opened (forgotten when the process dies).
#[derive(Clone, Debug)]
pub struct NodeDisk(Arc<Mutex<NodeDiskInner>>);

struct NodeDiskInner {
    disk: SimDisk,
    durability: Durability,
    open: Option<NodeLog<SimDisk>>,
}

impl std::fmt::Debug for NodeDiskInner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "NodeDisk({:?})", self.durability)
    }
}

impl NodeDisk {
    /// A node's empty disk for its streams in `mode` (`None` for memory
    /// mode, which has no disk).
    pub fn new(mode: StorageMode) -> Option<NodeDisk> {
        let durability = match mode {
            StorageMode::Memory => return None,
            StorageMode::AsyncDurable => Durability::Async,
            StorageMode::SyncDurable => Durability::Sync,
        };
        Some(NodeDisk(Arc::new(Mutex::new(NodeDiskInner {
            disk: SimDisk::new(),
            durability,
            open: None,
        }))))
    }

    fn inner(&self) -> std::sync::MutexGuard<'_, NodeDiskInner> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The process died: its open log is gone, the files stay.
    fn forget(&self) {
        self.inner().open = None;
    }

    fn crash_machine(&self, seed: u64) {
        let mut inner = self.inner();
        inner.open = None;
        inner.disk.crash_machine(seed);
    }

    /// `stream`'s log in the node log of the current process, opened at
    /// the process's first stream.
    fn open(&self, stream: StreamId) -> Box<dyn AcceptorLog> {
        let mut inner = self.inner();
        if inner.open.is_none() {
            let log = NodeLog::open(inner.disk.clone(), inner.durability, SIM_SEGMENT_BYTES)
                .unwrap_or_else(|e| panic!("node log recovery failed: {e}"));
            inner.open = Some(log);
        }
        let log = inner.open.as_ref().expect("opened above");
        Box::new(
            log.stream(stream)
                .unwrap_or_else(|e| panic!("node log stream {}: {e}", stream.0)),
        )
    }
}

/// A new store for `stream` of a node in `mode`: on the node's shared
/// disk when it has one, else a store of its own.
pub fn store_for(node: &Option<NodeDisk>, mode: StorageMode, stream: StreamId) -> SimStore {
    match node {
        Some(node) => SimStore::Shared {
            node: node.clone(),
            stream,
        },
        None => SimStore::new(mode),
    }
}

impl SimStore {
    /// Empty storage in `mode`.
    pub fn new(mode: StorageMode) -> SimStore {
        match mode {
            StorageMode::Memory => SimStore::Model(ModelStore::new(mode)),
            StorageMode::AsyncDurable => SimStore::Durable {
                disk: SimDisk::new(),
                durability: Durability::Async,
            },
            StorageMode::SyncDurable => SimStore::Durable {
                disk: SimDisk::new(),
                durability: Durability::Sync,
            },
        }
    }

    /// The process died: the OS keeps every write (a durable log's files
    /// are untouched). A memory log is gone.
    pub fn crash_process(&self) {
        match self {
            SimStore::Model(model) => model.crash_process(),
            SimStore::Shared { node, .. } => node.forget(),
            SimStore::Durable { .. } => {}
        }
    }

    /// The machine died: unsynced writes are lost except a random prefix.
    pub fn crash_machine(&self, rng: &mut Rng) {
        match self {
            SimStore::Model(model) => model.crash_machine(rng),
            SimStore::Durable { disk, .. } => disk.crash_machine(rng.next_u64()),
            // Every store of the node crashes its disk: the first tears the
            // unsynced tails, the others find everything synced.
            SimStore::Shared { node, .. } => node.crash_machine(rng.next_u64()),
        }
    }

    /// Deliberate bug (memory mode only): the log claims to be intact
    /// although it lost state, so its acceptor votes again.
    pub fn pretend_intact(&self) {
        match self {
            SimStore::Model(model) => model.pretend_intact(),
            SimStore::Durable { .. } | SimStore::Shared { .. } => {
                panic!("the amnesiac-acceptor bug runs in memory mode")
            }
        }
    }

    /// A log handle for a new process incarnation. A durable log that
    /// cannot be opened is a bug in the log (the simulated disk only
    /// crashes, it never corrupts): the panic becomes the seed's failure.
    pub fn open(&self) -> Box<dyn AcceptorLog> {
        match self {
            SimStore::Model(model) => model.open(),
            SimStore::Durable { disk, durability } => Box::new(
                DurableLog::open(disk.clone(), *durability, SIM_SEGMENT_BYTES)
                    .unwrap_or_else(|e| panic!("durable log recovery failed: {e}")),
            ),
            SimStore::Shared { node, stream } => node.open(*stream),
        }
    }
}

/// The model of one acceptor's storage in one stream.
#[derive(Clone, Debug)]
pub struct ModelStore(Arc<Mutex<Inner>>);

impl ModelStore {
    /// Empty storage in `mode`.
    pub fn new(mode: StorageMode) -> ModelStore {
        ModelStore(Arc::new(Mutex::new(Inner {
            mode,
            written: State::default(),
            durable: State::default(),
            unsynced: Vec::new(),
            intact: true,
        })))
    }

    /// The process died: the OS keeps every write. A memory log is gone.
    pub fn crash_process(&self) {
        let mut inner = self.0.lock().expect("sim is single-threaded");
        if inner.mode == StorageMode::Memory {
            inner.lose_everything();
        }
    }

    /// The machine died: unsynced writes are lost except a random prefix.
    pub fn crash_machine(&self, rng: &mut Rng) {
        let mut inner = self.0.lock().expect("sim is single-threaded");
        match inner.mode {
            StorageMode::Memory => inner.lose_everything(),
            StorageMode::AsyncDurable | StorageMode::SyncDurable => {
                let kept = rng.range(0, inner.unsynced.len() as u64) as usize;
                let ops: Vec<Op> = inner.unsynced.drain(..).take(kept).collect();
                for op in &ops {
                    inner.durable.apply(op);
                }
                inner.written = inner.durable.clone();
                // An async log cannot know whether it lost a vote it sent.
                if inner.mode == StorageMode::AsyncDurable {
                    inner.intact = false;
                }
            }
        }
    }

    /// Deliberate bug (simulator tests only): the log claims to be intact
    /// although it lost state, so its acceptor votes again.
    pub fn pretend_intact(&self) {
        self.0.lock().expect("sim is single-threaded").intact = true;
    }

    /// A log handle for a new process incarnation.
    pub fn open(&self) -> Box<dyn AcceptorLog> {
        Box::new(SimLog(self.clone()))
    }
}

impl Inner {
    fn lose_everything(&mut self) {
        self.written = State::default();
        self.durable = State::default();
        self.unsynced.clear();
        self.intact = false;
    }

    fn write(&mut self, op: Op) {
        self.written.apply(&op);
        self.unsynced.push(op);
    }
}

/// The process-side handle of a [`ModelStore`].
struct SimLog(ModelStore);

impl SimLog {
    fn with<T>(&self, f: impl FnOnce(&mut Inner) -> T) -> T {
        f(&mut self.0 .0.lock().expect("sim is single-threaded"))
    }
}

impl AcceptorLog for SimLog {
    fn save_promise(&mut self, ballot: Ballot) -> Result<(), StorageError> {
        self.with(|i| i.write(Op::Promise(ballot)));
        Ok(())
    }

    fn save_instance_promise(
        &mut self,
        instance: Instance,
        ballot: Ballot,
    ) -> Result<(), StorageError> {
        self.with(|i| i.write(Op::InstancePromise(instance, ballot)));
        Ok(())
    }

    fn save(&mut self, record: &LogRecord) -> Result<(), StorageError> {
        self.with(|i| i.write(Op::Save(record.clone())));
        Ok(())
    }

    fn mark_decided(&mut self, instance: Instance, ballot: Ballot) -> Result<(), StorageError> {
        self.with(|i| i.write(Op::MarkDecided(instance, ballot)));
        Ok(())
    }

    fn read(&self, instance: Instance) -> Result<Option<LogRecord>, StorageError> {
        Ok(self.with(|i| i.written.records.get(&instance).cloned()))
    }

    fn trim(&mut self, below: Instance) -> Result<(), StorageError> {
        self.with(|i| i.write(Op::Trim(below)));
        Ok(())
    }

    fn trimmed_below(&self) -> Instance {
        self.with(|i| i.written.trimmed_below)
    }

    fn end(&self) -> Instance {
        self.with(|i| i.written.end())
    }

    fn sync(&mut self) -> Result<(), StorageError> {
        self.with(|i| {
            let ops = std::mem::take(&mut i.unsynced);
            for op in &ops {
                i.durable.apply(op);
            }
        });
        Ok(())
    }

    fn dirty(&self) -> bool {
        self.with(|i| i.mode != StorageMode::Memory && !i.unsynced.is_empty())
    }

    fn recovered(&self) -> Recovered {
        self.with(|i| Recovered {
            promised: i.written.promised,
            instance_promises: i
                .written
                .instance_promises
                .iter()
                .map(|(i, b)| (*i, *b))
                .collect(),
            trimmed_below: i.written.trimmed_below,
            end: i.written.end(),
            intact: i.intact,
        })
    }
}

/// A crash of the node holding `stores`: a process crash keeps what was
/// written; a machine crash (`machine_rng` given) loses what was not
/// synced and may tear the tail.
pub fn crash_stores<'a>(
    stores: impl IntoIterator<Item = &'a SimStore>,
    machine_rng: Option<&mut Rng>,
) {
    match machine_rng {
        None => stores.into_iter().for_each(SimStore::crash_process),
        Some(rng) => {
            for store in stores {
                store.crash_machine(rng);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use amulet_wire::Batch;

    fn vote(instance: u64) -> LogRecord {
        LogRecord {
            instance: Instance(instance),
            ballot: Ballot { round: 1, node: 1 },
            batch: Batch::Null,
            decided: false,
        }
    }

    #[test]
    fn thesis_3_4_1_each_mode_keeps_what_it_promises() {
        let mut rng = Rng::new(7);
        for mode in [StorageMode::SyncDurable, StorageMode::AsyncDurable] {
            let store = SimStore::new(mode);
            let mut log = store.open();
            log.save(&vote(0)).unwrap();
            log.sync().unwrap();
            log.save(&vote(1)).unwrap();
            // Written out, as the host does before any message leaves.
            log.write_out().unwrap();
            store.crash_process();
            let log = store.open();
            assert!(
                log.read(Instance(1)).unwrap().is_some(),
                "{mode:?}: OS kept it"
            );
            assert!(log.recovered().intact);
            store.crash_machine(&mut rng);
            let log = store.open();
            assert!(log.read(Instance(0)).unwrap().is_some(), "{mode:?}: synced");
            assert_eq!(log.recovered().intact, mode == StorageMode::SyncDurable);
        }
        let store = SimStore::new(StorageMode::Memory);
        store.open().save(&vote(0)).unwrap();
        store.crash_process();
        let log = store.open();
        assert!(log.read(Instance(0)).unwrap().is_none());
        assert!(!log.recovered().intact);
    }
}
