//! The durable log's record format.
//!
//! Every record is `[len u32][!len u32][crc32c u32][kind u8][payload]`,
//! little endian, where `len` counts kind and payload and the CRC covers
//! them. The complemented copy of the length tells a damaged length (an
//! error) from a record that a crash cut short (a torn tail): without it,
//! a flipped length bit in the middle of the newest segment would look
//! like a torn tail and silently drop every record after it.
//! Every segment starts with a [`Record::Segment`] record that restates the
//! acceptor's promises and trim point, so older segments can be deleted
//! without losing them. Votes carry their batch in the wire encoding.
//!
//! A record may be *tagged* with a stream: its body is then
//! `[TAGGED][stream u32][kind][payload]`. A per-stream [`crate::DurableLog`]
//! writes untagged records; the node-wide [`crate::NodeLog`], which keeps
//! every stream of a node in one file so that one fsync makes a whole
//! group commit durable, tags each record with its stream.

use amulet_types::{Ballot, Instance, StreamId};
use amulet_wire::{batch_encoded_len, decode_batch, encode_batch, Batch};
use bytes::{BufMut, Bytes, BytesMut};

/// Bytes before a record's kind: length, its complement and CRC.
pub(crate) const RECORD_HEADER_BYTES: usize = 12;

/// Identifies a segment file's first record (and the format version).
pub(crate) const SEGMENT_MAGIC: u64 = u64::from_le_bytes(*b"AMLTLOG1");

/// The largest record accepted when reading: larger lengths are damage.
/// A vote's batch is at most one frame (a few MiB); 64 MiB leaves room.
pub(crate) const RECORD_BYTES_MAX: usize = 64 << 20;

mod kind {
    pub const SEGMENT: u8 = 1;
    pub const BOOT: u8 = 2;
    pub const PROMISE: u8 = 3;
    pub const INSTANCE_PROMISE: u8 = 4;
    pub const VOTE: u8 = 5;
    pub const DECIDED: u8 = 6;
    pub const TRIM: u8 = 7;
    pub const CLOSE: u8 = 8;
    pub const AMNESIA: u8 = 9;
    /// Prefix of a record of one stream of a node-wide log.
    pub const TAGGED: u8 = 10;
}

/// The acceptor state restated at the start of every segment.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Snapshot {
    pub(crate) promised: Ballot,
    pub(crate) instance_promises: Vec<(Instance, Ballot)>,
    pub(crate) trimmed_below: Instance,
    pub(crate) end: Instance,
    pub(crate) boot_id: u128,
    pub(crate) amnesic: bool,
}

/// One log record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Record {
    /// First record of segment `sequence`.
    Segment { sequence: u64, snapshot: Snapshot },
    /// The log was opened on this boot of the machine.
    Boot { boot_id: u128 },
    /// Promise for every instance.
    Promise { ballot: Ballot },
    /// Promise for one instance (gap repair).
    InstancePromise { instance: Instance, ballot: Ballot },
    /// A vote (or a learned decision).
    Vote {
        instance: Instance,
        ballot: Ballot,
        decided: bool,
        batch: Batch,
    },
    /// The vote of `ballot` in `instance` is the decided value.
    Decided { instance: Instance, ballot: Ballot },
    /// Instances below `below` are forgotten.
    Trim { below: Instance },
    /// The log was closed cleanly: everything before is durable.
    Close,
    /// The log was found to have lost writes the acceptor acted on; the
    /// acceptor must never vote again in this stream.
    Amnesia,
}

impl Record {
    /// Appends the record, framed, to `out`; tagged with `stream` if any.
    pub(crate) fn encode_tagged(&self, stream: Option<StreamId>, out: &mut BytesMut) {
        let start = out.len();
        out.put_u32_le(0);
        out.put_u32_le(0);
        out.put_u32_le(0);
        if let Some(stream) = stream {
            out.put_u8(kind::TAGGED);
            out.put_u32_le(stream.0);
        }
        match self {
            Record::Segment { sequence, snapshot } => {
                out.put_u8(kind::SEGMENT);
                out.put_u64_le(SEGMENT_MAGIC);
                out.put_u64_le(*sequence);
                put_ballot(out, snapshot.promised);
                out.put_u64_le(snapshot.trimmed_below.0);
                out.put_u64_le(snapshot.end.0);
                out.put_u128_le(snapshot.boot_id);
                out.put_u8(u8::from(snapshot.amnesic));
                out.put_u32_le(
                    u32::try_from(snapshot.instance_promises.len())
                        .expect("instance promises fit u32"),
                );
                for (instance, ballot) in &snapshot.instance_promises {
                    out.put_u64_le(instance.0);
                    put_ballot(out, *ballot);
                }
            }
            Record::Boot { boot_id } => {
                out.put_u8(kind::BOOT);
                out.put_u128_le(*boot_id);
            }
            Record::Promise { ballot } => {
                out.put_u8(kind::PROMISE);
                put_ballot(out, *ballot);
            }
            Record::InstancePromise { instance, ballot } => {
                out.put_u8(kind::INSTANCE_PROMISE);
                out.put_u64_le(instance.0);
                put_ballot(out, *ballot);
            }
            Record::Vote {
                instance,
                ballot,
                decided,
                batch,
            } => {
                out.reserve(1 + 8 + 8 + 1 + batch_encoded_len(batch));
                out.put_u8(kind::VOTE);
                out.put_u64_le(instance.0);
                put_ballot(out, *ballot);
                out.put_u8(u8::from(*decided));
                encode_batch(batch, out);
            }
            Record::Decided { instance, ballot } => {
                out.put_u8(kind::DECIDED);
                out.put_u64_le(instance.0);
                put_ballot(out, *ballot);
            }
            Record::Trim { below } => {
                out.put_u8(kind::TRIM);
                out.put_u64_le(below.0);
            }
            Record::Close => out.put_u8(kind::CLOSE),
            Record::Amnesia => out.put_u8(kind::AMNESIA),
        }
        let body = &out[start + RECORD_HEADER_BYTES..];
        let len = u32::try_from(body.len()).expect("record fits u32");
        let crc = crc32c::crc32c(body);
        out[start..start + 4].copy_from_slice(&len.to_le_bytes());
        out[start + 4..start + 8].copy_from_slice(&(!len).to_le_bytes());
        out[start + 8..start + 12].copy_from_slice(&crc.to_le_bytes());
    }
}

fn put_ballot(out: &mut BytesMut, ballot: Ballot) {
    out.put_u32_le(ballot.round);
    out.put_u32_le(ballot.node);
}

/// Why bytes at some offset are not a record.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Damage {
    /// The bytes end before the record does, or only zeros follow: what a
    /// crash in the middle of an append leaves (a torn tail).
    Torn,
    /// The record is complete but wrong (checksum or content).
    Bad(String),
}

/// A record as read: its stream tag (if any) and the record.
pub(crate) type Tagged = (Option<StreamId>, Record);

/// Splits the record at `offset` of `data`: `Ok(((tag, record), next offset))`.
pub(crate) fn decode_at(data: &[u8], offset: usize) -> Result<(Tagged, usize), Damage> {
    let rest = &data[offset..];
    if rest.iter().all(|b| *b == 0) {
        // Zeros past the last record: a preallocated file, or a file
        // system that extended the file before the data reached the disk.
        return Err(Damage::Torn);
    }
    if rest.len() < RECORD_HEADER_BYTES {
        return Err(Damage::Torn);
    }
    let word = |i: usize| u32::from_le_bytes(rest[i..i + 4].try_into().expect("4 bytes"));
    let (len, check, crc) = (word(0), word(4), word(8));
    if check != !len {
        return Err(torn_or(
            data,
            offset,
            offset + RECORD_HEADER_BYTES,
            format!("record length {len} fails its check"),
        ));
    }
    let len = len as usize;
    if len == 0 || len > RECORD_BYTES_MAX {
        return Err(Damage::Bad(format!("record length {len}")));
    }
    let Some(body) = rest.get(RECORD_HEADER_BYTES..RECORD_HEADER_BYTES + len) else {
        return Err(Damage::Torn);
    };
    let end = offset + RECORD_HEADER_BYTES + len;
    if crc32c::crc32c(body) != crc {
        // The last record written torn in its middle, or damage.
        return Err(torn_or(data, offset, end, "checksum mismatch".into()));
    }
    let record = decode_body(body).map_err(Damage::Bad)?;
    Ok((record, end))
}

/// The sector a disk writes whole or not at all (the smallest in use).
const SECTOR_BYTES: usize = 512;

/// A damaged record at `start..end` of a file is torn, not corrupt, when
/// only zeros follow it (it is the last thing written: a preallocated file
/// reads as zeros past its data), or when one of its pieces between sector
/// boundaries is all zeros: unwritten bytes read as zeros, and a crash
/// loses the sectors of an unsynced write in no particular order, so a
/// write torn by a crash leaves a zeroed piece, where flipped bits do not.
/// etcd's WAL draws the line the same way (`isTornEntry`).
fn torn_or(data: &[u8], start: usize, end: usize, why: String) -> Damage {
    let end = end.min(data.len());
    if data[end..].iter().all(|b| *b == 0) {
        return Damage::Torn;
    }
    let mut piece = start;
    while piece < end {
        let boundary = (piece / SECTOR_BYTES + 1) * SECTOR_BYTES;
        let piece_end = boundary.min(end);
        if data[piece..piece_end].iter().all(|b| *b == 0) {
            return Damage::Torn;
        }
        piece = piece_end;
    }
    Damage::Bad(why)
}

/// A total reader over one record's body.
struct Cursor<'a> {
    bytes: &'a [u8],
}

impl Cursor<'_> {
    fn take(&mut self, n: usize) -> Result<&[u8], String> {
        if self.bytes.len() < n {
            return Err("record body too short".into());
        }
        let (head, tail) = self.bytes.split_at(n);
        self.bytes = tail;
        Ok(head)
    }
    fn u8(&mut self) -> Result<u8, String> {
        Ok(self.take(1)?[0])
    }
    fn bool(&mut self) -> Result<bool, String> {
        match self.u8()? {
            0 => Ok(false),
            1 => Ok(true),
            other => Err(format!("flag {other}")),
        }
    }
    fn u32(&mut self) -> Result<u32, String> {
        Ok(u32::from_le_bytes(self.take(4)?.try_into().expect("4")))
    }
    fn u64(&mut self) -> Result<u64, String> {
        Ok(u64::from_le_bytes(self.take(8)?.try_into().expect("8")))
    }
    fn u128(&mut self) -> Result<u128, String> {
        Ok(u128::from_le_bytes(self.take(16)?.try_into().expect("16")))
    }
    fn ballot(&mut self) -> Result<Ballot, String> {
        Ok(Ballot {
            round: self.u32()?,
            node: self.u32()?,
        })
    }
    fn instance(&mut self) -> Result<Instance, String> {
        Ok(Instance(self.u64()?))
    }
    fn finish(&self) -> Result<(), String> {
        if self.bytes.is_empty() {
            Ok(())
        } else {
            Err(format!("{} trailing bytes in record", self.bytes.len()))
        }
    }
}

fn decode_body(body: &[u8]) -> Result<Tagged, String> {
    let mut c = Cursor { bytes: body };
    let mut kind = c.u8()?;
    let mut tag = None;
    if kind == kind::TAGGED {
        tag = Some(StreamId(c.u32()?));
        kind = c.u8()?;
        if kind == kind::TAGGED {
            return Err("a tagged record inside a tagged record".into());
        }
    }
    let record = match kind {
        kind::SEGMENT => {
            if c.u64()? != SEGMENT_MAGIC {
                return Err("segment record without the log's magic".into());
            }
            let sequence = c.u64()?;
            let promised = c.ballot()?;
            let trimmed_below = c.instance()?;
            let end = c.instance()?;
            let boot_id = c.u128()?;
            let amnesic = c.bool()?;
            let count = c.u32()? as usize;
            if count > c.bytes.len() / 16 {
                return Err(format!("{count} instance promises in a short record"));
            }
            let mut instance_promises = Vec::with_capacity(count);
            for _ in 0..count {
                instance_promises.push((c.instance()?, c.ballot()?));
            }
            Record::Segment {
                sequence,
                snapshot: Snapshot {
                    promised,
                    instance_promises,
                    trimmed_below,
                    end,
                    boot_id,
                    amnesic,
                },
            }
        }
        kind::BOOT => Record::Boot { boot_id: c.u128()? },
        kind::PROMISE => Record::Promise {
            ballot: c.ballot()?,
        },
        kind::INSTANCE_PROMISE => Record::InstancePromise {
            instance: c.instance()?,
            ballot: c.ballot()?,
        },
        kind::VOTE => {
            let instance = c.instance()?;
            let ballot = c.ballot()?;
            let decided = c.bool()?;
            let rest = Bytes::copy_from_slice(c.bytes);
            c.bytes = &[];
            let batch = decode_batch(rest).map_err(|e| format!("vote batch: {e}"))?;
            Record::Vote {
                instance,
                ballot,
                decided,
                batch,
            }
        }
        kind::DECIDED => Record::Decided {
            instance: c.instance()?,
            ballot: c.ballot()?,
        },
        kind::TRIM => Record::Trim {
            below: c.instance()?,
        },
        kind::CLOSE => Record::Close,
        kind::AMNESIA => Record::Amnesia,
        other => return Err(format!("unknown record kind {other}")),
    };
    c.finish()?;
    Ok((tag, record))
}

#[cfg(test)]
mod tests {
    use super::*;
    use amulet_types::{NodeId, ValueId};
    use amulet_wire::Value;

    fn every_kind() -> Vec<Record> {
        let b = Ballot { round: 3, node: 2 };
        vec![
            Record::Segment {
                sequence: 7,
                snapshot: Snapshot {
                    promised: b,
                    instance_promises: vec![(Instance(9), b)],
                    trimmed_below: Instance(4),
                    end: Instance(12),
                    boot_id: 99,
                    amnesic: true,
                },
            },
            Record::Boot { boot_id: 5 },
            Record::Promise { ballot: b },
            Record::InstancePromise {
                instance: Instance(1),
                ballot: b,
            },
            Record::Vote {
                instance: Instance(2),
                ballot: b,
                decided: true,
                batch: Batch::Values(vec![Value {
                    kind: Default::default(),
                    id: ValueId {
                        proposer: NodeId(1),
                        incarnation: 1,
                        sequence: 3,
                    },
                    bytes: Bytes::from_static(b"hello"),
                }]),
            },
            Record::Decided {
                instance: Instance(2),
                ballot: b,
            },
            Record::Trim { below: Instance(1) },
            Record::Close,
            Record::Amnesia,
        ]
    }

    #[test]
    fn every_record_kind_round_trips() {
        let mut out = BytesMut::new();
        for record in every_kind() {
            for tag in [None, Some(StreamId(7)), Some(StreamId(u32::MAX))] {
                out.clear();
                record.encode_tagged(tag, &mut out);
                assert_eq!(decode_at(&out, 0), Ok(((tag, record.clone()), out.len())));
            }
        }
    }

    #[test]
    fn a_record_cut_anywhere_is_torn_and_a_flipped_byte_is_caught() {
        let mut out = BytesMut::new();
        for (i, record) in every_kind().into_iter().enumerate() {
            out.clear();
            let tag = (i % 2 == 1).then_some(StreamId(3));
            record.encode_tagged(tag, &mut out);
            for cut in 0..out.len() {
                assert_eq!(decode_at(&out[..cut], 0).unwrap_err(), Damage::Torn);
            }
            for i in 0..out.len() {
                let mut damaged = out.to_vec();
                damaged[i] ^= 0x40;
                // Followed by another byte, so a bad checksum is not at the tail.
                damaged.push(1);
                assert!(decode_at(&damaged, 0).is_err(), "flip at {i} undetected");
            }
        }
    }
}
