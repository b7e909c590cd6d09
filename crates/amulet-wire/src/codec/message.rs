//! The messages of the ordering layer, each a tag byte then its fields
//! in declaration order; [`message_len`] mirrors [`put_message`] exactly
//! (a frame reserves its length before encoding).

use super::batch::{batch_len, get_batch, get_values, put_batch, put_values, values_len};
use super::fields::{get_ballot, get_instance, get_some, put_ballot, put_instance, put_len};
use super::{
    tag, ACCEPTED_BYTES_MIN, BALLOT_BYTES, DECIDED_BYTES_MIN, INSTANCE_BYTES, NODE_BYTES, U32_BYTES,
};
use crate::error::DecodeError;
use crate::message::{Accepted, Message};
use crate::reader::Reader;
use amulet_types::{MapVersion, NodeId, SafeReport};
use bytes::{BufMut, BytesMut};

pub(super) fn put_message(message: &Message, out: &mut BytesMut) {
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
            put_instance(safe.below, out);
            out.put_u64_le(safe.map_version.0);
        }
    }
}

/// Length of a message including its tag byte.
pub(super) fn message_len(message: &Message) -> usize {
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
        Message::Heartbeat { .. } => BALLOT_BYTES + 2 * INSTANCE_BYTES + 1 + 8 + U32_BYTES + 8,
    }
}

pub(super) fn get_message(r: &mut Reader) -> Result<Message, DecodeError> {
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
            safe: SafeReport {
                below: get_instance(r)?,
                map_version: MapVersion(r.u64()?),
            },
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
