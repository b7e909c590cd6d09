//! Where acceptors may trim a stream (thesis §3.4.2): below the instance a
//! trim quorum of the stream's subscribers holds in durable checkpoints.
//! Subscribers are replicas: a partition's stream is subscribed by that
//! partition's replicas, the global stream by every partition's.

use crate::PartitionMap;
use amulet_types::{Instance, NodeId, StreamId};
use std::collections::BTreeMap;

/// Which replicas must hold a checkpoint at or past an instance before
/// acceptors forget what lies below it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TrimQuorum {
    /// Every replica of every subscribing partition. No replica ever
    /// needs a peer's checkpoint to recover, but one that stays down
    /// stops trimming.
    All,
    /// A majority of each subscribing partition's replicas. Two
    /// majorities of a partition intersect, so some replica's single
    /// checkpoint covers the trim points of both its streams; a replica
    /// behind the trim point recovers from such a peer's checkpoint.
    Majority,
}

/// The instance below which `stream` may be trimmed, given each node's
/// safe instance for it (a node reports the least over the replicas it
/// runs; missing nodes count as 0). `None` when no partition of `map`
/// subscribes to `stream`.
pub fn trim_point(
    map: &PartitionMap,
    stream: StreamId,
    safe: &BTreeMap<NodeId, Instance>,
    quorum: TrimQuorum,
) -> Option<Instance> {
    let mut point: Option<Instance> = None;
    for info in map.partitions.values() {
        if stream != map.global_stream && stream != info.stream {
            continue;
        }
        let mut held: Vec<Instance> = info
            .replicas
            .iter()
            .map(|node| safe.get(node).copied().unwrap_or(Instance(0)))
            .collect();
        if held.is_empty() {
            return Some(Instance(0));
        }
        held.sort_unstable_by(|a, b| b.cmp(a));
        let needed = match quorum {
            TrimQuorum::All => held.len(),
            TrimQuorum::Majority => held.len() / 2 + 1,
        };
        // The largest instance that `needed` replicas hold.
        let partition_point = held[needed - 1];
        point = Some(point.map_or(partition_point, |p| p.min(partition_point)));
    }
    point
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::PartitionInfo;
    use amulet_types::PartitionId;

    fn map() -> PartitionMap {
        let info = |stream, replicas: [u32; 3]| PartitionInfo {
            stream: StreamId(stream),
            replicas: replicas.into_iter().map(NodeId).collect(),
        };
        PartitionMap::uniform(
            StreamId(1),
            vec![
                (PartitionId(1), info(2, [1, 2, 3])),
                (PartitionId(2), info(3, [4, 5, 6])),
            ],
        )
    }

    fn safe(values: &[(u32, u64)]) -> BTreeMap<NodeId, Instance> {
        values
            .iter()
            .map(|(n, i)| (NodeId(*n), Instance(*i)))
            .collect()
    }

    #[test]
    fn thesis_3_4_2_a_partition_stream_is_trimmed_by_its_own_replicas() {
        let s = safe(&[(1, 50), (2, 30), (3, 40), (4, 1), (5, 1), (6, 1)]);
        let all = trim_point(&map(), StreamId(2), &s, TrimQuorum::All);
        let majority = trim_point(&map(), StreamId(2), &s, TrimQuorum::Majority);
        assert_eq!(all, Some(Instance(30)));
        assert_eq!(majority, Some(Instance(40)), "two of three hold 40");
    }

    #[test]
    fn thesis_3_4_2_the_global_stream_waits_for_every_partition() {
        let s = safe(&[(1, 50), (2, 50), (3, 50), (4, 20), (5, 25), (6, 9)]);
        let all = trim_point(&map(), StreamId(1), &s, TrimQuorum::All);
        let majority = trim_point(&map(), StreamId(1), &s, TrimQuorum::Majority);
        assert_eq!(all, Some(Instance(9)));
        assert_eq!(majority, Some(Instance(20)));
    }

    #[test]
    fn thesis_3_4_2_an_unheard_replica_holds_nothing() {
        let s = safe(&[(1, 50), (2, 50)]);
        let all = trim_point(&map(), StreamId(2), &s, TrimQuorum::All);
        let majority = trim_point(&map(), StreamId(2), &s, TrimQuorum::Majority);
        assert_eq!(all, Some(Instance(0)));
        assert_eq!(majority, Some(Instance(50)));
        assert_eq!(trim_point(&map(), StreamId(9), &s, TrimQuorum::All), None);
    }
}
