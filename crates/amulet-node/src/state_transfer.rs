//! State transfer (thesis §3.4.2 recovery from a peer; DMap §III-C): a
//! replica whose streams were trimmed past its position fetches the
//! latest durable checkpoint of a peer replica of its partition, chunk by
//! chunk (a checkpoint can be far larger than a frame), asking the
//! partition's other replicas in turn until one has a checkpoint that
//! covers what was trimmed. Serving reads the checkpoint file once per
//! transfer and slices chunks from it.
//!
//! Pull-based and stop-and-wait: the asker requests each chunk by offset,
//! so a lost message costs one retry and two concurrent transfers never
//! interleave. A peer that does not answer for `RETRY_AFTER` is replaced
//! by the next one, which starts from byte 0 (its file differs).

use crate::checkpoint_store::{decode, CheckpointBody, CheckpointStore};
use amulet_smr::ReplicaMessage;
use amulet_types::{NodeId, PartitionId, TimeMicros};
use bytes::{Bytes, BytesMut};
use std::collections::BTreeMap;

/// How long an asker waits for a chunk before asking the next peer.
const RETRY_AFTER_MICROS: u64 = 1_000_000;
/// How long a served file stays in memory after its last chunk request.
const SERVE_IDLE_MICROS: u64 = 30_000_000;

struct Fetch {
    peers: Vec<NodeId>,
    asked: usize,
    buffer: BytesMut,
    last_request: TimeMicros,
}

impl Fetch {
    fn peer(&self) -> NodeId {
        self.peers[(self.asked - 1) % self.peers.len()]
    }
}

/// What a chunk led to.
pub(crate) enum ChunkOutcome {
    /// Send this request (the next chunk, or a first one to another peer).
    Ask(NodeId, ReplicaMessage),
    /// The whole checkpoint arrived: its decoded body and its file bytes.
    Complete(Box<CheckpointBody>, Bytes),
    /// Nothing to do (a stray or late chunk).
    Nothing,
}

/// The node's transfers, both ways.
pub(crate) struct StateTransfer {
    me: NodeId,
    store: CheckpointStore,
    chunk_bytes: usize,
    fetching: BTreeMap<PartitionId, Fetch>,
    serving: BTreeMap<PartitionId, (Bytes, TimeMicros)>,
    /// Transfers completed since the node started.
    pub(crate) completed: u64,
}

impl StateTransfer {
    pub(crate) fn new(me: NodeId, store: CheckpointStore, chunk_bytes: usize) -> StateTransfer {
        StateTransfer {
            me,
            store,
            chunk_bytes: chunk_bytes.max(1024),
            fetching: BTreeMap::new(),
            serving: BTreeMap::new(),
            completed: 0,
        }
    }

    /// Whether `partition`'s replica is waiting for a peer's checkpoint.
    pub(crate) fn fetching(&self, partition: PartitionId) -> bool {
        self.fetching.contains_key(&partition)
    }

    /// Starts fetching `partition` from `peers` (its other replicas), if
    /// not already under way; returns the first request.
    pub(crate) fn start(
        &mut self,
        partition: PartitionId,
        peers: Vec<NodeId>,
        now: TimeMicros,
    ) -> Option<(NodeId, ReplicaMessage)> {
        if self.fetching.contains_key(&partition) || peers.is_empty() {
            return None;
        }
        tracing::warn!(
            partition = partition.0,
            ?peers,
            "streams trimmed past this replica: fetching a peer's checkpoint"
        );
        let fetch = Fetch {
            peers,
            asked: 0,
            buffer: BytesMut::new(),
            last_request: now,
        };
        self.fetching.insert(partition, fetch);
        Some(self.ask_next_peer(partition, now))
    }

    /// Gives up a fetch (its replica was replaced or no longer needs it).
    pub(crate) fn cancel(&mut self, partition: PartitionId) {
        self.fetching.remove(&partition);
    }

    fn ask_next_peer(
        &mut self,
        partition: PartitionId,
        now: TimeMicros,
    ) -> (NodeId, ReplicaMessage) {
        let fetch = self.fetching.get_mut(&partition).expect("fetching");
        fetch.asked += 1;
        fetch.buffer.clear();
        fetch.last_request = now;
        let message = ReplicaMessage::CheckpointRequest {
            partition,
            from: self.me,
            offset: 0,
        };
        (fetch.peer(), message)
    }

    /// Retries of fetches whose peer went quiet; forgets idle served files.
    pub(crate) fn tick(&mut self, now: TimeMicros) -> Vec<(NodeId, ReplicaMessage)> {
        self.serving
            .retain(|_, (_, last)| now.since(*last) < SERVE_IDLE_MICROS);
        let stalled: Vec<PartitionId> = self
            .fetching
            .iter()
            .filter(|(_, f)| now.since(f.last_request) >= RETRY_AFTER_MICROS)
            .map(|(p, _)| *p)
            .collect();
        stalled
            .into_iter()
            .map(|p| self.ask_next_peer(p, now))
            .collect()
    }

    /// A peer asks for a chunk of our checkpoint of `partition`.
    pub(crate) fn on_request(
        &mut self,
        partition: PartitionId,
        offset: u64,
        now: TimeMicros,
    ) -> ReplicaMessage {
        if offset == 0 || !self.serving.contains_key(&partition) {
            // A new transfer reads the newest file. Blocking, but rare
            // (recoveries only) and bounded by the file's size.
            let bytes = match self.store.read_bytes(partition) {
                Ok(bytes) => bytes.map(Bytes::from).unwrap_or_default(),
                Err(error) => {
                    tracing::error!(%error, "cannot read a checkpoint a peer asked for");
                    Bytes::new()
                }
            };
            self.serving.insert(partition, (bytes, now));
        }
        let (file, last) = self.serving.get_mut(&partition).expect("inserted above");
        *last = now;
        let total = file.len() as u64;
        let start = usize::try_from(offset.min(total)).expect("within the file");
        let end = (start + self.chunk_bytes).min(file.len());
        ReplicaMessage::CheckpointChunk {
            partition,
            from: self.me,
            total,
            offset,
            bytes: file.slice(start..end),
        }
    }

    /// A chunk of the checkpoint we are fetching.
    pub(crate) fn on_chunk(
        &mut self,
        partition: PartitionId,
        from: NodeId,
        total: u64,
        offset: u64,
        bytes: Bytes,
        now: TimeMicros,
    ) -> ChunkOutcome {
        let Some(fetch) = self.fetching.get_mut(&partition) else {
            return ChunkOutcome::Nothing;
        };
        if from != fetch.peer() || offset != fetch.buffer.len() as u64 {
            return ChunkOutcome::Nothing;
        }
        if total == 0 || bytes.is_empty() && offset < total {
            // The peer has no checkpoint: ask the next one.
            let (to, message) = self.ask_next_peer(partition, now);
            return ChunkOutcome::Ask(to, message);
        }
        fetch.buffer.extend_from_slice(&bytes);
        fetch.last_request = now;
        if (fetch.buffer.len() as u64) < total {
            let message = ReplicaMessage::CheckpointRequest {
                partition,
                from: self.me,
                offset: fetch.buffer.len() as u64,
            };
            return ChunkOutcome::Ask(from, message);
        }
        let file = std::mem::take(&mut fetch.buffer).freeze();
        match decode(&file) {
            Ok(body) if body.replica.partition == partition => {
                ChunkOutcome::Complete(Box::new(body), file)
            }
            Ok(_) | Err(_) => {
                tracing::error!(
                    partition = partition.0,
                    peer = %from,
                    "a peer's checkpoint does not decode as this partition's; asking another"
                );
                let (to, message) = self.ask_next_peer(partition, now);
                ChunkOutcome::Ask(to, message)
            }
        }
    }

    /// The fetched checkpoint does not cover what was trimmed (the peer's
    /// is too old): ask the next peer.
    pub(crate) fn too_old(
        &mut self,
        partition: PartitionId,
        now: TimeMicros,
    ) -> Option<(NodeId, ReplicaMessage)> {
        self.fetching
            .contains_key(&partition)
            .then(|| self.ask_next_peer(partition, now))
    }

    /// The fetched checkpoint was installed.
    pub(crate) fn installed(&mut self, partition: PartitionId) {
        self.fetching.remove(&partition);
        self.completed += 1;
    }
}
