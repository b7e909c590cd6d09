//! The binary encoding of an [`Envelope`].
//!
//! Layout, all integers little endian, no padding:
//! envelope = stream u32, message tag u8, the message's fields in
//! declaration order. A `Ballot` is round u32 then node u32, an `Instance`
//! u64, a `NodeId` u32, a `ValueId` proposer u32, incarnation u32,
//! sequence u64. A value is its id, a u32 length and the bytes. A batch is
//! a tag u8 (values, skip, null) then a u32 count and values, a u64 count,
//! or nothing. An `Option` is 0 or 1 then the value; a bool is 0 or 1;
//! vectors are a u32 count then the elements.
//!
//! Decoding accepts exactly the canonical encodings (tags, bools and
//! option markers must be exact, no trailing bytes), so any accepted input
//! re-encodes to itself.

use crate::error::DecodeError;
use crate::message::{Accepted, Batch, Envelope, Message, Value, ValueKind};
use crate::reader::Reader;
use amulet_types::{Ballot, Instance, NodeId, StreamId, ValueId};
use bytes::{BufMut, Bytes, BytesMut};

mod tag {
    pub(super) const PROPOSE: u8 = 1;
    pub(super) const PHASE1: u8 = 2;
    pub(super) const PHASE2: u8 = 3;
    pub(super) const DECISION: u8 = 4;
    pub(super) const REJECT: u8 = 5;
    pub(super) const RETRANSMIT_REQUEST: u8 = 6;
    pub(super) const RETRANSMIT_REPLY: u8 = 7;
    pub(super) const PREPARE: u8 = 8;
    pub(super) const PROMISE: u8 = 9;
    pub(super) const ACCEPT: u8 = 10;
    pub(super) const ACCEPT_ACK: u8 = 11;
    pub(super) const HEARTBEAT: u8 = 12;

    pub(super) const BATCH_VALUES: u8 = 0;
    pub(super) const BATCH_SKIP: u8 = 1;
    pub(super) const BATCH_NULL: u8 = 2;
}

const BALLOT_BYTES: usize = 8;
const INSTANCE_BYTES: usize = 8;
const NODE_BYTES: usize = 4;
const U32_BYTES: usize = 4;
const VALUE_ID_BYTES: usize = 16;
/// A value with no bytes: id, kind and length.
const VALUE_BYTES_MIN: usize = VALUE_ID_BYTES + 1 + U32_BYTES;
/// A null batch: just its tag.
const BATCH_BYTES_MIN: usize = 1;
/// An `Accepted` with a null batch.
const ACCEPTED_BYTES_MIN: usize = INSTANCE_BYTES + BALLOT_BYTES + BATCH_BYTES_MIN;
/// An `(Instance, Batch)` with a null batch.
const DECIDED_BYTES_MIN: usize = INSTANCE_BYTES + BATCH_BYTES_MIN;

/// Appends the encoding of `envelope` to `out`, reserving its exact length
/// first so the buffer grows at most once.
///
/// # Panics
///
/// If a vector or a value's bytes are longer than `u32::MAX`, which no
/// configuration allows (values are limited to 64 MiB).
pub fn encode_envelope(envelope: &Envelope, out: &mut BytesMut) {
    out.reserve(encoded_len(envelope));
    put_envelope(envelope, out);
}

/// [`encode_envelope`] without the reservation, for callers that already
/// reserved room (a frame reserves header and body at once).
pub(crate) fn put_envelope(envelope: &Envelope, out: &mut BytesMut) {
    out.put_u32_le(envelope.stream.0);
    put_message(&envelope.message, out);
}

/// The exact number of bytes [`encode_envelope`] writes for `envelope`.
pub fn encoded_len(envelope: &Envelope) -> usize {
    U32_BYTES + message_len(&envelope.message)
}

/// Decodes one envelope that spans all of `bytes`. Values' bytes are slices
/// of `bytes` (no copy), so they keep the input's buffer alive.
pub fn decode_envelope(bytes: Bytes) -> Result<Envelope, DecodeError> {
    let mut r = Reader::new(bytes);
    let stream = StreamId(r.u32()?);
    let message = get_message(&mut r)?;
    r.finish()?;
    Ok(Envelope { stream, message })
}

/// Appends the encoding of one batch (the acceptor log stores votes in the
/// wire encoding, so a batch is encoded one way everywhere).
pub fn encode_batch(batch: &Batch, out: &mut BytesMut) {
    out.reserve(batch_len(batch));
    put_batch(batch, out);
}

/// The exact number of bytes [`encode_batch`] writes for `batch`.
pub fn batch_encoded_len(batch: &Batch) -> usize {
    batch_len(batch)
}

/// Decodes one batch that spans all of `bytes`.
pub fn decode_batch(bytes: Bytes) -> Result<Batch, DecodeError> {
    let mut r = Reader::new(bytes);
    let batch = get_batch(&mut r)?;
    r.finish()?;
    Ok(batch)
}

// ---- encoding ----

fn put_len(len: usize, out: &mut BytesMut) {
    let len = u32::try_from(len).expect("amulet-wire: length or count exceeds u32::MAX");
    out.put_u32_le(len);
}

fn put_ballot(ballot: Ballot, out: &mut BytesMut) {
    out.put_u32_le(ballot.round);
    out.put_u32_le(ballot.node);
}

fn put_instance(instance: Instance, out: &mut BytesMut) {
    out.put_u64_le(instance.0);
}

fn put_value(value: &Value, out: &mut BytesMut) {
    out.put_u32_le(value.id.proposer.0);
    out.put_u32_le(value.id.incarnation);
    out.put_u64_le(value.id.sequence);
    out.put_u8(match value.kind {
        ValueKind::Application => 0,
        ValueKind::Control => 1,
        ValueKind::Barrier => 2,
    });
    put_len(value.bytes.len(), out);
    out.put_slice(&value.bytes);
}

fn put_values(values: &[Value], out: &mut BytesMut) {
    put_len(values.len(), out);
    for value in values {
        put_value(value, out);
    }
}

fn put_batch(batch: &Batch, out: &mut BytesMut) {
    match batch {
        Batch::Values(values) => {
            out.put_u8(tag::BATCH_VALUES);
            put_values(values, out);
        }
        Batch::Skip(count) => {
            out.put_u8(tag::BATCH_SKIP);
            out.put_u64_le(*count);
        }
        Batch::Null => out.put_u8(tag::BATCH_NULL),
    }
}

fn put_message(message: &Message, out: &mut BytesMut) {
    match message {
        Message::Propose { values, hops } => {
            out.put_u8(tag::PROPOSE);
            put_values(values, out);
            out.put_u32_le(*hops);
        }
        Message::Phase1 {
            ballot,
            from,
            to,
            votes,
            accepted,
            accepted_end,
            trimmed_below,
            hops,
        } => {
            out.put_u8(tag::PHASE1);
            put_ballot(*ballot, out);
            put_instance(*from, out);
            put_instance(*to, out);
            out.put_u32_le(*votes);
            put_len(accepted.len(), out);
            for a in accepted {
                put_instance(a.instance, out);
                put_ballot(a.ballot, out);
                put_batch(&a.batch, out);
            }
            put_instance(*accepted_end, out);
            put_instance(*trimmed_below, out);
            out.put_u32_le(*hops);
        }
        Message::Phase2 {
            ballot,
            instance,
            batch,
            votes,
            last,
            hops,
        } => {
            out.put_u8(tag::PHASE2);
            put_ballot(*ballot, out);
            put_instance(*instance, out);
            put_batch(batch, out);
            out.put_u32_le(*votes);
            out.put_u32_le(last.0);
            out.put_u32_le(*hops);
        }
        Message::Decision {
            instance,
            ballot,
            batch,
            decided_by,
            hops,
        } => {
            out.put_u8(tag::DECISION);
            put_instance(*instance, out);
            put_ballot(*ballot, out);
            match batch {
                None => out.put_u8(0),
                Some(batch) => {
                    out.put_u8(1);
                    put_batch(batch, out);
                }
            }
            out.put_u32_le(decided_by.0);
            out.put_u32_le(*hops);
        }
        Message::Reject {
            ballot,
            promised,
            instance,
        } => {
            out.put_u8(tag::REJECT);
            put_ballot(*ballot, out);
            put_ballot(*promised, out);
            match instance {
                None => out.put_u8(0),
                Some(instance) => {
                    out.put_u8(1);
                    put_instance(*instance, out);
                }
            }
        }
        Message::RetransmitRequest { from, to } => {
            out.put_u8(tag::RETRANSMIT_REQUEST);
            put_instance(*from, out);
            put_instance(*to, out);
        }
        Message::RetransmitReply {
            decided,
            trimmed_below,
        } => {
            out.put_u8(tag::RETRANSMIT_REPLY);
            put_len(decided.len(), out);
            for (instance, batch) in decided {
                put_instance(*instance, out);
                put_batch(batch, out);
            }
            put_instance(*trimmed_below, out);
        }
        Message::Prepare { instance, ballot } => {
            out.put_u8(tag::PREPARE);
            put_instance(*instance, out);
            put_ballot(*ballot, out);
        }
        Message::Promise {
            instance,
            ballot,
            accepted,
        } => {
            out.put_u8(tag::PROMISE);
            put_instance(*instance, out);
            put_ballot(*ballot, out);
            match accepted {
                None => out.put_u8(0),
                Some((ballot, batch)) => {
                    out.put_u8(1);
                    put_ballot(*ballot, out);
                    put_batch(batch, out);
                }
            }
        }
        Message::Accept {
            instance,
            ballot,
            batch,
        } => {
            out.put_u8(tag::ACCEPT);
            put_instance(*instance, out);
            put_ballot(*ballot, out);
            put_batch(batch, out);
        }
        Message::AcceptAck { instance, ballot } => {
            out.put_u8(tag::ACCEPT_ACK);
            put_instance(*instance, out);
            put_ballot(*ballot, out);
        }
        Message::Heartbeat {
            ballot,
            decided_below,
            voting,
            merge_need,
            hears,
            safe,
        } => {
            out.put_u8(tag::HEARTBEAT);
            put_ballot(*ballot, out);
            put_instance(*decided_below, out);
            out.put_u8(u8::from(*voting));
            out.put_u64_le(*merge_need);
            out.put_u32_le(*hears);
            put_instance(*safe, out);
        }
    }
}

// ---- lengths (must mirror the encoding exactly) ----

fn values_len(values: &[Value]) -> usize {
    U32_BYTES
        + values
            .iter()
            .map(|v| VALUE_BYTES_MIN + v.bytes.len())
            .sum::<usize>()
}

fn batch_len(batch: &Batch) -> usize {
    1 + match batch {
        Batch::Values(values) => values_len(values),
        Batch::Skip(_) => 8,
        Batch::Null => 0,
    }
}

/// Length of a message including its tag byte.
fn message_len(message: &Message) -> usize {
    1 + match message {
        Message::Propose { values, .. } => values_len(values) + U32_BYTES,
        Message::Phase1 { accepted, .. } => {
            BALLOT_BYTES
                + 2 * INSTANCE_BYTES
                + U32_BYTES
                + U32_BYTES
                + accepted
                    .iter()
                    .map(|a| INSTANCE_BYTES + BALLOT_BYTES + batch_len(&a.batch))
                    .sum::<usize>()
                + 2 * INSTANCE_BYTES
                + U32_BYTES
        }
        Message::Phase2 { batch, .. } => {
            BALLOT_BYTES + INSTANCE_BYTES + batch_len(batch) + U32_BYTES + NODE_BYTES + U32_BYTES
        }
        Message::Decision { batch, .. } => {
            INSTANCE_BYTES
                + BALLOT_BYTES
                + 1
                + batch.as_ref().map_or(0, batch_len)
                + NODE_BYTES
                + U32_BYTES
        }
        Message::Reject { instance, .. } => {
            2 * BALLOT_BYTES + 1 + instance.map_or(0, |_| INSTANCE_BYTES)
        }
        Message::RetransmitRequest { .. } => 2 * INSTANCE_BYTES,
        Message::RetransmitReply { decided, .. } => {
            U32_BYTES
                + decided
                    .iter()
                    .map(|(_, batch)| INSTANCE_BYTES + batch_len(batch))
                    .sum::<usize>()
                + INSTANCE_BYTES
        }
        Message::Prepare { .. } | Message::AcceptAck { .. } => INSTANCE_BYTES + BALLOT_BYTES,
        Message::Promise { accepted, .. } => {
            INSTANCE_BYTES
                + BALLOT_BYTES
                + 1
                + accepted
                    .as_ref()
                    .map_or(0, |(_, batch)| BALLOT_BYTES + batch_len(batch))
        }
        Message::Accept { batch, .. } => INSTANCE_BYTES + BALLOT_BYTES + batch_len(batch),
        Message::Heartbeat { .. } => BALLOT_BYTES + 2 * INSTANCE_BYTES + 1 + 8 + U32_BYTES,
    }
}

// ---- decoding ----

fn get_ballot(r: &mut Reader) -> Result<Ballot, DecodeError> {
    Ok(Ballot {
        round: r.u32()?,
        node: r.u32()?,
    })
}

fn get_instance(r: &mut Reader) -> Result<Instance, DecodeError> {
    Ok(Instance(r.u64()?))
}

/// Reads an option marker: whether a value follows.
fn get_some(r: &mut Reader) -> Result<bool, DecodeError> {
    match r.u8()? {
        0 => Ok(false),
        1 => Ok(true),
        tag => Err(DecodeError::UnknownTag {
            what: "option",
            tag,
        }),
    }
}

fn get_value(r: &mut Reader) -> Result<Value, DecodeError> {
    let id = ValueId {
        proposer: NodeId(r.u32()?),
        incarnation: r.u32()?,
        sequence: r.u64()?,
    };
    let kind = match r.u8()? {
        0 => ValueKind::Application,
        1 => ValueKind::Control,
        2 => ValueKind::Barrier,
        tag => {
            return Err(DecodeError::UnknownTag {
                what: "value kind",
                tag,
            })
        }
    };
    let len_bytes = r.u32()? as usize;
    Ok(Value {
        id,
        kind,
        bytes: r.slice(len_bytes)?,
    })
}

fn get_values(r: &mut Reader) -> Result<Vec<Value>, DecodeError> {
    let count = r.count(VALUE_BYTES_MIN)?;
    let mut values = Vec::with_capacity(count);
    for _ in 0..count {
        values.push(get_value(r)?);
    }
    Ok(values)
}

fn get_batch(r: &mut Reader) -> Result<Batch, DecodeError> {
    match r.u8()? {
        tag::BATCH_VALUES => Ok(Batch::Values(get_values(r)?)),
        tag::BATCH_SKIP => match r.u64()? {
            // A skip of zero instances would stall the merge (it must
            // stand for at least one instance).
            0 => Err(DecodeError::Invalid("skip batch with count 0".into())),
            count => Ok(Batch::Skip(count)),
        },
        tag::BATCH_NULL => Ok(Batch::Null),
        tag => Err(DecodeError::UnknownTag { what: "batch", tag }),
    }
}

fn get_message(r: &mut Reader) -> Result<Message, DecodeError> {
    let message = match r.u8()? {
        tag::PROPOSE => Message::Propose {
            values: get_values(r)?,
            hops: r.u32()?,
        },
        tag::PHASE1 => {
            let ballot = get_ballot(r)?;
            let from = get_instance(r)?;
            let to = get_instance(r)?;
            let votes = r.u32()?;
            let count = r.count(ACCEPTED_BYTES_MIN)?;
            let mut accepted = Vec::with_capacity(count);
            for _ in 0..count {
                accepted.push(Accepted {
                    instance: get_instance(r)?,
                    ballot: get_ballot(r)?,
                    batch: get_batch(r)?,
                });
            }
            Message::Phase1 {
                ballot,
                from,
                to,
                votes,
                accepted,
                accepted_end: get_instance(r)?,
                trimmed_below: get_instance(r)?,
                hops: r.u32()?,
            }
        }
        tag::PHASE2 => Message::Phase2 {
            ballot: get_ballot(r)?,
            instance: get_instance(r)?,
            batch: get_batch(r)?,
            votes: r.u32()?,
            last: NodeId(r.u32()?),
            hops: r.u32()?,
        },
        tag::DECISION => Message::Decision {
            instance: get_instance(r)?,
            ballot: get_ballot(r)?,
            batch: if get_some(r)? {
                Some(get_batch(r)?)
            } else {
                None
            },
            decided_by: NodeId(r.u32()?),
            hops: r.u32()?,
        },
        tag::REJECT => Message::Reject {
            ballot: get_ballot(r)?,
            promised: get_ballot(r)?,
            instance: if get_some(r)? {
                Some(get_instance(r)?)
            } else {
                None
            },
        },
        tag::RETRANSMIT_REQUEST => Message::RetransmitRequest {
            from: get_instance(r)?,
            to: get_instance(r)?,
        },
        tag::RETRANSMIT_REPLY => {
            let count = r.count(DECIDED_BYTES_MIN)?;
            let mut decided = Vec::with_capacity(count);
            for _ in 0..count {
                decided.push((get_instance(r)?, get_batch(r)?));
            }
            Message::RetransmitReply {
                decided,
                trimmed_below: get_instance(r)?,
            }
        }
        tag::PREPARE => Message::Prepare {
            instance: get_instance(r)?,
            ballot: get_ballot(r)?,
        },
        tag::PROMISE => Message::Promise {
            instance: get_instance(r)?,
            ballot: get_ballot(r)?,
            accepted: if get_some(r)? {
                Some((get_ballot(r)?, get_batch(r)?))
            } else {
                None
            },
        },
        tag::ACCEPT => Message::Accept {
            instance: get_instance(r)?,
            ballot: get_ballot(r)?,
            batch: get_batch(r)?,
        },
        tag::ACCEPT_ACK => Message::AcceptAck {
            instance: get_instance(r)?,
            ballot: get_ballot(r)?,
        },
        tag::HEARTBEAT => Message::Heartbeat {
            ballot: get_ballot(r)?,
            decided_below: get_instance(r)?,
            voting: r.bool()?,
            merge_need: r.u64()?,
            hears: r.u32()?,
            safe: get_instance(r)?,
        },
        tag => {
            return Err(DecodeError::UnknownTag {
                what: "message",
                tag,
            })
        }
    };
    Ok(message)
}

#[cfg(test)]
mod tests {
    use super::*;

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
                safe: Instance(0),
            },
        };
        let mut bytes = BytesMut::from(&encode(&heartbeat)[..]);
        let last = bytes.len() - 1 - 8 - 4 - 8; // the `voting` byte, before `merge_need`, `hears`, `safe`
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
                safe: Instance(0),
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
        assert_eq!(lens, [13, 57, 34, 30, 22, 21, 17, 21, 22, 22, 21, 42]);
        // The only variant below 16 bytes is an empty Propose; one value
        // adds at least 21 bytes.
        assert_eq!(VALUE_BYTES_MIN, 21);
    }
}
