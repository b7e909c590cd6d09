//! Packing tuples into keys whose bytes sort like the tuples.

use crate::codes;
use crate::element::{f32_key, f64_key, Element};

/// Packs a tuple into its FoundationDB tuple-layer encoding.
///
/// The bytes of two packed tuples compare (as unsigned bytes,
/// lexicographically) exactly as the tuples do under `Ord for [Element]`.
/// The empty tuple packs to the empty string.
///
/// Packing never fails. Tuples nested more than [`MAX_DEPTH`](crate::MAX_DEPTH)
/// deep pack, but [`unpack`](crate::unpack) refuses them: keep keys shallow.
pub fn pack(elements: &[Element]) -> Vec<u8> {
    let mut out = Vec::new();
    pack_into(&mut out, elements);
    out
}

/// Appends the packing of `elements` to `out`: a key under a byte prefix
/// (a subspace) without a second buffer. `pack_into(&mut pack(a), b)`
/// gives `pack(a ++ b)`, since packing is concatenation.
pub fn pack_into(out: &mut Vec<u8>, elements: &[Element]) {
    for element in elements {
        encode_element(out, element, false);
    }
}

/// The key range holding every tuple that extends `prefix` by at least one
/// element, as FDB's `Tuple.range()`: `pack(prefix) + 0x00` inclusive to
/// `pack(prefix) + 0xFF` exclusive.
///
/// Every extension starts with a type code in `0x00..=0x33` (0x00 is a
/// top-level null), and 0xFF is never a type code, so the range holds
/// exactly those keys; `pack(prefix)` itself is not in it.
pub fn range(prefix: &[Element]) -> (Vec<u8>, Vec<u8>) {
    let packed = pack(prefix);
    let mut begin = Vec::with_capacity(packed.len() + 1);
    begin.extend_from_slice(&packed);
    begin.push(0x00);
    let mut end = packed;
    end.push(0xFF);
    (begin, end)
}

/// Appends one element. `nested` says it sits inside a nested tuple, where
/// a null must be 0x00 0xFF so it differs from the tuple's terminator.
pub(crate) fn encode_element(out: &mut Vec<u8>, element: &Element, nested: bool) {
    match element {
        Element::Null => {
            out.push(codes::NULL);
            if nested {
                out.push(codes::ESCAPE);
            }
        }
        Element::Bytes(bytes) => encode_escaped(out, codes::BYTES, bytes),
        Element::String(text) => encode_escaped(out, codes::STRING, text.as_bytes()),
        Element::Tuple(items) => {
            out.push(codes::NESTED);
            for item in items {
                encode_element(out, item, true);
            }
            out.push(0x00);
        }
        Element::Int(v) => encode_small_int(out, *v < 0, v.unsigned_abs()),
        Element::UInt(v) => encode_small_int(out, false, *v),
        Element::BigInt(big) => {
            let magnitude = big.magnitude();
            if magnitude.len() <= 8 {
                // Only negatives in -(2^64 - 1)..=-(2^63 + 1): code 0x0C.
                let mut be = [0u8; 8];
                be[8 - magnitude.len()..].copy_from_slice(magnitude);
                encode_small_int(out, big.is_negative(), u64::from_be_bytes(be));
            } else if big.is_negative() {
                out.push(codes::NEG_BIG_INT);
                out.push(length_byte(magnitude.len()) ^ 0xFF);
                out.extend(magnitude.iter().map(|b| !b));
            } else {
                out.push(codes::POS_BIG_INT);
                out.push(length_byte(magnitude.len()));
                out.extend_from_slice(magnitude);
            }
        }
        Element::Float(v) => {
            out.push(codes::FLOAT);
            out.extend_from_slice(&f32_key(*v).to_be_bytes());
        }
        Element::Double(v) => {
            out.push(codes::DOUBLE);
            out.extend_from_slice(&f64_key(*v).to_be_bytes());
        }
        Element::Bool(false) => out.push(codes::FALSE),
        Element::Bool(true) => out.push(codes::TRUE),
        Element::Uuid(bytes) => {
            out.push(codes::UUID);
            out.extend_from_slice(bytes);
        }
        Element::Versionstamp(bytes) => {
            out.push(codes::VERSIONSTAMP);
            out.extend_from_slice(bytes);
        }
    }
}

/// A big integer's length as its one-byte prefix; [`BigInt`]'s invariant
/// keeps it at most 255.
///
/// [`BigInt`]: crate::BigInt
fn length_byte(len: usize) -> u8 {
    u8::try_from(len).unwrap_or(u8::MAX)
}

/// Code, bytes with each 0x00 written as 0x00 0xFF, terminating 0x00.
fn encode_escaped(out: &mut Vec<u8>, code: u8, bytes: &[u8]) {
    out.push(code);
    for chunk in bytes.split_inclusive(|&b| b == 0x00) {
        out.extend_from_slice(chunk);
        if chunk.last() == Some(&0x00) {
            out.push(codes::ESCAPE);
        }
    }
    out.push(0x00);
}

/// An integer of magnitude below 2^64: code `0x14 ± n` for its `n`
/// significant bytes, then the magnitude big-endian (positive) or its one's
/// complement in `n` bytes (negative), so that -1 is 0x13 0xFE.
fn encode_small_int(out: &mut Vec<u8>, negative: bool, magnitude: u64) {
    let n = 8 - (magnitude.leading_zeros() / 8) as usize; // 0 for zero
    let n_u8 = n as u8; // n <= 8
    if negative && n > 0 {
        out.push(codes::INT_ZERO - n_u8);
        out.extend_from_slice(&(!magnitude).to_be_bytes()[8 - n..]);
    } else {
        out.push(codes::INT_ZERO + n_u8);
        out.extend_from_slice(&magnitude.to_be_bytes()[8 - n..]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(bytes: &[u8]) -> String {
        bytes.iter().map(|b| format!("{b:02x}")).collect()
    }

    #[test]
    fn known_values_from_the_spec() {
        // design/tuple.md test cases.
        assert_eq!(
            hex(&pack(&[b"foo\x00bar".as_slice().into()])),
            "01666f6f00ff62617200"
        );
        assert_eq!(
            hex(&pack(&["F\u{d4}O\u{0}bar".into()])),
            "0246c3944f00ff62617200"
        );
        assert_eq!(hex(&pack(&[(-5551212).into()])), "11ab4b93");
        assert_eq!(hex(&pack(&[(-42.0f32).into()])), "203dd7ffff");
        let nested = Element::Tuple(vec![
            b"foo\x00bar".as_slice().into(),
            Element::Null,
            Element::Tuple(vec![]),
        ]);
        assert_eq!(hex(&pack(&[nested])), "0501666f6f00ff6261720000ff050000");
    }

    #[test]
    fn integer_boundaries() {
        assert_eq!(hex(&pack(&[0.into()])), "14");
        assert_eq!(hex(&pack(&[1.into()])), "1501");
        assert_eq!(hex(&pack(&[(-1).into()])), "13fe");
        assert_eq!(hex(&pack(&[i64::MIN.into()])), "0c7fffffffffffffff");
        assert_eq!(hex(&pack(&[u64::MAX.into()])), "1cffffffffffffffff");
        assert_eq!(
            hex(&pack(&[(1i128 << 64).into()])),
            "1d09010000000000000000"
        );
        assert_eq!(
            hex(&pack(&[(-(1i128 << 64)).into()])),
            "0bf6feffffffffffffffff"
        );
        assert_eq!(
            hex(&pack(&[(-(1i128 << 64) + 1).into()])),
            "0c0000000000000000"
        );
    }

    #[test]
    fn null_is_escaped_only_when_nested() {
        assert_eq!(pack(&[Element::Null]), [0x00]);
        assert_eq!(
            pack(&[Element::Tuple(vec![Element::Null])]),
            [0x05, 0x00, 0xFF, 0x00]
        );
    }

    #[test]
    fn range_brackets_extensions_only() {
        let prefix = [Element::from("users")];
        let (begin, end) = range(&prefix);
        let key = pack(&prefix);
        assert!(key < begin, "the prefix itself is outside the range");
        for extension in [
            Element::Null,
            Element::from(-(1i128 << 100)),
            Element::Versionstamp([0xFF; 12]),
        ] {
            let mut longer = prefix.to_vec();
            longer.push(extension);
            let k = pack(&longer);
            assert!(begin <= k && k < end, "{longer:?}");
        }
        let mut after = key.clone();
        after.push(0xFF);
        assert!(after >= end);
    }

    #[test]
    fn pack_into_concatenates() {
        let mut key = pack(&["a".into()]);
        pack_into(&mut key, &[1.into()]);
        assert_eq!(key, pack(&["a".into(), 1.into()]));
    }
}
