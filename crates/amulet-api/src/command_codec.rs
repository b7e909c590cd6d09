//! Map commands on the wire: `MapRequest.op` to [`MapCommand`] (checked
//! at the node's edge) and back (in clients).

use crate::pb::{self, map_request::Op};
use crate::reply_codec::map_error_status;
use amulet_dmap::{
    KeyBound, KeyRange, MapCommand, MapName, Nearest, RangeQuery, ReadConflict, TxnWrite,
};
use amulet_smr::EventualLayout;
use amulet_smr::Layout;
use amulet_types::PartitionId;
use bytes::Bytes;
use tonic::Status;

fn name(map: String) -> Result<MapName, Status> {
    MapName::new(map).map_err(|e| map_error_status(&e))
}

fn bound(b: Option<pb::KeyBound>) -> Option<KeyBound> {
    b.map(|b| KeyBound {
        key: b.key,
        inclusive: b.inclusive,
    })
}

fn bound_to_pb(b: &Option<KeyBound>) -> Option<pb::KeyBound> {
    b.as_ref().map(|b| pb::KeyBound {
        key: b.key.clone(),
        inclusive: b.inclusive,
    })
}

/// A layout from the wire; absent means hash.
pub fn layout_from_pb(layout: Option<pb::Layout>) -> Result<Layout, Status> {
    match layout.and_then(|l| l.kind) {
        None | Some(pb::layout::Kind::Hash(_)) => Ok(Layout::Hash),
        Some(pb::layout::Kind::Range(r)) => {
            if r.splits.is_empty() {
                return Err(Status::invalid_argument(
                    "a range layout needs at least one split (the empty key)",
                ));
            }
            Ok(Layout::Range(
                r.splits
                    .into_iter()
                    .map(|s| (s.start_key, PartitionId(s.partition)))
                    .collect(),
            ))
        }
        // The ring is the cluster's to make: a request's is ignored.
        Some(pb::layout::Kind::Eventual(e)) => Ok(Layout::Eventual(EventualLayout {
            replicas: e.replicas,
            vnodes: e.vnodes,
            placement: None,
            merkle: e.merkle,
        })),
    }
}

/// A layout for the wire.
pub fn layout_to_pb(layout: &Layout) -> pb::Layout {
    pb::Layout {
        kind: Some(match layout {
            Layout::Hash => pb::layout::Kind::Hash(pb::HashLayout {}),
            Layout::Range(splits) => pb::layout::Kind::Range(pb::RangeLayout {
                splits: splits
                    .iter()
                    .map(|(key, p)| pb::RangeSplit {
                        start_key: key.clone(),
                        partition: p.0,
                    })
                    .collect(),
            }),
            Layout::Eventual(e) => pb::layout::Kind::Eventual(pb::EventualLayout {
                replicas: e.replicas,
                vnodes: e.vnodes,
                ring: e
                    .placement
                    .iter()
                    .flat_map(|p| {
                        p.ring.members().iter().map(|id| pb::EventualVnode {
                            replica: id.0,
                            node: p.nodes[id],
                        })
                    })
                    .collect(),
                merkle: e.merkle,
            }),
        }),
    }
}

/// The command a request names. Sizes and ranges are checked later, by
/// the replica, against its limits.
pub fn command_from_op(op: Option<Op>) -> Result<MapCommand, Status> {
    let Some(op) = op else {
        return Err(Status::invalid_argument("the request names no operation"));
    };
    Ok(match op {
        Op::CreateMap(c) => MapCommand::CreateMap {
            map: name(c.map)?,
            layout: layout_from_pb(c.layout)?,
        },
        Op::DropMap(c) => MapCommand::DropMap { map: name(c.map)? },
        Op::Get(c) => MapCommand::Get {
            map: name(c.map)?,
            key: c.key,
        },
        Op::ContainsKey(c) => MapCommand::ContainsKey {
            map: name(c.map)?,
            key: c.key,
        },
        Op::Put(c) => MapCommand::Put {
            map: name(c.map)?,
            key: c.key,
            value: c.value,
        },
        Op::Remove(c) => MapCommand::Remove {
            map: name(c.map)?,
            key: c.key,
        },
        Op::PutIfAbsent(c) => MapCommand::PutIfAbsent {
            map: name(c.map)?,
            key: c.key,
            value: c.value,
        },
        Op::Replace(c) => MapCommand::Replace {
            map: name(c.map)?,
            key: c.key,
            value: c.value,
        },
        Op::ReplaceIfEquals(c) => MapCommand::ReplaceIfEquals {
            map: name(c.map)?,
            key: c.key,
            expected: c.expected,
            value: c.value,
        },
        Op::RemoveIfEquals(c) => MapCommand::RemoveIfEquals {
            map: name(c.map)?,
            key: c.key,
            expected: c.expected,
        },
        Op::PutAll(c) => MapCommand::PutAll {
            map: name(c.map)?,
            entries: c.entries.into_iter().map(|e| (e.key, e.value)).collect(),
        },
        Op::CreateLog(c) => MapCommand::CreateLog { log: name(c.log)? },
        Op::DropLog(c) => MapCommand::DropLog { log: name(c.log)? },
        Op::Append(c) => MapCommand::Append {
            log: name(c.log)?,
            value: c.value,
        },
        Op::MultiAppend(c) => MapCommand::MultiAppend {
            appends: c
                .entries
                .into_iter()
                .map(|e| Ok((name(e.log)?, e.value)))
                .collect::<Result<_, Status>>()?,
        },
        Op::ReadLog(c) => MapCommand::ReadLog {
            log: name(c.log)?,
            from: c.from,
            max_entries: c.max_entries,
        },
        Op::TrimLog(c) => MapCommand::TrimLog {
            log: name(c.log)?,
            below: c.below,
        },
        Op::LogBounds(c) => MapCommand::LogBounds { log: name(c.log)? },
        Op::MergeFields(c) => MapCommand::MergeFields {
            map: name(c.map)?,
            key: c.key,
            fields: c.fields.into_iter().map(|f| (f.name, f.value)).collect(),
        },
        Op::ContainsValue(c) => MapCommand::ContainsValue {
            map: name(c.map)?,
            value: c.value,
        },
        Op::Size(c) => MapCommand::Size { map: name(c.map)? },
        Op::IsEmpty(c) => MapCommand::IsEmpty { map: name(c.map)? },
        Op::Clear(c) => MapCommand::Clear { map: name(c.map)? },
        Op::FirstEntry(c) => MapCommand::FirstEntry { map: name(c.map)? },
        Op::LastEntry(c) => MapCommand::LastEntry { map: name(c.map)? },
        Op::NearestEntry(c) => MapCommand::NearestEntry {
            nearest: match pb::Nearest::try_from(c.nearest) {
                Ok(pb::Nearest::Floor) => Nearest::Floor,
                Ok(pb::Nearest::Ceiling) => Nearest::Ceiling,
                Ok(pb::Nearest::Higher) => Nearest::Higher,
                Ok(pb::Nearest::Lower) => Nearest::Lower,
                Ok(pb::Nearest::Unspecified) | Err(_) => {
                    return Err(Status::invalid_argument(format!(
                        "nearest must be FLOOR, CEILING, HIGHER or LOWER, not {}",
                        c.nearest
                    )))
                }
            },
            map: name(c.map)?,
            key: c.key,
        },
        Op::Range(c) => MapCommand::Range {
            map: name(c.map)?,
            range: RangeQuery {
                from: bound(c.from),
                to: bound(c.to),
                limit: c.limit,
                reverse: c.reverse,
            },
        },
        Op::OpenSnapshot(c) => MapCommand::OpenSnapshot {
            map: name(c.map)?,
            lease_micros: c.lease_micros,
        },
        Op::ReleaseSnapshot(c) => MapCommand::ReleaseSnapshot {
            snapshot: c.snapshot,
        },
        Op::BeginTransaction(c) => MapCommand::BeginTransaction {
            lease_micros: c.lease_micros,
            end: c.end_read_versions,
        },
        Op::EndTransaction(c) => MapCommand::EndTransaction {
            read_version: c.read_version,
        },
        Op::Commit(c) => MapCommand::Commit {
            read_version: c.read_version,
            reads: c
                .reads
                .into_iter()
                .map(|r| {
                    let range = r.range.ok_or_else(|| {
                        Status::invalid_argument("a read conflict names no range")
                    })?;
                    Ok(ReadConflict {
                        map: name(r.map)?,
                        range: KeyRange {
                            from: bound(range.from),
                            to: bound(range.to),
                        },
                    })
                })
                .collect::<Result<_, Status>>()?,
            writes: c
                .writes
                .into_iter()
                .map(|w| {
                    Ok(TxnWrite {
                        map: name(w.map)?,
                        key: w.key,
                        value: w.value,
                    })
                })
                .collect::<Result<_, Status>>()?,
        },
    })
}

/// The wire form of a command; `None` for a command only nodes send
/// each other (`RegisterEventualStore`), which has none.
pub fn command_to_op(command: &MapCommand) -> Option<Op> {
    let m = |map: &MapName| map.as_str().to_string();
    let b = |bytes: &Bytes| bytes.clone();
    Some(match command {
        MapCommand::RegisterEventualStore { .. } => return None,
        MapCommand::CreateMap { map, layout } => Op::CreateMap(pb::CreateMap {
            map: m(map),
            layout: Some(layout_to_pb(layout)),
        }),
        MapCommand::DropMap { map } => Op::DropMap(pb::DropMap { map: m(map) }),
        MapCommand::Get { map, key } => Op::Get(pb::Get {
            map: m(map),
            key: b(key),
        }),
        MapCommand::ContainsKey { map, key } => Op::ContainsKey(pb::ContainsKey {
            map: m(map),
            key: b(key),
        }),
        MapCommand::Put { map, key, value } => Op::Put(pb::Put {
            map: m(map),
            key: b(key),
            value: b(value),
        }),
        MapCommand::Remove { map, key } => Op::Remove(pb::Remove {
            map: m(map),
            key: b(key),
        }),
        MapCommand::PutIfAbsent { map, key, value } => Op::PutIfAbsent(pb::PutIfAbsent {
            map: m(map),
            key: b(key),
            value: b(value),
        }),
        MapCommand::Replace { map, key, value } => Op::Replace(pb::Replace {
            map: m(map),
            key: b(key),
            value: b(value),
        }),
        MapCommand::ReplaceIfEquals {
            map,
            key,
            expected,
            value,
        } => Op::ReplaceIfEquals(pb::ReplaceIfEquals {
            map: m(map),
            key: b(key),
            expected: b(expected),
            value: b(value),
        }),
        MapCommand::RemoveIfEquals { map, key, expected } => {
            Op::RemoveIfEquals(pb::RemoveIfEquals {
                map: m(map),
                key: b(key),
                expected: b(expected),
            })
        }
        MapCommand::MergeFields { map, key, fields } => Op::MergeFields(pb::MergeFields {
            map: m(map),
            key: b(key),
            fields: fields
                .iter()
                .map(|(name, value)| pb::Field {
                    name: name.clone(),
                    value: value.clone(),
                })
                .collect(),
        }),
        MapCommand::PutAll { map, entries } => Op::PutAll(pb::PutAll {
            map: m(map),
            entries: entries
                .iter()
                .map(|(key, value)| pb::Entry {
                    key: b(key),
                    value: b(value),
                })
                .collect(),
        }),
        MapCommand::ContainsValue { map, value } => Op::ContainsValue(pb::ContainsValue {
            map: m(map),
            value: b(value),
        }),
        MapCommand::Size { map } => Op::Size(pb::Size { map: m(map) }),
        MapCommand::IsEmpty { map } => Op::IsEmpty(pb::IsEmpty { map: m(map) }),
        MapCommand::Clear { map } => Op::Clear(pb::Clear { map: m(map) }),
        MapCommand::FirstEntry { map } => Op::FirstEntry(pb::FirstEntry { map: m(map) }),
        MapCommand::LastEntry { map } => Op::LastEntry(pb::LastEntry { map: m(map) }),
        MapCommand::NearestEntry { map, key, nearest } => Op::NearestEntry(pb::NearestEntry {
            map: m(map),
            key: b(key),
            nearest: match nearest {
                Nearest::Floor => pb::Nearest::Floor,
                Nearest::Ceiling => pb::Nearest::Ceiling,
                Nearest::Higher => pb::Nearest::Higher,
                Nearest::Lower => pb::Nearest::Lower,
            } as i32,
        }),
        MapCommand::Range { map, range } => Op::Range(pb::Range {
            map: m(map),
            from: bound_to_pb(&range.from),
            to: bound_to_pb(&range.to),
            limit: range.limit,
            reverse: range.reverse,
        }),
        MapCommand::OpenSnapshot { map, lease_micros } => Op::OpenSnapshot(pb::OpenSnapshot {
            map: m(map),
            lease_micros: *lease_micros,
        }),
        MapCommand::BeginTransaction { lease_micros, end } => {
            Op::BeginTransaction(pb::BeginTransaction {
                lease_micros: *lease_micros,
                end_read_versions: end.clone(),
            })
        }
        MapCommand::EndTransaction { read_version } => Op::EndTransaction(pb::EndTransaction {
            read_version: *read_version,
        }),
        MapCommand::Commit {
            read_version,
            reads,
            writes,
        } => Op::Commit(pb::Commit {
            read_version: *read_version,
            reads: reads
                .iter()
                .map(|r| pb::ReadConflict {
                    map: m(&r.map),
                    range: Some(pb::KeyRange {
                        from: bound_to_pb(&r.range.from),
                        to: bound_to_pb(&r.range.to),
                    }),
                })
                .collect(),
            writes: writes
                .iter()
                .map(|w| pb::TxnWrite {
                    map: m(&w.map),
                    key: b(&w.key),
                    value: w.value.clone(),
                })
                .collect(),
        }),
        MapCommand::ReleaseSnapshot { snapshot } => Op::ReleaseSnapshot(pb::ReleaseSnapshot {
            snapshot: *snapshot,
        }),
        MapCommand::CreateLog { log } => Op::CreateLog(pb::CreateLog { log: m(log) }),
        MapCommand::DropLog { log } => Op::DropLog(pb::DropLog { log: m(log) }),
        MapCommand::Append { log, value } => Op::Append(pb::Append {
            log: m(log),
            value: b(value),
        }),
        MapCommand::MultiAppend { appends } => Op::MultiAppend(pb::MultiAppend {
            entries: appends
                .iter()
                .map(|(log, value)| pb::LogEntry {
                    log: m(log),
                    value: b(value),
                })
                .collect(),
        }),
        MapCommand::ReadLog {
            log,
            from,
            max_entries,
        } => Op::ReadLog(pb::ReadLog {
            log: m(log),
            from: *from,
            max_entries: *max_entries,
        }),
        MapCommand::TrimLog { log, below } => Op::TrimLog(pb::TrimLog {
            log: m(log),
            below: *below,
        }),
        MapCommand::LogBounds { log } => Op::LogBounds(pb::LogBounds { log: m(log) }),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn every_command() -> Vec<MapCommand> {
        let map = MapName::new("m").unwrap();
        let k = Bytes::from_static(b"k");
        let v = Bytes::from_static(b"v");
        let mut all = vec![
            MapCommand::CreateMap {
                map: map.clone(),
                layout: Layout::Range(vec![(Bytes::new(), PartitionId(1))]),
            },
            MapCommand::CreateMap {
                map: map.clone(),
                layout: Layout::Hash,
            },
            MapCommand::DropMap { map: map.clone() },
            MapCommand::Get {
                map: map.clone(),
                key: k.clone(),
            },
            MapCommand::ContainsKey {
                map: map.clone(),
                key: k.clone(),
            },
            MapCommand::Put {
                map: map.clone(),
                key: k.clone(),
                value: v.clone(),
            },
            MapCommand::Remove {
                map: map.clone(),
                key: k.clone(),
            },
            MapCommand::PutIfAbsent {
                map: map.clone(),
                key: k.clone(),
                value: v.clone(),
            },
            MapCommand::Replace {
                map: map.clone(),
                key: k.clone(),
                value: v.clone(),
            },
            MapCommand::ReplaceIfEquals {
                map: map.clone(),
                key: k.clone(),
                expected: v.clone(),
                value: k.clone(),
            },
            MapCommand::RemoveIfEquals {
                map: map.clone(),
                key: k.clone(),
                expected: v.clone(),
            },
            MapCommand::PutAll {
                map: map.clone(),
                entries: vec![(k.clone(), v.clone()), (v.clone(), k.clone())],
            },
            MapCommand::MergeFields {
                map: map.clone(),
                key: k.clone(),
                fields: vec![(k.clone(), Some(v.clone())), (v.clone(), None)],
            },
            MapCommand::ContainsValue {
                map: map.clone(),
                value: v.clone(),
            },
            MapCommand::Size { map: map.clone() },
            MapCommand::IsEmpty { map: map.clone() },
            MapCommand::Clear { map: map.clone() },
            MapCommand::FirstEntry { map: map.clone() },
            MapCommand::LastEntry { map: map.clone() },
            MapCommand::Range {
                map: map.clone(),
                range: RangeQuery {
                    from: Some(KeyBound {
                        key: k.clone(),
                        inclusive: false,
                    }),
                    to: None,
                    limit: 7,
                    reverse: true,
                },
            },
            MapCommand::OpenSnapshot {
                map: map.clone(),
                lease_micros: 5,
            },
            MapCommand::ReleaseSnapshot { snapshot: 11 },
            MapCommand::CreateLog { log: map.clone() },
            MapCommand::DropLog { log: map.clone() },
            MapCommand::Append {
                log: map.clone(),
                value: v.clone(),
            },
            MapCommand::MultiAppend {
                appends: vec![(map.clone(), v.clone()), (map.clone(), k.clone())],
            },
            MapCommand::ReadLog {
                log: map.clone(),
                from: 3,
                max_entries: 9,
            },
            MapCommand::TrimLog {
                log: map.clone(),
                below: 2,
            },
            MapCommand::LogBounds { log: map.clone() },
        ];
        for nearest in [
            Nearest::Floor,
            Nearest::Ceiling,
            Nearest::Higher,
            Nearest::Lower,
        ] {
            all.push(MapCommand::NearestEntry {
                map: map.clone(),
                key: k.clone(),
                nearest,
            });
        }
        all
    }

    #[test]
    fn every_command_survives_the_wire() {
        for command in every_command() {
            assert_eq!(command_from_op(command_to_op(&command)).unwrap(), command);
        }
    }

    #[test]
    fn a_request_without_an_operation_is_refused() {
        assert_eq!(
            command_from_op(None).unwrap_err().code(),
            tonic::Code::InvalidArgument
        );
    }

    #[test]
    fn a_bad_map_name_or_nearest_is_refused() {
        let bad_name = Op::Get(pb::Get {
            map: "no spaces".into(),
            key: Bytes::new(),
        });
        assert_eq!(
            command_from_op(Some(bad_name)).unwrap_err().code(),
            tonic::Code::InvalidArgument
        );
        for nearest in [0, 5, -1] {
            let op = Op::NearestEntry(pb::NearestEntry {
                map: "m".into(),
                key: Bytes::new(),
                nearest,
            });
            assert_eq!(
                command_from_op(Some(op)).unwrap_err().code(),
                tonic::Code::InvalidArgument
            );
        }
        let empty_layout = Op::CreateMap(pb::CreateMap {
            map: "m".into(),
            layout: Some(pb::Layout {
                kind: Some(pb::layout::Kind::Range(pb::RangeLayout { splits: vec![] })),
            }),
        });
        assert_eq!(
            command_from_op(Some(empty_layout)).unwrap_err().code(),
            tonic::Code::InvalidArgument
        );
    }
}
