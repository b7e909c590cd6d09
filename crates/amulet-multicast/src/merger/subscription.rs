//! Elastic Paxos subscriptions (thesis ch. 4, Algorithm 1): control
//! values merged like any value but acted on here. `Prepare(G, S)`
//! starts recovering `S` from its instance 0 (§4.4.3); `Subscribe(G, S)`
//! stops the merge until the lane of `S` finds the request's copy ordered
//! in `S`, and `S` then joins at the merge point `max(r_G, r_S) + 1`;
//! `Unsubscribe(G, S)` merged in round `r` removes `S` after round `r`.

use super::{MergeBug, Merger};
use crate::control::{Control, ControlOp};
use crate::lane::{Lane, LaneState};
use amulet_types::{Instance, StreamId, ValueId};
use serde::{Deserialize, Serialize};

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

impl Merger {
    /// The subscription the merge is stopped for, if any.
    pub fn waiting(&self) -> Option<PendingJoin> {
        self.waiting
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

    /// Acts on a control value merged in the current round.
    pub(super) fn on_control(&mut self, bytes: &[u8]) {
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
    pub(super) fn resolve_waiting(&mut self) -> bool {
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
        // Kept on in production: a merge point the merge has passed would
        // let the stream join rounds behind the others (Fig. 4.2's cycle).
        // The merge stopped right after the other copy, in round `r_G`,
        // so at worst it stands at the start of round `r_G + 1`.
        assert!(
            self.bug == MergeBug::MergePointFromNewStreamOnly || round >= self.rounds,
            "merge of group {}: merge point {round} of {:?} lies before round {}",
            self.group,
            pending.stream,
            self.rounds
        );
        lane.state = LaneState::Joining { round };
        lane.start = lane.start.max(round.saturating_mul(m));
        lane.drop_below_start(self.group, m);
        self.completed.insert(pending.request);
        self.waiting = None;
        // The merge stopped right after the other copy, in round `r_G`; if
        // that was the round's last instance, round `r_G + 1` (the merge
        // point) has begun without the new stream: it joins now.
        if self.at_boundary() && round <= self.rounds {
            self.begin_round();
        }
        true
    }
}
