//! The table of bad requests at a replica's edge (`Replica::submit`, what
//! the node calls for every client request): each gets its documented
//! answer, nothing is proposed, and nothing changes.

use amulet_dmap::{
    KeyBound, MapCommand, MapError, MapLimits, MapName, MapReply, PartitionState, RangeQuery,
};
use amulet_smr::{
    Body, ClientReply, ClientRequest, CommandEnvelope, InvalidMap, Layout, Origin, Output,
    Reconfiguration, Refusal, Replica, StreamSpec,
};
use amulet_types::{MapVersion, NodeId, PartitionId, SessionId, StorageMode, StreamId};
use bytes::Bytes;

mod common;
use common::{map_name, replica};

/// A key partition 1 holds, and one partition 2 holds.
fn keys(replica: &Replica<PartitionState>) -> (Bytes, Bytes) {
    let owner = |k: &Bytes| replica.map().partition_of("m", k).unwrap();
    let mut mine = None;
    let mut theirs = None;
    for i in 0..100u8 {
        let key = Bytes::from(vec![i]);
        match owner(&key) {
            PartitionId(1) => mine = mine.or(Some(key)),
            _ => theirs = theirs.or(Some(key)),
        }
    }
    (mine.unwrap(), theirs.unwrap())
}

fn request(
    version: u64,
    session: Option<(SessionId, u64)>,
    body: Body<MapCommand>,
) -> ClientRequest<MapCommand> {
    ClientRequest {
        map_version: MapVersion(version),
        session,
        body,
        principal: None,
    }
}

fn app(version: u64, command: MapCommand) -> ClientRequest<MapCommand> {
    request(version, Some((SessionId(1), 1)), Body::App(command))
}

#[test]
fn every_bad_request_gets_its_documented_answer_and_changes_nothing() {
    let mut replica = replica(1, 1, 64 << 20);
    let (mine, theirs) = keys(&replica);
    let version = replica.map().version.0;
    let limits = MapLimits::default();
    let big_key = Bytes::from(vec![0u8; limits.key_bytes_max + 1]);
    let big_value = Bytes::from(vec![0u8; limits.value_bytes_max + 1]);
    let bound = |k: &'static [u8]| {
        Some(KeyBound {
            key: Bytes::from_static(k),
            inclusive: true,
        })
    };
    let range = |from, to, limit| MapCommand::Range {
        map: map_name(),
        range: RangeQuery {
            from,
            to,
            limit,
            reverse: false,
        },
    };
    type Check = fn(&ClientReply<MapReply>) -> bool;
    let table: Vec<(&str, ClientRequest<MapCommand>, Check)> = vec![
        (
            "oversized key",
            app(
                version,
                MapCommand::Put {
                    map: map_name(),
                    key: big_key.clone(),
                    value: Bytes::new(),
                },
            ),
            |r| {
                matches!(
                    r,
                    ClientReply::Done(MapReply::Failed(MapError::KeyTooLarge { .. }))
                )
            },
        ),
        (
            "oversized value",
            app(
                version,
                MapCommand::Put {
                    map: map_name(),
                    key: mine.clone(),
                    value: big_value.clone(),
                },
            ),
            |r| {
                matches!(
                    r,
                    ClientReply::Done(MapReply::Failed(MapError::ValueTooLarge { .. }))
                )
            },
        ),
        (
            "range start above its end",
            app(version, range(bound(b"z"), bound(b"a"), 10)),
            |r| {
                matches!(
                    r,
                    ClientReply::Done(MapReply::Failed(MapError::BadRange(_)))
                )
            },
        ),
        (
            "range limit zero",
            app(version, range(None, None, 0)),
            |r| {
                matches!(
                    r,
                    ClientReply::Done(MapReply::Failed(MapError::BadRange(_)))
                )
            },
        ),
        (
            "range limit above range_entries_max",
            app(version, range(None, None, limits.range_entries_max + 1)),
            |r| {
                matches!(
                    r,
                    ClientReply::Done(MapReply::Failed(MapError::BadRange(_)))
                )
            },
        ),
        (
            // A stale version for a key inside this partition's range runs
            // (fence keys: tests/fence_keys.rs).
            "stale partition map version, key outside the partition's range",
            app(
                version - 1,
                MapCommand::Get {
                    map: map_name(),
                    key: theirs.clone(),
                },
            ),
            |r| matches!(r, ClientReply::StaleMap(m) if m.version.0 >= 2),
        ),
        (
            "key of a partition this node does not replicate",
            app(
                version,
                MapCommand::Put {
                    map: map_name(),
                    key: theirs.clone(),
                    value: Bytes::new(),
                },
            ),
            |r| matches!(r, ClientReply::NotAReplica(_)),
        ),
        (
            "putAll over put_all_entries_max",
            app(
                version,
                MapCommand::PutAll {
                    map: map_name(),
                    entries: vec![(mine.clone(), Bytes::new()); limits.put_all_entries_max + 1],
                },
            ),
            |r| {
                matches!(
                    r,
                    ClientReply::Done(MapReply::Failed(MapError::TooManyEntries { .. }))
                )
            },
        ),
        (
            "snapshot lease of zero",
            app(
                version,
                MapCommand::OpenSnapshot {
                    map: map_name(),
                    lease_micros: 0,
                },
            ),
            |r| {
                matches!(
                    r,
                    ClientReply::Done(MapReply::Failed(MapError::BadLease { .. }))
                )
            },
        ),
        (
            "range layout naming an unknown partition",
            app(
                version,
                MapCommand::CreateMap {
                    map: MapName::new("r").unwrap(),
                    layout: Layout::Range(vec![(Bytes::new(), PartitionId(9))]),
                },
            ),
            |r| {
                matches!(
                    r,
                    ClientReply::Refused(Refusal::InvalidMap(InvalidMap::BadRanges(name)))
                        if name == "r"
                )
            },
        ),
        (
            "opening a session without a session id",
            request(
                version,
                None,
                Body::OpenSession {
                    lease_micros: 1_000,
                },
            ),
            |r| matches!(r, ClientReply::Refused(Refusal::SessionIdMissing)),
        ),
        (
            "closing a session without a session id",
            request(version, None, Body::CloseSession),
            |r| matches!(r, ClientReply::Refused(Refusal::CloseWithoutSession)),
        ),
        (
            "session lease of zero",
            request(
                version,
                Some((SessionId(1), 0)),
                Body::OpenSession { lease_micros: 0 },
            ),
            |r| {
                matches!(
                    r,
                    ClientReply::Refused(Refusal::SessionLeaseOutOfBounds {
                        lease_micros: 0,
                        ..
                    })
                )
            },
        ),
        (
            "session lease above the maximum",
            request(
                version,
                Some((SessionId(1), 0)),
                Body::KeepAlive {
                    lease_micros: u64::MAX,
                },
            ),
            |r| {
                matches!(
                    r,
                    ClientReply::Refused(Refusal::SessionLeaseOutOfBounds {
                        lease_micros: u64::MAX,
                        max_micros: 600_000_000,
                    })
                )
            },
        ),
    ];
    for (name, request, expected) in table {
        let id = replica.submit(0, request);
        let outputs = replica.drain();
        assert_eq!(outputs.len(), 1, "{name}: {outputs:?}");
        match &outputs[0] {
            Output::Reply { request, reply } => {
                assert_eq!(*request, id, "{name}");
                assert!(expected(reply), "{name}: got {reply:?}");
            }
            other => panic!("{name}: proposed instead of refusing: {other:?}"),
        }
        assert_eq!(replica.map().version.0, version, "{name} changed the map");
        assert_eq!(
            replica.state().entries(&map_name()).map(|e| e.len()),
            Some(0),
            "{name} changed the data"
        );
    }
}

#[test]
fn a_command_of_an_unknown_session_is_refused_at_execution() {
    let mut replica = replica(1, 1, 64 << 20);
    let (mine, _) = keys(&replica);
    let version = replica.map().version.0;
    replica.submit(
        0,
        app(
            version,
            MapCommand::Put {
                map: map_name(),
                key: mine,
                value: Bytes::new(),
            },
        ),
    );
    let Output::Propose { stream, value, .. } = replica.drain().remove(0) else {
        panic!("a valid command is proposed");
    };
    replica.on_deliver(stream, &value);
    let outputs = replica.drain();
    assert!(
        matches!(
            &outputs[..],
            [Output::Reply {
                reply: ClientReply::SessionExpired,
                ..
            }]
        ),
        "{outputs:?}"
    );
    assert_eq!(replica.state().entries(&map_name()).unwrap().len(), 0);
}

/// Thesis §4.5: a reconfiguration ordered while an earlier one waits for
/// its fence is refused at execution, in every partition alike, with a
/// refusal the client may resend on (the earlier one takes effect a moment
/// later); nothing of it is pending.
#[test]
fn thesis_4_5_a_second_reconfiguration_before_the_fence_is_refused_retryably() {
    let mut replica = replica(1, 1, 64 << 20);
    let version = replica.map().version.0;
    let replace = |stream: u32| ClientRequest {
        map_version: MapVersion(version),
        session: None,
        body: Body::Reconfigure(Reconfiguration::ReplaceStream {
            partition: PartitionId(1),
            stream: StreamSpec {
                stream: StreamId(stream),
                acceptors: vec![NodeId(1), NodeId(2), NodeId(3)],
                learners: vec![],
                storage: StorageMode::Memory,
                base_position: 0,
            },
        }),
        principal: None,
    };
    let first = replica.submit(0, replace(10));
    let second = replica.submit(0, replace(11));
    let proposed: Vec<_> = replica
        .drain()
        .into_iter()
        .map(|output| match output {
            Output::Propose { stream, value, .. } => (stream, value),
            other => panic!("both are valid against the map: {other:?}"),
        })
        .collect();
    for (stream, value) in proposed {
        replica.on_deliver(stream, &value);
    }
    let replies: Vec<_> = replica
        .drain()
        .into_iter()
        .map(|output| match output {
            Output::Reply { request, reply } => (request, reply),
            other => panic!("only replies: {other:?}"),
        })
        .collect();
    assert_eq!(
        replies,
        vec![
            (first, ClientReply::Accepted),
            (
                second,
                ClientReply::Refused(Refusal::ReconfigurationPending)
            )
        ]
    );
    assert!(Refusal::ReconfigurationPending.is_retryable());
    assert!(matches!(
        replica.pending_reconfiguration(),
        Some(Reconfiguration::ReplaceStream { stream, .. }) if stream.stream == StreamId(10)
    ));
}

#[test]
fn undecodable_delivered_values_are_counted_and_change_nothing() {
    let mut replica = replica(1, 1, 64 << 20);
    let global = replica.map().global_stream;
    let stream = replica.stream();
    for junk in [
        &b""[..],
        b"\xff\xff\xff\xff",
        b"garbage that is not an envelope",
    ] {
        replica.on_deliver(stream, junk);
        replica.on_deliver(global, junk);
    }
    assert_eq!(replica.undecodable(), 6);
    assert!(replica.drain().is_empty());
    // Undecodable global values still count as positions of the global
    // order, so snapshot ids stay the same in every partition.
    assert_eq!(replica.global_position(), 3);
    // A forged envelope naming another node as origin gets no reply here.
    let forged = CommandEnvelope {
        origin: Origin {
            node: NodeId(5),
            incarnation: 1,
            request: 1,
        },
        timestamp_micros: 0,
        map_version: replica.map().version,
        session: None,
        body: Body::App(MapCommand::Size { map: map_name() }),
        principal: None,
    };
    replica.on_deliver(stream, &forged.encode());
    assert!(replica.drain().is_empty());
}

/// DMap §III, MRP-Store §3.5.1: the partition map is replicated state
/// changed only by the global stream, so "no such map" and "the map exists"
/// are verdicts on it that a replica may hold in an older version than
/// other replicas have executed. The edge does not pronounce them: it
/// orders the command on the global stream, and the verdict comes from
/// execution, at the same point of the order in every replica.
#[test]
fn dmap_iii_keyspace_verdicts_are_ordered_not_given_at_the_edge() {
    let mut replica = replica(1, 1, 64 << 20);
    let (mine, _) = keys(&replica);
    let version = replica.map().version.0;
    let global = replica.map().global_stream;
    type Expect = fn(&ClientReply<MapReply>) -> bool;
    let table: Vec<(&str, ClientRequest<MapCommand>, Expect)> = vec![
        (
            "unknown map",
            app(
                version,
                MapCommand::Get {
                    map: MapName::new("nope").unwrap(),
                    key: mine.clone(),
                },
            ),
            |r| matches!(r, ClientReply::UnknownKeyspace(name) if name == "nope"),
        ),
        (
            "creating a map that exists",
            app(
                version,
                MapCommand::CreateMap {
                    map: map_name(),
                    layout: Layout::Hash,
                },
            ),
            |r| matches!(r, ClientReply::KeyspaceExists(name) if name == "m"),
        ),
        (
            "dropping an unknown map",
            app(
                version,
                MapCommand::DropMap {
                    map: MapName::new("nope").unwrap(),
                },
            ),
            |r| matches!(r, ClientReply::UnknownKeyspace(_)),
        ),
    ];
    for (name, request, expected) in table {
        // Outside a session, so the verdict is the map's, not the
        // session table's.
        let request = ClientRequest {
            session: None,
            ..request
        };
        let id = replica.submit(0, request);
        let Output::Propose { stream, value, .. } = replica.drain().remove(0) else {
            panic!("{name}: refused at the edge instead of ordered");
        };
        assert_eq!(stream, global, "{name}: ordered on the global stream");
        replica.on_deliver(stream, &value);
        let outputs = replica.drain();
        match &outputs[..] {
            [Output::Reply { request, reply }] => {
                assert_eq!(*request, id, "{name}");
                assert!(expected(reply), "{name}: got {reply:?}");
            }
            other => panic!("{name}: {other:?}"),
        }
        assert_eq!(replica.map().version.0, version, "{name} changed the map");
    }
}

/// DMap §III-B: only the replica that received a request answers it. A
/// node hosting replicas of several partitions has each of them execute the
/// global commands it originated; their request ids are disjoint, so a
/// reply to one replica's request is never taken for another's.
#[test]
fn dmap_iii_b_replicas_of_one_node_never_share_a_request_id() {
    let mut p1 = replica(1, 1, 64 << 20);
    let mut p2 = replica(1, 2, 64 << 20);
    let version = p1.map().version.0;
    let (_, theirs) = keys(&p1);
    let open = request(
        version,
        Some((SessionId(9), 0)),
        Body::OpenSession {
            lease_micros: 1_000_000,
        },
    );
    let id1 = p1.submit(0, open);
    let id2 = p2.submit(
        0,
        request(
            version,
            None,
            Body::App(MapCommand::Get {
                map: map_name(),
                key: theirs,
            }),
        ),
    );
    assert_ne!(id1, id2, "request ids of one node's replicas collide");
    let Output::Propose { stream, value, .. } = p1.drain().remove(0) else {
        panic!("the session opening is proposed");
    };
    p2.drain();
    p1.on_deliver(stream, &value);
    p2.on_deliver(stream, &value);
    assert!(
        p1.drain()
            .iter()
            .any(|o| matches!(o, Output::Reply { request, reply: ClientReply::SessionOk } if *request == id1)),
        "the receiving replica answers"
    );
    for output in p2.drain() {
        if let Output::Reply { request, .. } = output {
            assert_ne!(
                request, id2,
                "partition 2 answered its pending request with partition 1's reply"
            );
        }
    }
}
