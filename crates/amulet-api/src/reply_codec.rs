//! Replies on the wire: a [`ClientReply`] becomes a `MapResponse` or a
//! status with a documented code (the table in `amulet.proto`); clients
//! read them back.

use crate::refusal_status::refusal_status;
use crate::{pb, ERROR_KEY};
use amulet_dmap::{MapError, MapReply};
use amulet_smr::ClientReply;
use tonic::metadata::MetadataValue;
use tonic::{Code, Status};

/// The errors a client library handles by itself, named in a status's
/// `amulet-error` metadata.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    /// The client's partition map is out of date.
    StaleMap,
    /// The node does not replicate the partition asked for.
    NotAReplica,
    /// The session is unknown (expired or closed).
    SessionExpired,
    /// The session already executed a later sequence.
    StaleSequence,
    /// The command took effect; part of its reply is no longer held.
    ReplyLost,
    /// The replica has not caught up with the client's map version; not
    /// ordered.
    Behind,
    /// Refused for a passing state of the cluster (another reconfiguration
    /// is taking effect); nothing changed. Resend after a pause.
    Retryable,
    /// A transaction's commit conflicted; nothing applied. Run it again.
    Conflict,
    /// A transaction's read version ended; nothing applied. Run it again.
    ReadVersionTooOld,
    /// This replica holds no snapshot of the read version: read from
    /// another.
    ReadVersionElsewhere,
}

impl ErrorKind {
    fn as_str(self) -> &'static str {
        match self {
            ErrorKind::StaleMap => "stale-map",
            ErrorKind::NotAReplica => "not-a-replica",
            ErrorKind::SessionExpired => "session-expired",
            ErrorKind::StaleSequence => "stale-sequence",
            ErrorKind::ReplyLost => "reply-lost",
            ErrorKind::Behind => "behind",
            ErrorKind::Retryable => "retryable",
            ErrorKind::Conflict => "conflict",
            ErrorKind::ReadVersionTooOld => "read-version-too-old",
            ErrorKind::ReadVersionElsewhere => "read-version-elsewhere",
        }
    }

    pub(crate) fn status(self, code: Code, message: String) -> Status {
        let mut status = Status::new(code, message);
        status
            .metadata_mut()
            .insert(ERROR_KEY, MetadataValue::from_static(self.as_str()));
        status
    }
}

/// The kind a status names, if it is one a client handles by itself.
pub fn error_kind(status: &Status) -> Option<ErrorKind> {
    let value = status.metadata().get(ERROR_KEY)?.to_str().ok()?;
    [
        ErrorKind::StaleMap,
        ErrorKind::NotAReplica,
        ErrorKind::SessionExpired,
        ErrorKind::StaleSequence,
        ErrorKind::ReplyLost,
        ErrorKind::Behind,
        ErrorKind::Retryable,
        ErrorKind::Conflict,
        ErrorKind::ReadVersionTooOld,
        ErrorKind::ReadVersionElsewhere,
    ]
    .into_iter()
    .find(|k| k.as_str() == value)
}

/// Metadata naming the map of a transaction conflict.
pub const CONFLICT_MAP_KEY: &str = "amulet-conflict-map";
/// Binary metadata naming the key of a transaction conflict.
pub const CONFLICT_KEY_KEY: &str = "amulet-conflict-key-bin";

/// The status of a command that failed and changed nothing (the table in
/// `amulet.proto`).
pub fn map_error_to_status(error: &MapError) -> Status {
    map_error_status(error)
}

/// The status of a command that failed and changed nothing.
pub(crate) fn map_error_status(error: &MapError) -> Status {
    let kind_status = |kind: ErrorKind, code| kind.status(code, error.to_string());
    match error {
        MapError::Conflict { map, key } => {
            let mut status = kind_status(ErrorKind::Conflict, Code::Aborted);
            if let Ok(value) = MetadataValue::try_from(map.as_str()) {
                status.metadata_mut().insert(CONFLICT_MAP_KEY, value);
            }
            if let Some(key) = key {
                status.metadata_mut().insert_bin(
                    CONFLICT_KEY_KEY,
                    tonic::metadata::MetadataValue::from_bytes(key),
                );
            }
            return status;
        }
        MapError::ReadVersionTooOld(_) => {
            return kind_status(ErrorKind::ReadVersionTooOld, Code::Aborted)
        }
        MapError::ReadVersionElsewhere(_) => {
            return kind_status(ErrorKind::ReadVersionElsewhere, Code::Unavailable)
        }
        _ => {}
    }
    let code = match error {
        MapError::Conflict { .. }
        | MapError::ReadVersionTooOld(_)
        | MapError::ReadVersionElsewhere(_) => unreachable!("answered above"),
        MapError::TooManyReadVersions(_) => Code::ResourceExhausted,
        MapError::FutureReadVersion(_)
        | MapError::TransactionTooLarge { .. }
        | MapError::BadTransaction(_) => Code::InvalidArgument,
        MapError::UnknownMap(_) | MapError::UnknownSnapshot(_) | MapError::UnknownLog(_) => {
            Code::NotFound
        }
        MapError::MapExists(_) | MapError::LogExists(_) => Code::AlreadyExists,
        MapError::LogTrimmed { .. } | MapError::PastLogEnd { .. } => Code::OutOfRange,
        MapError::BadLogRequest(_) => Code::InvalidArgument,
        MapError::TooManySnapshots(_)
        | MapError::TooManyUserSnapshots(_)
        | MapError::TooManyUserReadVersions(_) => Code::ResourceExhausted,
        MapError::BadMapName(_)
        | MapError::KeyTooLarge { .. }
        | MapError::ValueTooLarge { .. }
        | MapError::BadRange(_)
        | MapError::TooManyEntries { .. }
        | MapError::BadLease { .. }
        | MapError::BadFields(_) => Code::InvalidArgument,
        MapError::NotARecord(_) => Code::FailedPrecondition,
    };
    Status::new(code, error.to_string())
}

/// What a replica answered, as the node returns it: the map reply
/// (`None` for a session request that succeeded) or a status.
pub fn client_reply_to_response(
    reply: ClientReply<MapReply>,
) -> Result<Option<pb::MapResponse>, Status> {
    use pb::map_response::Result as R;
    let result = match reply {
        // A join's id is read by `ChangeMembership` before this.
        ClientReply::SessionOk | ClientReply::Accepted | ClientReply::Joined(_) => return Ok(None),
        ClientReply::Done(MapReply::Failed(error)) => return Err(map_error_status(&error)),
        ClientReply::Done(reply) => match reply {
            MapReply::Value(value) => R::Value(pb::OptionalValue { value }),
            MapReply::Flag(flag) => R::Flag(flag),
            MapReply::Count(count) => R::Count(count),
            MapReply::Entry(entry) => R::Entry(pb::OptionalEntry {
                entry: entry.map(|(key, value)| pb::Entry { key, value }),
            }),
            MapReply::Entries { entries, more } => R::Entries(pb::Entries {
                entries: entries
                    .into_iter()
                    .map(|(key, value)| pb::Entry { key, value })
                    .collect(),
                more,
            }),
            MapReply::Snapshot(id) => R::Snapshot(id),
            MapReply::ReadVersion(version) => R::ReadVersion(version),
            MapReply::Done => R::Done(pb::Done {}),
            MapReply::Position(position) => R::Position(position),
            MapReply::Positions(positions) => R::Positions(pb::Positions {
                positions: positions
                    .into_iter()
                    .collect::<Option<Vec<u64>>>()
                    .ok_or_else(|| {
                        Status::internal("a multi-append's reply lacks a position")
                    })?,
            }),
            MapReply::LogEntries(read) => R::LogEntries(pb::LogEntries {
                from: read.from,
                entries: read.entries,
                first: read.first,
                end: read.end,
            }),
            MapReply::LogBounds { first, end } => R::LogBounds(pb::LogBoundsReply { first, end }),
            MapReply::Failed(_) => unreachable!("handled above"),
        },
        ClientReply::StaleMap(map) => {
            return Err(ErrorKind::StaleMap.status(
                Code::FailedPrecondition,
                format!(
                    "stale partition map; the current version is {}",
                    map.version.0
                ),
            ))
        }
        ClientReply::NotAReplica(map) => {
            return Err(ErrorKind::NotAReplica.status(
                Code::FailedPrecondition,
                format!(
                    "this node does not replicate that partition (map version {})",
                    map.version.0
                ),
            ))
        }
        ClientReply::UnknownKeyspace(name) => {
            return Err(Status::not_found(format!("no map or log named {name:?}")))
        }
        ClientReply::KeyspaceExists(name) => {
            return Err(Status::already_exists(format!(
                "a map or log named {name:?} already exists"
            )))
        }
        ClientReply::SessionExpired => {
            return Err(ErrorKind::SessionExpired.status(
                Code::FailedPrecondition,
                "the session is unknown (expired or closed); open a new one".into(),
            ))
        }
        ClientReply::StaleSequence => {
            return Err(ErrorKind::StaleSequence.status(
                Code::FailedPrecondition,
                "the session already executed a later sequence".into(),
            ))
        }
        ClientReply::Behind => {
            return Err(ErrorKind::Behind.status(
                Code::Unavailable,
                "this replica is behind (the client's partition map, or its streams while it catches up); resend".into(),
            ))
        }
        ClientReply::Refused(refusal) => return Err(refusal_status(&refusal)),
        ClientReply::Lost => {
            return Err(ErrorKind::ReplyLost.status(
                Code::Unknown,
                "the command took effect but part of its reply is no longer held".into(),
            ))
        }
    };
    Ok(Some(pb::MapResponse {
        result: Some(result),
    }))
}

/// A response read back into a map reply.
pub fn reply_from_response(response: pb::MapResponse) -> Result<MapReply, Status> {
    use pb::map_response::Result as R;
    Ok(
        match response
            .result
            .ok_or_else(|| Status::internal("the response carries no result"))?
        {
            R::Value(v) => MapReply::Value(v.value),
            R::Flag(flag) => MapReply::Flag(flag),
            R::Count(count) => MapReply::Count(count),
            R::Entry(e) => MapReply::Entry(e.entry.map(|e| (e.key, e.value))),
            R::Entries(e) => MapReply::Entries {
                entries: e.entries.into_iter().map(|e| (e.key, e.value)).collect(),
                more: e.more,
            },
            R::Snapshot(id) => MapReply::Snapshot(id),
            R::ReadVersion(version) => MapReply::ReadVersion(version),
            R::Done(_) => MapReply::Done,
            R::Position(position) => MapReply::Position(position),
            R::Positions(p) => MapReply::Positions(p.positions.into_iter().map(Some).collect()),
            R::LogEntries(e) => MapReply::LogEntries(amulet_dmap::LogRead {
                from: e.from,
                entries: e.entries,
                first: e.first,
                end: e.end,
            }),
            R::LogBounds(b) => MapReply::LogBounds {
                first: b.first,
                end: b.end,
            },
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use amulet_smr::{PartitionMap, Refusal};
    use amulet_types::StreamId;
    use bytes::Bytes;

    #[test]
    fn replies_survive_the_wire() {
        let k = Bytes::from_static(b"k");
        for reply in [
            MapReply::Value(None),
            MapReply::Value(Some(k.clone())),
            MapReply::Flag(true),
            MapReply::Count(3),
            MapReply::Entry(None),
            MapReply::Entry(Some((k.clone(), k.clone()))),
            MapReply::Position(7),
            MapReply::Positions(vec![Some(1), Some(9)]),
            MapReply::LogEntries(amulet_dmap::LogRead {
                from: 4,
                entries: vec![k.clone(), Bytes::new()],
                first: 2,
                end: 6,
            }),
            MapReply::LogBounds { first: 2, end: 6 },
            MapReply::Entries {
                entries: vec![(k.clone(), k.clone())],
                more: true,
            },
            MapReply::Snapshot(9),
            MapReply::ReadVersion(11),
            MapReply::Done,
        ] {
            let response = client_reply_to_response(ClientReply::Done(reply.clone()))
                .unwrap()
                .unwrap();
            assert_eq!(reply_from_response(response).unwrap(), reply);
        }
    }

    #[test]
    fn refusals_have_their_documented_codes_and_kinds() {
        let map = Box::new(PartitionMap::uniform(StreamId(0), vec![]));
        let cases = [
            (
                ClientReply::StaleMap(map.clone()),
                Code::FailedPrecondition,
                Some(ErrorKind::StaleMap),
            ),
            (
                ClientReply::NotAReplica(map),
                Code::FailedPrecondition,
                Some(ErrorKind::NotAReplica),
            ),
            (
                ClientReply::SessionExpired,
                Code::FailedPrecondition,
                Some(ErrorKind::SessionExpired),
            ),
            (
                ClientReply::StaleSequence,
                Code::FailedPrecondition,
                Some(ErrorKind::StaleSequence),
            ),
            (ClientReply::Lost, Code::Unknown, Some(ErrorKind::ReplyLost)),
            (
                ClientReply::Behind,
                Code::Unavailable,
                Some(ErrorKind::Behind),
            ),
            (
                ClientReply::Refused(Refusal::SessionIdMissing),
                Code::InvalidArgument,
                None,
            ),
            (
                ClientReply::Refused(Refusal::ReconfigurationPending),
                Code::Aborted,
                Some(ErrorKind::Retryable),
            ),
            (
                ClientReply::Refused(Refusal::NoDmap),
                Code::FailedPrecondition,
                None,
            ),
            (
                ClientReply::UnknownKeyspace("m".into()),
                Code::NotFound,
                None,
            ),
            (
                ClientReply::KeyspaceExists("m".into()),
                Code::AlreadyExists,
                None,
            ),
            (
                ClientReply::Done(MapReply::Failed(MapError::MapExists("m".into()))),
                Code::AlreadyExists,
                None,
            ),
            (
                ClientReply::Done(MapReply::Failed(MapError::UnknownSnapshot(1))),
                Code::NotFound,
                None,
            ),
            (
                ClientReply::Done(MapReply::Failed(MapError::TooManySnapshots(1))),
                Code::ResourceExhausted,
                None,
            ),
            (
                ClientReply::Done(MapReply::Failed(MapError::BadRange("r".into()))),
                Code::InvalidArgument,
                None,
            ),
        ];
        for (reply, code, kind) in cases {
            let status = client_reply_to_response(reply).unwrap_err();
            assert_eq!(status.code(), code, "{status:?}");
            assert_eq!(error_kind(&status), kind);
        }
    }

    #[test]
    fn a_response_without_a_result_is_an_error() {
        assert_eq!(
            reply_from_response(pb::MapResponse { result: None })
                .unwrap_err()
                .code(),
            tonic::Code::Internal
        );
    }

    #[test]
    fn transaction_errors_have_their_documented_codes_kinds_and_conflict_metadata() {
        let conflict = MapError::Conflict {
            map: "accounts".into(),
            key: Some(b"alice".to_vec()),
        };
        let status = map_error_status(&conflict);
        assert_eq!(status.code(), Code::Aborted);
        assert_eq!(error_kind(&status), Some(ErrorKind::Conflict));
        assert_eq!(
            status
                .metadata()
                .get(CONFLICT_MAP_KEY)
                .unwrap()
                .to_str()
                .unwrap(),
            "accounts"
        );
        assert_eq!(
            status
                .metadata()
                .get_bin(CONFLICT_KEY_KEY)
                .unwrap()
                .to_bytes()
                .unwrap()
                .as_ref(),
            b"alice"
        );
        for (error, code, kind) in [
            (
                MapError::ReadVersionTooOld(3),
                Code::Aborted,
                Some(ErrorKind::ReadVersionTooOld),
            ),
            (
                MapError::ReadVersionElsewhere(3),
                Code::Unavailable,
                Some(ErrorKind::ReadVersionElsewhere),
            ),
            (MapError::FutureReadVersion(3), Code::InvalidArgument, None),
            (
                MapError::TooManyReadVersions(3),
                Code::ResourceExhausted,
                None,
            ),
            (
                MapError::BadTransaction("x".into()),
                Code::InvalidArgument,
                None,
            ),
        ] {
            let status = map_error_status(&error);
            assert_eq!(
                (status.code(), error_kind(&status)),
                (code, kind),
                "{error}"
            );
        }
    }
}
