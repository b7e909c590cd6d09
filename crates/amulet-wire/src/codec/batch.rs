//! Values and batches: a value is its id, its kind, a u32 length and the
//! bytes; a batch is a tag then values, a skip count or nothing. The
//! acceptor log stores votes in this encoding too.

use super::fields::put_len;
use super::{tag, U32_BYTES, VALUE_BYTES_MIN};
use crate::error::DecodeError;
use crate::message::{Batch, Value, ValueKind};
use crate::reader::Reader;
use amulet_types::{NodeId, ValueId};
use bytes::{BufMut, BytesMut};

pub(super) fn put_value(value: &Value, out: &mut BytesMut) {
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

pub(super) fn put_values(values: &[Value], out: &mut BytesMut) {
    put_len(values.len(), out);
    for value in values {
        put_value(value, out);
    }
}

pub(super) fn put_batch(batch: &Batch, out: &mut BytesMut) {
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

pub(super) fn values_len(values: &[Value]) -> usize {
    U32_BYTES
        + values
            .iter()
            .map(|v| VALUE_BYTES_MIN + v.bytes.len())
            .sum::<usize>()
}

pub(super) fn batch_len(batch: &Batch) -> usize {
    1 + match batch {
        Batch::Values(values) => values_len(values),
        Batch::Skip(_) => 8,
        Batch::Null => 0,
    }
}

pub(super) fn get_value(r: &mut Reader) -> Result<Value, DecodeError> {
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

pub(super) fn get_values(r: &mut Reader) -> Result<Vec<Value>, DecodeError> {
    let count = r.count(VALUE_BYTES_MIN)?;
    let mut values = Vec::with_capacity(count);
    for _ in 0..count {
        values.push(get_value(r)?);
    }
    Ok(values)
}

pub(super) fn get_batch(r: &mut Reader) -> Result<Batch, DecodeError> {
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
