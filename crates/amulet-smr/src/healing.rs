//! Self-healing (docs/membership.md; thesis §4.2): after the view removed
//! nodes, the next reconfiguration that gives a partition back its
//! replicas on live nodes. A pure function of the map and the view, so
//! any member computes the same plan; the view's lowest active member
//! proposes it, and a plan built on an older map fails on its version.

use crate::{PartitionMap, Reconfiguration, StreamSpec};
use amulet_types::{NodeId, PartitionId, StorageMode, StreamId};

/// The next move that re-homes a partition holding a replica on a node
/// not in `live`, or `None` when every partition's replicas are live (or
/// none can be repaired: no live replica holds its state, or no live node
/// can take its place).
///
/// The partition keeps its live replicas and takes, for each one lost, the
/// live node replicating the fewest partitions (then the lowest id), a
/// node replicating nothing too (it learns the map from its peers'
/// probes; `live` must hold only nodes that learn the global stream).
/// Its new stream (id `map.next_stream_id(also_used)`, the storage
/// `storage_of` gives for the partition's current stream) has the
/// new group as acceptors and the replicas that go as learners, as
/// `amulet move` builds it. With too few live nodes to restore the
/// replication factor, the partition is left as it is.
///
/// A partition whose replicas are all live but whose stream still has an
/// acceptor outside `live` (a stream an operator configured apart from
/// the replicas, or a move that kept one) gets its stream replaced by one
/// whose acceptors are its replicas: an acceptor role of a removed node
/// moves too (issue 22, "a removed node kept as an acceptor").
/// `stream_of` gives a partition stream's storage and acceptors (no
/// acceptors when unknown: nothing to judge).
pub fn next_repair(
    map: &PartitionMap,
    live: &[NodeId],
    also_used: impl IntoIterator<Item = StreamId>,
    stream_of: impl Fn(StreamId) -> (StorageMode, Vec<NodeId>),
) -> Option<Reconfiguration> {
    let also_used: Vec<StreamId> = also_used.into_iter().collect();
    for (partition, info) in &map.partitions {
        let (storage, acceptors) = stream_of(info.stream);
        if info.replicas.iter().all(|n| live.contains(n)) {
            if acceptors.iter().all(|n| live.contains(n)) || info.replicas.len() % 2 == 0 {
                // An even group cannot be a stream's acceptors; healing
                // never makes one, and an operator's stays as it is.
                continue;
            }
            return Some(Reconfiguration::ReplaceStream {
                partition: *partition,
                stream: StreamSpec {
                    stream: map.next_stream_id(also_used.iter().copied()),
                    acceptors: info.replicas.clone(),
                    learners: Vec::new(),
                    storage,
                    base_position: 0,
                },
            });
        }
        let mut group: Vec<NodeId> = info
            .replicas
            .iter()
            .copied()
            .filter(|n| live.contains(n))
            .collect();
        if group.is_empty() {
            // No live replica holds the state: nothing to copy it from.
            continue;
        }
        let wanted = info.replicas.len();
        let mut candidates: Vec<NodeId> = live
            .iter()
            .copied()
            .filter(|n| !group.contains(n))
            .collect();
        candidates.sort_by_key(|n| (load(map, *n), *n));
        candidates.dedup();
        group.extend(candidates.into_iter().take(wanted - group.len()));
        if group.len() < wanted || group.len().is_multiple_of(2) {
            // Too few live nodes to restore the replication factor: the
            // partition keeps running on its live majority (moving it to
            // fewer replicas would lower its durability) until a node
            // joins.
            continue;
        }
        return Some(re_home(map, *partition, group, &also_used, storage));
    }
    None
}

/// The node that proposes the cluster's own changes (self-healing's
/// repairs, the balancer's moves) under `map`: the view's lowest active
/// member that replicates some partition of it, else the lowest node that
/// does. Only a node replicating a partition learns every map, and a
/// proposal goes through one of its replicas. When every replica is on
/// nodes the view removed or is draining, one of them, still running
/// since it still holds the partitions, re-homes them: otherwise nobody
/// could (DMap seed 9023100: an operator moved the only partition onto
/// node 1 alone right after the view removed node 1, and the active
/// members, replicating nothing and holding an older map, never proposed
/// the repairs; the global stream kept a removed acceptor).
pub fn cluster_proposer(map: &PartitionMap, view: &amulet_membership::View) -> Option<NodeId> {
    let hosting = map.hosting_nodes();
    view.active_members()
        .into_iter()
        .find(|n| hosting.contains(n))
        .or_else(|| hosting.first().copied())
}

/// The current global stream, as the node judging it runs it: what a
/// replacement keeps.
#[derive(Debug, Clone, Copy)]
pub struct GlobalStreamNow<'a> {
    /// Its storage, which the replacement keeps.
    pub storage: StorageMode,
    /// Its acceptors.
    pub acceptors: &'a [NodeId],
    /// Its acceptors and learners.
    pub members: &'a [NodeId],
}

/// The replacement of the global stream when one of its `acceptors` is
/// not in `live` (issue 22: the global stream itself is replaced when one
/// of its acceptors is removed), else `None`. The new stream keeps the
/// live acceptors and takes, for each one lost, the lowest live member of
/// the current global stream (`members`) that is not one, so it has as
/// many acceptors as before; with too few live members it is not
/// replaced (fewer acceptors would survive fewer failures). Its learners
/// are the other members, less those neither live nor running a replica
/// (a removed node that still holds a replica or a hand-off learns it,
/// since every replica merges the global stream). Storage: the current
/// global stream's.
///
/// `joined`: active members of the view that do not run the global stream
/// (admitted by a `Join`). They are added as learners, with the acceptors
/// kept if all live: a stream's learners are fixed for its life, and a
/// node must learn the global stream to be given a partition.
pub fn next_global_repair(
    map: &PartitionMap,
    live: &[NodeId],
    also_used: impl IntoIterator<Item = StreamId>,
    current: GlobalStreamNow<'_>,
    joined: &[NodeId],
) -> Option<Reconfiguration> {
    let GlobalStreamNow {
        storage,
        acceptors,
        members,
    } = current;
    let newcomers: Vec<NodeId> = joined
        .iter()
        .copied()
        .filter(|n| !members.contains(n))
        .collect();
    if acceptors.iter().all(|n| live.contains(n)) && newcomers.is_empty() {
        return None;
    }
    let live_or_new: Vec<NodeId> = live.iter().chain(&newcomers).copied().collect();
    let members_or_new: Vec<NodeId> = members.iter().chain(&newcomers).copied().collect();
    let mut kept: Vec<NodeId> = acceptors
        .iter()
        .copied()
        .filter(|n| live_or_new.contains(n))
        .collect();
    let mut candidates: Vec<NodeId> = members_or_new
        .iter()
        .copied()
        .filter(|n| live_or_new.contains(n) && !kept.contains(n))
        .collect();
    candidates.sort();
    candidates.dedup();
    let wanted = acceptors.len();
    kept.extend(candidates.into_iter().take(wanted - kept.len()));
    if kept.len() < wanted || kept.len().is_multiple_of(2) {
        return None;
    }
    kept.sort();
    let running = map.hosting_nodes();
    let handing_off: Vec<NodeId> = map.handing_off.values().flatten().copied().collect();
    let mut learners: Vec<NodeId> = members_or_new
        .iter()
        .copied()
        .chain(running.iter().copied())
        .chain(handing_off.iter().copied())
        .filter(|n| !kept.contains(n))
        .filter(|n| live_or_new.contains(n) || running.contains(n) || handing_off.contains(n))
        .collect();
    learners.sort();
    learners.dedup();
    Some(Reconfiguration::ReplaceGlobalStream {
        stream: StreamSpec {
            stream: map.next_stream_id(also_used),
            acceptors: kept,
            learners,
            storage,
            base_position: 0,
        },
    })
}

/// The first partition `leaver` replicates that self-healing could not
/// move off it once it leaves: no other live replica holds its state, or
/// too few live nodes (as [`next_repair`] picks them) could take the
/// replicas it would lose. `live` is every node not removed and not
/// leaving that learns the global stream, the leaver excluded.
/// `None`: every partition of the leaver can be re-homed.
pub fn leave_blocker(map: &PartitionMap, live: &[NodeId], leaver: NodeId) -> Option<PartitionId> {
    let mut takers: Vec<NodeId> = live.to_vec();
    takers.sort();
    takers.dedup();
    let alive = |n: &NodeId| *n != leaver && live.contains(n);
    map.partitions
        .iter()
        .filter(|(_, info)| info.replicas.contains(&leaver))
        .find(|(_, info)| {
            let staying = info.replicas.iter().filter(|n| alive(n)).count();
            let lost = info.replicas.len() - staying;
            let candidates = takers
                .iter()
                .filter(|n| alive(n) && !info.replicas.contains(n))
                .count();
            staying == 0 || candidates < lost
        })
        .map(|(partition, _)| *partition)
}

/// Partitions `node` replicates.
pub(crate) fn load(map: &PartitionMap, node: NodeId) -> usize {
    map.partitions
        .values()
        .filter(|p| p.replicas.contains(&node))
        .count()
}

/// The move of `partition` onto `group`, on a new stream whose acceptors
/// are the group and whose learners are the replicas that go.
pub(crate) fn re_home(
    map: &PartitionMap,
    partition: PartitionId,
    group: Vec<NodeId>,
    also_used: &[StreamId],
    storage: StorageMode,
) -> Reconfiguration {
    let old = &map.partitions[&partition].replicas;
    let learners = old.iter().copied().filter(|n| !group.contains(n)).collect();
    Reconfiguration::Move {
        partition,
        replicas: group.clone(),
        stream: StreamSpec {
            stream: map.next_stream_id(also_used.iter().copied()),
            acceptors: group,
            learners,
            storage,
            base_position: 0,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::PartitionInfo;

    /// Five nodes, three partitions of three replicas as `amulet dev
    /// --nodes 5` places them: p1 on 1-3, p2 on 4, 5, 1, p3 on 2-4.
    fn five_nodes() -> PartitionMap {
        let info = |p: u32, replicas: [u32; 3]| {
            (
                PartitionId(p),
                PartitionInfo {
                    stream: StreamId(p + 1),
                    replicas: replicas.into_iter().map(NodeId).collect(),
                },
            )
        };
        PartitionMap::uniform(
            StreamId(1),
            vec![info(1, [1, 2, 3]), info(2, [4, 5, 1]), info(3, [2, 3, 4])],
        )
    }

    /// Every partition stream of `five_nodes` has the partition's
    /// replicas as acceptors, as `amulet dev` configures them.
    fn sync(map: &PartitionMap) -> impl Fn(StreamId) -> (StorageMode, Vec<NodeId>) + '_ {
        |stream| {
            let acceptors = map
                .partitions
                .values()
                .find(|p| p.stream == stream)
                .map(|p| p.replicas.clone())
                .unwrap_or_default();
            (StorageMode::SyncDurable, acceptors)
        }
    }

    fn nodes(ids: &[u32]) -> Vec<NodeId> {
        ids.iter().copied().map(NodeId).collect()
    }

    /// Nodes 1 to 5 in the first view, then node 1 removed (it left).
    fn view_without_node_1() -> amulet_membership::View {
        use amulet_membership::{Applied, Command, Membership, MembershipBug, View, ViewId};
        let addresses: Vec<String> = (1..=5).map(|n| format!("n{n}:7000")).collect();
        let mut m = Membership::new(View::initial(&addresses), MembershipBug::None);
        assert!(matches!(
            m.apply(&Command::Leave { node: NodeId(1) }),
            Applied::Leaving(_)
        ));
        assert!(matches!(
            m.apply(&Command::Cut { view: ViewId(1) }),
            Applied::Changed(_)
        ));
        m.view().clone()
    }

    #[test]
    fn sconekv_2_the_lowest_active_member_replicating_a_partition_proposes() {
        let view = view_without_node_1();
        // Node 1 is removed: node 2, the lowest active one replicating.
        assert_eq!(cluster_proposer(&five_nodes(), &view), Some(NodeId(2)));
        // Every replica on removed node 1 (an operator's replication factor
        // of one): node 1 itself, still running, proposes the repairs.
        let alone = PartitionMap::uniform(
            StreamId(1),
            vec![(
                PartitionId(1),
                PartitionInfo {
                    stream: StreamId(2),
                    replicas: nodes(&[1]),
                },
            )],
        );
        assert_eq!(cluster_proposer(&alone, &view), Some(NodeId(1)));
    }

    #[test]
    fn sconekv_2_a_leave_is_blocked_only_where_no_live_node_can_take_the_replica() {
        let map = five_nodes();
        // Node 5 leaves: p2 (4, 5, 1) can move onto 2 or 3.
        assert_eq!(leave_blocker(&map, &nodes(&[1, 2, 3, 4]), NodeId(5)), None);
        // With 2 and 3 gone too, p2 has nowhere to go (1 and 4 hold it).
        assert_eq!(
            leave_blocker(&map, &nodes(&[1, 4]), NodeId(5)),
            Some(PartitionId(2))
        );
        // Three nodes, three replicas each: nobody can leave.
        let three = PartitionMap::uniform(
            StreamId(1),
            vec![(
                PartitionId(1),
                crate::PartitionInfo {
                    stream: StreamId(2),
                    replicas: nodes(&[1, 2, 3]),
                },
            )],
        );
        assert_eq!(
            leave_blocker(&three, &nodes(&[1, 2, 3]), NodeId(3)),
            Some(PartitionId(1))
        );
        // A node replicating nothing never blocks.
        assert_eq!(leave_blocker(&three, &nodes(&[1, 2, 3]), NodeId(4)), None);
    }

    #[test]
    fn thesis_4_2_a_removed_nodes_partition_moves_to_the_least_loaded_live_node() {
        let map = five_nodes();
        let live = nodes(&[1, 2, 3, 4]);
        let plan = next_repair(&map, &live, [], sync(&map)).expect("p2 needs a repair");
        let Reconfiguration::Move {
            partition,
            replicas,
            stream,
        } = &plan
        else {
            panic!("{plan:?}")
        };
        assert_eq!(*partition, PartitionId(2));
        // 2 and 3 hold two partitions each, like 1 and 4 (p2's survivors):
        // the lowest id among the least loaded.
        assert_eq!(*replicas, nodes(&[4, 1, 2]));
        assert_eq!(stream.acceptors, *replicas);
        assert_eq!(stream.learners, nodes(&[5]));
        assert_eq!(stream.stream, StreamId(5), "a stream id never used");
        let next = plan.apply(&map, 0).expect("the plan applies to its map");
        assert!(next.partitions_of(NodeId(5)).is_empty());
        assert_eq!(
            next_repair(&next, &live, [], sync(&next)),
            None,
            "one repair restores every partition here"
        );
    }

    #[test]
    fn thesis_4_2_every_partition_of_a_removed_node_is_repaired_one_move_at_a_time() {
        let mut map = five_nodes();
        let live = nodes(&[2, 3, 4, 5]);
        let mut moves = 0;
        loop {
            let Some(plan) = next_repair(&map, &live, [], sync(&map)) else {
                break;
            };
            map = plan.apply(&map, 0).expect("applies");
            moves += 1;
            assert!(moves <= 3, "repairs do not converge");
        }
        assert_eq!(moves, 2, "node 1 held p1 and p2");
        assert!(map.partitions_of(NodeId(1)).is_empty());
        for info in map.partitions.values() {
            assert_eq!(info.replicas.len(), 3);
            assert!(info.replicas.iter().all(|n| live.contains(n)));
        }
    }

    #[test]
    fn thesis_4_2_without_enough_live_nodes_or_a_live_replica_nothing_moves() {
        let map = five_nodes();
        // Three live nodes: p1 keeps 2 and 3 and takes 4 ...
        let plan = next_repair(&map, &nodes(&[2, 3, 4]), [], sync(&map));
        assert!(matches!(
            plan,
            Some(Reconfiguration::Move {
                partition: PartitionId(1),
                ..
            })
        ));
        // ... with two, no group of three can be formed for p1 or p3, and
        // p2 has no live replica at all (4, 5 and 1 are gone): its state
        // is nowhere to copy from.
        assert_eq!(next_repair(&map, &nodes(&[2, 3]), [], sync(&map)), None);
        assert_eq!(
            next_repair(&map, &nodes(&[1, 2, 3, 4, 5]), [], sync(&map)),
            None
        );
    }

    #[test]
    fn thesis_4_2_a_member_replicating_nothing_takes_a_removed_nodes_replica_first() {
        let map = five_nodes();
        // Node 5 removed; node 6 (joined, learning the global stream)
        // replicates nothing: the least loaded, it takes p2's lost
        // replica.
        let live = nodes(&[1, 2, 3, 4, 6]);
        let plan = next_repair(&map, &live, [], sync(&map)).expect("p2 needs a repair");
        assert!(
            matches!(&plan, Reconfiguration::Move { partition: PartitionId(2), replicas, .. } if *replicas == nodes(&[4, 1, 6])),
            "{plan:?}"
        );
        // And it lets node 5 leave where 1-4 alone could not take p2.
        assert_eq!(
            leave_blocker(&map, &nodes(&[1, 4]), NodeId(5)),
            Some(PartitionId(2))
        );
        assert_eq!(leave_blocker(&map, &nodes(&[1, 4, 6]), NodeId(5)), None);
    }

    #[test]
    fn thesis_4_2_a_removed_acceptor_of_a_stream_whose_replicas_live_is_replaced() {
        let map = five_nodes();
        // p1's replicas (1-3) are live, but its stream was configured with
        // node 5 as an acceptor in place of 3, and the view removed 5.
        let live = nodes(&[1, 2, 3, 4]);
        let acceptors = |stream: StreamId| {
            let (storage, mut acceptors) = sync(&map)(stream);
            if stream == StreamId(2) {
                acceptors = nodes(&[1, 2, 5]);
            }
            (storage, acceptors)
        };
        // p1 comes first (by id); its replicas stay, its stream changes.
        let plan = next_repair(&map, &live, [], acceptors).expect("p1's stream needs a repair");
        let Reconfiguration::ReplaceStream { partition, stream } = &plan else {
            panic!("{plan:?}")
        };
        assert_eq!(*partition, PartitionId(1));
        assert_eq!(stream.acceptors, nodes(&[1, 2, 3]), "the replicas");
        assert!(stream.learners.is_empty());
        assert_eq!(stream.stream, StreamId(5), "a stream id never used");
        let next = plan.apply(&map, 0).expect("the plan applies to its map");
        assert_eq!(next.partitions[&PartitionId(1)].replicas, nodes(&[1, 2, 3]));
        // Then p2, which lost node 5 as a replica, moves as before.
        assert!(matches!(
            next_repair(&next, &live, [], sync(&next)),
            Some(Reconfiguration::Move {
                partition: PartitionId(2),
                ..
            })
        ));
        // With node 5 live, the stream stays as configured.
        let all = nodes(&[1, 2, 3, 4, 5]);
        assert_eq!(next_repair(&map, &all, [], acceptors), None);
    }

    #[test]
    fn thesis_4_2_a_removed_acceptor_of_the_global_stream_is_replaced() {
        let map = five_nodes();
        let members = nodes(&[1, 2, 3, 4, 5, 6]);
        let global = |live: &[NodeId]| {
            let acceptors = nodes(&[1, 2, 3]);
            let current = GlobalStreamNow {
                storage: StorageMode::SyncDurable,
                acceptors: &acceptors,
                members: &members,
            };
            next_global_repair(&map, live, [], current, &[])
        };
        // Every acceptor live: nothing to do.
        assert_eq!(global(&nodes(&[1, 2, 3, 4, 5])), None);
        // Node 2 removed (it still runs p1 and p3), node 6 (a spare,
        // replicating nothing) removed too: 4, the lowest live member,
        // takes 2's vote; 2 stays a learner (its replicas still merge the
        // global stream), 6 goes.
        let plan = global(&nodes(&[1, 3, 4, 5])).expect("the global stream needs a repair");
        let Reconfiguration::ReplaceGlobalStream { stream } = &plan else {
            panic!("{plan:?}")
        };
        assert_eq!(stream.acceptors, nodes(&[1, 3, 4]));
        assert_eq!(stream.learners, nodes(&[2, 5]));
        assert_eq!(stream.stream, StreamId(5), "a stream id never used");
        let next = plan.apply(&map, 0).expect("the plan applies to its map");
        assert_eq!(next.global_stream, StreamId(5));
        // Two live members cannot make three acceptors: it stays.
        assert_eq!(global(&nodes(&[1, 3])), None);
    }

    #[test]
    fn sconekv_2_a_joined_member_is_made_a_learner_of_a_new_global_stream() {
        let map = five_nodes();
        let members = nodes(&[1, 2, 3, 4, 5]);
        let acceptors = nodes(&[1, 2, 3]);
        let live = nodes(&[1, 2, 3, 4, 5]);
        let global = |joined: &[NodeId]| {
            let current = GlobalStreamNow {
                storage: StorageMode::SyncDurable,
                acceptors: &acceptors,
                members: &members,
            };
            next_global_repair(&map, &live, [], current, joined)
        };
        assert_eq!(global(&[]), None);
        assert_eq!(global(&nodes(&[5])), None, "5 runs it already");
        let plan = global(&nodes(&[7])).expect("node 7 joined");
        let Reconfiguration::ReplaceGlobalStream { stream } = &plan else {
            panic!("{plan:?}")
        };
        assert_eq!(stream.acceptors, acceptors, "the acceptors stay");
        assert_eq!(stream.learners, nodes(&[4, 5, 7]));
    }
}
