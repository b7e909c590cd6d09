//! The coordinator role (thesis A.1.2) and the ring phases it drives.
//!
//! The lowest live voting acceptor coordinates. It pre-executes phase 1 for
//! a range of instances with one ring message; when the acceptors report no
//! votes beyond the range, the promise covers every later instance too. It
//! then batches queued values into instances, keeping at most
//! `pipeline_instances_max` undecided, and re-sends phase 2 for instances
//! whose decision did not come back in time.

use crate::acceptor::Phase1Tally;
use crate::output::Output;
use crate::proposer::PROPOSE_BYTES_MAX;
use crate::stream_node::StreamNode;
use amulet_types::{Ballot, Instance, NodeId, TimeMicros};
use amulet_wire::{Accepted, Batch, Message, Value};
use std::collections::{BTreeMap, VecDeque};

/// `hops` of a decision sent straight to every member (not forwarded).
pub(crate) const HOPS_DIRECT: u32 = u32::MAX;

#[derive(Debug)]
pub(crate) struct InFlight {
    pub(crate) batch: Batch,
    pub(crate) first_sent: TimeMicros,
    pub(crate) sent: TimeMicros,
}

#[derive(Debug)]
pub(crate) enum Phase {
    /// Waiting for ring phase 1 of `[from, to)` to return.
    Preparing { from: Instance, sent: TimeMicros },
    /// Instances below `prepared_to` may be proposed.
    Ready,
}

#[derive(Debug)]
pub(crate) struct Coordinator {
    pub(crate) ballot: Ballot,
    pub(crate) phase: Phase,
    /// Instances below this are prepared (`u64::MAX`: all).
    pub(crate) prepared_to: Instance,
    pub(crate) next_instance: Instance,
    pub(crate) in_flight: BTreeMap<Instance, InFlight>,
    /// Instances gap repair took over; their decision will tell.
    pub(crate) foreign: BTreeMap<Instance, TimeMicros>,
    pub(crate) queue: VecDeque<Value>,
    pub(crate) pending_skip: u64,
    pub(crate) proposed_weight: u64,
    /// Skip weight proposed to let learners' merges catch up (not part of
    /// this coordinator's λ pace, so rate leveling does not count it).
    pub(crate) catch_up_weight: u64,
    /// Instances of fresh values this coordinator proposed (not skips or
    /// nulls): what makes the other streams of a merge anticipate
    /// (`MulticastNode`'s anticipatory skips).
    pub(crate) value_instances: u64,
    pub(crate) decide_delay_micros: u64,
}

impl Coordinator {
    fn new(ballot: Ballot, from: Instance) -> Coordinator {
        Coordinator {
            ballot,
            phase: Phase::Ready,
            prepared_to: from,
            next_instance: from,
            in_flight: BTreeMap::new(),
            foreign: BTreeMap::new(),
            queue: VecDeque::new(),
            pending_skip: 0,
            proposed_weight: 0,
            catch_up_weight: 0,
            value_instances: 0,
            decide_delay_micros: 0,
        }
    }
}

impl StreamNode {
    /// Merge catch-up (thesis §3.3): a learner's merge is blocked on this
    /// stream while other streams have `need - position` merge weight
    /// decided and waiting. That happens when this stream fell behind the
    /// others' λ pace, e.g. while it had no coordinator: a new coordinator
    /// cannot know how long the stream was leaderless, so the learners
    /// tell it. Positions are absolute (merge weight from instance 0), so
    /// the same need heard twice, or from several learners, is skipped
    /// once. Acts only when this node's learner has delivered everything
    /// below the coordinator's in-flight window, so its projected position
    /// is exact.
    pub(crate) fn catch_up(&mut self, need: u64) {
        let Some(projected) = self.projected_position() else {
            return;
        };
        let c = self
            .coordinator
            .as_mut()
            .expect("projected only while coordinating");
        if need > projected {
            let extra = need - projected;
            c.pending_skip += extra;
            c.catch_up_weight += extra;
        }
    }

    /// The merge position the stream reaches once everything this
    /// coordinator proposed or queued as a skip is decided: the learner's
    /// position plus the weight in flight and the pending skip. `None`
    /// unless coordinating and ready, with this node's learner level with
    /// the start of the in-flight window (otherwise the position of the
    /// instances between is unknown here).
    pub(crate) fn projected_position(&self) -> Option<u64> {
        let next_learned = self.learner.next;
        let c = self.coordinator.as_ref()?;
        if !matches!(c.phase, Phase::Ready) || next_learned > c.next_instance {
            return None;
        }
        let mut projected = self.learner.position.saturating_add(c.pending_skip);
        let mut covered = 0u64;
        for (_, entry) in c.in_flight.range(next_learned..) {
            projected = projected.saturating_add(entry.batch.merge_weight());
            covered += 1;
        }
        (covered == c.next_instance.0 - next_learned.0).then_some(projected)
    }

    fn prepare_window(&self) -> u64 {
        4 * self.config.limits.pipeline_instances_max
    }

    /// Takes over or steps down according to the failure detector.
    pub(crate) fn elect(&mut self, out: &mut Output) {
        let candidate = self.ring.coordinator(self.acceptor.is_some());
        match (&self.coordinator, candidate == Some(self.me)) {
            (None, true) => {
                let ballot = self.highest_ballot.next_for(self.me);
                self.start_coordinating(ballot, out);
            }
            (Some(_), false) => {
                let old = self.coordinator.take().expect("checked above");
                // Hand queued values to the new coordinator; proposers retry
                // anything lost on the way.
                // In messages of at most PROPOSE_BYTES_MAX (plus one
                // value), as proposers send them: a queue that grew while
                // no instance could be decided may hold far more than a
                // frame, and a frame over the limit is refused by the
                // peer, every time it is sent again.
                if let Some(next) = candidate {
                    let hop = self.ring.route(next);
                    let mut values = Vec::new();
                    let mut bytes = 0;
                    for value in old.queue {
                        bytes += value.bytes.len();
                        values.push(value);
                        if bytes >= PROPOSE_BYTES_MAX {
                            let values = std::mem::take(&mut values);
                            self.send(hop, Message::Propose { values, hops: 1 }, out);
                            bytes = 0;
                        }
                    }
                    if !values.is_empty() {
                        self.send(hop, Message::Propose { values, hops: 1 }, out);
                    }
                }
            }
            _ => {}
        }
    }

    fn start_coordinating(&mut self, ballot: Ballot, out: &mut Output) {
        self.observe_ballot(ballot);
        let from = self.learner.next;
        let queue = self.coordinator.take().map(|c| c.queue).unwrap_or_default();
        let mut coordinator = Coordinator::new(ballot, from);
        coordinator.queue = queue;
        self.coordinator = Some(coordinator);
        self.stats.phase1_started += 1;
        self.send_phase1(from, out);
    }

    fn send_phase1(&mut self, from: Instance, out: &mut Output) {
        let ballot = self.coordinator.as_ref().expect("coordinating").ballot;
        let to = Instance(from.0.saturating_add(self.prepare_window()));
        let mut tally = Phase1Tally {
            ballot,
            from,
            to,
            votes: 0,
            accepted: Vec::new(),
            accepted_end: from,
            trimmed_below: Instance(0),
        };
        self.phase1_vote(&mut tally, out);
        let now = self.now;
        let coordinator = self.coordinator.as_mut().expect("coordinating");
        coordinator.phase = Phase::Preparing { from, sent: now };
        if tally.votes as usize >= self.config.quorum() {
            self.phase1_complete(tally, out);
        } else if let Some(next) = self.ring.successor() {
            let message = phase1_message(tally, 1);
            self.send_after_vote(next, message, out);
        }
    }

    /// A ring phase 1 message arrives.
    pub(crate) fn on_phase1(&mut self, message: Message, out: &mut Output) {
        let Message::Phase1 {
            ballot,
            from,
            to,
            votes,
            accepted,
            accepted_end,
            trimmed_below,
            hops,
        } = message
        else {
            unreachable!("dispatched on Phase1")
        };
        self.observe_ballot(ballot);
        let mut tally = Phase1Tally {
            ballot,
            from,
            to,
            votes,
            accepted,
            accepted_end,
            trimmed_below,
        };
        if ballot.node == self.me.0 {
            let expected = match &self.coordinator {
                Some(c) if c.ballot == ballot => {
                    matches!(c.phase, Phase::Preparing { from: f, .. } if f == from)
                }
                _ => false,
            };
            if expected && tally.votes as usize >= self.config.quorum() {
                self.phase1_complete(tally, out);
            }
            return;
        }
        if hops as usize > 2 * self.ring.len() + 2 {
            return;
        }
        let voted = self.phase1_vote(&mut tally, out);
        if let Some(next) = self.ring.successor() {
            let message = phase1_message(tally, hops + 1);
            if voted {
                self.send_after_vote(next, message, out);
            } else {
                self.send(next, message, out);
            }
        }
    }

    /// A quorum promised: re-propose what they voted for, fill holes with
    /// `Null`, and open the range for new values.
    fn phase1_complete(&mut self, tally: Phase1Tally, out: &mut Output) {
        let start = tally.from.max(tally.trimmed_below);
        let end = tally.accepted_end.min(tally.to).max(start);
        let mut chosen: BTreeMap<Instance, (Ballot, Batch)> = BTreeMap::new();
        for Accepted {
            instance,
            ballot,
            batch,
        } in tally.accepted
        {
            if instance < start || instance >= end {
                continue;
            }
            let replace = chosen.get(&instance).is_none_or(|(b, _)| ballot > *b);
            if replace {
                chosen.insert(instance, (ballot, batch));
            }
        }
        let open = tally.accepted_end <= tally.to;
        let coordinator = self.coordinator.as_mut().expect("coordinating");
        coordinator.phase = Phase::Ready;
        coordinator.prepared_to = if open { Instance(u64::MAX) } else { tally.to };
        coordinator.next_instance = coordinator.next_instance.max(end);
        let mut instance = start;
        while instance < end {
            let mut batch = chosen.remove(&instance).map_or(Batch::Null, |(_, b)| b);
            if self.bugs.ignore_phase1_votes {
                batch = Batch::Null;
            }
            let proposed = self
                .coordinator
                .as_ref()
                .expect("coordinating")
                .in_flight
                .contains_key(&instance);
            if !proposed && instance >= self.learner.next && !self.learner.has_decided(instance) {
                self.propose_instance(instance, batch, false, out);
            }
            instance = instance.next();
        }
        if !open {
            self.send_phase1(tally.to, out);
        }
    }

    /// Proposes queued values and skips while the pipeline has room.
    pub(crate) fn coordinator_pump(&mut self, out: &mut Output) {
        let pipeline = self.config.limits.pipeline_instances_max as usize;
        let batch_bytes_max = self.config.limits.batch_bytes_max;
        loop {
            let Some(c) = self.coordinator.as_mut() else {
                return;
            };
            if c.next_instance >= c.prepared_to || c.in_flight.len() >= pipeline {
                return;
            }
            let batch = if c.pending_skip > 0 {
                Batch::Skip(std::mem::take(&mut c.pending_skip))
            } else if !c.queue.is_empty() {
                let mut values = Vec::new();
                let mut bytes = 0;
                while let Some(value) = c.queue.front() {
                    if !values.is_empty() && bytes + value.bytes.len() > batch_bytes_max {
                        break;
                    }
                    bytes += value.bytes.len();
                    values.push(c.queue.pop_front().expect("front exists"));
                }
                Batch::Values(values)
            } else {
                return;
            };
            let instance = c.next_instance;
            c.next_instance = instance.next();
            self.propose_instance(instance, batch, true, out);
        }
    }

    /// Proposes `batch` in `instance`. A `fresh` batch is new weight of this
    /// coordinator; a batch recovered in phase 1 was paced by the coordinator
    /// that first proposed it (possibly long ago: a restarted coordinator
    /// re-proposes everything above its empty learner) and must not count
    /// towards this one's rate, or it would stop skipping for as long as
    /// that weight lasts (simulator seed 16: a 4 s silent stream).
    fn propose_instance(
        &mut self,
        instance: Instance,
        batch: Batch,
        fresh: bool,
        out: &mut Output,
    ) {
        let now = self.now;
        let c = self.coordinator.as_mut().expect("coordinating");
        if fresh {
            c.proposed_weight = c.proposed_weight.saturating_add(batch.merge_weight());
            if matches!(batch, Batch::Values(_)) {
                c.value_instances += 1;
            }
        }
        self.stats.instances_proposed += 1;
        if let Batch::Skip(count) = batch {
            self.stats.skips_proposed += count;
        }
        let entry = InFlight {
            batch: batch.clone(),
            first_sent: now,
            sent: now,
        };
        c.in_flight.insert(instance, entry);
        self.send_phase2(instance, batch, out);
    }

    /// Votes locally, then starts the batch around the ring.
    fn send_phase2(&mut self, instance: Instance, batch: Batch, out: &mut Output) {
        let ballot = self.coordinator.as_ref().expect("coordinating").ballot;
        self.learner.cache_phase2(instance, ballot, &batch);
        let voted = self.phase2_vote(instance, ballot, &batch, out);
        let votes = if voted { self.vote_bit() } else { 0 };
        let Some(last) = self.ring.last_acceptor_from(self.me, true) else {
            return;
        };
        if votes.count_ones() as usize >= self.config.quorum() {
            self.decide(instance, ballot, batch, 0, out);
            return;
        }
        if last == self.me {
            return;
        }
        if let Some(next) = self.ring.successor() {
            let message = Message::Phase2 {
                ballot,
                instance,
                batch,
                votes,
                last,
                hops: 1,
            };
            self.send_after_vote(next, message, out);
        }
    }

    /// This acceptor's bit in a phase 2 vote set (its position in the
    /// stream's acceptor list; configs hold at most 15 acceptors).
    fn vote_bit(&self) -> u32 {
        let position = self
            .config
            .acceptors
            .iter()
            .position(|&a| a == self.me)
            .expect("only acceptors vote");
        1 << position
    }

    /// A ring phase 2 message arrives: vote, then forward or decide.
    pub(crate) fn on_phase2(&mut self, message: Message, out: &mut Output) {
        let Message::Phase2 {
            ballot,
            instance,
            batch,
            mut votes,
            last,
            hops,
        } = message
        else {
            unreachable!("dispatched on Phase2")
        };
        self.observe_ballot(ballot);
        if ballot.node == self.me.0 || hops as usize > 2 * self.ring.len() + 2 {
            return;
        }
        self.learner.cache_phase2(instance, ballot, &batch);
        if self.bugs.deliver_before_decision {
            self.learn(instance, None, batch.clone());
        }
        let voted = self.phase2_vote(instance, ballot, &batch, out);
        if voted {
            votes |= self.vote_bit();
        }
        // Bits of positions past the acceptor list mean nothing.
        votes &= (1u32 << self.config.acceptors.len()) - 1;
        // Whoever completes a quorum decides (Ring Paxos puts f+1
        // acceptors in the ring): one log write fewer on the way than
        // walking to the coordinator's last acceptor, and a lap that
        // cannot reach that acceptor (a link of the ring is cut while
        // everyone still hears the coordinator, a "bridge" partition)
        // still decides. Only my own vote can complete it: with a quorum
        // before me the previous acceptor decided.
        if voted && votes.count_ones() as usize >= self.config.quorum() {
            self.decide(instance, ballot, batch, hops, out);
            return;
        }
        if last == self.me {
            return;
        }
        if let Some(next) = self.ring.successor() {
            let message = Message::Phase2 {
                ballot,
                instance,
                batch,
                votes,
                last,
                hops: hops + 1,
            };
            if voted {
                self.send_after_vote(next, message, out);
            } else {
                self.send(next, message, out);
            }
        }
    }

    /// This acceptor saw a quorum of votes: learn and start the decision
    /// around the ring.
    fn decide(
        &mut self,
        instance: Instance,
        ballot: Ballot,
        batch: Batch,
        hops: u32,
        out: &mut Output,
    ) {
        if let Some(next) = self.ring.successor() {
            let with_batch = (hops as usize + 1) < self.ring.len();
            let message = Message::Decision {
                instance,
                ballot,
                batch: with_batch.then(|| batch.clone()),
                decided_by: self.me,
                hops: hops + 1,
            };
            self.send_after_vote(next, message, out);
        }
        self.learn(instance, Some(ballot), batch);
    }

    /// An acceptor refused our ballot.
    pub(crate) fn on_reject(
        &mut self,
        ballot: Ballot,
        promised: Ballot,
        instance: Option<Instance>,
        out: &mut Output,
    ) {
        self.observe_ballot(promised);
        self.repair_rejected(ballot);
        let now = self.now;
        let Some(c) = self.coordinator.as_mut() else {
            return;
        };
        if c.ballot != ballot {
            return;
        }
        match instance {
            Some(instance) => {
                // Gap repair owns this instance now; move our values on.
                if let Some(flight) = c.in_flight.remove(&instance) {
                    c.foreign.insert(instance, now);
                    requeue(c, flight.batch);
                }
            }
            None => {
                let next = promised.max(self.highest_ballot).next_for(self.me);
                let c = self.coordinator.as_mut().expect("checked above");
                // Keep what we were proposing: a higher ballot re-proposes it.
                for (_, flight) in std::mem::take(&mut c.in_flight) {
                    requeue(c, flight.batch);
                }
                self.start_coordinating(next, out);
            }
        }
    }

    /// The learner learned `instance`: retire it from the pipeline.
    pub(crate) fn coordinator_learned(&mut self, instance: Instance, batch: &Batch) {
        let now = self.now;
        let Some(c) = self.coordinator.as_mut() else {
            return;
        };
        c.foreign.remove(&instance);
        c.next_instance = c.next_instance.max(instance.next());
        if let Some(flight) = c.in_flight.remove(&instance) {
            let delay = now.since(flight.first_sent);
            c.decide_delay_micros = (c.decide_delay_micros * 7 + delay) / 8;
            if &flight.batch != batch {
                requeue(c, flight.batch);
            }
        }
    }

    /// An acceptor trimmed its log below `trimmed_below`: every instance
    /// there is decided, so none may stay in the pipeline. This
    /// coordinator cannot tell which value won them when its own learner
    /// is behind the trim point, so it proposes its values again; a value
    /// that did win is delivered once all the same (`Delivered` drops the
    /// second copy by its id).
    pub(crate) fn coordinator_trimmed(&mut self, trimmed_below: Instance) {
        let Some(c) = self.coordinator.as_mut() else {
            return;
        };
        c.foreign.retain(|instance, _| *instance >= trimmed_below);
        c.next_instance = c.next_instance.max(trimmed_below);
        let gone: Vec<Instance> = c
            .in_flight
            .range(..trimmed_below)
            .map(|(i, _)| *i)
            .collect();
        // Highest first: `requeue` pushes to the front, so the values
        // keep their order.
        for instance in gone.into_iter().rev() {
            let flight = c.in_flight.remove(&instance).expect("listed above");
            requeue(c, flight.batch);
        }
        debug_assert!(c.in_flight.keys().all(|i| *i >= trimmed_below));
    }

    /// Retries phase 1 and phase 2 messages that got no answer.
    pub(crate) fn coordinator_tick(&mut self, out: &mut Output) {
        let retry = self.config.limits.retry_after_micros;
        let now = self.now;
        let Some(c) = self.coordinator.as_mut() else {
            return;
        };
        if let Phase::Preparing { from, sent } = c.phase {
            if now.since(sent) >= retry {
                self.send_phase1(from, out);
            }
        }
        let Some(c) = self.coordinator.as_mut() else {
            return;
        };
        let late: Vec<Instance> = c
            .in_flight
            .iter_mut()
            .filter(|(_, f)| now.since(f.sent) >= retry)
            .map(|(i, f)| {
                f.sent = now;
                *i
            })
            .collect();
        for instance in late {
            let c = self.coordinator.as_ref().expect("coordinating");
            let batch = c.in_flight[&instance].batch.clone();
            self.send_phase2(instance, batch, out);
        }
        self.reclaim_foreign(out);
    }

    /// An instance handed to someone else's gap repair must still get
    /// decided: if that repair was abandoned (its learner crashed, or gave
    /// up), nobody may know the instance exists, so no learner would see a
    /// gap. After a retry period the coordinator repairs it itself, one
    /// instance at a time, lowest first.
    fn reclaim_foreign(&mut self, out: &mut Output) {
        let retry = self.config.limits.retry_after_micros;
        let now = self.now;
        let Some(c) = self.coordinator.as_mut() else {
            return;
        };
        let learner = &self.learner;
        c.foreign
            .retain(|instance, _| !learner.has_decided(*instance));
        let Some((&instance, &since)) = c.foreign.first_key_value() else {
            return;
        };
        if now.since(since) < retry || self.learner.repair.is_some() {
            return;
        }
        c.foreign.insert(instance, now);
        self.start_repair(instance, out);
    }

    /// A proposal reaches this node.
    pub(crate) fn on_propose(&mut self, values: Vec<Value>, hops: u32, out: &mut Output) {
        if let Some(c) = self.coordinator.as_mut() {
            c.queue.extend(values);
            return;
        }
        let coordinator = self.ring.coordinator(self.acceptor.is_some());
        if let Some(next) = coordinator.filter(|&n| n != self.me && hops < 3) {
            self.send(
                self.ring.route(next),
                Message::Propose {
                    values,
                    hops: hops + 1,
                },
                out,
            );
        }
    }

    /// Whom proposals should go to, if anyone is known.
    pub(crate) fn coordinator_node(&self) -> Option<NodeId> {
        self.ring.coordinator(self.acceptor.is_some())
    }
}

fn requeue(c: &mut Coordinator, batch: Batch) {
    match batch {
        Batch::Values(values) => {
            for value in values.into_iter().rev() {
                c.queue.push_front(value);
            }
        }
        Batch::Skip(count) => c.pending_skip = c.pending_skip.saturating_add(count),
        Batch::Null => {}
    }
}

fn phase1_message(tally: Phase1Tally, hops: u32) -> Message {
    Message::Phase1 {
        ballot: tally.ballot,
        from: tally.from,
        to: tally.to,
        votes: tally.votes,
        accepted: tally.accepted,
        accepted_end: tally.accepted_end,
        trimmed_below: tally.trimmed_below,
        hops,
    }
}
