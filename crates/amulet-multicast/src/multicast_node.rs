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

use crate::merger::{MergeBug, MergePosition, Merged, Merger, PositionError};
use crate::skip_pacer::SkipPacer;
use amulet_paxos::{Bugs, Input, Output, ProposeError, StreamNode};
use amulet_storage::AcceptorLog;
use amulet_types::{
    Ballot, Instance, NodeId, StorageMode, StreamConfig, StreamId, TimeMicros, ValueId,
};
use amulet_wire::Envelope;
use bytes::Bytes;
use std::collections::BTreeMap;

/// Why a multicast was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MulticastError {
    /// This node is not a member of the stream.
    UnknownStream(StreamId),
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
}

impl Effects {
    /// Whether there is nothing to do.
    pub fn is_empty(&self) -> bool {
        self.sends.is_empty()
            && self.sends_after_sync.is_empty()
            && self.delivered.is_empty()
            && self.trimmed.is_empty()
    }
}

/// A merge blocked on one stream asks for catch-up when the others are
/// ahead by more than this much time at λ (well above Δ and one network
/// round trip, so ordinary pacing jitter never triggers it).
const CATCH_UP_MICROS: u64 = 25_000;

/// The smallest backlog that asks for catch-up (when λ is 0 or tiny).
const CATCH_UP_WEIGHT_MIN: u64 = 64;

/// A merge group: one subscriber's merge of its streams.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct GroupId(pub u32);

impl std::fmt::Display for GroupId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "g{}", self.0)
    }
}

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
    groups: BTreeMap<GroupId, Merger>,
    /// Reused by local catch-up: (blocked stream, position needed).
    needs_scratch: Vec<(StreamId, u64)>,
    /// When each stream coordinated here last skipped for local catch-up.
    local_catch_ups: BTreeMap<StreamId, TimeMicros>,
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
            .map(|(group, members)| (group, Merger::new(members, instances_per_round)))
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
            local_catch_ups: BTreeMap::new(),
            needs_scratch: Vec::new(),
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
        if current.streams() != streams.as_slice() {
            return Err(PositionError::Streams);
        }
        let instances_per_round = current.instances_per_round();
        let merger = Merger::from_position(position, instances_per_round)?;
        self.groups.insert(group, merger);
        self.effects.delivered.retain(|(g, _)| *g != group);
        for stream in streams {
            let lowest = self
                .groups
                .values()
                .filter_map(|m| Some((m.next_instance(stream)?, m.merged_weight(stream)?)))
                .min();
            if let (Some((next, weight)), Some(node)) = (lowest, self.streams.get_mut(&stream)) {
                if node.learner_next() != next {
                    node.resume_learner_at(next, weight);
                }
            }
        }
        Ok(())
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
        let node = self
            .streams
            .get_mut(&stream)
            .ok_or(MulticastError::UnknownStream(stream))?;
        let id = node
            .propose(now, bytes, &mut self.output)
            .map_err(MulticastError::Refused)?;
        self.absorb();
        self.catch_up_locally(now);
        Ok(id)
    }

    /// Takes the accumulated effects.
    pub fn drain(&mut self) -> Effects {
        std::mem::take(&mut self.effects)
    }

    /// Proposes skips at the streams this node coordinates (thesis §3.3).
    fn level_rates(&mut self, now: TimeMicros) {
        for (id, stream) in self.streams.iter_mut() {
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
                .filter(|m| m.streams().contains(&decided.stream))
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
        for (group, merger) in self.groups.iter_mut() {
            while let Some(merged) = merger.pop() {
                self.effects.delivered.push((*group, merged));
            }
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
