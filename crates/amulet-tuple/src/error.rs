//! Why bytes did not unpack. [`unpack`](crate::unpack) returns one of these
//! instead of panicking, whatever the input.

/// A byte string that is not a valid tuple encoding.
///
/// `offset` is the position, in the input given to
/// [`unpack`](crate::unpack), of the type code of the element that could
/// not be decoded (for [`Reason::UnknownTypeCode`], of that byte itself), so
/// a caller can point at the faulty element of a long key.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid tuple encoding at byte {offset}: {reason}")]
pub struct TupleError {
    /// Byte offset of the faulty element's type code.
    pub offset: usize,
    /// What is wrong with it.
    pub reason: Reason,
}

/// What is wrong with an element.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Reason {
    /// A fixed-size element (integer, float, UUID, versionstamp) or a big
    /// integer's length byte or body runs past the end of the input.
    #[error("type code {code:#04x} needs {needed} more bytes but only {available} remain")]
    Truncated {
        /// The element's type code.
        code: u8,
        /// Bytes the element needs after its type code (or length byte).
        needed: usize,
        /// Bytes left in the input.
        available: usize,
    },
    /// A byte string (0x01) has no terminating 0x00.
    #[error("byte string has no terminating 0x00")]
    UnterminatedBytes,
    /// A unicode string (0x02) has no terminating 0x00.
    #[error("unicode string has no terminating 0x00")]
    UnterminatedString,
    /// A nested tuple (0x05) has no terminating 0x00.
    #[error("nested tuple has no terminating 0x00")]
    UnterminatedTuple,
    /// A unicode string's bytes are not UTF-8 (this includes encoded UTF-16
    /// surrogates and overlong forms, which Java's binding also rejects).
    #[error("unicode string is not valid UTF-8")]
    InvalidUtf8,
    /// A byte that is not a type code this crate decodes: never assigned
    /// (0xFF, ...), reserved by FoundationDB (0x0A, 0x1E, 0x22 long double,
    /// 0x23/0x24 decimal, 0x31, 0x32, user codes 0x40-0x4F) or deprecated
    /// (0x03/0x04 old nested tuples, 0x25 old true).
    #[error("unknown, reserved or unsupported type code {0:#04x}")]
    UnknownTypeCode(u8),
    /// Nested tuples deeper than [`MAX_DEPTH`](crate::MAX_DEPTH). This is
    /// Amulet's limit, not FoundationDB's: it bounds the decoder's recursion.
    #[error("tuples nested more than {} deep", crate::MAX_DEPTH)]
    TooDeep,
}
