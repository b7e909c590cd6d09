//! The checkpoint file format version being decoded, for state machine
//! checkpoints whose shape grew between versions.
//!
//! Checkpoint payloads are postcard, which carries no field names or
//! counts: a field added to a state machine's checkpoint makes every older
//! file undecodable unless the decoder knows the older shape. The file's
//! header names its format version; the decoder sets it here for the
//! duration of the decode, and a checkpoint type that grew reads the
//! fields of that version (the missing ones take their empty value).

use std::cell::Cell;

/// Format versions at or above this are the current shape (the default
/// outside a file decode: messages between nodes of one build).
pub const CURRENT_FORMAT: u32 = u32::MAX;

thread_local! {
    static DECODING: Cell<u32> = const { Cell::new(CURRENT_FORMAT) };
}

/// The format version of the checkpoint file being decoded on this thread
/// ([`CURRENT_FORMAT`] outside [`with_decoding_format`]).
pub fn decoding_format() -> u32 {
    DECODING.with(Cell::get)
}

/// Runs `decode` with [`decoding_format`] answering `version`.
pub fn with_decoding_format<T>(version: u32, decode: impl FnOnce() -> T) -> T {
    let before = DECODING.with(|d| d.replace(version));
    let result = decode();
    DECODING.with(|d| d.set(before));
    result
}
