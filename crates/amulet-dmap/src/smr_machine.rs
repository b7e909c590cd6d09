//! DMap as a replicated state machine: where each command's keys live, and
//! which commands change the partition map.

use crate::{
    ExecContext, MapCommand, MapName, MapReply, Nearest, PartitionCheckpoint, PartitionState,
};
use amulet_smr::{Keys, KeyspaceChange, Need, Permission, Placement, StateMachine};
use std::ops::Bound;

impl StateMachine for PartitionState {
    type Command = MapCommand;
    type Reply = MapReply;
    type Checkpoint = PartitionCheckpoint;

    fn checkpoint(&self) -> PartitionCheckpoint {
        self.to_checkpoint()
    }

    fn restore(&mut self, checkpoint: PartitionCheckpoint) {
        self.restore_checkpoint(checkpoint);
    }

    fn split_off(&mut self, moves: &dyn Fn(&str, &[u8]) -> bool) -> PartitionCheckpoint {
        PartitionState::split_off(self, moves)
    }

    fn absorb(&mut self, other: PartitionCheckpoint) {
        self.absorb_checkpoint(other);
    }

    fn needs(command: &MapCommand, need: &mut dyn FnMut(Need<'_>)) {
        use MapCommand::*;
        use Permission::{Admin, Read, Write};
        match command {
            MultiAppend { appends } => {
                for (log, _) in appends {
                    need(Need::Map(log.as_str(), Write));
                }
            }
            Commit { reads, writes, .. } => {
                for w in writes {
                    need(Need::Map(w.map.as_str(), Write));
                }
                for r in reads {
                    need(Need::Map(r.map.as_str(), Read));
                }
            }
            // Name no map: a read version or a snapshot lease is only a
            // position (the reads made with it are checked themselves).
            BeginTransaction { .. } | EndTransaction { .. } | ReleaseSnapshot { .. } => {}
            // Sent by nodes about their own eventual stores.
            RegisterEventualStore { .. } => need(Need::Cluster),
            // Every other command names one map or log (maps and logs
            // share one namespace of grants): creating or dropping it
            // needs admin, what never changes state (the commands the
            // session table does not record) and snapshots need read,
            // the rest write.
            _ => {
                let name = command
                    .map()
                    .or_else(|| command.log())
                    .expect("a command of one map or log");
                let permission = match command {
                    CreateMap { .. } | DropMap { .. } | CreateLog { .. } | DropLog { .. } => Admin,
                    OpenSnapshot { .. } => Read,
                    _ if command.is_read_only() => Read,
                    _ => Write,
                };
                need(Need::Map(name.as_str(), permission));
            }
        }
    }

    fn placement(command: &MapCommand) -> Placement {
        use MapCommand::*;
        // A log's entries live in the partition owning its name as a key
        // of its own keyspace (a hash keyspace, so logs spread over
        // partitions and move whole).
        match command {
            CreateLog { .. } | DropLog { .. } => {
                return Placement {
                    keyspace: None,
                    keys: Keys::All,
                }
            }
            MultiAppend { appends } => {
                let parts = appends
                    .iter()
                    .map(|(log, _)| {
                        let name = log.as_str();
                        (name.to_string(), Keys::One(name.as_bytes().to_vec().into()))
                    })
                    .collect();
                return Placement {
                    keyspace: None,
                    keys: Keys::Across(parts),
                };
            }
            _ => {}
        }
        if let Some(log) = command.log() {
            let name = log.as_str();
            return Placement {
                keyspace: Some(name.to_string()),
                keys: Keys::One(name.as_bytes().to_vec().into()),
            };
        }
        if let Some(key) = command.single_key() {
            return Placement {
                keyspace: command.map().map(|m| m.as_str().to_string()),
                keys: Keys::One(key.clone()),
            };
        }
        let keys = match command {
            CreateMap { .. }
            | DropMap { .. }
            | ReleaseSnapshot { .. }
            | RegisterEventualStore { .. }
            | BeginTransaction { .. }
            | EndTransaction { .. } => {
                return Placement {
                    keyspace: None,
                    keys: Keys::All,
                }
            }
            Commit { reads, writes, .. } => {
                // Where the writes go and where the reads were served:
                // each of those partitions votes on its part.
                let mut parts: Vec<(String, Keys)> = writes
                    .iter()
                    .map(|w| (w.map.as_str().to_string(), Keys::One(w.key.clone())))
                    .collect();
                parts.extend(reads.iter().map(|r| {
                    let keys = if r.range.is_empty() {
                        Keys::Many(Vec::new())
                    } else if let Some(key) = r.range.single_key() {
                        // One key lives in one partition, in a hash map
                        // too (a range there spans every partition).
                        Keys::One(key.clone())
                    } else {
                        let (from, to) = r.range.bounds();
                        Keys::Range(from.cloned(), to.cloned())
                    };
                    (r.map.as_str().to_string(), keys)
                }));
                return Placement {
                    keyspace: None,
                    keys: Keys::Across(parts),
                };
            }
            PutAll { entries, .. } if !entries.is_empty() => {
                Keys::Many(entries.iter().map(|(k, _)| k.clone()).collect())
            }
            NearestEntry { key, nearest, .. } => match nearest {
                Nearest::Floor => Keys::Range(Bound::Unbounded, Bound::Included(key.clone())),
                Nearest::Lower => Keys::Range(Bound::Unbounded, Bound::Excluded(key.clone())),
                Nearest::Ceiling => Keys::Range(Bound::Included(key.clone()), Bound::Unbounded),
                Nearest::Higher => Keys::Range(Bound::Excluded(key.clone()), Bound::Unbounded),
            },
            Range { range, .. } => {
                let (from, to) = range.bounds();
                Keys::Range(from.cloned(), to.cloned())
            }
            Get { .. }
            | ContainsKey { .. }
            | Put { .. }
            | Remove { .. }
            | PutIfAbsent { .. }
            | Replace { .. }
            | ReplaceIfEquals { .. }
            | RemoveIfEquals { .. }
            | MergeFields { .. } => unreachable!("single-key commands returned above"),
            CreateLog { .. }
            | DropLog { .. }
            | Append { .. }
            | MultiAppend { .. }
            | ReadLog { .. }
            | TrimLog { .. }
            | LogBounds { .. } => unreachable!("log commands returned above"),
            PutAll { .. }
            | ContainsValue { .. }
            | Size { .. }
            | IsEmpty { .. }
            | Clear { .. }
            | FirstEntry { .. }
            | LastEntry { .. }
            | OpenSnapshot { .. } => Keys::All,
        };
        Placement {
            keyspace: command.map().map(|m| m.as_str().to_string()),
            keys,
        }
    }

    fn validate(&self, command: &MapCommand) -> Result<(), MapReply> {
        command.validate(self.limits()).map_err(MapReply::Failed)
    }

    fn execute(&mut self, command: &MapCommand, ctx: &amulet_smr::ExecContext<'_>) -> MapReply {
        PartitionState::execute(self, command, &context(ctx))
    }

    fn gauges(&self) -> Vec<(&'static str, u64)> {
        let (log_entries, log_bytes) = self.log_totals();
        let (entries, payload_bytes) = self.entry_totals();
        vec![
            ("entries", entries),
            ("payload_bytes", payload_bytes),
            ("snapshots", self.snapshot_count() as u64),
            ("read_versions", self.read_version_count() as u64),
            ("recent_writes", self.recent_write_count() as u64),
            ("log_entries", log_entries),
            ("log_bytes", log_bytes),
        ]
    }

    fn keyspace_entries(&self, keyspace: &str) -> Option<u64> {
        let name = MapName::new(keyspace).ok()?;
        Some(self.entries(&name).map_or(0, |e| e.len() as u64))
    }

    fn keyspace_key_at(&self, keyspace: &str, at: u64) -> Option<bytes::Bytes> {
        let name = MapName::new(keyspace).ok()?;
        let entries = self.entries(&name)?;
        let at = usize::try_from(at).ok()?;
        entries
            .iter()
            .nth(at)
            .map(|e| bytes::Bytes::copy_from_slice(e.key()))
    }

    fn keyspace_bytes(&self, keyspace: &str) -> Option<u64> {
        let name = MapName::new(keyspace).ok()?;
        Some(self.entries(&name).map_or(0, |e| e.payload_bytes()))
    }

    fn keyspace_key_after_bytes(&self, keyspace: &str, bytes: u64) -> Option<bytes::Bytes> {
        let name = MapName::new(keyspace).ok()?;
        self.entries(&name)?
            .key_after_bytes(bytes)
            .map(bytes::Bytes::copy_from_slice)
    }

    fn is_voted(command: &MapCommand) -> bool {
        matches!(command, MapCommand::Commit { .. })
    }

    fn finish(
        &mut self,
        command: &MapCommand,
        votes: &[MapReply],
        ctx: &amulet_smr::ExecContext<'_>,
    ) -> MapReply {
        self.finish_commit(command, votes, &context(ctx))
    }

    fn combine(command: &MapCommand, partials: &[MapReply]) -> MapReply {
        crate::combine(command, partials)
    }

    fn needs_global_order(command: &MapCommand) -> bool {
        // The snapshot's id, and the read version, is its global position.
        matches!(
            command,
            MapCommand::OpenSnapshot { .. } | MapCommand::BeginTransaction { .. }
        )
    }

    fn is_read_only(command: &MapCommand) -> bool {
        command.is_read_only()
    }

    fn orders_only(command: &MapCommand) -> bool {
        // A begin only fixes the read version's position in every
        // partition (its snapshot is taken by `execute`); its partials are
        // acknowledgements. Partitions run on past it, holding the replies
        // of what follows until every partition has executed it.
        matches!(command, MapCommand::BeginTransaction { .. })
    }

    fn keyspace_request(command: &MapCommand) -> Option<KeyspaceChange> {
        Self::keyspace_change(command, &MapReply::Done)
    }

    fn keyspace_change(command: &MapCommand, reply: &MapReply) -> Option<KeyspaceChange> {
        match (command, reply) {
            (MapCommand::CreateMap { map, layout }, MapReply::Done) => Some(
                KeyspaceChange::Create(map.as_str().to_string(), layout.clone()),
            ),
            (MapCommand::DropMap { map }, MapReply::Done) => {
                Some(KeyspaceChange::Drop(map.as_str().to_string()))
            }
            (MapCommand::RegisterEventualStore { node, incarnation }, MapReply::Done) => {
                Some(KeyspaceChange::EventualStore {
                    node: amulet_types::NodeId(*node),
                    incarnation: *incarnation,
                })
            }
            (MapCommand::CreateLog { log }, MapReply::Done) => Some(KeyspaceChange::Create(
                log.as_str().to_string(),
                amulet_smr::Layout::Hash,
            )),
            (MapCommand::DropLog { log }, MapReply::Done) => {
                Some(KeyspaceChange::Drop(log.as_str().to_string()))
            }
            _ => None,
        }
    }
}

fn context<'a>(ctx: &amulet_smr::ExecContext<'a>) -> ExecContext<'a> {
    ExecContext {
        now_micros: ctx.now_micros,
        snapshot_id: ctx.global_position,
        global_position: ctx.global_position,
        owns_key: ctx.owns_key,
        owns: ctx.owns,
        user: ctx.user,
    }
}
