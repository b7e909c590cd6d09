//! The frame format of peer links (thesis A.3): every message on a TCP
//! connection travels in a frame
//! `[magic u16][kind u8][len u32][crc32c u32][body; len]`, little endian,
//! with the CRC32C over the kind byte and the body. The first frame on every
//! connection is a [`Hello`]; every later one carries an [`Envelope`] of a
//! stream, or an opaque [`Frame::Replica`] message of the replication layer
//! (S-SMR signals), which this crate does not interpret.

use crate::codec::{encoded_len, put_envelope};
use crate::message::Envelope;
use amulet_types::NodeId;
use bytes::{BufMut, BytesMut};

/// First two bytes of every frame; tells a desynchronised or foreign
/// stream from Amulet traffic.
pub const FRAME_MAGIC: u16 = 0xA37E;

/// Bytes before a frame's body: magic, kind, body length, body CRC32C.
pub const FRAME_HEADER_BYTES: usize = 11;

/// Length of a Hello body: cluster u64, node u32, incarnation u32.
pub const HELLO_BODY_BYTES: usize = 16;

/// Kind byte of a [`Frame::Hello`].
pub(crate) const KIND_HELLO: u8 = 1;
/// Kind byte of a [`Frame::Envelope`].
pub(crate) const KIND_ENVELOPE: u8 = 2;
/// Kind byte of a [`Frame::Replica`].
pub(crate) const KIND_REPLICA: u8 = 3;
/// Kind byte of a [`Frame::Eventual`].
pub(crate) const KIND_EVENTUAL: u8 = 4;

/// Offset of the body length in the header.
pub(crate) const LEN_OFFSET: usize = 3;
/// Offset of the body CRC32C in the header.
pub(crate) const CRC_OFFSET: usize = 7;

/// The first frame on every connection: who is talking, so a receiver can
/// refuse a peer of another cluster and notice that a peer restarted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Hello {
    /// Cluster id; a peer of another cluster is refused.
    pub cluster: u64,
    /// The sending node.
    pub node: NodeId,
    /// The sender's run; increases at every restart.
    pub incarnation: u32,
}

/// What one frame carries.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Frame {
    /// Connection handshake.
    Hello(Hello),
    /// A peer message.
    Envelope(Envelope),
    /// A message between replicas, encoded by the replication layer.
    Replica(bytes::Bytes),
    /// A message between eventual maps' replicas (replication and
    /// anti-entropy), encoded by `amulet-dotted`'s service.
    Eventual(bytes::Bytes),
}

/// The frame checksum: CRC32C over the kind byte, then the body, so a
/// flipped kind is caught like a flipped body byte.
pub(crate) fn frame_crc(kind: u8, body: &[u8]) -> u32 {
    crc32c::crc32c_append(crc32c::crc32c(&[kind]), body)
}

/// Appends `frame` to `out`: header, then body, with the CRC32C computed
/// over the body as written (one pass, no intermediate buffer).
///
/// # Panics
///
/// If the body is longer than `u32::MAX` bytes (see
/// [`crate::encode_envelope`]).
pub fn encode_frame(frame: &Frame, out: &mut BytesMut) {
    let (kind, body_bytes) = match frame {
        Frame::Hello(_) => (KIND_HELLO, HELLO_BODY_BYTES),
        Frame::Envelope(envelope) => (KIND_ENVELOPE, encoded_len(envelope)),
        Frame::Replica(bytes) => (KIND_REPLICA, bytes.len()),
        Frame::Eventual(bytes) => (KIND_EVENTUAL, bytes.len()),
    };
    let len = u32::try_from(body_bytes).expect("amulet-wire: frame body exceeds u32::MAX");
    out.reserve(FRAME_HEADER_BYTES + body_bytes);
    let start = out.len();
    out.put_u16_le(FRAME_MAGIC);
    out.put_u8(kind);
    out.put_u32_le(len);
    out.put_u32_le(0); // CRC, patched once the body is written.
    match frame {
        Frame::Hello(hello) => {
            out.put_u64_le(hello.cluster);
            out.put_u32_le(hello.node.0);
            out.put_u32_le(hello.incarnation);
        }
        Frame::Envelope(envelope) => put_envelope(envelope, out),
        Frame::Replica(bytes) | Frame::Eventual(bytes) => out.put_slice(bytes),
    }
    let body_start = start + FRAME_HEADER_BYTES;
    debug_assert_eq!(out.len() - body_start, body_bytes);
    let crc = frame_crc(kind, &out[body_start..]);
    out[start + CRC_OFFSET..body_start].copy_from_slice(&crc.to_le_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::encode_envelope;

    #[test]
    fn hello_frame_has_the_documented_layout() {
        let mut out = BytesMut::new();
        out.put_u8(0xEE); // frames append to what is already there
        let hello = Hello {
            cluster: 0x0102_0304_0506_0708,
            node: NodeId(9),
            incarnation: 3,
        };
        encode_frame(&Frame::Hello(hello), &mut out);
        let body: &[u8] = &[8, 7, 6, 5, 4, 3, 2, 1, 9, 0, 0, 0, 3, 0, 0, 0];
        let mut expected = vec![0xEE, 0x7E, 0xA3, KIND_HELLO, 16, 0, 0, 0];
        expected.extend_from_slice(&frame_crc(KIND_HELLO, body).to_le_bytes());
        expected.extend_from_slice(body);
        assert_eq!(&out[..], &expected[..]);
    }

    #[test]
    fn envelope_frame_body_is_the_envelope_encoding() {
        let envelope = Envelope {
            stream: amulet_types::StreamId(4),
            message: crate::Message::RetransmitRequest {
                from: amulet_types::Instance(1),
                to: amulet_types::Instance(9),
            },
        };
        let mut body = BytesMut::new();
        encode_envelope(&envelope, &mut body);
        let mut out = BytesMut::new();
        encode_frame(&Frame::Envelope(envelope), &mut out);
        assert_eq!(out.len(), FRAME_HEADER_BYTES + body.len());
        assert_eq!(out[2], KIND_ENVELOPE);
        assert_eq!(
            &out[LEN_OFFSET..CRC_OFFSET],
            &(body.len() as u32).to_le_bytes()
        );
        assert_eq!(
            &out[CRC_OFFSET..FRAME_HEADER_BYTES],
            &frame_crc(KIND_ENVELOPE, &body).to_le_bytes()
        );
        assert_eq!(&out[FRAME_HEADER_BYTES..], &body[..]);
    }
}
