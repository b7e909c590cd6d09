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
//!
//! One file per concept:
//! - `rounds.rs`: the round-robin itself (push, pop, skips and their
//!   carry, merge catch-up needs; thesis §2.6, §3.3);
//! - `subscription.rs`: Elastic Paxos Algorithm 1 (control values, the
//!   merge point; thesis ch. 4);
//! - `positions.rs`: where a merge stands, for checkpoints (§3.4.2);
//! - `fences.rs`: barriers, the fence they stop the merge at, and what
//!   may change there (fork, reconfigure; thesis §4.7.4–4.7.5, DMap
//!   §III-C);
//! - `invariants.rs`: what holds between any two calls, checked.
//!
//! [`Control`]: crate::Control

mod fences;
mod invariants;
mod positions;
mod rounds;
mod subscription;
#[cfg(test)]
mod tests;

pub use crate::lane::LaneState;
pub use positions::{LanePosition, MergePosition, PositionError};
pub use subscription::{PendingJoin, SubscriptionEvent};

use crate::group::GroupId;
use crate::lane::Lane;
use amulet_types::{Instance, StreamId, ValueId};
use amulet_wire::Value;
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
        let merger = Merger {
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
        };
        merger.debug_check_invariants(0);
        merger
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

    pub(crate) fn lane(&self, stream: StreamId) -> Option<&Lane> {
        self.lanes.get(&stream)
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

    /// Whether the merge stands at the start of a round: no stream has
    /// consumed anything of it yet.
    fn at_boundary(&self) -> bool {
        self.turn == 0 && self.remaining == self.instances_per_round
    }
}
