//! A node's streams and merge groups (thesis §3.4.2): which streams the
//! node is a member of, which subscribers merge which of them, each
//! group's merge restored from or added at a checkpoint, and the
//! learners moved to feed exactly what the groups' lanes expect.

use super::{MulticastError, MulticastNode};
use crate::group::GroupId;
use crate::merger::{MergePosition, Merger, PositionError};
use amulet_paxos::StreamNode;
use amulet_storage::AcceptorLog;
use amulet_types::{Instance, StreamConfig, StreamId, TimeMicros};

impl MulticastNode {
    /// One merge group's merge, for its position and counters.
    pub fn merger(&self, group: GroupId) -> Option<&Merger> {
        self.groups.get(&group)
    }

    /// Where `group`'s merge stands, for a checkpoint of the application
    /// that consumes it; `None` while merged values of the group wait in
    /// effects not drained yet (the application has not applied them) or
    /// part of a merged batch is still to be popped.
    pub fn group_position(&self, group: GroupId) -> Option<MergePosition> {
        if self.effects.delivered.iter().any(|(g, _)| *g == group) {
            return None;
        }
        self.groups.get(&group)?.position()
    }

    /// Restores `group`'s merge at `position` (from a replica checkpoint:
    /// its own at start, or a peer's installed at run time) and moves each
    /// of its streams' learners to the lowest position any group merging
    /// the stream needs, forward or back, so the replica is fed exactly
    /// the log tail after the checkpoint (thesis §3.4.2). Merged values of
    /// the group not drained yet belong to the state being replaced and
    /// are dropped: drain before restoring.
    pub fn restore_group(
        &mut self,
        group: GroupId,
        position: &MergePosition,
    ) -> Result<(), PositionError> {
        let current = self.groups.get(&group).ok_or(PositionError::Streams)?;
        let streams: Vec<StreamId> = position.lanes.iter().map(|l| l.stream).collect();
        if streams.iter().any(|s| !self.streams.contains_key(s)) {
            return Err(PositionError::Streams);
        }
        let instances_per_round = current.instances_per_round();
        let merger = Merger::from_position(group, position, instances_per_round)?;
        self.groups.insert(group, merger);
        self.effects.delivered.retain(|(g, _)| *g != group);
        self.feed_lanes(|_, _| true);
        Ok(())
    }

    /// Adds merge group `group`, restored at `position` (a replica
    /// created at run time from another's checkpoint, e.g. a partition
    /// split off by a command of the global stream). Fails if the group
    /// exists or a lane names a stream this node is not a member of.
    pub fn add_group(
        &mut self,
        group: GroupId,
        position: &MergePosition,
    ) -> Result<(), PositionError> {
        if self.groups.contains_key(&group)
            || position
                .lanes
                .iter()
                .any(|l| !self.streams.contains_key(&l.stream))
        {
            return Err(PositionError::Streams);
        }
        let instances_per_round = self
            .streams
            .values()
            .next()
            .map_or(1, |s| s.config().limits.merge_instances_per_round);
        let merger = Merger::from_position(group, position, instances_per_round)?;
        self.groups.insert(group, merger);
        self.feed_lanes(|_, _| true);
        Ok(())
    }

    /// Makes this node a member of a stream created at run time (a
    /// partition's new stream), with its acceptor log. No group merges it
    /// until one is reconfigured or subscribed to it. Fails if the node is
    /// a member already.
    pub fn add_stream(
        &mut self,
        config: StreamConfig,
        log: Box<dyn AcceptorLog>,
        now: TimeMicros,
    ) -> Result<(), MulticastError> {
        let id = config.stream;
        if self.streams.contains_key(&id) {
            return Err(MulticastError::StreamExists(id));
        }
        let mut node = StreamNode::new(self.me, config, log, self.incarnation, now);
        node.batch_per_round();
        self.streams.insert(id, node);
        Ok(())
    }

    /// Stops being a member of `stream` (retired: no group merges it any
    /// more) and returns its acceptor log, for the runtime to close.
    pub fn remove_stream(&mut self, stream: StreamId) -> Option<Box<dyn AcceptorLog>> {
        if self.groups.values().any(|m| m.feeds_on(stream)) {
            return None;
        }
        self.pacing.remove(&stream);
        self.local_catch_ups.remove(&stream);
        self.waits.forget(stream);
        self.streams.remove(&stream).map(StreamNode::into_log)
    }

    /// Removes merge group `group` (its subscriber is gone); merged values
    /// of it not drained yet are dropped. A stream's learner held back for
    /// the group alone moves forward to where the remaining merges expect
    /// it: a learner trimmed past while the group waited for a peer's
    /// checkpoint would otherwise stay stuck for a group that is gone
    /// (found by the DMap swarm on the host core: a replica moved away
    /// while another replica of its node had installed a newer checkpoint).
    pub fn remove_group(&mut self, group: GroupId) {
        self.groups.remove(&group);
        self.stalled.remove(&group);
        self.effects.delivered.retain(|(g, _)| *g != group);
        self.feed_lanes(|_, _| true);
    }

    /// Marks `stream` retired (see the field): no anticipatory skips for
    /// it, pacing only while some merge still waits on it.
    pub fn retire_stream(&mut self, stream: StreamId) {
        if self.retired.insert(stream) {
            self.pacing.remove(&stream);
        }
    }

    /// How far one merge group is behind what its streams have decided
    /// elsewhere: the largest learner lag (in instances) of its streams.
    /// A node that restarted replays its streams; while this is large its
    /// replicas should send clients elsewhere rather than make them wait.
    pub fn group_lag(&self, group: GroupId) -> u64 {
        let Some(merger) = self.groups.get(&group) else {
            return 0;
        };
        merger
            .streams()
            .iter()
            .filter_map(|s| self.streams.get(s))
            .map(StreamNode::learner_lag)
            .max()
            .unwrap_or(0)
    }

    /// Moves each stream's learner back to the lowest instance a merge
    /// lane expects when a lane expects one below it (a lane recovering
    /// its stream from the start for a subscription, or a merge restored
    /// at a checkpoint), or to where the lanes expect, forward, when
    /// `forward(stream, learner_next)` allows it. A learner further on
    /// than every lane never goes back.
    pub(super) fn feed_lanes(&mut self, forward: impl Fn(StreamId, Instance) -> bool) {
        for (id, node) in self.streams.iter_mut() {
            let lowest = self
                .groups
                .values()
                .filter_map(|m| m.expects(*id))
                .min_by_key(|(instance, _)| *instance);
            let Some((next, weight)) = lowest else {
                continue;
            };
            let learner = node.learner_next();
            if next < learner || (next > learner && forward(*id, learner)) {
                node.resume_learner_at(next, weight);
            }
        }
    }
}
