//! Where acceptors may trim a stream (thesis §3.4.2): below the instance a
//! trim quorum of the stream's subscribers holds in durable checkpoints.
//! Subscribers are replicas: a partition's stream is subscribed by that
//! partition's replicas, the global stream by every partition's.

use crate::PartitionMap;
use amulet_types::{Instance, NodeId, SafeReport, StreamId};
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
/// runs; missing nodes count as 0, and so do reports computed at a map
/// older than `map`: they do not cover the partitions `map` gave the node
/// since, see [`SafeReport`]). `None` when no partition of `map`
/// subscribes to `stream`.
pub fn trim_point(
    map: &PartitionMap,
    stream: StreamId,
    safe: &BTreeMap<NodeId, SafeReport>,
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
            .map(|node| {
                safe.get(node)
                    .map_or(Instance(0), |report| report.held_at(map.version))
            })
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

/// The safe instance a node reports for `stream`, given `checkpointed`
/// (the least first-unreflected instance over the durable checkpoints of
/// its replicas that merge the stream, `None` when none does) and the
/// node's newest map: a stream that map retired, which no durable
/// checkpoint here merges (each replica here that merged it checkpointed
/// past its fence), is needed here no more, so the node holds all of it
/// (`u64::MAX`). Without that, a replica moved away whose new group moved
/// on (merged the partition away, moved it again) before its first
/// checkpoint with the new stream never saw the new group report one,
/// never handed off ([`crate::handed_off`]) and waited at its next fence
/// for good (simulator, DMap seed 1377 with the balancer's moves). `None`:
/// nothing to report (the last report stands).
pub fn safe_to_report(
    checkpointed: Option<Instance>,
    newest: &PartitionMap,
    stream: StreamId,
) -> Option<Instance> {
    checkpointed.or_else(|| {
        newest
            .retired_streams
            .contains(&stream)
            .then_some(Instance(u64::MAX))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::PartitionInfo;
    use amulet_types::{MapVersion, PartitionId};

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

    fn safe(values: &[(u32, u64)]) -> BTreeMap<NodeId, SafeReport> {
        values
            .iter()
            .map(|(n, i)| {
                let report = SafeReport {
                    below: Instance(*i),
                    map_version: map().version,
                };
                (NodeId(*n), report)
            })
            .collect()
    }

    #[test]
    fn thesis_3_4_2_a_report_from_before_a_move_does_not_count_for_the_moved_partition() {
        // DMap seed 9000706: p2 moves to {3, 5, 9}. Nodes 3 and 5 reported
        // 616 for the global stream over the partitions they ran before
        // (p1); node 9, which learned the move, reports 0 for p2's empty
        // slot. Counting 3 and 5 for p2 let a majority "hold" 616, and the
        // global stream was trimmed past p2's only state.
        let mut moved = map();
        moved.version = MapVersion(moved.version.0 + 1);
        moved
            .partitions
            .get_mut(&PartitionId(2))
            .expect("p2")
            .replicas = vec![NodeId(3), NodeId(5), NodeId(9)];
        let before = map().version;
        let report = |below, map_version| SafeReport {
            below: Instance(below),
            map_version,
        };
        let mut s: BTreeMap<NodeId, SafeReport> = [1, 2, 4, 6]
            .into_iter()
            .map(|n| (NodeId(n), report(616, moved.version)))
            .collect();
        s.insert(NodeId(3), report(616, before));
        s.insert(NodeId(5), report(616, before));
        s.insert(NodeId(9), report(0, moved.version));
        let global = trim_point(&moved, StreamId(1), &s, TrimQuorum::Majority);
        assert_eq!(global, Some(Instance(0)), "reports from before the move");
        // Once 3 and 5 report at the move's map, their reports count.
        s.insert(NodeId(3), report(600, moved.version));
        s.insert(NodeId(5), report(610, moved.version));
        let global = trim_point(&moved, StreamId(1), &s, TrimQuorum::Majority);
        assert_eq!(global, Some(Instance(600)));
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

    #[test]
    fn dmap_iii_c_a_replica_moved_away_hands_off_when_its_new_group_retired_the_stream() {
        // p2 moved to n1 (stream 7), and n1 merged it away before any
        // checkpoint of p2 with stream 7: n1's checkpoints merge stream 7
        // no more, and its newest map retired it.
        let moved = PartitionMap::uniform(
            StreamId(1),
            vec![(
                PartitionId(2),
                PartitionInfo {
                    stream: StreamId(7),
                    replicas: vec![NodeId(1)],
                },
            )],
        );
        let mut newest = moved.clone();
        newest.partitions.clear();
        newest.retired_streams.insert(StreamId(7));
        let reported = safe_to_report(None, &newest, StreamId(7));
        assert_eq!(reported, Some(Instance(u64::MAX)));
        let report = SafeReport {
            below: reported.expect("reported"),
            map_version: newest.version,
        };
        let heard = BTreeMap::from([(NodeId(1), report)]);
        assert!(crate::handed_off(&moved, PartitionId(2), &heard));
        // Not before it retired, and never over a checkpoint's own word.
        assert_eq!(safe_to_report(None, &moved, StreamId(7)), None);
        assert!(!crate::handed_off(&moved, PartitionId(2), &BTreeMap::new()));
        assert_eq!(
            safe_to_report(Some(Instance(3)), &newest, StreamId(7)),
            Some(Instance(3))
        );
    }
}
