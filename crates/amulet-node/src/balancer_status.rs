//! The balancer's part of `Status` and `SetBalancer` (docs/dynatree.md,
//! "Pause and decisions").

use crate::node_handle::NodeStats;
use amulet_api::pb;

/// The node's balancer as the API reports it.
pub(crate) fn to_pb(stats: &NodeStats) -> pb::BalancerStatus {
    pb::BalancerStatus {
        enabled: stats.balancer_enabled,
        splits_proposed: stats.splits_proposed,
        load_splits_proposed: stats.load_splits_proposed,
        tail_splits_proposed: stats.tail_splits_proposed,
        merges_proposed: stats.merges_proposed,
        moves_proposed: stats.moves_proposed,
        recent: stats
            .balancer_decisions
            .iter()
            .map(|(age_micros, d)| pb::BalancerDecision {
                age_ms: age_micros / 1_000,
                map_version: d.map_version,
                kind: d.kind.to_string(),
                partition: d.partition.0,
                change: d.change.clone(),
            })
            .collect(),
    }
}
