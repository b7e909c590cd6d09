//! The handle other tasks use to talk to a running node's event loop.

use crate::digest::DigestPoint;
use amulet_dmap::{MapCommand, MapError, MapReply, SnapshotPage};
use amulet_multicast::MulticastError;
use amulet_smr::{ClientReply, ClientRequest, PartitionMap};
use amulet_types::{PartitionId, StreamId, ValueId};
use bytes::Bytes;
use serde::Serialize;
use tokio::sync::{mpsc, oneshot};

/// A request to the event loop.
pub(crate) enum Command {
    /// Multicast one value.
    Multicast {
        stream: StreamId,
        bytes: Bytes,
        reply: oneshot::Sender<Result<ValueId, MulticastError>>,
    },
    /// A snapshot of counters.
    Stats(oneshot::Sender<NodeStats>),
    /// A client request for the replica of `partition` (any local replica
    /// when `None`: session requests go on the global stream).
    Submit {
        partition: Option<PartitionId>,
        request: ClientRequest<MapCommand>,
        reply: oneshot::Sender<ClientReply<MapReply>>,
    },
    /// The current partition map (`None` without `[smr]`).
    PartitionMap(oneshot::Sender<Option<PartitionMap>>),
    /// A page of an open snapshot, read from the local replica.
    SnapshotPage {
        partition: PartitionId,
        snapshot: u64,
        after: Option<Bytes>,
        limit: u32,
        reply: oneshot::Sender<PageAnswer>,
    },
    /// Stop the loop (logs are synced first).
    Shutdown,
}

/// The answer to a snapshot page request.
#[derive(Debug)]
pub enum PageAnswer {
    /// The page.
    Page(SnapshotPage),
    /// The local replica has not executed the snapshot's opening yet.
    Behind,
    /// The local replica is far behind its streams (a restarted node
    /// replaying them): another replica answers sooner.
    CatchingUp,
    /// The snapshot is open but this replica was restored from a
    /// checkpoint since it opened and holds no copy of its entries:
    /// another replica serves it.
    HeldElsewhere,
    /// No local replica of the partition.
    NotAReplica,
    /// The snapshot is unknown or the page request is invalid.
    Failed(MapError),
}

/// One local replica's state.
#[derive(Clone, Debug, Serialize)]
pub struct ReplicaStatus {
    /// Its partition.
    pub partition: u32,
    /// The partition's stream.
    pub stream: u32,
    /// Global-stream values executed.
    pub global_position: u64,
    /// Commands waiting for signals or their turn.
    pub queued: u64,
    /// Open sessions.
    pub sessions: u64,
    /// Names of the maps it holds.
    pub maps: Vec<String>,
    /// Its checkpoints.
    pub checkpoint: CheckpointStatus,
}

/// A replica's checkpoints.
#[derive(Clone, Debug, Default, Serialize)]
pub struct CheckpointStatus {
    /// Written since the node started.
    pub written: u64,
    /// Writes that failed since the node started.
    pub failed: u64,
    /// Size of the last one written, bytes.
    pub bytes: u64,
    /// Global position of the last one written or restored.
    pub global_position: u64,
}

impl From<crate::checkpointer::CheckpointStats> for CheckpointStatus {
    fn from(s: crate::checkpointer::CheckpointStats) -> CheckpointStatus {
        CheckpointStatus {
            written: s.written,
            failed: s.failed,
            bytes: s.bytes,
            global_position: s.global_position,
        }
    }
}

/// One stream's state at a node.
#[derive(Clone, Debug, Serialize)]
pub struct StreamStatus {
    /// The stream.
    pub stream: u32,
    /// Every instance below this was decided and delivered here.
    pub decided_below: u64,
    /// Instances known decided elsewhere and not yet delivered here (large
    /// while a restarted node catches up).
    pub learner_lag: u64,
    /// This node coordinates the stream.
    pub coordinator: bool,
    /// This node votes in the stream.
    pub voting: bool,
    /// Instances proposed here as coordinator.
    pub instances_proposed: u64,
    /// Skip weight proposed here as coordinator.
    pub skips_proposed: u64,
    /// Values the stream delivered here.
    pub values_delivered: u64,
    /// This node's acceptor log holds nothing below this instance.
    pub trimmed_below: u64,
}

/// Counters of a running node.
#[derive(Clone, Debug, Serialize)]
pub struct NodeStats {
    /// Values delivered by the merge, with their digest.
    pub delivered: DigestPoint,
    /// Per stream.
    pub streams: Vec<StreamStatus>,
    /// Version of the partition map (0 without `[smr]`).
    pub map_version: u64,
    /// Per local DMap replica.
    pub replicas: Vec<ReplicaStatus>,
}

/// Why a request to a node failed.
#[derive(Debug, thiserror::Error)]
pub enum HandleError {
    /// The node stopped.
    #[error("the node stopped")]
    Stopped,
    /// The request was dropped unanswered: its replica was replaced (a
    /// peer's checkpoint installed, a partition merged away) or its client
    /// gave up. It may have taken effect.
    #[error("the request was dropped unanswered")]
    Dropped,
    /// The node refused the value.
    #[error("multicast refused: {0:?}")]
    Refused(MulticastError),
}

/// Talks to a running node; cheap to clone.
#[derive(Clone)]
pub struct NodeHandle {
    commands: mpsc::UnboundedSender<Command>,
}

impl NodeHandle {
    pub(crate) fn new(commands: mpsc::UnboundedSender<Command>) -> NodeHandle {
        NodeHandle { commands }
    }

    /// Multicasts `bytes` to `stream`; returns the value's id once the
    /// node accepted it (not once it is delivered).
    pub async fn multicast(&self, stream: StreamId, bytes: Bytes) -> Result<ValueId, HandleError> {
        let (reply, answer) = oneshot::channel();
        self.commands
            .send(Command::Multicast {
                stream,
                bytes,
                reply,
            })
            .map_err(|_| HandleError::Stopped)?;
        answer
            .await
            .map_err(|_| HandleError::Stopped)?
            .map_err(HandleError::Refused)
    }

    /// Hands a DMap request to this node's replica of `partition` and
    /// waits for its answer (the caller bounds the wait: a request whose
    /// proposal was lost is never answered, and is retried).
    pub async fn submit(
        &self,
        partition: Option<PartitionId>,
        request: ClientRequest<MapCommand>,
    ) -> Result<ClientReply<MapReply>, HandleError> {
        let (reply, answer) = oneshot::channel();
        self.commands
            .send(Command::Submit {
                partition,
                request,
                reply,
            })
            .map_err(|_| HandleError::Stopped)?;
        answer.await.map_err(|_| HandleError::Dropped)
    }

    /// The current partition map (`Ok(None)` if the node serves no DMap).
    pub async fn partition_map(&self) -> Result<Option<PartitionMap>, HandleError> {
        let (reply, answer) = oneshot::channel();
        self.commands
            .send(Command::PartitionMap(reply))
            .map_err(|_| HandleError::Stopped)?;
        answer.await.map_err(|_| HandleError::Stopped)
    }

    /// Up to `limit` entries of snapshot `snapshot` after `after`, from
    /// this node's replica of `partition`.
    pub async fn snapshot_page(
        &self,
        partition: PartitionId,
        snapshot: u64,
        after: Option<Bytes>,
        limit: u32,
    ) -> Result<PageAnswer, HandleError> {
        let (reply, answer) = oneshot::channel();
        self.commands
            .send(Command::SnapshotPage {
                partition,
                snapshot,
                after,
                limit,
                reply,
            })
            .map_err(|_| HandleError::Stopped)?;
        answer.await.map_err(|_| HandleError::Stopped)
    }

    /// Counters, or `None` if the node stopped.
    pub async fn stats(&self) -> Option<NodeStats> {
        let (reply, answer) = oneshot::channel();
        self.commands.send(Command::Stats(reply)).ok()?;
        answer.await.ok()
    }

    /// Asks the node to stop; it syncs its logs first.
    pub fn shutdown(&self) {
        let _ = self.commands.send(Command::Shutdown);
    }
}
