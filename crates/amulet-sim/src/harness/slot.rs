//! One simulated node's slot: what outlives its processes (acceptor
//! storage, checkpoint files, the promises its logs vouched for) and its
//! running host, if up.

use super::pause::Paused;
use crate::rng::Rng;
use crate::sim_log::{crash_stores, store_for, NodeDisk, SimStore};
use amulet_dmap::PartitionState;
use amulet_host::{Host, HostCounters, LogOpener, Token, WriteId, WriteOutcome};
use amulet_storage::AcceptorLog;
use amulet_types::{Ballot, NodeId, PartitionId, StorageMode, StreamConfig, StreamId, TimeMicros};
use bytes::Bytes;
use std::collections::BTreeMap;

/// A node's acceptor storage: a store per stream, on the node's shared
/// disk (one node log, as the real node keeps) in odd seeds.
pub struct SimStorage {
    /// The storage mode of the node's streams.
    pub mode: StorageMode,
    /// Per stream, its store.
    pub stores: BTreeMap<StreamId, SimStore>,
    /// The node-wide log's disk, when the seed uses one.
    pub node_disk: Option<NodeDisk>,
}

impl SimStorage {
    /// Storage of a node in `mode`, with a node-wide log if `node_log`.
    pub fn new(mode: StorageMode, node_log: bool) -> SimStorage {
        SimStorage {
            mode,
            stores: BTreeMap::new(),
            node_disk: NodeDisk::new(mode).filter(|_| node_log),
        }
    }

    /// `stream`'s store, created empty if new.
    pub fn store(&mut self, stream: StreamId, mode: StorageMode) -> &SimStore {
        let node_disk = &self.node_disk;
        self.stores
            .entry(stream)
            .or_insert_with(|| store_for(node_disk, mode, stream))
    }

    /// Opens the logs of `configs` for a new process.
    pub fn open_all(
        &mut self,
        configs: &[StreamConfig],
    ) -> Vec<(StreamConfig, Box<dyn AcceptorLog>)> {
        configs
            .iter()
            .map(|c| (c.clone(), self.store(c.stream, c.storage).open()))
            .collect()
    }
}

impl LogOpener for SimStorage {
    fn open(
        &mut self,
        config: &StreamConfig,
        _created_now: bool,
    ) -> Result<Box<dyn AcceptorLog>, String> {
        Ok(self.store(config.stream, config.storage).open())
    }
}

/// A node's checkpoint files, with the rule the node's store keeps: a
/// write is put in place only if no later write or removal of the same
/// partition came first.
#[derive(Default)]
pub struct SimFiles {
    /// The files in place (they survive crashes).
    pub files: BTreeMap<PartitionId, Bytes>,
    /// Per partition, the last write or removal applied in this process.
    applied: BTreeMap<PartitionId, WriteId>,
    /// Background writes under way: durable at the given time.
    pub writing: Vec<(TimeMicros, PartitionId, WriteId, Bytes)>,
}

impl SimFiles {
    /// Puts `bytes` in place as write `write` of `partition`.
    pub fn write(&mut self, partition: PartitionId, write: WriteId, bytes: Bytes) -> WriteOutcome {
        if self
            .applied
            .get(&partition)
            .is_some_and(|last| *last > write)
        {
            return WriteOutcome::Superseded;
        }
        self.applied.insert(partition, write);
        let size = bytes.len() as u64;
        self.files.insert(partition, bytes);
        WriteOutcome::Written(size)
    }

    /// Removes `partition`'s file as removal `write`.
    pub fn remove(&mut self, partition: PartitionId, write: WriteId) {
        if self
            .applied
            .get(&partition)
            .is_some_and(|last| *last > write)
        {
            return;
        }
        self.applied.insert(partition, write);
        self.files.remove(&partition);
    }

    /// The process died: writes under way are lost (a file is renamed into
    /// place only once written and synced), and the next process numbers
    /// its writes afresh.
    pub fn crash(&mut self) {
        self.writing.clear();
        self.applied.clear();
    }
}

/// One node of the simulated cluster.
pub struct NodeSlot {
    /// Its acceptor storage.
    pub storage: SimStorage,
    /// Its checkpoint files.
    pub files: SimFiles,
    /// Per stream, the highest promise the node's logs vouched for at a
    /// sync (durable from then on in every durable mode): a voting
    /// acceptor that restarts must come back promising at least that
    /// (Paxos: an acceptor never goes back on a promise).
    pub vouched: BTreeMap<StreamId, Ballot>,
    /// Its runs so far.
    pub incarnation: u32,
    /// Its running process.
    pub host: Option<Host<PartitionState>>,
    /// Client requests submitted to the running process: who asked, with
    /// which tag.
    pub requests: BTreeMap<Token, (NodeId, u64)>,
    /// The next request's token.
    pub next_token: Token,
    /// What the node's earlier processes did.
    pub counters: HostCounters,
    /// Its process's pause under way, if any ([`crate::harness::Pause`]).
    pub paused: Option<Paused>,
}

impl NodeSlot {
    /// A node that has never run.
    pub fn new(storage: SimStorage) -> NodeSlot {
        NodeSlot {
            storage,
            files: SimFiles::default(),
            vouched: BTreeMap::new(),
            incarnation: 0,
            host: None,
            requests: BTreeMap::new(),
            next_token: 0,
            counters: HostCounters::default(),
            paused: None,
        }
    }

    /// Its process died (`machine`: with the machine, losing unsynced
    /// writes): what the process held is gone.
    pub fn crash(&mut self, machine: Option<&mut Rng>) {
        let host = self
            .host
            .take()
            .expect("the nemesis crashes only nodes that are up");
        add_counters(&mut self.counters, host.counters());
        // A paused process can be killed: what waited for it is gone.
        self.paused = None;
        self.requests.clear();
        self.files.crash();
        crash_stores(self.storage.stores.values(), machine);
    }

    /// What the node did over all its processes.
    pub fn total_counters(&self) -> HostCounters {
        let mut total = self.counters;
        if let Some(host) = &self.host {
            add_counters(&mut total, host.counters());
        }
        total
    }
}

fn add_counters(into: &mut HostCounters, more: HostCounters) {
    into.restores += more.restores;
    into.transfers += more.transfers;
    into.transfer_chunks += more.transfer_chunks;
    into.hand_offs += more.hand_offs;
    into.reconfigured += more.reconfigured;
    into.syncs += more.syncs;
    into.splits_proposed += more.splits_proposed;
    into.load_splits_proposed += more.load_splits_proposed;
    into.tail_splits_proposed += more.tail_splits_proposed;
    into.merges_proposed += more.merges_proposed;
    into.moves_proposed += more.moves_proposed;
    into.weight_moves_proposed += more.weight_moves_proposed;
}
