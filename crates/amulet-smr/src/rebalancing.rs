//! Evening out the partitions per node (docs/dynatree.md, DynaTree's
//! oracle moving nodes between servers): when one live node replicates
//! at least two partitions more than another, one of its replicas moves
//! there. A pure function of the map and the view, like self-healing's
//! repairs, so any member computes the same plan and a plan built on an
//! older map fails on its version.
//!
//! It never flaps: a move from a node with `a` replicas to one with
//! `b <= a - 2` changes the sum of the squared counts by
//! `2(b - a) + 2 <= -2`, so every move lowers that sum and the moves stop
//! (at every pair of counts within one of each other) after finitely
//! many, whatever splits and merges add in between.

use crate::healing::{load, re_home};
use crate::{PartitionInfo, PartitionMap, Reconfiguration};
use amulet_types::{NodeId, PartitionId, StorageMode, StreamId};

/// The next move that evens out the replicas per node, or `None` when the
/// counts of the `live` nodes are within one of each other (or no
/// partition can move).
///
/// The most loaded node (then the highest id) gives its lightest partition
/// by `weight_of` (then the lowest id; `None` weighs nothing) that the
/// least loaded node (then the lowest id) does not replicate; a
/// partition with a replica outside `live` is self-healing's and is left
/// alone. Every node in `live` takes part, one replicating nothing too (a
/// member that has just joined, or one whose partitions all moved away):
/// it learns the map that gives it a partition from its peers' probes
/// (docs/membership.md, "Maps for a node without a replica"), so `live`
/// must hold only nodes that learn the global stream. The move keeps the
/// partition's other replicas and its new stream has the storage
/// `storage_of` gives for its current one.
pub fn next_rebalance(
    map: &PartitionMap,
    live: &[NodeId],
    also_used: impl IntoIterator<Item = StreamId>,
    storage_of: impl Fn(StreamId) -> StorageMode,
    weight_of: impl Fn(PartitionId) -> Option<u64>,
) -> Option<Reconfiguration> {
    let mut nodes: Vec<(usize, NodeId)> = live.iter().map(|n| (load(map, *n), *n)).collect();
    nodes.sort();
    nodes.dedup();
    let (least, to) = *nodes.first()?;
    let (most, from) = *nodes.last()?;
    if most < least + 2 {
        return None;
    }
    let (partition, info) = map
        .partitions
        .iter()
        .filter(|(id, info)| movable(map, **id, info, from, to, live))
        // The lightest: the count evens out moving the least state, and
        // a move by weight (`crate::next_weight_move`) that left two
        // nodes a partition apart is answered by a light partition, not
        // by its own partition coming back.
        .min_by_key(|(id, _)| (weight_of(**id).unwrap_or(0), **id))?;
    let group = info
        .replicas
        .iter()
        .map(|n| if *n == from { to } else { *n })
        .collect();
    let also_used: Vec<StreamId> = also_used.into_iter().collect();
    Some(re_home(
        map,
        *partition,
        group,
        &also_used,
        storage_of(info.stream),
    ))
}

/// Whether `partition` can move from `from` to `to`: one move of a
/// partition at a time (moving it again before its hand-off is safe, the
/// leavers learn the new stream, but only lengthens the chain of nodes
/// serving its state), and a partition with a replica outside `live` is
/// self-healing's.
pub(crate) fn movable(
    map: &PartitionMap,
    partition: PartitionId,
    info: &PartitionInfo,
    from: NodeId,
    to: NodeId,
    live: &[NodeId],
) -> bool {
    !map.handing_off.contains_key(&partition)
        && info.replicas.contains(&from)
        && !info.replicas.contains(&to)
        && info.replicas.iter().all(|n| live.contains(n))
}

#[cfg(test)]
mod tests {
    use super::*;

    const SYNC: fn(StreamId) -> StorageMode = |_| StorageMode::SyncDurable;

    fn nodes(ids: &[u32]) -> Vec<NodeId> {
        ids.iter().copied().map(NodeId).collect()
    }

    /// Six nodes; p1, p3 and p4 (splits of p1, which keep its replicas) on
    /// 1-3, p2 on 4-6: three partitions per node against one.
    fn split_three_times() -> PartitionMap {
        let info = |p: u32, replicas: &[u32]| {
            (
                PartitionId(p),
                PartitionInfo {
                    stream: StreamId(p + 1),
                    replicas: nodes(replicas),
                },
            )
        };
        PartitionMap::uniform(
            StreamId(1),
            vec![
                info(1, &[1, 2, 3]),
                info(2, &[4, 5, 6]),
                info(3, &[1, 2, 3]),
                info(4, &[1, 2, 3]),
            ],
        )
    }

    fn counts(map: &PartitionMap, live: &[NodeId]) -> Vec<usize> {
        live.iter().map(|n| load(map, *n)).collect()
    }

    #[test]
    fn dynatree_oracle_moves_a_replica_from_the_most_to_the_least_loaded_node() {
        let map = split_three_times();
        let live = nodes(&[1, 2, 3, 4, 5, 6]);
        let plan = next_rebalance(&map, &live, [], SYNC, |_| None).expect("3 against 1");
        let Reconfiguration::Move {
            partition,
            replicas,
            stream,
        } = &plan
        else {
            panic!("{plan:?}")
        };
        // Node 3 (the highest id among those with three) gives p1 to node
        // 4 (the lowest id among those with one).
        assert_eq!(*partition, PartitionId(1));
        assert_eq!(*replicas, nodes(&[1, 2, 4]));
        assert_eq!(stream.acceptors, *replicas);
        assert_eq!(stream.learners, nodes(&[3]));
        assert_eq!(stream.stream, StreamId(6), "a stream id never used");
    }

    /// Applies `next_rebalance`'s plans to `map` until it plans none;
    /// the number of moves (at most 12, or the plans do not converge).
    fn rebalance_until_settled(map: &mut PartitionMap, live: &[NodeId]) -> usize {
        let mut moves = 0;
        while let Some(plan) = next_rebalance(map, live, [], SYNC, |_| None) {
            *map = plan.apply(map, 0).expect("the plan applies to its map");
            moves += 1;
            assert!(moves <= 12, "moves do not converge: {map:?}");
        }
        moves
    }

    #[test]
    fn dynatree_oracle_moves_stop_with_every_count_within_one() {
        let mut map = split_three_times();
        let live = nodes(&[1, 2, 3, 4, 5, 6]);
        let moves = rebalance_until_settled(&mut map, &live);
        let counts = counts(&map, &live);
        assert_eq!(counts.iter().sum::<usize>(), 12, "no replica lost");
        assert_eq!(counts, vec![2; 6], "{counts:?}");
        assert_eq!(moves, 3);
        for info in map.partitions.values() {
            let mut replicas = info.replicas.clone();
            replicas.sort();
            replicas.dedup();
            assert_eq!(replicas.len(), 3, "a replica twice on a node: {info:?}");
        }
    }

    #[test]
    fn dynatree_oracle_leaves_partitions_with_a_dead_replica_to_self_healing() {
        let map = split_three_times();
        // Node 6 is gone: p2 is self-healing's; 1-3 still hold three
        // partitions and 4, 5 one, but every partition 1-3 hold can move.
        let live = nodes(&[1, 2, 3, 4, 5]);
        let plan = next_rebalance(&map, &live, [], SYNC, |_| None).expect("3 against 1");
        assert!(matches!(
            plan,
            Reconfiguration::Move { partition, .. } if partition != PartitionId(2)
        ));
        // Within one of each other: nothing moves.
        let even = PartitionMap::uniform(
            StreamId(1),
            vec![(
                PartitionId(1),
                PartitionInfo {
                    stream: StreamId(2),
                    replicas: nodes(&[1, 2, 3]),
                },
            )],
        );
        assert_eq!(next_rebalance(&even, &live, [], SYNC, |_| None), None);
    }

    #[test]
    fn dynatree_oracle_gives_partitions_to_a_member_replicating_nothing() {
        // Growth from one partition on nodes 1-3 of five: the splits keep
        // the replicas, so 1-3 hold four partitions and 4, 5 (members
        // that have just joined) none. They take part, and the moves
        // stop with every count within one.
        let info = |p: u32| {
            (
                PartitionId(p),
                PartitionInfo {
                    stream: StreamId(p + 1),
                    replicas: nodes(&[1, 2, 3]),
                },
            )
        };
        let mut map = PartitionMap::uniform(StreamId(1), (1..=4).map(info).collect());
        let live = nodes(&[1, 2, 3, 4, 5]);
        let first = next_rebalance(&map, &live, [], SYNC, |_| None).expect("4 against 0");
        assert!(
            matches!(&first, Reconfiguration::Move { replicas, .. } if replicas.contains(&NodeId(4))),
            "the lowest empty node takes the first: {first:?}"
        );
        rebalance_until_settled(&mut map, &live);
        let counts = counts(&map, &live);
        assert_eq!(counts.iter().sum::<usize>(), 12, "no replica lost");
        assert!(
            counts.iter().max().unwrap() - counts.iter().min().unwrap() <= 1,
            "{counts:?}"
        );
        assert!(counts[3] >= 2 && counts[4] >= 2, "{counts:?}");
        // Without them in `live` (they do not learn the global stream),
        // 1-3 are even among themselves: nothing moves.
        let hosting = nodes(&[1, 2, 3]);
        let grown = PartitionMap::uniform(StreamId(1), (1..=4).map(info).collect());
        assert_eq!(next_rebalance(&grown, &hosting, [], SYNC, |_| None), None);
    }
}
