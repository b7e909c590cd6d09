//! Evening out bytes and load (docs/dynatree.md, "Moves by bytes and
//! load"; DynaTree's oracle places nodes by the servers' load): once the
//! partition counts are within one of each other
//! (`crate::next_rebalance`), the heaviest live node gives a partition to
//! the lightest when that lowers the sum of the nodes' squared weights.
//!
//! A partition's weight is its share of the cluster's bytes plus its share
//! of its commands per second, in millionths of each, as its replicas
//! measured them ([`PartitionWeight`]); a node weighs the partitions it
//! replicates. Only a partition's replicas know its size, so every node
//! reports its replicas' to the node that proposes the cluster's own
//! changes, which plans from the reports; a plan is checked on the map
//! version like any other, so reports need not agree.
//!
//! It never flaps while the weights hold still: a move is proposed only
//! when the sum of squared node weights after it, and after the count
//! moves it brings about (a move between two nodes with as many
//! partitions leaves them two apart, and the count rule then brings the
//! lightest partition back the other way), is lower than before, and a
//! move whose own partition the count rule would bring back is never
//! proposed. Each move lowers a sum that cannot fall forever. Weights do
//! change (load comes and goes): nothing moves while the heaviest and the
//! lightest node are within a quarter of the mean weight of each other.

use crate::healing::re_home;
use crate::rebalancing::movable;
use crate::{next_rebalance, PartitionMap, Reconfiguration};
use amulet_types::{NodeId, PartitionId, StorageMode, StreamId};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A partition's size and load as one of its replicas measured them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PartitionWeight {
    /// The partition.
    pub partition: PartitionId,
    /// Bytes of keys and values it holds, of every map.
    pub bytes: u64,
    /// Commands it executed per second over its last load window.
    pub ops_per_second: u64,
}

/// What a partition weighs when it holds every byte and executes every
/// command of the cluster: a million for each.
pub const WEIGHT_OF_ALL: u64 = 1_000_000;

/// Each reported partition's weight: its share of the reported bytes plus
/// its share of the reported commands per second, each in millionths
/// ([`WEIGHT_OF_ALL`]). A partition reported by several replicas counts
/// the most any reported (a replica behind has applied less). Bytes count
/// only once the partitions hold `min_bytes` together, and load only once
/// they execute `min_ops_per_second`: a few kilobytes of difference are
/// not worth moving a replica for.
pub fn weigh(
    reports: impl IntoIterator<Item = PartitionWeight>,
    min_bytes: u64,
    min_ops_per_second: u64,
) -> BTreeMap<PartitionId, u64> {
    let mut merged: BTreeMap<PartitionId, (u64, u64)> = BTreeMap::new();
    for report in reports {
        let entry = merged.entry(report.partition).or_default();
        entry.0 = entry.0.max(report.bytes);
        entry.1 = entry.1.max(report.ops_per_second);
    }
    let total_bytes: u128 = merged.values().map(|(b, _)| u128::from(*b)).sum();
    let total_ops: u128 = merged.values().map(|(_, o)| u128::from(*o)).sum();
    let share = |part: u64, total: u128, min: u64| -> u64 {
        if total == 0 || total < u128::from(min) {
            return 0;
        }
        // At most WEIGHT_OF_ALL: part <= total.
        (u128::from(part) * u128::from(WEIGHT_OF_ALL) / total) as u64
    };
    merged
        .into_iter()
        .map(|(p, (bytes, ops))| {
            let weight =
                share(bytes, total_bytes, min_bytes) + share(ops, total_ops, min_ops_per_second);
            (p, weight)
        })
        .collect()
}

/// The next move that evens out the weights of the `live` nodes (one
/// replicating nothing weighs nothing; see `crate::next_rebalance` for
/// which nodes `live` may hold), or `None`: when some partition of `map` has no weight
/// (not every replica has reported yet), when the heaviest and the
/// lightest node are within a quarter of the mean of each other, or when
/// no move of a partition from the heaviest node to the lightest lowers
/// the sum of the squared node weights (counted after the count moves it
/// brings about). Of those that do, the one that lowers it most (then the
/// lowest partition id). The move keeps the partition's other replicas;
/// its new stream has the storage `storage_of` gives for its current one.
pub fn next_weight_move(
    map: &PartitionMap,
    live: &[NodeId],
    also_used: &[StreamId],
    storage_of: impl Fn(StreamId) -> StorageMode,
    weights: &BTreeMap<PartitionId, u64>,
) -> Option<Reconfiguration> {
    if map.partitions.keys().any(|p| !weights.contains_key(p)) {
        return None;
    }
    // Every live node, one replicating nothing too (it weighs nothing).
    let mut nodes: Vec<NodeId> = live.to_vec();
    nodes.sort();
    nodes.dedup();
    let node_weights = |m: &PartitionMap| -> Vec<(u64, NodeId)> {
        nodes
            .iter()
            .map(|n| {
                let w = m
                    .partitions
                    .iter()
                    .filter(|(_, info)| info.replicas.contains(n))
                    .map(|(p, _)| weights.get(p).copied().unwrap_or(0))
                    .sum();
                (w, *n)
            })
            .collect()
    };
    let squares = |ws: &[(u64, NodeId)]| -> u128 {
        ws.iter()
            .map(|(w, _)| u128::from(*w) * u128::from(*w))
            .sum()
    };
    let before = node_weights(map);
    let (heavy_weight, heavy) = *before
        .iter()
        .max_by_key(|(w, n)| (*w, std::cmp::Reverse(*n)))?;
    let (light_weight, light) = *before.iter().min_by_key(|(w, n)| (*w, *n))?;
    let mean = before.iter().map(|(w, _)| *w).sum::<u64>() / before.len() as u64;
    let gap = heavy_weight - light_weight;
    if heavy == light || gap == 0 || gap.saturating_mul(4) <= mean {
        return None;
    }
    let before_squares = squares(&before);
    let weight_of = |p: PartitionId| weights.get(&p).copied();
    let mut best: Option<(u128, Reconfiguration)> = None;
    for (id, info) in &map.partitions {
        if !movable(map, *id, info, heavy, light, live) || weights[id] == 0 {
            continue;
        }
        let group = info
            .replicas
            .iter()
            .map(|n| if *n == heavy { light } else { *n })
            .collect();
        let change = re_home(map, *id, group, also_used, storage_of(info.stream));
        let Ok(mut after) = change.apply(map, 0) else {
            continue;
        };
        // As it will be once the move's hand-off is done, and then the
        // count moves that follow (bounded: counts within one before, so
        // one move apart now; two moves settle them).
        after.handing_off.remove(id);
        let mut comes_back = false;
        for _ in 0..2 {
            let Some(next) = next_rebalance(
                &after,
                live,
                also_used.iter().copied(),
                &storage_of,
                weight_of,
            ) else {
                break;
            };
            let Reconfiguration::Move { partition, .. } = &next else {
                break;
            };
            if partition == id {
                comes_back = true;
                break;
            }
            let moved = *partition;
            let Ok(next_map) = next.apply(&after, 0) else {
                break;
            };
            after = next_map;
            after.handing_off.remove(&moved);
        }
        if comes_back {
            continue;
        }
        let after_squares = squares(&node_weights(&after));
        if after_squares < before_squares && best.as_ref().is_none_or(|(b, _)| after_squares < *b) {
            best = Some((after_squares, change));
        }
    }
    best.map(|(_, change)| change)
}

#[cfg(test)]
mod tests;
