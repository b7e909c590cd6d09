//! Reconfiguration at fences (thesis §4.7.4–4.7.5, DMap §III-C): a
//! group's merge stopped at a barrier's fence may change the streams it
//! merges, or be copied for a new group (a partition split off another),
//! before the subscriber releases it.

use super::MulticastNode;
use crate::group::GroupId;
use crate::lane::Lane;
use crate::merger::{LaneState, MergePosition, PositionError};
use amulet_types::{Instance, StreamId};

/// Why a group could not be reconfigured at its fence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReconfigureError {
    /// No such merge group here.
    NoGroup(GroupId),
    /// The group exists already.
    GroupExists(GroupId),
    /// The group's merge has not stopped at a fence (or values before it
    /// are not drained yet).
    NotFenced(GroupId),
    /// This node is not a member of the stream (or the copied group does
    /// not merge it).
    UnknownStream(StreamId),
    /// The group merges the stream already.
    AlreadyMerged(StreamId),
    /// The changed merge is not valid (no stream left in the rounds).
    Position(PositionError),
}

impl MulticastNode {
    /// The round `group`'s merge has stopped at for a barrier value, once
    /// every value before it was drained (see [`crate::Merger::fenced`]).
    pub fn fenced(&self, group: GroupId) -> Option<u64> {
        if self.effects.delivered.iter().any(|(g, _)| *g == group) {
            return None;
        }
        self.groups.get(&group)?.fenced()
    }

    /// Lets `group`'s merge go on past its fence and merges what it can.
    pub fn release_fence(&mut self, group: GroupId) {
        if let Some(merger) = self.groups.get_mut(&group) {
            merger.release_fence();
        }
        self.absorb();
    }

    /// Changes the streams `group` merges at the fence it stopped at
    /// (the merge stays stopped until [`MulticastNode::release_fence`]):
    /// `remove` leave it; each of `add` joins it at the fence's round,
    /// either from the stream's instance 0 (a stream created for this
    /// change, best with its `base_position` at the fence's round times
    /// M: what lies below that is not merged) or as a
    /// copy of the lane of another group of this node stopped at the same
    /// fence (a partition absorbing another's stream).
    pub fn reconfigure_at_fence(
        &mut self,
        group: GroupId,
        remove: &[StreamId],
        add: &[(StreamId, Option<GroupId>)],
    ) -> Result<(), ReconfigureError> {
        let fence = self
            .fenced(group)
            .ok_or(ReconfigureError::NotFenced(group))?;
        let lanes = self.lanes_to_add(fence, add)?;
        self.groups
            .get_mut(&group)
            .ok_or(ReconfigureError::NoGroup(group))?
            .reconfigure_lanes(remove, lanes)
            .map_err(ReconfigureError::Position)?;
        self.feed_lanes(|_, _| false);
        Ok(())
    }

    /// Creates group `new` at the fence `source` stopped at: a copy of
    /// `source`'s merge (what it holds undelivered included) with `remove`
    /// and `add` changed as in [`MulticastNode::reconfigure_at_fence`],
    /// itself not stopped (a partition split off another: the new
    /// partition's replica starts from the source replica's state at the
    /// same point). Returns the new merge's position at the fork, taken
    /// before it merges anything (the new replica's checkpoint goes with
    /// it).
    pub fn fork_at_fence(
        &mut self,
        source: GroupId,
        new: GroupId,
        remove: &[StreamId],
        add: &[(StreamId, Option<GroupId>)],
    ) -> Result<MergePosition, ReconfigureError> {
        if self.groups.contains_key(&new) {
            return Err(ReconfigureError::GroupExists(new));
        }
        let fence = self
            .fenced(source)
            .ok_or(ReconfigureError::NotFenced(source))?;
        let lanes = self.lanes_to_add(fence, add)?;
        let mut forked = self
            .groups
            .get(&source)
            .ok_or(ReconfigureError::NoGroup(source))?
            .fork(new);
        forked
            .reconfigure_lanes(remove, lanes)
            .map_err(ReconfigureError::Position)?;
        let position = forked
            .position()
            .expect("a merge forked at a fence is between deliveries");
        self.groups.insert(new, forked);
        self.feed_lanes(|_, _| false);
        self.absorb();
        Ok(position)
    }

    /// The lanes `add` names, joining at round `fence`.
    fn lanes_to_add(
        &self,
        fence: u64,
        add: &[(StreamId, Option<GroupId>)],
    ) -> Result<Vec<(StreamId, Lane)>, ReconfigureError> {
        let m = self.instances_per_round();
        let mut lanes = Vec::new();
        for (stream, from) in add {
            let Some(node) = self.streams.get(stream) else {
                return Err(ReconfigureError::UnknownStream(*stream));
            };
            let lane = match from {
                None => Lane::at(
                    Instance(0),
                    node.config().base_position,
                    Default::default(),
                    LaneState::Active,
                    fence.saturating_mul(m),
                ),
                Some(other) => {
                    let merger = self
                        .groups
                        .get(other)
                        .ok_or(ReconfigureError::NoGroup(*other))?;
                    if self.fenced(*other) != Some(fence) {
                        return Err(ReconfigureError::NotFenced(*other));
                    }
                    merger
                        .lane(*stream)
                        .filter(|l| l.state.in_rounds())
                        .cloned()
                        .ok_or(ReconfigureError::UnknownStream(*stream))?
                }
            };
            lanes.push((*stream, lane));
        }
        Ok(lanes)
    }
}
