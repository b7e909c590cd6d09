//! Proptest strategies shared by the integration tests: arbitrary
//! envelopes of every message and batch variant, and frames.
// Each test binary uses a different subset of these.
#![allow(dead_code)]

use amulet_types::{Ballot, Instance, MapVersion, NodeId, SafeReport, StreamId, ValueId};
use amulet_wire::{Accepted, Batch, Envelope, Frame, Hello, Message, Value, ValueKind};
use bytes::{Bytes, BytesMut};
use proptest::collection::vec;
use proptest::prelude::*;

pub fn ballot() -> impl Strategy<Value = Ballot> {
    (any::<u32>(), any::<u32>()).prop_map(|(round, node)| Ballot { round, node })
}

pub fn instance() -> impl Strategy<Value = Instance> {
    any::<u64>().prop_map(Instance)
}

pub fn node() -> impl Strategy<Value = NodeId> {
    any::<u32>().prop_map(NodeId)
}

pub fn value() -> impl Strategy<Value = Value> {
    (
        node(),
        any::<u32>(),
        any::<u64>(),
        vec(any::<u8>(), 0..48),
        any::<bool>(),
    )
        .prop_map(|(proposer, incarnation, sequence, bytes, control)| Value {
            kind: if control {
                ValueKind::Control
            } else {
                ValueKind::Application
            },
            id: ValueId {
                proposer,
                incarnation,
                sequence,
            },
            bytes: Bytes::from(bytes),
        })
}

pub fn values() -> impl Strategy<Value = Vec<Value>> {
    vec(value(), 0..4)
}

pub fn batch() -> impl Strategy<Value = Batch> {
    prop_oneof![
        values().prop_map(Batch::Values),
        (1..=u64::MAX).prop_map(Batch::Skip),
        Just(Batch::Null),
    ]
}

pub fn message() -> impl Strategy<Value = Message> {
    prop_oneof![
        (values(), any::<u32>()).prop_map(|(values, hops)| Message::Propose { values, hops }),
        (
            (ballot(), instance(), instance(), any::<u32>()),
            vec(
                (instance(), ballot(), batch()).prop_map(|(instance, ballot, batch)| Accepted {
                    instance,
                    ballot,
                    batch
                }),
                0..4
            ),
            (instance(), instance(), any::<u32>()),
        )
            .prop_map(
                |((ballot, from, to, votes), accepted, (accepted_end, trimmed_below, hops))| {
                    Message::Phase1 {
                        ballot,
                        from,
                        to,
                        votes,
                        accepted,
                        accepted_end,
                        trimmed_below,
                        hops,
                    }
                }
            ),
        (
            ballot(),
            instance(),
            batch(),
            any::<u32>(),
            node(),
            any::<u32>()
        )
            .prop_map(
                |(ballot, instance, batch, votes, last, hops)| Message::Phase2 {
                    ballot,
                    instance,
                    batch,
                    votes,
                    last,
                    hops
                }
            ),
        (
            instance(),
            ballot(),
            proptest::option::of(batch()),
            node(),
            any::<u32>()
        )
            .prop_map(
                |(instance, ballot, batch, decided_by, hops)| Message::Decision {
                    instance,
                    ballot,
                    batch,
                    decided_by,
                    hops
                }
            ),
        (ballot(), ballot(), proptest::option::of(instance())).prop_map(
            |(ballot, promised, instance)| Message::Reject {
                ballot,
                promised,
                instance
            }
        ),
        (instance(), instance()).prop_map(|(from, to)| Message::RetransmitRequest { from, to }),
        (vec((instance(), batch()), 0..4), instance()).prop_map(|(decided, trimmed_below)| {
            Message::RetransmitReply {
                decided,
                trimmed_below,
            }
        }),
        (instance(), ballot()).prop_map(|(instance, ballot)| Message::Prepare { instance, ballot }),
        (
            instance(),
            ballot(),
            proptest::option::of((ballot(), batch()))
        )
            .prop_map(|(instance, ballot, accepted)| Message::Promise {
                instance,
                ballot,
                accepted
            }),
        (instance(), ballot(), batch()).prop_map(|(instance, ballot, batch)| Message::Accept {
            instance,
            ballot,
            batch
        }),
        (instance(), ballot())
            .prop_map(|(instance, ballot)| Message::AcceptAck { instance, ballot }),
        (
            ballot(),
            instance(),
            any::<bool>(),
            any::<u64>(),
            any::<u32>(),
            instance(),
            any::<u64>()
        )
            .prop_map(
                |(ballot, decided_below, voting, merge_need, hears, below, version)| {
                    Message::Heartbeat {
                        ballot,
                        decided_below,
                        voting,
                        merge_need,
                        hears,
                        safe: SafeReport {
                            below,
                            map_version: MapVersion(version),
                        },
                    }
                }
            ),
    ]
}

pub fn envelope() -> impl Strategy<Value = Envelope> {
    (any::<u32>(), message()).prop_map(|(stream, message)| Envelope {
        stream: StreamId(stream),
        message,
    })
}

pub fn hello() -> impl Strategy<Value = Hello> {
    (any::<u64>(), node(), any::<u32>()).prop_map(|(cluster, node, incarnation)| Hello {
        cluster,
        node,
        incarnation,
    })
}

pub fn frame() -> impl Strategy<Value = Frame> {
    prop_oneof![
        1 => hello().prop_map(Frame::Hello),
        4 => envelope().prop_map(Frame::Envelope),
    ]
}

/// The frames encoded back to back.
pub fn encode_frames(frames: &[Frame]) -> BytesMut {
    let mut out = BytesMut::new();
    for frame in frames {
        amulet_wire::encode_frame(frame, &mut out);
    }
    out
}

/// Every `Value` in an envelope, to check where its bytes live.
pub fn values_of(envelope: &Envelope) -> Vec<&Value> {
    fn of_batch<'a>(batch: &'a Batch, out: &mut Vec<&'a Value>) {
        if let Batch::Values(values) = batch {
            out.extend(values.iter());
        }
    }
    let mut out = Vec::new();
    match &envelope.message {
        Message::Propose { values, .. } => out.extend(values.iter()),
        Message::Phase1 { accepted, .. } => {
            for a in accepted {
                of_batch(&a.batch, &mut out);
            }
        }
        Message::Phase2 { batch, .. } | Message::Accept { batch, .. } => of_batch(batch, &mut out),
        Message::Decision { batch, .. } => {
            if let Some(batch) = batch {
                of_batch(batch, &mut out);
            }
        }
        Message::RetransmitReply { decided, .. } => {
            for (_, batch) in decided {
                of_batch(batch, &mut out);
            }
        }
        Message::Promise { accepted, .. } => {
            if let Some((_, batch)) = accepted {
                of_batch(batch, &mut out);
            }
        }
        Message::Reject { .. }
        | Message::RetransmitRequest { .. }
        | Message::Prepare { .. }
        | Message::AcceptAck { .. }
        | Message::Heartbeat { .. } => {}
    }
    out
}
