//! Every envelope and frame survives encoding and decoding unchanged,
//! `encoded_len` is exact, decoded values share the input buffer, and a
//! frame stream split anywhere reassembles.

mod common;

use amulet_wire::{
    decode_envelope, encode_envelope, encoded_len, Frame, FrameDecoder, FRAME_HEADER_BYTES,
};
use bytes::{BufMut, BytesMut};
use common::{encode_frames, envelope, frame, values_of};
use proptest::collection::vec;
use proptest::prelude::*;

const FRAME_BYTES_MAX: usize = 1 << 20;

/// Feeds `stream` to a fresh decoder in chunks ending at `cuts` (any
/// order, out-of-range cuts ignored) and returns every frame decoded and
/// the bytes left over.
fn decode_in_chunks(stream: &[u8], cuts: &[usize]) -> (Vec<Frame>, BytesMut) {
    let mut ends: Vec<usize> = cuts.iter().map(|c| c % (stream.len() + 1)).collect();
    ends.push(stream.len());
    ends.sort_unstable();
    let mut decoder = FrameDecoder::new(FRAME_BYTES_MAX);
    let mut buf = BytesMut::new();
    let mut frames = Vec::new();
    let mut fed = 0;
    for end in ends {
        buf.put_slice(&stream[fed..end]);
        fed = end;
        while let Some(frame) = decoder.decode(&mut buf).expect("valid stream") {
            frames.push(frame);
        }
    }
    (frames, buf)
}

proptest! {
    #[test]
    fn envelope_roundtrips_with_exact_len(envelope in envelope()) {
        let mut out = BytesMut::new();
        encode_envelope(&envelope, &mut out);
        prop_assert_eq!(out.len(), encoded_len(&envelope));
        prop_assert_eq!(decode_envelope(out.freeze()), Ok(envelope));
    }

    #[test]
    fn encoding_appends_after_existing_bytes(envelope in envelope(), prefix in vec(any::<u8>(), 0..16)) {
        let mut out = BytesMut::from(&prefix[..]);
        encode_envelope(&envelope, &mut out);
        prop_assert_eq!(&out[..prefix.len()], &prefix[..]);
        let body = out.freeze().slice(prefix.len()..);
        prop_assert_eq!(body.len(), encoded_len(&envelope));
        prop_assert_eq!(decode_envelope(body), Ok(envelope));
    }

    #[test]
    fn decoded_values_are_zero_copy_slices(envelope in envelope()) {
        let mut out = BytesMut::new();
        encode_envelope(&envelope, &mut out);
        let input = out.freeze();
        let decoded = decode_envelope(input.clone()).unwrap();
        let range = input.as_ptr_range();
        for value in values_of(&decoded) {
            if !value.bytes.is_empty() {
                prop_assert!(range.contains(&value.bytes.as_ptr()));
            }
        }
    }

    /// The frame format tells Hello from Envelope bodies by length too.
    #[test]
    fn no_envelope_has_a_hello_sized_body(envelope in envelope()) {
        prop_assert_ne!(encoded_len(&envelope), amulet_wire::HELLO_BODY_BYTES);
    }

    #[test]
    fn every_strict_prefix_of_an_envelope_is_refused(envelope in envelope(), cut in any::<usize>()) {
        let mut out = BytesMut::new();
        encode_envelope(&envelope, &mut out);
        let bytes = out.freeze();
        let cut = cut % bytes.len();
        prop_assert!(decode_envelope(bytes.slice(..cut)).is_err());
    }

    #[test]
    fn frame_roundtrips(frame in frame()) {
        let mut buf = encode_frames(std::slice::from_ref(&frame));
        prop_assert!(buf.len() >= FRAME_HEADER_BYTES);
        let mut decoder = FrameDecoder::new(FRAME_BYTES_MAX);
        prop_assert_eq!(decoder.decode(&mut buf), Ok(Some(frame)));
        prop_assert!(buf.is_empty());
        prop_assert_eq!(decoder.decode(&mut buf), Ok(None));
    }

    #[test]
    fn frames_split_at_arbitrary_points_reassemble(
        frames in vec(frame(), 1..6),
        cuts in vec(any::<usize>(), 0..12),
    ) {
        let stream = encode_frames(&frames);
        let (decoded, rest) = decode_in_chunks(&stream, &cuts);
        prop_assert_eq!(decoded, frames);
        prop_assert!(rest.is_empty());
    }

    #[test]
    fn frames_fed_byte_by_byte_reassemble(frames in vec(frame(), 1..3)) {
        let stream = encode_frames(&frames);
        let cuts: Vec<usize> = (0..stream.len()).collect();
        let (decoded, rest) = decode_in_chunks(&stream, &cuts);
        prop_assert_eq!(decoded, frames);
        prop_assert!(rest.is_empty());
    }

    #[test]
    fn an_incomplete_frame_waits_for_more(frame in frame(), cut in any::<usize>()) {
        let stream = encode_frames(std::slice::from_ref(&frame));
        let cut = cut % stream.len();
        let mut buf = BytesMut::from(&stream[..cut]);
        prop_assert_eq!(FrameDecoder::new(FRAME_BYTES_MAX).decode(&mut buf), Ok(None));
        prop_assert_eq!(&buf[..], &stream[..cut]);
    }
}
