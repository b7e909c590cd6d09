//! Subscription requests of Elastic Paxos (thesis ch. 4, Algorithm 1 and
//! §4.4.3), carried as control values ([`amulet_wire::ValueKind::Control`])
//! in the streams themselves, so that every subscriber of a stream sees
//! them at the same position of the merged order.
//!
//! - `Subscribe(G, S_N)` is ordered twice: in the new stream S_N and in a
//!   stream G merges already. Each replica of G finds the copy in S_N by
//!   recovering S_N from its first instance, and starts merging S_N at the
//!   round after the later of the two copies (the merge point).
//! - `Prepare(G, S_N)` (the hint of §4.4.3), ordered in a stream G merges,
//!   lets the replicas start recovering S_N before the copy in G arrives,
//!   so the merge does not stop while they do.
//! - `Unsubscribe(G, S)`, ordered in any stream G merges, removes S from
//!   G's merge at the end of the round it is merged in.
//!
//! A request is named by the id of its first copy's value (node,
//! incarnation, sequence): re-broadcast copies carry the same name, and a
//! request that already took effect is ignored.

use crate::group::GroupId;
use amulet_types::{NodeId, StreamId, ValueId};
use bytes::{BufMut, Bytes, BytesMut};

/// Format version of an encoded control value.
const VERSION: u8 = 1;
/// Every control value has the same length: version, tag, group, stream,
/// request (node, incarnation, sequence).
pub const CONTROL_BYTES: usize = 1 + 1 + 4 + 4 + 4 + 4 + 8;

mod tag {
    pub const PREPARE: u8 = 1;
    pub const SUBSCRIBE: u8 = 2;
    pub const UNSUBSCRIBE: u8 = 3;
}

/// A subscription change, as ordered in a stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Control {
    /// What is asked.
    pub op: ControlOp,
    /// The merge group (subscriber) it is for.
    pub group: GroupId,
    /// The stream subscribed to, prepared or left.
    pub stream: StreamId,
    /// The request's name.
    pub request: ValueId,
}

/// The kinds of [`Control`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ControlOp {
    /// Start recovering `stream`: a subscription to it follows.
    Prepare,
    /// Subscribe to `stream` (one of the request's two copies).
    Subscribe,
    /// Stop merging `stream`.
    Unsubscribe,
}

/// Why bytes are not a control value. A stream may carry anything, so the
/// merge ignores (and counts) control values it cannot read, the same way
/// at every subscriber.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ControlError {
    /// Not exactly [`CONTROL_BYTES`] long.
    Length(usize),
    /// A format version this code does not know.
    Version(u8),
    /// An unknown operation tag.
    Tag(u8),
}

impl Control {
    /// The encoded form, [`CONTROL_BYTES`] long.
    pub fn encode(&self) -> Bytes {
        let mut out = BytesMut::with_capacity(CONTROL_BYTES);
        out.put_u8(VERSION);
        out.put_u8(match self.op {
            ControlOp::Prepare => tag::PREPARE,
            ControlOp::Subscribe => tag::SUBSCRIBE,
            ControlOp::Unsubscribe => tag::UNSUBSCRIBE,
        });
        out.put_u32_le(self.group.0);
        out.put_u32_le(self.stream.0);
        out.put_u32_le(self.request.proposer.0);
        out.put_u32_le(self.request.incarnation);
        out.put_u64_le(self.request.sequence);
        debug_assert_eq!(out.len(), CONTROL_BYTES);
        out.freeze()
    }

    /// Decodes `bytes`; total: every input is a control value or an error.
    pub fn decode(bytes: &[u8]) -> Result<Control, ControlError> {
        if bytes.len() != CONTROL_BYTES {
            return Err(ControlError::Length(bytes.len()));
        }
        if bytes[0] != VERSION {
            return Err(ControlError::Version(bytes[0]));
        }
        let op = match bytes[1] {
            tag::PREPARE => ControlOp::Prepare,
            tag::SUBSCRIBE => ControlOp::Subscribe,
            tag::UNSUBSCRIBE => ControlOp::Unsubscribe,
            other => return Err(ControlError::Tag(other)),
        };
        let u32_at =
            |at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().expect("length checked"));
        let sequence = u64::from_le_bytes(bytes[18..26].try_into().expect("length checked"));
        Ok(Control {
            op,
            group: GroupId(u32_at(2)),
            stream: StreamId(u32_at(6)),
            request: ValueId {
                proposer: NodeId(u32_at(10)),
                incarnation: u32_at(14),
                sequence,
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn control(op: ControlOp) -> Control {
        Control {
            op,
            group: GroupId(3),
            stream: StreamId(7),
            request: ValueId {
                proposer: NodeId(2),
                incarnation: 5,
                sequence: 1 << 40,
            },
        }
    }

    #[test]
    fn every_operation_round_trips() {
        for op in [
            ControlOp::Prepare,
            ControlOp::Subscribe,
            ControlOp::Unsubscribe,
        ] {
            let c = control(op);
            assert_eq!(Control::decode(&c.encode()), Ok(c));
        }
    }

    #[test]
    fn bad_bytes_are_refused_with_the_reason() {
        let good = control(ControlOp::Subscribe).encode().to_vec();
        assert_eq!(Control::decode(&good[..5]), Err(ControlError::Length(5)));
        let mut v = good.clone();
        v[0] = 9;
        assert_eq!(Control::decode(&v), Err(ControlError::Version(9)));
        let mut t = good;
        t[1] = 0;
        assert_eq!(Control::decode(&t), Err(ControlError::Tag(0)));
    }

    proptest! {
        #[test]
        fn decoding_is_total(bytes in prop::collection::vec(any::<u8>(), 0..64)) {
            if let Ok(c) = Control::decode(&bytes) {
                prop_assert_eq!(c.encode().to_vec(), bytes);
            }
        }
    }
}
