//! Rate leveling and merge catch-up (thesis §3.3): the coordinator of
//! each stream proposes skips so that every stream keeps λ instances per
//! second ([`SkipPacer`]); a merge blocked on a stream asks it to catch
//! up, at once when this node coordinates it, through heartbeats to its
//! coordinator otherwise; and a stream coordinated here that proposes
//! values makes the other streams coordinated here skip level with it in
//! the same round (anticipatory skips).
//!
//! **Pacing on demand** (ours). The thesis paces every stream all the
//! time, so an idle cluster decides 1/Δ skip instances per stream per
//! second, each a ring lap and, in sync mode, a log sync at two
//! acceptors: measured on the project's machine (2026-12-02), an idle
//! three-node cluster spent about 0.4 of a core and 240 `fdatasync`s per
//! second per node on it. Pacing only matters when a merge somewhere
//! holds *values* back while it waits on the stream (skip weight waiting
//! behind it holds nothing back). Where the streams a merge takes are
//! coordinated by one node, anticipatory skips level them in each value's
//! own round and nothing waits. So a coordinator paces its stream only
//! while, within the last [`PACING_HOLD_MICROS`], a merge held values
//! back waiting on it: its own merge for longer than Δ (a wait the same
//! round's decisions end does not count), or a peer's, which reports a
//! need beyond what the coordinator has proposed. A merge here that holds
//! values back waiting on a stream coordinated elsewhere sends its need
//! to the stream's members at once, out of the heartbeat schedule, when
//! the stream decided nothing for [`QUIET_MICROS`] (its coordinator may
//! not be pacing it) or the values waited Δ (its next skip is late), so
//! the first value after an idle period waits one message and one
//! decision, not a heartbeat interval. A woken pacer starts its count
//! afresh: the idle time is not made up. Order is never at stake: pacing
//! changes only how much is skipped and when, never the merge rule.

use super::MulticastNode;
use crate::skip_pacer::SkipPacer;
use amulet_paxos::StreamNode;
use amulet_types::{Ballot, StorageMode, StreamId, TimeMicros};
use std::collections::BTreeMap;

/// A merge blocked on one stream asks for catch-up when the others are
/// ahead by more than this much time at λ (well above Δ and one network
/// round trip, so ordinary pacing jitter never triggers it).
const CATCH_UP_MICROS: u64 = 25_000;

/// The smallest backlog that asks for catch-up (when λ is 0 or tiny).
const CATCH_UP_WEIGHT_MIN: u64 = 64;

/// A coordinator paces its stream while a merge held values back waiting
/// on it within this long.
pub(super) const PACING_HOLD_MICROS: u64 = 1_000_000;

/// A merge holding values back waiting on a stream that decided nothing
/// for this long sends its need at once instead of with the next
/// heartbeat (the stream's coordinator may have stopped pacing it).
pub(super) const QUIET_MICROS: u64 = 10_000;

/// Rate leveling of one stream this node coordinates.
pub(super) struct Pacing {
    pacer: SkipPacer,
    ballot: Ballot,
    proposed_weight: u64,
    /// No merge waited on the stream lately: no pacing skips.
    dormant: bool,
}

/// What this node knows of merges waiting on each stream.
#[derive(Debug, Default)]
pub(super) struct Waits {
    /// Streams a merge here waits on now holding values back, and since when.
    blocked: BTreeMap<StreamId, TimeMicros>,
    /// When a merge here last held values back waiting on each stream
    /// longer than Δ, and the merge position it needed.
    waited: BTreeMap<StreamId, (TimeMicros, u64)>,
    /// When each stream's need was last sent out of schedule.
    urgent_sent: BTreeMap<StreamId, TimeMicros>,
    /// When this node last learned a decision of each stream.
    decided_at: BTreeMap<StreamId, TimeMicros>,
}

impl Waits {
    /// A decision of `stream` was learned at `now`.
    pub(super) fn decided(&mut self, stream: StreamId, now: TimeMicros) {
        self.decided_at.insert(stream, now);
    }

    /// The node is no longer a member of `stream`.
    pub(super) fn forget(&mut self, stream: StreamId) {
        self.blocked.remove(&stream);
        self.waited.remove(&stream);
        self.urgent_sent.remove(&stream);
        self.decided_at.remove(&stream);
    }

    /// The need a merge here had of `stream` when it last held values back
    /// waiting on it, if that was within the hold.
    fn recent_need(&self, stream: StreamId, now: TimeMicros) -> Option<u64> {
        self.waited
            .get(&stream)
            .filter(|(at, _)| now < at.plus(PACING_HOLD_MICROS))
            .map(|(_, need)| *need)
    }
}

impl MulticastNode {
    /// Proposes skips at the streams this node coordinates (thesis §3.3),
    /// those some merge waited on lately (see the module doc).
    pub(super) fn level_rates(&mut self, now: TimeMicros) {
        // Retired streams too (see the `retired` field): merges short of
        // their fence may still wait on one (dmap swarm seed 1000163).
        for (id, stream) in self.streams.iter_mut() {
            let Some((ballot, proposed_weight, delay)) = stream.coordinator_progress() else {
                self.pacing.remove(id);
                continue;
            };
            let limits = &stream_limits(stream);
            let pacing = self.pacing.entry(*id).or_insert_with(|| Pacing {
                pacer: SkipPacer::new(limits.0, limits.1, now),
                ballot,
                proposed_weight,
                dormant: true,
            });
            if pacing.ballot != ballot {
                pacing.pacer.reset(now);
                pacing.ballot = ballot;
                pacing.proposed_weight = 0;
            }
            let new_weight = proposed_weight.saturating_sub(pacing.proposed_weight);
            pacing.proposed_weight = proposed_weight;
            let heard = stream
                .need_heard_at()
                .is_some_and(|at| now < at.plus(PACING_HOLD_MICROS));
            let waited = self.waits.recent_need(*id, now).is_some();
            if !heard && !waited {
                pacing.dormant = true;
                continue;
            }
            if pacing.dormant {
                // Woken: the idle time is not made up (as for a new
                // coordinator), so the stream does not jump ahead.
                pacing.dormant = false;
                pacing.pacer.reset(now);
            } else if new_weight > 0 {
                pacing.pacer.record_proposed(new_weight);
            }
            pacing.pacer.record_decision_delay(delay);
            if let Some(skips) = pacing.pacer.on_tick(now) {
                stream.propose_skip(now, skips, &mut self.output);
            }
        }
    }

    /// Whether some stream coordinated here is being paced (a runtime
    /// ticks such a node every millisecond; see [`PACING_HOLD_MICROS`]).
    pub fn pacing_active(&self) -> bool {
        self.pacing.values().any(|p| !p.dormant)
    }

    /// Local catch-up: when this node's merge is blocked on a stream this
    /// node coordinates while another stream holds decided instances, the
    /// coordinator skips up to them at once instead of at its next pacing
    /// tick. Without it every value of a busy stream waits up to Δ (plus a
    /// decision) for the idle stream's next skip, which bounds a closed
    /// loop client at about one operation per Δ. It changes only how
    /// much is skipped and when, never the merge rule, so order is safe
    /// whatever it does; it cannot run away, since it never skips past
    /// what another stream has decided. A merge holding values back for a
    /// stream coordinated elsewhere asks that coordinator out of the
    /// heartbeat schedule (see the module doc); one far behind also asks
    /// in its heartbeats ([`MulticastNode::report_merge_needs`]).
    pub(super) fn catch_up_locally(&mut self, now: TimeMicros) {
        // The position each blocked stream must reach, the most any group
        // needs (a stream reaching it unblocks every group waiting on it),
        // and whether values wait behind it (not only skip weight).
        // Runs after every message: the buffer is reused, not allocated.
        let mut needs = std::mem::take(&mut self.needs_scratch);
        needs.clear();
        for merger in self.groups.values() {
            if let Some(waiting) = merger.waiting_on() {
                let need = merger.need(waiting, 1);
                if need == 0 {
                    continue;
                }
                let values = merger.holds_values_beyond(waiting);
                match needs.iter_mut().find(|(s, _, _)| *s == waiting) {
                    Some((_, most, held)) => {
                        *most = (*most).max(need);
                        *held |= values;
                    }
                    None => needs.push((waiting, need, values)),
                }
            }
        }
        self.waits
            .blocked
            .retain(|stream, _| needs.iter().any(|(s, _, held)| s == stream && *held));
        let mut skipped = false;
        for &(waiting, need, held) in &needs {
            let Some(stream) = self.streams.get_mut(&waiting) else {
                continue;
            };
            if held {
                let delta = stream.config().limits.skip_interval_micros;
                let since = *self.waits.blocked.entry(waiting).or_insert(now);
                let held_long = now.since(since) >= delta;
                if held_long {
                    self.waits.waited.insert(waiting, (now, need));
                }
                if !stream.is_coordinator() {
                    // Values wait on a stream coordinated elsewhere: ask
                    // its coordinator now rather than with the next
                    // heartbeat, at once if the stream decided nothing
                    // lately (it may not be paced), else once the values
                    // waited Δ (its next skip is late).
                    let quiet = self
                        .waits
                        .decided_at
                        .get(&waiting)
                        .is_none_or(|at| now.since(*at) >= QUIET_MICROS);
                    let asked = self
                        .waits
                        .urgent_sent
                        .get(&waiting)
                        .is_some_and(|at| now < at.plus(delta));
                    if (quiet || held_long) && !asked {
                        stream.send_merge_need_now(now, need, &mut self.output);
                        self.waits.urgent_sent.insert(waiting, now);
                        skipped = true;
                    }
                }
            }
            if !stream.is_coordinator() {
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

    /// Anticipatory skips (ours; thesis §3.3's catch-up, done before the
    /// merge blocks): when a stream coordinated here proposed instances of
    /// values since the last drain, every other stream coordinated here
    /// that a merge group takes with it skips up to the position those
    /// values reach, in the same round. Both proposals then share one
    /// group commit and one ring lap. Local catch-up skips only once the
    /// value is decided and the merge blocks on the idle stream, so a value
    /// waited for a second lap (two more log syncs at the acceptors in sync
    /// mode, and in sync mode up to Δ for the catch-up's rate limit):
    /// measured with one client, about half of a put's latency. Like every
    /// catch-up it changes only how much is skipped and when, never the
    /// merge rule, and it cannot run away: it skips to what a stream here
    /// proposed, at most once a round, and skips themselves never make
    /// another stream anticipate (only instances of values count). Called
    /// by [`MulticastNode::drain`], once per flush round of the host.
    pub(super) fn anticipate(&mut self) {
        let mut leaders: Vec<(StreamId, u64)> = Vec::new();
        for (id, stream) in &self.streams {
            let Some((position, values)) = stream.projected_values() else {
                continue;
            };
            let seen = self.anticipated.insert(*id, values);
            // A new coordinator counts from zero; the first sight of one
            // only sets the mark.
            if seen.is_some_and(|seen| values > seen) && !self.retired.contains(id) {
                leaders.push((*id, position));
            }
        }
        if leaders.is_empty() {
            return;
        }
        let mut needs = std::mem::take(&mut self.needs_scratch);
        needs.clear();
        for merger in self.groups.values() {
            let members = merger.streams();
            for &(leader, position) in &leaders {
                if !members.contains(&leader) {
                    continue;
                }
                for &other in members.iter().filter(|s| **s != leader) {
                    match needs.iter_mut().find(|(s, _, _)| *s == other) {
                        Some((_, most, _)) => *most = (*most).max(position),
                        None => needs.push((other, position, false)),
                    }
                }
            }
        }
        let now = self.now;
        let mut skipped = false;
        for &(other, need, _) in &needs {
            if self.retired.contains(&other) {
                continue;
            }
            let Some(stream) = self.streams.get_mut(&other) else {
                continue;
            };
            if stream.is_coordinator() {
                skipped |= stream.catch_up_local(now, need, &mut self.output);
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
    pub(super) fn report_merge_needs(&mut self) {
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
