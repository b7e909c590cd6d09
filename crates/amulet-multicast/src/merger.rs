//! The deterministic merge of decided streams (thesis §2.6, §3.3).
//!
//! Round-robin over the subscribed streams in stream-id order: each round
//! takes `instances_per_round` (M) instances from each stream. A
//! `Batch::Skip(k)` stands for `k` instances, so one decided instance can
//! let an idle stream keep pace with a busy one; a skip larger than what
//! is left of the stream's share in this round carries over to the next
//! rounds of the same stream. `Batch::Null` (decided by gap repair) counts
//! as one instance and delivers nothing.
//!
//! The merge position is a pure function of the per-stream instance
//! sequences, which consensus makes identical at every learner; that is
//! the whole argument for agreement on the merged order.

use amulet_paxos::Delivered;
use amulet_types::{Instance, StreamId};
use amulet_wire::{Batch, Value};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, VecDeque};

/// A value in the merged delivery order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Merged {
    /// Stream the value was multicast to.
    pub stream: StreamId,
    /// Instance of the stream that decided it.
    pub instance: Instance,
    /// The value.
    pub value: Value,
}

/// Deliberately wrong merges, for showing that the simulator's checkers
/// catch them. Never set outside tests.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum MergeBug {
    /// The correct merge.
    #[default]
    None,
    /// Counts a skip instance as one instance, whatever its count.
    IgnoreSkipCounts,
}

/// Where a merge stands, as a replica checkpoint records it (thesis
/// §3.4.2: a checkpoint is identified by the tuple of per-stream positions
/// it reflects): restored with [`Merger::from_position`] and fed each
/// stream from its `next` instance, a merge continues exactly as the
/// original would have.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MergePosition {
    /// One entry per merged stream, in stream-id (merge) order.
    pub lanes: Vec<LanePosition>,
    /// Index in `lanes` of the stream whose turn it is.
    pub turn: u32,
    /// Merge weight that stream may still consume this round (1..=M).
    pub remaining: u64,
    /// Completed rounds.
    pub rounds: u64,
}

/// One stream's part of a [`MergePosition`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LanePosition {
    /// The stream.
    pub stream: StreamId,
    /// The first instance not merged: everything below it is reflected.
    /// Acceptors may trim below it once a trim quorum holds it.
    pub next: Instance,
    /// Skip weight of merged skip instances not yet consumed by rounds.
    pub carry: u64,
    /// Merge weight consumed by rounds.
    pub consumed: u64,
    /// Ids of the values merged so far. A learner restarted at `next`
    /// has forgotten which values it delivered below it, so the merge
    /// filters a value decided a second time above the checkpoint.
    pub delivered: Delivered,
}

/// Why a [`MergePosition`] cannot be restored.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PositionError {
    /// No streams, or streams not strictly in id order.
    Streams,
    /// `turn` is not the index of a stream.
    Turn,
    /// `remaining` is not within 1..=M.
    Remaining,
}

/// Per-stream merge state.
#[derive(Debug, Default)]
struct Lane {
    /// Decided batches not yet merged, in instance order.
    queue: VecDeque<(Instance, Batch)>,
    /// The next instance expected from the stream.
    next: Instance,
    /// Skip weight decided but not yet consumed by rounds.
    carry: u64,
    /// Merge weight of every instance pushed (the stream's merge position).
    pushed: u64,
    /// Merge weight consumed by rounds.
    consumed: u64,
    /// Ids of the values merged (see [`LanePosition::delivered`]).
    delivered: Delivered,
}

/// Merges decided instances of several streams into one order.
#[derive(Debug)]
pub struct Merger {
    order: Vec<StreamId>,
    lanes: BTreeMap<StreamId, Lane>,
    instances_per_round: u64,
    /// Index in `order` of the stream whose turn it is.
    turn: usize,
    /// Merge weight the current stream may still consume this round.
    remaining: u64,
    ready: VecDeque<Merged>,
    bug: MergeBug,
    rounds: u64,
    merged_instances: u64,
}

impl Merger {
    /// A merge of `streams` (any order; merged in stream-id order), taking
    /// `instances_per_round` instances from each stream per round.
    pub fn new(mut streams: Vec<StreamId>, instances_per_round: u64) -> Merger {
        assert!(instances_per_round >= 1, "M must be at least 1");
        streams.sort();
        streams.dedup();
        let lanes = streams.iter().map(|s| (*s, Lane::default())).collect();
        Merger {
            order: streams,
            lanes,
            instances_per_round,
            turn: 0,
            remaining: instances_per_round,
            ready: VecDeque::new(),
            bug: MergeBug::None,
            rounds: 0,
            merged_instances: 0,
        }
    }

    /// The merge restored at `position` (a checkpoint), taking
    /// `instances_per_round` instances from each stream per round. Feed
    /// each stream from its lane's `next` instance.
    pub fn from_position(
        position: &MergePosition,
        instances_per_round: u64,
    ) -> Result<Merger, PositionError> {
        assert!(instances_per_round >= 1, "M must be at least 1");
        let order: Vec<StreamId> = position.lanes.iter().map(|l| l.stream).collect();
        if order.is_empty() || order.windows(2).any(|w| w[0] >= w[1]) {
            return Err(PositionError::Streams);
        }
        let turn = usize::try_from(position.turn).map_err(|_| PositionError::Turn)?;
        if turn >= order.len() {
            return Err(PositionError::Turn);
        }
        if position.remaining == 0 || position.remaining > instances_per_round {
            return Err(PositionError::Remaining);
        }
        let lanes = position
            .lanes
            .iter()
            .map(|l| {
                let lane = Lane {
                    queue: VecDeque::new(),
                    next: l.next,
                    carry: l.carry,
                    pushed: l.consumed.saturating_add(l.carry),
                    consumed: l.consumed,
                    delivered: l.delivered.clone(),
                };
                (l.stream, lane)
            })
            .collect();
        Ok(Merger {
            order,
            lanes,
            instances_per_round,
            turn,
            remaining: position.remaining,
            ready: VecDeque::new(),
            bug: MergeBug::None,
            rounds: position.rounds,
            merged_instances: 0,
        })
    }

    /// Where the merge stands, for a checkpoint; `None` while part of a
    /// merged batch is still to be popped (a checkpoint is taken between
    /// deliveries, after the application applied everything popped).
    pub fn position(&self) -> Option<MergePosition> {
        if !self.ready.is_empty() || self.order.is_empty() {
            return None;
        }
        let lanes = self
            .order
            .iter()
            .map(|stream| {
                let lane = &self.lanes[stream];
                LanePosition {
                    stream: *stream,
                    next: lane.next,
                    carry: lane.carry,
                    consumed: lane.consumed,
                    delivered: lane.delivered.clone(),
                }
            })
            .collect();
        Some(MergePosition {
            lanes,
            turn: u32::try_from(self.turn).expect("fewer than 2^32 streams"),
            remaining: self.remaining,
            rounds: self.rounds,
        })
    }

    /// Turns on a deliberately wrong merge (simulator tests only).
    pub fn set_bug(&mut self, bug: MergeBug) {
        self.bug = bug;
    }

    /// The merged streams, in merge order.
    pub fn streams(&self) -> &[StreamId] {
        &self.order
    }

    /// Completed rounds.
    pub fn rounds(&self) -> u64 {
        self.rounds
    }

    /// Instances consumed by the merge (all streams).
    pub fn merged_instances(&self) -> u64 {
        self.merged_instances
    }

    /// Merge weight of the instances of `stream` below its next instance
    /// (the learner's merge position at that instance).
    pub fn merged_weight(&self, stream: StreamId) -> Option<u64> {
        self.lanes
            .get(&stream)
            .map(|l| l.consumed.saturating_add(l.carry))
    }

    /// M: instances taken from each stream per round.
    pub fn instances_per_round(&self) -> u64 {
        self.instances_per_round
    }

    /// The next instance the merge expects from `stream`.
    pub fn next_instance(&self, stream: StreamId) -> Option<Instance> {
        self.lanes.get(&stream).map(|l| l.next)
    }

    /// The stream the merge is waiting on, if it is blocked.
    pub fn waiting_on(&self) -> Option<StreamId> {
        let stream = *self.order.get(self.turn)?;
        let lane = &self.lanes[&stream];
        (lane.carry == 0 && lane.queue.is_empty() && self.ready.is_empty()).then_some(stream)
    }

    /// Starts `stream` at `instance` (a learner recovering from a
    /// checkpoint). Only valid before anything of the stream was pushed.
    pub fn resume_at(&mut self, stream: StreamId, instance: Instance) {
        let lane = self
            .lanes
            .get_mut(&stream)
            .expect("resume of an unmerged stream");
        assert!(lane.queue.is_empty(), "resume after decisions were queued");
        lane.next = instance;
    }

    /// A decided instance of `stream`. Instances of a stream arrive in
    /// order without gaps (the learner guarantees it). Instances below a
    /// restored lane's `next` are already reflected and dropped: the
    /// stream's learner resumes at the lowest position of the groups that
    /// merge it.
    pub fn push(&mut self, stream: StreamId, instance: Instance, batch: Batch) {
        let Some(lane) = self.lanes.get_mut(&stream) else {
            return; // Not merged here (a stream this node only votes in).
        };
        let expected = lane.queue.back().map_or(lane.next, |(last, _)| last.next());
        if instance < expected {
            // Already merged or queued: a learner rewound for another
            // group on the node, or resumed below this restored lane.
            return;
        }
        assert_eq!(instance, expected, "stream {stream:?} decided out of order");
        lane.pushed = lane.pushed.saturating_add(batch.merge_weight());
        lane.queue.push_back((instance, batch));
    }

    /// The merge position `stream` must reach so that everything decided
    /// in the other streams can be merged, when the merge is blocked on
    /// `stream` and the others hold at least `threshold` weight beyond it;
    /// otherwise 0. Learners send it to the stream's coordinator (merge
    /// catch-up, see `StreamNode::set_merge_need`).
    pub fn need(&self, stream: StreamId, threshold: u64) -> u64 {
        if self.waiting_on() != Some(stream) {
            return 0;
        }
        let backlog = self
            .lanes
            .iter()
            .filter(|(id, _)| **id != stream)
            .map(|(_, lane)| lane.pushed - lane.consumed)
            .max()
            .unwrap_or(0);
        if backlog < threshold.max(1) {
            return 0;
        }
        self.lanes[&stream].pushed.saturating_add(backlog)
    }

    /// Consumes whole rounds in which every stream only skips, in one
    /// step: skips can be large (a stream that was far behind), and
    /// counting them down one round at a time would cost that many loops.
    fn skip_whole_rounds(&mut self) {
        if self.turn != 0 || self.remaining != self.instances_per_round {
            return;
        }
        let m = self.instances_per_round;
        let rounds = self.lanes.values().map(|l| l.carry / m).min().unwrap_or(0);
        if rounds == 0 {
            return;
        }
        for lane in self.lanes.values_mut() {
            lane.carry -= rounds * m;
            lane.consumed += rounds * m;
        }
        self.rounds += rounds;
    }

    /// The next merged value, if the merge can make progress.
    pub fn pop(&mut self) -> Option<Merged> {
        loop {
            if let Some(merged) = self.ready.pop_front() {
                return Some(merged);
            }
            if self.order.is_empty() {
                return None;
            }
            if self.bug == MergeBug::None {
                self.skip_whole_rounds();
            }
            let stream = self.order[self.turn];
            let lane = self
                .lanes
                .get_mut(&stream)
                .expect("lane of a merged stream");
            if lane.carry > 0 {
                let used = lane.carry.min(self.remaining);
                lane.carry -= used;
                lane.consumed += used;
                self.remaining -= used;
            } else {
                let (instance, batch) = lane.queue.pop_front()?;
                lane.next = instance.next();
                self.merged_instances += 1;
                match batch {
                    Batch::Values(values) => {
                        let delivered = &mut lane.delivered;
                        self.ready.extend(
                            values
                                .into_iter()
                                .filter(|value| delivered.insert(value.id))
                                .map(|value| Merged {
                                    stream,
                                    instance,
                                    value,
                                }),
                        );
                        self.remaining -= 1;
                        lane.consumed += 1;
                    }
                    Batch::Null => {
                        self.remaining -= 1;
                        lane.consumed += 1;
                    }
                    Batch::Skip(count) => {
                        lane.carry = match self.bug {
                            MergeBug::None => count,
                            MergeBug::IgnoreSkipCounts => 1,
                        };
                    }
                }
            }
            if self.remaining == 0 {
                self.turn += 1;
                if self.turn == self.order.len() {
                    self.turn = 0;
                    self.rounds += 1;
                }
                self.remaining = self.instances_per_round;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use amulet_types::ValueId;
    use bytes::Bytes;

    fn value(seq: u64) -> Batch {
        Batch::Values(vec![Value {
            id: ValueId {
                proposer: amulet_types::NodeId(1),
                incarnation: 0,
                sequence: seq,
            },
            bytes: Bytes::from(seq.to_le_bytes().to_vec()),
        }])
    }

    fn drain(m: &mut Merger) -> Vec<(u32, u64)> {
        std::iter::from_fn(|| m.pop())
            .map(|v| (v.stream.0, v.value.id.sequence))
            .collect()
    }

    #[test]
    fn section_2_6_round_robin_in_stream_id_order() {
        let mut m = Merger::new(vec![StreamId(2), StreamId(1)], 1);
        m.push(StreamId(2), Instance(0), value(20));
        assert!(drain(&mut m).is_empty(), "stream 1 goes first");
        assert_eq!(m.waiting_on(), Some(StreamId(1)));
        m.push(StreamId(1), Instance(0), value(10));
        m.push(StreamId(1), Instance(1), value(11));
        assert_eq!(drain(&mut m), vec![(1, 10), (2, 20), (1, 11)]);
        assert_eq!(m.waiting_on(), Some(StreamId(2)));
    }

    #[test]
    fn section_3_3_skip_counts_carry_across_rounds() {
        let mut m = Merger::new(vec![StreamId(1), StreamId(2)], 2);
        m.push(StreamId(2), Instance(0), Batch::Skip(5));
        for i in 0..6 {
            m.push(StreamId(1), Instance(i), value(i));
        }
        // Round 1: s1 0,1; s2 skip 2 of 5. Round 2: s1 2,3; s2 skip 2 of 3.
        // Round 3: s1 4,5; s2 skip 1 then blocks on its next instance.
        assert_eq!(
            drain(&mut m),
            vec![(1, 0), (1, 1), (1, 2), (1, 3), (1, 4), (1, 5)]
        );
        assert_eq!(m.waiting_on(), Some(StreamId(2)));
        m.push(StreamId(2), Instance(1), value(99));
        m.push(StreamId(1), Instance(6), value(6));
        assert_eq!(drain(&mut m), vec![(2, 99), (1, 6)]);
    }

    #[test]
    fn null_counts_as_one_instance() {
        let mut m = Merger::new(vec![StreamId(1), StreamId(2)], 1);
        m.push(StreamId(1), Instance(0), Batch::Null);
        m.push(StreamId(2), Instance(0), value(1));
        assert_eq!(drain(&mut m), vec![(2, 1)]);
    }

    #[test]
    fn broken_merge_ignoring_skip_counts_changes_the_order() {
        let run = |bug| {
            let mut m = Merger::new(vec![StreamId(1), StreamId(2)], 1);
            m.set_bug(bug);
            m.push(StreamId(2), Instance(0), Batch::Skip(3));
            m.push(StreamId(2), Instance(1), value(20));
            for i in 0..4 {
                m.push(StreamId(1), Instance(i), value(i));
            }
            drain(&mut m)
        };
        assert_ne!(run(MergeBug::None), run(MergeBug::IgnoreSkipCounts));
    }

    #[test]
    fn section_3_3_blocked_merge_states_the_position_it_needs() {
        let mut m = Merger::new(vec![StreamId(1), StreamId(2)], 1);
        m.push(StreamId(1), Instance(0), Batch::Skip(3));
        m.push(StreamId(2), Instance(0), Batch::Skip(1_000));
        assert!(drain(&mut m).is_empty());
        // Stream 1 is at position 3 and stream 2 holds 997 more than it
        // consumed: stream 1 must reach 3 + 997.
        assert_eq!(m.waiting_on(), Some(StreamId(1)));
        assert_eq!(m.need(StreamId(1), 10), 1_000);
        assert_eq!(m.need(StreamId(2), 10), 0, "not blocked on stream 2");
        assert_eq!(m.need(StreamId(1), 2_000), 0, "below the threshold");
        m.push(StreamId(1), Instance(1), Batch::Skip(997));
        m.push(StreamId(1), Instance(2), value(7));
        m.push(StreamId(2), Instance(1), value(8));
        assert_eq!(drain(&mut m), vec![(1, 7), (2, 8)]);
    }

    #[test]
    fn huge_skips_on_every_stream_merge_in_one_step() {
        let mut m = Merger::new(vec![StreamId(1), StreamId(2)], 1);
        m.push(StreamId(1), Instance(0), Batch::Skip(1 << 50));
        m.push(StreamId(2), Instance(0), Batch::Skip(1 << 50));
        m.push(StreamId(1), Instance(1), value(1));
        m.push(StreamId(2), Instance(1), value(2));
        // Would take 2^51 loop turns one round at a time.
        assert_eq!(drain(&mut m), vec![(1, 1), (2, 2)]);
        assert_eq!(m.rounds(), (1 << 50) + 1);
    }

    use proptest::prelude::*;

    /// A stream's decided sequence: values, nulls and skips of any size.
    fn batches() -> impl Strategy<Value = Vec<Batch>> {
        prop::collection::vec(
            prop_oneof![
                4 => (0u64..1_000_000).prop_map(value),
                1 => Just(Batch::Null),
                2 => (0u64..12).prop_map(Batch::Skip),
            ],
            0..40,
        )
    }

    /// Feeds `m` stream by stream in the given interleaving, popping all
    /// the time; returns what it popped.
    fn feed(
        m: &mut Merger,
        streams: &[Vec<Batch>],
        from: &[u64],
        schedule: &[usize],
    ) -> Vec<(u32, u64)> {
        let mut next: Vec<u64> = from.to_vec();
        let mut out = Vec::new();
        for &pick in schedule {
            let s = pick % streams.len();
            if let Some(batch) = streams[s].get(next[s] as usize) {
                m.push(StreamId(s as u32 + 1), Instance(next[s]), batch.clone());
                next[s] += 1;
            }
            out.extend(drain(m));
        }
        for (s, stream) in streams.iter().enumerate() {
            while let Some(batch) = stream.get(next[s] as usize) {
                m.push(StreamId(s as u32 + 1), Instance(next[s]), batch.clone());
                next[s] += 1;
            }
        }
        out.extend(drain(m));
        out
    }

    proptest! {
        #[test]
        fn section_3_4_2_a_merge_restored_from_its_position_continues_identically(
            streams in prop::collection::vec(batches(), 1..4),
            m in 1u64..4,
            schedule in prop::collection::vec(0usize..8, 0..200),
            cut in 0usize..200,
        ) {
            let ids: Vec<StreamId> = (1..=streams.len() as u32).map(StreamId).collect();
            let mut whole = Merger::new(ids.clone(), m);
            let expected = feed(&mut whole, &streams, &vec![0; streams.len()], &schedule);

            // The same merge, checkpointed after `cut` scheduling steps.
            let cut = cut.min(schedule.len());
            let mut first = Merger::new(ids, m);
            let mut got = Vec::new();
            let mut next = vec![0u64; streams.len()];
            for &pick in &schedule[..cut] {
                let s = pick % streams.len();
                if let Some(batch) = streams[s].get(next[s] as usize) {
                    first.push(StreamId(s as u32 + 1), Instance(next[s]), batch.clone());
                    next[s] += 1;
                }
                got.extend(drain(&mut first));
            }
            let position = first.position().expect("everything popped");
            let mut restored = Merger::from_position(&position, m).expect("valid position");
            prop_assert_eq!(restored.position(), Some(position.clone()));
            // Instances decided but not yet merged are fetched again.
            let from: Vec<u64> = position.lanes.iter().map(|l| l.next.0).collect();
            got.extend(feed(&mut restored, &streams, &from, &schedule[cut..]));
            prop_assert_eq!(got, expected);
        }
    }

    #[test]
    fn section_3_4_2_a_value_decided_on_both_sides_of_a_checkpoint_is_delivered_once() {
        // A proposer retried value 7: both copies won an instance, one
        // below the checkpoint and one above it. The restored learner has
        // forgotten the first; the merge position has not.
        let mut m = Merger::new(vec![StreamId(1)], 1);
        m.push(StreamId(1), Instance(0), value(7));
        assert_eq!(drain(&mut m), vec![(1, 7)]);
        let position = m.position().expect("everything popped");
        let mut restored = Merger::from_position(&position, 1).expect("valid");
        // The learner resumes lower than this lane (another group needed
        // instance 0 again): what the lane reflects is dropped.
        restored.push(StreamId(1), Instance(0), value(7));
        restored.push(StreamId(1), Instance(1), value(7));
        restored.push(StreamId(1), Instance(2), value(8));
        assert_eq!(drain(&mut restored), vec![(1, 8)]);
        assert_eq!(restored.next_instance(StreamId(1)), Some(Instance(3)));
    }

    #[test]
    fn section_3_4_2_invalid_positions_are_refused() {
        let lane = |s| LanePosition {
            stream: StreamId(s),
            next: Instance(0),
            carry: 0,
            consumed: 0,
            delivered: Delivered::default(),
        };
        let good = MergePosition {
            lanes: vec![lane(1), lane(2)],
            turn: 1,
            remaining: 2,
            rounds: 0,
        };
        assert!(Merger::from_position(&good, 2).is_ok());
        let bad = |f: fn(&mut MergePosition)| {
            let mut p = good.clone();
            f(&mut p);
            Merger::from_position(&p, 2).err()
        };
        assert_eq!(bad(|p| p.lanes.clear()), Some(PositionError::Streams));
        assert_eq!(bad(|p| p.lanes.swap(0, 1)), Some(PositionError::Streams));
        assert_eq!(bad(|p| p.turn = 2), Some(PositionError::Turn));
        assert_eq!(bad(|p| p.remaining = 0), Some(PositionError::Remaining));
        assert_eq!(bad(|p| p.remaining = 3), Some(PositionError::Remaining));
    }
}
