//! The deterministic merge of decided streams (thesis §2.6, §3.3) and its
//! dynamic subscriptions (Elastic Paxos, thesis ch. 4).
//!
//! Round-robin over the merged streams in stream-id order: each round
//! takes `instances_per_round` (M) instances from each stream. A
//! `Batch::Skip(k)` stands for `k` instances, so one decided instance can
//! let an idle stream keep pace with a busy one; a skip larger than what
//! is left of the stream's share in this round carries over to the next
//! rounds of the same stream. `Batch::Null` (decided by gap repair) counts
//! as one instance and delivers nothing.
//!
//! The merge position is a pure function of the per-stream instance
//! sequences, which consensus makes identical at every learner; that is
//! the whole argument for agreement on the merged order. Round `r` takes
//! stream positions `r*M .. (r+1)*M` of every stream (see `lane.rs`), so
//! streams can join and leave a merge at round boundaries without
//! creating a cycle with any other merge.
//!
//! Subscriptions (Algorithm 1): control values ([`Control`]) are merged
//! like values but consumed here. `Subscribe(G, S)` merged from a stream G
//! merges in round `r_G` waits (the merge stops) until the lane of `S`,
//! recovering `S` from its instance 0, finds the request's copy ordered
//! in `S`, in round `r_S`; `S` then joins at round `max(r_G, r_S) + 1`,
//! the merge point, and what `S` ordered before it is not delivered to G.
//! `Prepare(G, S)` starts that recovery early (§4.4.3). `Unsubscribe(G,
//! S)` merged in round `r` removes `S` after round `r`.

use crate::control::{Control, ControlOp};
use crate::group::GroupId;
pub use crate::lane::LaneState;
use crate::lane::{Lane, FOUND_HELD_MAX};
use amulet_paxos::Delivered;
use amulet_types::{Instance, StreamId, ValueId};
use amulet_wire::{Batch, Value, ValueKind};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet, VecDeque};

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
    /// Takes a subscription's merge point from the new stream's copy
    /// alone: a stream whose copy lies in an earlier round than the other
    /// copy joins late, its rounds behind the others' (Fig. 4.2's cycle).
    MergePointFromNewStreamOnly,
}

/// A subscription change a merge made, in merged order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SubscriptionEvent {
    /// `stream` is merged from round `round` on (the merge point).
    Joined {
        /// The stream.
        stream: StreamId,
        /// Its first merged round.
        round: u64,
    },
    /// `stream` is no longer merged from round `round` on.
    Left {
        /// The stream.
        stream: StreamId,
        /// The first round without it.
        round: u64,
    },
    /// The merge stopped at the end of round `round` until `stream`'s
    /// copy of `request` is found.
    Waiting {
        /// The stream being recovered.
        stream: StreamId,
        /// The subscribe request.
        request: ValueId,
        /// The round of the copy already merged.
        round: u64,
    },
    /// A request that cannot take effect was ignored (already taken
    /// effect, a stream already merged, or the last stream left).
    Ignored {
        /// The stream named.
        stream: StreamId,
        /// The request.
        request: ValueId,
    },
}

/// A subscribe request whose copy in a merged stream was merged, waiting
/// for the copy in the new stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PendingJoin {
    /// The request.
    pub request: ValueId,
    /// The new stream.
    pub stream: StreamId,
    /// The round the merged copy was merged in.
    pub round: u64,
}

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

/// Why a [`MergePosition`] cannot be restored.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PositionError {
    /// No lane in the rounds, or lanes not strictly in stream-id order.
    Streams,
    /// `turn` is not the index of a stream in the rounds.
    Turn,
    /// `remaining` is not within 1..=M.
    Remaining,
}

/// Merges decided instances of several streams into one order.
#[derive(Debug)]
pub struct Merger {
    group: GroupId,
    /// The lanes in the rounds, in stream-id order.
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
    waiting: Option<PendingJoin>,
    completed: BTreeSet<ValueId>,
    events: Vec<SubscriptionEvent>,
    unreadable_controls: u64,
    /// Whether a lane that must be fed from its stream's start was added.
    lanes_added: bool,
    /// See [`MergePosition::fence`].
    fence: Option<u64>,
}

impl Merger {
    /// A merge of `streams` (any order; merged in stream-id order), taking
    /// `instances_per_round` instances from each stream per round, for
    /// merge group 0.
    pub fn new(streams: Vec<StreamId>, instances_per_round: u64) -> Merger {
        Merger::for_group(GroupId(0), streams, instances_per_round)
    }

    /// A merge of `streams` from their instance 0 for `group`, the
    /// subscriber whose control values it obeys.
    pub fn for_group(
        group: GroupId,
        mut streams: Vec<StreamId>,
        instances_per_round: u64,
    ) -> Merger {
        assert!(instances_per_round >= 1, "M must be at least 1");
        streams.sort();
        streams.dedup();
        let lanes = streams.iter().map(|s| (*s, Lane::active())).collect();
        Merger {
            group,
            order: streams,
            lanes,
            instances_per_round,
            turn: 0,
            remaining: instances_per_round,
            ready: VecDeque::new(),
            bug: MergeBug::None,
            rounds: 0,
            merged_instances: 0,
            waiting: None,
            completed: BTreeSet::new(),
            events: Vec::new(),
            unreadable_controls: 0,
            lanes_added: false,
            fence: None,
        }
    }

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
            .map(|l| {
                let mut lane = Lane::at(l.next, l.consumed, l.delivered.clone(), l.state, l.start);
                lane.carry = l.carry;
                lane.pushed = l.consumed.saturating_add(l.carry);
                (l.stream, lane)
            })
            .collect();
        Ok(Merger {
            group,
            order,
            lanes,
            instances_per_round,
            turn,
            remaining: position.remaining,
            ready: VecDeque::new(),
            bug: MergeBug::None,
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

    /// Turns on a deliberately wrong merge (simulator tests only).
    pub fn set_bug(&mut self, bug: MergeBug) {
        self.bug = bug;
    }

    /// The group whose merge this is.
    pub fn group(&self) -> GroupId {
        self.group
    }

    /// The streams merged now (in the rounds), in merge order.
    pub fn streams(&self) -> &[StreamId] {
        &self.order
    }

    /// Every stream the merge takes instances of: merged now, joining, or
    /// being recovered for a subscription.
    pub fn fed_streams(&self) -> impl Iterator<Item = StreamId> + '_ {
        self.lanes.keys().copied()
    }

    /// Whether the merge takes instances of `stream`.
    pub fn feeds_on(&self, stream: StreamId) -> bool {
        self.lanes.contains_key(&stream)
    }

    /// The state of `stream`'s lane, if the merge has one.
    pub fn lane_state(&self, stream: StreamId) -> Option<LaneState> {
        self.lanes.get(&stream).map(|l| l.state)
    }

    /// The subscription the merge is stopped for, if any.
    pub fn waiting(&self) -> Option<PendingJoin> {
        self.waiting
    }

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
    }

    fn at_boundary(&self) -> bool {
        self.turn == 0 && self.remaining == self.instances_per_round
    }

    /// A copy of this merge for another group, not stopped at any fence
    /// (a partition split off at a fence starts from its source's merge,
    /// the instances decided but not yet merged included).
    pub fn fork(&self, group: GroupId) -> Merger {
        assert!(self.ready.is_empty(), "fork between deliveries");
        Merger {
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
        }
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
            add.into_iter()
                .map(|l| {
                    let mut lane = Lane::at(l.next, l.consumed, l.delivered, l.state, l.start);
                    lane.carry = l.carry;
                    lane.pushed = l.consumed.saturating_add(l.carry);
                    (l.stream, lane)
                })
                .collect(),
        )
    }

    pub(crate) fn lane(&self, stream: StreamId) -> Option<&Lane> {
        self.lanes.get(&stream)
    }

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
        self.lanes = lanes;
        self.order = order;
        self.turn = 0;
        self.lanes_added = true;
        Ok(())
    }

    /// Completed rounds.
    pub fn rounds(&self) -> u64 {
        self.rounds
    }

    /// Instances consumed by the merge (all streams).
    pub fn merged_instances(&self) -> u64 {
        self.merged_instances
    }

    /// Control values that could not be read (ignored everywhere alike).
    pub fn unreadable_controls(&self) -> u64 {
        self.unreadable_controls
    }

    /// Whether a lane to be fed from its stream's start (a subscription's
    /// recovery) was added since the last call.
    pub fn take_lanes_added(&mut self) -> bool {
        std::mem::take(&mut self.lanes_added)
    }

    /// Subscription changes since the last call, in merged order.
    pub fn take_events(&mut self) -> Vec<SubscriptionEvent> {
        std::mem::take(&mut self.events)
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

    /// The first round at which the set of streams in the rounds changes
    /// or the merge stops at a fence.
    fn next_change(&self) -> u64 {
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
        if self.turn != 0 || self.remaining != self.instances_per_round {
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
    fn begin_round(&mut self) {
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
    }

    /// Acts on a control value merged in the current round.
    fn on_control(&mut self, bytes: &[u8]) {
        let control = match Control::decode(bytes) {
            Ok(control) if control.group == self.group => control,
            Ok(_) => return, // Another subscriber's.
            Err(_) => {
                self.unreadable_controls += 1;
                return;
            }
        };
        let Control {
            op,
            stream,
            request,
            ..
        } = control;
        let ignored = SubscriptionEvent::Ignored { stream, request };
        match op {
            ControlOp::Prepare => {
                if !self.lanes.contains_key(&stream) && !self.completed.contains(&request) {
                    self.lanes.insert(stream, Lane::scanning(request));
                    self.lanes_added = true;
                }
            }
            ControlOp::Subscribe => {
                let merged = self.lanes.get(&stream).is_some_and(|l| {
                    l.state.in_rounds() || matches!(l.state, LaneState::Joining { .. })
                });
                if merged || self.completed.contains(&request) || self.waiting.is_some() {
                    // Already merged (or joining), a re-broadcast copy of a
                    // request that took effect, or a second subscription
                    // while one is pending (its proposer retries).
                    self.events.push(ignored);
                    return;
                }
                let found = matches!(
                    self.lanes.get(&stream).map(|l| l.state),
                    Some(LaneState::Found { request: r, .. } | LaneState::Scanning { request: r }) if r == request
                );
                if !found {
                    self.lanes.insert(stream, Lane::scanning(request));
                    self.lanes_added = true;
                }
                self.waiting = Some(PendingJoin {
                    request,
                    stream,
                    round: self.rounds,
                });
                self.events.push(SubscriptionEvent::Waiting {
                    stream,
                    request,
                    round: self.rounds,
                });
            }
            ControlOp::Unsubscribe => {
                if self.completed.contains(&request) {
                    self.events.push(ignored);
                    return;
                }
                let staying = self
                    .lanes
                    .iter()
                    .filter(|(s, l)| {
                        **s != stream
                            && matches!(l.state, LaneState::Active | LaneState::Joining { .. })
                    })
                    .count();
                let rounds = self.rounds;
                match self.lanes.get_mut(&stream) {
                    Some(lane) if lane.state == LaneState::Active && staying > 0 => {
                        lane.state = LaneState::Leaving { last_round: rounds };
                    }
                    Some(lane)
                        if matches!(lane.state, LaneState::Joining { .. }) && staying > 0 =>
                    {
                        self.lanes.remove(&stream);
                    }
                    _ => {
                        self.events.push(ignored);
                        return;
                    }
                }
                self.completed.insert(request);
            }
        }
    }

    /// Whether a waiting subscription can take effect now: its new
    /// stream's copy was found. Sets the merge point.
    fn resolve_waiting(&mut self) -> bool {
        let Some(pending) = self.waiting else {
            return true;
        };
        let m = self.instances_per_round;
        let lane = self.lanes.entry(pending.stream).or_insert_with(|| {
            // Given up while holding too much: scan again.
            Lane::scanning(pending.request)
        });
        let copy_round = match lane.state {
            LaneState::Found {
                request,
                copy_round,
            } if request == pending.request => copy_round,
            LaneState::Scanning { request } if request == pending.request => {
                self.lanes_added |= lane.expected() == Instance(0);
                return false;
            }
            _ => {
                // Scans for another request (a Prepare of another one).
                *lane = Lane::scanning(pending.request);
                self.lanes_added = true;
                return false;
            }
        };
        let round = match self.bug {
            MergeBug::MergePointFromNewStreamOnly => copy_round + 1,
            _ => pending.round.max(copy_round) + 1,
        };
        lane.state = LaneState::Joining { round };
        lane.start = lane.start.max(round.saturating_mul(m));
        lane.drop_below_start(self.group, m);
        self.completed.insert(pending.request);
        self.waiting = None;
        // The merge stopped right after the other copy, in round `r_G`; if
        // that was the round's last instance, round `r_G + 1` (the merge
        // point) has begun without the new stream: it joins now.
        let at_boundary = self.turn == 0 && self.remaining == self.instances_per_round;
        if at_boundary && round <= self.rounds {
            self.begin_round();
        }
        true
    }

    /// The next merged value, if the merge can make progress.
    pub fn pop(&mut self) -> Option<Merged> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use amulet_types::ValueId;
    use bytes::Bytes;

    fn value(seq: u64) -> Batch {
        Batch::Values(vec![Value {
            kind: Default::default(),
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

    fn barrier(seq: u64) -> Batch {
        let Batch::Values(mut values) = value(seq) else {
            unreachable!()
        };
        values[0].kind = ValueKind::Barrier;
        Batch::Values(values)
    }

    #[test]
    fn section_4_7_a_merge_restored_between_a_barrier_and_its_fence_stops_there() {
        // M = 2: the barrier is the first value of round 0, so the merge
        // stops at round 1; a checkpoint taken mid-round (after the
        // barrier was popped) must stop at the same fence after restore.
        let mut m = Merger::new(vec![StreamId(1), StreamId(2)], 2);
        m.push(StreamId(1), Instance(0), barrier(1));
        assert_eq!(drain(&mut m), vec![(1, 1)]);
        let position = m.position().expect("between deliveries");
        assert_eq!(position.fence, Some(1));
        let mut restored =
            Merger::from_position(GroupId(0), &position, 2).expect("a valid position");
        for merger in [&mut m, &mut restored] {
            merger.push(StreamId(1), Instance(1), value(2));
            merger.push(StreamId(2), Instance(0), value(3));
            merger.push(StreamId(2), Instance(1), value(4));
            merger.push(StreamId(1), Instance(2), value(5));
            merger.push(StreamId(2), Instance(2), value(6));
            // Round 0 completes; round 1 waits at the fence.
            assert_eq!(drain(merger), vec![(1, 2), (2, 3), (2, 4)]);
            assert_eq!(merger.fenced(), Some(1));
            merger.release_fence();
            // Round 1: stream 1's two instances come first.
            assert_eq!(drain(merger), vec![(1, 5)]);
        }
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
            let mut restored = Merger::from_position(GroupId(0), &position, m).expect("valid position");
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
        let mut restored = Merger::from_position(GroupId(0), &position, 1).expect("valid");
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
            state: LaneState::Active,
            start: 0,
        };
        let good = MergePosition {
            lanes: vec![lane(1), lane(2)],
            turn: 1,
            remaining: 2,
            rounds: 0,
            waiting: None,
            completed: BTreeSet::new(),
            fence: None,
        };
        assert!(Merger::from_position(GroupId(0), &good, 2).is_ok());
        let bad = |f: fn(&mut MergePosition)| {
            let mut p = good.clone();
            f(&mut p);
            Merger::from_position(GroupId(0), &p, 2).err()
        };
        assert_eq!(bad(|p| p.lanes.clear()), Some(PositionError::Streams));
        assert_eq!(bad(|p| p.lanes.swap(0, 1)), Some(PositionError::Streams));
        assert_eq!(bad(|p| p.turn = 2), Some(PositionError::Turn));
        assert_eq!(bad(|p| p.remaining = 0), Some(PositionError::Remaining));
        assert_eq!(bad(|p| p.remaining = 3), Some(PositionError::Remaining));
    }

    fn control(op: ControlOp, group: u32, stream: u32, request: u64) -> Value {
        let c = Control {
            op,
            group: GroupId(group),
            stream: StreamId(stream),
            request: ValueId {
                proposer: amulet_types::NodeId(9),
                incarnation: 1,
                sequence: request,
            },
        };
        Value::control(
            ValueId {
                proposer: amulet_types::NodeId(8),
                incarnation: 1,
                sequence: 1_000_000 + request * 10 + op as u64 + 100 * stream as u64,
            },
            c.encode(),
        )
    }

    fn ctl(op: ControlOp, group: u32, stream: u32, request: u64) -> Batch {
        Batch::Values(vec![control(op, group, stream, request)])
    }

    /// Feeds every stream from where the merge expects it (going back
    /// when a lane recovers a stream from its start), one instance per
    /// step in the order `schedule` picks, popping all the time.
    fn feed_expected(
        m: &mut Merger,
        streams: &[Vec<Batch>],
        schedule: &[usize],
    ) -> Vec<(u32, u64)> {
        let mut out = Vec::new();
        let push = |m: &mut Merger, s: usize| -> bool {
            let id = StreamId(s as u32 + 1);
            let Some((next, _)) = m.expects(id) else {
                return false;
            };
            match streams[s].get(next.0 as usize) {
                Some(batch) => {
                    m.push(id, next, batch.clone());
                    true
                }
                None => false,
            }
        };
        for &pick in schedule {
            push(m, pick % streams.len());
            out.extend(drain(m));
        }
        loop {
            let mut any = false;
            for s in 0..streams.len() {
                any |= push(m, s);
                out.extend(drain(m));
            }
            if !any {
                break;
            }
        }
        out
    }

    #[test]
    fn section_4_4_a_stream_joins_at_the_round_after_the_later_copy() {
        // G (group 0) merges stream 1 and subscribes to stream 2. The copy
        // in stream 1 is merged in round 2; the copy in stream 2 lies in
        // round 4 of stream 2: the merge point is round 5.
        let s1 = vec![
            value(10),
            value(11),
            ctl(ControlOp::Subscribe, 0, 2, 1),
            value(13),
            value(14),
            value(15),
            value(16),
        ];
        let s2 = vec![
            value(20),
            value(21),
            value(22),
            value(23),
            ctl(ControlOp::Subscribe, 0, 2, 1),
            value(25),
            value(26),
        ];
        let mut m = Merger::new(vec![StreamId(1)], 1);
        let got = feed_expected(
            &mut m,
            &[s1, s2],
            &[0, 0, 0, 0, 1, 1, 1, 0, 1, 1, 1, 1, 0, 0, 0],
        );
        assert_eq!(
            got,
            vec![
                (1, 10),
                (1, 11),
                (1, 13),
                (1, 14),
                (1, 15),
                (2, 25),
                (1, 16),
                (2, 26)
            ]
        );
        assert_eq!(
            m.take_events(),
            vec![
                SubscriptionEvent::Waiting {
                    stream: StreamId(2),
                    request: ValueId {
                        proposer: amulet_types::NodeId(9),
                        incarnation: 1,
                        sequence: 1
                    },
                    round: 2
                },
                SubscriptionEvent::Joined {
                    stream: StreamId(2),
                    round: 5
                },
            ]
        );
    }

    #[test]
    fn section_4_4_a_copy_in_an_earlier_round_of_the_new_stream_waits_for_the_other() {
        // The new stream's copy (round 0) precedes the merged stream's
        // (round 3): the merge point is round 4 and stream 2's values of
        // rounds 1..3 are not delivered to G.
        let s1 = vec![
            value(10),
            value(11),
            value(12),
            ctl(ControlOp::Subscribe, 0, 2, 1),
            value(14),
            value(15),
        ];
        let s2 = vec![
            ctl(ControlOp::Subscribe, 0, 2, 1),
            value(21),
            value(22),
            value(23),
            value(24),
            value(25),
        ];
        let mut m = Merger::new(vec![StreamId(1)], 1);
        let got = feed_expected(&mut m, &[s1, s2], &[1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0]);
        assert_eq!(
            got,
            vec![
                (1, 10),
                (1, 11),
                (1, 12),
                (1, 14),
                (2, 24),
                (1, 15),
                (2, 25)
            ]
        );
    }

    #[test]
    fn section_4_4_unsubscribe_removes_the_stream_after_its_round() {
        let s1 = vec![
            value(10),
            ctl(ControlOp::Unsubscribe, 0, 2, 7),
            value(12),
            value(13),
        ];
        let s2 = vec![value(20), value(21), value(22), value(23)];
        let mut m = Merger::new(vec![StreamId(1), StreamId(2)], 1);
        let got = feed_expected(&mut m, &[s1, s2], &[0, 1, 0, 1, 0, 1, 0, 1]);
        // Round 1 still merges stream 2 (the unsubscribe is merged in it).
        assert_eq!(got, vec![(1, 10), (2, 20), (2, 21), (1, 12), (1, 13)]);
        assert_eq!(m.streams(), &[StreamId(1)]);
        assert_eq!(
            m.take_events(),
            vec![SubscriptionEvent::Left {
                stream: StreamId(2),
                round: 2
            }]
        );
    }

    #[test]
    fn section_4_4_the_last_stream_is_never_left_and_a_request_takes_effect_once() {
        let s1 = vec![
            ctl(ControlOp::Unsubscribe, 0, 1, 3),
            ctl(ControlOp::Subscribe, 0, 2, 4),
            value(12),
            ctl(ControlOp::Unsubscribe, 0, 2, 5),
            value(14),
            ctl(ControlOp::Subscribe, 0, 2, 4), // re-broadcast of a request that took effect
            value(16),
            value(17),
        ];
        let s2 = vec![
            ctl(ControlOp::Subscribe, 0, 2, 4),
            value(21),
            value(22),
            value(23),
            value(24),
            value(25),
            value(26),
            value(27),
        ];
        let mut m = Merger::new(vec![StreamId(1)], 1);
        let got = feed_expected(&mut m, &[s1, s2], &[]);
        assert_eq!(
            got,
            vec![(1, 12), (2, 22), (2, 23), (1, 14), (1, 16), (1, 17)]
        );
        assert_eq!(m.streams(), &[StreamId(1)]);
    }

    #[test]
    fn section_4_2_cross_subscriptions_keep_one_order() {
        // Fig. 4.2: G1 merges S1 and subscribes to S2 while G2 merges S2
        // and subscribes to S1. Each request's copy in the new stream is
        // ordered three rounds before its copy in the merged stream, so a
        // merge point taken from the new stream alone lets each group
        // merge the new stream three rounds behind: G1 then orders 11
        // before 21 and G2 21 before 11, a cycle.
        let s1 = vec![
            ctl(ControlOp::Subscribe, 2, 1, 2),
            value(11),
            value(12),
            ctl(ControlOp::Subscribe, 1, 2, 1),
            value(14),
            value(15),
            value(16),
            value(17),
            value(18),
            value(19),
        ];
        let s2 = vec![
            ctl(ControlOp::Subscribe, 1, 2, 1),
            value(21),
            value(22),
            ctl(ControlOp::Subscribe, 2, 1, 2),
            value(24),
            value(25),
            value(26),
            value(27),
            value(28),
            value(29),
        ];
        let run = |bug| {
            let mut g1 = Merger::for_group(GroupId(1), vec![StreamId(1)], 1);
            let mut g2 = Merger::for_group(GroupId(2), vec![StreamId(2)], 1);
            g1.set_bug(bug);
            g2.set_bug(bug);
            let streams = [s1.clone(), s2.clone()];
            let a = feed_expected(&mut g1, &streams, &[0, 0, 0, 0, 0, 0, 1, 1, 1, 1]);
            let b = feed_expected(&mut g2, &streams, &[1, 1, 1, 1, 1, 1, 0, 0, 0, 0]);
            (a, b)
        };
        let common = |x: &[(u32, u64)], y: &[(u32, u64)]| -> Vec<(u32, u64)> {
            x.iter().filter(|v| y.contains(v)).copied().collect()
        };
        let (a, b) = run(MergeBug::None);
        assert!(common(&a, &b).len() >= 10, "G1 {a:?} G2 {b:?}");
        assert_eq!(
            common(&a, &b),
            common(&b, &a),
            "G1 {a:?} and G2 {b:?} disagree"
        );
        let (a, b) = run(MergeBug::MergePointFromNewStreamOnly);
        assert_ne!(
            common(&a, &b),
            common(&b, &a),
            "the broken merge point orders alike: {a:?} {b:?}"
        );
    }

    /// Streams with values and subscription controls for groups 0 and 1
    /// naming streams 1..=3, requests from a small set (so duplicates,
    /// re-broadcasts and unmatched copies all occur).
    fn batches_with_controls() -> impl Strategy<Value = Vec<Batch>> {
        let op = prop_oneof![
            Just(ControlOp::Prepare),
            Just(ControlOp::Subscribe),
            Just(ControlOp::Unsubscribe)
        ];
        prop::collection::vec(
            prop_oneof![
                6 => (0u64..1_000_000).prop_map(value),
                1 => Just(Batch::Null),
                2 => (0u64..12).prop_map(Batch::Skip),
                // A lone copy of group 0's subscribe would stop its merge
                // for good (only a re-broadcast, outside the merge, ends
                // that): group 0 gets lone prepares and unsubscribes here.
                2 => (op, 0u32..2, 1u32..4, 1u64..4).prop_map(|(op, g, s, r)| {
                    let op = if g == 0 && op == ControlOp::Subscribe { ControlOp::Prepare } else { op };
                    ctl(op, g, s, r)
                }),
            ],
            0..40,
        )
    }

    /// Three streams as `batches_with_controls`, plus requests of group
    /// 0 whose two copies are placed at random positions of the new stream
    /// and of another stream, so that subscriptions take effect often.
    fn streams_with_subscriptions() -> impl Strategy<Value = Vec<Vec<Batch>>> {
        let placement = (
            1u32..4,
            0usize..6,
            0usize..40,
            0usize..40,
            1u64..6,
            prop::bool::ANY,
        );
        (
            prop::collection::vec(batches_with_controls(), 3..4),
            prop::collection::vec(placement, 0..5),
        )
            .prop_map(|(mut streams, placements)| {
                for (target, other, at_new, at_other, request, leave) in placements {
                    // Mostly the stream merged from the start.
                    let other = if other >= 3 { 0 } else { other };
                    let new = target as usize - 1;
                    let len = streams[other].len();
                    if leave {
                        let control = ctl(ControlOp::Unsubscribe, 0, target, request + 10);
                        streams[other].insert(at_other.min(len), control);
                    } else {
                        let control = ctl(ControlOp::Subscribe, 0, target, request);
                        streams[other].insert(at_other.min(len), control);
                        let len = streams[new].len();
                        let control = ctl(ControlOp::Subscribe, 0, target, request);
                        streams[new].insert(at_new.min(len), control);
                    }
                }
                // Tails long enough that merge points far into a stream
                // are reached.
                for (s, stream) in streams.iter_mut().enumerate() {
                    for i in 0..3u64 {
                        stream.push(Batch::Skip(40));
                        stream.push(value(2_000_000 + 10 * s as u64 + i));
                    }
                }
                streams
            })
    }

    proptest! {
        #[test]
        fn section_4_4_a_merge_with_subscriptions_is_a_function_of_the_streams(
            streams in streams_with_subscriptions(),
            m in 1u64..3,
            first in prop::collection::vec(0usize..8, 0..200),
            second in prop::collection::vec(0usize..8, 0..200),
            cut in 0usize..200,
        ) {
            // Two interleavings give the same merge; so does the second
            // one checkpointed after `cut` steps and restored.
            let mut a = Merger::new(vec![StreamId(1)], m);
            let expected = feed_expected(&mut a, &streams, &first);
            let mut b = Merger::new(vec![StreamId(1)], m);
            let cut = cut.min(second.len());
            let mut got = feed_expected_steps(&mut b, &streams, &second[..cut]);
            if let Some(position) = b.position() {
                let restored = Merger::from_position(GroupId(0), &position, m).expect("valid position");
                prop_assert_eq!(restored.position(), Some(position));
                b = restored;
            }
            got.extend(feed_expected(&mut b, &streams, &second[cut..]));
            let ev = a.take_events();
            if std::env::var("AMULET_COUNT_JOINS").is_ok() {
                let joins = ev.iter().filter(|e| matches!(e, SubscriptionEvent::Joined { .. })).count();
                let leaves = ev.iter().filter(|e| matches!(e, SubscriptionEvent::Left { .. })).count();
                eprintln!("joins={joins} leaves={leaves}");
            }
            prop_assert_eq!(got, expected);
        }
    }

    /// Like `feed_expected` without feeding everything at the end.
    fn feed_expected_steps(
        m: &mut Merger,
        streams: &[Vec<Batch>],
        schedule: &[usize],
    ) -> Vec<(u32, u64)> {
        let mut out = Vec::new();
        for &pick in schedule {
            let s = pick % streams.len();
            let id = StreamId(s as u32 + 1);
            if let Some((next, _)) = m.expects(id) {
                if let Some(batch) = streams[s].get(next.0 as usize) {
                    m.push(id, next, batch.clone());
                }
            }
            out.extend(drain(m));
        }
        out
    }
}
