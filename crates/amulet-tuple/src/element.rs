//! One element of a tuple, and the order between elements.

use std::cmp::Ordering;
use std::hash::{Hash, Hasher};

use crate::bigint::BigInt;

/// One value of a tuple. The variants are listed in the order of their
/// type codes, which is the order between types.
///
/// **Integers have one form each.** [`unpack`](crate::unpack) and the
/// `From` conversions give [`Int`](Element::Int) for everything in `i64`,
/// [`UInt`](Element::UInt) only above `i64::MAX`, and
/// [`BigInt`](Element::BigInt) only outside `i64::MIN..=u64::MAX`. A
/// hand-built `UInt(5)` is still accepted: it packs to the same bytes as
/// `Int(5)` and compares equal to it.
///
/// **Equality, order and hashing follow the encoding**: `a == b` exactly
/// when `pack(&[a]) == pack(&[b])`, and `a < b` exactly when its bytes sort
/// first. So floats compare by FoundationDB's total order (`-0.0 < 0.0`, NaN
/// equal to itself, NaNs ordered by sign and payload), and slices of
/// elements (`[Element]`, `Vec<Element>`) compare exactly as their packed
/// keys do. The property tests check this against the bytes.
#[derive(Clone, Debug)]
pub enum Element {
    /// Null (0x00).
    Null,
    /// Byte string (0x01).
    Bytes(Vec<u8>),
    /// Unicode string (0x02), stored as UTF-8.
    String(String),
    /// Nested tuple (0x05).
    Tuple(Vec<Element>),
    /// Integer in `i64` (0x0C..=0x1C, zero is 0x14).
    Int(i64),
    /// Integer above `i64::MAX` (0x1C, 8 bytes).
    UInt(u64),
    /// Integer outside `i64::MIN..=u64::MAX` (0x0B, 0x0C or 0x1D).
    BigInt(BigInt),
    /// IEEE 754 binary32 (0x20). All bits, NaN payloads included, survive
    /// a round trip.
    Float(f32),
    /// IEEE 754 binary64 (0x21). All bits, NaN payloads included, survive
    /// a round trip.
    Double(f64),
    /// Boolean (0x26 false, 0x27 true).
    Bool(bool),
    /// RFC 4122 UUID (0x30), its 16 bytes in network order.
    Uuid([u8; 16]),
    /// Complete 96-bit versionstamp (0x33), kept as opaque bytes: 10 bytes
    /// of commit version and batch, then 2 of user version. Amulet has no
    /// versionstamp operations, so incomplete versionstamps (to be filled
    /// in at commit) do not exist here; FDB's Python `pack` refuses a value
    /// whose first 10 bytes are all 0xFF, which it takes for incomplete.
    Versionstamp([u8; 12]),
}

impl Element {
    /// An integer of any size the encoding allows, from its sign and
    /// big-endian magnitude (leading zeros allowed). Gives the canonical
    /// variant (`Int`, `UInt` or `BigInt`), or `None` when the magnitude has
    /// more than [`BigInt::MAX_BYTES`] significant bytes.
    pub fn from_sign_magnitude(negative: bool, magnitude: &[u8]) -> Option<Element> {
        let start = magnitude
            .iter()
            .position(|&b| b != 0)
            .unwrap_or(magnitude.len());
        if magnitude.len() - start > BigInt::MAX_BYTES {
            return None;
        }
        Some(int_from_sign_magnitude(negative, magnitude))
    }

    /// The type code this element's encoding starts with, for integers the
    /// zero code (all integer codes sort together, by value).
    fn type_rank(&self) -> u8 {
        use crate::codes;
        match self {
            Element::Null => codes::NULL,
            Element::Bytes(_) => codes::BYTES,
            Element::String(_) => codes::STRING,
            Element::Tuple(_) => codes::NESTED,
            Element::Int(_) | Element::UInt(_) | Element::BigInt(_) => codes::INT_ZERO,
            Element::Float(_) => codes::FLOAT,
            Element::Double(_) => codes::DOUBLE,
            Element::Bool(_) => codes::FALSE,
            Element::Uuid(_) => codes::UUID,
            Element::Versionstamp(_) => codes::VERSIONSTAMP,
        }
    }
}

/// The canonical integer element for a sign and a big-endian magnitude
/// (leading zeros allowed). The caller guarantees at most
/// [`BigInt::MAX_BYTES`] significant bytes.
pub(crate) fn int_from_sign_magnitude(negative: bool, magnitude: &[u8]) -> Element {
    let start = magnitude
        .iter()
        .position(|&b| b != 0)
        .unwrap_or(magnitude.len());
    let magnitude = &magnitude[start..];
    if magnitude.len() <= 8 {
        let mut be = [0u8; 8];
        be[8 - magnitude.len()..].copy_from_slice(magnitude);
        let value = u64::from_be_bytes(be);
        if negative {
            int_from_negative_u64(value)
        } else {
            Element::from(value)
        }
    } else {
        Element::BigInt(BigInt::new_unchecked(negative, magnitude.to_vec()))
    }
}

/// The canonical element for `-magnitude`.
pub(crate) fn int_from_negative_u64(magnitude: u64) -> Element {
    if magnitude <= 1 << 63 {
        // 2^63 wraps to i64::MIN, which is what it negates to.
        Element::Int((magnitude as i64).wrapping_neg())
    } else {
        Element::BigInt(BigInt::new_unchecked(
            true,
            magnitude.to_be_bytes().to_vec(),
        ))
    }
}

/// Sign-adjusted bits: as unsigned integers they sort like the encoded
/// bytes (FoundationDB's float rule, equal to IEEE 754 totalOrder).
pub(crate) fn f32_key(value: f32) -> u32 {
    let bits = value.to_bits();
    if bits & (1 << 31) != 0 {
        !bits
    } else {
        bits ^ (1 << 31)
    }
}

/// As [`f32_key`], for doubles.
pub(crate) fn f64_key(value: f64) -> u64 {
    let bits = value.to_bits();
    if bits & (1 << 63) != 0 {
        !bits
    } else {
        bits ^ (1 << 63)
    }
}

/// Numeric order between two integer elements of any variant.
fn cmp_ints(a: &Element, b: &Element) -> Ordering {
    // `None` is a BigInt, which lies outside every i128 these give.
    fn small(e: &Element) -> Option<i128> {
        match e {
            Element::Int(v) => Some(i128::from(*v)),
            Element::UInt(v) => Some(i128::from(*v)),
            _ => None,
        }
    }
    match (a, b, small(a), small(b)) {
        (_, _, Some(x), Some(y)) => x.cmp(&y),
        (Element::BigInt(x), Element::BigInt(y), _, _) => x.cmp_value(y),
        (Element::BigInt(x), _, _, _) => {
            if x.is_negative() {
                Ordering::Less
            } else {
                Ordering::Greater
            }
        }
        (_, Element::BigInt(y), _, _) => {
            if y.is_negative() {
                Ordering::Greater
            } else {
                Ordering::Less
            }
        }
        // Callers only pass integers; anything else is equal-ranked noise.
        _ => Ordering::Equal,
    }
}

impl Ord for Element {
    fn cmp(&self, other: &Self) -> Ordering {
        let by_type = self.type_rank().cmp(&other.type_rank());
        if by_type != Ordering::Equal {
            return by_type;
        }
        match (self, other) {
            (Element::Bytes(a), Element::Bytes(b)) => a.cmp(b),
            (Element::String(a), Element::String(b)) => a.as_bytes().cmp(b.as_bytes()),
            (Element::Tuple(a), Element::Tuple(b)) => a.cmp(b),
            (Element::Float(a), Element::Float(b)) => f32_key(*a).cmp(&f32_key(*b)),
            (Element::Double(a), Element::Double(b)) => f64_key(*a).cmp(&f64_key(*b)),
            (Element::Bool(a), Element::Bool(b)) => a.cmp(b),
            (Element::Uuid(a), Element::Uuid(b)) => a.cmp(b),
            (Element::Versionstamp(a), Element::Versionstamp(b)) => a.cmp(b),
            (Element::Null, Element::Null) => Ordering::Equal,
            _ => cmp_ints(self, other),
        }
    }
}

impl PartialOrd for Element {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for Element {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Element {}

impl Hash for Element {
    /// Hashes the encoding, so equal elements (say `Int(5)` and `UInt(5)`)
    /// hash alike.
    fn hash<H: Hasher>(&self, state: &mut H) {
        let mut bytes = Vec::new();
        crate::encode::encode_element(&mut bytes, self, false);
        bytes.hash(state);
    }
}

macro_rules! from_small_int {
    ($($t:ty),*) => {$(
        impl From<$t> for Element {
            fn from(value: $t) -> Self {
                Element::Int(i64::from(value))
            }
        }
    )*};
}
from_small_int!(i8, i16, i32, i64, u8, u16, u32);

impl From<u64> for Element {
    /// `Int` up to `i64::MAX`, `UInt` above.
    fn from(value: u64) -> Self {
        match i64::try_from(value) {
            Ok(v) => Element::Int(v),
            Err(_) => Element::UInt(value),
        }
    }
}

impl From<i128> for Element {
    /// The canonical variant for any `i128`.
    fn from(value: i128) -> Self {
        int_from_sign_magnitude(value < 0, &value.unsigned_abs().to_be_bytes())
    }
}

impl From<bool> for Element {
    fn from(value: bool) -> Self {
        Element::Bool(value)
    }
}

impl From<f32> for Element {
    fn from(value: f32) -> Self {
        Element::Float(value)
    }
}

impl From<f64> for Element {
    fn from(value: f64) -> Self {
        Element::Double(value)
    }
}

impl From<&str> for Element {
    fn from(value: &str) -> Self {
        Element::String(value.to_owned())
    }
}

impl From<String> for Element {
    fn from(value: String) -> Self {
        Element::String(value)
    }
}

impl From<&[u8]> for Element {
    fn from(value: &[u8]) -> Self {
        Element::Bytes(value.to_vec())
    }
}

impl From<Vec<u8>> for Element {
    fn from(value: Vec<u8>) -> Self {
        Element::Bytes(value)
    }
}

impl From<Vec<Element>> for Element {
    fn from(value: Vec<Element>) -> Self {
        Element::Tuple(value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_normalise_to_one_variant() {
        assert!(matches!(Element::from(5u64), Element::Int(5)));
        assert!(matches!(Element::from(u64::MAX), Element::UInt(u64::MAX)));
        assert!(matches!(
            Element::from(i128::from(i64::MIN)),
            Element::Int(i64::MIN)
        ));
        assert!(matches!(Element::from(1i128 << 63), Element::UInt(v) if v == 1 << 63));
        assert!(matches!(Element::from(1i128 << 64), Element::BigInt(_)));
        assert!(matches!(
            Element::from(-(1i128 << 63) - 1),
            Element::BigInt(_)
        ));
        assert!(matches!(
            Element::from_sign_magnitude(true, &[0, 0]),
            Some(Element::Int(0))
        ));
        assert!(Element::from_sign_magnitude(false, &[1; 256]).is_none());
        assert!(Element::from_sign_magnitude(false, &[0; 300]).is_some());
    }

    #[test]
    fn hand_built_uint_equals_int() {
        assert_eq!(Element::UInt(5), Element::Int(5));
        assert_eq!(Element::UInt(5).cmp(&Element::Int(6)), Ordering::Less);
    }

    #[test]
    fn floats_use_the_total_order() {
        assert!(Element::Double(-0.0) < Element::Double(0.0));
        assert_eq!(Element::Double(f64::NAN), Element::Double(f64::NAN));
        assert!(Element::Double(f64::INFINITY) < Element::Double(f64::NAN));
        assert!(Element::Double(-f64::NAN) < Element::Double(f64::NEG_INFINITY));
        assert!(Element::Float(1.0) < Element::Double(0.0));
    }

    #[test]
    fn types_order_by_type_code() {
        let ascending = [
            Element::Null,
            Element::Bytes(vec![0xFF]),
            Element::String(String::new()),
            Element::Tuple(vec![]),
            Element::from(-(1i128 << 100)),
            Element::Int(i64::MIN),
            Element::UInt(u64::MAX),
            Element::from(1i128 << 100),
            Element::Float(f32::NEG_INFINITY),
            Element::Double(f64::NEG_INFINITY),
            Element::Bool(false),
            Element::Bool(true),
            Element::Uuid([0; 16]),
            Element::Versionstamp([0; 12]),
        ];
        for pair in ascending.windows(2) {
            assert!(pair[0] < pair[1], "{:?} < {:?}", pair[0], pair[1]);
        }
    }
}
