//! The end of a move for the replicas it takes away (DMap §III-C): a
//! replica the map no longer names keeps executing and serving its state
//! until a majority of the new group holds it, then its node drops it.
//! The node runtime and the simulator both decide by these functions.

use crate::fence::newest_map;
use crate::trim_point::{trim_point, TrimQuorum};
use crate::{PartitionMap, Replica, StateMachine};
use amulet_types::{Instance, NodeId, PartitionId, SafeReport};
use std::collections::BTreeMap;

/// Whether a replica of `partition` that a move took away from its node
/// may drop its state: a majority of the new group holds a durable
/// checkpoint reflecting at least one instance of the partition's new
/// stream (given each member's safe instance of that stream).
pub fn handed_off(
    map: &PartitionMap,
    partition: PartitionId,
    safe: &BTreeMap<NodeId, SafeReport>,
) -> bool {
    map.partitions.get(&partition).is_some_and(|info| {
        trim_point(map, info.stream, safe, TrimQuorum::Majority)
            .is_some_and(|below| below > Instance(0))
    })
}

/// The replicas among `replicas` (a node's) that a move took away and
/// whose new group holds the state by `handed` (`handed_off`, given the
/// partition and the replica's map), to drop now. While the node adopts a
/// partition a move gave it, it keeps its last replica: a node learns maps
/// only through the replicas it runs, and would never learn the rest of
/// the move (nor later ones).
pub fn replicas_to_hand_off<S: StateMachine>(
    me: NodeId,
    replicas: &BTreeMap<PartitionId, Replica<S>>,
    handed: impl Fn(PartitionId, &PartitionMap) -> bool,
) -> Vec<PartitionId> {
    let mut going: Vec<PartitionId> = replicas
        .iter()
        .filter(|(partition, r)| r.moved_away() && handed(**partition, r.map()))
        .map(|(p, _)| *p)
        .collect();
    let adopting = newest_map(replicas).is_some_and(|map| {
        map.partitions_of(me)
            .iter()
            .any(|p| !replicas.contains_key(p))
    });
    if adopting && going.len() == replicas.len() {
        going.pop();
    }
    going
}
