//! Where a merge stands, as a replica checkpoint records it (thesis
//! §3.4.2: a checkpoint is identified by the tuple of per-stream
//! positions it reflects), and the merge restored from it.

use super::{Merger, PendingJoin};
use crate::group::GroupId;
use crate::lane::{Lane, LaneState};
use amulet_paxos::Delivered;
use amulet_types::{Instance, StreamId, ValueId};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeSet, VecDeque};

/// Where a merge stands, as a replica checkpoint records it (thesis
/// §3.4.2: a checkpoint is identified by the tuple of per-stream positions
/// it reflects): restored with [`Merger::from_position`] and fed each
/// stream from its `next` instance, a merge continues exactly as the
/// original would have, subscriptions in progress included.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MergePosition {
    /// One entry per lane, in stream-id order.
    pub lanes: Vec<LanePosition>,
    /// Index, among the lanes in the rounds, of the stream whose turn it is.
    pub turn: u32,
    /// Merge weight that stream may still consume this round (1..=M).
    pub remaining: u64,
    /// Completed rounds.
    pub rounds: u64,
    /// The subscription the merge waits for, if any.
    pub waiting: Option<PendingJoin>,
    /// Subscribe and unsubscribe requests that took effect (a re-broadcast
    /// copy of one of them is ignored).
    pub completed: BTreeSet<ValueId>,
    /// The round at whose start the merge stops for a barrier value
    /// merged before it, until the subscriber releases it.
    pub fence: Option<u64>,
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
    /// Merge weight consumed by rounds (or dropped before the merge point).
    pub consumed: u64,
    /// Ids of the values merged so far. A learner restarted at `next`
    /// has forgotten which values it delivered below it, so the merge
    /// filters a value decided a second time above the checkpoint.
    pub delivered: Delivered,
    /// Where the lane stands in a subscription's life.
    pub state: LaneState,
    /// Position below which the lane drops what it is fed.
    pub start: u64,
}

impl LanePosition {
    /// The lane standing here, with nothing queued: fed from `next`.
    pub(super) fn into_lane(self) -> Lane {
        let mut lane = Lane::at(
            self.next,
            self.consumed,
            self.delivered,
            self.state,
            self.start,
        );
        lane.carry = self.carry;
        lane.pushed = self.consumed.saturating_add(self.carry);
        lane
    }
}

/// Why a [`MergePosition`] cannot be restored.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PositionError {
    /// No lane in the rounds, lanes not strictly in stream-id order, or
    /// lanes where no merge can stand (see [`Merger::check_invariants`]).
    Streams,
    /// `turn` is not the index of a stream in the rounds.
    Turn,
    /// `remaining` is not within 1..=M.
    Remaining,
}

impl Merger {
    /// The merge of `group` restored at `position` (a checkpoint), taking
    /// `instances_per_round` instances from each stream per round. Feed
    /// each stream from its lane's `next` instance.
    pub fn from_position(
        group: GroupId,
        position: &MergePosition,
        instances_per_round: u64,
    ) -> Result<Merger, PositionError> {
        assert!(instances_per_round >= 1, "M must be at least 1");
        let streams: Vec<StreamId> = position.lanes.iter().map(|l| l.stream).collect();
        if streams.windows(2).any(|w| w[0] >= w[1]) {
            return Err(PositionError::Streams);
        }
        let order: Vec<StreamId> = position
            .lanes
            .iter()
            .filter(|l| l.state.in_rounds())
            .map(|l| l.stream)
            .collect();
        if order.is_empty() {
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
            .map(|l| (l.stream, l.clone().into_lane()))
            .collect();
        let merger = Merger {
            group,
            order,
            lanes,
            instances_per_round,
            turn,
            remaining: position.remaining,
            ready: VecDeque::new(),
            bug: super::MergeBug::None,
            rounds: position.rounds,
            merged_instances: 0,
            waiting: position.waiting,
            completed: position.completed.clone(),
            events: Vec::new(),
            unreadable_controls: 0,
            lanes_added: false,
            // A checkpoint taken after a barrier was delivered and before
            // its fence's work was done must stop at that fence again.
            fence: position.fence,
        };
        // A position comes from a checkpoint, possibly a peer's: one no
        // merge can stand at is refused, not merged from.
        merger
            .invariant_violation()
            .map_err(|_| PositionError::Streams)?;
        Ok(merger)
    }

    /// Where the merge stands, for a checkpoint; `None` while part of a
    /// merged batch is still to be popped (a checkpoint is taken between
    /// deliveries, after the application applied everything popped).
    pub fn position(&self) -> Option<MergePosition> {
        if !self.ready.is_empty() || self.order.is_empty() {
            return None;
        }
        let lanes = self
            .lanes
            .iter()
            .map(|(stream, lane)| LanePosition {
                stream: *stream,
                next: lane.next,
                carry: lane.carry,
                consumed: lane.consumed,
                delivered: lane.delivered.clone(),
                state: lane.state,
                start: lane.start,
            })
            .collect();
        Some(MergePosition {
            lanes,
            turn: u32::try_from(self.turn).expect("fewer than 2^32 streams"),
            remaining: self.remaining,
            rounds: self.rounds,
            waiting: self.waiting,
            completed: self.completed.clone(),
            fence: self.fence,
        })
    }
}
