use super::*;
use crate::PartitionInfo;

const SYNC: fn(StreamId) -> StorageMode = |_| StorageMode::SyncDurable;

fn nodes(ids: &[u32]) -> Vec<NodeId> {
    ids.iter().copied().map(NodeId).collect()
}

/// Partitions `p` on `replicas`, stream `p + 1`.
fn map_of(partitions: &[(u32, &[u32])]) -> PartitionMap {
    PartitionMap::uniform(
        StreamId(1),
        partitions
            .iter()
            .map(|(p, replicas)| {
                (
                    PartitionId(*p),
                    PartitionInfo {
                        stream: StreamId(p + 1),
                        replicas: nodes(replicas),
                    },
                )
            })
            .collect(),
    )
}

fn weights(ws: &[(u32, u64)]) -> BTreeMap<PartitionId, u64> {
    ws.iter().map(|(p, w)| (PartitionId(*p), *w)).collect()
}

fn node_weight(map: &PartitionMap, weights: &BTreeMap<PartitionId, u64>, node: u32) -> u64 {
    map.partitions
        .iter()
        .filter(|(_, info)| info.replicas.contains(&NodeId(node)))
        .map(|(p, _)| weights[p])
        .sum()
}

fn count(map: &PartitionMap, node: u32) -> usize {
    crate::healing::load(map, NodeId(node))
}

/// The balancer's order: the count rule first, then the weight rule; a
/// move takes effect with its hand-off done. Returns the moves made.
fn settle(map: &mut PartitionMap, live: &[NodeId], weights: &BTreeMap<PartitionId, u64>) -> usize {
    let weight_of = |p: PartitionId| weights.get(&p).copied();
    for moves in 0..64 {
        let plan = next_rebalance(map, live, [], SYNC, weight_of)
            .or_else(|| next_weight_move(map, live, &[], SYNC, weights));
        let Some(plan) = plan else {
            return moves;
        };
        let Reconfiguration::Move { partition, .. } = &plan else {
            panic!("{plan:?}")
        };
        let moved = *partition;
        *map = plan.apply(map, 0).expect("the plan applies to its map");
        map.handing_off.remove(&moved);
    }
    panic!("moves do not converge: {map:?}")
}

fn squares(map: &PartitionMap, live: &[NodeId], weights: &BTreeMap<PartitionId, u64>) -> u128 {
    live.iter()
        .map(|n| u128::from(node_weight(map, weights, n.0)).pow(2))
        .sum()
}

#[test]
fn dynatree_oracle_weighs_a_partition_by_its_share_of_bytes_and_load() {
    let report = |p: u32, bytes: u64, ops_per_second: u64| PartitionWeight {
        partition: PartitionId(p),
        bytes,
        ops_per_second,
    };
    let reports = [
        report(1, 300, 0),
        // Two replicas of p2; the one behind reported less.
        report(2, 50, 10),
        report(2, 100, 30),
        report(3, 0, 10),
    ];
    // Bytes 300/400 and 100/400; load 30/40 and 10/40.
    assert_eq!(
        weigh(reports, 0, 0),
        weights(&[(1, 750_000), (2, 250_000 + 750_000), (3, 250_000)])
    );
    // Below the floors a dimension counts nothing: 400 bytes, 40 ops/s.
    assert_eq!(
        weigh(reports, 401, 0),
        weights(&[(1, 0), (2, 750_000), (3, 250_000)])
    );
    assert_eq!(
        weigh(reports, 400, 41),
        weights(&[(1, 750_000), (2, 250_000), (3, 0)])
    );
    // Nothing measured: every partition weighs nothing, but is weighed.
    assert_eq!(weigh([report(1, 0, 0)], 0, 0), weights(&[(1, 0)]));
}

#[test]
fn dynatree_oracle_moves_a_heavy_partition_to_the_lightest_node_and_a_light_one_back() {
    // Two partitions per node; nodes 1-3 hold the heavy ones.
    let map = map_of(&[
        (1, &[1, 2, 3]),
        (2, &[4, 5, 6]),
        (3, &[1, 2, 3]),
        (4, &[4, 5, 6]),
    ]);
    let live = nodes(&[1, 2, 3, 4, 5, 6]);
    let ws = weights(&[(1, 600_000), (2, 50_000), (3, 300_000), (4, 50_000)]);
    assert_eq!(
        next_rebalance(&map, &live, [], SYNC, |p| ws.get(&p).copied()),
        None
    );
    let plan = next_weight_move(&map, &live, &[], SYNC, &ws).expect("900k against 100k");
    let Reconfiguration::Move {
        partition,
        replicas,
        stream,
    } = &plan
    else {
        panic!("{plan:?}")
    };
    // Node 1 (heaviest, lowest id) gives p1 to node 4 (lightest, lowest
    // id); the count rule then sends node 4's lightest back to node 1.
    assert_eq!(*partition, PartitionId(1));
    assert_eq!(*replicas, nodes(&[4, 2, 3]));
    assert_eq!(stream.learners, nodes(&[1]));
    let mut after = plan.apply(&map, 0).expect("applies");
    after.handing_off.remove(partition);
    let back =
        next_rebalance(&after, &live, [], SYNC, |p| ws.get(&p).copied()).expect("3 against 1");
    assert!(
        matches!(&back, Reconfiguration::Move { partition, replicas, .. }
            if *partition == PartitionId(2) && replicas.contains(&NodeId(1))),
        "{back:?}"
    );
}

#[test]
fn dynatree_oracle_weight_moves_stop_and_lower_the_spread() {
    // Eight partitions of three replicas on six nodes, four each, the
    // heavy ones on 1-3: the counts are even, the weights are not.
    let mut map = map_of(&[
        (1, &[1, 2, 3]),
        (2, &[1, 2, 3]),
        (3, &[1, 2, 3]),
        (4, &[1, 2, 3]),
        (5, &[4, 5, 6]),
        (6, &[4, 5, 6]),
        (7, &[4, 5, 6]),
        (8, &[4, 5, 6]),
    ]);
    let live = nodes(&[1, 2, 3, 4, 5, 6]);
    let ws = weights(&[
        (1, 400_000),
        (2, 300_000),
        (3, 250_000),
        (4, 200_000),
        (5, 20_000),
        (6, 10_000),
        (7, 10_000),
        (8, 10_000),
    ]);
    let before = squares(&map, &live, &ws);
    let moves = settle(&mut map, &live, &ws);
    assert!(moves > 0);
    assert!(squares(&map, &live, &ws) < before);
    let counts: Vec<usize> = (1..=6).map(|n| count(&map, n)).collect();
    assert!(
        counts.iter().max().unwrap() - counts.iter().min().unwrap() <= 1,
        "{counts:?}"
    );
    let total_replicas: usize = counts.iter().sum();
    assert_eq!(total_replicas, 24, "no replica lost");
    let weighs: Vec<u64> = (1..=6).map(|n| node_weight(&map, &ws, n)).collect();
    // From 1,150,000 against 50,000 (12 moves to 570,000 and 630,000).
    assert!(
        weighs.iter().all(|w| (500_000..=700_000).contains(w)),
        "{weighs:?}"
    );
}

#[test]
fn dynatree_oracle_weight_moves_converge_for_many_weightings() {
    // A fixed generator: a hundred weightings of six partitions on six
    // nodes. Every run stops, counts end within one, and the squared
    // weights end no higher than they began.
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let live = nodes(&[1, 2, 3, 4, 5, 6]);
    for _ in 0..100 {
        let mut map = map_of(&[
            (1, &[1, 2, 3]),
            (2, &[4, 5, 6]),
            (3, &[1, 3, 5]),
            (4, &[2, 4, 6]),
            (5, &[1, 4, 5]),
            (6, &[2, 3, 6]),
        ]);
        let ws: BTreeMap<PartitionId, u64> = (1..=6)
            .map(|p| (PartitionId(p), next() % 500_000))
            .collect();
        let before = squares(&map, &live, &ws);
        settle(&mut map, &live, &ws);
        assert!(squares(&map, &live, &ws) <= before, "{ws:?} {map:?}");
        let counts: Vec<usize> = (1..=6).map(|n| count(&map, n)).collect();
        assert!(counts.iter().max().unwrap() - counts.iter().min().unwrap() <= 1);
        for info in map.partitions.values() {
            let mut replicas = info.replicas.clone();
            replicas.sort();
            replicas.dedup();
            assert_eq!(replicas.len(), 3, "a replica twice: {info:?}");
        }
    }
}

#[test]
fn dynatree_oracle_weight_moves_wait_for_every_weight_and_a_real_gap() {
    let map = map_of(&[
        (1, &[1, 2, 3]),
        (2, &[4, 5, 6]),
        (3, &[1, 2, 3]),
        (4, &[4, 5, 6]),
    ]);
    let live = nodes(&[1, 2, 3, 4, 5, 6]);
    // p4 not reported yet.
    let partial = weights(&[(1, 600_000), (2, 50_000), (3, 300_000)]);
    assert_eq!(next_weight_move(&map, &live, &[], SYNC, &partial), None);
    // 550k against 450k: within a quarter of the mean (500k).
    let close = weights(&[(1, 300_000), (2, 200_000), (3, 250_000), (4, 250_000)]);
    assert_eq!(next_weight_move(&map, &live, &[], SYNC, &close), None);
    // Node 6 is gone: p2 and p4 are self-healing's, never moved by
    // weight.
    let skewed = weights(&[(1, 600_000), (2, 50_000), (3, 300_000), (4, 50_000)]);
    let plan = next_weight_move(&map, &nodes(&[1, 2, 3, 4, 5]), &[], SYNC, &skewed);
    assert!(
        plan.as_ref().is_none_or(|p| matches!(p,
            Reconfiguration::Move { partition, .. } if *partition != PartitionId(2) && *partition != PartitionId(4))),
        "{plan:?}"
    );
}
