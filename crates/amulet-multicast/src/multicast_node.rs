//! Atomic multicast at one node (thesis §2.6, §3.3): the node's Ring Paxos
//! streams, rate leveling at the streams it coordinates, and the
//! deterministic merges of the streams it learns, one per merge group.
//!
//! A merge group is one subscriber's set of streams (a DMap replica: its
//! partition stream and the global stream). Each group has its own
//! [`Merger`], so each subscriber's merge state (the per-stream positions a
//! checkpoint records, thesis §3.4.2) is its own, and it can be restored,
//! moved or resubscribed without touching the other subscribers on the
//! node. The merge of a subset of streams delivers exactly the projection
//! of the merge of all of them (rounds are counted per stream), so groups
//! sharing streams agree on the relative order of what they share.

use crate::control::{Control, ControlOp};
use crate::group::GroupId;
use crate::lane::Lane;
use crate::merger::{
    LaneState, MergeBug, MergePosition, Merged, Merger, PositionError, SubscriptionEvent,
};
use crate::skip_pacer::SkipPacer;
use amulet_paxos::{Bugs, Input, Output, ProposeError, StreamNode};
use amulet_storage::AcceptorLog;
use amulet_types::{
    Ballot, Instance, NodeId, StorageMode, StreamConfig, StreamId, TimeMicros, ValueId,
};
use amulet_wire::{Envelope, ValueKind};
use bytes::Bytes;
use std::collections::BTreeMap;

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

/// Why a multicast was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MulticastError {
    /// This node is not a member of the stream.
    UnknownStream(StreamId),
    /// This node is a member of the stream already.
    StreamExists(StreamId),
    /// The stream refused the value.
    Refused(ProposeError),
}

/// What the runtime must do after feeding inputs.
#[derive(Debug, Default)]
pub struct Effects {
    /// Messages that may leave now.
    pub sends: Vec<(NodeId, Envelope)>,
    /// Messages that may leave only after every dirty acceptor log synced.
    pub sends_after_sync: Vec<(NodeId, Envelope)>,
    /// Values in each merge group's delivery order.
    pub delivered: Vec<(GroupId, Merged)>,
    /// Streams whose next instance was trimmed at the acceptors.
    pub trimmed: Vec<(StreamId, Instance)>,
    /// Subscription changes of each merge group, in its merged order.
    pub subscriptions: Vec<(GroupId, SubscriptionEvent)>,
}

impl Effects {
    /// Whether there is nothing to do.
    pub fn is_empty(&self) -> bool {
        self.sends.is_empty()
            && self.sends_after_sync.is_empty()
            && self.delivered.is_empty()
            && self.trimmed.is_empty()
            && self.subscriptions.is_empty()
    }
}

/// A merge blocked on one stream asks for catch-up when the others are
/// ahead by more than this much time at λ (well above Δ and one network
/// round trip, so ordinary pacing jitter never triggers it).
const CATCH_UP_MICROS: u64 = 25_000;

/// The smallest backlog that asks for catch-up (when λ is 0 or tiny).
const CATCH_UP_WEIGHT_MIN: u64 = 64;

/// A subscription whose new stream's copy is not found this long after
/// the merge stopped for it (and after the lane recovering the stream has
/// caught up with it) is broadcast to the new stream again (thesis
/// §4.4.3: the process that proposed the copies may have crashed between
/// them).
const REBROADCAST_AFTER_MICROS: u64 = 1_000_000;

struct Pacing {
    pacer: SkipPacer,
    ballot: Ballot,
    proposed_weight: u64,
}

/// One node's view of atomic multicast.
pub struct MulticastNode {
    me: NodeId,
    streams: BTreeMap<StreamId, StreamNode>,
    pacing: BTreeMap<StreamId, Pacing>,
    /// Streams retired by a reconfiguration: no group merges them from
    /// their fence on, so their coordinator proposes no more skips (the
    /// log would grow without end); what was decided up to the fence
    /// stays for replicas that replay to it.
    retired: std::collections::BTreeSet<StreamId>,
    pub(crate) groups: BTreeMap<GroupId, Merger>,
    /// Reused by local catch-up: (blocked stream, position needed).
    needs_scratch: Vec<(StreamId, u64)>,
    /// When each stream coordinated here last skipped for local catch-up.
    local_catch_ups: BTreeMap<StreamId, TimeMicros>,
    /// Subscriptions each group's merge stopped for, and since when the
    /// lane recovering the new stream has been level with its learner.
    stalled: BTreeMap<GroupId, (ValueId, TimeMicros)>,
    /// Numbers subscription requests made here.
    incarnation: u32,
    next_request: u64,
    rebroadcasts: u64,
    output: Output,
    effects: Effects,
}

impl MulticastNode {
    /// A node that is a member of each given stream, with the stream's
    /// acceptor log. It learns every stream it is a member of and merges
    /// them all in one group, `GroupId(0)`.
    pub fn new(
        me: NodeId,
        streams: Vec<(StreamConfig, Box<dyn AcceptorLog>)>,
        incarnation: u32,
        now: TimeMicros,
    ) -> MulticastNode {
        let ids: Vec<StreamId> = streams.iter().map(|(c, _)| c.stream).collect();
        MulticastNode::with_groups(me, streams, vec![(GroupId(0), ids)], incarnation, now)
    }

    /// A node that is a member of each given stream and merges each group's
    /// streams on their own. Every stream of a group must be one of the
    /// node's streams; a stream in no group is only voted in and learned.
    pub fn with_groups(
        me: NodeId,
        streams: Vec<(StreamConfig, Box<dyn AcceptorLog>)>,
        groups: Vec<(GroupId, Vec<StreamId>)>,
        incarnation: u32,
        now: TimeMicros,
    ) -> MulticastNode {
        let instances_per_round = streams
            .first()
            .map_or(1, |(c, _)| c.limits.merge_instances_per_round);
        for (group, members) in &groups {
            for stream in members {
                assert!(
                    streams.iter().any(|(c, _)| c.stream == *stream),
                    "merge group {group} names {stream:?}, which the node is not a member of"
                );
            }
        }
        let groups = groups
            .into_iter()
            .map(|(group, members)| {
                let merger = Merger::for_group(group, members, instances_per_round);
                (group, merger)
            })
            .collect();
        let streams: BTreeMap<StreamId, StreamNode> = streams
            .into_iter()
            .map(|(config, log)| {
                let id = config.stream;
                (id, StreamNode::new(me, config, log, incarnation, now))
            })
            .collect();
        MulticastNode {
            me,
            groups,
            streams,
            pacing: BTreeMap::new(),
            retired: std::collections::BTreeSet::new(),
            local_catch_ups: BTreeMap::new(),
            needs_scratch: Vec::new(),
            stalled: BTreeMap::new(),
            incarnation,
            next_request: 1,
            rebroadcasts: 0,
            output: Output::default(),
            effects: Effects::default(),
        }
    }

    /// This node.
    pub fn node(&self) -> NodeId {
        self.me
    }

    /// The stream state machines.
    pub fn streams(&self) -> &BTreeMap<StreamId, StreamNode> {
        &self.streams
    }

    /// Whether this node coordinates any of its streams.
    pub fn coordinates_any(&self) -> bool {
        self.streams.values().any(|s| s.is_coordinator())
    }

    /// Mutable access to one stream (for syncing its log, trimming).
    pub fn stream_mut(&mut self, stream: StreamId) -> Option<&mut StreamNode> {
        self.streams.get_mut(&stream)
    }

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
        let node = StreamNode::new(self.me, config, log, self.incarnation, now);
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
        self.streams.remove(&stream).map(StreamNode::into_log)
    }

    /// Removes merge group `group` (its subscriber is gone); merged values
    /// of it not drained yet are dropped.
    pub fn remove_group(&mut self, group: GroupId) {
        self.groups.remove(&group);
        self.stalled.remove(&group);
        self.effects.delivered.retain(|(g, _)| *g != group);
    }

    /// The round `group`'s merge has stopped at for a barrier value, once
    /// every value before it was drained (see [`Merger::fenced`]).
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

    /// M: instances merged per stream and round.
    pub fn instances_per_round(&self) -> u64 {
        self.streams
            .values()
            .next()
            .map_or(1, |s| s.config().limits.merge_instances_per_round)
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

    /// Moves each stream's learner back to the lowest instance a merge
    /// lane expects when a lane expects one below it (a lane recovering
    /// its stream from the start for a subscription, or a merge restored
    /// at a checkpoint), or to where the lanes expect, forward, when
    /// `forward(stream, learner_next)` allows it. A learner further on
    /// than every lane never goes back.
    fn feed_lanes(&mut self, forward: impl Fn(StreamId, Instance) -> bool) {
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

    /// Turns deliberate bugs on in every stream (simulator only).
    pub fn set_bugs(&mut self, bugs: Bugs) {
        for stream in self.streams.values_mut() {
            stream.set_bugs(bugs);
        }
    }

    /// Turns on a deliberately wrong merge at this node (simulator only).
    pub fn set_merge_bug(&mut self, bug: MergeBug) {
        for merger in self.groups.values_mut() {
            merger.set_bug(bug);
        }
    }

    /// A peer message.
    pub fn on_message(&mut self, now: TimeMicros, from: NodeId, envelope: Envelope) {
        let Some(stream) = self.streams.get_mut(&envelope.stream) else {
            return;
        };
        let input = Input::Message {
            from,
            message: envelope.message,
        };
        stream.step(now, input, &mut self.output);
        self.absorb();
        self.catch_up_locally(now);
    }

    /// Time passed: timeouts, heartbeats, rate leveling.
    pub fn tick(&mut self, now: TimeMicros) {
        for stream in self.streams.values_mut() {
            stream.step(now, Input::Tick, &mut self.output);
        }
        self.level_rates(now);
        self.absorb();
        self.rebroadcast_stalled(now);
        self.catch_up_locally(now);
        self.report_merge_needs();
    }

    /// Local catch-up: when this node's merge is blocked on a stream this
    /// node coordinates while another stream holds decided instances, the
    /// coordinator skips up to them at once instead of at its next pacing
    /// tick. Without it every value of a busy stream waits up to Δ (plus a
    /// decision) for the idle stream's next skip, which bounds a closed
    /// loop client at about one operation per Δ. It changes only how
    /// much is skipped and when, never the merge rule, so order is safe
    /// whatever it does; it cannot run away, since it never skips past
    /// what another stream has decided. A merge waiting on a stream
    /// coordinated elsewhere still waits for that coordinator's pacing
    /// (and heartbeat catch-up, [`MulticastNode::report_merge_needs`]).
    fn catch_up_locally(&mut self, now: TimeMicros) {
        // The position each blocked stream must reach, the most any group
        // needs (a stream reaching it unblocks every group waiting on it).
        // Runs after every message: the buffer is reused, not allocated.
        let mut needs = std::mem::take(&mut self.needs_scratch);
        needs.clear();
        for merger in self.groups.values() {
            if let Some(waiting) = merger.waiting_on() {
                let need = merger.need(waiting, 1);
                match needs.iter_mut().find(|(s, _)| *s == waiting) {
                    Some((_, most)) => *most = (*most).max(need),
                    None => needs.push((waiting, need)),
                }
            }
        }
        let mut skipped = false;
        for &(waiting, need) in &needs {
            let Some(stream) = self.streams.get_mut(&waiting) else {
                continue;
            };
            if need == 0 || !stream.is_coordinator() {
                continue;
            }
            let gap = local_catch_up_gap(stream);
            let last = self.local_catch_ups.get(&waiting).copied();
            if last.is_some_and(|t| now < t.plus(gap)) {
                continue;
            }
            if stream.catch_up_local(now, need, &mut self.output) {
                self.local_catch_ups.insert(waiting, now);
                skipped = true;
            }
        }
        self.needs_scratch = needs;
        if skipped {
            self.absorb();
        }
    }

    /// Merge catch-up (thesis §3.3): tells each stream (through its
    /// heartbeats to the coordinator) the position this node's merge
    /// needs it to reach when the merge is blocked on it while the other
    /// streams hold more than `CATCH_UP_MICROS` of λ in decided instances.
    /// Rate leveling alone keeps streams level only while each has a
    /// coordinator; a stream that was leaderless for a while stays behind
    /// by that long, and every value of the other streams would wait that
    /// much longer in the merge, for good.
    fn report_merge_needs(&mut self) {
        for (id, stream) in self.streams.iter_mut() {
            let rate = stream.config().limits.skip_rate_per_second;
            let threshold =
                (rate.saturating_mul(CATCH_UP_MICROS) / 1_000_000).max(CATCH_UP_WEIGHT_MIN);
            let need = self
                .groups
                .values()
                .map(|merger| merger.need(*id, threshold))
                .max()
                .unwrap_or(0);
            stream.set_merge_need(need);
        }
    }

    /// Multicasts `bytes` to `stream`.
    pub fn multicast(
        &mut self,
        now: TimeMicros,
        stream: StreamId,
        bytes: Bytes,
    ) -> Result<ValueId, MulticastError> {
        self.multicast_kind(now, stream, ValueKind::Application, bytes)
    }

    /// Multicasts a value of the given kind; a [`ValueKind::Barrier`]
    /// stops the merge of every group that delivers it at the next round
    /// (see [`MulticastNode::fenced`]).
    pub fn multicast_kind(
        &mut self,
        now: TimeMicros,
        stream: StreamId,
        kind: ValueKind,
        bytes: Bytes,
    ) -> Result<ValueId, MulticastError> {
        let node = self
            .streams
            .get_mut(&stream)
            .ok_or(MulticastError::UnknownStream(stream))?;
        let id = node
            .propose_kind(now, kind, bytes, &mut self.output)
            .map_err(MulticastError::Refused)?;
        self.absorb();
        self.catch_up_locally(now);
        Ok(id)
    }

    /// Subscribes merge group `group` to `stream` (Elastic Paxos, thesis
    /// Algorithm 1): orders the hint `Prepare` and one copy of the request
    /// in `via`, a stream the group merges, and the other copy in `stream`.
    /// Every replica of the group starts merging `stream` at the same
    /// round once both copies are merged (see [`Merger`]); watch
    /// [`Effects::subscriptions`] for it. Returns the request's name.
    /// This node must be a member of both streams.
    pub fn subscribe(
        &mut self,
        now: TimeMicros,
        group: GroupId,
        stream: StreamId,
        via: StreamId,
    ) -> Result<ValueId, MulticastError> {
        let request = self.new_request();
        let control = |op| Control {
            op,
            group,
            stream,
            request,
        };
        for s in [stream, via] {
            if !self.streams.contains_key(&s) {
                return Err(MulticastError::UnknownStream(s));
            }
        }
        self.propose_control(now, via, control(ControlOp::Prepare))?;
        self.propose_control(now, stream, control(ControlOp::Subscribe))?;
        self.propose_control(now, via, control(ControlOp::Subscribe))?;
        Ok(request)
    }

    /// Unsubscribes `group` from `stream`, ordered in `via` (any stream the
    /// group merges): the stream leaves the group's merge at the end of
    /// the round the request is merged in. A group never leaves its last
    /// stream (such a request is ignored).
    pub fn unsubscribe(
        &mut self,
        now: TimeMicros,
        group: GroupId,
        stream: StreamId,
        via: StreamId,
    ) -> Result<ValueId, MulticastError> {
        let request = self.new_request();
        self.propose_control(
            now,
            via,
            Control {
                op: ControlOp::Unsubscribe,
                group,
                stream,
                request,
            },
        )?;
        Ok(request)
    }

    /// Subscribe copies this node broadcast again (thesis §4.4.3).
    pub fn rebroadcasts(&self) -> u64 {
        self.rebroadcasts
    }

    fn new_request(&mut self) -> ValueId {
        let sequence = self.next_request;
        self.next_request += 1;
        ValueId {
            proposer: self.me,
            incarnation: self.incarnation,
            sequence,
        }
    }

    fn propose_control(
        &mut self,
        now: TimeMicros,
        stream: StreamId,
        control: Control,
    ) -> Result<ValueId, MulticastError> {
        let node = self
            .streams
            .get_mut(&stream)
            .ok_or(MulticastError::UnknownStream(stream))?;
        let id = node
            .propose_kind(now, ValueKind::Control, control.encode(), &mut self.output)
            .map_err(MulticastError::Refused)?;
        self.absorb();
        Ok(id)
    }

    /// Re-broadcast (thesis §4.4.3): a group whose merge has stopped for a
    /// subscription whose copy in the new stream is not found, although
    /// the lane recovering that stream has caught up with its learner,
    /// for `REBROADCAST_AFTER_MICROS`, orders the copy in the new stream
    /// again (the proposer of the copies may have crashed between them).
    fn rebroadcast_stalled(&mut self, now: TimeMicros) {
        let mut due = Vec::new();
        for (group, merger) in &self.groups {
            let Some(pending) = merger.waiting() else {
                self.stalled.remove(group);
                continue;
            };
            let caught_up = match (
                merger.expects(pending.stream),
                self.streams.get(&pending.stream),
            ) {
                (Some((expected, _)), Some(node)) => expected >= node.learner_next(),
                _ => false,
            };
            let scanning = matches!(
                merger.lane_state(pending.stream),
                Some(LaneState::Scanning { .. }) | None
            );
            if !caught_up || !scanning {
                self.stalled.remove(group);
                continue;
            }
            let since = self.stalled.entry(*group).or_insert((pending.request, now));
            if since.0 != pending.request {
                *since = (pending.request, now);
            }
            if now.since(since.1) >= REBROADCAST_AFTER_MICROS {
                since.1 = now;
                due.push((*group, pending));
            }
        }
        for (group, pending) in due {
            let control = Control {
                op: ControlOp::Subscribe,
                group,
                stream: pending.stream,
                request: pending.request,
            };
            // Backpressure or an unknown stream: the next tick retries.
            if self.propose_control(now, pending.stream, control).is_ok() {
                self.rebroadcasts += 1;
            }
        }
    }

    /// Takes the accumulated effects.
    pub fn drain(&mut self) -> Effects {
        std::mem::take(&mut self.effects)
    }

    /// Marks `stream` retired (see the field): no more skips for it.
    pub fn retire_stream(&mut self, stream: StreamId) {
        if self.retired.insert(stream) {
            self.pacing.remove(&stream);
        }
    }

    /// Proposes skips at the streams this node coordinates (thesis §3.3).
    fn level_rates(&mut self, now: TimeMicros) {
        for (id, stream) in self.streams.iter_mut() {
            if self.retired.contains(id) {
                continue;
            }
            let Some((ballot, proposed_weight, delay)) = stream.coordinator_progress() else {
                self.pacing.remove(id);
                continue;
            };
            let limits = &stream_limits(stream);
            let pacing = self.pacing.entry(*id).or_insert_with(|| Pacing {
                pacer: SkipPacer::new(limits.0, limits.1, now),
                ballot,
                proposed_weight: 0,
            });
            if pacing.ballot != ballot {
                pacing.pacer.reset(now);
                pacing.ballot = ballot;
                pacing.proposed_weight = 0;
            }
            let new_weight = proposed_weight.saturating_sub(pacing.proposed_weight);
            pacing.proposed_weight = proposed_weight;
            if new_weight > 0 {
                pacing.pacer.record_proposed(new_weight);
            }
            pacing.pacer.record_decision_delay(delay);
            if let Some(skips) = pacing.pacer.on_tick(now) {
                stream.propose_skip(now, skips, &mut self.output);
            }
        }
    }

    /// Moves stream output into the merge and the effects.
    fn absorb(&mut self) {
        let output = &mut self.output;
        self.effects.sends.append(&mut output.sends);
        self.effects
            .sends_after_sync
            .append(&mut output.sends_after_sync);
        if let Some(trimmed) = output.trimmed.take() {
            self.effects.trimmed.push(trimmed);
        }
        for decided in output.decided.drain(..) {
            let mut takers = self
                .groups
                .values_mut()
                .filter(|m| m.feeds_on(decided.stream))
                .peekable();
            while let Some(merger) = takers.next() {
                if takers.peek().is_some() {
                    // Values hold `Bytes`: a copy shares the payloads.
                    merger.push(decided.stream, decided.instance, decided.batch.clone());
                } else {
                    merger.push(decided.stream, decided.instance, decided.batch);
                    break;
                }
            }
        }
        let mut lanes_added = false;
        for (group, merger) in self.groups.iter_mut() {
            while let Some(merged) = merger.pop() {
                self.effects.delivered.push((*group, merged));
            }
            lanes_added |= merger.take_lanes_added();
            for event in merger.take_events() {
                self.effects.subscriptions.push((*group, event));
            }
        }
        if lanes_added {
            // A lane recovering a stream from its start for a subscription:
            // its learner goes back to feed it.
            self.feed_lanes(|_, _| false);
        }
    }
}

/// The least time between two local catch-up skips of one stream. Under
/// load the merge blocks on an idle stream after nearly every decision of
/// a busy one; a skip each time would double the instances of the idle
/// stream. In sync mode every instance costs a log sync at each acceptor
/// before it is decided, so there the idle stream catches up at most once
/// per Δ (besides its pacing skip); elsewhere up to four times.
fn local_catch_up_gap(stream: &StreamNode) -> u64 {
    let config = stream.config();
    match config.storage {
        StorageMode::SyncDurable => config.limits.skip_interval_micros,
        StorageMode::Memory | StorageMode::AsyncDurable => config.limits.skip_interval_micros / 4,
    }
}

fn stream_limits(stream: &StreamNode) -> (u64, u64) {
    let limits = &stream.config().limits;
    (limits.skip_rate_per_second, limits.skip_interval_micros)
}
