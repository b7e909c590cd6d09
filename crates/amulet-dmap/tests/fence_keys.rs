//! Fence keys at a replica (DynaTree §III-A): a request routed by a
//! client's older partition map runs when the current map still places
//! its keys in the replica's partition alone, at the edge and at
//! execution; a key that moved, a command spanning partitions, and every
//! stale request with fence keys off are refused as stale with nothing
//! changed.

use amulet_dmap::{MapCommand, MapReply, PartitionState};
use amulet_smr::{Body, ClientReply, ClientRequest, CommandEnvelope, Origin, Output, Replica};
use amulet_types::{MapVersion, NodeId, PartitionId, StreamId};
use bytes::Bytes;

mod common;
use common::map_name;

/// Partition 1's replica at node 1 whose map is at version 3 (two changes
/// past the version 1 the stale clients routed by).
fn replica() -> Replica<PartitionState> {
    common::replica_at(1, 1, 64 << 20, Some(3))
}

/// A key each partition holds.
fn keys(replica: &Replica<PartitionState>) -> (Bytes, Bytes) {
    let owner = |k: &Bytes| replica.map().partition_of("m", k).unwrap();
    let key = |p| {
        (0..100u8)
            .map(|i| Bytes::from(vec![i]))
            .find(|k| owner(k) == PartitionId(p))
            .unwrap()
    };
    (key(1), key(2))
}

fn put(key: &Bytes) -> MapCommand {
    MapCommand::Put {
        map: map_name(),
        key: key.clone(),
        value: Bytes::from_static(b"v"),
    }
}

fn stale(command: MapCommand) -> ClientRequest<MapCommand> {
    ClientRequest {
        map_version: MapVersion(1),
        session: None,
        body: Body::App(command),
        principal: None,
    }
}

/// The reply to a request refused at the edge, or the stream and value
/// it was proposed with.
fn submitted(
    replica: &mut Replica<PartitionState>,
    request: ClientRequest<MapCommand>,
) -> Result<(StreamId, Vec<u8>), ClientReply<MapReply>> {
    replica.submit(0, request);
    match replica.drain().remove(0) {
        Output::Propose { stream, value, .. } => Ok((stream, value.to_vec())),
        Output::Reply { reply, .. } => Err(reply),
        other => panic!("{other:?}"),
    }
}

fn delivered(
    replica: &mut Replica<PartitionState>,
    stream: StreamId,
    value: &[u8],
) -> ClientReply<MapReply> {
    replica.on_deliver(stream, value);
    match replica.drain().pop() {
        Some(Output::Reply { reply, .. }) => reply,
        other => panic!("{other:?}"),
    }
}

#[test]
fn dynatree_iii_a_a_stale_request_for_a_key_inside_the_range_runs() {
    let mut replica = replica();
    let (mine, _) = keys(&replica);
    let (stream, value) = submitted(&mut replica, stale(put(&mine))).expect("taken");
    assert_eq!(stream, replica.stream(), "on the partition's own stream");
    let reply = delivered(&mut replica, stream, &value);
    assert_eq!(reply, ClientReply::Done(MapReply::Value(None)));
    assert_eq!(replica.state().entries(&map_name()).unwrap().len(), 1);
    assert_eq!(replica.fence_key_verdicts(), (1, 0));
}

#[test]
fn dynatree_iii_a_a_key_outside_the_range_or_spanning_partitions_is_refused_as_stale() {
    let mut replica = replica();
    let (_, theirs) = keys(&replica);
    for command in [put(&theirs), MapCommand::Size { map: map_name() }] {
        let refused = submitted(&mut replica, stale(command.clone()));
        assert!(
            matches!(&refused, Err(ClientReply::StaleMap(map)) if map.version == MapVersion(3)),
            "{command:?}: {refused:?}"
        );
    }
    // Ordered anyway (proposed by a replica with an older map), it is
    // refused at execution too.
    let forged = CommandEnvelope {
        origin: Origin {
            node: NodeId(1),
            incarnation: 1,
            request: 7,
        },
        timestamp_micros: 0,
        map_version: MapVersion(1),
        session: None,
        body: Body::App(put(&theirs)),
        principal: None,
    };
    let stream = replica.stream();
    let reply = delivered(&mut replica, stream, &forged.encode());
    assert!(matches!(reply, ClientReply::StaleMap(_)), "{reply:?}");
    assert_eq!(replica.state().entries(&map_name()).unwrap().len(), 0);
    assert_eq!(replica.fence_key_verdicts(), (0, 2));
}

#[test]
fn dynatree_iii_a_with_fence_keys_off_every_stale_request_is_refused() {
    let mut replica = replica();
    replica.set_fence_keys(false);
    let (mine, _) = keys(&replica);
    let refused = submitted(&mut replica, stale(put(&mine)));
    assert!(
        matches!(refused, Err(ClientReply::StaleMap(_))),
        "{refused:?}"
    );
    assert_eq!(replica.state().entries(&map_name()).unwrap().len(), 0);
}
