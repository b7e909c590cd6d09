//! DMap §III-B c (S-SMR): a multi-partition command completes at a replica
//! only once it holds a signal from every other involved partition; later
//! commands wait behind it; signals that arrive early are kept, lost ones
//! are asked for again, and one no longer held makes the reply `Lost`.

use amulet_dmap::{MapCommand, MapReply, PartitionState};
use amulet_smr::{Body, ClientReply, ClientRequest, Output, Replica, ReplicaMessage};
use amulet_types::{NodeId, PartitionId, StreamId};
use bytes::Bytes;

mod common;
use common::{map_name, replica};

/// A `Size` submitted at `at`: the encoded envelope it proposes.
fn size_command(at: &mut Replica<PartitionState>) -> Bytes {
    let version = at.map().version;
    at.submit(
        0,
        ClientRequest {
            map_version: version,
            session: None,
            body: Body::App(MapCommand::Size { map: map_name() }),
            principal: None,
        },
    );
    match at.drain().remove(0) {
        Output::Propose { stream, value, .. } => {
            assert_eq!(
                stream,
                StreamId(1),
                "a multi-partition command goes on the global stream"
            );
            value
        }
        other => panic!("expected a proposal, got {other:?}"),
    }
}

fn signals(outputs: &[Output<MapReply>]) -> Vec<(NodeId, ReplicaMessage)> {
    outputs
        .iter()
        .filter_map(|o| match o {
            Output::Send { to, message } => Some((*to, message.clone())),
            _ => None,
        })
        .collect()
}

fn replies(outputs: &[Output<MapReply>]) -> Vec<ClientReply<MapReply>> {
    outputs
        .iter()
        .filter_map(|o| match o {
            Output::Reply { reply, .. } => Some(reply.clone()),
            _ => None,
        })
        .collect()
}

#[test]
fn a_multi_partition_command_waits_for_every_partition_and_later_commands_wait_behind_it() {
    let mut a = replica(1, 1, 1 << 20);
    let mut b = replica(4, 2, 1 << 20);
    let size = size_command(&mut a);
    a.on_deliver(StreamId(1), &size);
    let out = a.drain();
    assert!(
        replies(&out).is_empty(),
        "no reply before partition 2's signal"
    );
    let sent = signals(&out);
    assert_eq!(
        sent.iter().map(|(to, _)| to.0).collect::<Vec<_>>(),
        vec![4, 5, 6]
    );
    assert!(a.is_waiting());
    // A command of partition 1's own stream is delivered meanwhile: it
    // waits behind the multi-partition one.
    let key = (0..=255u8)
        .map(|i| Bytes::from(vec![i]))
        .find(|k| a.map().partition_of("m", k) == Ok(PartitionId(1)))
        .unwrap();
    let put = ClientRequest {
        map_version: a.map().version,
        session: None,
        body: Body::App(MapCommand::Put {
            map: map_name(),
            key,
            value: Bytes::new(),
        }),
        principal: None,
    };
    a.submit(0, put);
    let Output::Propose { stream, value, .. } = a.drain().remove(0) else {
        panic!("the put is proposed")
    };
    assert_eq!(stream, StreamId(2));
    a.on_deliver(stream, &value);
    assert_eq!(a.queued(), 1, "the put waits behind the size");
    assert!(replies(&a.drain()).is_empty());
    // Partition 2 executes the size and signals.
    b.on_deliver(StreamId(1), &size);
    let from_b = signals(&b.drain());
    assert_eq!(
        from_b.iter().map(|(to, _)| to.0).collect::<Vec<_>>(),
        vec![1, 2, 3]
    );
    a.on_message(from_b[0].1.clone());
    let out = a.drain();
    assert_eq!(
        replies(&out),
        vec![
            ClientReply::Done(MapReply::Count(0)),
            ClientReply::Done(MapReply::Value(None))
        ],
        "the size completes, then the put runs"
    );
    assert!(!a.is_waiting());
    assert_eq!(a.queued(), 0, "the put ran once the size completed");
}

#[test]
fn an_early_signal_is_kept_until_its_command_is_delivered() {
    let mut a = replica(1, 1, 1 << 20);
    let mut b = replica(4, 2, 1 << 20);
    let size = size_command(&mut a);
    b.on_deliver(StreamId(1), &size);
    for (_, message) in signals(&b.drain()) {
        a.on_message(message);
    }
    a.on_deliver(StreamId(1), &size);
    assert_eq!(
        replies(&a.drain()),
        vec![ClientReply::Done(MapReply::Count(0))]
    );
}

#[test]
fn a_lost_signal_is_asked_for_again_and_answered_from_the_cache() {
    let mut a = replica(1, 1, 1 << 20);
    let mut b = replica(4, 2, 1 << 20);
    let size = size_command(&mut a);
    a.on_deliver(StreamId(1), &size);
    b.on_deliver(StreamId(1), &size);
    a.drain();
    b.drain(); // partition 2's signals are lost
    a.tick(10_000);
    assert!(
        signals(&a.drain()).is_empty(),
        "not before signal_retry_micros"
    );
    a.tick(100_000);
    let asks = signals(&a.drain());
    assert_eq!(
        asks.iter().map(|(to, _)| to.0).collect::<Vec<_>>(),
        vec![4, 5, 6]
    );
    b.on_message(asks[0].1.clone());
    let answer = signals(&b.drain());
    assert_eq!(answer.len(), 1);
    assert_eq!(answer[0].0, NodeId(1));
    a.on_message(answer[0].1.clone());
    assert_eq!(
        replies(&a.drain()),
        vec![ClientReply::Done(MapReply::Count(0))]
    );
}

#[test]
fn a_partial_no_longer_held_makes_the_reply_lost() {
    let mut a = replica(1, 1, 1 << 20);
    // Partition 2 keeps only its latest partial.
    let mut b = replica(4, 2, 0);
    let first = size_command(&mut a);
    let second = size_command(&mut a);
    a.on_deliver(StreamId(1), &first);
    for (_, message) in signals(&a.drain()) {
        b.on_message(message);
    }
    b.on_deliver(StreamId(1), &first);
    b.drain(); // partition 2 completed the first; its signals are lost
    b.on_deliver(StreamId(1), &second);
    b.drain(); // the second's partial pushes the first's out of the cache
    a.tick(100_000);
    let asks = signals(&a.drain());
    b.on_message(asks[0].1.clone());
    let answer = signals(&b.drain());
    assert!(
        matches!(&answer[0].1, ReplicaMessage::Signal { partial: None, .. }),
        "{answer:?}"
    );
    a.on_message(answer[0].1.clone());
    assert_eq!(replies(&a.drain()), vec![ClientReply::Lost]);
}

#[test]
fn a_replaying_replica_gets_the_following_partials_with_its_answer() {
    let mut a = replica(1, 1, 1 << 20);
    let mut a_peer = replica(2, 1, 1 << 20);
    let mut b = replica(4, 2, 1 << 20);
    let sizes: Vec<Bytes> = (0..5).map(|_| size_command(&mut a)).collect();
    // Partition 2 and a peer of partition 1 executed all five while `a`
    // was down: every signal sent to `a` is lost.
    for size in &sizes {
        a_peer.on_deliver(StreamId(1), size);
        b.on_deliver(StreamId(1), size);
        for (to, message) in signals(&a_peer.drain()) {
            if to == NodeId(4) {
                b.on_message(message);
            }
        }
        for (to, message) in signals(&b.drain()) {
            if to == NodeId(2) {
                a_peer.on_message(message);
            }
        }
    }
    assert!(!b.is_waiting() && !a_peer.is_waiting());
    a_peer.drain();
    b.drain();
    for size in &sizes {
        a.on_deliver(StreamId(1), size);
    }
    a.drain();
    a.tick(100_000);
    let asks = signals(&a.drain());
    b.on_message(asks[0].1.clone());
    let answer = signals(&b.drain());
    assert_eq!(answer.len(), 5, "the asked one and the four after it");
    for (_, message) in answer {
        a.on_message(message);
    }
    assert_eq!(
        replies(&a.drain()),
        vec![ClientReply::Done(MapReply::Count(0)); 5],
        "one ask replays all five, not one per signal_retry_micros"
    );
}

/// The envelope `command` submitted at `at` proposes.
fn proposed(at: &mut Replica<PartitionState>, command: MapCommand) -> (StreamId, Bytes) {
    let version = at.map().version;
    at.submit(
        0,
        ClientRequest {
            map_version: version,
            session: None,
            body: Body::App(command),
            principal: None,
        },
    );
    match at.drain().remove(0) {
        Output::Propose { stream, value, .. } => (stream, value),
        other => panic!("expected a proposal, got {other:?}"),
    }
}

#[test]
fn a_begin_orders_only_so_later_commands_execute_and_their_replies_wait_for_its_signals() {
    let mut a = replica(1, 1, 1 << 20);
    let mut b = replica(4, 2, 1 << 20);
    let (global, begin) = proposed(
        &mut a,
        MapCommand::BeginTransaction {
            lease_micros: 10_000_000,
            end: vec![],
        },
    );
    assert_eq!(global, StreamId(1));
    let key = (0..=u16::MAX)
        .map(|i| Bytes::from(format!("k{i}")))
        .find(|k| a.map().partition_of("m", k) == Ok(PartitionId(1)))
        .expect("a key of partition 1");
    let (local, put) = proposed(
        &mut a,
        MapCommand::Put {
            map: map_name(),
            key: key.clone(),
            value: Bytes::from_static(b"v"),
        },
    );
    assert_eq!(local, StreamId(2));
    a.on_deliver(global, &begin);
    a.on_deliver(local, &put);
    let out = a.drain();
    assert!(
        replies(&out).is_empty(),
        "nothing answered before partition 2 executed the begin"
    );
    assert!(!a.is_waiting() && a.queued() == 0, "the put executed");
    assert_eq!((a.unsignalled(), a.held_replies()), (1, 1));
    b.on_deliver(global, &begin);
    for (to, message) in signals(&b.drain()) {
        if to == NodeId(1) {
            a.on_message(message);
        }
    }
    let out = a.drain();
    let replies = replies(&out);
    assert_eq!(
        replies.len(),
        2,
        "the begin and the put, once partition 2's signal came"
    );
    assert!(
        matches!(replies[1], ClientReply::Done(MapReply::Value(None))),
        "{replies:?}"
    );
    assert_eq!((a.unsignalled(), a.held_replies()), (0, 0));
}
