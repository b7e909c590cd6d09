//! The round-robin merge itself (thesis §2.6, §3.3): decided instances
//! are pushed into their stream's lane; [`Merger::pop`] takes M merge
//! weight of each stream in the rounds per round, in stream-id order. A
//! skip's weight beyond the stream's share of a round carries into its
//! next rounds; whole rounds in which every stream only skips are taken
//! in one step. A merge blocked on one stream states the position it
//! needs that stream to reach (merge catch-up).

use super::{MergeBug, Merged, Merger, SubscriptionEvent};
use crate::lane::{LaneState, FOUND_HELD_MAX};
use amulet_types::{Instance, StreamId};
use amulet_wire::{Batch, ValueKind};

impl Merger {
    /// The instance of `stream` the merge expects to be pushed next, and
    /// the stream's position there. A learner further on must go back to
    /// it (a lane recovering the stream from its start).
    pub fn expects(&self, stream: StreamId) -> Option<(Instance, u64)> {
        self.lanes.get(&stream).map(|l| (l.expected(), l.pushed))
    }

    /// The stream the merge is waiting on, if it is blocked on one (not
    /// while it waits for a subscription's copy).
    pub fn waiting_on(&self) -> Option<StreamId> {
        if self.waiting.is_some() || !self.ready.is_empty() {
            return None;
        }
        let stream = *self.order.get(self.turn)?;
        let lane = &self.lanes[&stream];
        (lane.carry == 0 && lane.queue.is_empty()).then_some(stream)
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
        self.debug_check_invariants(self.rounds);
    }

    /// A decided instance of `stream`. Instances of a stream arrive in
    /// order without gaps (the learner guarantees it). Instances below
    /// what a lane expects are already reflected and dropped: the stream's
    /// learner resumes at the lowest position of the groups that merge it.
    pub fn push(&mut self, stream: StreamId, instance: Instance, batch: Batch) {
        let group = self.group;
        let m = self.instances_per_round;
        let Some(lane) = self.lanes.get_mut(&stream) else {
            return; // Not merged here (a stream this node only votes in).
        };
        lane.push(group, m, instance, batch);
        if matches!(lane.state, LaneState::Found { .. }) && lane.queue.len() > FOUND_HELD_MAX {
            // The request's other copy has not come in a long while (its
            // proposer may have crashed): give the lane up rather than
            // hold the stream; a copy merged later starts a new scan.
            self.lanes.remove(&stream);
        }
        self.debug_check_invariants(self.rounds);
    }

    /// The merge position `stream` must reach so that everything decided
    /// in the other streams can be merged, when the merge is blocked on
    /// `stream` and the others hold at least `threshold` weight beyond it;
    /// otherwise 0. Learners send it to the stream's coordinator (merge
    /// catch-up, see `StreamNode::set_merge_need`). Positions are absolute,
    /// so a stream joining the merge counts like the others.
    pub fn need(&self, stream: StreamId, threshold: u64) -> u64 {
        if self.waiting_on() != Some(stream) {
            return 0;
        }
        let mine = self.lanes[&stream].pushed.max(self.lanes[&stream].start);
        let most = self
            .lanes
            .iter()
            .filter(|(id, lane)| {
                **id != stream
                    && (lane.state.in_rounds() || matches!(lane.state, LaneState::Joining { .. }))
            })
            .map(|(_, lane)| lane.pushed)
            .max()
            .unwrap_or(0);
        if most < mine.saturating_add(threshold.max(1)) {
            return 0;
        }
        most
    }

    /// Whether a lane other than `stream` holds decided values the merge
    /// has not reached: a merge waiting on `stream` then holds values back
    /// (not only skip weight, which nobody waits for).
    pub fn holds_values_beyond(&self, stream: StreamId) -> bool {
        self.lanes.iter().any(|(id, lane)| {
            *id != stream
                && lane
                    .queue
                    .iter()
                    .any(|(_, batch)| matches!(batch, Batch::Values(values) if !values.is_empty()))
        })
    }

    /// The first round at which the set of streams in the rounds changes
    /// or the merge stops at a fence.
    pub(super) fn next_change(&self) -> u64 {
        self.lanes
            .values()
            .filter_map(|lane| match lane.state {
                LaneState::Joining { round } => Some(round),
                LaneState::Leaving { last_round } => Some(last_round.saturating_add(1)),
                _ => None,
            })
            .chain(self.fence)
            .min()
            .unwrap_or(u64::MAX)
    }

    /// Consumes whole rounds in which every stream only skips, in one
    /// step: skips can be large (a stream that was far behind), and
    /// counting them down one round at a time would cost that many loops.
    /// Never past a round where a stream joins or leaves.
    fn skip_whole_rounds(&mut self) {
        if !self.at_boundary() {
            return;
        }
        let m = self.instances_per_round;
        let skippable = self
            .order
            .iter()
            .map(|s| self.lanes[s].carry / m)
            .min()
            .unwrap_or(0);
        let rounds = skippable.min(self.next_change().saturating_sub(self.rounds));
        if rounds == 0 {
            return;
        }
        for stream in &self.order {
            let lane = self.lanes.get_mut(stream).expect("lane in the rounds");
            lane.carry -= rounds * m;
            lane.consumed += rounds * m;
        }
        self.rounds += rounds;
        self.begin_round();
    }

    /// At a round boundary: streams whose last round is over leave, the
    /// streams whose merge point has come join.
    pub(super) fn begin_round(&mut self) {
        let rounds = self.rounds;
        let leaving: Vec<StreamId> = self
            .lanes
            .iter()
            .filter(|(_, l)| matches!(l.state, LaneState::Leaving { last_round } if last_round < rounds))
            .map(|(s, _)| *s)
            .collect();
        for stream in leaving {
            self.lanes.remove(&stream);
            self.events.push(SubscriptionEvent::Left {
                stream,
                round: rounds,
            });
        }
        for (stream, lane) in self.lanes.iter_mut() {
            if let LaneState::Joining { round } = lane.state {
                if round <= rounds {
                    lane.state = LaneState::Active;
                    self.events.push(SubscriptionEvent::Joined {
                        stream: *stream,
                        round: rounds,
                    });
                }
            }
        }
        self.order = self
            .lanes
            .iter()
            .filter(|(_, l)| l.state.in_rounds())
            .map(|(s, _)| *s)
            .collect();
        self.turn = 0;
        self.remaining = self.instances_per_round;
        // Kept on in production: a stream entering a round at another
        // position than every other stream's would be ordered against
        // them differently here than in every other merge of it, which
        // nothing downstream could notice. O(streams) once per round.
        if let Err(broken) = self.rounds_aligned() {
            panic!("merge of group {}: {broken}", self.group);
        }
    }

    /// The next merged value, if the merge can make progress.
    pub fn pop(&mut self) -> Option<Merged> {
        let rounds_before = self.rounds;
        let merged = self.pop_unchecked();
        self.debug_check_invariants(rounds_before);
        merged
    }

    fn pop_unchecked(&mut self) -> Option<Merged> {
        loop {
            if let Some(merged) = self.ready.pop_front() {
                return Some(merged);
            }
            if !self.resolve_waiting() {
                return None;
            }
            if self.fenced().is_some() {
                return None;
            }
            if self.order.is_empty() {
                // Every stream left or none joined yet: the next round
                // that has one.
                let next = self.next_change();
                if next == u64::MAX {
                    return None;
                }
                self.rounds = self.rounds.max(next);
                self.begin_round();
                continue;
            }
            if self.bug != MergeBug::IgnoreSkipCounts {
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
                // Kept on in production: merging an instance other than
                // the lane's next, or one below the stream's merge point,
                // would deliver a different order than other learners.
                assert!(
                    instance == lane.next && lane.consumed >= lane.start,
                    "merge of group {}: stream {stream:?} merges instance {instance:?} \
                     (expected {:?}) at position {} (merge point {})",
                    self.group,
                    lane.next,
                    lane.consumed,
                    lane.start
                );
                lane.next = instance.next();
                self.merged_instances += 1;
                match batch {
                    Batch::Values(values) => {
                        self.remaining -= 1;
                        lane.consumed += 1;
                        let mut controls = Vec::new();
                        for value in values {
                            if !lane.delivered.insert(value.id) {
                                continue;
                            }
                            match value.kind {
                                ValueKind::Application => self.ready.push_back(Merged {
                                    stream,
                                    instance,
                                    value,
                                }),
                                ValueKind::Barrier => {
                                    let next = self.rounds + 1;
                                    self.fence = Some(self.fence.map_or(next, |f| f.min(next)));
                                    self.ready.push_back(Merged {
                                        stream,
                                        instance,
                                        value,
                                    });
                                }
                                ValueKind::Control => controls.push(value.bytes),
                            }
                        }
                        for bytes in controls {
                            self.on_control(&bytes);
                        }
                    }
                    Batch::Null => {
                        self.remaining -= 1;
                        lane.consumed += 1;
                    }
                    Batch::Skip(count) => {
                        lane.carry = match self.bug {
                            MergeBug::IgnoreSkipCounts => 1,
                            _ => count,
                        };
                    }
                }
            }
            if self.remaining == 0 {
                self.turn += 1;
                self.remaining = self.instances_per_round;
                if self.turn == self.order.len() {
                    self.turn = 0;
                    self.rounds += 1;
                    self.begin_round();
                }
            }
        }
    }
}
