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
    // Node 5 replicates nothing: the replicas accept it (it learns the
    // map from its peers' probes); whether it learns the global stream
    // is judged at the edge, by the node's configuration.
    let given = idle.apply(&m, 5).expect("a move to a node hosting nothing");
    assert_eq!(given.partitions_of(NodeId(5)), vec![PartitionId(1)]);
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
    let split = |source, new, stream, at_token| cut(source, new, spec(stream), at_token, vec![]);
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

#[test]
fn thesis_4_2_the_global_stream_replaced_is_retired_and_every_replica_learns_the_new_one() {
    let m = nine_nodes();
    // Nodes 7-9 are handed off from by the move below and replicate
    // nothing else: they still run p8's replica, so they learn the new
    // global stream too, though the change does not name them.
    let moved = move_to(8, [4, 5, 6], 20, &[7, 8, 9]).apply(&m, 0).unwrap();
    assert_eq!(moved.handing_off[&PartitionId(8)].len(), 3);
    let mut all: Vec<NodeId> = moved.hosting_nodes();
    all.retain(|n| ![NodeId(1), NodeId(2), NodeId(3)].contains(n));
    let replace = Reconfiguration::ReplaceGlobalStream {
        stream: StreamSpec {
            stream: StreamId(30),
            acceptors: vec![NodeId(1), NodeId(2), NodeId(3)],
            learners: all,
            storage: StorageMode::Memory,
            base_position: 0,
        },
    };
    assert!(moved.partitions.keys().all(|p| replace.involves(*p)));
    let next = replace.apply(&moved, 96).unwrap();
    assert_eq!(next.global_stream, StreamId(30));
    assert!(next.retired_streams.contains(&moved.global_stream));
    assert_eq!(next.streams[&StreamId(30)].base_position, 96);
    let members = next.streams[&StreamId(30)].members();
    for n in moved.handing_off.values().flatten() {
        assert!(
            members.contains(n),
            "{n} is handed off from, yet not a member"
        );
    }
    assert_eq!(next.version.0, moved.version.0 + 1);
    // The retired global stream is never used again.
    let again = Reconfiguration::ReplaceGlobalStream {
        stream: StreamSpec {
            stream: moved.global_stream,
            ..next.streams[&StreamId(30)].clone()
        },
    };
    assert!(matches!(
        again.apply(&next, 0),
        Err(PartitionMapError::Invalid(InvalidMap::StreamInUse { .. }))
    ));
}

#[test]
fn thesis_4_2_a_global_stream_some_replica_does_not_learn_is_refused() {
    let m = nine_nodes();
    let replace = Reconfiguration::ReplaceGlobalStream {
        stream: StreamSpec {
            stream: StreamId(30),
            acceptors: vec![NodeId(1), NodeId(2), NodeId(3)],
            learners: vec![],
            storage: StorageMode::Memory,
            base_position: 0,
        },
    };
    assert!(matches!(
        replace.apply(&m, 0),
        Err(PartitionMapError::Invalid(
            InvalidMap::ReplicasMustLearn { .. }
        ))
    ));
}
