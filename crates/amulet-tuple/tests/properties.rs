//! Property tests: packing round-trips, the byte order of packed tuples is
//! `Ord for [Element]`, and `unpack` is total on arbitrary bytes.

use amulet_tuple::{pack, unpack, Element};
use proptest::prelude::*;

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: 512,
        ..ProptestConfig::default()
    }
}

/// Bytes rich in the bytes that matter to escaping.
fn arb_bytes() -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(
        prop_oneof![3 => any::<u8>(), 1 => Just(0x00), 1 => Just(0xFF)],
        0..12,
    )
}

/// Strings with NULs, ASCII and multi-byte characters.
fn arb_string() -> impl Strategy<Value = String> {
    let ch = prop_oneof![2 => any::<char>(), 1 => Just('\0'), 1 => Just('a'), 1 => Just('\u{ff}')];
    prop::collection::vec(ch, 0..8).prop_map(String::from_iter)
}

/// Integers of every variant, dense near the size boundaries.
fn arb_int() -> impl Strategy<Value = Element> {
    let edge = prop_oneof![
        (0u32..=64, -2i128..=2).prop_map(|(bits, d)| Element::from((1i128 << bits) + d)),
        (0u32..=64, -2i128..=2).prop_map(|(bits, d)| Element::from(-(1i128 << bits) + d)),
    ];
    let big = (any::<bool>(), prop::collection::vec(any::<u8>(), 0..24)).prop_map(
        |(negative, magnitude)| Element::from_sign_magnitude(negative, &magnitude).unwrap(),
    );
    prop_oneof![
        any::<i64>().prop_map(Element::Int),
        any::<u64>().prop_map(Element::from),
        any::<i128>().prop_map(Element::from),
        edge,
        big,
    ]
}

fn arb_leaf() -> impl Strategy<Value = Element> {
    prop_oneof![
        Just(Element::Null),
        arb_bytes().prop_map(Element::Bytes),
        arb_string().prop_map(Element::String),
        arb_int(),
        any::<u32>().prop_map(|bits| Element::Float(f32::from_bits(bits))),
        any::<u64>().prop_map(|bits| Element::Double(f64::from_bits(bits))),
        any::<bool>().prop_map(Element::Bool),
        any::<[u8; 16]>().prop_map(Element::Uuid),
        any::<[u8; 12]>().prop_map(Element::Versionstamp),
    ]
}

fn arb_element() -> impl Strategy<Value = Element> {
    arb_leaf().prop_recursive(4, 32, 5, |inner| {
        prop::collection::vec(inner, 0..5).prop_map(Element::Tuple)
    })
}

fn arb_tuple() -> impl Strategy<Value = Vec<Element>> {
    prop::collection::vec(arb_element(), 0..5)
}

/// Two tuples that often share a prefix, so comparisons reach past it.
fn arb_tuple_pair() -> impl Strategy<Value = (Vec<Element>, Vec<Element>)> {
    (arb_tuple(), arb_tuple(), arb_tuple()).prop_map(|(shared, a, b)| {
        let join = |tail: Vec<Element>| shared.iter().cloned().chain(tail).collect::<Vec<_>>();
        (join(a), join(b))
    })
}

/// Arbitrary bytes biased towards type codes, terminators and escapes.
fn arb_key_bytes() -> impl Strategy<Value = Vec<u8>> {
    let byte = prop_oneof![
        4 => any::<u8>(),
        2 => Just(0x00),
        2 => Just(0x05),
        1 => Just(0xFF),
        1 => Just(0x01),
        1 => Just(0x02),
        2 => 0x0Bu8..=0x1D,
    ];
    prop::collection::vec(byte, 0..64)
}

/// What any successful unpack must satisfy: re-packing is canonical, never
/// longer than the input, and identical to it unless an integer was in a
/// non-minimal form (which is always longer).
fn check_unpacked(input: &[u8]) {
    if let Ok(tuple) = unpack(input) {
        let repacked = pack(&tuple);
        assert!(
            repacked.len() <= input.len(),
            "{input:02x?} repacked longer"
        );
        if repacked.len() == input.len() {
            assert_eq!(repacked, input);
        }
        assert_eq!(unpack(&repacked).unwrap(), tuple);
    }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn round_trip(tuple in arb_tuple()) {
        let packed = pack(&tuple);
        let decoded = unpack(&packed).unwrap();
        prop_assert_eq!(&decoded, &tuple);
        // Same variants too: decoding gives the canonical integer forms.
        prop_assert_eq!(format!("{decoded:?}"), format!("{tuple:?}"));
    }

    #[test]
    fn byte_order_is_tuple_order((a, b) in arb_tuple_pair()) {
        prop_assert_eq!(a.as_slice().cmp(b.as_slice()), pack(&a).cmp(&pack(&b)));
    }

    #[test]
    fn ints_order_numerically(a in any::<i64>(), b in any::<i64>()) {
        prop_assert_eq!(a.cmp(&b), pack(&[a.into()]).cmp(&pack(&[b.into()])));
    }

    #[test]
    fn uints_order_numerically(a in any::<u64>(), b in any::<u64>()) {
        prop_assert_eq!(a.cmp(&b), pack(&[a.into()]).cmp(&pack(&[b.into()])));
    }

    #[test]
    fn wide_ints_order_numerically(a in any::<i128>(), b in any::<i128>()) {
        prop_assert_eq!(a.cmp(&b), pack(&[a.into()]).cmp(&pack(&[b.into()])));
        prop_assert_eq!(a.cmp(&b), Element::from(a).cmp(&Element::from(b)));
    }

    #[test]
    fn int_variants_order_like_their_bytes(a in arb_int(), b in arb_int()) {
        prop_assert_eq!(a.cmp(&b), pack(&[a]).cmp(&pack(&[b])));
    }

    #[test]
    fn leaves_order_like_their_bytes(a in arb_leaf(), b in arb_leaf()) {
        prop_assert_eq!(a.cmp(&b), pack(&[a]).cmp(&pack(&[b])));
    }

    #[test]
    fn strings_order_by_code_point(a in arb_string(), b in arb_string()) {
        let by_chars = a.chars().cmp(b.chars());
        prop_assert_eq!(by_chars, pack(&[a.into()]).cmp(&pack(&[b.into()])));
    }

    #[test]
    fn bytes_order_lexicographically(a in arb_bytes(), b in arb_bytes(), tail in arb_element()) {
        let expected = a.cmp(&b);
        // A following element must not disturb the order (escape vs terminator).
        let pa = pack(&[Element::Bytes(a), tail.clone()]);
        let pb = pack(&[Element::Bytes(b), tail]);
        if expected.is_eq() {
            prop_assert_eq!(pa, pb);
        } else {
            prop_assert_eq!(expected, pa.cmp(&pb));
        }
    }

    #[test]
    fn doubles_order_like_total_cmp(a in any::<u64>(), b in any::<u64>()) {
        let (a, b) = (f64::from_bits(a), f64::from_bits(b));
        prop_assert_eq!(a.total_cmp(&b), pack(&[a.into()]).cmp(&pack(&[b.into()])));
    }

    #[test]
    fn unpack_arbitrary_bytes_is_total(input in prop::collection::vec(any::<u8>(), 0..64)) {
        check_unpacked(&input);
    }

    #[test]
    fn unpack_biased_bytes_is_total(input in arb_key_bytes()) {
        check_unpacked(&input);
    }

    #[test]
    fn unpack_damaged_keys_is_total(
        tuple in arb_tuple(),
        at in any::<prop::sample::Index>(),
        byte in any::<u8>(),
        how in 0u8..3,
    ) {
        let mut bytes = pack(&tuple);
        if !bytes.is_empty() {
            let i = at.index(bytes.len());
            match how {
                0 => bytes[i] = byte,
                1 => bytes.truncate(i),
                _ => bytes.insert(i, byte),
            }
        }
        check_unpacked(&bytes);
    }
}
