//! The handle other tasks use to talk to a running node's event loop.

use crate::digest::DigestPoint;
use amulet_dmap::{MapCommand, MapName, MapReply};
use amulet_multicast::MulticastError;
use amulet_smr::{ClientReply, ClientRequest, PartitionMap};
use amulet_types::{MapVersion, PartitionId, StreamId, ValueId};
use bytes::Bytes;
use serde::Serialize;
use tokio::sync::{mpsc, oneshot, watch};

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
    /// A tail's read of a log, from the local replica holding it.
    TailRead {
        log: MapName,
        from: u64,
        max_bytes: usize,
        map_version: MapVersion,
        reply: oneshot::Sender<TailAnswer>,
    },
    /// A transaction's read at a read version, from the local replica.
    ReadAt {
        partition: PartitionId,
        map_version: MapVersion,
        read_version: u64,
        command: MapCommand,
        reply: oneshot::Sender<ReadAtAnswer>,
    },
    /// An eventual map's request.
    Eventual(crate::runtime::EventualRequest),
    /// The operator pauses (`false`) or resumes this node's balancer;
    /// answered once the switch is durable.
    SetBalancer {
        enabled: bool,
        reply: oneshot::Sender<std::io::Result<NodeStats>>,
    },
    /// Stop the loop (logs are synced first).
    Shutdown,
}

pub use amulet_host::{
    CheckpointStatus, LogStatus, PageAnswer, ReadAtAnswer, ReplicaStatus, StreamStatus, TailAnswer,
};

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
    /// The logs the local replicas hold.
    #[serde(skip)]
    pub logs: Vec<LogStatus>,
    /// This node's log segment files (docs/logs.md "Segment files").
    pub log_segments: crate::log_segment_store::SegmentStats,
    /// The eventual maps' replicas here.
    #[serde(skip)]
    pub eventual: Vec<amulet_dotted::service::ReplicaStatus>,
    /// The cluster's membership as this node executed it (`None`:
    /// membership off, or no replica here).
    #[serde(skip)]
    pub membership: Option<std::sync::Arc<amulet_membership::Membership>>,
    /// What membership has done here.
    #[serde(skip)]
    pub membership_counters: amulet_host::MembershipCounters,
    /// Partitions with a replica on a removed or leaving node (self-healing's
    /// work left).
    pub rehoming: u64,
    /// Splits the balancer proposed here since the node started.
    pub splits_proposed: u64,
    /// Of those, splits of a hot partition (by load, not size).
    pub load_splits_proposed: u64,
    /// Of those, tail splits (sequential inserts at the map's end).
    pub tail_splits_proposed: u64,
    /// Merges the balancer proposed here since the node started.
    pub merges_proposed: u64,
    /// Moves the balancer proposed here since the node started.
    pub moves_proposed: u64,
    /// Of those, moves that even out the nodes' bytes and load.
    pub weight_moves_proposed: u64,
    /// Partitions in the newest map this node holds.
    pub partitions: u64,
    /// Whether the balancer proposes changes here now.
    pub balancer_enabled: bool,
    /// Its last decisions, oldest first, with their age (µs).
    #[serde(skip)]
    pub balancer_decisions: Vec<(u64, amulet_host::BalancerDecision)>,
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
    /// A file could not be written.
    #[error("{0}")]
    Io(std::io::Error),
}

/// Talks to a running node; cheap to clone.
#[derive(Clone)]
pub struct NodeHandle {
    commands: mpsc::UnboundedSender<Command>,
    /// Moves when a local replica executed a command that changed a log.
    log_changes: watch::Receiver<u64>,
    /// The access configuration this node's replicas executed last.
    access: watch::Receiver<std::sync::Arc<amulet_smr::AccessControl>>,
}

impl NodeHandle {
    pub(crate) fn new(
        commands: mpsc::UnboundedSender<Command>,
        log_changes: watch::Receiver<u64>,
        access: watch::Receiver<std::sync::Arc<amulet_smr::AccessControl>>,
    ) -> NodeHandle {
        NodeHandle {
            commands,
            log_changes,
            access,
        }
    }

    /// The access configuration as this node's most advanced replica
    /// executed it (docs/security.md): what tokens and unordered reads
    /// are judged by here.
    pub fn access(&self) -> std::sync::Arc<amulet_smr::AccessControl> {
        self.access.borrow().clone()
    }

    /// A receiver that sees a new value whenever a local replica has
    /// executed a command that changed a log (tailers read again then).
    pub fn log_changes(&self) -> watch::Receiver<u64> {
        self.log_changes.clone()
    }

    /// Up to `max_bytes` of `log`'s entries from `from`, from this node's
    /// replica of the partition holding it.
    pub async fn tail_read(
        &self,
        log: MapName,
        from: u64,
        max_bytes: usize,
        map_version: MapVersion,
    ) -> Result<TailAnswer, HandleError> {
        let (reply, answer) = oneshot::channel();
        self.commands
            .send(Command::TailRead {
                log,
                from,
                max_bytes,
                map_version,
                reply,
            })
            .map_err(|_| HandleError::Stopped)?;
        answer.await.map_err(|_| HandleError::Stopped)
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

    /// A transaction's read `command` at `read_version`, from this node's
    /// replica of `partition`.
    pub async fn read_at(
        &self,
        partition: PartitionId,
        map_version: MapVersion,
        read_version: u64,
        command: MapCommand,
    ) -> Result<ReadAtAnswer, HandleError> {
        let (reply, answer) = oneshot::channel();
        self.commands
            .send(Command::ReadAt {
                partition,
                map_version,
                read_version,
                command,
                reply,
            })
            .map_err(|_| HandleError::Stopped)?;
        answer.await.map_err(|_| HandleError::Stopped)
    }

    /// An eventual map's request, answered by the key's replicas.
    pub async fn eventual(
        &self,
        map: String,
        key: Bytes,
        operation: amulet_dotted::Operation,
    ) -> Result<crate::runtime::EventualAnswer, HandleError> {
        let (reply, answer) = oneshot::channel();
        self.commands
            .send(Command::Eventual(crate::runtime::EventualRequest {
                map,
                key,
                operation,
                reply,
            }))
            .map_err(|_| HandleError::Stopped)?;
        answer.await.map_err(|_| HandleError::Dropped)
    }

    /// Counters, or `None` if the node stopped.
    pub async fn stats(&self) -> Option<NodeStats> {
        let (reply, answer) = oneshot::channel();
        self.commands.send(Command::Stats(reply)).ok()?;
        answer.await.ok()
    }

    /// Pauses (`false`) or resumes this node's balancer, durably; the
    /// node's stats after the change.
    pub async fn set_balancer(&self, enabled: bool) -> Result<NodeStats, HandleError> {
        let (reply, answer) = oneshot::channel();
        self.commands
            .send(Command::SetBalancer { enabled, reply })
            .map_err(|_| HandleError::Stopped)?;
        answer
            .await
            .map_err(|_| HandleError::Dropped)?
            .map_err(HandleError::Io)
    }

    /// Asks the node to stop; it syncs its logs first.
    pub fn shutdown(&self) {
        let _ = self.commands.send(Command::Shutdown);
    }
}
