//! DMap as a replicated state machine: where each command's keys live, and
//! which commands change the partition map.

use crate::{ExecContext, MapCommand, MapReply, Nearest, PartitionCheckpoint, PartitionState};
use amulet_smr::{Keys, KeyspaceChange, Placement, StateMachine};
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

    fn placement(command: &MapCommand) -> Placement {
        use MapCommand::*;
        if let Some(key) = command.single_key() {
            return Placement {
                keyspace: command.map().map(|m| m.as_str().to_string()),
                keys: Keys::One(key.clone()),
            };
        }
        let keys = match command {
            CreateMap { .. } | DropMap { .. } | ReleaseSnapshot { .. } => {
                return Placement {
                    keyspace: None,
                    keys: Keys::All,
                }
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
            | RemoveIfEquals { .. } => unreachable!("single-key commands returned above"),
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
        let ctx = ExecContext {
            now_micros: ctx.now_micros,
            snapshot_id: ctx.global_position,
            owns_key: ctx.owns_key,
        };
        PartitionState::execute(self, command, &ctx)
    }

    fn combine(command: &MapCommand, partials: &[MapReply]) -> MapReply {
        crate::combine(command, partials)
    }

    fn needs_global_order(command: &MapCommand) -> bool {
        // The snapshot's id is its global position.
        matches!(command, MapCommand::OpenSnapshot { .. })
    }

    fn is_read_only(command: &MapCommand) -> bool {
        command.is_read_only()
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
            _ => None,
        }
    }
}
