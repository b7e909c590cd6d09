//! A bounds-checked cursor over a `Bytes`, the only way decoders read
//! input. Every read checks the remaining length first, so no input can
//! make a decoder index out of bounds.

use crate::error::DecodeError;
use bytes::Bytes;

/// Reads little-endian integers and zero-copy byte slices off the front of
/// a buffer.
pub(crate) struct Reader {
    bytes: Bytes,
    pos: usize,
}

impl Reader {
    /// A reader at the start of `bytes`.
    pub(crate) fn new(bytes: Bytes) -> Reader {
        Reader { bytes, pos: 0 }
    }

    /// Bytes not yet read.
    pub(crate) fn remaining(&self) -> usize {
        self.bytes.len() - self.pos
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], DecodeError> {
        let rest = self.bytes.get(self.pos..).unwrap_or_default();
        let chunk = rest.first_chunk::<N>().ok_or(DecodeError::Truncated)?;
        self.pos += N;
        Ok(*chunk)
    }

    pub(crate) fn u8(&mut self) -> Result<u8, DecodeError> {
        Ok(self.array::<1>()?[0])
    }

    pub(crate) fn u32(&mut self) -> Result<u32, DecodeError> {
        Ok(u32::from_le_bytes(self.array()?))
    }

    pub(crate) fn u64(&mut self) -> Result<u64, DecodeError> {
        Ok(u64::from_le_bytes(self.array()?))
    }

    /// A bool written as exactly 0 or 1; anything else is invalid so that
    /// every accepted input is the canonical encoding of its value.
    pub(crate) fn bool(&mut self) -> Result<bool, DecodeError> {
        match self.u8()? {
            0 => Ok(false),
            1 => Ok(true),
            tag => Err(DecodeError::UnknownTag { what: "bool", tag }),
        }
    }

    /// `len_bytes` bytes as a slice of the input: no copy.
    pub(crate) fn slice(&mut self, len_bytes: usize) -> Result<Bytes, DecodeError> {
        if len_bytes > self.remaining() {
            return Err(DecodeError::Truncated);
        }
        let start = self.pos;
        self.pos += len_bytes;
        Ok(self.bytes.slice(start..self.pos))
    }

    /// A u32 element count, checked against the remaining input: each
    /// element takes at least `element_bytes_min` bytes, so a count the
    /// input cannot hold is rejected before anything is allocated for it.
    pub(crate) fn count(&mut self, element_bytes_min: usize) -> Result<usize, DecodeError> {
        let count = self.u32()? as usize;
        if count > self.remaining() / element_bytes_min.max(1) {
            return Err(DecodeError::Truncated);
        }
        Ok(count)
    }

    /// Succeeds only if the whole input was read.
    pub(crate) fn finish(&self) -> Result<(), DecodeError> {
        if self.remaining() == 0 {
            Ok(())
        } else {
            Err(DecodeError::TrailingBytes)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_little_endian_and_stops_at_the_end() {
        let mut r = Reader::new(Bytes::from_static(&[1, 0, 0, 0, 7, 9]));
        assert_eq!(r.u32(), Ok(1));
        assert_eq!(r.u8(), Ok(7));
        assert_eq!(r.u32(), Err(DecodeError::Truncated));
        assert_eq!(r.remaining(), 1);
        assert_eq!(r.finish(), Err(DecodeError::TrailingBytes));
        assert_eq!(r.u8(), Ok(9));
        assert_eq!(r.u8(), Err(DecodeError::Truncated));
        assert_eq!(r.finish(), Ok(()));
    }

    #[test]
    fn counts_the_input_cannot_hold_are_rejected() {
        let mut r = Reader::new(Bytes::from_static(&[3, 0, 0, 0, 1, 2, 3, 4, 5, 6]));
        assert_eq!(r.count(2), Ok(3));
        let mut r = Reader::new(Bytes::from_static(&[4, 0, 0, 0, 1, 2, 3, 4, 5, 6]));
        assert_eq!(r.count(2), Err(DecodeError::Truncated));
        let mut r = Reader::new(Bytes::from_static(&[255, 255, 255, 255]));
        assert_eq!(r.count(1), Err(DecodeError::Truncated));
    }

    #[test]
    fn slices_share_the_input() {
        let input = Bytes::from_static(b"abcdef");
        let mut r = Reader::new(input.clone());
        r.u8().unwrap();
        let s = r.slice(3).unwrap();
        assert_eq!(&s[..], b"bcd");
        assert_eq!(s.as_ptr(), input[1..].as_ptr());
        assert_eq!(r.slice(3), Err(DecodeError::Truncated));
        assert_eq!(
            r.bool(),
            Err(DecodeError::UnknownTag {
                what: "bool",
                tag: b'e'
            })
        );
    }
}
