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
//!
//! Non-disruptive recovery (thesis §3.4.4): while it waits, the asker's
//! learner keeps the decisions that go on arriving (it only stops
//! delivering them), and the asker names, per stream it fell behind in,
//! the first of them (`at_least`). A checkpoint at or past them lets it
//! apply the held decisions and fetch nothing from the acceptors; an older
//! one leaves a gap it must fetch, which is what loads the acceptors while
//! they serve new instances. A peer whose latest checkpoint is older
//! writes a new one at once and sends it when it is written (`waiting`).
//! After every peer was asked twice, the asker takes any checkpoint that
//! covers what was trimmed (a peer may be behind itself).

use crate::checkpoint_store::{decode, CheckpointBody, CheckpointStore};
use amulet_smr::ReplicaMessage;
use amulet_types::{Instance, NodeId, PartitionId, StreamId, TimeMicros};
use bytes::{Bytes, BytesMut};
use std::collections::BTreeMap;

/// How long an asker waits for a chunk before asking the next peer.
const RETRY_AFTER_MICROS: u64 = 1_000_000;
/// How long a served file stays in memory after its last chunk request.
const SERVE_IDLE_MICROS: u64 = 30_000_000;

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
    /// Askers whose `at_least` our latest checkpoint does not reach,
    /// answered when one that does is written.
    waiting: BTreeMap<PartitionId, BTreeMap<NodeId, Vec<(StreamId, Instance)>>>,
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
            waiting: BTreeMap::new(),
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
            "streams trimmed past this replica: fetching a peer's checkpoint"
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
                at_least: Vec::new(),
            };
            return ChunkOutcome::Ask(from, message);
        }
        let file = std::mem::take(&mut fetch.buffer).freeze();
        match decode(&file) {
            // Another partition's checkpoint comes when the peer merged
            // the one asked for into it (the runtime installs it as that).
            Ok(body) => ChunkOutcome::Complete(Box::new(body), file),
            Err(_) => {
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

    /// `asker` wants a checkpoint of `partition` at least at `at_least`,
    /// newer than ours: it is answered when one is written
    /// ([`Self::take_waiting`]).
    pub(crate) fn wait(
        &mut self,
        partition: PartitionId,
        asker: NodeId,
        at_least: Vec<(StreamId, Instance)>,
    ) {
        self.waiting
            .entry(partition)
            .or_default()
            .insert(asker, at_least);
    }

    /// The askers waiting for a newer checkpoint of `partition`, with what
    /// each needs.
    pub(crate) fn take_waiting(
        &mut self,
        partition: PartitionId,
    ) -> Vec<(NodeId, Vec<(StreamId, Instance)>)> {
        self.waiting
            .remove(&partition)
            .map(|w| w.into_iter().collect())
            .unwrap_or_default()
    }

    /// The fetched checkpoint was installed.
    pub(crate) fn installed(&mut self, partition: PartitionId) {
        self.fetching.remove(&partition);
        self.completed += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checkpoint_store::CheckpointBody;
    use amulet_dmap::{MapLimits, PartitionState};
    use amulet_multicast::{LanePosition, MergePosition};
    use amulet_smr::{PartitionInfo, PartitionMap, Replica, ReplicaConfig};
    use amulet_types::{Instance, StreamId};

    fn store(name: &str, node: u32) -> (std::path::PathBuf, CheckpointStore) {
        let dir = std::env::temp_dir().join(format!(
            "amulet-transfer-{name}-{node}-{}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        (dir.clone(), CheckpointStore::new(&dir))
    }

    fn body(global: u64) -> CheckpointBody {
        let map = PartitionMap::uniform(
            StreamId(1),
            vec![(
                PartitionId(1),
                PartitionInfo {
                    stream: StreamId(2),
                    replicas: vec![NodeId(1), NodeId(2), NodeId(3)],
                },
            )],
        );
        let config = ReplicaConfig::new(NodeId(2), 1, PartitionId(1));
        let replica = Replica::new(config, map, PartitionState::new(MapLimits::default()));
        let mut checkpoint = replica.checkpoint().expect("idle");
        checkpoint.global_position = global;
        let lane = |s: u32| LanePosition {
            stream: StreamId(s),
            next: Instance(global),
            carry: 0,
            consumed: global,
            delivered: Default::default(),
            state: amulet_multicast::LaneState::Active,
            start: 0,
        };
        CheckpointBody {
            replica: checkpoint,
            position: MergePosition {
                lanes: vec![lane(1), lane(2)],
                turn: 0,
                remaining: 1,
                rounds: global,
                waiting: None,
                completed: Default::default(),
                fence: None,
            },
        }
    }

    /// Carries requests and chunks between an asker and servers until the
    /// transfer completes or `rounds` pass.
    fn run(
        asker: &mut StateTransfer,
        servers: &mut BTreeMap<NodeId, StateTransfer>,
        first: (NodeId, ReplicaMessage),
        rounds: usize,
    ) -> Option<(CheckpointBody, usize)> {
        let mut next = Some(first);
        for round in 0..rounds {
            let (to, request) = next.take()?;
            let ReplicaMessage::CheckpointRequest {
                partition, offset, ..
            } = request
            else {
                panic!("the asker only sends requests");
            };
            let reply = servers
                .get_mut(&to)?
                .on_request(partition, offset, TimeMicros(0));
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
                ChunkOutcome::Complete(body, _) => return Some((*body, round + 1)),
                ChunkOutcome::Nothing => return None,
            }
        }
        None
    }

    #[test]
    fn section_3_4_2_a_checkpoint_arrives_in_chunks_from_the_first_peer_that_has_one() {
        let (dir1, empty) = store("empty", 1);
        let (dir3, full) = store("full", 3);
        full.write(PartitionId(1), &body(77)).expect("write");
        let size = std::fs::metadata(full.path(PartitionId(1))).unwrap().len() as usize;
        let mut servers = BTreeMap::new();
        // Node 1 has no checkpoint; node 3 has one of several chunks.
        servers.insert(NodeId(1), StateTransfer::new(NodeId(1), empty, 1024));
        servers.insert(NodeId(3), StateTransfer::new(NodeId(3), full, 1024));
        let (dir2, own) = store("asker", 2);
        let mut asker = StateTransfer::new(NodeId(2), own, 1024);
        let first = asker
            .start(
                PartitionId(1),
                vec![NodeId(1), NodeId(3)],
                Vec::new(),
                TimeMicros(0),
            )
            .expect("a first request");
        assert!(asker.fetching(PartitionId(1)));
        assert!(asker
            .start(PartitionId(1), vec![NodeId(1)], Vec::new(), TimeMicros(0))
            .is_none());
        let (got, rounds) = run(&mut asker, &mut servers, first, 1_000).expect("completes");
        assert_eq!(got.replica.global_position, 77);
        assert_eq!(got.position, body(77).position);
        // One empty answer from node 1, then every chunk of node 3's file.
        assert_eq!(rounds, 1 + size.div_ceil(1024));
        asker.installed(PartitionId(1));
        assert!(!asker.fetching(PartitionId(1)));
        for dir in [dir1, dir2, dir3] {
            let _ = std::fs::remove_dir_all(dir);
        }
    }

    #[test]
    fn stray_chunks_are_ignored_and_a_quiet_peer_is_replaced() {
        let (dir, own) = store("quiet", 2);
        let mut asker = StateTransfer::new(NodeId(2), own, 1024);
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
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn section_3_4_4_the_asker_names_what_it_holds_until_every_peer_was_asked_twice() {
        let (dir, own) = store("at-least", 2);
        let mut asker = StateTransfer::new(NodeId(2), own, 1024);
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
        let (server_dir, server_store) = store("at-least-server", 1);
        let mut server = StateTransfer::new(NodeId(1), server_store, 1024);
        server.wait(
            PartitionId(1),
            NodeId(2),
            vec![(StreamId(2), Instance(500))],
        );
        server.wait(
            PartitionId(1),
            NodeId(2),
            vec![(StreamId(2), Instance(600))],
        );
        assert_eq!(
            server.take_waiting(PartitionId(1)),
            vec![(NodeId(2), vec![(StreamId(2), Instance(600))])]
        );
        assert!(server.take_waiting(PartitionId(1)).is_empty());
        let _ = std::fs::remove_dir_all(dir);
        let _ = std::fs::remove_dir_all(server_dir);
    }

    #[test]
    fn a_damaged_transfer_is_refused_and_the_next_peer_asked() {
        let (dir, own) = store("damaged", 2);
        let mut asker = StateTransfer::new(NodeId(2), own, 1024);
        asker
            .start(
                PartitionId(1),
                vec![NodeId(1), NodeId(3)],
                Vec::new(),
                TimeMicros(0),
            )
            .expect("a first request");
        let junk = Bytes::from_static(b"AMCKPT\x00\x01 not a checkpoint at all");
        let outcome = asker.on_chunk(
            PartitionId(1),
            NodeId(1),
            junk.len() as u64,
            0,
            junk,
            TimeMicros(1),
        );
        match outcome {
            ChunkOutcome::Ask(to, ReplicaMessage::CheckpointRequest { offset: 0, .. }) => {
                assert_eq!(to, NodeId(3))
            }
            _ => panic!("a damaged file must send the asker to the next peer"),
        }
        let _ = std::fs::remove_dir_all(dir);
    }
}
