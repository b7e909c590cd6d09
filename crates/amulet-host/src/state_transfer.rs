//! State transfer (thesis §3.4.2 recovery from a peer; DMap §III-C), both
//! sides: a replica whose streams were trimmed past its position fetches
//! the latest durable checkpoint of a peer replica of its partition, chunk
//! by chunk (a checkpoint can be far larger than a frame), asking the
//! partition's other replicas in turn until one has a checkpoint that
//! covers what was trimmed. A server reads its checkpoint file once per
//! transfer (through the runtime, [`crate::Command::ReadCheckpoint`]) and
//! slices chunks from it.
//!
//! Pull-based and stop-and-wait: the asker requests each chunk by offset,
//! so a lost message costs one retry and two concurrent transfers never
//! interleave. A peer that does not answer for
//! [`TRANSFER_RETRY_AFTER_MICROS`] is replaced by the next one, which
//! starts from byte 0 (its file differs).
//!
//! Non-disruptive recovery (thesis §3.4.4): while it waits, the asker's
//! learner keeps the decisions that go on arriving (it only stops
//! delivering them), and the asker names, per stream it fell behind in,
//! the first of them (`at_least`). A checkpoint at or past them lets it
//! apply the held decisions and fetch nothing from the acceptors; an older
//! one leaves a gap it must fetch, which is what loads the acceptors while
//! they serve new instances. A peer whose latest checkpoint is older
//! writes a new one at once (once its merge merges every stream named: a
//! moved partition's asker names the move's new stream) and sends it when
//! it is written (`waiting`), or, after two such writes, the second even
//! if it does not reach what was asked: a peer behind the asker itself
//! (its replica may wait for a stream only the asker can move on, a new
//! stream the asker is an acceptor of) would otherwise write checkpoints
//! in a loop while the asker waits for it. After every peer was asked
//! twice, the asker takes any checkpoint that covers what was trimmed.

use crate::config::TRANSFER_RETRY_AFTER_MICROS;
use amulet_smr::ReplicaMessage;
use amulet_types::{Instance, NodeId, PartitionId, StreamId, TimeMicros};
use bytes::{Bytes, BytesMut};
use std::collections::BTreeMap;

/// How long a served file stays in memory after its last chunk request.
const SERVE_IDLE_MICROS: u64 = 30_000_000;

/// The smallest chunk: a header's worth of framing per chunk must stay
/// small against what it carries.
pub(crate) const CHUNK_BYTES_MIN: usize = 64;

struct Fetch {
    peers: Vec<NodeId>,
    /// Per stream, the first new decision the asker holds (§3.4.4).
    at_least: Vec<(StreamId, Instance)>,
    asked: usize,
    buffer: BytesMut,
    last_request: TimeMicros,
}

impl Fetch {
    fn peer(&self) -> NodeId {
        self.peers[(self.asked - 1) % self.peers.len()]
    }
}

/// Checkpoint writes an asker waits for at most: the first may have
/// begun before its request (taken from an older state); the second began
/// after it, and is served whatever it reaches.
pub(crate) const WAITED_WRITES_MAX: u32 = 2;

/// An asker waiting for a newer checkpoint (non-disruptive recovery).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Waiter {
    /// Per stream, the first new decision the asker holds.
    pub(crate) at_least: Vec<(StreamId, Instance)>,
    /// Checkpoint writes finished since it asked.
    pub(crate) writes: u32,
}

/// A chunk request waiting for its file to be read.
struct Queued {
    asker: NodeId,
    /// The partition the asker named (the file may be of the partition it
    /// merged into).
    label: PartitionId,
    offset: u64,
}

/// What a chunk led to.
pub(crate) enum ChunkOutcome {
    /// Send this request (the next chunk, or a first one to another peer).
    Ask(NodeId, ReplicaMessage),
    /// The whole file arrived.
    Complete(Bytes),
    /// Nothing to do (a stray or late chunk).
    Nothing,
}

/// What a request for a chunk of our checkpoint led to.
pub(crate) enum Serve {
    /// Send this chunk.
    Chunk(NodeId, ReplicaMessage),
    /// The file must be read first (no read of it under way yet).
    Read,
    /// Answered when the read under way completes.
    Queued,
}

/// A node's transfers, both ways.
pub(crate) struct StateTransfer {
    me: NodeId,
    chunk_bytes: usize,
    fetching: BTreeMap<PartitionId, Fetch>,
    serving: BTreeMap<PartitionId, (Bytes, TimeMicros)>,
    reading: BTreeMap<PartitionId, Vec<Queued>>,
    /// Askers whose `at_least` our latest checkpoint does not reach,
    /// answered when one that does is written, or the second written
    /// since they asked.
    waiting: BTreeMap<PartitionId, BTreeMap<NodeId, Waiter>>,
    /// Injected bug: a fetched file is assembled without its last chunk.
    drop_last_chunk: bool,
}

impl StateTransfer {
    pub(crate) fn new(me: NodeId, chunk_bytes: usize, drop_last_chunk: bool) -> StateTransfer {
        StateTransfer {
            me,
            chunk_bytes: chunk_bytes.max(CHUNK_BYTES_MIN),
            fetching: BTreeMap::new(),
            serving: BTreeMap::new(),
            reading: BTreeMap::new(),
            waiting: BTreeMap::new(),
            drop_last_chunk,
        }
    }

    /// Whether `partition`'s replica is waiting for a peer's checkpoint.
    pub(crate) fn fetching(&self, partition: PartitionId) -> bool {
        self.fetching.contains_key(&partition)
    }

    /// The partitions being fetched.
    pub(crate) fn fetched_partitions(&self) -> impl Iterator<Item = PartitionId> + '_ {
        self.fetching.keys().copied()
    }

    /// Starts fetching `partition` from `peers`, if not already under way;
    /// returns the first request.
    pub(crate) fn start(
        &mut self,
        partition: PartitionId,
        peers: Vec<NodeId>,
        at_least: Vec<(StreamId, Instance)>,
        now: TimeMicros,
    ) -> Option<(NodeId, ReplicaMessage)> {
        if self.fetching.contains_key(&partition) || peers.is_empty() {
            return None;
        }
        tracing::warn!(
            partition = partition.0,
            ?peers,
            ?at_least,
            "fetching a peer's checkpoint"
        );
        let fetch = Fetch {
            peers,
            at_least,
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
        // Every peer asked twice for a recent enough checkpoint: take what
        // there is rather than wait for peers that may be behind too.
        let at_least = if fetch.asked <= 2 * fetch.peers.len() {
            fetch.at_least.clone()
        } else {
            Vec::new()
        };
        let message = ReplicaMessage::CheckpointRequest {
            partition,
            from: self.me,
            offset: 0,
            at_least,
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
            .filter(|(_, f)| now.since(f.last_request) >= TRANSFER_RETRY_AFTER_MICROS)
            .map(|(p, _)| *p)
            .collect();
        stalled
            .into_iter()
            .map(|p| self.ask_next_peer(p, now))
            .collect()
    }

    /// `asker` asks for the chunk at `offset` of our checkpoint of
    /// `serve` (labelled `label`, the partition it named). A new transfer
    /// (offset 0) reads the newest file.
    pub(crate) fn on_request(
        &mut self,
        serve: PartitionId,
        label: PartitionId,
        asker: NodeId,
        offset: u64,
        now: TimeMicros,
    ) -> Serve {
        if offset == 0 || !self.serving.contains_key(&serve) {
            let queue = self.reading.entry(serve).or_default();
            let first = queue.is_empty();
            queue.push(Queued {
                asker,
                label,
                offset,
            });
            return if first { Serve::Read } else { Serve::Queued };
        }
        Serve::Chunk(asker, self.chunk(serve, label, offset, now))
    }

    /// The file of `partition` was read (empty: there is none); the
    /// requests that waited for it are answered.
    pub(crate) fn on_read(
        &mut self,
        partition: PartitionId,
        file: Bytes,
        now: TimeMicros,
    ) -> Vec<(NodeId, ReplicaMessage)> {
        self.serving.insert(partition, (file, now));
        let queued = self.reading.remove(&partition).unwrap_or_default();
        queued
            .into_iter()
            .map(|q| (q.asker, self.chunk(partition, q.label, q.offset, now)))
            .collect()
    }

    /// Whether a read of `partition`'s file is under way.
    #[cfg(test)]
    pub(crate) fn reading(&self, partition: PartitionId) -> bool {
        self.reading.contains_key(&partition)
    }

    fn chunk(
        &mut self,
        serve: PartitionId,
        label: PartitionId,
        offset: u64,
        now: TimeMicros,
    ) -> ReplicaMessage {
        let (file, last) = self.serving.get_mut(&serve).expect("read before");
        *last = now;
        let total = file.len() as u64;
        let start = usize::try_from(offset.min(total)).expect("within the file");
        let end = (start + self.chunk_bytes).min(file.len());
        ReplicaMessage::CheckpointChunk {
            partition: label,
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
        let drop_last_chunk = self.drop_last_chunk;
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
        let last = offset + bytes.len() as u64 >= total;
        if !(last && drop_last_chunk) {
            fetch.buffer.extend_from_slice(&bytes);
        }
        fetch.last_request = now;
        if !last {
            let message = ReplicaMessage::CheckpointRequest {
                partition,
                from: self.me,
                offset: fetch.buffer.len() as u64,
                at_least: Vec::new(),
            };
            return ChunkOutcome::Ask(from, message);
        }
        ChunkOutcome::Complete(std::mem::take(&mut fetch.buffer).freeze())
    }

    /// The file fetched from the current peer is of no use (it does not
    /// decode, or it is too old): ask the next peer.
    pub(crate) fn next_peer(
        &mut self,
        partition: PartitionId,
        now: TimeMicros,
    ) -> Option<(NodeId, ReplicaMessage)> {
        self.fetching
            .contains_key(&partition)
            .then(|| self.ask_next_peer(partition, now))
    }

    /// The peer asked runs no replica of `partition` (and its map does not
    /// make ours obsolete): ask the next peer at once.
    pub(crate) fn not_held(
        &mut self,
        partition: PartitionId,
        from: NodeId,
        now: TimeMicros,
    ) -> Option<(NodeId, ReplicaMessage)> {
        self.fetching
            .get(&partition)
            .is_some_and(|fetch| fetch.peer() == from && fetch.buffer.is_empty())
            .then(|| self.ask_next_peer(partition, now))
    }

    /// `asker` wants a checkpoint of `partition` at least at `at_least`
    /// (`waiter.at_least`), newer than ours: it is answered when one is
    /// written ([`Self::take_waiting`]). A new request replaces the
    /// asker's earlier one.
    pub(crate) fn wait(&mut self, partition: PartitionId, asker: NodeId, waiter: Waiter) {
        self.waiting
            .entry(partition)
            .or_default()
            .insert(asker, waiter);
    }

    /// Every waiting asker's partition and what it holds.
    pub(crate) fn waiting(
        &self,
    ) -> impl Iterator<Item = (PartitionId, &[(StreamId, Instance)])> + '_ {
        self.waiting.iter().flat_map(|(partition, askers)| {
            askers
                .values()
                .map(move |waiter| (*partition, waiter.at_least.as_slice()))
        })
    }

    /// The askers waiting for a newer checkpoint of `partition`, with what
    /// each needs and how many writes each has waited for.
    pub(crate) fn take_waiting(&mut self, partition: PartitionId) -> Vec<(NodeId, Waiter)> {
        self.waiting
            .remove(&partition)
            .map(|w| w.into_iter().collect())
            .unwrap_or_default()
    }

    /// The fetched checkpoint was installed.
    pub(crate) fn installed(&mut self, partition: PartitionId) {
        self.fetching.remove(&partition);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checkpoint_codec::tests::{body, DmapBody};
    use crate::checkpoint_codec::{decode_checkpoint, encode_checkpoint};

    /// Carries requests and chunks between an asker and servers (each
    /// holding a file) until the transfer completes or `rounds` pass.
    fn run(
        asker: &mut StateTransfer,
        servers: &mut BTreeMap<NodeId, (StateTransfer, Bytes)>,
        first: (NodeId, ReplicaMessage),
        rounds: usize,
    ) -> Option<(DmapBody, usize)> {
        let mut next = Some(first);
        for round in 0..rounds {
            let (to, request) = next.take()?;
            let ReplicaMessage::CheckpointRequest {
                partition,
                offset,
                from,
                ..
            } = request
            else {
                panic!("the asker only sends requests");
            };
            let (server, file) = servers.get_mut(&to)?;
            let reply = match server.on_request(partition, partition, from, offset, TimeMicros(0)) {
                Serve::Chunk(_, reply) => reply,
                Serve::Read => {
                    server
                        .on_read(partition, file.clone(), TimeMicros(0))
                        .pop()
                        .expect("the queued request")
                        .1
                }
                Serve::Queued => panic!("one asker at a time here"),
            };
            let ReplicaMessage::CheckpointChunk {
                partition,
                from,
                total,
                offset,
                bytes,
            } = reply
            else {
                panic!("servers only send chunks");
            };
            match asker.on_chunk(partition, from, total, offset, bytes, TimeMicros(0)) {
                ChunkOutcome::Ask(to, message) => next = Some((to, message)),
                ChunkOutcome::Complete(file) => {
                    return decode_checkpoint(&file).ok().map(|b| (b, round + 1))
                }
                ChunkOutcome::Nothing => return None,
            }
        }
        None
    }

    #[test]
    fn thesis_3_4_2_a_checkpoint_arrives_in_chunks_from_the_first_peer_that_has_one() {
        let file = Bytes::from(encode_checkpoint(&body(77)));
        let mut servers = BTreeMap::new();
        servers.insert(
            NodeId(1),
            (StateTransfer::new(NodeId(1), 256, false), Bytes::new()),
        );
        servers.insert(
            NodeId(3),
            (StateTransfer::new(NodeId(3), 256, false), file.clone()),
        );
        let mut asker = StateTransfer::new(NodeId(2), 256, false);
        let first = asker
            .start(
                PartitionId(1),
                vec![NodeId(1), NodeId(3)],
                Vec::new(),
                TimeMicros(0),
            )
            .expect("a first request");
        let (got, rounds) = run(&mut asker, &mut servers, first, 1_000).expect("transferred");
        assert_eq!(got.replica.global_position, 77);
        // One round at the empty peer, then one per chunk.
        assert_eq!(rounds, 1 + file.len().div_ceil(256));
    }

    #[test]
    fn thesis_3_4_2_a_transfer_dropping_its_last_chunk_never_completes() {
        let file = Bytes::from(encode_checkpoint(&body(77)));
        let mut servers = BTreeMap::new();
        servers.insert(NodeId(3), (StateTransfer::new(NodeId(3), 256, false), file));
        let mut asker = StateTransfer::new(NodeId(2), 256, true);
        let first = asker
            .start(PartitionId(1), vec![NodeId(3)], Vec::new(), TimeMicros(0))
            .expect("a first request");
        assert!(run(&mut asker, &mut servers, first, 1_000).is_none());
    }

    #[test]
    fn requests_arriving_during_a_read_are_answered_when_it_completes() {
        let mut server = StateTransfer::new(NodeId(1), 100, false);
        let p = PartitionId(4);
        assert!(matches!(
            server.on_request(p, p, NodeId(2), 0, TimeMicros(0)),
            Serve::Read
        ));
        assert!(matches!(
            server.on_request(p, PartitionId(5), NodeId(3), 0, TimeMicros(0)),
            Serve::Queued
        ));
        assert!(server.reading(p));
        let answers = server.on_read(p, Bytes::from(vec![7u8; 250]), TimeMicros(1));
        assert!(!server.reading(p));
        let labels: Vec<(NodeId, PartitionId, u64)> = answers
            .iter()
            .map(|(to, m)| match m {
                ReplicaMessage::CheckpointChunk {
                    partition, total, ..
                } => (*to, *partition, *total),
                other => panic!("not a chunk: {other:?}"),
            })
            .collect();
        assert_eq!(
            labels,
            vec![(NodeId(2), p, 250), (NodeId(3), PartitionId(5), 250)]
        );
        // The next chunk comes from the file read.
        assert!(matches!(
            server.on_request(p, p, NodeId(2), 100, TimeMicros(2)),
            Serve::Chunk(..)
        ));
    }

    #[test]
    fn stray_chunks_are_ignored_and_a_quiet_peer_is_replaced() {
        let mut asker = StateTransfer::new(NodeId(2), 1024, false);
        let (to, _) = asker
            .start(
                PartitionId(1),
                vec![NodeId(1), NodeId(3)],
                Vec::new(),
                TimeMicros(0),
            )
            .expect("a first request");
        assert_eq!(to, NodeId(1));
        // From the wrong peer, at the wrong offset, for another partition.
        let chunk = |p, from, offset| {
            (
                PartitionId(p),
                NodeId(from),
                10,
                offset,
                Bytes::from_static(b"x"),
            )
        };
        for (p, from, total, offset, bytes) in [chunk(1, 3, 0), chunk(1, 1, 5), chunk(2, 1, 0)] {
            assert!(matches!(
                asker.on_chunk(p, from, total, offset, bytes, TimeMicros(1)),
                ChunkOutcome::Nothing
            ));
        }
        assert!(asker.tick(TimeMicros(999_999)).is_empty());
        let retries = asker.tick(TimeMicros(1_000_000));
        assert_eq!(retries.len(), 1);
        assert_eq!(retries[0].0, NodeId(3), "the next peer after a quiet one");
    }

    #[test]
    fn thesis_3_4_4_the_asker_names_what_it_holds_until_every_peer_was_asked_twice() {
        let mut asker = StateTransfer::new(NodeId(2), 1024, false);
        let held = vec![(StreamId(2), Instance(500)), (StreamId(1), Instance(90))];
        let (_, first) = asker
            .start(
                PartitionId(1),
                vec![NodeId(1), NodeId(3)],
                held.clone(),
                TimeMicros(0),
            )
            .expect("a first request");
        let named = |request: &ReplicaMessage| match request {
            ReplicaMessage::CheckpointRequest { at_least, .. } => at_least.clone(),
            other => panic!("not a request: {other:?}"),
        };
        assert_eq!(named(&first), held);
        // Peers writing a newer checkpoint stay quiet meanwhile; each quiet
        // second the next one is asked, twice round, then for anything.
        let mut asked = Vec::new();
        for second in 1..=4u64 {
            let retries = asker.tick(TimeMicros(second * 1_000_000));
            assert_eq!(retries.len(), 1);
            asked.push((retries[0].0, named(&retries[0].1)));
        }
        assert_eq!(
            asked,
            vec![
                (NodeId(3), held.clone()),
                (NodeId(1), held.clone()),
                (NodeId(3), held),
                (NodeId(1), Vec::new()),
            ]
        );
        // A waiting asker is remembered once, with what it needs.
        let mut server = StateTransfer::new(NodeId(1), 1024, false);
        let waiter = |instance| Waiter {
            at_least: vec![(StreamId(2), Instance(instance))],
            writes: 0,
        };
        server.wait(PartitionId(1), NodeId(2), waiter(500));
        server.wait(PartitionId(1), NodeId(2), waiter(600));
        assert_eq!(
            server.take_waiting(PartitionId(1)),
            vec![(NodeId(2), waiter(600))]
        );
        assert!(server.take_waiting(PartitionId(1)).is_empty());
    }
}
