//! The sequential specification of one DMap map: what a single,
//! unpartitioned sorted map answers. Written independently of
//! `amulet-dmap` so a bug there cannot hide in its own model.

use crate::checker::linearizability::Model;
use amulet_dmap::{Entry, MapCommand, MapLimits, MapReply, Nearest};
use bytes::Bytes;
use std::collections::BTreeMap;

/// An operation a simulated client performs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MapOp {
    /// A map command; its reply is checked.
    Command(MapCommand),
    /// A snapshot scan: every entry as of one instant.
    Scan,
}

/// What a client saw.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Observed {
    /// The command's reply.
    Reply(MapReply),
    /// A scan's entries, ascending.
    Entries(Vec<Entry>),
}

/// A sorted map of bytes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SortedMapModel(BTreeMap<Bytes, Bytes>);

impl Model for SortedMapModel {
    type Op = MapOp;
    type Result = Observed;

    fn step(&self, op: &MapOp) -> (SortedMapModel, Observed) {
        let mut next = self.clone();
        let result = match op {
            MapOp::Scan => Observed::Entries(entries(self.0.iter())),
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
        key
    }
}

fn entries<'a>(iter: impl Iterator<Item = (&'a Bytes, &'a Bytes)>) -> Vec<Entry> {
    iter.map(|(k, v)| (k.clone(), v.clone())).collect()
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
        | Commit { .. } => {
            panic!("{command:?} is not an operation on the modelled map")
        }
    }
}
