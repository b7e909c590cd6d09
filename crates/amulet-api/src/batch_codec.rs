//! ExecuteBatch outcomes: each request of a batch is answered with what
//! Execute would have returned, carried as a message instead of the call's
//! status, so one failed request does not fail its neighbours.

use crate::{pb, CONFLICT_KEY_KEY, CONFLICT_MAP_KEY, ERROR_KEY, REASON_KEY};
use tonic::metadata::MetadataValue;
use tonic::{Code, Status};

/// Most requests in one ExecuteBatch call.
pub const BATCH_REQUESTS_MAX: usize = 1024;

/// One request's result as a batch outcome.
pub fn outcome_from_result(result: Result<pb::MapResponse, Status>) -> pb::MapOutcome {
    use pb::map_outcome::Outcome;
    pb::MapOutcome {
        outcome: Some(match result {
            Ok(response) => Outcome::Response(response),
            Err(status) => Outcome::Failure(pb::Failure {
                code: status.code() as u32,
                message: status.message().to_string(),
                error: metadata_text(&status, ERROR_KEY),
                reason: metadata_text(&status, REASON_KEY),
                conflict_map: metadata_text(&status, CONFLICT_MAP_KEY),
                conflict_key: status
                    .metadata()
                    .get_bin(CONFLICT_KEY_KEY)
                    .and_then(|v| v.to_bytes().ok()),
            }),
        }),
    }
}

/// A metadata value as text ("" when absent or not text).
fn metadata_text(status: &Status, key: &str) -> String {
    status
        .metadata()
        .get(key)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string()
}

/// A batch outcome as the result Execute would have returned (the
/// `amulet-error` kind and `amulet-reason` back in the status metadata).
/// Total: an outcome
/// without a result, or a code outside gRPC's, is a protocol error.
pub fn outcome_to_result(outcome: pb::MapOutcome) -> Result<pb::MapResponse, Status> {
    use pb::map_outcome::Outcome;
    match outcome.outcome {
        Some(Outcome::Response(response)) => Ok(response),
        Some(Outcome::Failure(failure)) => {
            let code = i32::try_from(failure.code)
                .ok()
                .map(Code::from_i32)
                .filter(|c| *c != Code::Ok && failure.code <= 16);
            let Some(code) = code else {
                return Err(Status::internal(format!(
                    "a batch outcome carries status code {}, which is not a failure",
                    failure.code
                )));
            };
            let mut status = Status::new(code, failure.message);
            if let Some(key) = &failure.conflict_key {
                status
                    .metadata_mut()
                    .insert_bin(CONFLICT_KEY_KEY, MetadataValue::from_bytes(key));
            }
            for (key, text) in [
                (ERROR_KEY, &failure.error),
                (REASON_KEY, &failure.reason),
                (CONFLICT_MAP_KEY, &failure.conflict_map),
            ] {
                if !text.is_empty() {
                    if let Ok(value) = MetadataValue::try_from(text.as_str()) {
                        status.metadata_mut().insert(key, value);
                    }
                }
            }
            Err(status)
        }
        None => Err(Status::internal("a batch outcome carries no result")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{error_kind, refusal_reason, ErrorKind};

    #[test]
    fn a_failure_keeps_its_code_message_and_kind() {
        let mut status = Status::failed_precondition("old map");
        status
            .metadata_mut()
            .insert(ERROR_KEY, MetadataValue::from_static("stale-map"));
        let back = outcome_to_result(outcome_from_result(Err(status))).unwrap_err();
        assert_eq!(back.code(), Code::FailedPrecondition);
        assert_eq!(back.message(), "old map");
        assert_eq!(error_kind(&back), Some(ErrorKind::StaleMap));
        assert_eq!(refusal_reason(&back), None);
    }

    #[test]
    fn a_refusal_keeps_its_reason_in_a_batch() {
        let reply = amulet_smr::ClientReply::<amulet_dmap::MapReply>::Refused(
            amulet_smr::Refusal::ReconfigurationPending,
        );
        let status = crate::client_reply_to_response(reply).unwrap_err();
        let back = outcome_to_result(outcome_from_result(Err(status))).unwrap_err();
        assert_eq!(back.code(), Code::Aborted);
        assert_eq!(error_kind(&back), Some(ErrorKind::Retryable));
        assert_eq!(refusal_reason(&back), Some("reconfiguration-pending"));
    }

    #[test]
    fn a_response_passes_through() {
        let response = pb::MapResponse::default();
        let back = outcome_to_result(outcome_from_result(Ok(response.clone()))).unwrap();
        assert_eq!(back, response);
    }

    #[test]
    fn bad_outcomes_are_protocol_errors_not_panics() {
        for code in [0, 17, u32::MAX] {
            let outcome = pb::MapOutcome {
                outcome: Some(pb::map_outcome::Outcome::Failure(pb::Failure {
                    code,
                    message: String::new(),
                    error: "\u{1}bad".into(),
                    reason: String::new(),
                    ..Default::default()
                })),
            };
            assert_eq!(
                outcome_to_result(outcome).unwrap_err().code(),
                Code::Internal
            );
        }
        let empty = pb::MapOutcome { outcome: None };
        assert_eq!(outcome_to_result(empty).unwrap_err().code(), Code::Internal);
        // A kind that is not valid metadata is dropped, the status kept.
        let odd = pb::MapOutcome {
            outcome: Some(pb::map_outcome::Outcome::Failure(pb::Failure {
                code: Code::Unavailable as u32,
                message: "x".into(),
                error: "bad\nkind".into(),
                reason: "bad\nreason".into(),
                ..Default::default()
            })),
        };
        let status = outcome_to_result(odd).unwrap_err();
        assert_eq!(status.code(), Code::Unavailable);
        assert_eq!(error_kind(&status), None);
        assert_eq!(refusal_reason(&status), None);
    }

    #[test]
    fn a_conflict_keeps_its_map_and_key_through_a_batch() {
        let status = crate::map_error_to_status(&amulet_dmap::MapError::Conflict {
            map: "accounts".into(),
            key: Some(b"alice".to_vec()),
        });
        let back = outcome_to_result(outcome_from_result(Err(status))).unwrap_err();
        assert_eq!(error_kind(&back), Some(ErrorKind::Conflict));
        assert_eq!(
            back.metadata()
                .get(CONFLICT_MAP_KEY)
                .unwrap()
                .to_str()
                .unwrap(),
            "accounts"
        );
        assert_eq!(
            back.metadata()
                .get_bin(CONFLICT_KEY_KEY)
                .unwrap()
                .to_bytes()
                .unwrap()
                .as_ref(),
            b"alice"
        );
    }
}
