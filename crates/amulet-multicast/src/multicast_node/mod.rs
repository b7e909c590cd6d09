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
//!
//! One file per concept:
//! - `groups.rs`: the node's streams and merge groups, restored and added
//!   at checkpoints, and the learners feeding them;
//! - `fences.rs`: reconfiguration of a group at a barrier's fence;
//! - `pacing.rs`: rate leveling (skips) and merge catch-up;
//! - `subscriptions.rs`: Elastic Paxos subscriptions requested here;
//! - `effects.rs`: what the runtime must do, and how stream output
//!   becomes it.

mod effects;
mod fences;
mod groups;
mod pacing;
mod subscriptions;

pub use effects::Effects;
pub use fences::ReconfigureError;

use crate::group::GroupId;
use crate::merger::{MergeBug, Merger};
use amulet_paxos::{Bugs, Input, Output, ProposeError, StreamNode};
use amulet_storage::AcceptorLog;
use amulet_types::{NodeId, StreamConfig, StreamId, TimeMicros, ValueId};
use amulet_wire::{Envelope, ValueKind};
use bytes::Bytes;
use pacing::{Pacing, Waits};
use std::collections::{BTreeMap, BTreeSet};

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

/// One node's view of atomic multicast.
pub struct MulticastNode {
    me: NodeId,
    streams: BTreeMap<StreamId, StreamNode>,
    pacing: BTreeMap<StreamId, Pacing>,
    /// Streams retired by a reconfiguration: no group merges them from
    /// their fence on, so their coordinator proposes no anticipatory
    /// skips for them (the log would grow with every value of the other
    /// streams); it still paces them on demand, for merges here or
    /// elsewhere that have not reached the fence (see `pacing.rs`). What
    /// was decided up to the fence stays for replicas that replay to it.
    retired: BTreeSet<StreamId>,
    pub(crate) groups: BTreeMap<GroupId, Merger>,
    /// Reused by local catch-up: (blocked stream, position needed,
    /// whether values wait behind it).
    needs_scratch: Vec<(StreamId, u64, bool)>,
    /// When each stream coordinated here last skipped for local catch-up.
    local_catch_ups: BTreeMap<StreamId, TimeMicros>,
    /// Merges here waiting on streams (what wakes pacing; `pacing.rs`).
    waits: Waits,
    /// Per stream coordinated here, its count of value instances at the
    /// last anticipation (see `pacing.rs`).
    anticipated: BTreeMap<StreamId, u64>,
    /// The latest time an input brought.
    now: TimeMicros,
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
                let mut node = StreamNode::new(me, config, log, incarnation, now);
                node.batch_per_round();
                (id, node)
            })
            .collect();
        MulticastNode {
            me,
            groups,
            streams,
            pacing: BTreeMap::new(),
            retired: BTreeSet::new(),
            local_catch_ups: BTreeMap::new(),
            waits: Waits::default(),
            anticipated: BTreeMap::new(),
            now,
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

    /// M: instances merged per stream and round.
    pub fn instances_per_round(&self) -> u64 {
        self.streams
            .values()
            .next()
            .map_or(1, |s| s.config().limits.merge_instances_per_round)
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
        self.now = self.now.max(now);
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
        self.now = self.now.max(now);
        for stream in self.streams.values_mut() {
            stream.step(now, Input::Tick, &mut self.output);
        }
        self.level_rates(now);
        self.absorb();
        self.rebroadcast_stalled(now);
        self.catch_up_locally(now);
        self.report_merge_needs();
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
        self.now = self.now.max(now);
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

    /// Panics, naming what is broken, unless every stream's state machine
    /// ([`StreamNode::check_invariants`]) and every group's merge
    /// ([`Merger::check_invariants`]) holds its invariants, and every
    /// group merges with the same M (the projections of different groups'
    /// merges agree only if their rounds are the same size). O(streams +
    /// lanes): cheap enough to run after every step.
    pub fn check_invariants(&self) {
        for stream in self.streams.values() {
            stream.check_invariants();
        }
        let mut m = None;
        for (group, merger) in &self.groups {
            assert_eq!(
                merger.group(),
                *group,
                "node {}: the merge kept for group {group} is group {}'s",
                self.me,
                merger.group()
            );
            let mine = merger.instances_per_round();
            let first = *m.get_or_insert(mine);
            assert_eq!(
                mine, first,
                "node {}: merge group {group} merges {mine} instances per round, another {first}",
                self.me
            );
            merger.check_invariants();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use amulet_storage::MemoryRing;
    use amulet_types::{StorageMode, StreamLimits};

    fn node() -> MulticastNode {
        let config = StreamConfig {
            stream: StreamId(1),
            acceptors: vec![NodeId(1)],
            learners: vec![],
            storage: StorageMode::Memory,
            limits: StreamLimits::default(),
            base_position: 0,
        };
        let log: Box<dyn AcceptorLog> = Box::new(MemoryRing::new(64));
        MulticastNode::new(NodeId(1), vec![(config, log)], 1, TimeMicros(0))
    }

    #[test]
    fn a_ticking_node_holds_its_invariants() {
        let mut node = node();
        for ms in 1..50 {
            node.tick(TimeMicros(ms * 1_000));
            node.check_invariants();
        }
    }

    #[test]
    #[should_panic(expected = "merge invariant `the turn lies within the rounds` broken: turn 3")]
    fn a_node_with_a_broken_merge_fails_its_check() {
        let mut node = node();
        node.groups
            .get_mut(&GroupId(0))
            .expect("group 0")
            .break_turn_for_test(3);
        node.check_invariants();
    }
}
