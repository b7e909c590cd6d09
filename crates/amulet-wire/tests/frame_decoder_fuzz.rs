//! The frame decoder is total: arbitrary bytes and arbitrary mutations of
//! valid frame streams yield frames or errors, never a panic, never an
//! unbounded allocation. Any frame it does return re-encodes to exactly
//! the bytes it consumed (the encoding is canonical), and a corrupted body
//! is caught by the checksum.

mod common;

use amulet_wire::{
    decode_envelope, encode_frame, DecodeError, Frame, FrameDecoder, FRAME_HEADER_BYTES,
    FRAME_MAGIC,
};
use bytes::{BufMut, BytesMut};
use common::{encode_frames, envelope, frame};
use proptest::collection::vec;
use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::TestRunner;

const FRAME_BYTES_MAX: usize = 4096;
const CRC_OFFSET: usize = 7;
const LEN_OFFSET: usize = 3;

/// What feeding a stream produced.
#[derive(Debug)]
struct Outcome {
    frames: Vec<Frame>,
    error: Option<DecodeError>,
}

/// Feeds `stream` to a fresh decoder in chunks of the given sizes (cycled;
/// the rest in one piece when there are none), draining frames after each
/// chunk until it needs more bytes or fails. Checks on the way that every
/// frame re-encodes to exactly the bytes it was taken from, and that what
/// stays buffered is less than one frame of the limit.
fn feed(stream: &[u8], chunk_sizes: &[usize]) -> Outcome {
    let mut decoder = FrameDecoder::new(FRAME_BYTES_MAX);
    let mut buf = BytesMut::new();
    let mut frames = Vec::new();
    let mut fed = 0;
    let mut chunk = 0;
    while fed < stream.len() {
        let size = match chunk_sizes {
            [] => stream.len(),
            sizes => sizes[chunk % sizes.len()].max(1),
        };
        chunk += 1;
        let end = (fed + size).min(stream.len());
        buf.put_slice(&stream[fed..end]);
        fed = end;
        loop {
            let consumed_before = fed - buf.len();
            match decoder.decode(&mut buf) {
                Ok(Some(frame)) => {
                    let consumed_after = fed - buf.len();
                    let mut again = BytesMut::new();
                    encode_frame(&frame, &mut again);
                    assert_eq!(
                        &again[..],
                        &stream[consumed_before..consumed_after],
                        "a decoded frame is not the canonical encoding of its bytes"
                    );
                    assert!(again.len() <= FRAME_BYTES_MAX);
                    frames.push(frame);
                }
                Ok(None) => break,
                Err(error) => {
                    // The decoder stays failed.
                    assert_eq!(decoder.decode(&mut buf), Err(error.clone()));
                    return Outcome {
                        frames,
                        error: Some(error),
                    };
                }
            }
        }
        // Only a partial frame is left, and it is within the limit.
        assert!(buf.len() < FRAME_BYTES_MAX);
    }
    Outcome {
        frames,
        error: None,
    }
}

/// Rewrites the CRC of the frame starting at `at` so body mutations get
/// past the checksum and exercise the envelope decoder.
fn fix_crc(stream: &mut [u8], at: usize) {
    let Some(header) = stream.get(at..at + FRAME_HEADER_BYTES) else {
        return;
    };
    let len = u32::from_le_bytes([header[3], header[4], header[5], header[6]]) as usize;
    let body_start = at + FRAME_HEADER_BYTES;
    let Some(body) = stream.get(body_start..body_start + len) else {
        return;
    };
    // The checksum covers the kind byte, then the body.
    let crc = crc32c::crc32c_append(crc32c::crc32c(&[header[2]]), body).to_le_bytes();
    stream[at + CRC_OFFSET..body_start].copy_from_slice(&crc);
}

#[derive(Clone, Debug)]
enum Mutation {
    FlipBit { at: usize, bit: u8 },
    SetByte { at: usize, byte: u8 },
    Truncate { len: usize },
    Insert { at: usize, bytes: Vec<u8> },
    Delete { at: usize, len: usize },
    SetLen { len: u32 },
    NudgeLen { delta: i8 },
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (any::<usize>(), 0..8u8).prop_map(|(at, bit)| Mutation::FlipBit { at, bit }),
        (any::<usize>(), any::<u8>()).prop_map(|(at, byte)| Mutation::SetByte { at, byte }),
        any::<usize>().prop_map(|len| Mutation::Truncate { len }),
        (any::<usize>(), vec(any::<u8>(), 1..8))
            .prop_map(|(at, bytes)| Mutation::Insert { at, bytes }),
        (any::<usize>(), 1..16usize).prop_map(|(at, len)| Mutation::Delete { at, len }),
        any::<u32>().prop_map(|len| Mutation::SetLen { len }),
        any::<i8>().prop_map(|delta| Mutation::NudgeLen { delta }),
    ]
}

fn apply(mutation: &Mutation, stream: &mut Vec<u8>) {
    let n = stream.len();
    match mutation {
        Mutation::FlipBit { at, bit } if n > 0 => stream[at % n] ^= 1 << bit,
        Mutation::SetByte { at, byte } if n > 0 => stream[at % n] = *byte,
        Mutation::Truncate { len } => stream.truncate(len % (n + 1)),
        Mutation::Insert { at, bytes } => {
            let at = at % (n + 1);
            stream.splice(at..at, bytes.iter().copied());
        }
        Mutation::Delete { at, len } if n > 0 => {
            let at = at % n;
            stream.drain(at..(at + len).min(n));
        }
        Mutation::SetLen { len } if n >= CRC_OFFSET => {
            stream[LEN_OFFSET..CRC_OFFSET].copy_from_slice(&len.to_le_bytes());
        }
        Mutation::NudgeLen { delta } if n >= CRC_OFFSET => {
            let old = u32::from_le_bytes([stream[3], stream[4], stream[5], stream[6]]);
            let new = old.wrapping_add_signed(i32::from(*delta));
            stream[LEN_OFFSET..CRC_OFFSET].copy_from_slice(&new.to_le_bytes());
        }
        _ => {}
    }
}

proptest! {
    #[test]
    fn arbitrary_bytes_never_panic(bytes in vec(any::<u8>(), 0..512), chunks in vec(1..64usize, 0..8)) {
        feed(&bytes, &chunks);
    }

    /// Past a valid magic, so the rest of the header and the body decoders
    /// see arbitrary input too.
    #[test]
    fn arbitrary_bytes_after_magic_never_panic(
        kind in 0..4u8,
        len in 0..600u32,
        rest in vec(any::<u8>(), 0..600),
        fix in any::<bool>(),
        chunks in vec(1..64usize, 0..8),
    ) {
        let mut stream = Vec::new();
        stream.extend_from_slice(&FRAME_MAGIC.to_le_bytes());
        stream.push(kind);
        stream.extend_from_slice(&len.to_le_bytes());
        stream.extend_from_slice(&rest);
        if fix {
            fix_crc(&mut stream, 0);
        }
        feed(&stream, &chunks);
    }

    #[test]
    fn mutated_frames_never_panic(
        frames in vec(frame(), 1..4),
        mutations in vec(mutation(), 1..4),
        fix in any::<bool>(),
        chunks in vec(1..64usize, 0..8),
    ) {
        let mut stream = encode_frames(&frames).to_vec();
        for m in &mutations {
            apply(m, &mut stream);
        }
        if fix {
            fix_crc(&mut stream, 0);
        }
        let outcome = feed(&stream, &chunks);
        prop_assert!(outcome.frames.len() <= frames.len() + stream.len() / FRAME_HEADER_BYTES);
    }

    #[test]
    fn a_mutated_body_is_caught_by_the_crc(
        frame in frame(),
        at in any::<usize>(),
        xor in 1..=255u8,
        chunks in vec(1..64usize, 0..8),
    ) {
        let mut stream = encode_frames(std::slice::from_ref(&frame)).to_vec();
        let body_bytes = stream.len() - FRAME_HEADER_BYTES;
        let at = FRAME_HEADER_BYTES + at % body_bytes;
        stream[at] ^= xor;
        let outcome = feed(&stream, &chunks);
        prop_assert!(outcome.frames.is_empty());
        prop_assert_eq!(outcome.error, Some(DecodeError::BadChecksum));
    }

    #[test]
    fn a_mutated_crc_is_caught(frame in frame(), at in 0..4usize, xor in 1..=255u8) {
        let mut stream = encode_frames(std::slice::from_ref(&frame)).to_vec();
        stream[CRC_OFFSET + at] ^= xor;
        prop_assert_eq!(feed(&stream, &[]).error, Some(DecodeError::BadChecksum));
    }

    /// Body mutations with the CRC fixed up reach the envelope decoder.
    #[test]
    fn mutated_envelopes_decode_or_fail(envelope in envelope(), mutations in vec(mutation(), 1..4)) {
        let mut bytes = BytesMut::new();
        amulet_wire::encode_envelope(&envelope, &mut bytes);
        let mut bytes = bytes.to_vec();
        for m in &mutations {
            apply(m, &mut bytes);
        }
        if let Ok(decoded) = decode_envelope(bytes::Bytes::from(bytes.clone())) {
            let mut again = BytesMut::new();
            amulet_wire::encode_envelope(&decoded, &mut again);
            prop_assert_eq!(&again[..], &bytes[..]);
        }
    }
}

/// A small xorshift64* generator: deterministic, no dependencies.
struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// Deterministic mutation fuzzing: a fixed corpus of valid frame streams,
/// 20,000 seeded rounds of random mutations fed in random chunks. Runs in
/// well under a second in release mode.
#[test]
fn seeded_mutation_fuzz_loop() {
    const ROUNDS: usize = 20_000;
    let mut runner = TestRunner::deterministic();
    let strategy = vec(frame(), 1..4);
    let corpus: Vec<Vec<u8>> = (0..64)
        .map(|_| {
            let frames = strategy.new_tree(&mut runner).unwrap().current();
            encode_frames(&frames).to_vec()
        })
        .collect();

    let mut rng = XorShift(0x9E37_79B9_7F4A_7C15);
    let (mut decoded_frames, mut errors) = (0usize, 0usize);
    let mut checksum_errors = 0usize;
    for _ in 0..ROUNDS {
        let mut stream = corpus[rng.below(corpus.len())].clone();
        for _ in 0..1 + rng.below(3) {
            let n = stream.len();
            let m = match rng.below(7) {
                0 => Mutation::FlipBit {
                    at: rng.below(n),
                    bit: rng.below(8) as u8,
                },
                1 => Mutation::SetByte {
                    at: rng.below(n),
                    byte: rng.next() as u8,
                },
                2 => Mutation::Truncate {
                    len: rng.below(n + 1),
                },
                3 => Mutation::Insert {
                    at: rng.below(n + 1),
                    bytes: (0..1 + rng.below(8)).map(|_| rng.next() as u8).collect(),
                },
                4 => Mutation::Delete {
                    at: rng.below(n),
                    len: 1 + rng.below(16),
                },
                5 => Mutation::SetLen {
                    len: rng.next() as u32,
                },
                _ => Mutation::NudgeLen {
                    delta: rng.next() as i8,
                },
            };
            apply(&m, &mut stream);
        }
        if rng.below(2) == 0 {
            fix_crc(&mut stream, 0);
        }
        let chunks: Vec<usize> = (0..rng.below(4)).map(|_| 1 + rng.below(64)).collect();
        let outcome = feed(&stream, &chunks);
        decoded_frames += outcome.frames.len();
        match outcome.error {
            Some(DecodeError::BadChecksum) => checksum_errors += 1,
            Some(_) => errors += 1,
            None => {}
        }
    }
    // The loop exercised every outcome, not just one rejection path.
    assert!(decoded_frames > 0, "no frame survived");
    assert!(errors > 0 && checksum_errors > 0);
}
