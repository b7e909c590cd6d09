//! Unpacking keys back into tuples. The decoder is total: every byte string
//! gives a tuple or a [`TupleError`], never a panic. Its recursion is bounded
//! by [`MAX_DEPTH`], and its allocations are proportional to the input's
//! length (each decoded element consumes at least one input byte, and no
//! length read from the input is trusted before the bytes it announces are
//! checked to be there).

use crate::codes;
use crate::element::{int_from_negative_u64, int_from_sign_magnitude, Element};
use crate::error::{Reason, TupleError};

/// How deeply tuples may nest inside the top-level tuple: a tuple holding a
/// tuple is depth 2. Deeper inputs are refused with [`Reason::TooDeep`],
/// which bounds the decoder's recursion. FoundationDB has no such limit;
/// keys this deep do not occur in practice.
pub const MAX_DEPTH: usize = 64;

/// Unpacks a key made by [`pack`](crate::pack) or by any FoundationDB
/// binding's tuple layer.
///
/// Strict where FDB's bindings differ or are lax: unterminated strings and
/// nested tuples, invalid UTF-8 and unknown, reserved or deprecated type
/// codes are errors (Java's binding agrees; Python's accepts unterminated
/// ones). Lenient where all of them are: an integer in a non-minimal form
/// (`0x15 0x00`, the arbitrary-precision codes for small values, or the
/// `0x1D 0x08 ...` that FDB's Python binding writes for `2^64 - 1`, FDB
/// issue #1296) decodes to its value, which packs back in the minimal form.
/// Apart from those integer forms, `pack(&unpack(b)?) == b`.
///
/// Versionstamps (0x33) decode as opaque
/// [`Element::Versionstamp`] values.
pub fn unpack(bytes: &[u8]) -> Result<Vec<Element>, TupleError> {
    let mut decoder = Decoder {
        input: bytes,
        pos: 0,
    };
    let mut elements = Vec::new();
    while decoder.pos < bytes.len() {
        elements.push(decoder.element(0)?);
    }
    Ok(elements)
}

struct Decoder<'a> {
    input: &'a [u8],
    /// Next byte to read; never beyond `input.len()`.
    pos: usize,
}

impl Decoder<'_> {
    /// Decodes the element whose type code is at `self.pos` (which must be
    /// in bounds), inside `depth` levels of nested tuples.
    fn element(&mut self, depth: usize) -> Result<Element, TupleError> {
        let start = self.pos;
        let code = self.input[start];
        self.pos += 1;
        let fail = |reason| TupleError {
            offset: start,
            reason,
        };
        match code {
            codes::NULL => Ok(Element::Null),
            codes::BYTES => {
                let bytes = self.escaped().ok_or(fail(Reason::UnterminatedBytes))?;
                Ok(Element::Bytes(bytes))
            }
            codes::STRING => {
                let bytes = self.escaped().ok_or(fail(Reason::UnterminatedString))?;
                String::from_utf8(bytes)
                    .map(Element::String)
                    .map_err(|_| fail(Reason::InvalidUtf8))
            }
            codes::NESTED => self.nested(start, depth + 1),
            codes::NEG_INT_8..codes::INT_ZERO => {
                let n = usize::from(codes::INT_ZERO - code);
                let raw = self.take_u64(start, code, n)?;
                // The bytes are the one's complement of the magnitude.
                let mask = u64::MAX >> (64 - 8 * n);
                Ok(int_from_negative_u64(!raw & mask))
            }
            codes::INT_ZERO..=codes::POS_INT_8 => {
                let n = usize::from(code - codes::INT_ZERO);
                Ok(Element::from(self.take_u64(start, code, n)?))
            }
            codes::POS_BIG_INT => {
                let len = usize::from(self.take(start, code, 1)?[0]);
                let magnitude = self.take(start, code, len)?;
                Ok(int_from_sign_magnitude(false, magnitude))
            }
            codes::NEG_BIG_INT => {
                let len = usize::from(self.take(start, code, 1)?[0] ^ 0xFF);
                let complement = self.take(start, code, len)?;
                let magnitude: Vec<u8> = complement.iter().map(|b| !b).collect();
                Ok(int_from_sign_magnitude(true, &magnitude))
            }
            codes::FLOAT => {
                let key = u32::from_be_bytes(self.take_array(start, code)?);
                let bits = if key & (1 << 31) != 0 {
                    key ^ (1 << 31)
                } else {
                    !key
                };
                Ok(Element::Float(f32::from_bits(bits)))
            }
            codes::DOUBLE => {
                let key = u64::from_be_bytes(self.take_array(start, code)?);
                let bits = if key & (1 << 63) != 0 {
                    key ^ (1 << 63)
                } else {
                    !key
                };
                Ok(Element::Double(f64::from_bits(bits)))
            }
            codes::FALSE => Ok(Element::Bool(false)),
            codes::TRUE => Ok(Element::Bool(true)),
            codes::UUID => Ok(Element::Uuid(self.take_array(start, code)?)),
            codes::VERSIONSTAMP => Ok(Element::Versionstamp(self.take_array(start, code)?)),
            other => Err(fail(Reason::UnknownTypeCode(other))),
        }
    }

    /// The items of a nested tuple whose 0x05 is at `start`, up to and
    /// including its terminator.
    fn nested(&mut self, start: usize, depth: usize) -> Result<Element, TupleError> {
        if depth > MAX_DEPTH {
            return Err(TupleError {
                offset: start,
                reason: Reason::TooDeep,
            });
        }
        let mut items = Vec::new();
        loop {
            match self.input.get(self.pos) {
                None => {
                    return Err(TupleError {
                        offset: start,
                        reason: Reason::UnterminatedTuple,
                    });
                }
                Some(&codes::NULL) => {
                    if self.input.get(self.pos + 1) == Some(&codes::ESCAPE) {
                        items.push(Element::Null);
                        self.pos += 2;
                    } else {
                        self.pos += 1;
                        return Ok(Element::Tuple(items));
                    }
                }
                Some(_) => items.push(self.element(depth)?),
            }
        }
    }

    /// The body of a byte or unicode string up to its terminator, with each
    /// 0x00 0xFF turned back into 0x00; `None` if there is no terminator.
    fn escaped(&mut self) -> Option<Vec<u8>> {
        let mut out = Vec::new();
        let mut pos = self.pos;
        loop {
            let rest = &self.input[pos..];
            let zero = rest.iter().position(|&b| b == 0x00)?;
            out.extend_from_slice(&rest[..=zero]);
            pos += zero + 1;
            if self.input.get(pos) == Some(&codes::ESCAPE) {
                pos += 1;
            } else {
                out.pop(); // the terminator
                self.pos = pos;
                return Some(out);
            }
        }
    }

    /// The next `n` bytes of the element whose code `code` is at `start`.
    fn take(&mut self, start: usize, code: u8, n: usize) -> Result<&[u8], TupleError> {
        let available = self.input.len() - self.pos;
        if available < n {
            return Err(TupleError {
                offset: start,
                reason: Reason::Truncated {
                    code,
                    needed: n,
                    available,
                },
            });
        }
        let bytes = &self.input[self.pos..self.pos + n];
        self.pos += n;
        Ok(bytes)
    }

    fn take_array<const N: usize>(
        &mut self,
        start: usize,
        code: u8,
    ) -> Result<[u8; N], TupleError> {
        let mut array = [0u8; N];
        array.copy_from_slice(self.take(start, code, N)?);
        Ok(array)
    }

    /// `n` (1..=8) big-endian bytes as an unsigned integer.
    fn take_u64(&mut self, start: usize, code: u8, n: usize) -> Result<u64, TupleError> {
        let mut be = [0u8; 8];
        be[8 - n..].copy_from_slice(self.take(start, code, n)?);
        Ok(u64::from_be_bytes(be))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pack;

    fn nested(depth: usize) -> Vec<u8> {
        let mut bytes = vec![codes::NESTED; depth];
        bytes.extend(std::iter::repeat_n(0x00, depth));
        bytes
    }

    #[test]
    fn depth_limit_is_inclusive() {
        let deepest = unpack(&nested(MAX_DEPTH)).unwrap();
        assert_eq!(pack(&deepest), nested(MAX_DEPTH));
        let err = unpack(&nested(MAX_DEPTH + 1)).unwrap_err();
        assert_eq!(
            err,
            TupleError {
                offset: MAX_DEPTH,
                reason: Reason::TooDeep
            }
        );
        // A long run of 0x05 fails fast, without recursing further.
        assert_eq!(
            unpack(&[codes::NESTED; 100_000]).unwrap_err().reason,
            Reason::TooDeep
        );
    }

    #[test]
    fn errors_point_at_the_faulty_element() {
        let err = unpack(&[0x15, 0x01, 0x16, 0x01]).unwrap_err();
        assert_eq!(
            err,
            TupleError {
                offset: 2,
                reason: Reason::Truncated {
                    code: 0x16,
                    needed: 2,
                    available: 1
                }
            }
        );
        assert_eq!(
            unpack(&[0x14, 0xFF]).unwrap_err(),
            TupleError {
                offset: 1,
                reason: Reason::UnknownTypeCode(0xFF)
            }
        );
        assert_eq!(
            unpack(&[0x14, 0x02, b'a']).unwrap_err().reason,
            Reason::UnterminatedString
        );
        assert_eq!(
            unpack(&[0x05, 0x14]).unwrap_err(),
            TupleError {
                offset: 0,
                reason: Reason::UnterminatedTuple
            }
        );
        let message = unpack(&[0x1D, 0x09, 1]).unwrap_err().to_string();
        assert_eq!(
            message,
            "invalid tuple encoding at byte 0: type code 0x1d needs 9 more bytes but only 1 remain"
        );
    }

    #[test]
    fn python_forms_of_u64_max_decode() {
        // FDB issue #1296: Python writes +-(2^64 - 1) with the big codes.
        let max = unpack(&[0x1D, 0x08, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF]).unwrap();
        assert!(matches!(max[..], [Element::UInt(u64::MAX)]));
        let min = unpack(&[0x0B, 0xF7, 0, 0, 0, 0, 0, 0, 0, 0]).unwrap();
        assert_eq!(min, [Element::from(-i128::from(u64::MAX))]);
        assert_eq!(pack(&min), [0x0C, 0, 0, 0, 0, 0, 0, 0, 0]);
    }

    #[test]
    fn escapes_round_trip() {
        let decoded =
            unpack(&[0x01, 0x00, 0xFF, 0x00, 0xFF, 0x00, 0x02, 0x00, 0xFF, 0x00]).unwrap();
        assert_eq!(
            decoded,
            [Element::Bytes(vec![0, 0]), Element::String("\0".into())]
        );
        // An escape right before the end leaves the string unterminated.
        assert_eq!(
            unpack(&[0x01, 0x61, 0x00, 0xFF]).unwrap_err().reason,
            Reason::UnterminatedBytes
        );
    }

    #[test]
    fn nan_payloads_survive() {
        for bits in [
            0x7FF8_0000_0000_0000u64,
            0xFFF8_0000_0000_0001,
            0x7FF0_0000_0000_0001,
        ] {
            let packed = pack(&[Element::Double(f64::from_bits(bits))]);
            match unpack(&packed).unwrap()[..] {
                [Element::Double(v)] => assert_eq!(v.to_bits(), bits),
                ref other => panic!("{other:?}"),
            }
        }
    }
}
