//! Checks amulet-tuple against the language-neutral vectors in
//! `spec/tuple-vectors.json` (format in `spec/README.md`), which were made
//! with FoundationDB's own tuple layer. Clients in other languages run the
//! same file through their own decoders.

use std::cmp::Ordering;

use amulet_tuple::{pack, range, unpack, Element, Reason};
use serde_json::Value;

fn load() -> Value {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../spec/tuple-vectors.json");
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_json::from_str(&text).expect("tuple-vectors.json is JSON")
}

fn hex_decode(hex: &str) -> Vec<u8> {
    assert!(hex.len().is_multiple_of(2), "odd-length hex {hex:?}");
    (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).expect("hex digit"))
        .collect()
}

fn hex_encode(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn str_field<'a>(v: &'a Value, key: &str) -> &'a str {
    v[key]
        .as_str()
        .unwrap_or_else(|| panic!("missing string {key:?} in {v}"))
}

/// A decimal integer of any size as an element (vectors use strings: JSON
/// numbers lose precision beyond 2^53).
fn int_element(decimal: &str) -> Element {
    let (negative, digits) = match decimal.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, decimal),
    };
    let mut magnitude: Vec<u8> = vec![0];
    for digit in digits.chars() {
        let mut carry = digit.to_digit(10).expect("decimal digit");
        for byte in magnitude.iter_mut().rev() {
            let v = u32::from(*byte) * 10 + carry;
            *byte = (v & 0xFF) as u8;
            carry = v >> 8;
        }
        if carry > 0 {
            magnitude.insert(0, carry as u8);
        }
    }
    Element::from_sign_magnitude(negative, &magnitude).expect("at most 255 bytes")
}

fn element(v: &Value) -> Element {
    match str_field(v, "type") {
        "null" => Element::Null,
        "bytes" => Element::Bytes(hex_decode(str_field(v, "hex"))),
        "string" => Element::String(str_field(v, "value").to_owned()),
        "int" => int_element(str_field(v, "value")),
        "float" => {
            let bits = u32::from_str_radix(str_field(v, "bits"), 16).unwrap();
            let value = f32::from_bits(bits);
            if !value.is_nan() {
                let text: f32 = str_field(v, "value").parse().unwrap();
                assert_eq!(text.to_bits(), bits, "float value and bits disagree in {v}");
            }
            Element::Float(value)
        }
        "double" => {
            let bits = u64::from_str_radix(str_field(v, "bits"), 16).unwrap();
            let value = f64::from_bits(bits);
            if !value.is_nan() {
                let text: f64 = str_field(v, "value").parse().unwrap();
                assert_eq!(
                    text.to_bits(),
                    bits,
                    "double value and bits disagree in {v}"
                );
            }
            Element::Double(value)
        }
        "bool" => Element::Bool(v["value"].as_bool().unwrap()),
        "uuid" => {
            let text = str_field(v, "value");
            assert_eq!(text.len(), 36, "canonical hyphenated UUID: {text}");
            let bytes = hex_decode(&text.replace('-', ""));
            Element::Uuid(bytes.try_into().unwrap())
        }
        "versionstamp" => {
            Element::Versionstamp(hex_decode(str_field(v, "hex")).try_into().unwrap())
        }
        "tuple" => Element::Tuple(tuple(&v["value"])),
        other => panic!("unknown element type {other:?}"),
    }
}

fn tuple(v: &Value) -> Vec<Element> {
    v.as_array()
        .unwrap_or_else(|| panic!("not a tuple: {v}"))
        .iter()
        .map(element)
        .collect()
}

/// Equality that also requires the same variants (Element's `==` treats
/// `UInt(5)` and `Int(5)` as equal; the decoder must give the canonical one).
fn assert_same(actual: &[Element], expected: &[Element], name: &str) {
    assert_eq!(actual, expected, "{name}");
    assert_eq!(
        format!("{actual:?}"),
        format!("{expected:?}"),
        "{name}: variants differ"
    );
}

#[test]
fn file_has_the_promised_coverage() {
    let doc = load();
    assert_eq!(doc["version"], 1);
    assert!(doc["vectors"].as_array().unwrap().len() >= 60);
    assert!(doc["ordered"].as_array().unwrap().len() >= 30);
    assert!(doc["invalid"].as_array().unwrap().len() >= 15);
    let mut types = std::collections::BTreeSet::new();
    for v in doc["vectors"].as_array().unwrap() {
        for e in v["tuple"].as_array().unwrap() {
            types.insert(str_field(e, "type").to_owned());
        }
    }
    let all = [
        "bool",
        "bytes",
        "double",
        "float",
        "int",
        "null",
        "string",
        "tuple",
        "uuid",
        "versionstamp",
    ];
    assert_eq!(types, all.iter().map(|s| s.to_string()).collect());
}

#[test]
fn vectors_pack_and_unpack() {
    let doc = load();
    for v in doc["vectors"].as_array().unwrap() {
        let name = str_field(v, "name");
        let expected = tuple(&v["tuple"]);
        let packed = hex_decode(str_field(v, "packed_hex"));
        assert_eq!(
            hex_encode(&pack(&expected)),
            str_field(v, "packed_hex"),
            "pack {name}"
        );
        let decoded = unpack(&packed).unwrap_or_else(|e| panic!("unpack {name}: {e}"));
        assert_same(&decoded, &expected, name);
    }
}

#[test]
fn decode_only_forms_unpack_to_canonical_values() {
    let doc = load();
    for v in doc["decode_only"].as_array().unwrap() {
        let name = str_field(v, "name");
        let expected = tuple(&v["tuple"]);
        let decoded =
            unpack(&hex_decode(str_field(v, "hex"))).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_same(&decoded, &expected, name);
        assert_eq!(
            hex_encode(&pack(&decoded)),
            str_field(v, "canonical_hex"),
            "{name}"
        );
        assert_ne!(
            str_field(v, "hex"),
            str_field(v, "canonical_hex"),
            "{name} is canonical"
        );
    }
}

#[test]
fn ordered_tuples_increase_by_bytes_and_by_ord() {
    let doc = load();
    let tuples: Vec<Vec<Element>> = doc["ordered"]
        .as_array()
        .unwrap()
        .iter()
        .map(tuple)
        .collect();
    let packed: Vec<Vec<u8>> = tuples.iter().map(|t| pack(t)).collect();
    for i in 1..tuples.len() {
        assert!(
            packed[i - 1] < packed[i],
            "bytes not increasing at {}: {:?}",
            i,
            tuples[i]
        );
    }
    for (a, pa) in tuples.iter().zip(&packed) {
        for (b, pb) in tuples.iter().zip(&packed) {
            assert_eq!(a.as_slice().cmp(b.as_slice()), pa.cmp(pb), "{a:?} vs {b:?}");
        }
        assert_same(&unpack(pa).unwrap(), a, "ordered round trip");
    }
}

#[test]
fn ordered_tuples_fall_inside_their_prefix_ranges() {
    let doc = load();
    let tuples: Vec<Vec<Element>> = doc["ordered"]
        .as_array()
        .unwrap()
        .iter()
        .map(tuple)
        .collect();
    for t in tuples.iter().filter(|t| !t.is_empty()) {
        let key = pack(t);
        for cut in 0..t.len() {
            let (begin, end) = range(&t[..cut]);
            assert!(
                begin <= key && key < end,
                "{t:?} outside range of its {cut}-prefix"
            );
        }
        let (begin, _) = range(t);
        assert!(key < begin, "{t:?} is inside its own range");
    }
}

#[test]
fn invalid_encodings_are_errors() {
    let doc = load();
    for v in doc["invalid"].as_array().unwrap() {
        let name = str_field(v, "name");
        let bytes = hex_decode(str_field(v, "hex"));
        let err = match unpack(&bytes) {
            Ok(t) => panic!("{name}: expected an error, got {t:?}"),
            Err(e) => e,
        };
        assert!(
            err.offset < bytes.len(),
            "{name}: offset {} out of bounds",
            err.offset
        );
        let category = match err.reason {
            Reason::Truncated { .. } => "truncated",
            Reason::UnterminatedBytes | Reason::UnterminatedString | Reason::UnterminatedTuple => {
                "unterminated"
            }
            Reason::InvalidUtf8 => "invalid_utf8",
            Reason::UnknownTypeCode(_) => "unknown_type_code",
            Reason::TooDeep => "too_deep",
            _ => "other",
        };
        assert_eq!(category, str_field(v, "error"), "{name}: {err}");
    }
}

#[test]
fn cross_checked_vectors_agree_with_fdb() {
    // Spot-checks straight from design/tuple.md and the brief, independent
    // of the JSON file, so a corrupted file cannot pass silently.
    let known: [(&[Element], &str); 5] = [
        (&[1.into()], "1501"),
        (&[(-1).into()], "13fe"),
        (&["hello".into()], "0268656c6c6f00"),
        (&[b"foo\x00bar".as_slice().into()], "01666f6f00ff62617200"),
        (&[(-5551212).into()], "11ab4b93"),
    ];
    let doc = load();
    for (t, hex) in known {
        assert_eq!(hex_encode(&pack(t)), hex);
        let found = doc["vectors"].as_array().unwrap().iter().any(|v| {
            str_field(v, "packed_hex") == hex
                && tuple(&v["tuple"]).as_slice().cmp(t) == Ordering::Equal
        });
        assert!(found, "vector {hex} missing from the file");
    }
}
