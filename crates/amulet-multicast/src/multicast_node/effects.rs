//! What the runtime must do after feeding a node inputs, and how stream
//! output becomes it: decided instances go into every merge that takes
//! their stream, merged values and subscription changes out of them.

use super::MulticastNode;
use crate::group::GroupId;
use crate::merger::{Merged, SubscriptionEvent};
use amulet_types::{Instance, NodeId, StreamId};
use amulet_wire::Envelope;

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

impl MulticastNode {
    /// The end of a round of inputs: every stream's proposals leave and
    /// its queued values become instances (one `Propose` and about one
    /// instance per stream and round, `StreamNode::batch_per_round`), the
    /// other streams coordinated here skip level with new values
    /// (`anticipate`), and the accumulated effects are taken.
    pub fn drain(&mut self) -> Effects {
        self.flush_streams();
        self.anticipate();
        // Values a learner delivered in this round may now wait on
        // another stream (local catch-up, a need sent out of schedule).
        self.catch_up_locally(self.now);
        self.flush_streams();
        std::mem::take(&mut self.effects)
    }

    fn flush_streams(&mut self) {
        let now = self.now;
        for stream in self.streams.values_mut() {
            stream.flush_round(now, &mut self.output);
        }
        self.absorb();
    }

    /// Moves stream output into the merge and the effects.
    pub(super) fn absorb(&mut self) {
        let output = &mut self.output;
        self.effects.sends.append(&mut output.sends);
        self.effects
            .sends_after_sync
            .append(&mut output.sends_after_sync);
        if let Some(trimmed) = output.trimmed.take() {
            self.effects.trimmed.push(trimmed);
        }
        for decided in output.decided.drain(..) {
            self.waits.decided(decided.stream, self.now);
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
