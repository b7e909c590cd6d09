//! A node's work at barriers' fences (DMap §III-C; thesis §4.7.4–4.7.5):
//! [`amulet_smr::work_fences`] reconfigures the merges and replicas; here
//! the host opens the streams a reconfiguration created, makes the
//! checkpoints a restart depends on durable at once (a split's new
//! partition, a merge's absorbing partition), and drops what a merge or a
//! second move removed.

use crate::checkpointer::Purpose;
use crate::command::Command;
use crate::edge::prepare_replica;
use crate::host::{Host, HostError};
use crate::storage::{with_fence_host, LogOpener};
use amulet_smr::{work_fences, Replica, ReplicaConfig, StateMachine};
use amulet_types::{PartitionId, TimeMicros};

impl<S: StateMachine> Host<S> {
    /// Does the work of every merge stopped at a fence whose replica
    /// executed everything before it; returns the fences released.
    pub(crate) fn work_fences(
        &mut self,
        now: TimeMicros,
        storage: &mut dyn LogOpener,
    ) -> Result<usize, HostError> {
        let me = self.config.me;
        let limits = self.runtime_stream_limits();
        let (node, replicas) = (&mut self.node, &mut self.replicas);
        let done = with_fence_host(
            me,
            self.config.incarnation,
            &*self.config.new_state,
            &limits,
            storage,
            true,
            now,
            |host| work_fences(node, replicas, host),
        )?;
        if done.released == 0 {
            return Ok(0);
        }
        self.counters.reconfigured += (done.added.len() + done.removed.len()) as u64;
        for (partition, position) in done.added {
            // Created here by the split: a fetch begun when a newer map
            // (another replica's, past its own fence) already placed the
            // new partition on this node is not needed, and installing
            // its checkpoint later would rewind this replica (seed
            // 2002022).
            self.transfer.cancel(partition);
            if self.config.bugs.split_without_transfer {
                self.empty_split(partition);
            } else if let Some(replica) = self.replicas.get_mut(&partition) {
                // A forked replica runs like every other replica here
                // (the injected variants included).
                prepare_replica(replica, &self.config);
            }
            // The new partition's checkpoint at the fork is durable at
            // once: a restart must find it (its source's later checkpoints
            // are past the fork; a crash before it replays the source to
            // the fence and forks again).
            self.checkpointer.track(partition, now);
            let written = self.write_checkpoint(partition, Some(position), Purpose::Fork, now);
            assert!(written, "a replica just forked at a fence is idle");
            tracing::info!(partition = partition.0, "partition split off here");
        }
        for (partition, position) in done.absorbed {
            // Durable before the merged partition's checkpoint goes: a
            // restart from an older one would wait at the merge's fence
            // for a partition no longer here.
            let written = self.write_checkpoint(partition, Some(position), Purpose::Absorb, now);
            assert!(written, "a replica at its fence is idle");
        }
        for partition in done.removed {
            self.checkpointer.removed(partition);
            self.transfer.cancel(partition);
            let write = self.checkpointer.number();
            self.out
                .push(Command::RemoveCheckpoint { partition, write });
            // Requests still waiting there were answered `Behind` by the
            // replica when it retired; drop what is left.
            self.abandon_requests(partition);
            tracing::info!(
                partition = partition.0,
                "replica removed at a fence (merged away or moved again)"
            );
        }
        let version = self.current_map().map(|m| m.version.0);
        tracing::info!(fences = done.released, map_version = ?version, "reconfigured at a fence");
        Ok(done.released)
    }

    /// Injected bug: the partition split off starts from an empty state
    /// instead of the moved range.
    fn empty_split(&mut self, partition: PartitionId) {
        let replica = &self.replicas[&partition];
        let mut checkpoint = replica.checkpoint().expect("a forked replica is idle");
        checkpoint.state = (self.config.new_state)().checkpoint();
        let config = ReplicaConfig::new(self.config.me, self.config.incarnation, partition);
        let mut empty = Replica::restore(config, checkpoint, (self.config.new_state)())
            .expect("a checkpoint of the same partition");
        prepare_replica(&mut empty, &self.config);
        self.replicas.insert(partition, empty);
    }
}
