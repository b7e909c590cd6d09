//! Peer messages of the ordering layer, their binary codec, and the frame
//! format used on TCP links (thesis A.3). Decoders are total: any byte
//! string decodes to a message or to a [`DecodeError`], never a panic.
#![deny(missing_docs)]

mod message;

pub use message::{Accepted, Batch, Envelope, Message, Value};
