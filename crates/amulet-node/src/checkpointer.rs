//! Background replica checkpoints (thesis §3.4.2). The event loop asks
//! after every flush; when a partition's checkpoint is due and its replica
//! is between deliveries, the replica's state and its merge position are
//! taken on the loop (copy-on-write clones, O(number of maps, sessions and
//! cached signals)) and written by a blocking task. At most one write per
//! partition is in flight; a failed write is logged and retried at the
//! next interval (the previous checkpoint stays valid).

use crate::checkpoint_store::{CheckpointBody, CheckpointStore};
use amulet_dmap::PartitionState;
use amulet_multicast::{checkpoint_reaches, GroupId, MulticastNode};
use amulet_smr::Replica;
use amulet_types::{Instance, PartitionId, StreamId, TimeMicros};
use std::collections::BTreeMap;
use std::time::Instant;
use tokio::sync::mpsc;

/// Per stream, the first instance a checkpoint does not reflect.
pub(crate) type Lanes = Vec<(StreamId, Instance)>;

/// A finished write: partition, global position, lanes, size or error,
/// seconds.
pub(crate) type WriteDone = (PartitionId, u64, Lanes, Result<u64, String>, f64);

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
    /// Lanes of the last checkpoint on disk (written or restored).
    durable: Option<Lanes>,
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
        partitions: impl Iterator<Item = (PartitionId, u64, Option<Lanes>)>,
        now: TimeMicros,
    ) -> Checkpointer {
        let (done_tx, done) = mpsc::unbounded_channel();
        let slots = partitions
            .map(|(partition, restored_at, durable)| {
                let slot = PartitionSlot {
                    due: now.plus(every_micros),
                    writing: false,
                    stats: CheckpointStats {
                        global_position: restored_at,
                        ..CheckpointStats::default()
                    },
                    durable,
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

    /// Micros between checkpoints (0: none).
    pub(crate) fn every_micros(&self) -> u64 {
        self.every_micros
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
                let lanes = lanes_of(&body.position);
                let result = store.write(partition, &body).map_err(|e| e.to_string());
                // The body (and its hold on old map versions) goes here,
                // off the event loop.
                drop(body);
                let seconds = began.elapsed().as_secs_f64();
                let _ = done.send((partition, global, lanes, result, seconds));
            });
        }
    }

    /// Records a finished write.
    pub(crate) fn finished(&mut self, (partition, global, lanes, result, seconds): WriteDone) {
        let Some(slot) = self.slots.get_mut(&partition) else {
            return;
        };
        slot.writing = false;
        match result {
            Ok(bytes) => {
                slot.stats.written += 1;
                slot.stats.bytes = bytes;
                slot.stats.global_position = global;
                slot.durable = Some(lanes);
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

    /// Whether `partition`'s latest durable checkpoint is behind `at_least`
    /// (some stream's lane before the instance named), in which case a new
    /// one is written at the next poll (non-disruptive recovery: a peer
    /// asked for one at least that recent). False, and nothing scheduled,
    /// when checkpoints are off or the latest one will do.
    pub(crate) fn write_if_older(
        &mut self,
        partition: PartitionId,
        at_least: &[(StreamId, Instance)],
        now: TimeMicros,
    ) -> bool {
        if self.every_micros == 0 || at_least.is_empty() {
            return false;
        }
        let Some(slot) = self.slots.get_mut(&partition) else {
            return false;
        };
        let recent_enough = slot
            .durable
            .as_ref()
            .is_some_and(|lanes| checkpoint_reaches(lanes.iter().copied(), at_least));
        if recent_enough {
            return false;
        }
        slot.due = slot.due.min(now);
        true
    }

    /// A peer's checkpoint was installed as `partition`'s (state transfer):
    /// it is on disk now and counts as this node's.
    pub(crate) fn installed(&mut self, partition: PartitionId, global_position: u64, lanes: Lanes) {
        if let Some(slot) = self.slots.get_mut(&partition) {
            slot.stats.global_position = global_position;
            slot.durable = Some(lanes);
        }
    }

    /// A partition split off at a fence, whose first checkpoint (at the
    /// fork) was written synchronously: from now on it is checkpointed
    /// like the others.
    pub(crate) fn added(
        &mut self,
        partition: PartitionId,
        global_position: u64,
        lanes: Lanes,
        now: TimeMicros,
    ) {
        let slot = PartitionSlot {
            due: now.plus(self.every_micros),
            writing: false,
            stats: CheckpointStats {
                global_position,
                written: 1,
                ..CheckpointStats::default()
            },
            durable: Some(lanes),
        };
        self.slots.insert(partition, slot);
    }

    /// A partition moved here whose state is being fetched: until it is
    /// installed this node holds nothing of it, so its safe instance of
    /// every stream is 0 (nothing it will need is trimmed meanwhile).
    pub(crate) fn adopting(&mut self, partition: PartitionId, now: TimeMicros) {
        self.slots.entry(partition).or_insert(PartitionSlot {
            due: now.plus(self.every_micros),
            writing: false,
            stats: CheckpointStats::default(),
            durable: None,
        });
    }

    /// A partition merged into another: no more checkpoints (a write in
    /// flight finishes and is ignored; its file is removed by the caller).
    pub(crate) fn removed(&mut self, partition: PartitionId) {
        self.slots.remove(&partition);
    }

    /// This node's safe instance of `stream` (thesis §3.4.2): the least
    /// first-unreflected instance over the durable checkpoints of the
    /// replicas here that subscribe to it; 0 if one of them has none.
    /// `None` if no replica here subscribes to it.
    pub(crate) fn safe_instance(&self, stream: StreamId) -> Option<Instance> {
        let mut safe: Option<Instance> = None;
        for slot in self.slots.values() {
            let held = match &slot.durable {
                None => Instance(0),
                Some(lanes) => match lanes.iter().find(|(s, _)| *s == stream) {
                    Some((_, next)) => *next,
                    None => continue,
                },
            };
            safe = Some(safe.map_or(held, |s| s.min(held)));
        }
        safe
    }

    /// Progress of `partition`'s checkpoints.
    pub(crate) fn stats(&self, partition: PartitionId) -> CheckpointStats {
        self.slots
            .get(&partition)
            .map(|s| s.stats)
            .unwrap_or_default()
    }
}

/// The lanes of a merge position.
pub(crate) fn lanes_of(position: &amulet_multicast::MergePosition) -> Lanes {
    position.lanes.iter().map(|l| (l.stream, l.next)).collect()
}
