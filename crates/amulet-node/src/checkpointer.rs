//! Background replica checkpoints (thesis §3.4.2). The event loop asks
//! after every flush; when a partition's checkpoint is due and its replica
//! is between deliveries, the replica's state and its merge position are
//! taken on the loop (copy-on-write clones, O(number of maps, sessions and
//! cached signals)) and written by a blocking task. At most one write per
//! partition is in flight; a failed write is logged and retried at the
//! next interval (the previous checkpoint stays valid).

use crate::checkpoint_store::{CheckpointBody, CheckpointStore};
use amulet_dmap::PartitionState;
use amulet_multicast::{GroupId, MulticastNode};
use amulet_smr::Replica;
use amulet_types::{PartitionId, TimeMicros};
use std::collections::BTreeMap;
use std::time::Instant;
use tokio::sync::mpsc;

/// A finished write: partition, global position, size or error, seconds.
pub(crate) type WriteDone = (PartitionId, u64, Result<u64, String>, f64);

/// One partition's checkpoint progress, for status and metrics.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct CheckpointStats {
    /// Checkpoints written since the node started.
    pub(crate) written: u64,
    /// Writes that failed since the node started.
    pub(crate) failed: u64,
    /// Size of the last checkpoint written, bytes.
    pub(crate) bytes: u64,
    /// Global position of the last checkpoint written (or restored).
    pub(crate) global_position: u64,
}

#[derive(Debug, Default)]
struct PartitionSlot {
    due: TimeMicros,
    writing: bool,
    stats: CheckpointStats,
}

/// Schedules checkpoint writes.
pub(crate) struct Checkpointer {
    store: CheckpointStore,
    every_micros: u64,
    slots: BTreeMap<PartitionId, PartitionSlot>,
    done_tx: mpsc::UnboundedSender<WriteDone>,
    /// Finished writes; the event loop polls it.
    pub(crate) done: mpsc::UnboundedReceiver<WriteDone>,
}

impl Checkpointer {
    /// Checkpoints into `store` every `every_micros` (0: never), the first
    /// one an interval after `now`.
    pub(crate) fn new(
        store: CheckpointStore,
        every_micros: u64,
        partitions: impl Iterator<Item = (PartitionId, u64)>,
        now: TimeMicros,
    ) -> Checkpointer {
        let (done_tx, done) = mpsc::unbounded_channel();
        let slots = partitions
            .map(|(partition, restored_at)| {
                let slot = PartitionSlot {
                    due: now.plus(every_micros),
                    writing: false,
                    stats: CheckpointStats {
                        global_position: restored_at,
                        ..CheckpointStats::default()
                    },
                };
                (partition, slot)
            })
            .collect();
        Checkpointer {
            store,
            every_micros,
            slots,
            done_tx,
            done,
        }
    }

    /// Starts the writes that are due and possible now.
    pub(crate) fn poll(
        &mut self,
        now: TimeMicros,
        replicas: &BTreeMap<PartitionId, Replica<PartitionState>>,
        node: &MulticastNode,
    ) {
        if self.every_micros == 0 {
            return;
        }
        for (partition, slot) in &mut self.slots {
            if slot.writing || now < slot.due {
                continue;
            }
            let Some(replica) = replicas.get(partition) else {
                continue;
            };
            // Between deliveries only; otherwise try again after the next
            // flush (a replica waiting for signals is quiet again soon).
            let (Some(state), Some(position)) = (
                replica.checkpoint(),
                node.group_position(GroupId(partition.0)),
            ) else {
                continue;
            };
            slot.writing = true;
            slot.due = now.plus(self.every_micros);
            let body = CheckpointBody {
                replica: state,
                position,
            };
            let (store, done, partition) = (self.store.clone(), self.done_tx.clone(), *partition);
            tokio::task::spawn_blocking(move || {
                #[allow(clippy::disallowed_methods)] // measures the write, not protocol time
                let began = Instant::now();
                let global = body.replica.global_position;
                let result = store.write(partition, &body).map_err(|e| e.to_string());
                // The body (and its hold on old map versions) goes here,
                // off the event loop.
                drop(body);
                let _ = done.send((partition, global, result, began.elapsed().as_secs_f64()));
            });
        }
    }

    /// Records a finished write.
    pub(crate) fn finished(&mut self, (partition, global, result, seconds): WriteDone) {
        let Some(slot) = self.slots.get_mut(&partition) else {
            return;
        };
        slot.writing = false;
        match result {
            Ok(bytes) => {
                slot.stats.written += 1;
                slot.stats.bytes = bytes;
                slot.stats.global_position = global;
                tracing::info!(
                    partition = partition.0,
                    global_position = global,
                    bytes,
                    seconds,
                    "checkpoint written"
                );
            }
            Err(error) => {
                slot.stats.failed += 1;
                tracing::error!(partition = partition.0, %error, "checkpoint write failed");
            }
        }
    }

    /// Progress of `partition`'s checkpoints.
    pub(crate) fn stats(&self, partition: PartitionId) -> CheckpointStats {
        self.slots
            .get(&partition)
            .map(|s| s.stats)
            .unwrap_or_default()
    }
}
