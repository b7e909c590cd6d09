//! Changes of the partitioning at run time (thesis §4.5 and §4.7.4-4.7.5;
//! DMap §IV-C): splitting a partition onto a new replica group with its
//! own stream, merging two partitions, replacing a partition's stream
//! (its acceptors) by a new one, and replacing the global stream.
//!
//! A reconfiguration is a command of the global stream ordered as a
//! *barrier* ([`amulet_types`]'s stream merges stop at the start of the
//! round after it until the replica's runtime releases them). Executing it
//! only validates it and records it as pending; it takes effect at the
//! barrier's fence, where every replica of every partition has executed
//! exactly the same commands: the partition map changes there, a split
//! partition's replicas fork the new partition's replicas from their own
//! state, and the merges gain and lose streams, all at one point of the
//! order. Commands ordered between the barrier and the fence are judged by
//! the old map, so none can involve a partition that does not exist yet.

use crate::map_error::{InvalidMap, PartitionMapError};
use crate::partition_map::{Layout, PartitionInfo, PartitionMap};
use amulet_types::{MapVersion, NodeId, PartitionId, StorageMode, StreamId};
use bytes::Bytes;
use serde::{Deserialize, Serialize};

/// A stream created by a reconfiguration: who accepts, who else learns,
/// how acceptors store, and (set at the fence) its base merge position.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StreamSpec {
    /// The new stream's id, never used before in the cluster.
    pub stream: StreamId,
    /// Its acceptors (an odd number).
    pub acceptors: Vec<NodeId>,
    /// Nodes that learn it without accepting.
    pub learners: Vec<NodeId>,
    /// Acceptor storage.
    pub storage: StorageMode,
    /// Merge position of the stream's instance 0: the fence's round times
    /// M, set when the reconfiguration takes effect (0 until then).
    pub base_position: u64,
}

impl StreamSpec {
    /// Acceptors and learners, sorted.
    pub fn members(&self) -> Vec<NodeId> {
        let mut members: Vec<NodeId> = self
            .acceptors
            .iter()
            .chain(&self.learners)
            .copied()
            .collect();
        members.sort();
        members.dedup();
        members
    }
}

/// A change of the partitioning.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Reconfiguration {
    /// Splits `source`: the part of its token-ring segment that contains
    /// `at_token` from `at_token` on, and in each named range keyspace the
    /// part of its range that contains the key from the key on, move to
    /// partition `new`, replicated by `source`'s replicas and ordered by the
    /// new stream `stream`.
    Split {
        /// The partition split.
        source: PartitionId,
        /// The new partition.
        new: PartitionId,
        /// The new partition's stream.
        stream: StreamSpec,
        /// Where the hash keyspaces' tokens are cut; `None`: they stay.
        at_token: Option<u32>,
        /// Where range keyspaces are cut: `(keyspace, first key moved)`.
        at_keys: Vec<(String, Bytes)>,
    },
    /// Merges `source` into `into` (replicated by the same nodes): every key
    /// of `source` belongs to `into` from the fence on, and `source` and its
    /// stream are retired.
    Merge {
        /// The partition that disappears.
        source: PartitionId,
        /// The partition that takes its keys.
        into: PartitionId,
    },
    /// Replaces `partition`'s stream by the new stream `stream` (other
    /// acceptors: thesis §4.2 "Reconfiguration"); the old one is retired.
    ReplaceStream {
        /// The partition.
        partition: PartitionId,
        /// The new stream.
        stream: StreamSpec,
    },
    /// Moves `partition` to the replica group `replicas` (other nodes, in
    /// part or whole) ordered by the new stream `stream`; the old stream is
    /// retired. At the fence the replicas that stay and the ones that go
    /// join the new stream (every one of both is its member); a node of
    /// the new group that had no replica fetches a peer's checkpoint taken
    /// past the fence (DMap §III-C state transfer); a node that goes keeps
    /// its replica, serving checkpoints, until a majority of the new group
    /// holds durable ones, then drops it.
    Move {
        /// The partition.
        partition: PartitionId,
        /// Its replicas from the fence on; each one already replicates
        /// some partition (so it executes the move at its own fence).
        replicas: Vec<NodeId>,
        /// The new stream: its members are the old and the new replicas.
        stream: StreamSpec,
    },
    /// Replaces the global stream by the new stream `stream` (thesis §4.2
    /// "Reconfiguration", for the stream every partition merges): at the
    /// fence every replica's merge drops the old global stream and merges
    /// the new one from its base position, all at the same round (every
    /// merge takes the global stream from the same base), so the global
    /// order is the old stream up to the barrier and the new one after
    /// it. The old stream is retired. Every replica of every partition,
    /// and every node a partition is still handed off from, learns the
    /// new stream (the latter added from the map, as for a move).
    ReplaceGlobalStream {
        /// The new global stream.
        stream: StreamSpec,
    },
}

impl Reconfiguration {
    /// Whether `partition`'s replicas do more at the fence than take the
    /// new map (the partitions split, merged or given a new stream).
    pub fn involves(&self, partition: PartitionId) -> bool {
        match self {
            Reconfiguration::Split { source, new, .. } => partition == *source || partition == *new,
            Reconfiguration::Merge { source, into } => partition == *source || partition == *into,
            Reconfiguration::ReplaceStream { partition: p, .. }
            | Reconfiguration::Move { partition: p, .. } => partition == *p,
            // Every partition merges the global stream.
            Reconfiguration::ReplaceGlobalStream { .. } => true,
        }
    }

    /// The stream the change creates, if any.
    pub fn new_stream(&self) -> Option<&StreamSpec> {
        match self {
            Reconfiguration::Split { stream, .. }
            | Reconfiguration::ReplaceStream { stream, .. }
            | Reconfiguration::Move { stream, .. }
            | Reconfiguration::ReplaceGlobalStream { stream } => Some(stream),
            Reconfiguration::Merge { .. } => None,
        }
    }

    /// The partition map after the change, with `base_position` recorded
    /// for the new stream; the same verdict at every replica (it depends
    /// on the map alone).
    pub fn apply(
        &self,
        map: &PartitionMap,
        base_position: u64,
    ) -> Result<PartitionMap, PartitionMapError> {
        let invalid = |why: InvalidMap| Err(PartitionMapError::Invalid(why));
        let handing_off = |p: &PartitionId| map.handing_off.get(p).cloned().unwrap_or_default();
        // A split or merge waits for the hand-offs of its partitions: a
        // node a move took a partition from may hold its only state, and
        // takes no part in either (it does not fork the new partition,
        // and waits at a merge's fence for a partition it does not run).
        let splits_or_merges = match self {
            Reconfiguration::Split { source, .. } => vec![*source],
            Reconfiguration::Merge { source, into } => vec![*source, *into],
            _ => Vec::new(),
        };
        for p in splits_or_merges {
            let from = handing_off(&p);
            if !from.is_empty() {
                return invalid(InvalidMap::HandOffInProgress {
                    partition: p,
                    from: from.into_iter().collect(),
                });
            }
        }
        let mut next = map.clone();
        if let Some(spec) = self.new_stream() {
            let used = spec.stream == map.global_stream
                || map.partitions.values().any(|p| p.stream == spec.stream)
                || map.retired_streams.contains(&spec.stream)
                || map.streams.contains_key(&spec.stream);
            if used {
                return invalid(InvalidMap::StreamInUse {
                    stream: spec.stream,
                });
            }
            if spec.acceptors.is_empty() || spec.acceptors.len() % 2 == 0 {
                return invalid(InvalidMap::EvenAcceptors {
                    stream: spec.stream,
                    acceptors: spec.acceptors.len(),
                });
            }
            let mut recorded = spec.clone();
            recorded.base_position = base_position;
            // The nodes a partition is still being handed off from learn
            // its next stream too (DMap §III-C, a move ordered before the
            // previous one's new group holds the state): their replicas
            // then carry on to it at the fence and keep serving the state
            // until the newest group holds it, instead of dropping with
            // the only copy. Added here, from the map, so every replica
            // records the same stream whoever proposed the change.
            if let Reconfiguration::Move { partition, .. }
            | Reconfiguration::ReplaceStream { partition, .. } = self
            {
                let members = recorded.members();
                recorded.learners.extend(
                    handing_off(partition)
                        .into_iter()
                        .filter(|n| !members.contains(n)),
                );
            }
            // Every node a partition is handed off from still runs its
            // replica, which merges the global stream like every other.
            if let Reconfiguration::ReplaceGlobalStream { .. } = self {
                let members = recorded.members();
                let mut from: Vec<NodeId> = map
                    .handing_off
                    .values()
                    .flatten()
                    .copied()
                    .filter(|n| !members.contains(n))
                    .collect();
                from.sort();
                from.dedup();
                recorded.learners.extend(from);
            }
            next.streams.insert(spec.stream, recorded);
        }
        match self {
            Reconfiguration::Split {
                source,
                new,
                stream,
                at_token,
                at_keys,
            } => {
                let Some(info) = map.partitions.get(source) else {
                    return invalid(InvalidMap::NoPartitionToSplit(*source));
                };
                if map.partitions.contains_key(new) || map.merged.contains_key(new) {
                    return invalid(InvalidMap::PartitionExists(*new));
                }
                if !stream.members().iter().all(|n| info.replicas.contains(n))
                    || !info.replicas.iter().all(|n| stream.members().contains(n))
                {
                    return invalid(InvalidMap::SplitStreamMembers {
                        partition: *source,
                        replicas: info.replicas.clone(),
                    });
                }
                if at_token.is_none() && at_keys.is_empty() {
                    return invalid(InvalidMap::SplitMovesNothing);
                }
                next.partitions.insert(
                    *new,
                    PartitionInfo {
                        stream: stream.stream,
                        replicas: info.replicas.clone(),
                    },
                );
                if let Some(token) = at_token {
                    let at = next.token_ring.partition_point(|e| e.0 <= *token);
                    let (start, owner) = next.token_ring[at - 1];
                    if owner != *source || start == *token {
                        return invalid(InvalidMap::TokenOutsideSegment {
                            token: *token,
                            partition: *source,
                            owner,
                        });
                    }
                    next.token_ring.insert(at, (*token, *new));
                }
                for (keyspace, key) in at_keys {
                    let Some(Layout::Range(ranges)) = next.keyspaces.get_mut(keyspace) else {
                        return invalid(InvalidMap::NotARangeKeyspace(keyspace.clone()));
                    };
                    let at = ranges.partition_point(|r| r.0 <= *key);
                    let (start, owner) = ranges[at - 1].clone();
                    if owner != *source || start == *key {
                        return invalid(InvalidMap::KeyOutsideRange {
                            keyspace: keyspace.clone(),
                            key: key.clone(),
                            partition: *source,
                        });
                    }
                    ranges.insert(at, (key.clone(), *new));
                }
            }
            Reconfiguration::Merge { source, into } => {
                let (Some(from), Some(to)) = (map.partitions.get(source), map.partitions.get(into))
                else {
                    return invalid(InvalidMap::MergeUnknownPartition {
                        from: *source,
                        into: *into,
                    });
                };
                if source == into {
                    return invalid(InvalidMap::MergeIntoItself);
                }
                let mut a = from.replicas.clone();
                let mut b = to.replicas.clone();
                a.sort();
                b.sort();
                if a != b {
                    return invalid(InvalidMap::MergeReplicasDiffer {
                        from: *source,
                        into: *into,
                    });
                }
                next.partitions.remove(source);
                next.retired_streams.insert(from.stream);
                next.merged.insert(*source, *into);
                for entry in next.token_ring.iter_mut() {
                    if entry.1 == *source {
                        entry.1 = *into;
                    }
                }
                // Neighbouring segments of one owner become one.
                next.token_ring
                    .dedup_by(|later, earlier| later.1 == earlier.1);
                for layout in next.keyspaces.values_mut() {
                    if let Layout::Range(ranges) = layout {
                        for range in ranges.iter_mut() {
                            if range.1 == *source {
                                range.1 = *into;
                            }
                        }
                        ranges.dedup_by(|later, earlier| later.1 == earlier.1);
                    }
                }
            }
            Reconfiguration::ReplaceStream { partition, stream } => {
                let Some(info) = next.partitions.get_mut(partition) else {
                    return invalid(InvalidMap::NoPartition(*partition));
                };
                let members = stream.members();
                if !info.replicas.iter().all(|n| members.contains(n)) {
                    return invalid(InvalidMap::ReplicasMustLearn {
                        partition: *partition,
                        replicas: info.replicas.clone(),
                    });
                }
                let old = std::mem::replace(&mut info.stream, stream.stream);
                next.retired_streams.insert(old);
            }
            Reconfiguration::Move {
                partition,
                replicas,
                stream,
            } => {
                let Some(info) = next.partitions.get_mut(partition) else {
                    return invalid(InvalidMap::NoPartition(*partition));
                };
                let mut group = replicas.clone();
                group.sort();
                group.dedup();
                if group.len() != replicas.len() || group.is_empty() {
                    return invalid(InvalidMap::MoveReplicasNotDistinct {
                        partition: *partition,
                        replicas: replicas.clone(),
                    });
                }
                let members = stream.members();
                if !info
                    .replicas
                    .iter()
                    .chain(replicas)
                    .all(|n| members.contains(n))
                {
                    return invalid(InvalidMap::MoveMembersMustLearn {
                        partition: *partition,
                        old: info.replicas.clone(),
                        new: replicas.clone(),
                    });
                }
                // A node that replicates nothing may be given the
                // partition: it learns this map from its peers' probes
                // (docs/membership.md, "Maps for a node without a
                // replica"). Whether it learns the global stream is not
                // in the map: the node that takes the request judges it
                // by its own configuration (`InvalidMap::MoveToIdleNode`,
                // amulet-host's edge).
                // Every node the partition leaves, and every one it was
                // still leaving, is handed off from until it says it
                // holds nothing (`Body::HandedOff`).
                let mut from = handing_off(partition);
                from.extend(info.replicas.iter().copied());
                from.retain(|n| !replicas.contains(n));
                if from.is_empty() {
                    next.handing_off.remove(partition);
                } else {
                    next.handing_off.insert(*partition, from);
                }
                info.replicas = replicas.clone();
                let old = std::mem::replace(&mut info.stream, stream.stream);
                next.retired_streams.insert(old);
            }
            Reconfiguration::ReplaceGlobalStream { stream } => {
                let members = stream.members();
                if let Some((partition, info)) = map
                    .partitions
                    .iter()
                    .find(|(_, info)| !info.replicas.iter().all(|n| members.contains(n)))
                {
                    return invalid(InvalidMap::ReplicasMustLearn {
                        partition: *partition,
                        replicas: info.replicas.clone(),
                    });
                }
                let old = std::mem::replace(&mut next.global_stream, stream.stream);
                next.retired_streams.insert(old);
            }
        }
        next.validate()?;
        next.version = MapVersion(map.version.0 + 1);
        Ok(next)
    }
}

#[cfg(test)]
mod tests;
