//! Changes of the partitioning at run time (thesis §4.5 and §4.7.4-4.7.5;
//! DMap §IV-C): splitting a partition onto a new replica group with its
//! own stream, merging two partitions, and replacing a partition's stream
//! (its acceptors) by a new one.
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
        }
    }

    /// The stream the change creates, if any.
    pub fn new_stream(&self) -> Option<&StreamSpec> {
        match self {
            Reconfiguration::Split { stream, .. }
            | Reconfiguration::ReplaceStream { stream, .. }
            | Reconfiguration::Move { stream, .. } => Some(stream),
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
                // A node with no replica executes nothing of the global
                // stream and would never learn it was given one.
                let hosting = map.hosting_nodes();
                if let Some(idle) = replicas.iter().find(|n| !hosting.contains(n)) {
                    return invalid(InvalidMap::MoveToIdleNode(*idle));
                }
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
        }
        next.validate()?;
        next.version = MapVersion(map.version.0 + 1);
        Ok(next)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::partition_map::Keys;
    use crate::Placement;
    use std::collections::BTreeSet;

    fn map() -> PartitionMap {
        let info = |s| PartitionInfo {
            stream: StreamId(s),
            replicas: vec![NodeId(1), NodeId(2), NodeId(3)],
        };
        let mut map = PartitionMap::uniform(
            StreamId(1),
            vec![(PartitionId(1), info(2)), (PartitionId(2), info(3))],
        );
        map.create_keyspace("h", Layout::Hash).unwrap();
        map.create_keyspace(
            "r",
            Layout::Range(vec![
                (Bytes::new(), PartitionId(1)),
                (Bytes::from_static(b"m"), PartitionId(2)),
            ]),
        )
        .unwrap();
        map
    }

    fn spec(stream: u32) -> StreamSpec {
        StreamSpec {
            stream: StreamId(stream),
            acceptors: vec![NodeId(1), NodeId(2), NodeId(3)],
            learners: vec![],
            storage: StorageMode::Memory,
            base_position: 0,
        }
    }

    #[test]
    fn thesis_4_7_4_a_split_moves_part_of_a_segment_and_of_a_range() {
        let m = map();
        let split = Reconfiguration::Split {
            source: PartitionId(1),
            new: PartitionId(3),
            stream: spec(4),
            at_token: Some(1 << 30),
            at_keys: vec![("r".into(), Bytes::from_static(b"g"))],
        };
        let next = split.apply(&m, 77).unwrap();
        assert_eq!(next.version.0, m.version.0 + 1);
        assert_eq!(next.partitions[&PartitionId(3)].stream, StreamId(4));
        assert_eq!(next.streams[&StreamId(4)].base_position, 77);
        assert_eq!(
            next.token_ring,
            vec![
                (0, PartitionId(1)),
                (1 << 30, PartitionId(3)),
                (1 << 31, PartitionId(2))
            ]
        );
        assert_eq!(next.partition_of("r", b"a").unwrap(), PartitionId(1));
        assert_eq!(next.partition_of("r", b"h").unwrap(), PartitionId(3));
        assert_eq!(next.partition_of("r", b"z").unwrap(), PartitionId(2));
        let all = Placement {
            keyspace: Some("h".into()),
            keys: Keys::All,
        };
        assert_eq!(next.partitions_for(&all).unwrap().len(), 3);
    }

    #[test]
    fn thesis_4_7_5_a_stream_replaced_is_retired_and_never_reused() {
        let m = map();
        let replace = Reconfiguration::ReplaceStream {
            partition: PartitionId(2),
            stream: spec(9),
        };
        let next = replace.apply(&m, 5).unwrap();
        assert_eq!(next.partitions[&PartitionId(2)].stream, StreamId(9));
        assert!(next.retired_streams.contains(&StreamId(3)));
        let again = Reconfiguration::ReplaceStream {
            partition: PartitionId(1),
            stream: spec(3),
        };
        assert_eq!(
            again.apply(&next, 6),
            Err(InvalidMap::StreamInUse {
                stream: StreamId(3)
            }
            .into()),
            "a retired stream id is refused"
        );
    }

    #[test]
    fn allocated_stream_and_partition_ids_are_never_ones_used_before() {
        let m = map();
        let first = m.next_stream_id([]);
        let replace = Reconfiguration::ReplaceStream {
            partition: PartitionId(2),
            stream: spec(first.0),
        };
        let next = replace.apply(&m, 5).unwrap();
        // The retired stream and the new one are both above the next id.
        let second = next.next_stream_id([]);
        assert!(second > first && !next.retired_streams.contains(&second));
        assert_eq!(
            next.next_stream_id([StreamId(40)]),
            StreamId(41),
            "configured-only streams count"
        );
        let again = Reconfiguration::ReplaceStream {
            partition: PartitionId(1),
            stream: spec(second.0),
        };
        assert!(again.apply(&next, 6).is_ok(), "an allocated id is accepted");
        let merge = Reconfiguration::Merge {
            source: PartitionId(2),
            into: PartitionId(1),
        };
        let merged = merge.apply(&next, 7).unwrap();
        assert_eq!(
            merged.next_partition_id(),
            next.next_partition_id(),
            "a merged id is not reused"
        );
    }

    /// `map()` with partitions 7 on nodes 4-6 and 8 on nodes 7-9, so moves
    /// have places to go.
    fn nine_nodes() -> PartitionMap {
        let mut m = map();
        for (p, first) in [(7, 4), (8, 7)] {
            m.partitions.insert(
                PartitionId(p),
                PartitionInfo {
                    stream: StreamId(p + 10),
                    replicas: (first..first + 3).map(NodeId).collect(),
                },
            );
        }
        m
    }

    fn move_to(partition: u32, to: [u32; 3], stream: u32, learners: &[u32]) -> Reconfiguration {
        Reconfiguration::Move {
            partition: PartitionId(partition),
            replicas: to.iter().copied().map(NodeId).collect(),
            stream: StreamSpec {
                acceptors: to.iter().copied().map(NodeId).collect(),
                learners: learners.iter().copied().map(NodeId).collect(),
                ..spec(stream)
            },
        }
    }

    fn nodes(ids: &[u32]) -> BTreeSet<NodeId> {
        ids.iter().copied().map(NodeId).collect()
    }

    #[test]
    fn dmap_iii_c_a_second_move_before_the_hand_off_keeps_the_first_one_s_leavers_in_its_stream() {
        // p1 moves from 1-3 to 4-6, then, before any report that 1-3 hold
        // nothing, on to 7-9: 1-3 may hold its only state, so they learn
        // the second move's stream too (whoever proposed it left them out)
        // and their replicas carry on to it at its fence.
        let m = nine_nodes();
        let first = move_to(1, [4, 5, 6], 30, &[1, 2, 3]).apply(&m, 5).unwrap();
        assert_eq!(first.handing_off[&PartitionId(1)], nodes(&[1, 2, 3]));
        let second = move_to(1, [7, 8, 9], 31, &[4, 5, 6])
            .apply(&first, 9)
            .unwrap();
        assert_eq!(
            second.streams[&StreamId(31)].members(),
            (1..=9).map(NodeId).collect::<Vec<_>>(),
            "the first move's leavers learn the second stream"
        );
        assert_eq!(
            second.handing_off[&PartitionId(1)],
            nodes(&[1, 2, 3, 4, 5, 6])
        );
        // A stream replacement keeps them too; a move back to a leaver
        // takes it out of the set.
        let replaced = Reconfiguration::ReplaceStream {
            partition: PartitionId(1),
            stream: StreamSpec {
                acceptors: vec![NodeId(7), NodeId(8), NodeId(9)],
                ..spec(32)
            },
        }
        .apply(&second, 12)
        .unwrap();
        assert_eq!(
            replaced.streams[&StreamId(32)].members(),
            (1..=9).map(NodeId).collect::<Vec<_>>()
        );
        let back = move_to(1, [1, 2, 7], 33, &[8, 9])
            .apply(&replaced, 14)
            .unwrap();
        assert_eq!(
            back.handing_off[&PartitionId(1)],
            nodes(&[3, 4, 5, 6, 8, 9])
        );
    }

    #[test]
    fn dmap_iii_c_a_split_or_merge_waits_for_the_hand_off() {
        let m = nine_nodes();
        let moved = move_to(1, [4, 5, 6], 30, &[1, 2, 3]).apply(&m, 5).unwrap();
        let in_progress = Err(InvalidMap::HandOffInProgress {
            partition: PartitionId(1),
            from: vec![NodeId(1), NodeId(2), NodeId(3)],
        }
        .into());
        let split = Reconfiguration::Split {
            source: PartitionId(1),
            new: PartitionId(9),
            stream: StreamSpec {
                acceptors: vec![NodeId(4), NodeId(5), NodeId(6)],
                ..spec(31)
            },
            at_token: Some(1 << 30),
            at_keys: vec![],
        };
        assert_eq!(split.apply(&moved, 7), in_progress);
        let merge = Reconfiguration::Merge {
            source: PartitionId(7),
            into: PartitionId(1),
        };
        assert_eq!(merge.apply(&moved, 7), in_progress);
        // Once every leaver reported, both are judged as before.
        let mut done = moved.clone();
        done.handing_off.clear();
        assert!(split.apply(&done, 7).is_ok());
        assert!(merge.apply(&done, 7).is_ok());
    }

    #[test]
    fn dmap_iii_c_a_move_gives_a_partition_new_replicas_and_a_new_stream() {
        let mut m = map();
        m.partitions.insert(
            PartitionId(7),
            PartitionInfo {
                stream: StreamId(7),
                replicas: vec![NodeId(2), NodeId(3), NodeId(4)],
            },
        );
        let spec = StreamSpec {
            acceptors: vec![NodeId(2), NodeId(3), NodeId(4)],
            learners: vec![NodeId(1)],
            ..spec(9)
        };
        let to = vec![NodeId(2), NodeId(3), NodeId(4)];
        let moved = Reconfiguration::Move {
            partition: PartitionId(1),
            replicas: to.clone(),
            stream: spec.clone(),
        };
        let next = moved.apply(&m, 5).unwrap();
        assert_eq!(next.partitions[&PartitionId(1)].replicas, to);
        assert_eq!(next.partitions[&PartitionId(1)].stream, StreamId(9));
        assert!(next.retired_streams.contains(&StreamId(2)));
        let not_learning = Reconfiguration::Move {
            partition: PartitionId(1),
            replicas: to.clone(),
            stream: StreamSpec {
                learners: vec![],
                ..spec.clone()
            },
        };
        assert_eq!(
            not_learning.apply(&m, 5),
            Err(InvalidMap::MoveMembersMustLearn {
                partition: PartitionId(1),
                old: vec![NodeId(1), NodeId(2), NodeId(3)],
                new: to.clone(),
            }
            .into()),
            "node 1 must learn it"
        );
        let idle = Reconfiguration::Move {
            partition: PartitionId(1),
            replicas: vec![NodeId(2), NodeId(3), NodeId(5)],
            stream: StreamSpec {
                learners: vec![NodeId(1), NodeId(5)],
                ..spec.clone()
            },
        };
        assert_eq!(
            idle.apply(&m, 5),
            Err(InvalidMap::MoveToIdleNode(NodeId(5)).into()),
            "node 5 hosts nothing"
        );
        let twice = Reconfiguration::Move {
            partition: PartitionId(1),
            replicas: vec![NodeId(2), NodeId(2), NodeId(3)],
            stream: spec,
        };
        assert_eq!(
            twice.apply(&m, 5),
            Err(InvalidMap::MoveReplicasNotDistinct {
                partition: PartitionId(1),
                replicas: vec![NodeId(2), NodeId(2), NodeId(3)],
            }
            .into())
        );
    }

    #[test]
    fn a_merge_gives_every_key_to_the_partition_merged_into() {
        let m = map();
        let merge = Reconfiguration::Merge {
            source: PartitionId(2),
            into: PartitionId(1),
        };
        let next = merge.apply(&m, 0).unwrap();
        assert!(!next.partitions.contains_key(&PartitionId(2)));
        assert_eq!(next.token_ring, vec![(0, PartitionId(1))]);
        assert_eq!(next.partition_of("r", b"z").unwrap(), PartitionId(1));
        assert!(next.retired_streams.contains(&StreamId(3)));
    }

    #[test]
    fn bad_reconfigurations_are_refused_and_change_nothing() {
        let m = map();
        let cut =
            |source: u32, new: u32, stream: StreamSpec, at_token, at_keys| Reconfiguration::Split {
                source: PartitionId(source),
                new: PartitionId(new),
                stream,
                at_token,
                at_keys,
            };
        let split =
            |source, new, stream, at_token| cut(source, new, spec(stream), at_token, vec![]);
        let three = vec![NodeId(1), NodeId(2), NodeId(3)];
        let bad = [
            (
                split(9, 3, 4, Some(5)),
                InvalidMap::NoPartitionToSplit(PartitionId(9)),
            ),
            (
                split(1, 2, 4, Some(5)),
                InvalidMap::PartitionExists(PartitionId(2)),
            ),
            (
                split(1, 3, 2, Some(5)),
                InvalidMap::StreamInUse {
                    stream: StreamId(2),
                },
            ),
            (
                // Starts partition 2's segment.
                split(1, 3, 4, Some(1 << 31)),
                InvalidMap::TokenOutsideSegment {
                    token: 1 << 31,
                    partition: PartitionId(1),
                    owner: PartitionId(2),
                },
            ),
            (
                split(1, 3, 4, Some(0)),
                InvalidMap::TokenOutsideSegment {
                    token: 0,
                    partition: PartitionId(1),
                    owner: PartitionId(1),
                },
            ),
            (split(1, 3, 4, None), InvalidMap::SplitMovesNothing),
            (
                cut(
                    1,
                    3,
                    spec(4),
                    None,
                    vec![("h".into(), Bytes::from_static(b"k"))],
                ),
                InvalidMap::NotARangeKeyspace("h".into()),
            ),
            (
                cut(
                    1,
                    3,
                    spec(4),
                    None,
                    vec![("r".into(), Bytes::from_static(b"p"))],
                ),
                InvalidMap::KeyOutsideRange {
                    keyspace: "r".into(),
                    key: Bytes::from_static(b"p"),
                    partition: PartitionId(1),
                },
            ),
            (
                cut(
                    1,
                    3,
                    StreamSpec {
                        acceptors: vec![NodeId(1)],
                        ..spec(4)
                    },
                    Some(5),
                    vec![],
                ),
                InvalidMap::SplitStreamMembers {
                    partition: PartitionId(1),
                    replicas: three.clone(),
                },
            ),
            (
                Reconfiguration::Merge {
                    source: PartitionId(1),
                    into: PartitionId(1),
                },
                InvalidMap::MergeIntoItself,
            ),
            (
                Reconfiguration::Merge {
                    source: PartitionId(1),
                    into: PartitionId(9),
                },
                InvalidMap::MergeUnknownPartition {
                    from: PartitionId(1),
                    into: PartitionId(9),
                },
            ),
            (
                Reconfiguration::ReplaceStream {
                    partition: PartitionId(1),
                    stream: StreamSpec {
                        acceptors: vec![NodeId(1), NodeId(2)],
                        ..spec(5)
                    },
                },
                InvalidMap::EvenAcceptors {
                    stream: StreamId(5),
                    acceptors: 2,
                },
            ),
            (
                Reconfiguration::ReplaceStream {
                    partition: PartitionId(9),
                    stream: spec(5),
                },
                InvalidMap::NoPartition(PartitionId(9)),
            ),
            (
                Reconfiguration::ReplaceStream {
                    partition: PartitionId(1),
                    stream: StreamSpec {
                        acceptors: vec![NodeId(1)],
                        ..spec(5)
                    },
                },
                InvalidMap::ReplicasMustLearn {
                    partition: PartitionId(1),
                    replicas: three,
                },
            ),
        ];
        for (change, why) in bad {
            assert_eq!(
                change.apply(&m, 0),
                Err(PartitionMapError::Invalid(why)),
                "{change:?}"
            );
        }
        let mut apart = m.clone();
        apart.partitions.get_mut(&PartitionId(2)).unwrap().replicas = vec![NodeId(1)];
        let merge = Reconfiguration::Merge {
            source: PartitionId(2),
            into: PartitionId(1),
        };
        assert_eq!(
            merge.apply(&apart, 0),
            Err(InvalidMap::MergeReplicasDiffer {
                from: PartitionId(2),
                into: PartitionId(1),
            }
            .into())
        );
    }
}
