//! The fields messages are made of: lengths and counts, ballots,
//! instances, option markers. Decoders read through [`Reader`], which
//! checks every read against the bytes there.

use crate::error::DecodeError;
use crate::reader::Reader;
use amulet_types::{Ballot, Instance};
use bytes::{BufMut, BytesMut};

pub(super) fn put_len(len: usize, out: &mut BytesMut) {
    let len = u32::try_from(len).expect("amulet-wire: length or count exceeds u32::MAX");
    out.put_u32_le(len);
}

pub(super) fn put_ballot(ballot: Ballot, out: &mut BytesMut) {
    out.put_u32_le(ballot.round);
    out.put_u32_le(ballot.node);
}

pub(super) fn put_instance(instance: Instance, out: &mut BytesMut) {
    out.put_u64_le(instance.0);
}

pub(super) fn get_ballot(r: &mut Reader) -> Result<Ballot, DecodeError> {
    Ok(Ballot {
        round: r.u32()?,
        node: r.u32()?,
    })
}

pub(super) fn get_instance(r: &mut Reader) -> Result<Instance, DecodeError> {
    Ok(Instance(r.u64()?))
}

/// Reads an option marker: whether a value follows.
pub(super) fn get_some(r: &mut Reader) -> Result<bool, DecodeError> {
    match r.u8()? {
        0 => Ok(false),
        1 => Ok(true),
        tag => Err(DecodeError::UnknownTag {
            what: "option",
            tag,
        }),
    }
}
