//! Peer messages of the ordering layer, their binary codec, and the frame
//! format used on TCP links (thesis A.3). Decoders are total: any byte
//! string decodes to a message or to a [`DecodeError`], never a panic, and
//! no length or count read from the input is trusted before it is checked
//! against the bytes actually there and the configured limits.
#![deny(missing_docs)]

mod codec;
mod error;
mod frame;
mod frame_decoder;
mod message;
mod reader;

pub use codec::{
    batch_encoded_len, decode_batch, decode_envelope, encode_batch, encode_envelope, encoded_len,
};
pub use error::DecodeError;
pub use frame::{encode_frame, Frame, Hello, FRAME_HEADER_BYTES, FRAME_MAGIC, HELLO_BODY_BYTES};
pub use frame_decoder::FrameDecoder;
pub use message::{Accepted, Batch, Envelope, Message, Value, ValueKind};
