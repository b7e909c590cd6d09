//! Type codes of the FoundationDB tuple layer (design/tuple.md). The first
//! byte of every encoded element is one of these, and their numeric order is
//! the order between types, so they must never be renumbered.

/// Null: a bare 0x00 at the top level, 0x00 0xFF inside a nested tuple.
pub(crate) const NULL: u8 = 0x00;
/// Byte string, 0x00-terminated, inner 0x00 escaped as 0x00 0xFF.
pub(crate) const BYTES: u8 = 0x01;
/// UTF-8 string, escaped and terminated like a byte string.
pub(crate) const STRING: u8 = 0x02;
/// Nested tuple, terminated by a 0x00 that is not followed by 0xFF.
pub(crate) const NESTED: u8 = 0x05;
/// Negative integer of 9..=255 bytes (FDB's Python and Java bindings).
pub(crate) const NEG_BIG_INT: u8 = 0x0B;
/// Zero. 0x14 - n is a negative n-byte integer, 0x14 + n a positive one.
pub(crate) const INT_ZERO: u8 = 0x14;
/// Negative 8-byte integer: the lowest fixed-size integer code.
pub(crate) const NEG_INT_8: u8 = INT_ZERO - 8;
/// Positive 8-byte integer: the highest fixed-size integer code.
pub(crate) const POS_INT_8: u8 = INT_ZERO + 8;
/// Positive integer of 9..=255 bytes (FDB's Python and Java bindings).
pub(crate) const POS_BIG_INT: u8 = 0x1D;
/// IEEE 754 binary32, big-endian, sign-adjusted.
pub(crate) const FLOAT: u8 = 0x20;
/// IEEE 754 binary64, big-endian, sign-adjusted.
pub(crate) const DOUBLE: u8 = 0x21;
/// Boolean false.
pub(crate) const FALSE: u8 = 0x26;
/// Boolean true.
pub(crate) const TRUE: u8 = 0x27;
/// RFC 4122 UUID, 16 bytes in network order.
pub(crate) const UUID: u8 = 0x30;
/// 96-bit versionstamp, 12 bytes.
pub(crate) const VERSIONSTAMP: u8 = 0x33;
/// Never a type code: escaped NULs (0x00 0xFF) rely on it to sort after
/// any terminator followed by a real element.
pub(crate) const ESCAPE: u8 = 0xFF;
