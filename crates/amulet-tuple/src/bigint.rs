//! Integers beyond 64 bits, for compatibility with FoundationDB's Python and
//! Java bindings, which write them with the arbitrary-precision codes 0x1D
//! (positive) and 0x0B (negative). Amulet code rarely builds these; they
//! exist so that every integer another binding can write decodes, instead
//! of failing, and re-encodes to the same bytes.

use std::cmp::Ordering;

/// An integer outside `i64::MIN..=u64::MAX`, as sign and magnitude.
///
/// Invariants (kept by the only constructor,
/// [`Element::from_sign_magnitude`](crate::Element::from_sign_magnitude),
/// and by the decoder): the magnitude is big-endian without leading zero
/// bytes, at most [`BigInt::MAX_BYTES`] long, above `u64::MAX` when
/// positive and above `2^63` when negative. So every integer has exactly one
/// [`Element`](crate::Element) form.
///
/// Encoding: positive values are `0x1D, len, magnitude`; negative values of
/// 9 bytes or more are `0x0B, len ^ 0xFF, !magnitude` (one's complement);
/// negative values between `-(2^64 - 1)` and `-(2^63 + 1)` still fit the
/// 8-byte negative code 0x0C, as in FDB's Java and Go bindings.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct BigInt {
    negative: bool,
    magnitude: Vec<u8>,
}

impl BigInt {
    /// The largest magnitude the encoding can carry: its length is one byte.
    pub const MAX_BYTES: usize = 255;

    /// Builds a value the caller has already checked against the invariants.
    pub(crate) fn new_unchecked(negative: bool, magnitude: Vec<u8>) -> Self {
        debug_assert!(magnitude.first().is_some_and(|&b| b != 0));
        debug_assert!(magnitude.len() <= Self::MAX_BYTES);
        debug_assert!(magnitude.len() >= if negative { 8 } else { 9 });
        BigInt {
            negative,
            magnitude,
        }
    }

    /// Whether the value is below zero (then it is below `i64::MIN`).
    pub fn is_negative(&self) -> bool {
        self.negative
    }

    /// The absolute value, big-endian, without leading zero bytes.
    pub fn magnitude(&self) -> &[u8] {
        &self.magnitude
    }

    /// Numeric order: every negative value below every positive one, longer
    /// magnitudes further from zero.
    pub(crate) fn cmp_value(&self, other: &BigInt) -> Ordering {
        match (self.negative, other.negative) {
            (true, false) => Ordering::Less,
            (false, true) => Ordering::Greater,
            (negative, _) => {
                let by_magnitude = self
                    .magnitude
                    .len()
                    .cmp(&other.magnitude.len())
                    .then_with(|| self.magnitude.cmp(&other.magnitude));
                if negative {
                    by_magnitude.reverse()
                } else {
                    by_magnitude
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn big(negative: bool, magnitude: &[u8]) -> BigInt {
        BigInt::new_unchecked(negative, magnitude.to_vec())
    }

    #[test]
    fn orders_by_sign_then_length_then_bytes() {
        let two_64 = [1, 0, 0, 0, 0, 0, 0, 0, 0];
        let three_64 = [3, 0, 0, 0, 0, 0, 0, 0, 0];
        let two_72 = [1, 0, 0, 0, 0, 0, 0, 0, 0, 0];
        let ascending = [
            big(true, &two_72),
            big(true, &three_64),
            big(true, &two_64),
            big(true, &[0xFF; 8]),
            big(false, &two_64),
            big(false, &three_64),
            big(false, &two_72),
        ];
        for (i, a) in ascending.iter().enumerate() {
            for (j, b) in ascending.iter().enumerate() {
                assert_eq!(a.cmp_value(b), i.cmp(&j), "{a:?} vs {b:?}");
            }
        }
    }
}
