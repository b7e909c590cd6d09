//! Barriers and fences (thesis §4.7.4–4.7.5, DMap §III-C): a merged
//! [`amulet_wire::ValueKind::Barrier`] value stops the merge at the start
//! of the next round, the fence, until the subscriber releases it. At the
//! fence, with everything before it delivered, the set of merged streams
//! may change ([`Merger::reconfigure`]) or the merge may be copied for a
//! new subscriber ([`Merger::fork`]: a partition split off another).

use super::{LanePosition, Merger, PositionError};
use crate::group::GroupId;
use crate::lane::Lane;
use amulet_types::StreamId;
use std::collections::VecDeque;

impl Merger {
    /// The round the merge has stopped at for a barrier (see
    /// [`amulet_wire::ValueKind::Barrier`]): everything before the round
    /// is merged and popped, nothing of it is. `None` while the merge may
    /// go on.
    pub fn fenced(&self) -> Option<u64> {
        let fence = self.fence?;
        (self.ready.is_empty() && self.at_boundary() && self.rounds >= fence).then_some(fence)
    }

    /// The round a merged barrier will stop the merge at, if any.
    pub fn fence(&self) -> Option<u64> {
        self.fence
    }

    /// Lets a merge stopped at a barrier's fence go on (the subscriber
    /// has reconfigured what the barrier asked for).
    pub fn release_fence(&mut self) {
        self.fence = None;
        self.debug_check_invariants(self.rounds);
    }

    /// A copy of this merge for another group, not stopped at any fence
    /// (a partition split off at a fence starts from its source's merge,
    /// the instances decided but not yet merged included).
    pub fn fork(&self, group: GroupId) -> Merger {
        assert!(self.ready.is_empty(), "fork between deliveries");
        let forked = Merger {
            group,
            order: self.order.clone(),
            lanes: self.lanes.clone(),
            instances_per_round: self.instances_per_round,
            turn: self.turn,
            remaining: self.remaining,
            ready: VecDeque::new(),
            bug: self.bug,
            rounds: self.rounds,
            merged_instances: 0,
            waiting: self.waiting,
            completed: self.completed.clone(),
            events: Vec::new(),
            unreadable_controls: 0,
            lanes_added: false,
            fence: None,
        };
        forked.debug_check_invariants(self.rounds);
        forked
    }

    /// Changes the merged streams at a round boundary (a fence): `remove`
    /// leave now, `add` (lane positions, from instance `next`) join now;
    /// the other lanes keep what they hold. Fails, changing nothing, if
    /// the merge is not at a round boundary with everything popped, a
    /// stream to add is merged already, or no stream would be left.
    pub fn reconfigure(
        &mut self,
        remove: &[StreamId],
        add: Vec<LanePosition>,
    ) -> Result<(), PositionError> {
        self.reconfigure_lanes(
            remove,
            add.into_iter().map(|l| (l.stream, l.into_lane())).collect(),
        )
    }

    /// [`Merger::reconfigure`] with the lanes themselves (copies of
    /// another merge's lanes keep what they hold). Also fails, changing
    /// nothing, if a lane added does not stand where the merge does (at
    /// the round, or below its merge point there) or names the stream a
    /// subscription waits for.
    pub(crate) fn reconfigure_lanes(
        &mut self,
        remove: &[StreamId],
        add: Vec<(StreamId, Lane)>,
    ) -> Result<(), PositionError> {
        if !self.ready.is_empty() || !self.at_boundary() {
            return Err(PositionError::Turn);
        }
        let mut lanes = self.lanes.clone();
        for stream in remove {
            lanes.remove(stream);
        }
        for (stream, lane) in add {
            if lanes.insert(stream, lane).is_some() {
                return Err(PositionError::Streams);
            }
        }
        let order: Vec<StreamId> = lanes
            .iter()
            .filter(|(_, l)| l.state.in_rounds())
            .map(|(s, _)| *s)
            .collect();
        if order.is_empty() {
            return Err(PositionError::Streams);
        }
        let lanes = std::mem::replace(&mut self.lanes, lanes);
        let order = std::mem::replace(&mut self.order, order);
        let turn = std::mem::replace(&mut self.turn, 0);
        if self.invariant_violation().is_err() {
            // A lane that does not stand where the merge does would be
            // ordered against the others unlike in any other merge.
            self.lanes = lanes;
            self.order = order;
            self.turn = turn;
            return Err(PositionError::Streams);
        }
        self.lanes_added = true;
        self.debug_check_invariants(self.rounds);
        Ok(())
    }
}
