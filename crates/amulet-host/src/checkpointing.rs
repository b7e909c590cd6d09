//! Taking checkpoints (thesis §3.4.2): a replica's state and its merge's
//! position, taken between deliveries, handed to the runtime to write:
//! periodically in the background, or now (a split's first checkpoint, a
//! merge's absorbing partition, a clean stop). `checkpointer.rs` decides
//! when, and what is durable.

use crate::checkpoint_codec::CheckpointBody;
use crate::checkpointer::Purpose;
use crate::command::{CheckpointFile, Command, Durability};
use crate::host::Host;
use amulet_multicast::MergePosition;
use amulet_smr::{group_of, StateMachine};
use amulet_types::{PartitionId, TimeMicros};

impl<S: StateMachine> Host<S> {
    /// Starts the background checkpoint writes that are due, of replicas
    /// between deliveries (the others are tried again at the next tick).
    pub(crate) fn start_checkpoints(&mut self, now: TimeMicros) {
        for partition in self.checkpointer.due(now) {
            self.write_checkpoint(partition, None, Purpose::Periodic, now);
        }
    }

    /// Queues a checkpoint of every replica at the point it stands, to be
    /// written now (a clean stop: the restart then replays nothing and
    /// never needs a peer's checkpoint). Nothing without checkpoints.
    pub fn checkpoint_all_now(&mut self, now: TimeMicros) {
        if self.checkpointer.every_micros() == 0 {
            return;
        }
        let partitions: Vec<PartitionId> = self.replicas.keys().copied().collect();
        for partition in partitions {
            self.write_checkpoint(partition, None, Purpose::Shutdown, now);
        }
    }

    /// Takes `partition`'s checkpoint at `position` (where its merge stands
    /// now when `None`) and queues its write: in the background when
    /// periodic, else now. False when the replica is not between
    /// deliveries (or not here).
    pub(crate) fn write_checkpoint(
        &mut self,
        partition: PartitionId,
        position: Option<MergePosition>,
        purpose: Purpose,
        now: TimeMicros,
    ) -> bool {
        let Some(state) = self.replicas.get(&partition).and_then(|r| r.checkpoint()) else {
            return false;
        };
        let Some(position) = position.or_else(|| self.node.group_position(group_of(partition)))
        else {
            return false;
        };
        let write =
            self.checkpointer
                .begin(partition, state.global_position, &position, purpose, now);
        let durability = match purpose {
            Purpose::Periodic => Durability::Background,
            _ => Durability::Now,
        };
        let body = CheckpointBody {
            replica: state,
            position,
        };
        self.out.push(Command::WriteCheckpoint {
            partition,
            write,
            file: CheckpointFile::Body(Box::new(body)),
            durability,
        });
        true
    }
}
