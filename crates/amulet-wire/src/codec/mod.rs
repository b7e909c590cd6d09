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
//!
//! One file per concept: `fields.rs` the fields every message is made of
//! (lengths, ballots, instances, option markers), `batch.rs` values and
//! batches (also the acceptor log's encoding of a vote), `message.rs` the
//! messages; their lengths are computed next to their encoders.

mod batch;
mod fields;
mod message;
#[cfg(test)]
mod tests;

use crate::error::DecodeError;
use crate::message::{Batch, Envelope};
use crate::reader::Reader;
use amulet_types::StreamId;
use batch::{batch_len, get_batch, put_batch};
use bytes::{BufMut, Bytes, BytesMut};
use message::{get_message, message_len, put_message};

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
