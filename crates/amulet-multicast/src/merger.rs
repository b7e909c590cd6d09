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

use amulet_types::{Instance, StreamId};
use amulet_wire::{Batch, Value};
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
    /// order without gaps (the learner guarantees it).
    pub fn push(&mut self, stream: StreamId, instance: Instance, batch: Batch) {
        let Some(lane) = self.lanes.get_mut(&stream) else {
            return; // Not merged here (a stream this node only votes in).
        };
        let expected = lane.queue.back().map_or(lane.next, |(last, _)| last.next());
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
                        self.ready.extend(values.into_iter().map(|value| Merged {
                            stream,
                            instance,
                            value,
                        }));
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
}
