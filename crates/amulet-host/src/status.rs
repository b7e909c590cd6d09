//! What a host reports about itself (the node's status RPC and metrics,
//! the simulator's verbose output).

use crate::checkpointer::CheckpointStats;
use serde::Serialize;

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
    /// Names of the keyspaces (maps) it holds.
    pub maps: Vec<String>,
    /// Its checkpoints.
    pub checkpoint: CheckpointStatus,
    /// Whether execution waits for a multi-partition command's signals
    /// (votes, for a commit).
    pub waiting: bool,
    /// Named sizes of its state (open snapshots, read versions, recent
    /// writes).
    pub state: Vec<(&'static str, u64)>,
}

impl ReplicaStatus {
    /// The state size named `name` (0: the service has no such size).
    pub fn gauge(&self, name: &str) -> u64 {
        self.state
            .iter()
            .find(|(n, _)| *n == name)
            .map_or(0, |(_, v)| *v)
    }
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

impl From<CheckpointStats> for CheckpointStatus {
    fn from(s: CheckpointStats) -> CheckpointStatus {
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
