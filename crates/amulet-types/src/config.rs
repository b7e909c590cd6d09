//! Stream configuration and its limits. Every limit has a name, a unit and a
//! documented default, and is validated together with the others.

use crate::ids::{NodeId, StreamId};
use serde::{Deserialize, Serialize};

/// Where an acceptor keeps its promises and votes, and so what it survives
/// (thesis §3.4.1, A.4).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StorageMode {
    /// A fixed-slot ring in memory. Survives the crash of a minority of
    /// acceptors; an acceptor that restarts without its state never votes
    /// again in this stream (it returns as a learner only).
    Memory,
    /// A durable log written at once and fsynced in the background (group
    /// commit). Survives any process crash (the OS keeps written data) and
    /// machine crashes of a minority of acceptors.
    AsyncDurable,
    /// A durable log fsynced before the acceptor's vote or promise leaves
    /// the process. Survives any crash.
    SyncDurable,
}

/// Limits of one stream. Defaults are what the benchmarks were tuned with.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct StreamLimits {
    /// Largest batch of values carried by one instance, in bytes (the
    /// thesis batches up to 32 KiB). A single value larger than this is
    /// carried alone.
    pub batch_bytes_max: usize,
    /// Largest single value accepted from a proposer, in bytes.
    pub value_bytes_max: usize,
    /// Instances the coordinator keeps in flight (proposed, not yet decided).
    pub pipeline_instances_max: u64,
    /// Instances the memory ring keeps for retransmission (thesis: 15k).
    pub memory_ring_slots: u64,
    /// Merge: instances taken from each stream per round (thesis M).
    pub merge_instances_per_round: u64,
    /// Rate leveling: expected maximum instance rate of any stream, per
    /// second (thesis λ).
    pub skip_rate_per_second: u64,
    /// Rate leveling: interval between skip proposals, in microseconds
    /// (thesis Δ).
    pub skip_interval_micros: u64,
    /// Heartbeat interval of the failure detector, in microseconds.
    pub heartbeat_interval_micros: u64,
    /// A peer silent this long is suspected, in microseconds.
    pub suspect_after_micros: u64,
    /// Phase 2 or phase 1 unanswered this long is retried, in microseconds.
    pub retry_after_micros: u64,
    /// A learner gap older than this is repaired by retransmission, then
    /// by proposing null, in microseconds.
    pub gap_repair_after_micros: u64,
}

impl Default for StreamLimits {
    fn default() -> Self {
        StreamLimits {
            batch_bytes_max: 32 * 1024,
            value_bytes_max: 4 * 1024 * 1024,
            pipeline_instances_max: 64,
            memory_ring_slots: 16 * 1024,
            merge_instances_per_round: 1,
            skip_rate_per_second: 20_000,
            skip_interval_micros: 2_000,
            heartbeat_interval_micros: 50_000,
            suspect_after_micros: 500_000,
            retry_after_micros: 200_000,
            gap_repair_after_micros: 100_000,
        }
    }
}

/// One stream: who accepts, who learns, how acceptors store.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StreamConfig {
    /// The stream.
    pub stream: StreamId,
    /// Acceptors, a fixed set for the stream's whole life (design decision
    /// 4). An odd number, 2f+1, tolerates f crashes.
    pub acceptors: Vec<NodeId>,
    /// Learners that are not acceptors. Acceptors always learn too.
    #[serde(default)]
    pub learners: Vec<NodeId>,
    /// Acceptor storage.
    pub storage: StorageMode,
    /// Limits.
    #[serde(default)]
    pub limits: StreamLimits,
    /// Merge position of the stream's instance 0. A stream created at run
    /// time to join merges at round `r` starts at `r * M`, so its first
    /// values are merged at once instead of waiting for a skip that
    /// catches it up with the streams created with the cluster (0).
    #[serde(default)]
    pub base_position: u64,
}

/// A configuration that cannot run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    /// Explains what is wrong.
    #[error("stream {stream}: {reason}")]
    Invalid {
        /// The stream.
        stream: u32,
        /// What is wrong.
        reason: String,
    },
}

impl StreamConfig {
    /// Acceptors needed for a decision: a majority.
    pub fn quorum(&self) -> usize {
        self.acceptors.len() / 2 + 1
    }

    /// Every member of the stream (acceptors, then other learners), sorted
    /// by id: the ring order before failures are taken out.
    pub fn members(&self) -> Vec<NodeId> {
        let mut all: Vec<NodeId> = self.acceptors.clone();
        all.extend(self.learners.iter().copied());
        all.sort();
        all.dedup();
        all
    }

    /// Whether `node` is an acceptor of the stream.
    pub fn is_acceptor(&self, node: NodeId) -> bool {
        self.acceptors.contains(&node)
    }

    /// Checks the configuration and its limits together.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let fail = |reason: String| {
            Err(ConfigError::Invalid {
                stream: self.stream.0,
                reason,
            })
        };
        let l = &self.limits;
        if self.acceptors.is_empty() {
            return fail("no acceptors".into());
        }
        let mut sorted = self.acceptors.clone();
        sorted.sort();
        sorted.dedup();
        if sorted.len() != self.acceptors.len() {
            return fail("an acceptor is listed twice".into());
        }
        if self.acceptors.len() > 15 {
            return fail("more than 15 acceptors".into());
        }
        if l.batch_bytes_max < 1024 || l.batch_bytes_max > 16 * 1024 * 1024 {
            return fail("batch_bytes_max must be within 1 KiB..16 MiB".into());
        }
        if l.value_bytes_max == 0 || l.value_bytes_max > 64 * 1024 * 1024 {
            return fail("value_bytes_max must be within 1 B..64 MiB".into());
        }
        if l.pipeline_instances_max == 0 || l.pipeline_instances_max > 1 << 16 {
            return fail("pipeline_instances_max must be within 1..65536".into());
        }
        if l.memory_ring_slots < 4 * l.pipeline_instances_max {
            return fail("memory_ring_slots must hold at least 4 pipelines".into());
        }
        if l.merge_instances_per_round == 0 {
            return fail("merge_instances_per_round must be at least 1".into());
        }
        if l.skip_interval_micros == 0 || l.skip_rate_per_second == 0 {
            return fail("skip interval and rate must be positive".into());
        }
        if l.heartbeat_interval_micros == 0 || l.suspect_after_micros <= l.heartbeat_interval_micros
        {
            return fail("suspect_after_micros must exceed heartbeat_interval_micros".into());
        }
        if l.retry_after_micros == 0 || l.gap_repair_after_micros == 0 {
            return fail("retry and gap repair timeouts must be positive".into());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn three() -> StreamConfig {
        StreamConfig {
            stream: StreamId(1),
            acceptors: vec![NodeId(3), NodeId(1), NodeId(2)],
            learners: vec![NodeId(7), NodeId(2)],
            storage: StorageMode::Memory,
            limits: StreamLimits::default(),
            base_position: 0,
        }
    }

    #[test]
    fn quorum_is_a_majority_and_members_are_sorted() {
        let c = three();
        assert_eq!(c.quorum(), 2);
        assert_eq!(
            c.members(),
            vec![NodeId(1), NodeId(2), NodeId(3), NodeId(7)]
        );
        c.validate().unwrap();
    }

    #[test]
    fn invalid_limits_are_rejected() {
        let mut c = three();
        c.limits.memory_ring_slots = 10;
        assert!(matches!(
            c.validate(),
            Err(ConfigError::Invalid { stream: 1, .. })
        ));
        let mut c = three();
        c.acceptors.push(NodeId(1));
        assert!(matches!(
            c.validate(),
            Err(ConfigError::Invalid { stream: 1, .. })
        ));
    }
}
