//! One partition's maps and open snapshots, and the deterministic
//! execution of commands on them.

use crate::entries::Stored;
use crate::field_record;
use crate::log::Log;
use crate::transaction::{owned_writes, ReadVersion, Transactions};
use crate::{Entry, MapCommand, MapError, MapLimits, MapName, MapReply, Nearest, RangeQuery};
use bytes::Bytes;
use std::collections::BTreeMap;
use std::ops::Bound;

pub use crate::entries::Entries;

mod checkpoint;
mod log_commands;

pub use checkpoint::{Holders, PartitionCheckpoint};

/// Identifies an open snapshot. The replication layer derives it from the
/// command's place in the global order, so every partition gives the same
/// snapshot the same id.
pub type SnapshotId = u64;

/// What execution may depend on besides the command, all of it decided by
/// the order (so every replica computes the same result).
pub struct ExecContext<'a> {
    /// Replicated time, µs: advanced by timestamps carried in ordered
    /// commands, never by a local clock. Leases end by it.
    pub now_micros: u64,
    /// The id an `OpenSnapshot` executed now gets.
    pub snapshot_id: SnapshotId,
    /// Global-stream commands executed so far, this one included: writes
    /// are stamped with it, a `BeginTransaction` executed now is this read
    /// version.
    pub global_position: u64,
    /// Whether this partition owns `key` (a `putAll` applies only the
    /// entries of the partition that executes it).
    pub owns_key: &'a dyn Fn(&[u8]) -> bool,
    /// Whether this partition owns `key` of the named map (a commit
    /// applies only its own writes).
    pub owns: &'a dyn Fn(&str, &[u8]) -> bool,
    /// The user the command was judged for (`None`: nobody was checked):
    /// a snapshot or read version it opens counts against this user's
    /// share (`snapshots_per_user_max`, `read_versions_per_user_max`).
    pub user: Option<&'a str>,
}

/// One page of a snapshot.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SnapshotPage {
    /// Entries after the cursor, ascending.
    pub entries: Vec<Entry>,
    /// Whether entries remain after the last one.
    pub more: bool,
    /// The map the snapshot is of.
    pub map: MapName,
}

#[derive(Clone, Debug)]
struct Snapshot {
    /// `None` in a replica restored from a checkpoint: checkpoints keep an
    /// open snapshot's lease (so snapshot limits and releases execute the
    /// same everywhere) but not a second copy of its entries. Its pages
    /// are served by the replicas that still hold them.
    entries: Option<Entries>,
    /// The map it is of, where `entries` are held: page reads need read
    /// permission on it (docs/security.md).
    map: Option<MapName>,
    lease_until_micros: u64,
    /// The user who opened it, whose share it counts against (`None`:
    /// nobody was checked).
    holder: Option<String>,
}

/// The maps of one partition and its open snapshots.
#[derive(Clone, Debug, Default)]
pub struct PartitionState {
    limits: MapLimits,
    maps: BTreeMap<MapName, Entries>,
    /// Logs (DLog): entries of the logs this partition owns, empty
    /// placeholders for the rest, so every partition can tell whether a
    /// log exists at a point of the order (a multi-append is refused
    /// everywhere or nowhere).
    logs: BTreeMap<MapName, Log>,
    snapshots: BTreeMap<SnapshotId, Snapshot>,
    txns: Transactions,
    bugs: TxnBugs,
    /// Log commands executed by this copy of the state that changed a log
    /// (appends, trims, creates, drops). Not replicated and not in
    /// checkpoints: it only tells tailers in this process to look again.
    log_changes: u64,
}

/// Deliberately broken variants of transactions and field merges, for
/// the simulator to show that its checkers catch them (never set in
/// production). They are configuration: a restored state keeps them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TxnBugs {
    /// A partition that holds none of a commit's writes votes yes without
    /// checking its read ranges.
    pub skip_validation_without_writes: bool,
    /// Checkpoints leave out the index of recent writes.
    pub recent_writes_not_checkpointed: bool,
    /// Read conflict ranges wider than one key are not checked.
    pub ranges_not_validated: bool,
    /// `MergeFields` stores only the fields it names, dropping the
    /// record's others.
    pub merge_replaces_record: bool,
    /// A trim answers as if it dropped the entries but keeps them, and
    /// the log's first position with them.
    pub trim_keeps_entries: bool,
    /// Checkpoints keep a log's entries but restart its positions at 0
    /// (a restored replica reuses positions).
    pub log_positions_not_checkpointed: bool,
}

impl PartitionState {
    /// An empty partition.
    pub fn new(limits: MapLimits) -> PartitionState {
        PartitionState {
            limits,
            maps: BTreeMap::new(),
            logs: BTreeMap::new(),
            snapshots: BTreeMap::new(),
            txns: Transactions::default(),
            bugs: TxnBugs::default(),
            log_changes: 0,
        }
    }

    /// Turns on deliberately broken variants (the simulator only).
    pub fn set_bugs(&mut self, bugs: TxnBugs) {
        self.bugs = bugs;
    }

    /// The limits commands are checked against.
    pub fn limits(&self) -> &MapLimits {
        &self.limits
    }

    /// This partition's entries of `map`.
    pub fn entries(&self, map: &MapName) -> Option<&Entries> {
        self.maps.get(map)
    }

    /// The maps this partition knows.
    pub fn map_names(&self) -> impl Iterator<Item = &MapName> {
        self.maps.keys()
    }

    /// This partition's copy of `log` (empty where it does not own it).
    pub fn log(&self, log: &MapName) -> Option<&Log> {
        self.logs.get(log)
    }

    /// Re-points entries of `log` from `from` at `entries` where they are
    /// still `was` ([`Log::adopt`]: a node moved them into a segment
    /// file). Replicated state is unchanged. Returns how many moved.
    pub fn adopt_log_entries(
        &mut self,
        log: &MapName,
        from: u64,
        entries: &[Bytes],
        was: &[Bytes],
    ) -> usize {
        self.logs
            .get_mut(log)
            .map_or(0, |held| held.adopt(from, entries, was))
    }

    /// The logs this partition knows.
    pub fn log_names(&self) -> impl Iterator<Item = &MapName> {
        self.logs.keys()
    }

    /// Log commands this copy of the state executed that changed a log
    /// (a local count, not replicated: tailers look again when it moves).
    pub fn log_changes(&self) -> u64 {
        self.log_changes
    }

    /// Entries held in this partition's logs, and their bytes.
    pub fn log_totals(&self) -> (u64, u64) {
        self.logs.values().fold((0, 0), |(n, b), log| {
            (n + log.len() as u64, b + log.bytes())
        })
    }

    /// Entries and bytes of keys and values in every map.
    pub fn entry_totals(&self) -> (u64, u64) {
        self.maps.values().fold((0, 0), |(n, b), entries| {
            (n + entries.len() as u64, b + entries.payload_bytes())
        })
    }

    /// Open snapshots.
    pub fn snapshot_count(&self) -> usize {
        self.snapshots.len()
    }

    /// Open read versions.
    pub fn read_version_count(&self) -> usize {
        self.txns.open_count()
    }

    /// Keys in the index of writes since the oldest open read version.
    pub fn recent_write_count(&self) -> usize {
        self.txns.recent_count()
    }

    /// Asserts the transactions' invariants (the simulator calls it after
    /// every step).
    pub fn check_invariants(&self) {
        self.txns.check_invariants();
        for (name, log) in &self.logs {
            log.check_invariants();
            assert!(
                !self.maps.contains_key(name),
                "{name} is both a map and a log"
            );
        }
    }

    /// Executes `command` and returns this partition's reply. Deterministic:
    /// the same state, command and context give the same reply and state.
    /// A failed command changes nothing (every check precedes every write).
    pub fn execute(&mut self, command: &MapCommand, ctx: &ExecContext<'_>) -> MapReply {
        self.expire_snapshots(ctx.now_micros);
        self.txns.expire(ctx.now_micros);
        if let Err(error) = command.validate(&self.limits) {
            return MapReply::Failed(error);
        }
        match self.execute_valid(command, ctx) {
            Ok(reply) => reply,
            Err(error) => MapReply::Failed(error),
        }
    }

    fn execute_valid(
        &mut self,
        command: &MapCommand,
        ctx: &ExecContext<'_>,
    ) -> Result<MapReply, MapError> {
        use MapCommand::*;
        match command {
            CreateMap { map, .. } => {
                if self.maps.contains_key(map) || self.logs.contains_key(map) {
                    return Err(MapError::MapExists(map.to_string()));
                }
                self.maps.insert(map.clone(), Entries::new());
                self.txns.map_changed(map, ctx.global_position);
                Ok(MapReply::Done)
            }
            DropMap { map } => {
                self.maps
                    .remove(map)
                    .ok_or_else(|| MapError::UnknownMap(map.to_string()))?;
                self.txns.map_changed(map, ctx.global_position);
                Ok(MapReply::Done)
            }
            BeginTransaction { lease_micros, end } => {
                for version in end {
                    self.txns.end(*version);
                }
                let lease_until_micros = ctx.now_micros.saturating_add(*lease_micros);
                let version = ctx.global_position;
                let maps = self.maps.clone();
                let max = (
                    self.limits.read_versions_max,
                    self.limits.read_versions_per_user_max,
                );
                self.txns
                    .open(version, maps, lease_until_micros, ctx.user, max)?;
                Ok(MapReply::ReadVersion(version))
            }
            EndTransaction { read_version } => {
                self.txns.end(*read_version);
                Ok(MapReply::Done)
            }
            Commit {
                read_version,
                reads,
                writes,
            } => {
                // The vote; `finish` applies the writes.
                for write in writes {
                    self.map(&write.map)?;
                }
                let holds_writes = writes.iter().any(|w| (ctx.owns)(w.map.as_str(), &w.key));
                if self.bugs.skip_validation_without_writes && !holds_writes {
                    return Ok(MapReply::Done);
                }
                if let Some(version) = read_version {
                    if self.bugs.ranges_not_validated {
                        let keys: Vec<_> = reads
                            .iter()
                            .filter(|r| r.range.from.is_some() && r.range.from == r.range.to)
                            .cloned()
                            .collect();
                        self.txns.vote(*version, &keys, ctx.global_position)?;
                    } else {
                        self.txns.vote(*version, reads, ctx.global_position)?;
                    }
                }
                Ok(MapReply::Done)
            }
            // Only the partition map changes (the keyspace change).
            RegisterEventualStore { .. } => Ok(MapReply::Done),
            ReleaseSnapshot { snapshot } => {
                // Idempotent: a lease may already have ended it here.
                self.snapshots.remove(snapshot);
                Ok(MapReply::Done)
            }
            OpenSnapshot { map, lease_micros } => {
                let entries = self.map(map)?.clone();
                if !self.snapshots.contains_key(&ctx.snapshot_id) {
                    if self.snapshots.len() >= self.limits.snapshots_max {
                        return Err(MapError::TooManySnapshots(self.limits.snapshots_max));
                    }
                    if let Some(user) = ctx.user {
                        let max = self.limits.snapshots_per_user_max;
                        let held = self
                            .snapshots
                            .values()
                            .filter(|s| s.holder.as_deref() == Some(user))
                            .count();
                        if held >= max {
                            return Err(MapError::TooManyUserSnapshots(max));
                        }
                    }
                }
                let lease_until_micros = ctx.now_micros.saturating_add(*lease_micros);
                self.snapshots.insert(
                    ctx.snapshot_id,
                    Snapshot {
                        entries: Some(entries),
                        map: Some(map.clone()),
                        lease_until_micros,
                        holder: ctx.user.map(str::to_string),
                    },
                );
                Ok(MapReply::Snapshot(ctx.snapshot_id))
            }
            _ if command.is_log_command() => self.execute_on_log(command, ctx),
            _ => self.execute_on_map(command, ctx),
        }
    }

    fn execute_on_map(
        &mut self,
        command: &MapCommand,
        ctx: &ExecContext<'_>,
    ) -> Result<MapReply, MapError> {
        use MapCommand::*;
        let name = command.map().expect("every other command names a map");
        let entries = self
            .maps
            .get_mut(name)
            .ok_or_else(|| MapError::UnknownMap(name.to_string()))?;
        if command.is_read_only() {
            return Ok(read_map(entries, command));
        }
        let txns = &mut self.txns;
        let position = ctx.global_position;
        // Every write that changes a key is stamped: a transaction that
        // read the key at an earlier read version conflicts with it.
        let mut wrote = |key: &Bytes| txns.wrote(name, key, position);
        let reply = match command {
            Put { key, value, .. } => {
                wrote(key);
                MapReply::Value(entries.insert(key, value))
            }
            Remove { key, .. } => {
                let removed = entries.remove(key);
                if removed.is_some() {
                    wrote(key);
                }
                MapReply::Value(removed)
            }
            PutIfAbsent { key, value, .. } => match entries.get(key) {
                Some(existing) => MapReply::Value(Some(existing.value_bytes())),
                None => {
                    wrote(key);
                    entries.insert(key, value);
                    MapReply::Value(None)
                }
            },
            Replace { key, value, .. } => match entries.get(key) {
                Some(_) => {
                    wrote(key);
                    MapReply::Value(entries.insert(key, value))
                }
                None => MapReply::Value(None),
            },
            ReplaceIfEquals {
                key,
                expected,
                value,
                ..
            } => {
                let matches = entries.get(key).is_some_and(|e| e.value() == &expected[..]);
                if matches {
                    wrote(key);
                    entries.insert(key, value);
                }
                MapReply::Flag(matches)
            }
            RemoveIfEquals { key, expected, .. } => {
                let matches = entries.get(key).is_some_and(|e| e.value() == &expected[..]);
                if matches {
                    wrote(key);
                    entries.remove(key);
                }
                MapReply::Flag(matches)
            }
            PutAll { entries: new, .. } => {
                for (key, value) in new.iter().filter(|(k, _)| (ctx.owns_key)(k)) {
                    wrote(key);
                    entries.insert(key, value);
                }
                MapReply::Done
            }
            MergeFields { key, fields, .. } => match entries.get(key) {
                None => MapReply::Flag(false),
                Some(record) => {
                    let base: &[u8] = if self.bugs.merge_replaces_record {
                        &[]
                    } else {
                        record.value()
                    };
                    let merged = field_record::merge(base, fields)?;
                    if merged.len() > self.limits.value_bytes_max {
                        return Err(MapError::ValueTooLarge {
                            bytes: merged.len(),
                            max: self.limits.value_bytes_max,
                        });
                    }
                    wrote(key);
                    entries.insert(key, &merged);
                    MapReply::Flag(true)
                }
            },
            Clear { .. } => {
                *entries = Entries::new();
                txns.map_changed(name, position);
                MapReply::Done
            }
            _ => unreachable!("reads returned above; the rest handled by execute_valid"),
        };
        Ok(reply)
    }

    /// Applies a commit given every involved partition's vote: this
    /// partition's writes if all voted yes, nothing otherwise. The reply
    /// is the first refusal in partition order, or `Done`.
    pub fn finish_commit(
        &mut self,
        command: &MapCommand,
        votes: &[MapReply],
        ctx: &ExecContext<'_>,
    ) -> MapReply {
        let MapCommand::Commit { writes, .. } = command else {
            unreachable!("only a commit is voted: {command:?}")
        };
        if let Some(refusal) = votes.iter().find(|v| matches!(v, MapReply::Failed(_))) {
            return refusal.clone();
        }
        for write in owned_writes(writes, ctx.owns) {
            let entries = self
                .maps
                .get_mut(&write.map)
                .expect("every partition voted that the map exists");
            match &write.value {
                Some(value) => {
                    entries.insert(&write.key, value);
                }
                None => {
                    entries.remove(&write.key);
                }
            }
            self.txns.wrote(&write.map, &write.key, ctx.global_position);
        }
        MapReply::Done
    }

    /// A read of a transaction at read version `version` (a `get`, a
    /// range read, first, last, floor, ceiling, ...), served from the
    /// version's snapshot without ordering by any replica that executed
    /// the begin (`position`: the global position this replica is at).
    /// With the reply comes whether a key the read covered was written
    /// here since the version: a transaction that writes is then bound to
    /// conflict, and may give up at once (SCONEKV's fast abort).
    pub fn read_at(
        &self,
        version: ReadVersion,
        command: &MapCommand,
        position: u64,
    ) -> Result<(MapReply, bool), MapError> {
        command.validate(&self.limits)?;
        if !command.is_read_only() {
            return Err(MapError::BadTransaction(
                "only reads are served at a read version; writes go in the commit".to_string(),
            ));
        }
        if command.is_log_command() {
            return Err(MapError::BadTransaction(
                "logs are not read in transactions".to_string(),
            ));
        }
        if version > position {
            return Err(MapError::FutureReadVersion(version));
        }
        let name = command.map().expect("reads name a map");
        let entries = self
            .txns
            .maps_at(version)?
            .get(name)
            .ok_or_else(|| MapError::UnknownMap(name.to_string()))?;
        let reply = read_map(entries, command);
        let range = crate::conflict_range(command, &reply);
        let doomed = self.txns.written_since(name, &range, version).is_some();
        Ok((reply, doomed))
    }

    fn map(&self, name: &MapName) -> Result<&Entries, MapError> {
        self.maps
            .get(name)
            .ok_or_else(|| MapError::UnknownMap(name.to_string()))
    }

    /// Up to `limit` entries of snapshot `id` with keys above `after`
    /// (from the first key when `None`). Snapshots never change, so any
    /// replica that executed the `OpenSnapshot` serves its pages without
    /// ordering them.
    pub fn snapshot_page(
        &self,
        id: SnapshotId,
        after: Option<&[u8]>,
        limit: u32,
    ) -> Result<SnapshotPage, MapError> {
        if limit == 0 || limit > self.limits.range_entries_max {
            return Err(MapError::BadRange(format!(
                "page limit {limit} outside 1..={}",
                self.limits.range_entries_max
            )));
        }
        let (entries, map) = self
            .snapshots
            .get(&id)
            .and_then(|s| s.entries.as_ref().zip(s.map.as_ref()))
            .ok_or(MapError::UnknownSnapshot(id))?;
        let from = after.map_or(Bound::Unbounded, Bound::Excluded);
        let mut iter = entries
            .range((from, Bound::Unbounded))
            .map(Stored::to_entry);
        let entries: Vec<Entry> = iter.by_ref().take(limit as usize).collect();
        let more = iter.next().is_some();
        Ok(SnapshotPage {
            entries,
            more,
            map: map.clone(),
        })
    }

    /// The open snapshots: id, and whether this replica holds its pages.
    pub fn snapshot_ids(&self) -> Vec<(SnapshotId, bool)> {
        self.snapshots
            .iter()
            .map(|(id, s)| (*id, s.entries.is_some()))
            .collect()
    }

    /// Whether snapshot `id` is open but its entries are not held here
    /// (this replica was restored from a checkpoint since it opened):
    /// page reads must go to another replica.
    pub fn snapshot_held_elsewhere(&self, id: SnapshotId) -> bool {
        self.snapshots.get(&id).is_some_and(|s| s.entries.is_none())
    }

    /// Ends snapshots whose lease passed by replicated time `now_micros`.
    pub fn expire_snapshots(&mut self, now_micros: u64) {
        self.snapshots
            .retain(|_, snapshot| snapshot.lease_until_micros > now_micros);
    }
}

/// The reply of read-only `command` on `entries`.
fn read_map(entries: &Entries, command: &MapCommand) -> MapReply {
    use MapCommand::*;
    match command {
        Get { key, .. } => MapReply::Value(entries.value(key)),
        ContainsKey { key, .. } => MapReply::Flag(entries.contains_key(key)),
        ContainsValue { value, .. } => {
            MapReply::Flag(entries.iter().any(|e| e.value() == &value[..]))
        }
        Size { .. } => MapReply::Count(entries.len() as u64),
        IsEmpty { .. } => MapReply::Flag(entries.is_empty()),
        FirstEntry { .. } => MapReply::Entry(entries.first().map(Stored::to_entry)),
        LastEntry { .. } => MapReply::Entry(entries.last().map(Stored::to_entry)),
        NearestEntry { key, nearest, .. } => MapReply::Entry(nearest_entry(entries, key, *nearest)),
        Range { range, .. } => range_read(entries, range),
        other => unreachable!("not a read: {other:?}"),
    }
}

fn nearest_entry(entries: &Entries, key: &[u8], nearest: Nearest) -> Option<Entry> {
    let found = match nearest {
        Nearest::Floor => entries
            .range((Bound::Unbounded, Bound::Included(key)))
            .next_back(),
        Nearest::Lower => entries
            .range((Bound::Unbounded, Bound::Excluded(key)))
            .next_back(),
        Nearest::Ceiling => entries
            .range((Bound::Included(key), Bound::Unbounded))
            .next(),
        Nearest::Higher => entries
            .range((Bound::Excluded(key), Bound::Unbounded))
            .next(),
    };
    found.map(Stored::to_entry)
}

fn range_read(entries: &Entries, range: &RangeQuery) -> MapReply {
    if let (Some(from), Some(to)) = (&range.from, &range.to) {
        // An empty range with equal ends: ordered-map range() would panic.
        if from.key == to.key && !(from.inclusive && to.inclusive) {
            return MapReply::Entries {
                entries: Vec::new(),
                more: false,
            };
        }
    }
    let (from, to) = range.bounds();
    let bounds = (from.map(|k| &k[..]), to.map(|k| &k[..]));
    let iter = entries.range(bounds);
    let mut iter: Box<dyn Iterator<Item = &Stored>> = if range.reverse {
        Box::new(iter.rev())
    } else {
        Box::new(iter)
    };
    let entries: Vec<Entry> = iter
        .by_ref()
        .take(range.limit as usize)
        .map(Stored::to_entry)
        .collect();
    let more = iter.next().is_some();
    MapReply::Entries { entries, more }
}
