//! Atomic multicast at one node (thesis §2.6, §3.3): the node's Ring Paxos
//! streams, rate leveling at the streams it coordinates, and the
//! deterministic merge of the streams it learns.

use crate::merger::{MergeBug, Merged, Merger};
use crate::skip_pacer::SkipPacer;
use amulet_paxos::{Bugs, Input, Output, ProposeError, StreamNode};
use amulet_storage::AcceptorLog;
use amulet_types::{Ballot, Instance, NodeId, StreamConfig, StreamId, TimeMicros, ValueId};
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
    /// Values in the merged delivery order.
    pub delivered: Vec<Merged>,
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
    merger: Merger,
    output: Output,
    effects: Effects,
}

impl MulticastNode {
    /// A node that is a member of each given stream, with the stream's
    /// acceptor log. It learns (and merges) every stream it is a member of.
    pub fn new(
        me: NodeId,
        streams: Vec<(StreamConfig, Box<dyn AcceptorLog>)>,
        incarnation: u32,
        now: TimeMicros,
    ) -> MulticastNode {
        let instances_per_round = streams
            .first()
            .map_or(1, |(c, _)| c.limits.merge_instances_per_round);
        let ids: Vec<StreamId> = streams.iter().map(|(c, _)| c.stream).collect();
        let streams: BTreeMap<StreamId, StreamNode> = streams
            .into_iter()
            .map(|(config, log)| {
                let id = config.stream;
                (id, StreamNode::new(me, config, log, incarnation, now))
            })
            .collect();
        MulticastNode {
            me,
            merger: Merger::new(ids, instances_per_round),
            streams,
            pacing: BTreeMap::new(),
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

    /// The merge, for its position and counters.
    pub fn merger(&self) -> &Merger {
        &self.merger
    }

    /// Turns deliberate bugs on in every stream (simulator only).
    pub fn set_bugs(&mut self, bugs: Bugs) {
        for stream in self.streams.values_mut() {
            stream.set_bugs(bugs);
        }
    }

    /// Turns on a deliberately wrong merge at this node (simulator only).
    pub fn set_merge_bug(&mut self, bug: MergeBug) {
        self.merger.set_bug(bug);
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
    }

    /// Time passed: timeouts, heartbeats, rate leveling.
    pub fn tick(&mut self, now: TimeMicros) {
        for stream in self.streams.values_mut() {
            stream.step(now, Input::Tick, &mut self.output);
        }
        self.level_rates(now);
        self.absorb();
        self.report_merge_needs();
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
            stream.set_merge_need(self.merger.need(*id, threshold));
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
            self.merger
                .push(decided.stream, decided.instance, decided.batch);
        }
        while let Some(merged) = self.merger.pop() {
            self.effects.delivered.push(merged);
        }
    }
}

fn stream_limits(stream: &StreamNode) -> (u64, u64) {
    let limits = &stream.config().limits;
    (limits.skip_rate_per_second, limits.skip_interval_micros)
}
