//! Splits a byte stream into frames.

use crate::codec::decode_envelope;
use crate::error::DecodeError;
use crate::frame::{
    frame_crc, Frame, Hello, CRC_OFFSET, FRAME_HEADER_BYTES, FRAME_MAGIC, HELLO_BODY_BYTES,
    KIND_ENVELOPE, KIND_EVENTUAL, KIND_HELLO, KIND_REPLICA, LEN_OFFSET,
};
use amulet_types::NodeId;
use bytes::{Bytes, BytesMut};

/// Takes frames off the front of a connection's read buffer.
///
/// The header is checked as soon as its bytes arrive (magic, kind, length
/// against the limit), so garbage or an oversized frame is refused before
/// its body is buffered. After an error the decoder keeps returning that
/// error: the stream has lost its framing and nothing after it can be
/// trusted.
#[derive(Debug)]
pub struct FrameDecoder {
    frame_bytes_max: usize,
    failed: Option<DecodeError>,
}

impl FrameDecoder {
    /// A decoder that refuses frames longer than `frame_bytes_max` bytes,
    /// header included.
    pub fn new(frame_bytes_max: usize) -> FrameDecoder {
        FrameDecoder {
            frame_bytes_max,
            failed: None,
        }
    }

    /// Takes one complete frame off the front of `buf` if there is one.
    /// `Ok(None)` = need more bytes; `buf` is then left as it was, except
    /// that capacity for the rest of an announced frame may be reserved.
    /// An error means the stream is unusable (the connection must be
    /// closed).
    ///
    /// Values' bytes in a decoded envelope share `buf`'s allocation (no
    /// copy).
    pub fn decode(&mut self, buf: &mut BytesMut) -> Result<Option<Frame>, DecodeError> {
        if let Some(error) = &self.failed {
            return Err(error.clone());
        }
        let result = self.decode_unpoisoned(buf);
        if let Err(error) = &result {
            self.failed = Some(error.clone());
        }
        result
    }

    fn decode_unpoisoned(&self, buf: &mut BytesMut) -> Result<Option<Frame>, DecodeError> {
        let Some(frame_bytes) = self.check_header(buf)? else {
            return Ok(None);
        };
        if buf.len() < frame_bytes {
            // Bounded by `frame_bytes_max`, checked above.
            buf.reserve(frame_bytes - buf.len());
            return Ok(None);
        }
        let mut crc = [0u8; 4];
        crc.copy_from_slice(&buf[CRC_OFFSET..FRAME_HEADER_BYTES]);
        let kind = buf[2];
        let frame = buf.split_to(frame_bytes).freeze();
        let body = frame.slice(FRAME_HEADER_BYTES..);
        if frame_crc(kind, &body) != u32::from_le_bytes(crc) {
            return Err(DecodeError::BadChecksum);
        }
        match kind {
            KIND_HELLO => Ok(Some(Frame::Hello(decode_hello(&body)?))),
            KIND_REPLICA => Ok(Some(Frame::Replica(body))),
            KIND_EVENTUAL => Ok(Some(Frame::Eventual(body))),
            _ => Ok(Some(Frame::Envelope(decode_envelope(body)?))),
        }
    }

    /// Checks as much of the header as has arrived. Returns the whole
    /// frame's length once the header is complete and valid.
    fn check_header(&self, buf: &BytesMut) -> Result<Option<usize>, DecodeError> {
        // Check each field as soon as it is there: a peer that sends
        // garbage is refused at once rather than when 11 bytes arrived.
        let magic_bytes = buf.len().min(2);
        if buf[..magic_bytes] != FRAME_MAGIC.to_le_bytes()[..magic_bytes] {
            return Err(DecodeError::BadMagic);
        }
        let Some(&kind) = buf.get(2) else {
            return Ok(None);
        };
        if !matches!(
            kind,
            KIND_HELLO | KIND_ENVELOPE | KIND_REPLICA | KIND_EVENTUAL
        ) {
            return Err(DecodeError::UnknownTag {
                what: "frame kind",
                tag: kind,
            });
        }
        let Some(len) = buf.get(LEN_OFFSET..CRC_OFFSET) else {
            return Ok(None);
        };
        let mut len_bytes = [0u8; 4];
        len_bytes.copy_from_slice(len);
        let body_bytes = u32::from_le_bytes(len_bytes) as usize;
        // Saturating: on a 32-bit target a u32 length plus the header can
        // overflow usize; it is then over any limit anyway.
        let frame_bytes = FRAME_HEADER_BYTES.saturating_add(body_bytes);
        if frame_bytes > self.frame_bytes_max {
            return Err(DecodeError::TooLarge {
                what: "frame",
                len_bytes: frame_bytes as u64,
                max_bytes: self.frame_bytes_max as u64,
            });
        }
        if kind == KIND_HELLO && body_bytes != HELLO_BODY_BYTES {
            return Err(DecodeError::Invalid(format!(
                "hello body of {body_bytes} bytes, expected {HELLO_BODY_BYTES}"
            )));
        }
        if buf.len() < FRAME_HEADER_BYTES {
            return Ok(None);
        }
        Ok(Some(frame_bytes))
    }
}

fn decode_hello(body: &Bytes) -> Result<Hello, DecodeError> {
    let mut reader = crate::reader::Reader::new(body.clone());
    let hello = Hello {
        cluster: reader.u64()?,
        node: NodeId(reader.u32()?),
        incarnation: reader.u32()?,
    };
    reader.finish()?;
    Ok(hello)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frame::encode_frame;
    use crate::{Batch, Envelope, Message, Value};
    use amulet_types::{Ballot, Instance, StreamId, ValueId};
    use bytes::BufMut;

    const MAX: usize = 1 << 20;

    fn hello() -> Frame {
        Frame::Hello(Hello {
            cluster: 42,
            node: NodeId(1),
            incarnation: 7,
        })
    }

    fn phase2() -> Frame {
        Frame::Envelope(Envelope {
            stream: StreamId(2),
            message: Message::Phase2 {
                ballot: Ballot { round: 3, node: 1 },
                instance: Instance(10),
                batch: Batch::Values(vec![Value {
                    kind: Default::default(),
                    id: ValueId {
                        proposer: NodeId(1),
                        incarnation: 7,
                        sequence: 1,
                    },
                    bytes: Bytes::from_static(b"payload"),
                }]),
                votes: 1,
                last: NodeId(3),
                hops: 0,
            },
        })
    }

    fn encoded(frames: &[Frame]) -> BytesMut {
        let mut out = BytesMut::new();
        for frame in frames {
            encode_frame(frame, &mut out);
        }
        out
    }

    #[test]
    fn decodes_frames_fed_one_byte_at_a_time() {
        let stream = encoded(&[hello(), phase2(), phase2()]);
        let mut decoder = FrameDecoder::new(MAX);
        let mut buf = BytesMut::new();
        let mut frames = Vec::new();
        for &byte in stream.iter() {
            buf.put_u8(byte);
            while let Some(frame) = decoder.decode(&mut buf).unwrap() {
                frames.push(frame);
            }
        }
        assert_eq!(frames, vec![hello(), phase2(), phase2()]);
        assert!(buf.is_empty());
    }

    #[test]
    fn replica_frames_carry_their_bytes_unchanged() {
        let replica = Frame::Replica(Bytes::from_static(b"a signal"));
        let empty = Frame::Replica(Bytes::new());
        let eventual = Frame::Eventual(Bytes::from_static(b"a sync"));
        let mut buf = encoded(&[
            hello(),
            replica.clone(),
            phase2(),
            empty.clone(),
            eventual.clone(),
        ]);
        let mut decoder = FrameDecoder::new(MAX);
        let mut frames = Vec::new();
        while let Some(frame) = decoder.decode(&mut buf).unwrap() {
            frames.push(frame);
        }
        assert_eq!(frames, vec![hello(), replica, phase2(), empty, eventual]);
    }

    #[test]
    fn a_flipped_kind_byte_is_caught_by_the_checksum() {
        // An envelope body is also a valid replica body: only the
        // checksum, which covers the kind, tells them apart.
        for (frame, to) in [
            (phase2(), KIND_REPLICA),
            (Frame::Replica(Bytes::from_static(b"x")), KIND_ENVELOPE),
            (Frame::Replica(Bytes::from_static(b"x")), KIND_EVENTUAL),
        ] {
            let mut buf = encoded(&[frame]);
            buf[2] = to;
            let mut decoder = FrameDecoder::new(MAX);
            assert_eq!(decoder.decode(&mut buf), Err(DecodeError::BadChecksum));
        }
    }

    #[test]
    fn bad_magic_is_reported_on_the_first_byte() {
        let mut decoder = FrameDecoder::new(MAX);
        let mut buf = BytesMut::from(&b"G"[..]);
        assert_eq!(decoder.decode(&mut buf), Err(DecodeError::BadMagic));
        // And stays reported: the stream is unusable.
        let mut good = encoded(&[hello()]);
        assert_eq!(decoder.decode(&mut good), Err(DecodeError::BadMagic));
    }

    #[test]
    fn oversized_frame_is_refused_from_its_header() {
        let mut decoder = FrameDecoder::new(64);
        let mut buf = encoded(&[phase2()]);
        let frame_bytes = buf.len();
        buf.truncate(CRC_OFFSET); // only magic, kind and length arrived
        assert_eq!(
            decoder.decode(&mut buf),
            Err(DecodeError::TooLarge {
                what: "frame",
                len_bytes: frame_bytes as u64,
                max_bytes: 64
            })
        );
        let mut huge = BytesMut::new();
        huge.put_u16_le(FRAME_MAGIC);
        huge.put_u8(KIND_ENVELOPE);
        huge.put_u32_le(u32::MAX);
        let mut decoder = FrameDecoder::new(MAX);
        assert!(matches!(
            decoder.decode(&mut huge),
            Err(DecodeError::TooLarge { .. })
        ));
        assert!(huge.capacity() < 1024);
    }

    #[test]
    fn corrupted_body_fails_the_checksum() {
        let mut buf = encoded(&[phase2()]);
        let last = buf.len() - 1;
        buf[last] ^= 0x01;
        assert_eq!(
            FrameDecoder::new(MAX).decode(&mut buf),
            Err(DecodeError::BadChecksum)
        );
    }

    #[test]
    fn unknown_kind_and_bad_hello_length_are_refused() {
        let mut buf = encoded(&[hello()]);
        buf[2] = 9;
        assert_eq!(
            FrameDecoder::new(MAX).decode(&mut buf),
            Err(DecodeError::UnknownTag {
                what: "frame kind",
                tag: 9
            })
        );
        let mut buf = encoded(&[phase2()]);
        buf[2] = KIND_HELLO;
        assert!(matches!(
            FrameDecoder::new(MAX).decode(&mut buf),
            Err(DecodeError::Invalid(_))
        ));
    }

    #[test]
    fn partial_frame_leaves_the_buffer_alone() {
        let full = encoded(&[phase2()]);
        let mut buf = BytesMut::from(&full[..full.len() - 1]);
        let mut decoder = FrameDecoder::new(MAX);
        assert_eq!(decoder.decode(&mut buf), Ok(None));
        assert_eq!(&buf[..], &full[..full.len() - 1]);
        assert!(buf.capacity() >= full.len());
        buf.put_u8(full[full.len() - 1]);
        assert_eq!(decoder.decode(&mut buf), Ok(Some(phase2())));
        assert_eq!(decoder.decode(&mut buf), Ok(None));
    }
}
