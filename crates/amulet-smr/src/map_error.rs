//! Why a partition map, a route through it or a change of it is refused:
//! one variant per reason, each with a stable name ([`InvalidMap::reason`])
//! that the client API carries as metadata, so a program can tell the
//! reasons apart without parsing messages.

use amulet_types::{NodeId, PartitionId, StreamId};
use bytes::Bytes;
use serde::{Deserialize, Serialize};

/// Why a map or a route is refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PartitionMapError {
    /// The keyspace is not in the map.
    #[error("no keyspace named {0:?}")]
    UnknownKeyspace(String),
    /// Creating a keyspace that exists.
    #[error("keyspace {0:?} exists")]
    KeyspaceExists(String),
    /// A command of the ordered API on an eventual map.
    #[error("map {0:?} is eventual: use EventualGet, EventualPut and EventualDelete")]
    Eventual(String),
    /// A structural rule is broken.
    #[error("invalid partition map: {0}")]
    Invalid(InvalidMap),
}

impl From<InvalidMap> for PartitionMapError {
    fn from(why: InvalidMap) -> PartitionMapError {
        PartitionMapError::Invalid(why)
    }
}

/// The structural rule a partition map (or the map a reconfiguration would
/// make) breaks. Every one is a verdict on the map alone, so every replica
/// judges alike.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
pub enum InvalidMap {
    /// A map needs at least one partition.
    #[error("no partitions")]
    NoPartitions,
    /// A placement across keyspaces whose part is itself across keyspaces
    /// (a service bug: commands never build one).
    #[error("a placement across keyspaces cannot nest another")]
    NestedPlacement,
    /// A partition nobody replicates.
    #[error("partition {0} has no replicas")]
    NoReplicas(PartitionId),
    /// Every partition and the global stream have streams of their own.
    #[error("two partitions (or a partition and the global stream) share a stream")]
    SharedStream,
    /// The token ring's entries are out of order or name unknown partitions.
    #[error("token ring must start at 0, increase, and name known partitions")]
    BadTokenRing,
    /// A range keyspace's ranges are out of order or name unknown
    /// partitions.
    #[error("ranges of {0:?} must start at the empty key, increase, and name known partitions")]
    BadRanges(String),
    /// A new stream's id is used now or was used before (ids are never
    /// reused: a learner could mistake the new stream for the old).
    #[error("stream {} is or was in use", .stream.0)]
    StreamInUse {
        /// The stream asked for.
        stream: StreamId,
    },
    /// Ring Paxos needs a majority of an odd number of acceptors.
    #[error("stream {} needs an odd number of acceptors, not {acceptors}", .stream.0)]
    EvenAcceptors {
        /// The stream asked for.
        stream: StreamId,
        /// How many acceptors it was given.
        acceptors: usize,
    },
    /// A split of a partition the map does not have.
    #[error("no partition {0} to split")]
    NoPartitionToSplit(PartitionId),
    /// A split's new partition id is used now or was before.
    #[error("partition {0} exists or existed")]
    PartitionExists(PartitionId),
    /// A split's new stream must be learned by exactly the source's
    /// replicas, which fork the new partition at the fence.
    #[error("the new stream's members must be {partition}'s replicas {replicas:?}")]
    SplitStreamMembers {
        /// The partition split.
        partition: PartitionId,
        /// Its replicas.
        replicas: Vec<NodeId>,
    },
    /// A split that cuts neither tokens nor ranges.
    #[error("a split must move tokens or key ranges")]
    SplitMovesNothing,
    /// A split's token must fall strictly inside one of the source's
    /// token-ring segments.
    #[error(
        "token {token} is not inside a segment of {partition} (it starts one, or {owner} holds it)"
    )]
    TokenOutsideSegment {
        /// The token of the cut.
        token: u32,
        /// The partition split.
        partition: PartitionId,
        /// The partition whose segment holds the token.
        owner: PartitionId,
    },
    /// A split's key cut names a keyspace that is not range-partitioned.
    #[error("{0:?} is not a range keyspace")]
    NotARangeKeyspace(String),
    /// A split's key must fall strictly inside one of the source's ranges.
    #[error("key {key:?} of {keyspace:?} is not inside a range of {partition}")]
    KeyOutsideRange {
        /// The keyspace cut.
        keyspace: String,
        /// The first key that would move.
        key: Bytes,
        /// The partition split.
        partition: PartitionId,
    },
    /// A merge of a partition the map does not have, or into one.
    #[error("merging {from} into {into}: no such partition")]
    MergeUnknownPartition {
        /// The partition that would disappear.
        from: PartitionId,
        /// The partition that would take its keys.
        into: PartitionId,
    },
    /// A merge of a partition into itself.
    #[error("a partition cannot merge into itself")]
    MergeIntoItself,
    /// A merge needs both partitions on the same nodes: the merged state
    /// moves at the fence without leaving the node.
    #[error("{from} and {into} must have the same replicas to merge")]
    MergeReplicasDiffer {
        /// The partition that would disappear.
        from: PartitionId,
        /// The partition that would take its keys.
        into: PartitionId,
    },
    /// A stream replacement or move of a partition the map does not have.
    #[error("no partition {0}")]
    NoPartition(PartitionId),
    /// A replaced stream must be learned by every replica of the partition.
    #[error("every replica of {partition} ({replicas:?}) must learn the new stream")]
    ReplicasMustLearn {
        /// The partition.
        partition: PartitionId,
        /// Its replicas.
        replicas: Vec<NodeId>,
    },
    /// A move names a replica twice, or none.
    #[error("{partition} must move to distinct replicas, not {replicas:?}")]
    MoveReplicasNotDistinct {
        /// The partition.
        partition: PartitionId,
        /// The replica group asked for.
        replicas: Vec<NodeId>,
    },
    /// A move's new stream must be learned by the replicas that go (they
    /// serve the state until the new group holds it) and those that come.
    #[error(
        "the old replicas {old:?} and the new {new:?} of {partition} must all learn the new stream"
    )]
    MoveMembersMustLearn {
        /// The partition.
        partition: PartitionId,
        /// Its replicas before the move.
        old: Vec<NodeId>,
        /// Its replicas after the move.
        new: Vec<NodeId>,
    },
    /// A move to a node that replicates nothing and does not learn the
    /// global stream (by the configuration of the node judging it): it
    /// could never execute the partition's share of the global order.
    /// Refused at the edge, never by the replicas (docs/dynatree.md).
    #[error("node {0} replicates no partition and does not learn the global stream; a move goes to nodes that do")]
    MoveToIdleNode(NodeId),
    /// A new global stream naming a node that may not be in it: a member
    /// that neither learns the current one (by the configuration of the
    /// node judging it) nor is an active member of the view, or, with
    /// membership on, an acceptor that is not an active member of the
    /// view. Such a node may not exist or never learn the map, and a
    /// stream that needs its vote could stop the whole cluster. Refused
    /// at the edge.
    #[error("node {0} does not learn the global stream or is not an active member of the view; a new global stream's acceptors are active members, its learners learn the current one or are active members")]
    GlobalStreamStranger(NodeId),
    /// With membership on, a new replica of a partition or an acceptor of
    /// a partition's new stream that the view removed or that is leaving:
    /// it may have stopped, and self-healing would at once move the role
    /// off it again. Refused at the edge.
    #[error("node {0} was removed from the view or is leaving; a partition's new replicas and a new stream's acceptors are active members")]
    InactiveNode(NodeId),
    /// An eventual map's replicas or virtual nodes out of bounds.
    #[error("{0}")]
    EventualReplicas(String),
    /// A split or merge of a partition a move is still handing off: some
    /// node it was moved from may hold its only state, and would not take
    /// part in the split (fork the new partition) or the merge.
    #[error("partition {} is still being handed off from nodes {:?} (a move has not completed): retry once its new replicas hold its state", .partition.0, .from.iter().map(|n| n.0).collect::<Vec<_>>())]
    HandOffInProgress {
        /// The partition.
        partition: PartitionId,
        /// The nodes it is being handed off from.
        from: Vec<NodeId>,
    },
}

impl InvalidMap {
    /// The rule's stable name (kebab-case), carried by the client API as
    /// the `amulet-reason` of a refusal.
    pub fn reason(&self) -> &'static str {
        match self {
            InvalidMap::NoPartitions => "no-partitions",
            InvalidMap::NestedPlacement => "nested-placement",
            InvalidMap::NoReplicas(_) => "partition-without-replicas",
            InvalidMap::SharedStream => "shared-stream",
            InvalidMap::BadTokenRing => "bad-token-ring",
            InvalidMap::BadRanges(_) => "bad-ranges",
            InvalidMap::StreamInUse { .. } => "stream-in-use",
            InvalidMap::EvenAcceptors { .. } => "even-acceptors",
            InvalidMap::NoPartitionToSplit(_) => "no-partition-to-split",
            InvalidMap::PartitionExists(_) => "partition-exists",
            InvalidMap::SplitStreamMembers { .. } => "split-stream-members",
            InvalidMap::SplitMovesNothing => "split-moves-nothing",
            InvalidMap::TokenOutsideSegment { .. } => "token-outside-segment",
            InvalidMap::NotARangeKeyspace(_) => "not-a-range-keyspace",
            InvalidMap::KeyOutsideRange { .. } => "key-outside-range",
            InvalidMap::MergeUnknownPartition { .. } => "merge-unknown-partition",
            InvalidMap::MergeIntoItself => "merge-into-itself",
            InvalidMap::MergeReplicasDiffer { .. } => "merge-replicas-differ",
            InvalidMap::NoPartition(_) => "no-partition",
            InvalidMap::ReplicasMustLearn { .. } => "replicas-must-learn",
            InvalidMap::MoveReplicasNotDistinct { .. } => "move-replicas-not-distinct",
            InvalidMap::MoveMembersMustLearn { .. } => "move-members-must-learn",
            InvalidMap::MoveToIdleNode(_) => "move-to-idle-node",
            InvalidMap::GlobalStreamStranger(_) => "global-stream-stranger",
            InvalidMap::InactiveNode(_) => "inactive-node",
            InvalidMap::EventualReplicas(_) => "eventual-replicas",
            InvalidMap::HandOffInProgress { .. } => "hand-off-in-progress",
        }
    }
}
