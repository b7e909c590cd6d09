//! Why a request was refused without taking effect: one variant per
//! reason, so clients and tests tell them apart by type, not by message.
//! The client API turns each into a gRPC status: retryable ones
//! ([`Refusal::is_retryable`]) into a status clients resend on, the others
//! into one that says what to fix, both with the stable
//! [`Refusal::reason`] in metadata.

use crate::map_error::InvalidMap;
use serde::{Deserialize, Serialize};

/// Why a request was refused. Nothing it asked for happened.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
pub enum Refusal {
    /// Opening or renewing a session needs the session's id.
    #[error("a session request needs a session id")]
    SessionIdMissing,
    /// A session lease must be positive and at most the replica's
    /// `session_lease_micros_max`.
    #[error("session lease {lease_micros} µs outside 1..={max_micros}")]
    SessionLeaseOutOfBounds {
        /// The lease asked for, µs.
        lease_micros: u64,
        /// The longest lease allowed, µs.
        max_micros: u64,
    },
    /// Closing a session needs the session's id.
    #[error("closing needs a session id")]
    CloseWithoutSession,
    /// A command that spans partitions (or needs a unique global position)
    /// was delivered on a partition stream. Only the edge proposes, and it
    /// never puts one there: a misbehaving node proposed it.
    #[error("command needs the global stream")]
    NeedsGlobalStream,
    /// A reconfiguration was ordered while an earlier one had not reached
    /// its fence yet. Retryable: once that one takes effect (a moment
    /// later), compute the change from the new map and send it again.
    #[error("another reconfiguration is taking effect; retry")]
    ReconfigurationPending,
    /// The partition map the request would make breaks a rule (a bad
    /// range layout, a reconfiguration that cannot apply).
    #[error("invalid partition map: {0}")]
    InvalidMap(InvalidMap),
    /// A move's state travels as a checkpoint, and the old replicas hand
    /// the partition off once the new ones hold a durable one: without
    /// checkpoints the move would never finish. Refused by the node.
    #[error("a move needs checkpoints: set [smr] checkpoint_interval_ms > 0")]
    MoveNeedsCheckpoints,
    /// The node runs no replica and knows no partition map. Refused by the
    /// node.
    #[error("this cluster serves no DMap ([smr] is not configured)")]
    NoDmap,
    /// A command of the ordered API on an eventual map.
    #[error("map {0:?} is eventual: use EventualGet, EventualPut and EventualDelete")]
    EventualMap(String),
    /// The sender may not do this (docs/security.md): it needs the
    /// permission named (`read on carts`, `cluster admin`) at the point of
    /// the order where the request executed.
    #[error("user {user:?} needs {need}")]
    PermissionDenied {
        /// The user.
        user: String,
        /// What was missing.
        need: String,
    },
    /// The token the request was made with was revoked or expired by the
    /// time the request executed.
    #[error("the token is no longer valid (revoked or expired)")]
    TokenInvalid,
    /// An access change that cannot apply (a bad name, the last cluster
    /// admin, a full configuration).
    #[error("access change refused: {0}")]
    AccessChange(crate::AccessError),
    /// A membership change that cannot apply (docs/membership.md): alerts
    /// and cuts come from nodes' monitors, never from clients; a join of an
    /// address already in the view; a leave of a node that is not an
    /// active member, or of the last one.
    #[error("membership change refused: {0}")]
    MembershipChange(String),
}

impl Refusal {
    /// Whether the same request may succeed if sent again a moment later:
    /// the refusal is about a passing state of the cluster, not about the
    /// request or the cluster's configuration.
    pub fn is_retryable(&self) -> bool {
        match self {
            Refusal::ReconfigurationPending => true,
            Refusal::SessionIdMissing
            | Refusal::SessionLeaseOutOfBounds { .. }
            | Refusal::CloseWithoutSession
            | Refusal::NeedsGlobalStream
            | Refusal::InvalidMap(_)
            | Refusal::MoveNeedsCheckpoints
            | Refusal::NoDmap
            | Refusal::EventualMap(_)
            | Refusal::PermissionDenied { .. }
            | Refusal::TokenInvalid
            | Refusal::AccessChange(_)
            | Refusal::MembershipChange(_) => false,
        }
    }

    /// The reason's stable name (kebab-case), carried by the client API as
    /// `amulet-reason` metadata; a map rule's own name for
    /// [`Refusal::InvalidMap`].
    pub fn reason(&self) -> &'static str {
        match self {
            Refusal::SessionIdMissing => "session-id-missing",
            Refusal::SessionLeaseOutOfBounds { .. } => "session-lease-out-of-bounds",
            Refusal::CloseWithoutSession => "close-without-session",
            Refusal::NeedsGlobalStream => "needs-global-stream",
            Refusal::ReconfigurationPending => "reconfiguration-pending",
            Refusal::InvalidMap(why) => why.reason(),
            Refusal::MoveNeedsCheckpoints => "move-needs-checkpoints",
            Refusal::NoDmap => "no-dmap",
            Refusal::EventualMap(_) => "eventual-map",
            Refusal::PermissionDenied { .. } => "permission-denied",
            Refusal::TokenInvalid => "token-invalid",
            Refusal::AccessChange(_) => "access-change-refused",
            Refusal::MembershipChange(_) => "membership-change-refused",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::PartitionMapError;
    use amulet_types::StreamId;

    /// The messages clients saw when refusals were strings.
    #[test]
    fn refusals_keep_their_wording() {
        assert_eq!(
            Refusal::ReconfigurationPending.to_string(),
            "another reconfiguration is taking effect; retry"
        );
        assert_eq!(
            Refusal::SessionLeaseOutOfBounds {
                lease_micros: 0,
                max_micros: 600_000_000
            }
            .to_string(),
            "session lease 0 µs outside 1..=600000000"
        );
        let why = InvalidMap::StreamInUse {
            stream: StreamId(7),
        };
        assert_eq!(
            Refusal::InvalidMap(why.clone()).to_string(),
            PartitionMapError::Invalid(why).to_string()
        );
    }

    #[test]
    fn only_a_pending_reconfiguration_is_retryable() {
        assert!(Refusal::ReconfigurationPending.is_retryable());
        assert!(!Refusal::InvalidMap(InvalidMap::SharedStream).is_retryable());
        assert!(!Refusal::MoveNeedsCheckpoints.is_retryable());
    }
}
