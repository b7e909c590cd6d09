//! The newest map and membership of a run, as the operator, the joiner,
//! the verdict and the report see the cluster.

use crate::harness::Harness;
use amulet_smr::PartitionMap;

/// The newest partition map any running host holds (the operator's and
/// the joiner's view of the cluster, and the report's).
pub(super) fn newest_map(harness: &Harness) -> Option<PartitionMap> {
    harness
        .hosts()
        .filter_map(|(_, h)| h.current_map())
        .max_by_key(|m| m.version)
        .cloned()
}

/// The membership the furthest replica executed: the newest view, and in
/// it the latest global position. A node running no replica holds a copy
/// learned from its peers' probes, which can lag (joiners admitted or
/// refused since): never the newest here.
pub(super) fn newest_membership(
    harness: &Harness,
) -> Option<std::sync::Arc<amulet_membership::Membership>> {
    harness
        .hosts()
        .flat_map(|(_, h)| h.replicas().values())
        .filter_map(|r| {
            let membership = r.membership()?;
            Some((
                (membership.view().id(), r.global_position()),
                membership.clone(),
            ))
        })
        .max_by_key(|(at, _)| *at)
        .map(|(_, membership)| membership)
}
