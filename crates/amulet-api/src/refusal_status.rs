//! A refusal on the wire: the status code of each [`Refusal`] (the table
//! in `amulet.proto`), its reason's stable name in `amulet-reason`
//! metadata, and for a retryable one the `amulet-error` kind clients
//! resend on.

use crate::reply_codec::ErrorKind;
use crate::REASON_KEY;
use amulet_smr::Refusal;
use tonic::metadata::MetadataValue;
use tonic::{Code, Status};

/// The status a refusal travels as.
pub fn refusal_status(refusal: &Refusal) -> Status {
    let message = refusal.to_string();
    let mut status = if refusal.is_retryable() {
        // ABORTED, not UNAVAILABLE: the request reached the cluster and
        // was judged; what to resend may depend on the new state (a
        // reconfiguration is computed again from the new map).
        ErrorKind::Retryable.status(Code::Aborted, message)
    } else {
        Status::new(code_of(refusal), message)
    };
    status
        .metadata_mut()
        .insert(REASON_KEY, MetadataValue::from_static(refusal.reason()));
    status
}

/// The code of a refusal no resend can overcome.
fn code_of(refusal: &Refusal) -> Code {
    match refusal {
        // The request is wrong: fix it.
        Refusal::SessionIdMissing
        | Refusal::SessionLeaseOutOfBounds { .. }
        | Refusal::CloseWithoutSession
        | Refusal::NeedsGlobalStream
        | Refusal::InvalidMap(_) => Code::InvalidArgument,
        // The cluster is not configured for it: change the cluster.
        Refusal::MoveNeedsCheckpoints | Refusal::NoDmap => Code::FailedPrecondition,
        // An eventual map takes the eventual API.
        Refusal::EventualMap(_) => Code::FailedPrecondition,
        Refusal::ReconfigurationPending => Code::Aborted,
        // docs/security.md: the sender may not, or is no longer who it was.
        Refusal::PermissionDenied { .. } => Code::PermissionDenied,
        Refusal::TokenInvalid => Code::Unauthenticated,
        Refusal::AccessChange(_) => Code::InvalidArgument,
        Refusal::MembershipChange(_) => Code::FailedPrecondition,
    }
}

/// The reason a status's `amulet-reason` metadata names, if any.
pub fn refusal_reason(status: &Status) -> Option<&str> {
    status.metadata().get(REASON_KEY)?.to_str().ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{client_reply_to_response, error_kind};
    use amulet_dmap::MapReply;
    use amulet_smr::{ClientReply, InvalidMap};
    use amulet_types::{NodeId, PartitionId, StreamId};
    use bytes::Bytes;

    /// Every reason once, to check names are distinct and well formed.
    fn every_refusal() -> Vec<Refusal> {
        let p = PartitionId(1);
        let s = StreamId(2);
        let mut refusals = vec![
            Refusal::SessionIdMissing,
            Refusal::SessionLeaseOutOfBounds {
                lease_micros: 0,
                max_micros: 1,
            },
            Refusal::CloseWithoutSession,
            Refusal::NeedsGlobalStream,
            Refusal::ReconfigurationPending,
            Refusal::MoveNeedsCheckpoints,
            Refusal::NoDmap,
            Refusal::EventualMap("m".into()),
            Refusal::PermissionDenied {
                user: "u".into(),
                need: "read on \"m\"".into(),
            },
            Refusal::TokenInvalid,
            Refusal::AccessChange(amulet_smr::AccessError::LastClusterAdmin),
        ];
        refusals.extend(
            [
                InvalidMap::NoPartitions,
                InvalidMap::NoReplicas(p),
                InvalidMap::SharedStream,
                InvalidMap::BadTokenRing,
                InvalidMap::BadRanges("r".into()),
                InvalidMap::StreamInUse { stream: s },
                InvalidMap::EvenAcceptors {
                    stream: s,
                    acceptors: 2,
                },
                InvalidMap::NoPartitionToSplit(p),
                InvalidMap::PartitionExists(p),
                InvalidMap::SplitStreamMembers {
                    partition: p,
                    replicas: vec![],
                },
                InvalidMap::SplitMovesNothing,
                InvalidMap::TokenOutsideSegment {
                    token: 0,
                    partition: p,
                    owner: p,
                },
                InvalidMap::NotARangeKeyspace("h".into()),
                InvalidMap::KeyOutsideRange {
                    keyspace: "r".into(),
                    key: Bytes::new(),
                    partition: p,
                },
                InvalidMap::MergeUnknownPartition { from: p, into: p },
                InvalidMap::MergeIntoItself,
                InvalidMap::MergeReplicasDiffer { from: p, into: p },
                InvalidMap::NoPartition(p),
                InvalidMap::ReplicasMustLearn {
                    partition: p,
                    replicas: vec![],
                },
                InvalidMap::MoveReplicasNotDistinct {
                    partition: p,
                    replicas: vec![],
                },
                InvalidMap::MoveMembersMustLearn {
                    partition: p,
                    old: vec![],
                    new: vec![],
                },
                InvalidMap::MoveToIdleNode(NodeId(5)),
                InvalidMap::HandOffInProgress {
                    partition: p,
                    from: vec![NodeId(4)],
                },
            ]
            .into_iter()
            .map(Refusal::InvalidMap),
        );
        refusals
    }

    #[test]
    fn every_refusal_has_its_documented_status_reason_and_kind() {
        let proto = include_str!("../../../proto/amulet/v1/amulet.proto");
        let mut reasons = std::collections::BTreeSet::new();
        for refusal in every_refusal() {
            let status =
                client_reply_to_response(ClientReply::<MapReply>::Refused(refusal.clone()))
                    .unwrap_err();
            let reason = refusal_reason(&status).expect("a refusal names its reason");
            assert!(reasons.insert(reason.to_string()), "{reason} twice");
            assert!(
                reason.chars().all(|c| c.is_ascii_lowercase() || c == '-'),
                "{reason} is not kebab-case"
            );
            assert!(
                proto.contains(&format!("| {reason} ")),
                "{reason} is missing from the table in amulet.proto"
            );
            assert_eq!(status.message(), refusal.to_string(), "the wording stays");
            let (code, kind) = if refusal.is_retryable() {
                (Code::Aborted, Some(ErrorKind::Retryable))
            } else {
                (code_of(&refusal), None)
            };
            assert_eq!(status.code(), code, "{refusal:?}");
            assert_eq!(error_kind(&status), kind, "{refusal:?}");
        }
    }

    #[test]
    fn a_pending_reconfiguration_is_aborted_and_retryable() {
        let status = refusal_status(&Refusal::ReconfigurationPending);
        assert_eq!(status.code(), Code::Aborted);
        assert_eq!(error_kind(&status), Some(ErrorKind::Retryable));
        assert_eq!(refusal_reason(&status), Some("reconfiguration-pending"));
        let status = refusal_status(&Refusal::MoveNeedsCheckpoints);
        assert_eq!(status.code(), Code::FailedPrecondition);
        assert_eq!(error_kind(&status), None);
        assert_eq!(refusal_reason(&status), Some("move-needs-checkpoints"));
    }
}
