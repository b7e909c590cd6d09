//! Elastic Paxos subscriptions requested at this node (thesis ch. 4,
//! Algorithm 1): the control values that subscribe a group to a stream or
//! unsubscribe it, and their re-broadcast when a subscription stalls
//! (§4.4.3).

use super::{MulticastError, MulticastNode};
use crate::control::{Control, ControlOp};
use crate::group::GroupId;
use crate::merger::LaneState;
use amulet_types::{StreamId, TimeMicros, ValueId};
use amulet_wire::ValueKind;

/// A subscription whose new stream's copy is not found this long after
/// the merge stopped for it (and after the lane recovering the stream has
/// caught up with it) is broadcast to the new stream again (thesis
/// §4.4.3: the process that proposed the copies may have crashed between
/// them).
const REBROADCAST_AFTER_MICROS: u64 = 1_000_000;

impl MulticastNode {
    /// Subscribes merge group `group` to `stream` (Elastic Paxos, thesis
    /// Algorithm 1): orders the hint `Prepare` and one copy of the request
    /// in `via`, a stream the group merges, and the other copy in `stream`.
    /// Every replica of the group starts merging `stream` at the same
    /// round once both copies are merged (see [`crate::Merger`]); watch
    /// [`crate::Effects::subscriptions`] for it. Returns the request's
    /// name. This node must be a member of both streams.
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

    pub(super) fn propose_control(
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
    pub(super) fn rebroadcast_stalled(&mut self, now: TimeMicros) {
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
}
