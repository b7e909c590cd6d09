//! The codec's layout, totality and canonical form.

use super::*;
use crate::message::{Message, Value};
use amulet_types::{Ballot, Instance, NodeId, SafeReport, ValueId};

fn value(sequence: u64, bytes: &'static [u8]) -> Value {
    Value {
        kind: Default::default(),
        id: ValueId {
            proposer: NodeId(7),
            incarnation: 2,
            sequence,
        },
        bytes: Bytes::from_static(bytes),
    }
}

fn encode(envelope: &Envelope) -> Bytes {
    let mut out = BytesMut::new();
    encode_envelope(envelope, &mut out);
    assert_eq!(out.len(), encoded_len(envelope));
    out.freeze()
}

#[test]
fn propose_has_the_documented_layout() {
    let envelope = Envelope {
        stream: StreamId(3),
        message: Message::Propose {
            values: vec![value(9, b"hi")],
            hops: 1,
        },
    };
    let expected: &[u8] = &[
        3, 0, 0, 0, // stream
        1, // tag
        1, 0, 0, 0, // count
        7, 0, 0, 0, 2, 0, 0, 0, 9, 0, 0, 0, 0, 0, 0, 0, // value id
        0, // kind: application
        2, 0, 0, 0, b'h', b'i', // bytes
        1, 0, 0, 0, // hops
    ];
    assert_eq!(&encode(&envelope)[..], expected);
}

#[test]
fn decoded_values_are_slices_of_the_input() {
    let envelope = Envelope {
        stream: StreamId(1),
        message: Message::Accept {
            instance: Instance(5),
            ballot: Ballot { round: 1, node: 2 },
            batch: Batch::Values(vec![value(1, b"abc"), value(2, b"defg")]),
        },
    };
    let bytes = encode(&envelope);
    let decoded = decode_envelope(bytes.clone()).unwrap();
    assert_eq!(decoded, envelope);
    let Message::Accept {
        batch: Batch::Values(values),
        ..
    } = decoded.message
    else {
        panic!("wrong variant");
    };
    let range = bytes.as_ptr_range();
    for v in values {
        assert!(range.contains(&v.bytes.as_ptr()));
    }
}

#[test]
fn every_prefix_is_truncated_and_extra_bytes_are_trailing() {
    let envelope = Envelope {
        stream: StreamId(1),
        message: Message::Promise {
            instance: Instance(5),
            ballot: Ballot { round: 1, node: 2 },
            accepted: Some((Ballot { round: 0, node: 1 }, Batch::Skip(4))),
        },
    };
    let bytes = encode(&envelope);
    for len in 0..bytes.len() {
        assert_eq!(
            decode_envelope(bytes.slice(..len)),
            Err(DecodeError::Truncated),
            "prefix {len}"
        );
    }
    let mut longer = BytesMut::from(&bytes[..]);
    longer.put_u8(0);
    assert_eq!(
        decode_envelope(longer.freeze()),
        Err(DecodeError::TrailingBytes)
    );
}

#[test]
fn non_canonical_markers_are_rejected() {
    let heartbeat = Envelope {
        stream: StreamId(1),
        message: Message::Heartbeat {
            ballot: Ballot::ZERO,
            decided_below: Instance(0),
            voting: true,
            merge_need: 0,
            hears: 0,
            safe: SafeReport::default(),
        },
    };
    let mut bytes = BytesMut::from(&encode(&heartbeat)[..]);
    let last = bytes.len() - 1 - 8 - 4 - 8 - 8; // the `voting` byte, before `merge_need`, `hears`, `safe`
    bytes[last] = 2;
    assert_eq!(
        decode_envelope(bytes.freeze()),
        Err(DecodeError::UnknownTag {
            what: "bool",
            tag: 2
        })
    );
    let skip_zero = Envelope {
        stream: StreamId(1),
        message: Message::Accept {
            instance: Instance(1),
            ballot: Ballot::ZERO,
            batch: Batch::Skip(0),
        },
    };
    assert!(matches!(
        decode_envelope(encode(&skip_zero)),
        Err(DecodeError::Invalid(_))
    ));
    let unknown = Bytes::from_static(&[0, 0, 0, 0, 200]);
    assert_eq!(
        decode_envelope(unknown),
        Err(DecodeError::UnknownTag {
            what: "message",
            tag: 200
        })
    );
}

#[test]
fn huge_counts_fail_without_allocating() {
    // Propose claiming u32::MAX values in a 13-byte input.
    let bytes = Bytes::from_static(&[0, 0, 0, 0, 1, 255, 255, 255, 255, 0, 0, 0, 0]);
    assert_eq!(decode_envelope(bytes), Err(DecodeError::Truncated));
}

/// The frame format relies on this: a Hello body is 16 bytes, so a
/// flipped kind byte can never turn a valid envelope into a Hello or
/// back. Each message below is its variant's smallest encoding (empty
/// vectors, `None`, null batches); fields only add bytes.
#[test]
fn no_envelope_encodes_to_sixteen_bytes() {
    let (i, b, n) = (Instance(0), Ballot::ZERO, NodeId(0));
    let smallest = [
        Message::Propose {
            values: vec![],
            hops: 0,
        },
        Message::Phase1 {
            ballot: b,
            from: i,
            to: i,
            votes: 0,
            accepted: vec![],
            accepted_end: i,
            trimmed_below: i,
            hops: 0,
        },
        Message::Phase2 {
            ballot: b,
            instance: i,
            batch: Batch::Null,
            votes: 0,
            last: n,
            hops: 0,
        },
        Message::Decision {
            instance: i,
            ballot: b,
            batch: None,
            decided_by: n,
            hops: 0,
        },
        Message::Reject {
            ballot: b,
            promised: b,
            instance: None,
        },
        Message::RetransmitRequest { from: i, to: i },
        Message::RetransmitReply {
            decided: vec![],
            trimmed_below: i,
        },
        Message::Prepare {
            instance: i,
            ballot: b,
        },
        Message::Promise {
            instance: i,
            ballot: b,
            accepted: None,
        },
        Message::Accept {
            instance: i,
            ballot: b,
            batch: Batch::Null,
        },
        Message::AcceptAck {
            instance: i,
            ballot: b,
        },
        Message::Heartbeat {
            ballot: b,
            decided_below: i,
            voting: false,
            merge_need: 0,
            hears: 0,
            safe: SafeReport::default(),
        },
    ];
    let lens: Vec<usize> = smallest
        .into_iter()
        .map(|message| {
            encode(&Envelope {
                stream: StreamId(0),
                message,
            })
            .len()
        })
        .collect();
    assert_eq!(lens, [13, 57, 34, 30, 22, 21, 17, 21, 22, 22, 21, 50]);
    // The only variant below 16 bytes is an empty Propose; one value
    // adds at least 21 bytes.
    assert_eq!(VALUE_BYTES_MIN, 21);
}
