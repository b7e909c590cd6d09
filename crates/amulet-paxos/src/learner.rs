//! The learner role (thesis A.1.4): learns decisions, delivers them in
//! instance order, de-duplicates values, and repairs gaps, first by
//! retransmission from acceptors, then by deciding the missing instance
//! itself with a higher ballot (see `repair.rs`).

use crate::coordinator::HOPS_DIRECT;
use crate::dedup::Delivered;
use crate::output::{Decided, Output};
use crate::repair::Repair;
use crate::stream_node::StreamNode;
use amulet_types::{Ballot, Instance, NodeId, TimeMicros};
use amulet_wire::{Batch, Message};
use std::collections::BTreeMap;

/// Chunks of decided instances (each at most one retransmission reply)
/// a restarted acceptor reads back from its own log per tick.
const OWN_LOG_CHUNKS_PER_TICK: usize = 8;

/// Every this many unanswered gap repair attempts, decide the instance
/// with a higher ballot instead of asking for retransmission.
const REPAIR_EVERY_ATTEMPTS: u32 = 3;

#[derive(Debug)]
pub(crate) struct Learner {
    /// Next instance to deliver.
    pub(crate) next: Instance,
    /// Merge position: the merge weight of every instance below `next`
    /// (skips count their count, other instances one). Deterministic
    /// across learners, so learners and the coordinator compare positions.
    pub(crate) position: u64,
    /// Decided instances at or above `next`, waiting for the gap below.
    decided: BTreeMap<Instance, Batch>,
    /// Batches seen in phase 2, so a decision can come without bytes.
    phase2_cache: BTreeMap<Instance, (Ballot, Batch)>,
    /// Some member has decided every instance below this.
    highest_known: Instance,
    gap_since: Option<TimeMicros>,
    last_request: Option<TimeMicros>,
    attempts: u32,
    cursor: usize,
    /// The last repair tick read decided instances from this node's own
    /// acceptor log and more may follow: the next tick reads on at once.
    reading_own_log: bool,
    delivered: Delivered,
    /// Set when `next` was trimmed at the acceptors; delivery waits for
    /// `resume_at` with a checkpoint's position.
    pub(crate) trimmed: Option<Instance>,
    pub(crate) repair: Option<Repair>,
}

impl Learner {
    /// A learner starting at instance `start`, whose merge position is
    /// `position`.
    pub(crate) fn new(start: Instance, position: u64) -> Learner {
        Learner {
            next: start,
            position,
            decided: BTreeMap::new(),
            phase2_cache: BTreeMap::new(),
            highest_known: start,
            gap_since: None,
            last_request: None,
            attempts: 0,
            cursor: 0,
            reading_own_log: false,
            delivered: Delivered::default(),
            trimmed: None,
            repair: None,
        }
    }

    pub(crate) fn cache_phase2(&mut self, instance: Instance, ballot: Ballot, batch: &Batch) {
        if instance >= self.next && !self.decided.contains_key(&instance) {
            self.phase2_cache.insert(instance, (ballot, batch.clone()));
        }
    }

    pub(crate) fn has_decided(&self, instance: Instance) -> bool {
        instance < self.next || self.decided.contains_key(&instance)
    }

    pub(crate) fn observe_decided_below(&mut self, decided_below: Instance, now: TimeMicros) {
        if decided_below > self.highest_known {
            self.highest_known = decided_below;
            if self.gap_since.is_none() && decided_below > self.next {
                self.gap_since = Some(now);
            }
        }
    }

    /// Continues at `instance`, whose merge weight from instance 0 is
    /// `position` (a checkpoint's). Forward: what lies below is dropped.
    /// Backward (a replica installed a checkpoint older than what this
    /// learner delivered to the node's other replicas): the instances are
    /// learned again, and the duplicate filter starts over, since the
    /// merge groups filter duplicates themselves.
    pub(crate) fn resume_at(&mut self, instance: Instance, position: u64) {
        if instance > self.next {
            self.decided = self.decided.split_off(&instance);
            self.phase2_cache = self.phase2_cache.split_off(&instance);
            self.highest_known = self.highest_known.max(instance);
        } else if instance < self.next {
            self.decided.clear();
            self.phase2_cache.clear();
            self.delivered = Delivered::default();
            self.repair = None;
        }
        self.next = instance;
        self.position = position;
        self.trimmed = None;
        self.attempts = 0;
        self.gap_since = None;
        self.last_request = None;
        self.reading_own_log = false;
    }

    /// The first decided instance held beyond `next`, or one past the
    /// highest known decided if none is held.
    pub(crate) fn held_from(&self) -> Instance {
        self.decided
            .keys()
            .next()
            .copied()
            .unwrap_or_else(|| self.target())
    }

    /// One past the highest instance known decided anywhere.
    pub(crate) fn target_known(&self) -> Instance {
        self.target()
    }

    fn target(&self) -> Instance {
        let buffered = self.decided.keys().next_back().map(|i| i.next());
        self.highest_known.max(buffered.unwrap_or(self.next))
    }
}

impl StreamNode {
    /// A decision circulating the ring (or sent directly by gap repair).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn on_decision(
        &mut self,
        _from: NodeId,
        instance: Instance,
        ballot: Ballot,
        batch: Option<Batch>,
        decided_by: NodeId,
        hops: u32,
        out: &mut Output,
    ) {
        self.observe_ballot(ballot);
        let batch = batch.or_else(|| {
            self.learner
                .phase2_cache
                .get(&instance)
                .filter(|(b, _)| *b == ballot)
                .map(|(_, batch)| batch.clone())
        });
        if hops != HOPS_DIRECT && (hops as usize) < 2 * self.ring.len() + 2 {
            if let Some(next) = self.ring.successor().filter(|&n| n != decided_by) {
                // The successor has the batch iff it is past the first lap.
                let with_batch = (hops as usize + 1) < self.ring.len();
                let message = Message::Decision {
                    instance,
                    ballot,
                    batch: if with_batch { batch.clone() } else { None },
                    decided_by,
                    hops: hops + 1,
                };
                self.send(next, message, out);
            }
        }
        match batch {
            Some(batch) => self.learn(instance, Some(ballot), batch),
            None => {
                let known = instance.next();
                self.learner.observe_decided_below(known, self.now);
            }
        }
    }

    /// `instance` is decided to `batch`.
    pub(crate) fn learn(&mut self, instance: Instance, ballot: Option<Ballot>, batch: Batch) {
        if self.learner.has_decided(instance) {
            return;
        }
        self.log_decision(instance, ballot, &batch);
        self.coordinator_learned(instance, &batch);
        let learner = &mut self.learner;
        learner.phase2_cache.remove(&instance);
        learner.highest_known = learner.highest_known.max(instance.next());
        if learner
            .repair
            .as_ref()
            .is_some_and(|r| r.instance == instance)
        {
            learner.repair = None;
        }
        learner.decided.insert(instance, batch);
    }

    /// Hands every deliverable instance to the output, in order.
    pub(crate) fn deliver(&mut self, out: &mut Output) {
        if self.learner.trimmed.is_some() {
            return;
        }
        let stream = self.config.stream;
        let before = self.learner.next;
        while let Some(batch) = self.learner.decided.remove(&self.learner.next) {
            let instance = self.learner.next;
            let batch = match batch {
                Batch::Values(values) => {
                    let mut kept = Vec::with_capacity(values.len());
                    for value in values {
                        if self.learner.delivered.insert(value.id) {
                            self.proposer.delivered(value.id);
                            kept.push(value);
                        } else {
                            self.stats.duplicates_dropped += 1;
                        }
                    }
                    self.stats.values_delivered += kept.len() as u64;
                    Batch::Values(kept)
                }
                other => other,
            };
            self.stats.instances_delivered += 1;
            let position = self.learner.position;
            self.learner.position = position.saturating_add(batch.merge_weight());
            out.decided.push(Decided {
                stream,
                instance,
                position,
                batch,
            });
            self.learner.next = instance.next();
        }
        if self.learner.next > before {
            let next = self.learner.next;
            self.learner.phase2_cache = self.learner.phase2_cache.split_off(&next);
            self.learner.attempts = 0;
            self.learner.gap_since = (self.learner.target() > next).then_some(self.now);
            self.prune_instance_promises(next);
        }
    }

    /// Repairs a gap that lasted `gap_repair_after_micros`.
    pub(crate) fn learner_tick(&mut self, out: &mut Output) {
        self.repair_tick(out);
        if self.learner.trimmed.is_some() {
            return;
        }
        let target = self.learner.target();
        let next = self.learner.next;
        if target <= next {
            self.learner.gap_since = None;
            self.learner.reading_own_log = false;
            return;
        }
        let wait = self.config.limits.gap_repair_after_micros;
        let since = *self.learner.gap_since.get_or_insert(self.now);
        let waiting = self.now.since(since) < wait
            || self
                .learner
                .last_request
                .is_some_and(|t| self.now.since(t) < wait);
        if waiting && !self.learner.reading_own_log {
            return;
        }
        if !waiting {
            self.learner.last_request = Some(self.now);
            self.learner.attempts += 1;
        }
        if self.config.is_acceptor(self.me) {
            // An acceptor restarted on its log (thesis §3.4.1) holds the
            // decisions it knew before the crash: it reads them back before
            // asking anyone. One chunk per repair interval read 2,560
            // instances a second, slower than a busy stream decides, so a
            // restarted acceptor never caught up; it reads a few chunks per
            // tick and goes on at the next tick while its log has more.
            self.learner.reading_own_log = false;
            for _ in 0..OWN_LOG_CHUNKS_PER_TICK {
                let from = self.learner.next;
                let chunk = self.read_decided(from, target);
                if chunk.is_empty() {
                    break;
                }
                for (instance, batch) in chunk {
                    self.learn(instance, None, batch);
                }
                self.deliver(out);
                self.learner.reading_own_log = self.learner.next > from;
                if !self.learner.reading_own_log {
                    break;
                }
            }
            if self.learner.reading_own_log || self.learner.has_decided(self.learner.next) {
                return;
            }
            if waiting {
                return;
            }
        }
        let next = self.learner.next;
        if self.learner.attempts.is_multiple_of(REPAIR_EVERY_ATTEMPTS) {
            self.start_repair(next, out);
            return;
        }
        let acceptors: Vec<NodeId> = self
            .ring
            .other_acceptors()
            .filter(|&n| self.ring.is_live(n))
            .collect();
        if acceptors.is_empty() {
            return;
        }
        self.learner.cursor = (self.learner.cursor + 1) % acceptors.len();
        let to = acceptors[self.learner.cursor];
        self.stats.retransmit_requests += 1;
        self.send(
            to,
            Message::RetransmitRequest {
                from: next,
                to: target,
            },
            out,
        );
    }

    /// An acceptor answered a retransmission request (or a prepare for an
    /// instance it knows decided or trimmed).
    pub(crate) fn on_retransmit_reply(
        &mut self,
        decided: Vec<(Instance, Batch)>,
        trimmed_below: Instance,
        out: &mut Output,
    ) {
        for (instance, batch) in decided {
            self.learn(instance, None, batch);
        }
        self.deliver(out);
        self.coordinator_trimmed(trimmed_below);
        if trimmed_below > self.learner.next && self.learner.trimmed.is_none() {
            // Explicit answer: what we need is gone from the log.
            self.learner.trimmed = Some(trimmed_below);
            out.trimmed = Some((self.config.stream, trimmed_below));
        }
    }
}
