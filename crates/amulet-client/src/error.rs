//! What an operation can fail with, after the client's own retries.

use tonic::{Code, Status};

/// Why an operation failed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// The request is invalid (key or value too large, bad range, bad map
    /// name, ...); nothing changed.
    #[error("invalid request: {0}")]
    InvalidArgument(String),
    /// No such map or snapshot; nothing changed.
    #[error("not found: {0}")]
    NotFound(String),
    /// The map exists already; nothing changed.
    #[error("already exists: {0}")]
    AlreadyExists(String),
    /// A limit of the cluster was reached (open snapshots); nothing
    /// changed.
    #[error("resource exhausted: {0}")]
    ResourceExhausted(String),
    /// The operation may or may not have taken effect: the client's
    /// deadline passed while it was retrying, or part of its reply was
    /// lost after it took effect.
    #[error("outcome unknown: {0}")]
    OutcomeUnknown(String),
    /// No node could be reached before the deadline; a read or a first
    /// attempt that never reached a node changed nothing.
    #[error("unavailable: {0}")]
    Unavailable(String),
    /// A node answered something this client does not understand.
    #[error("protocol error: {0}")]
    Protocol(String),
}

impl Error {
    /// The error a final status means.
    pub(crate) fn from_status(status: &Status) -> Error {
        let message = status.message().to_string();
        match status.code() {
            Code::InvalidArgument | Code::OutOfRange => Error::InvalidArgument(message),
            Code::NotFound => Error::NotFound(message),
            Code::AlreadyExists => Error::AlreadyExists(message),
            Code::ResourceExhausted => Error::ResourceExhausted(message),
            Code::Unknown | Code::DeadlineExceeded => Error::OutcomeUnknown(message),
            Code::Unavailable => Error::Unavailable(message),
            _ => Error::Protocol(format!("{:?}: {message}", status.code())),
        }
    }
}
