//! A node's work at a barrier's fence (see [`crate::Reconfiguration`]):
//! shared by the node runtime and the simulator, so both reconfigure
//! exactly alike.
//!
//! A merge group of the node (one per replica, numbered by partition)
//! that stops at a fence waits until its replica has executed everything
//! delivered before it; then the replica applies the pending
//! reconfiguration ([`Replica::at_fence`]) and the node does what it says:
//! opens the new stream if it is a member, forks the new partition's
//! replica and merge group (split), swaps the group's stream (stream
//! replacement), moves a merged partition's state into the partition it
//! merges into, retires streams no group merges any more, and releases
//! the fence. Every replica does this at the same point of the order.

use crate::{
    FenceWork, PartitionMap, Reconfiguration, Replica, ReplicaConfig, StateMachine, StreamSpec,
};
use amulet_multicast::{GroupId, MergePosition, MulticastNode};
use amulet_storage::AcceptorLog;
use amulet_types::{NodeId, PartitionId, StreamConfig, StreamId, TimeMicros};
use std::collections::BTreeMap;

/// The merge group of a partition's replica.
pub fn group_of(partition: PartitionId) -> GroupId {
    GroupId(partition.0)
}

/// What the fences' work changed at the node.
#[derive(Default)]
pub struct FenceDone {
    /// Streams the node became a member of.
    pub created: Vec<StreamId>,
    /// Partitions whose replica was created here (split off), with their
    /// merge's position at the fork: with the replica's checkpoint (taken
    /// before it executes anything) the new partition's first checkpoint.
    pub added: Vec<(PartitionId, MergePosition)>,
    /// Partitions whose replica was removed here (merged away).
    pub removed: Vec<PartitionId>,
    /// Partitions that took a merged partition's state in, with their
    /// merge's position right after: their checkpoint must be written
    /// before the merged partition's is removed (a restart from an older
    /// one would wait at the merge's fence for a partition that is gone).
    pub absorbed: Vec<(PartitionId, MergePosition)>,
    /// Fences released.
    pub released: usize,
}

/// How the node opens what a reconfiguration creates.
pub struct FenceHost<'a, S> {
    /// This node.
    pub me: NodeId,
    /// Its incarnation.
    pub incarnation: u32,
    /// A fresh service state (configured, empty) to restore into.
    pub new_state: &'a dyn Fn() -> S,
    /// The configuration of a stream created at run time.
    pub stream_config: &'a dyn Fn(&StreamSpec) -> StreamConfig,
    /// Opens (creating, or reopening after a restart) a stream's log.
    pub open_log: &'a mut dyn FnMut(&StreamConfig) -> Box<dyn AcceptorLog>,
    /// Now.
    pub now: TimeMicros,
}

/// Does the work of every group of `node` stopped at a fence whose
/// replica is idle (a merge waits for both of its partitions).
pub fn work_fences<S: StateMachine>(
    node: &mut MulticastNode,
    replicas: &mut BTreeMap<PartitionId, Replica<S>>,
    host: &mut FenceHost<'_, S>,
) -> FenceDone {
    let mut done = FenceDone::default();
    drop_merged_orphans(node, replicas, &mut done);
    if let Some(map) = replicas
        .values()
        .map(Replica::map)
        .max_by_key(|m| m.version)
    {
        for stream in &map.retired_streams {
            node.retire_stream(*stream);
        }
    }
    let m = node.instances_per_round();
    let fenced: Vec<(PartitionId, u64)> = replicas
        .keys()
        .filter_map(|p| node.fenced(group_of(*p)).map(|round| (*p, round)))
        .collect();
    for (partition, round) in fenced {
        let Some(replica) = replicas.get(&partition) else {
            continue; // removed by a merge handled in this pass
        };
        if node.fenced(group_of(partition)) != Some(round) {
            // Released in this pass already: a merge's `into` partition
            // after its `source` (`merge` released it). Releasing lets the
            // merge go on to its next fence at once, when that barrier is
            // delivered already; working this one again there released
            // that fence before the replica had executed the command it
            // stands for (simulator seed 2001189: p4 merged p3 in and
            // skipped the fence of p1's next stream replacement, so it
            // kept the old map, refused the split after it as stale, and
            // p1 and p5 waited for its signals for good).
            continue;
        }
        if !replica.is_idle() {
            continue;
        }
        if let Some(Reconfiguration::Merge { source, into }) = replica
            .pending_reconfiguration()
            .filter(|r| r.involves(partition))
        {
            let (source, into) = (*source, *into);
            let ready = |p: PartitionId| {
                node.fenced(group_of(p)) == Some(round)
                    && replicas.get(&p).is_some_and(Replica::is_idle)
            };
            if ready(source) && ready(into) {
                merge(node, replicas, source, into, round * m, &mut done);
                ensure_streams(node, replicas, host, &mut done);
            }
            continue;
        }
        let replica = replicas.get_mut(&partition).expect("listed above");
        let work = replica.at_fence(round * m);
        ensure_streams(node, replicas, host, &mut done);
        let group = group_of(partition);
        match work {
            FenceWork::Nothing | FenceWork::MapChanged => {}
            FenceWork::Split { new, .. } if replicas.contains_key(&new) => {
                // Restored from the checkpoint written at the fork, while
                // the source replays up to it again: nothing to fork.
            }
            FenceWork::Split { stream, .. } if !stream.members().contains(&host.me) => {
                // The source was moved away from here and is still being
                // handed off: its new group forks the new partition.
            }
            FenceWork::Split {
                new,
                checkpoint,
                stream,
            } => {
                // Replaying to this fence, the stream may be retired in a
                // newer map already (the new partition merged away since).
                if open_stream(node, &stream, host) {
                    done.created.push(stream.stream);
                }
                let own = replicas[&partition].stream();
                let position = node
                    .fork_at_fence(group, group_of(new), &[own], &[(stream.stream, None)])
                    .expect("a fenced group forks onto a stream the node just opened");
                let config = ReplicaConfig::new(host.me, host.incarnation, new);
                let replica = Replica::restore(config, *checkpoint, (host.new_state)())
                    .expect("the split's checkpoint is of the new partition");
                replicas.insert(new, replica);
                done.added.push((new, position));
            }
            FenceWork::ReplaceStream { new, .. } if !new.members().contains(&host.me) => {
                // Not a member of the partition's new stream, yet running
                // it: the stream leaves out nodes the partition is still
                // being handed off from only in maps made before
                // `PartitionMap::handing_off` (checkpoint format 7 and
                // older), whose second move could drop the only copy here
                // (docs/ARCHITECTURE.md, moves). A map of this build lists
                // every such node as a learner of the new stream.
                replicas.remove(&partition);
                node.remove_group(group);
                done.removed.push(partition);
                done.released += 1;
                continue;
            }
            FenceWork::ReplaceStream { old, new } => {
                if open_stream(node, &new, host) {
                    done.created.push(new.stream);
                }
                node.reconfigure_at_fence(group, &[old], &[(new.stream, None)])
                    .expect("a fenced group takes a stream the node just opened");
            }
            FenceWork::Absorb { .. } | FenceWork::Retire { .. } => {
                unreachable!("merges are handled in pairs above")
            }
        }
        node.release_fence(group);
        done.released += 1;
    }
    done
}

/// Removes the replicas of partitions merged away whose `into` partition
/// here is already past the merge (it installed a peer's checkpoint taken
/// after it, which holds the merged partition's state): they would wait
/// for `into` at the merge's fence forever, and hold their streams'
/// learners back.
fn drop_merged_orphans<S: StateMachine>(
    node: &mut MulticastNode,
    replicas: &mut BTreeMap<PartitionId, Replica<S>>,
    done: &mut FenceDone,
) {
    let orphans: Vec<PartitionId> = replicas
        .keys()
        .copied()
        .filter(|p| {
            replicas.values().any(|r| {
                r.map().merged.get(p).is_some_and(|into| {
                    // `into` past the merge records it itself: an `into`
                    // merely behind (its map older than the split that
                    // made `p`) holds no `p` either, and dropping `p` then
                    // left `into` waiting at the merge's fence for a
                    // partition gone from every node (simulator seed
                    // 10310, txn mode).
                    replicas.get(into).is_some_and(|i| {
                        i.map().merged.get(p) == Some(into) && !i.map().partitions.contains_key(p)
                    })
                })
            })
        })
        .collect();
    for orphan in orphans {
        replicas.remove(&orphan);
        node.remove_group(group_of(orphan));
        done.removed.push(orphan);
        done.released += 1;
    }
}

/// Partition `source` merges into `into`: both replicas apply the map
/// change, `into` takes `source`'s state, `source` goes.
fn merge<S: StateMachine>(
    node: &mut MulticastNode,
    replicas: &mut BTreeMap<PartitionId, Replica<S>>,
    source: PartitionId,
    into: PartitionId,
    base_position: u64,
    done: &mut FenceDone,
) {
    let retired = replicas
        .get_mut(&source)
        .expect("checked")
        .at_fence(base_position);
    let FenceWork::Retire { checkpoint, .. } = retired else {
        unreachable!("the merged partition retires");
    };
    let kept = replicas.get_mut(&into).expect("checked");
    let absorb = kept.at_fence(base_position);
    assert!(matches!(absorb, FenceWork::Absorb { .. }));
    kept.absorb(*checkpoint);
    replicas.remove(&source);
    node.remove_group(group_of(source));
    let mut position = node
        .group_position(group_of(into))
        .expect("a merge fenced with its replica idle is between deliveries");
    position.fence = None; // the fence's work is done
    done.absorbed.push((into, position));
    node.release_fence(group_of(into));
    done.removed.push(source);
    done.released += 1;
}

/// Opens every run-time stream of the replicas' maps this node is a
/// member of and does not have yet.
fn ensure_streams<S: StateMachine>(
    node: &mut MulticastNode,
    replicas: &BTreeMap<PartitionId, Replica<S>>,
    host: &mut FenceHost<'_, S>,
    done: &mut FenceDone,
) {
    if let Some(map) = newest_map(replicas) {
        done.created.extend(open_streams(node, &map, host));
    }
}

/// Opens `spec`'s stream if the node does not have it.
/// Opens `spec`'s stream on `node` with a log from `host`, unless it is
/// open already. Whether it was opened now.
pub fn open_stream<S>(
    node: &mut MulticastNode,
    spec: &StreamSpec,
    host: &mut FenceHost<'_, S>,
) -> bool {
    if node.streams().contains_key(&spec.stream) {
        return false;
    }
    let config = (host.stream_config)(spec);
    let log = (host.open_log)(&config);
    node.add_stream(config, log, host.now).is_ok()
}

/// Opens every stream created at run time in `map` that this node is a
/// member of and does not have (after a restart, or before installing a
/// peer's checkpoint taken past a reconfiguration); returns them.
pub fn open_streams<S>(
    node: &mut MulticastNode,
    map: &PartitionMap,
    host: &mut FenceHost<'_, S>,
) -> Vec<StreamId> {
    let mut opened = Vec::new();
    for spec in map.streams.values() {
        if map.retired_streams.contains(&spec.stream)
            || node.streams().contains_key(&spec.stream)
            || !spec.members().contains(&host.me)
        {
            continue;
        }
        let config = (host.stream_config)(spec);
        let log = (host.open_log)(&config);
        if node.add_stream(config, log, host.now).is_ok() {
            opened.push(spec.stream);
        }
    }
    opened
}

/// The newest partition map among a node's replicas.
pub fn newest_map<S: StateMachine>(
    replicas: &BTreeMap<PartitionId, Replica<S>>,
) -> Option<PartitionMap> {
    replicas
        .values()
        .map(Replica::map)
        .max_by_key(|m| m.version)
        .cloned()
}
