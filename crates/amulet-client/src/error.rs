//! What an operation can fail with, after the client's own retries.

use amulet_api::{error_kind, ErrorKind};
use tonic::{Code, Status};

/// Why an operation failed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// The request is invalid (key or value too large, bad range, bad map
    /// name, ...); nothing changed.
    #[error("invalid request: {0}")]
    InvalidArgument(String),
    /// No such map, log or snapshot; nothing changed.
    #[error("not found: {0}")]
    NotFound(String),
    /// A log position outside the log: below its first position (those
    /// entries were trimmed) or past its end; nothing changed.
    #[error("out of range: {0}")]
    OutOfRange(String),
    /// The map exists already; nothing changed.
    #[error("already exists: {0}")]
    AlreadyExists(String),
    /// The cluster is not configured for the request (it serves no DMap;
    /// a move without checkpoints); nothing changed.
    #[error("failed precondition: {0}")]
    FailedPrecondition(String),
    /// Refused for a passing state of the cluster (another
    /// reconfiguration is taking effect), still so when the client gave
    /// up resending; nothing changed. Try again later.
    #[error("refused for now, retry: {0}")]
    Retryable(String),
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
    /// The node did not accept the client's credentials (with TLS: a
    /// certificate naming no user, or a node's); nothing changed.
    #[error("unauthenticated: {0}")]
    Unauthenticated(String),
    /// The client's user may not do this; nothing changed.
    #[error("permission denied: {0}")]
    PermissionDenied(String),
    /// A node answered something this client does not understand.
    #[error("protocol error: {0}")]
    Protocol(String),
    /// A transaction's commit conflicted: `key` of `map` (or the map as a
    /// whole, when `key` is `None`) was written after its read version.
    /// Nothing was applied; `transact` runs the transaction again.
    #[error("transaction conflict: {message}")]
    Conflict {
        /// The map.
        map: String,
        /// The key.
        key: Option<Vec<u8>>,
        /// The node's message.
        message: String,
    },
    /// A transaction's read version ended (its lease passed, or it was
    /// ended) before it committed; nothing was applied. `transact` runs
    /// the transaction again.
    #[error("read version too old: {0}")]
    ReadVersionTooOld(String),
}

impl Error {
    /// Whether running the transaction again from a new read version may
    /// succeed (a conflict, an ended read version).
    pub fn is_transaction_retryable(&self) -> bool {
        matches!(self, Error::Conflict { .. } | Error::ReadVersionTooOld(_))
    }

    /// The error of a failed map command (the simulator's path, where
    /// no status is in between).
    pub fn from_map_error(error: &amulet_dmap::MapError) -> Error {
        match error {
            amulet_dmap::MapError::Conflict { map, key } => Error::Conflict {
                map: map.clone(),
                key: key.clone(),
                message: error.to_string(),
            },
            amulet_dmap::MapError::ReadVersionTooOld(_) => {
                Error::ReadVersionTooOld(error.to_string())
            }
            other => Error::from_status(&amulet_api::map_error_to_status(other)),
        }
    }
}

impl Error {
    /// The error a final status means.
    pub(crate) fn from_status(status: &Status) -> Error {
        let message = status.message().to_string();
        match error_kind(status) {
            Some(ErrorKind::Retryable) => return Error::Retryable(message),
            Some(ErrorKind::Conflict) => {
                let metadata = status.metadata();
                let map = metadata
                    .get(amulet_api::CONFLICT_MAP_KEY)
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or_default()
                    .to_string();
                let key = metadata
                    .get_bin(amulet_api::CONFLICT_KEY_KEY)
                    .and_then(|v| v.to_bytes().ok())
                    .map(|b| b.to_vec());
                return Error::Conflict { map, key, message };
            }
            Some(ErrorKind::ReadVersionTooOld) => return Error::ReadVersionTooOld(message),
            _ => {}
        }
        match status.code() {
            Code::InvalidArgument => Error::InvalidArgument(message),
            Code::OutOfRange => Error::OutOfRange(message),
            Code::NotFound => Error::NotFound(message),
            Code::AlreadyExists => Error::AlreadyExists(message),
            Code::FailedPrecondition => Error::FailedPrecondition(message),
            Code::ResourceExhausted => Error::ResourceExhausted(message),
            Code::Unknown | Code::DeadlineExceeded => Error::OutcomeUnknown(message),
            Code::Unavailable => Error::Unavailable(message),
            Code::Unauthenticated => Error::Unauthenticated(message),
            Code::PermissionDenied => Error::PermissionDenied(message),
            _ => Error::Protocol(format!("{:?}: {message}", status.code())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use amulet_dmap::MapReply;
    use amulet_smr::{ClientReply, Refusal};

    fn refused(refusal: Refusal) -> Error {
        let reply = ClientReply::<MapReply>::Refused(refusal);
        Error::from_status(&amulet_api::client_reply_to_response(reply).unwrap_err())
    }

    #[test]
    fn refusals_become_their_errors() {
        assert!(matches!(
            refused(Refusal::ReconfigurationPending),
            Error::Retryable(m) if m == "another reconfiguration is taking effect; retry"
        ));
        assert!(matches!(
            refused(Refusal::MoveNeedsCheckpoints),
            Error::FailedPrecondition(_)
        ));
        assert!(matches!(
            refused(Refusal::SessionIdMissing),
            Error::InvalidArgument(_)
        ));
    }
}
