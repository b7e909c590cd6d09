//! The client API of eventual maps (EventualGet, EventualPut,
//! EventualDelete): every request validated at the edge (map name, key
//! and value sizes; the context and quorums by the service), handed to the
//! event loop, and its answer turned into a reply or a documented status
//! (proto/amulet/v1/amulet.proto).

use crate::node_handle::{HandleError, NodeHandle};
use crate::runtime::EventualAnswer;
use amulet_api::{pb, ERROR_KEY, REASON_KEY};
use amulet_dmap::{MapLimits, MapName};
use amulet_dotted::{Operation, Refusal};
use bytes::Bytes;
use tonic::metadata::MetadataValue;
use tonic::Status;

/// A read.
pub(crate) async fn get(
    handle: &NodeHandle,
    r: pb::EventualGetRequest,
) -> Result<pb::Versioned, Status> {
    check(&r.map, &r.key, None)?;
    run(handle, r.map, r.key, Operation::Get { r: r.r }).await
}

/// A write.
pub(crate) async fn put(
    handle: &NodeHandle,
    r: pb::EventualPutRequest,
) -> Result<pb::Versioned, Status> {
    check(&r.map, &r.key, Some(&r.value))?;
    let operation = Operation::Write {
        value: Some(r.value),
        context: r.context.to_vec(),
        w: r.w,
    };
    run(handle, r.map, r.key, operation).await
}

/// A delete.
pub(crate) async fn delete(
    handle: &NodeHandle,
    r: pb::EventualDeleteRequest,
) -> Result<pb::Versioned, Status> {
    check(&r.map, &r.key, None)?;
    let operation = Operation::Write {
        value: None,
        context: r.context.to_vec(),
        w: r.w,
    };
    run(handle, r.map, r.key, operation).await
}

/// The eventual virtual nodes of a node's status.
pub(crate) fn status_pb(
    eventual: Vec<amulet_dotted::service::ReplicaStatus>,
) -> Vec<pb::EventualReplicaStatus> {
    eventual
        .into_iter()
        .map(|e| pb::EventualReplicaStatus {
            map: e.map,
            replica: e.replica.0,
            keys: e.keys,
            clock_bitmap_bits: e.clock_bitmap_bits,
            dot_keys: e.dot_keys,
            non_stripped: e.non_stripped,
            watermark_lag: e.watermark_lag,
            coordinated: e.coordinated,
            sync_bytes_sent: e.sync_bytes_sent,
            sync_bytes_received: e.sync_bytes_received,
            tombstones: e.tombstones,
            metadata_bytes: e.metadata_bytes,
        })
        .collect()
}

/// The map name and the sizes, by the limits ordered maps have.
fn check(map: &str, key: &[u8], value: Option<&Bytes>) -> Result<(), Status> {
    MapName::new(map).map_err(|e| Status::invalid_argument(e.to_string()))?;
    let limits = MapLimits::default();
    if key.len() > limits.key_bytes_max {
        return Err(Status::invalid_argument(format!(
            "key of {} bytes (at most {})",
            key.len(),
            limits.key_bytes_max
        )));
    }
    if let Some(value) = value {
        if value.len() > limits.value_bytes_max {
            return Err(Status::invalid_argument(format!(
                "value of {} bytes (at most {})",
                value.len(),
                limits.value_bytes_max
            )));
        }
    }
    Ok(())
}

async fn run(
    handle: &NodeHandle,
    map: String,
    key: Bytes,
    operation: Operation,
) -> Result<pb::Versioned, Status> {
    let answer = handle
        .eventual(map, key, operation)
        .await
        .map_err(|e| match e {
            HandleError::Dropped
            | HandleError::Stopped
            | HandleError::Refused(_)
            | HandleError::Io(_) => Status::unavailable("the node is stopping"),
        })?;
    match answer {
        EventualAnswer::Done(v) => Ok(pb::Versioned {
            values: v.values,
            context: v.context.into(),
        }),
        EventualAnswer::NotFound(map) => Err(Status::not_found(format!("no map {map:?}"))),
        EventualAnswer::NotEventual(map) => Err(with_reason(
            Status::failed_precondition(format!(
                "map {map:?} is ordered, not eventual: use Execute"
            )),
            "not-eventual",
            None,
        )),
        EventualAnswer::Refused(refusal) => Err(status_of(&refusal)),
    }
}

/// The status of a refusal (the table in amulet.proto).
pub(crate) fn status_of(refusal: &Refusal) -> Status {
    let message = refusal.to_string();
    match refusal {
        Refusal::UnknownMap(_) => Status::not_found(message),
        Refusal::BadContext(_) => {
            with_reason(Status::invalid_argument(message), "bad-context", None)
        }
        Refusal::QuorumOutOfBounds { .. } => with_reason(
            Status::invalid_argument(message),
            "quorum-out-of-bounds",
            None,
        ),
        Refusal::QuorumNotReached { .. } => with_reason(
            Status::unavailable(message),
            "quorum-not-reached",
            Some("quorum-not-reached"),
        ),
    }
}

fn with_reason(mut status: Status, reason: &'static str, error: Option<&'static str>) -> Status {
    status
        .metadata_mut()
        .insert(REASON_KEY, MetadataValue::from_static(reason));
    if let Some(error) = error {
        status
            .metadata_mut()
            .insert(ERROR_KEY, MetadataValue::from_static(error));
    }
    status
}

#[cfg(test)]
mod tests {
    use super::*;
    use tonic::Code;

    #[test]
    fn every_refusal_has_its_documented_status_and_reason() {
        let cases = [
            (Refusal::UnknownMap("m".into()), Code::NotFound, None),
            (
                Refusal::BadContext("x".into()),
                Code::InvalidArgument,
                Some("bad-context"),
            ),
            (
                Refusal::QuorumOutOfBounds {
                    asked: 4,
                    replicas: 3,
                },
                Code::InvalidArgument,
                Some("quorum-out-of-bounds"),
            ),
            (
                Refusal::QuorumNotReached {
                    answered: 1,
                    needed: 2,
                },
                Code::Unavailable,
                Some("quorum-not-reached"),
            ),
        ];
        for (refusal, code, reason) in cases {
            let status = status_of(&refusal);
            assert_eq!(status.code(), code, "{refusal:?}");
            assert_eq!(
                status
                    .metadata()
                    .get(REASON_KEY)
                    .map(|v| v.to_str().unwrap()),
                reason
            );
        }
    }

    #[test]
    fn oversized_keys_and_values_and_bad_names_are_refused_at_the_edge() {
        let limits = MapLimits::default();
        let big_key = vec![0u8; limits.key_bytes_max + 1];
        assert_eq!(
            check("m", &big_key, None).unwrap_err().code(),
            Code::InvalidArgument
        );
        let big_value = Bytes::from(vec![0u8; limits.value_bytes_max + 1]);
        assert_eq!(
            check("m", b"k", Some(&big_value)).unwrap_err().code(),
            Code::InvalidArgument
        );
        assert_eq!(
            check("a b", b"k", None).unwrap_err().code(),
            Code::InvalidArgument
        );
        assert!(check("m", b"", Some(&Bytes::new())).is_ok());
    }
}
