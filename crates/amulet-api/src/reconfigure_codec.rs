//! Reconfiguration requests (`Reconfigure`): the wire form of
//! [`Reconfiguration`], decoded totally (a bad request becomes a status
//! saying what is wrong, never a panic).

use crate::pb;
use amulet_smr::{Reconfiguration, StreamSpec};
use amulet_types::{NodeId, PartitionId, StorageMode, StreamId};
use tonic::Status;

/// The change a request asks for, and the map version it was made from.
pub fn reconfiguration_from_pb(
    request: pb::ReconfigureRequest,
) -> Result<(u64, Reconfiguration), Status> {
    use pb::reconfigure_request::Change;
    let change = match request.change {
        None => return Err(Status::invalid_argument("reconfigure: no change given")),
        Some(Change::Split(split)) => Reconfiguration::Split {
            source: PartitionId(split.source),
            new: PartitionId(split.new_partition),
            stream: stream_from_pb(split.stream)?,
            at_token: split.at_token,
            at_keys: split
                .at_keys
                .into_iter()
                .map(|cut| (cut.map, cut.key))
                .collect(),
        },
        Some(Change::Merge(merge)) => Reconfiguration::Merge {
            source: PartitionId(merge.source),
            into: PartitionId(merge.into),
        },
        Some(Change::ReplaceStream(replace)) => Reconfiguration::ReplaceStream {
            partition: PartitionId(replace.partition),
            stream: stream_from_pb(replace.stream)?,
        },
        Some(Change::Move(moved)) => {
            if moved.replicas.is_empty() || moved.replicas.contains(&0) {
                return Err(Status::invalid_argument(
                    "reconfigure: a move names its new replicas (node ids from 1)",
                ));
            }
            Reconfiguration::Move {
                partition: PartitionId(moved.partition),
                replicas: moved.replicas.into_iter().map(NodeId).collect(),
                stream: stream_from_pb(moved.stream)?,
            }
        }
        Some(Change::ReplaceGlobalStream(replace)) => Reconfiguration::ReplaceGlobalStream {
            stream: stream_from_pb(replace.stream)?,
        },
    };
    Ok((request.map_version, change))
}

/// The request for `change`, computed from map version `map_version`.
pub fn reconfiguration_to_pb(map_version: u64, change: &Reconfiguration) -> pb::ReconfigureRequest {
    use pb::reconfigure_request::Change;
    let change = match change {
        Reconfiguration::Split {
            source,
            new,
            stream,
            at_token,
            at_keys,
        } => Change::Split(pb::SplitPartition {
            source: source.0,
            new_partition: new.0,
            stream: Some(stream_to_pb(stream)),
            at_token: *at_token,
            at_keys: at_keys
                .iter()
                .map(|(map, key)| pb::RangeCut {
                    map: map.clone(),
                    key: key.clone(),
                })
                .collect(),
        }),
        Reconfiguration::Merge { source, into } => Change::Merge(pb::MergePartitions {
            source: source.0,
            into: into.0,
        }),
        Reconfiguration::ReplaceStream { partition, stream } => {
            Change::ReplaceStream(pb::ReplaceStream {
                partition: partition.0,
                stream: Some(stream_to_pb(stream)),
            })
        }
        Reconfiguration::Move {
            partition,
            replicas,
            stream,
        } => Change::Move(pb::MovePartition {
            partition: partition.0,
            replicas: replicas.iter().map(|n| n.0).collect(),
            stream: Some(stream_to_pb(stream)),
        }),
        Reconfiguration::ReplaceGlobalStream { stream } => {
            Change::ReplaceGlobalStream(pb::ReplaceGlobalStream {
                stream: Some(stream_to_pb(stream)),
            })
        }
    };
    pb::ReconfigureRequest {
        map_version,
        change: Some(change),
    }
}

/// `"memory"`, `"async"` or `"sync"`.
pub fn storage_from_name(name: &str) -> Option<StorageMode> {
    match name {
        "memory" => Some(StorageMode::Memory),
        "async" => Some(StorageMode::AsyncDurable),
        "sync" => Some(StorageMode::SyncDurable),
        _ => None,
    }
}

fn storage_name(mode: StorageMode) -> &'static str {
    match mode {
        StorageMode::Memory => "memory",
        StorageMode::AsyncDurable => "async",
        StorageMode::SyncDurable => "sync",
    }
}

fn stream_from_pb(stream: Option<pb::StreamSpec>) -> Result<StreamSpec, Status> {
    let stream = stream.ok_or_else(|| Status::invalid_argument("reconfigure: no stream given"))?;
    if stream.stream == 0 {
        return Err(Status::invalid_argument("stream id 0 is reserved"));
    }
    let storage = storage_from_name(&stream.storage).ok_or_else(|| {
        Status::invalid_argument(format!(
            "stream storage {:?}: expected memory, async or sync",
            stream.storage
        ))
    })?;
    if stream
        .acceptors
        .iter()
        .chain(&stream.learners)
        .any(|n| *n == 0)
    {
        return Err(Status::invalid_argument("node id 0 is reserved"));
    }
    Ok(StreamSpec {
        stream: StreamId(stream.stream),
        acceptors: stream.acceptors.into_iter().map(NodeId).collect(),
        learners: stream.learners.into_iter().map(NodeId).collect(),
        storage,
        base_position: 0,
    })
}

fn stream_to_pb(stream: &StreamSpec) -> pb::StreamSpec {
    pb::StreamSpec {
        stream: stream.stream.0,
        acceptors: stream.acceptors.iter().map(|n| n.0).collect(),
        learners: stream.learners.iter().map(|n| n.0).collect(),
        storage: storage_name(stream.storage).to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;

    fn spec() -> StreamSpec {
        StreamSpec {
            stream: StreamId(9),
            acceptors: vec![NodeId(1), NodeId(2), NodeId(3)],
            learners: vec![],
            storage: StorageMode::SyncDurable,
            base_position: 0,
        }
    }

    #[test]
    fn every_change_round_trips() {
        let changes = [
            Reconfiguration::Split {
                source: PartitionId(1),
                new: PartitionId(4),
                stream: spec(),
                at_token: Some(77),
                at_keys: vec![("m".into(), Bytes::from_static(b"k"))],
            },
            Reconfiguration::Merge {
                source: PartitionId(4),
                into: PartitionId(1),
            },
            Reconfiguration::ReplaceStream {
                partition: PartitionId(2),
                stream: spec(),
            },
            Reconfiguration::Move {
                partition: PartitionId(2),
                replicas: vec![NodeId(2), NodeId(3), NodeId(4)],
                stream: spec(),
            },
            Reconfiguration::ReplaceGlobalStream { stream: spec() },
        ];
        for change in changes {
            let wire = reconfiguration_to_pb(5, &change);
            assert_eq!(reconfiguration_from_pb(wire).unwrap(), (5, change));
        }
    }

    #[test]
    fn bad_requests_are_refused_with_a_reason() {
        let none = pb::ReconfigureRequest {
            map_version: 1,
            change: None,
        };
        assert_eq!(
            reconfiguration_from_pb(none).unwrap_err().code(),
            tonic::Code::InvalidArgument
        );
        let mut bad = reconfiguration_to_pb(
            1,
            &Reconfiguration::ReplaceStream {
                partition: PartitionId(1),
                stream: spec(),
            },
        );
        if let Some(pb::reconfigure_request::Change::ReplaceStream(r)) = bad.change.as_mut() {
            r.stream.as_mut().unwrap().storage = "disk".into();
        }
        let status = reconfiguration_from_pb(bad).unwrap_err();
        assert!(status.message().contains("memory, async or sync"));
        let nowhere = pb::ReconfigureRequest {
            map_version: 1,
            change: Some(pb::reconfigure_request::Change::Move(pb::MovePartition {
                partition: 1,
                replicas: vec![],
                stream: None,
            })),
        };
        let status = reconfiguration_from_pb(nowhere).unwrap_err();
        assert!(status.message().contains("new replicas"));
    }
}
