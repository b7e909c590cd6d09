//! One stream's part of a merge: the decided instances waiting to be
//! merged, the stream's merge position, and where the lane stands in the
//! life of a subscription (Elastic Paxos, thesis ch. 4).
//!
//! Positions are absolute merge weight from the stream's instance 0
//! (a value or null instance weighs 1, a skip of `k` weighs `k`). Round
//! `r` of every merge takes weight `r*M .. (r+1)*M` of every stream it
//! merges, so a value's round is a function of its stream position alone
//! and every merge of any set of streams orders two values the same way
//! (by round, then stream id): the merge of a subset delivers exactly the
//! projection of the merge of all streams. That is what makes a merge
//! point "aligned" (§4.4.1) and why a subscription is safe at any round
//! boundary that every replica of the group agrees on.

use crate::control::{Control, ControlOp};
use crate::group::GroupId;
use amulet_paxos::Delivered;
use amulet_types::{Instance, ValueId};
use amulet_wire::{Batch, ValueKind};
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// Where a lane stands in the life of a subscription.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum LaneState {
    /// Merged every round.
    Active,
    /// Merged through round `last_round`, then removed (an unsubscribe
    /// merged in that round).
    Leaving {
        /// The last round the stream is merged in.
        last_round: u64,
    },
    /// Recovering the stream from its start, delivering nothing, to find
    /// the copy of subscribe request `request` ordered in it.
    Scanning {
        /// The subscribe request looked for.
        request: ValueId,
    },
    /// The copy was found in round `copy_round` of the stream; the lane
    /// keeps what lies after that round until the other copy arrives.
    Found {
        /// The subscribe request.
        request: ValueId,
        /// The round of the copy ordered in this stream.
        copy_round: u64,
    },
    /// Enters the merge at round `round`, the merge point.
    Joining {
        /// The first round the stream is merged in.
        round: u64,
    },
}

impl LaneState {
    /// Whether the lane takes part in the round-robin now.
    pub fn in_rounds(&self) -> bool {
        matches!(self, LaneState::Active | LaneState::Leaving { .. })
    }
}

/// Per-stream merge state.
#[derive(Clone, Debug)]
pub(crate) struct Lane {
    /// Decided batches not yet merged, in instance order.
    pub(crate) queue: VecDeque<(Instance, Batch)>,
    /// The first instance neither merged nor dropped.
    pub(crate) next: Instance,
    /// Skip weight taken off the lane but not yet consumed by rounds.
    pub(crate) carry: u64,
    /// Position after every instance pushed.
    pub(crate) pushed: u64,
    /// Position consumed by rounds or dropped: `consumed + carry` is the
    /// position of `next`.
    pub(crate) consumed: u64,
    /// Ids of the values merged or dropped (see `LanePosition::delivered`).
    pub(crate) delivered: Delivered,
    pub(crate) state: LaneState,
    /// What lies below this position is dropped, not merged: the lane
    /// joins the merge there.
    pub(crate) start: u64,
}

/// Instances a Found lane holds before the merge gives it up (the
/// request's other copy may never come: its proposer crashed); a later
/// copy starts a new scan.
pub(crate) const FOUND_HELD_MAX: usize = 1 << 16;

impl Lane {
    /// A lane merged from the start.
    pub(crate) fn active() -> Lane {
        Lane::at(Instance(0), 0, Delivered::default(), LaneState::Active, 0)
    }

    /// A lane recovering the stream from instance 0 to find `request`.
    pub(crate) fn scanning(request: ValueId) -> Lane {
        Lane::at(
            Instance(0),
            0,
            Delivered::default(),
            LaneState::Scanning { request },
            u64::MAX,
        )
    }

    /// A lane fed from `next`, whose position is `position`.
    pub(crate) fn at(
        next: Instance,
        position: u64,
        delivered: Delivered,
        state: LaneState,
        start: u64,
    ) -> Lane {
        Lane {
            queue: VecDeque::new(),
            next,
            carry: 0,
            pushed: position,
            consumed: position,
            delivered,
            state,
            start,
        }
    }

    /// The next instance the lane expects to be pushed.
    pub(crate) fn expected(&self) -> Instance {
        self.queue.back().map_or(self.next, |(last, _)| last.next())
    }

    /// A decided instance. Returns false when it was below what the lane
    /// expects (already merged, dropped or queued) and was ignored.
    pub(crate) fn push(
        &mut self,
        group: GroupId,
        instances_per_round: u64,
        instance: Instance,
        batch: Batch,
    ) -> bool {
        let expected = self.expected();
        if instance < expected {
            return false;
        }
        assert_eq!(instance, expected, "a stream decided out of order");
        self.pushed = self.pushed.saturating_add(batch.merge_weight());
        self.queue.push_back((instance, batch));
        self.drop_below_start(group, instances_per_round);
        true
    }

    /// Takes what lies below `start` off the lane without merging it:
    /// the stream's part before the merge point. Scans it for the copy of
    /// the subscribe request a Scanning lane looks for.
    pub(crate) fn drop_below_start(&mut self, group: GroupId, instances_per_round: u64) {
        while self.consumed < self.start {
            if self.carry > 0 {
                let used = self.carry.min(self.start - self.consumed);
                self.carry -= used;
                self.consumed += used;
                continue;
            }
            let Some((instance, batch)) = self.queue.pop_front() else {
                break;
            };
            self.next = instance.next();
            let at = self.consumed;
            match batch {
                Batch::Skip(count) => self.carry = count,
                Batch::Null => self.consumed += 1,
                Batch::Values(values) => {
                    self.consumed += 1;
                    for value in values {
                        if !self.delivered.insert(value.id) {
                            continue;
                        }
                        if let LaneState::Scanning { request } = self.state {
                            if is_copy(&value.kind, &value.bytes, group, request) {
                                let copy_round = at / instances_per_round;
                                self.state = LaneState::Found {
                                    request,
                                    copy_round,
                                };
                                self.start = (copy_round + 1) * instances_per_round;
                            }
                        }
                    }
                }
            }
        }
    }
}

/// Whether a value is a copy of subscribe request `request` of `group`.
fn is_copy(kind: &ValueKind, bytes: &[u8], group: GroupId, request: ValueId) -> bool {
    *kind == ValueKind::Control
        && Control::decode(bytes)
            .is_ok_and(|c| c.op == ControlOp::Subscribe && c.group == group && c.request == request)
}
