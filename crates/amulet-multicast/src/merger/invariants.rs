//! What holds of a merge between any two calls. Checked after every
//! mutating call in debug builds, by [`Merger::check_invariants`] on
//! demand (the simulator, after every step), and on every restored or
//! reconfigured position. Every check is O(lanes): nothing here walks a
//! lane's queue or its delivered ids.
//!
//! The central one is alignment (`lane.rs`): round `r` takes merge
//! weight `r*M .. (r+1)*M` of every stream in it, so every merge of a
//! stream orders its values against any other stream's alike. A lane in
//! the rounds therefore stands exactly where the round and the turn say,
//! or has not been fed up to its merge point yet (then nothing of it is
//! held, and the merge point is where it would stand).

use super::{MergeBug, Merger};
use crate::lane::{Lane, LaneState, FOUND_HELD_MAX};
use amulet_types::StreamId;

/// Returns from the enclosing function with a message naming the
/// invariant and the values that break it, unless `$holds`.
macro_rules! ensure {
    ($holds:expr, $invariant:literal, $($values:tt)+) => {
        if !$holds {
            return Err(format!(
                "merge invariant `{}` broken: {}",
                $invariant,
                format_args!($($values)+)
            ));
        }
    };
}

impl Merger {
    /// Panics, naming the invariant and the values, if the merge is not
    /// in a state a correct merge can be in: the streams in the rounds
    /// are exactly the lanes in the rounds, in stream-id order; the turn
    /// lies among them and its remaining weight in 1..=M; every lane's
    /// queue runs on from its next instance without gaps, it holds no
    /// more weight than was pushed, and nothing below its merge point
    /// unless it is still being fed up to it; every lane in the rounds
    /// stands where the round says (alignment); a subscription waits for
    /// a lane still looking for its copy; a fence lies at the current or
    /// the next round. O(lanes).
    pub fn check_invariants(&self) {
        if let Err(broken) = self.invariant_violation() {
            panic!("merge of group {}: {broken}", self.group);
        }
    }

    /// In debug builds, after a mutating call: the invariants, and that
    /// rounds never go back (`rounds_before` is the count before the call).
    pub(super) fn debug_check_invariants(&self, rounds_before: u64) {
        if cfg!(debug_assertions) {
            assert!(
                self.rounds >= rounds_before,
                "merge of group {}: merge invariant `rounds are monotone` broken: {} after {}",
                self.group,
                self.rounds,
                rounds_before
            );
            self.check_invariants();
        }
    }

    /// The first invariant broken, described.
    pub(super) fn invariant_violation(&self) -> Result<(), String> {
        let m = self.instances_per_round;
        ensure!(m >= 1, "M is at least 1", "M = {m}");
        let in_rounds = self.lanes.iter().filter(|(_, l)| l.state.in_rounds());
        ensure!(
            self.order
                .iter()
                .copied()
                .eq(in_rounds.clone().map(|(s, _)| *s)),
            "the streams in the rounds are the lanes in the rounds",
            "order {:?}, lanes in the rounds {:?}",
            self.order,
            in_rounds.map(|(s, _)| *s).collect::<Vec<_>>()
        );
        if self.order.is_empty() {
            ensure!(
                self.at_boundary(),
                "a merge without streams in the rounds stands at a round's start",
                "turn {}, remaining {} of M = {m}",
                self.turn,
                self.remaining
            );
        } else {
            ensure!(
                self.turn < self.order.len(),
                "the turn lies within the rounds",
                "turn {}, {} streams in the rounds",
                self.turn,
                self.order.len()
            );
        }
        ensure!(
            (1..=m).contains(&self.remaining),
            "the turn's remaining weight is in 1..=M",
            "remaining {}, M = {m}",
            self.remaining
        );
        for (stream, lane) in &self.lanes {
            self.lane_violation(*stream, lane)?;
        }
        self.rounds_aligned()?;
        if let Some(pending) = self.waiting {
            // The merge stops right after merging the request's copy, in
            // round `pending.round`, and at worst finishes that round.
            ensure!(
                pending.round <= self.rounds && self.rounds - pending.round <= 1,
                "a merge waiting for a subscription stopped in its round",
                "waiting since round {}, at round {}",
                pending.round,
                self.rounds
            );
            // The lane may be gone (given up holding too much; the next
            // pop scans again), never merged or joining.
            let state = self.lanes.get(&pending.stream).map(|l| l.state);
            let looks_for_copy = match state {
                None => true,
                Some(LaneState::Scanning { request } | LaneState::Found { request, .. }) => {
                    request == pending.request
                }
                Some(_) => false,
            };
            ensure!(
                looks_for_copy,
                "a waiting subscription's lane looks for its copy",
                "waiting for {:?} of {:?}, lane {state:?}",
                pending.request,
                pending.stream
            );
        }
        if let Some(fence) = self.fence {
            // Set to the round after a barrier's; the merge stops there.
            let fenced_at_start = fence > self.rounds || self.at_boundary();
            ensure!(
                self.rounds <= fence && fence - self.rounds <= 1 && fenced_at_start,
                "a fence lies at the start of this round or the next",
                "fence {fence}, round {}, turn {}, remaining {}",
                self.rounds,
                self.turn,
                self.remaining
            );
        }
        Ok(())
    }

    /// One lane's own consistency, and its place in a subscription's life.
    fn lane_violation(&self, stream: StreamId, lane: &Lane) -> Result<(), String> {
        let m = self.instances_per_round;
        if let (Some((first, _)), Some((last, _))) = (lane.queue.front(), lane.queue.back()) {
            let len = lane.queue.len() as u64;
            ensure!(
                *first == lane.next && last.0.checked_sub(first.0) == Some(len - 1),
                "a lane's queue runs on from its next instance without gaps",
                "{stream:?}: next {:?}, queue {:?}..={:?} of {len}",
                lane.next,
                first,
                last
            );
        }
        ensure!(
            lane.consumed.saturating_add(lane.carry) <= lane.pushed,
            "a lane consumed and carries no more than was pushed",
            "{stream:?}: consumed {} + carry {} > pushed {}",
            lane.consumed,
            lane.carry,
            lane.pushed
        );
        ensure!(
            lane.consumed >= lane.start || (lane.carry == 0 && lane.queue.is_empty()),
            "a lane holds nothing below its merge point",
            "{stream:?}: consumed {} below start {} with carry {} and {} queued",
            lane.consumed,
            lane.start,
            lane.carry,
            lane.queue.len()
        );
        let merge_point_on_time = self.bug != MergeBug::MergePointFromNewStreamOnly;
        match lane.state {
            LaneState::Active => {}
            LaneState::Leaving { last_round } => ensure!(
                last_round >= self.rounds,
                "a leaving stream leaves at the end of its last round",
                "{stream:?}: last round {last_round}, at round {}",
                self.rounds
            ),
            LaneState::Scanning { .. } => ensure!(
                lane.start == u64::MAX,
                "a scanning lane merges nothing",
                "{stream:?}: start {}",
                lane.start
            ),
            LaneState::Found { copy_round, .. } => {
                ensure!(
                    lane.start == (copy_round + 1).saturating_mul(m) && lane.consumed <= lane.start,
                    "a found lane keeps what lies after its copy's round",
                    "{stream:?}: copy in round {copy_round}, start {}, consumed {}, M = {m}",
                    lane.start,
                    lane.consumed
                );
                ensure!(
                    lane.queue.len() <= FOUND_HELD_MAX,
                    "a found lane holds a bounded queue",
                    "{stream:?}: {} queued",
                    lane.queue.len()
                );
            }
            LaneState::Joining { round } => ensure!(
                lane.start == round.saturating_mul(m)
                    && lane.consumed <= lane.start
                    && (round > self.rounds || !merge_point_on_time),
                "a joining lane waits at its merge point, ahead of the merge",
                "{stream:?}: joins at round {round} (start {}, consumed {}), at round {}",
                lane.start,
                lane.consumed,
                self.rounds
            ),
        }
        Ok(())
    }

    /// Alignment: every lane in the rounds stands at the merge weight the
    /// round and the turn give it (streams before the turn have taken
    /// this round's M, the turn's stream M minus what remains, the others
    /// nothing yet), or is still being fed up to a merge point that lies
    /// exactly there. A deliberately late merge point
    /// ([`MergeBug::MergePointFromNewStreamOnly`]) breaks it on purpose:
    /// the simulator's checkers must catch that, not this.
    pub(super) fn rounds_aligned(&self) -> Result<(), String> {
        if self.bug == MergeBug::MergePointFromNewStreamOnly {
            return Ok(());
        }
        let m = u128::from(self.instances_per_round);
        let round_start = u128::from(self.rounds) * m;
        for (index, stream) in self.order.iter().enumerate() {
            let lane = &self.lanes[stream];
            let expected = match index.cmp(&self.turn) {
                std::cmp::Ordering::Less => round_start + m,
                std::cmp::Ordering::Equal => round_start + m - u128::from(self.remaining),
                std::cmp::Ordering::Greater => round_start,
            };
            let consumed = u128::from(lane.consumed);
            let unfed = consumed < u128::from(lane.start) && u128::from(lane.start) == expected;
            ensure!(
                consumed == expected || unfed,
                "every stream in the rounds stands where the round says",
                "{stream:?} at position {} (merge point {}), expected {expected} \
                 in round {} (turn {}, remaining {}, M = {m})",
                lane.consumed,
                lane.start,
                self.rounds,
                self.turn,
                self.remaining
            );
        }
        Ok(())
    }
}
