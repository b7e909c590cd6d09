//! Order-preserving typed keys: FoundationDB's tuple layer
//! (<https://github.com/apple/foundationdb/blob/main/design/tuple.md>),
//! byte for byte, so that keys written here, by FDB's bindings or by
//! Amulet clients in other languages are interchangeable.
//!
//! A key is a tuple of [`Element`]s. [`pack`] turns it into bytes whose
//! unsigned lexicographic order is the tuples' order, so an ordered map of
//! packed keys is ordered by the typed values, and [`range`] gives the key
//! range of every tuple extending a prefix. [`unpack`] turns bytes back into
//! a tuple; it is total (an error with the offending byte offset, never a
//! panic, for any input).
//!
//! The order is also available without encoding: `Element` implements
//! `Ord`, and since slices order lexicographically with shorter prefixes
//! first, `a.cmp(b)` on two `&[Element]` equals `pack(a).cmp(&pack(b))`.
//!
//! The shared test vectors in `spec/tuple-vectors.json` (described in
//! `spec/README.md`) pin the bytes; they were generated with FDB's own
//! Python tuple layer and checked against the values in FDB's Java tests.
//!
//! ```
//! use amulet_tuple::{pack, range, unpack, Element};
//!
//! let key = pack(&["user".into(), 42.into(), Element::Null]);
//! assert_eq!(key, b"\x02user\x00\x15\x2a\x00");
//! assert_eq!(unpack(&key).unwrap(), ["user".into(), 42.into(), Element::Null]);
//!
//! let (begin, end) = range(&["user".into()]);
//! assert!(begin <= key && key < end);
//! ```
#![deny(missing_docs)]

mod bigint;
mod codes;
mod decode;
mod element;
mod encode;
mod error;

pub use bigint::BigInt;
pub use decode::{unpack, MAX_DEPTH};
pub use element::Element;
pub use encode::{pack, pack_into, range};
pub use error::{Reason, TupleError};
