//! The sequential specification of one DMap map: what a single,
//! unpartitioned sorted map answers. Written independently of
//! `amulet-dmap` so a bug there cannot hide in its own model.

use crate::checker::linearizability::Model;
use amulet_dmap::{Entry, LogRead, MapCommand, MapError, MapLimits, MapName, MapReply, Nearest};
use bytes::Bytes;
use std::collections::BTreeMap;

/// An operation a simulated client performs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MapOp {
    /// A map command; its reply is checked.
    Command(MapCommand),
    /// A snapshot scan: every entry as of one instant.
    Scan,
    /// A command the cluster denied (docs/security.md): it must have taken
    /// no effect, so it is checked as doing nothing. Holds what was asked,
    /// for a human reading a failed seed.
    Denied(String),
}

/// What a client saw.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Observed {
    /// The command's reply.
    Reply(MapReply),
    /// A scan's entries, ascending.
    Entries(Vec<Entry>),
    /// PERMISSION_DENIED.
    Denied,
}

/// A sorted map of bytes, and the logs of `amulet-sim --logs` (thesis
/// §3.5.2: each a first position and the entries from it; created before
/// the run, so a log command on a name not here is a bug of the workload).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SortedMapModel(BTreeMap<Bytes, Bytes>, BTreeMap<MapName, LogModel>);

/// One log: entries at `first..first + entries.len()`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LogModel {
    first: u64,
    entries: Vec<Bytes>,
}

impl SortedMapModel {
    /// An empty map and the empty logs `logs`.
    pub fn with_logs(logs: &[MapName]) -> SortedMapModel {
        SortedMapModel(
            BTreeMap::new(),
            logs.iter()
                .map(|l| (l.clone(), LogModel::default()))
                .collect(),
        )
    }
}

impl Model for SortedMapModel {
    type Op = MapOp;
    type Result = Observed;

    fn step(&self, op: &MapOp) -> (SortedMapModel, Observed) {
        let mut next = self.clone();
        let result = match op {
            MapOp::Scan => Observed::Entries(entries(self.0.iter())),
            MapOp::Denied(_) => Observed::Denied,
            MapOp::Command(command) if command.is_log_command() => {
                Observed::Reply(apply_log(&mut next.1, command))
            }
            MapOp::Command(command) => Observed::Reply(apply(&mut next.0, command)),
        };
        (next, result)
    }

    fn key(&self) -> Vec<u8> {
        let mut key = Vec::new();
        for (k, v) in &self.0 {
            for part in [k, v] {
                key.extend_from_slice(&(part.len() as u32).to_le_bytes());
                key.extend_from_slice(part);
            }
        }
        for (name, log) in &self.1 {
            key.extend_from_slice(name.as_str().as_bytes());
            key.extend_from_slice(&log.first.to_le_bytes());
            key.extend_from_slice(&(log.entries.len() as u32).to_le_bytes());
            for entry in &log.entries {
                key.extend_from_slice(&(entry.len() as u32).to_le_bytes());
                key.extend_from_slice(entry);
            }
        }
        key
    }
}

fn entries<'a>(iter: impl Iterator<Item = (&'a Bytes, &'a Bytes)>) -> Vec<Entry> {
    iter.map(|(k, v)| (k.clone(), v.clone())).collect()
}

/// What a single log store answers (docs/logs.md), written from the
/// documentation, not from `amulet_dmap::Log`.
fn apply_log(logs: &mut BTreeMap<MapName, LogModel>, command: &MapCommand) -> MapReply {
    use MapCommand::*;
    if let Err(refused) = command.validate(&MapLimits::default()) {
        return MapReply::Failed(refused);
    }
    let end = |log: &LogModel| log.first + log.entries.len() as u64;
    match command {
        Append { log, value } => {
            let log = logs.get_mut(log).expect("the run's logs exist");
            log.entries.push(value.clone());
            MapReply::Position(end(log) - 1)
        }
        MultiAppend { appends } => MapReply::Positions(
            appends
                .iter()
                .map(|(name, value)| {
                    let log = logs.get_mut(name).expect("the run's logs exist");
                    log.entries.push(value.clone());
                    Some(end(log) - 1)
                })
                .collect(),
        ),
        ReadLog {
            log: name,
            from,
            max_entries,
        } => {
            let log = &logs[name];
            if *from < log.first {
                return MapReply::Failed(MapError::LogTrimmed {
                    log: name.to_string(),
                    first: log.first,
                });
            }
            if *from > end(log) {
                return MapReply::Failed(MapError::PastLogEnd {
                    log: name.to_string(),
                    position: *from,
                    end: end(log),
                });
            }
            let entries = log
                .entries
                .iter()
                .skip((*from - log.first) as usize)
                .take(*max_entries as usize)
                .cloned()
                .collect();
            MapReply::LogEntries(LogRead {
                from: *from,
                entries,
                first: log.first,
                end: end(log),
            })
        }
        TrimLog { log: name, below } => {
            let log = logs.get_mut(name).expect("the run's logs exist");
            if *below > end(log) {
                return MapReply::Failed(MapError::PastLogEnd {
                    log: name.to_string(),
                    position: *below,
                    end: end(log),
                });
            }
            if *below > log.first {
                log.entries.drain(..(*below - log.first) as usize);
                log.first = *below;
            }
            MapReply::LogBounds {
                first: log.first,
                end: end(log),
            }
        }
        LogBounds { log } => {
            let log = &logs[log];
            MapReply::LogBounds {
                first: log.first,
                end: end(log),
            }
        }
        other => panic!("{other:?} is not an operation on the modelled logs"),
    }
}

fn apply(map: &mut BTreeMap<Bytes, Bytes>, command: &MapCommand) -> MapReply {
    use MapCommand::*;
    match command {
        Get { key, .. } => MapReply::Value(map.get(key).cloned()),
        ContainsKey { key, .. } => MapReply::Flag(map.contains_key(key)),
        Put { key, value, .. } => MapReply::Value(map.insert(key.clone(), value.clone())),
        Remove { key, .. } => MapReply::Value(map.remove(key)),
        PutIfAbsent { key, value, .. } => match map.get(key) {
            Some(v) => MapReply::Value(Some(v.clone())),
            None => {
                map.insert(key.clone(), value.clone());
                MapReply::Value(None)
            }
        },
        Replace { key, value, .. } => {
            if map.contains_key(key) {
                MapReply::Value(map.insert(key.clone(), value.clone()))
            } else {
                MapReply::Value(None)
            }
        }
        ReplaceIfEquals {
            key,
            expected,
            value,
            ..
        } => {
            let ok = map.get(key) == Some(expected);
            if ok {
                map.insert(key.clone(), value.clone());
            }
            MapReply::Flag(ok)
        }
        RemoveIfEquals { key, expected, .. } => {
            let ok = map.get(key) == Some(expected);
            if ok {
                map.remove(key);
            }
            MapReply::Flag(ok)
        }
        PutAll { entries, .. } => {
            for (k, v) in entries {
                map.insert(k.clone(), v.clone());
            }
            MapReply::Done
        }
        ContainsValue { value, .. } => MapReply::Flag(map.values().any(|v| v == value)),
        Size { .. } => MapReply::Count(map.len() as u64),
        IsEmpty { .. } => MapReply::Flag(map.is_empty()),
        Clear { .. } => {
            map.clear();
            MapReply::Done
        }
        FirstEntry { .. } => MapReply::Entry(entries(map.iter().take(1)).pop()),
        LastEntry { .. } => MapReply::Entry(entries(map.iter().rev().take(1)).pop()),
        NearestEntry { key, nearest, .. } => {
            let found = match nearest {
                Nearest::Floor => map.iter().rev().find(|(k, _)| *k <= key),
                Nearest::Lower => map.iter().rev().find(|(k, _)| *k < key),
                Nearest::Ceiling => map.iter().find(|(k, _)| *k >= key),
                Nearest::Higher => map.iter().find(|(k, _)| *k > key),
            };
            MapReply::Entry(found.map(|(k, v)| (k.clone(), v.clone())))
        }
        Range { range, .. } => {
            let mut all = entries(map.iter().filter(|(k, _)| range.contains(k)));
            if range.reverse {
                all.reverse();
            }
            let more = all.len() > range.limit as usize;
            all.truncate(range.limit as usize);
            MapReply::Entries { entries: all, more }
        }
        MergeFields { key, fields, .. } => {
            // A name given twice is refused at the edge: nothing changes.
            if let Err(refused) = command.validate(&MapLimits::default()) {
                return MapReply::Failed(refused);
            }
            match map.get(key) {
                None => MapReply::Flag(false),
                Some(record) => match amulet_dmap::field_record::merge(record, fields) {
                    Ok(merged) => {
                        map.insert(key.clone(), Bytes::from(merged));
                        MapReply::Flag(true)
                    }
                    Err(error) => MapReply::Failed(error),
                },
            }
        }
        CreateMap { .. }
        | DropMap { .. }
        | OpenSnapshot { .. }
        | ReleaseSnapshot { .. }
        | BeginTransaction { .. }
        | EndTransaction { .. }
        | Commit { .. }
        | CreateLog { .. }
        | DropLog { .. }
        | Append { .. }
        | MultiAppend { .. }
        | ReadLog { .. }
        | TrimLog { .. }
        | RegisterEventualStore { .. }
        | LogBounds { .. } => {
            panic!("{command:?} is not an operation on the modelled map")
        }
    }
}
