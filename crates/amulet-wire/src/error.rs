//! Why bytes did not decode. Every decoder of this crate returns one of
//! these instead of panicking, whatever the input.

/// A byte string that is not a valid encoding. Once a frame stream yields
/// one, the stream has lost its framing and the connection must be closed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    /// The input ends in the middle of a value, or a length or count claims
    /// more bytes than the input holds.
    #[error("truncated: the input ends before the value it announces")]
    Truncated,
    /// A tag byte names no known variant.
    #[error("unknown {what} tag {tag}")]
    UnknownTag {
        /// What the tag selects (a message, a batch, a frame kind, ...).
        what: &'static str,
        /// The tag found.
        tag: u8,
    },
    /// A length exceeds a configured limit. Reported before anything of
    /// that length is buffered.
    #[error("{what} of {len_bytes} bytes exceeds the limit of {max_bytes} bytes")]
    TooLarge {
        /// What is too large.
        what: &'static str,
        /// The announced length, in bytes.
        len_bytes: u64,
        /// The limit, in bytes.
        max_bytes: u64,
    },
    /// A frame does not start with [`crate::FRAME_MAGIC`]: the stream is not
    /// an Amulet peer link, or it lost its framing.
    #[error("bad frame magic: the stream is not framed Amulet traffic")]
    BadMagic,
    /// A frame body does not match its CRC32C: it was corrupted in transit.
    #[error("bad checksum: the frame body does not match its crc32c")]
    BadChecksum,
    /// A value decoded completely but bytes are left over after it.
    #[error("trailing bytes after a complete value")]
    TrailingBytes,
    /// Well-formed bytes that break an invariant of the messages.
    #[error("invalid: {0}")]
    Invalid(String),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_name_the_problem() {
        let e = DecodeError::UnknownTag {
            what: "message",
            tag: 99,
        };
        assert_eq!(e.to_string(), "unknown message tag 99");
        let e = DecodeError::TooLarge {
            what: "frame",
            len_bytes: 10,
            max_bytes: 5,
        };
        assert_eq!(
            e.to_string(),
            "frame of 10 bytes exceeds the limit of 5 bytes"
        );
        assert!(DecodeError::Invalid("skip count 0".into())
            .to_string()
            .contains("skip count 0"));
    }
}
