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

use crate::partition_map::{Layout, PartitionInfo, PartitionMap, PartitionMapError};
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
        let invalid = |why: String| Err(PartitionMapError::Invalid(why));
        let mut next = map.clone();
        if let Some(spec) = self.new_stream() {
            let used = spec.stream == map.global_stream
                || map.partitions.values().any(|p| p.stream == spec.stream)
                || map.retired_streams.contains(&spec.stream)
                || map.streams.contains_key(&spec.stream);
            if used {
                return invalid(format!("stream {} is or was in use", spec.stream.0));
            }
            if spec.acceptors.is_empty() || spec.acceptors.len() % 2 == 0 {
                return invalid(format!(
                    "stream {} needs an odd number of acceptors, not {}",
                    spec.stream.0,
                    spec.acceptors.len()
                ));
            }
            let mut recorded = spec.clone();
            recorded.base_position = base_position;
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
                    return invalid(format!("no partition {source} to split"));
                };
                if map.partitions.contains_key(new) || map.merged.contains_key(new) {
                    return invalid(format!("partition {new} exists or existed"));
                }
                if !stream.members().iter().all(|n| info.replicas.contains(n))
                    || !info.replicas.iter().all(|n| stream.members().contains(n))
                {
                    return invalid(format!(
                        "the new stream's members must be {source}'s replicas {:?}",
                        info.replicas
                    ));
                }
                if at_token.is_none() && at_keys.is_empty() {
                    return invalid("a split must move tokens or key ranges".into());
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
                        return invalid(format!(
                            "token {token} is not inside a segment of {source} (it starts one, or {owner} holds it)"
                        ));
                    }
                    next.token_ring.insert(at, (*token, *new));
                }
                for (keyspace, key) in at_keys {
                    let Some(Layout::Range(ranges)) = next.keyspaces.get_mut(keyspace) else {
                        return invalid(format!("{keyspace:?} is not a range keyspace"));
                    };
                    let at = ranges.partition_point(|r| r.0 <= *key);
                    let (start, owner) = ranges[at - 1].clone();
                    if owner != *source || start == *key {
                        return invalid(format!(
                            "key {key:?} of {keyspace:?} is not inside a range of {source}"
                        ));
                    }
                    ranges.insert(at, (key.clone(), *new));
                }
            }
            Reconfiguration::Merge { source, into } => {
                let (Some(from), Some(to)) = (map.partitions.get(source), map.partitions.get(into))
                else {
                    return invalid(format!("merging {source} into {into}: no such partition"));
                };
                if source == into {
                    return invalid("a partition cannot merge into itself".into());
                }
                let mut a = from.replicas.clone();
                let mut b = to.replicas.clone();
                a.sort();
                b.sort();
                if a != b {
                    return invalid(format!(
                        "{source} and {into} must have the same replicas to merge"
                    ));
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
                    return invalid(format!("no partition {partition}"));
                };
                let members = stream.members();
                if !info.replicas.iter().all(|n| members.contains(n)) {
                    return invalid(format!(
                        "every replica of {partition} ({:?}) must learn the new stream",
                        info.replicas
                    ));
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
                    return invalid(format!("no partition {partition}"));
                };
                let mut group = replicas.clone();
                group.sort();
                group.dedup();
                if group.len() != replicas.len() || group.is_empty() {
                    return invalid(format!(
                        "{partition} must move to distinct replicas, not {replicas:?}"
                    ));
                }
                let members = stream.members();
                if !info
                    .replicas
                    .iter()
                    .chain(replicas)
                    .all(|n| members.contains(n))
                {
                    return invalid(format!(
                        "the old replicas {:?} and the new {replicas:?} of {partition} must all learn the new stream",
                        info.replicas
                    ));
                }
                // A node with no replica executes nothing of the global
                // stream and would never learn it was given one.
                let hosting = map.hosting_nodes();
                if let Some(idle) = replicas.iter().find(|n| !hosting.contains(n)) {
                    return invalid(format!(
                        "node {idle} replicates no partition yet; a move goes to nodes that do"
                    ));
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
    fn section_4_7_4_a_split_moves_part_of_a_segment_and_of_a_range() {
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
    fn section_4_7_5_a_stream_replaced_is_retired_and_never_reused() {
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
        assert!(
            again.apply(&next, 6).is_err(),
            "a retired stream id is refused"
        );
    }

    #[test]
    fn dmap_section_3_c_a_move_gives_a_partition_new_replicas_and_a_new_stream() {
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
        assert!(not_learning.apply(&m, 5).is_err(), "node 1 must learn it");
        let idle = Reconfiguration::Move {
            partition: PartitionId(1),
            replicas: vec![NodeId(2), NodeId(3), NodeId(5)],
            stream: StreamSpec {
                learners: vec![NodeId(1), NodeId(5)],
                ..spec.clone()
            },
        };
        assert!(idle.apply(&m, 5).is_err(), "node 5 hosts nothing");
        let twice = Reconfiguration::Move {
            partition: PartitionId(1),
            replicas: vec![NodeId(2), NodeId(2), NodeId(3)],
            stream: spec,
        };
        assert!(twice.apply(&m, 5).is_err());
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
        let bad = [
            Reconfiguration::Split {
                source: PartitionId(9),
                new: PartitionId(3),
                stream: spec(4),
                at_token: Some(5),
                at_keys: vec![],
            },
            Reconfiguration::Split {
                source: PartitionId(1),
                new: PartitionId(2),
                stream: spec(4),
                at_token: Some(5),
                at_keys: vec![],
            },
            Reconfiguration::Split {
                source: PartitionId(1),
                new: PartitionId(3),
                stream: spec(2),
                at_token: Some(5),
                at_keys: vec![],
            },
            Reconfiguration::Split {
                source: PartitionId(1),
                new: PartitionId(3),
                stream: spec(4),
                at_token: Some(1 << 31), // starts partition 2's segment
                at_keys: vec![],
            },
            Reconfiguration::Split {
                source: PartitionId(1),
                new: PartitionId(3),
                stream: spec(4),
                at_token: Some(0),
                at_keys: vec![],
            },
            Reconfiguration::Split {
                source: PartitionId(1),
                new: PartitionId(3),
                stream: spec(4),
                at_token: None,
                at_keys: vec![("h".into(), Bytes::from_static(b"k"))],
            },
            Reconfiguration::Merge {
                source: PartitionId(1),
                into: PartitionId(1),
            },
            Reconfiguration::ReplaceStream {
                partition: PartitionId(1),
                stream: StreamSpec {
                    acceptors: vec![NodeId(1), NodeId(2)],
                    ..spec(5)
                },
            },
        ];
        for change in bad {
            assert!(change.apply(&m, 0).is_err(), "{change:?} accepted");
        }
    }
}
