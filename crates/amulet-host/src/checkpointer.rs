//! Checkpoint scheduling (thesis §3.4.2). When a partition's checkpoint
//! is due and its replica is between deliveries, the replica's state and
//! its merge position are taken (copy-on-write clones, O(number of maps,
//! sessions and cached signals)) and handed to the runtime to write in the
//! background. At most one background write per partition is in flight; a
//! failed one is counted and retried at the next interval (the previous
//! checkpoint stays valid).
//!
//! The checkpointer also knows what is *durable*: the lanes of the last
//! checkpoint file of each partition known to be in place. That is what
//! this node's safe instances (and so the acceptors' trimming) rest on, so
//! it changes only when the runtime reports a write done, never when one
//! is merely started.

use crate::command::{WriteId, WriteOutcome};
use amulet_multicast::{checkpoint_reaches, MergePosition};
use amulet_types::{Instance, PartitionId, StreamId, TimeMicros};
use std::collections::BTreeMap;

/// Per stream, the first instance a checkpoint does not reflect.
pub type Lanes = Vec<(StreamId, Instance)>;

/// The lanes of a merge position.
pub(crate) fn lanes_of(position: &MergePosition) -> Lanes {
    position.lanes.iter().map(|l| (l.stream, l.next)).collect()
}

/// One partition's checkpoint progress, for status and metrics.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CheckpointStats {
    /// Checkpoints written since the node started.
    pub written: u64,
    /// Writes that failed since the node started.
    pub failed: u64,
    /// Size of the last checkpoint written, bytes.
    pub bytes: u64,
    /// Global position of the last checkpoint written (or restored).
    pub global_position: u64,
}

/// Why a checkpoint is written, which decides what a failure means.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Purpose {
    /// Every interval; a failure is retried at the next one.
    Periodic,
    /// The first checkpoint of a partition split off at a fence: a
    /// restart must find it (the source's later checkpoints are past the
    /// fork). A failure stops the node.
    Fork,
    /// The absorbing partition of a merge, before the merged partition's
    /// checkpoint goes. A failure stops the node.
    Absorb,
    /// A peer's checkpoint installed by state transfer. A failure leaves
    /// the older file: the node runs on and its safe instance stays back.
    Install,
    /// A clean stop's last checkpoint.
    Shutdown,
}

/// A write the runtime is carrying out.
#[derive(Clone, Debug)]
struct InFlight {
    partition: PartitionId,
    global_position: u64,
    lanes: Lanes,
    purpose: Purpose,
}

#[derive(Debug, Default)]
struct PartitionSlot {
    due: TimeMicros,
    /// The background write in flight, if any.
    writing: Option<WriteId>,
    stats: CheckpointStats,
    /// Lanes of the last checkpoint in place (written or restored), and
    /// the write that put it there.
    durable: Option<(Lanes, WriteId)>,
}

/// A finished write, as the host acts on it.
pub(crate) struct Finished {
    pub(crate) partition: PartitionId,
    pub(crate) purpose: Purpose,
    pub(crate) outcome: WriteOutcome,
}

/// Schedules checkpoint writes and tracks what is durable.
pub(crate) struct Checkpointer {
    every_micros: u64,
    slots: BTreeMap<PartitionId, PartitionSlot>,
    in_flight: BTreeMap<WriteId, InFlight>,
    next_write: WriteId,
}

impl Checkpointer {
    /// Checkpoints every `every_micros` (0: never), the first one an
    /// interval after `now`; `partitions` are the replicas at start, with
    /// their restored position and the lanes of the checkpoint on disk.
    pub(crate) fn new(
        every_micros: u64,
        partitions: impl Iterator<Item = (PartitionId, u64, Option<Lanes>)>,
        now: TimeMicros,
    ) -> Checkpointer {
        let slots = partitions
            .map(|(partition, restored_at, durable)| {
                let slot = PartitionSlot {
                    due: now.plus(every_micros),
                    writing: None,
                    stats: CheckpointStats {
                        global_position: restored_at,
                        ..CheckpointStats::default()
                    },
                    durable: durable.map(|lanes| (lanes, 0)),
                };
                (partition, slot)
            })
            .collect();
        Checkpointer {
            every_micros,
            slots,
            in_flight: BTreeMap::new(),
            next_write: 1,
        }
    }

    /// Micros between checkpoints (0: none).
    pub(crate) fn every_micros(&self) -> u64 {
        self.every_micros
    }

    /// The partitions due for a background write now (none in flight).
    pub(crate) fn due(&self, now: TimeMicros) -> Vec<PartitionId> {
        if self.every_micros == 0 {
            return Vec::new();
        }
        self.slots
            .iter()
            .filter(|(_, slot)| slot.writing.is_none() && now >= slot.due)
            .map(|(p, _)| *p)
            .collect()
    }

    /// A write of `partition` at `position` starts now; returns its
    /// number. A periodic one pushes the partition's next due time an
    /// interval on.
    pub(crate) fn begin(
        &mut self,
        partition: PartitionId,
        global_position: u64,
        position: &MergePosition,
        purpose: Purpose,
        now: TimeMicros,
    ) -> WriteId {
        let write = self.number();
        if purpose == Purpose::Periodic {
            if let Some(slot) = self.slots.get_mut(&partition) {
                slot.writing = Some(write);
                slot.due = now.plus(self.every_micros);
            }
        }
        self.in_flight.insert(
            write,
            InFlight {
                partition,
                global_position,
                lanes: lanes_of(position),
                purpose,
            },
        );
        write
    }

    /// A number for a removal (removals and writes share the sequence the
    /// runtime orders them by).
    pub(crate) fn number(&mut self) -> WriteId {
        let write = self.next_write;
        self.next_write += 1;
        write
    }

    /// Records a finished write; `None` for a write this checkpointer does
    /// not know (a stray report).
    pub(crate) fn finished(&mut self, write: WriteId, outcome: WriteOutcome) -> Option<Finished> {
        let done = self.in_flight.remove(&write)?;
        if let Some(slot) = self.slots.get_mut(&done.partition) {
            if slot.writing == Some(write) {
                slot.writing = None;
            }
            match &outcome {
                WriteOutcome::Written(bytes) => {
                    // A report may overtake an earlier write's report (a
                    // background write finishing after one written now):
                    // what is durable only moves forward.
                    let newer = slot.durable.as_ref().is_none_or(|(_, at)| *at < write);
                    if newer {
                        slot.durable = Some((done.lanes.clone(), write));
                        slot.stats.global_position = done.global_position;
                    }
                    slot.stats.written += 1;
                    slot.stats.bytes = *bytes;
                }
                WriteOutcome::Superseded => {}
                WriteOutcome::Failed(_) => slot.stats.failed += 1,
            }
        }
        Some(Finished {
            partition: done.partition,
            purpose: done.purpose,
            outcome,
        })
    }

    /// Whether `partition`'s durable checkpoint will do for an asker that
    /// holds the decisions from `at_least` on (non-disruptive recovery):
    /// it reaches every instance named, or nothing better will come
    /// (checkpoints are off, nothing is named, the partition is not
    /// checkpointed here).
    pub(crate) fn reaches(
        &self,
        partition: PartitionId,
        at_least: &[(StreamId, Instance)],
    ) -> bool {
        if self.every_micros == 0 || at_least.is_empty() {
            return true;
        }
        let Some(slot) = self.slots.get(&partition) else {
            return true;
        };
        slot.durable
            .as_ref()
            .is_some_and(|(lanes, _)| checkpoint_reaches(lanes.iter().copied(), at_least))
    }

    /// Whether `partition`'s durable checkpoint merges every stream
    /// `at_least` names (whatever instance it stands at): false before
    /// the fence that adds one of them (a move's new stream).
    pub(crate) fn merges_all(
        &self,
        partition: PartitionId,
        at_least: &[(StreamId, Instance)],
    ) -> bool {
        self.slots
            .get(&partition)
            .and_then(|slot| slot.durable.as_ref())
            .is_some_and(|(lanes, _)| {
                at_least
                    .iter()
                    .all(|(stream, _)| lanes.iter().any(|(s, _)| s == stream))
            })
    }

    /// Makes `partition`'s next background write due now (a peer asked
    /// for a newer checkpoint).
    pub(crate) fn write_soon(&mut self, partition: PartitionId, now: TimeMicros) {
        if let Some(slot) = self.slots.get_mut(&partition) {
            slot.due = slot.due.min(now);
        }
    }

    /// A replica now runs `partition` (split off at a fence, installed
    /// from a peer, or moved here and being fetched): it is checkpointed
    /// like the others. Until a write of it is reported done, this node
    /// holds nothing durable of it, so its safe instance of every stream
    /// is 0 (nothing it will need is trimmed meanwhile).
    pub(crate) fn track(&mut self, partition: PartitionId, now: TimeMicros) {
        let every = self.every_micros;
        self.slots
            .entry(partition)
            .or_insert_with(|| PartitionSlot {
                due: now.plus(every),
                ..PartitionSlot::default()
            });
    }

    /// A partition no longer here: no more checkpoints (a write in flight
    /// finishes and is ignored).
    pub(crate) fn removed(&mut self, partition: PartitionId) {
        self.slots.remove(&partition);
    }

    /// The partitions tracked.
    pub(crate) fn partitions(&self) -> impl Iterator<Item = PartitionId> + '_ {
        self.slots.keys().copied()
    }

    /// This node's safe instance of `stream` (thesis §3.4.2): the least
    /// first-unreflected instance over the durable checkpoints of the
    /// replicas here that subscribe to it; 0 if one of them has none (a
    /// partition without a durable checkpoint counts for every stream).
    /// `None` if no replica here subscribes to it.
    ///
    /// `merged_by_all`: every replica merges `stream` (the newest map's
    /// global stream), so one whose durable checkpoint does not merge it
    /// yet holds none of it (0): it has still to reach the fence where
    /// the global stream was replaced, and will merge the new one from
    /// its first instance. Each partition reaches that fence at its own
    /// pace: skipping such a replica let the node report the safe
    /// instance of its partitions past the fence, the new global stream
    /// was trimmed below what the others had yet to merge, and the whole
    /// order stopped (`amulet-sim --dmap --seed 9030800`).
    pub(crate) fn safe_instance(&self, stream: StreamId, merged_by_all: bool) -> Option<Instance> {
        let mut safe: Option<Instance> = None;
        for slot in self.slots.values() {
            let held = match &slot.durable {
                None => Instance(0),
                Some((lanes, _)) => match lanes.iter().find(|(s, _)| *s == stream) {
                    Some((_, next)) => *next,
                    None if merged_by_all => Instance(0),
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

#[cfg(test)]
mod tests {
    use super::*;
    use amulet_multicast::{LanePosition, LaneState};

    fn position(next: &[(u32, u64)]) -> MergePosition {
        MergePosition {
            lanes: next
                .iter()
                .map(|(s, n)| LanePosition {
                    stream: StreamId(*s),
                    next: Instance(*n),
                    carry: 0,
                    consumed: *n,
                    delivered: Default::default(),
                    state: LaneState::Active,
                    start: 0,
                })
                .collect(),
            turn: 0,
            remaining: 1,
            rounds: 0,
            waiting: None,
            completed: Default::default(),
            fence: None,
        }
    }

    #[test]
    fn thesis_3_4_2_the_safe_instance_moves_only_when_a_write_is_reported_done() {
        let p = PartitionId(1);
        let mut c = Checkpointer::new(1_000, [(p, 0, None)].into_iter(), TimeMicros(0));
        assert_eq!(c.safe_instance(StreamId(2), false), Some(Instance(0)));
        assert!(c.due(TimeMicros(999)).is_empty());
        assert_eq!(c.due(TimeMicros(1_000)), vec![p]);
        let write = c.begin(
            p,
            10,
            &position(&[(1, 10), (2, 40)]),
            Purpose::Periodic,
            TimeMicros(1_000),
        );
        assert!(c.due(TimeMicros(5_000)).is_empty(), "one write in flight");
        assert_eq!(c.safe_instance(StreamId(2), false), Some(Instance(0)));
        c.finished(write, WriteOutcome::Written(100));
        assert_eq!(c.safe_instance(StreamId(2), false), Some(Instance(40)));
        assert_eq!(c.safe_instance(StreamId(9), false), None);
        // A new global stream every replica merges once past its fence:
        // this one is not past it yet, so it holds none of it.
        assert_eq!(c.safe_instance(StreamId(9), true), Some(Instance(0)));
    }

    #[test]
    fn thesis_3_4_2_a_write_reported_after_a_later_one_does_not_move_durability_back() {
        let p = PartitionId(1);
        let mut c = Checkpointer::new(1_000, [(p, 0, None)].into_iter(), TimeMicros(0));
        let old = c.begin(
            p,
            5,
            &position(&[(2, 5)]),
            Purpose::Periodic,
            TimeMicros(1_000),
        );
        let new = c.begin(
            p,
            9,
            &position(&[(2, 9)]),
            Purpose::Absorb,
            TimeMicros(1_000),
        );
        c.finished(new, WriteOutcome::Written(1));
        c.finished(old, WriteOutcome::Written(1));
        assert_eq!(c.safe_instance(StreamId(2), false), Some(Instance(9)));
        assert!(c.due(TimeMicros(2_000)).contains(&p), "the old one ended");
    }

    #[test]
    fn thesis_3_4_4_an_older_checkpoint_makes_a_new_one_due_now() {
        let p = PartitionId(1);
        let mut c = Checkpointer::new(
            1_000_000,
            [(p, 0, Some(vec![(StreamId(2), Instance(50))]))].into_iter(),
            TimeMicros(0),
        );
        assert!(c.reaches(p, &[(StreamId(2), Instance(50))]));
        assert!(c.reaches(p, &[]), "nothing named: any will do");
        assert!(!c.reaches(p, &[(StreamId(2), Instance(51))]));
        assert!(c.merges_all(p, &[(StreamId(2), Instance(51))]));
        // A stream the checkpoint does not merge yet (a move's new one).
        assert!(!c.reaches(p, &[(StreamId(3), Instance(0))]));
        assert!(!c.merges_all(p, &[(StreamId(3), Instance(0))]));
        assert!(c.due(TimeMicros(7)).is_empty());
        c.write_soon(p, TimeMicros(7));
        assert_eq!(c.due(TimeMicros(7)), vec![p]);
    }
}
