//! One node's part in one stream: the roles of thesis A.1 behind one
//! deterministic `step`.

use crate::acceptor::AcceptorState;
use crate::bugs::Bugs;
use crate::coordinator::Coordinator;
use crate::learner::Learner;
use crate::output::Output;
use crate::proposer::Proposer;
use crate::ring::Ring;
use amulet_storage::AcceptorLog;
use amulet_types::{
    Ballot, Instance, NodeId, SafeReport, StorageMode, StreamConfig, StreamId, TimeMicros, ValueId,
};
use amulet_wire::{Envelope, Message, ValueKind};
use bytes::Bytes;
use std::collections::BTreeMap;

/// An input to a [`StreamNode`].
#[derive(Debug)]
pub enum Input {
    /// A message from a peer (or from this node to itself).
    Message {
        /// Sender.
        from: NodeId,
        /// The message.
        message: Message,
    },
    /// Time passed; timeouts are checked.
    Tick,
}

/// Why a proposal was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProposeError {
    /// The value is larger than `value_bytes_max`.
    TooLarge {
        /// Size of the value.
        bytes: usize,
        /// The limit.
        limit: usize,
    },
    /// Too many of this node's values are not yet delivered; retry later.
    Backpressure,
}

/// Counters for metrics and benchmarks.
#[derive(Debug, Default, Clone)]
pub struct StreamStats {
    /// Instances this node proposed as coordinator (values, skips, nulls).
    pub instances_proposed: u64,
    /// Skip weight this node proposed as coordinator.
    pub skips_proposed: u64,
    /// Instances delivered by this node's learner.
    pub instances_delivered: u64,
    /// Values delivered (after de-duplication).
    pub values_delivered: u64,
    /// Values dropped as already delivered.
    pub duplicates_dropped: u64,
    /// Phase 1 rounds started as coordinator.
    pub phase1_started: u64,
    /// Retransmission requests sent by the learner.
    pub retransmit_requests: u64,
    /// Gap repairs (classic Paxos with a higher ballot) started.
    pub repairs_started: u64,
}

/// Ring Paxos for one stream at one node (thesis §2.4, A.1).
pub struct StreamNode {
    pub(crate) me: NodeId,
    pub(crate) config: StreamConfig,
    pub(crate) ring: Ring,
    pub(crate) log: Box<dyn AcceptorLog>,
    /// `Some` when this node is an acceptor that may vote.
    pub(crate) acceptor: Option<AcceptorState>,
    pub(crate) coordinator: Option<Coordinator>,
    pub(crate) learner: Learner,
    pub(crate) proposer: Proposer,
    /// Highest ballot seen anywhere; new ballots go above it.
    pub(crate) highest_ballot: Ballot,
    pub(crate) last_heartbeat: Option<TimeMicros>,
    pub(crate) now: TimeMicros,
    pub(crate) stats: StreamStats,
    pub(crate) bugs: Bugs,
    /// Merge position this node's merge needs the stream to reach (0: none),
    /// sent in heartbeats to the coordinator.
    pub(crate) merge_need: u64,
    /// When a peer last reported a merge need beyond what this node, as
    /// coordinator, had proposed: some merge elsewhere waited on the stream.
    pub(crate) need_heard_at: Option<TimeMicros>,
    /// This node's safe instance (see [`StreamNode::set_safe_instance`]).
    pub(crate) safe: SafeReport,
    /// The safe instance each peer last reported in a heartbeat.
    pub(crate) peer_safe: BTreeMap<NodeId, SafeReport>,
    /// Proposals leave and queued values become instances only at
    /// [`StreamNode::flush_round`], not after every input (see there).
    pub(crate) per_round: bool,
}

impl StreamNode {
    /// A node of `config.stream`. `log` is this node's acceptor log (any
    /// log for a pure learner); if the log is not intact the node never
    /// votes (it lost promises or votes it made before). `incarnation`
    /// must grow at every restart of the process.
    pub fn new(
        me: NodeId,
        config: StreamConfig,
        log: Box<dyn AcceptorLog>,
        incarnation: u32,
        now: TimeMicros,
    ) -> StreamNode {
        config
            .validate()
            .expect("stream configuration was validated by the caller");
        let recovered = log.recovered();
        let acceptor = (config.is_acceptor(me) && recovered.intact)
            .then(|| AcceptorState::recover(&recovered));
        let highest_ballot = acceptor
            .as_ref()
            .map_or(Ballot::ZERO, |a| a.highest_ballot());
        StreamNode {
            me,
            ring: Ring::new(me, &config, now),
            learner: Learner::new(Instance(0), config.base_position),
            proposer: Proposer::new(me, incarnation),
            config,
            log,
            acceptor,
            coordinator: None,
            highest_ballot,
            last_heartbeat: None,
            now,
            stats: StreamStats::default(),
            bugs: Bugs::default(),
            merge_need: 0,
            need_heard_at: None,
            safe: SafeReport::default(),
            peer_safe: BTreeMap::new(),
            per_round: false,
        }
    }

    /// Batches per round: from now on the values proposed here leave, and
    /// the values queued at this coordinator become instances, only when
    /// the runtime calls [`StreamNode::flush_round`], once per round of its
    /// inputs, instead of after every input. A node's replica proposes each
    /// client command on its own and each proposal was flushed at once, so
    /// an instance carried about one command (measured: 0.9 puts per
    /// instance under 64 clients) and every instance costs messages, log
    /// records and a merge step at every member; per round, one `Propose`
    /// carries every command of the round and one instance every value
    /// that reached the coordinator in it. `MulticastNode` turns it on.
    pub fn batch_per_round(&mut self) {
        self.per_round = true;
    }

    /// The end of a round of inputs (with [`StreamNode::batch_per_round`]):
    /// queued values become instances and proposals leave.
    pub fn flush_round(&mut self, now: TimeMicros, out: &mut Output) {
        self.now = self.now.max(now);
        self.coordinator_pump(out);
        self.proposer_flush(out);
        self.deliver(out);
        self.check_invariants();
    }

    /// Turns deliberate bugs on (simulator only). `forget_promise_on_restart`
    /// acts at once, as if the node had just restarted.
    pub fn set_bugs(&mut self, bugs: Bugs) {
        self.bugs = bugs;
        if bugs.forget_promise_on_restart {
            if let Some(acceptor) = self.acceptor.as_mut() {
                acceptor.promised = Ballot::ZERO;
                acceptor.instance_promises.clear();
                self.highest_ballot = Ballot::ZERO;
            }
        }
    }

    /// The ballot this node promised as a voting acceptor (`None` when it
    /// does not vote), for the simulator's promise checker.
    pub fn promised(&self) -> Option<Ballot> {
        self.acceptor.as_ref().map(|a| a.promised)
    }

    /// The stream.
    pub fn stream(&self) -> StreamId {
        self.config.stream
    }

    /// The stream's configuration.
    pub fn config(&self) -> &StreamConfig {
        &self.config
    }

    /// This node.
    pub fn node(&self) -> NodeId {
        self.me
    }

    /// Whether this node currently acts as the stream's coordinator.
    pub fn is_coordinator(&self) -> bool {
        self.coordinator.is_some()
    }

    /// Whether this node votes in the stream.
    pub fn is_voting(&self) -> bool {
        self.acceptor.is_some()
    }

    /// Every instance below this was delivered by this node's learner.
    pub fn decided_below(&self) -> Instance {
        self.learner.next
    }

    /// Instances known decided elsewhere (from peers' heartbeats and
    /// decisions seen) that this node's learner has not delivered yet:
    /// large while a restarted node catches up.
    pub fn learner_lag(&self) -> u64 {
        self.learner
            .target_known()
            .0
            .saturating_sub(self.learner.next.0)
    }

    /// The first instance of the decisions this learner holds beyond the
    /// one it waits for (while it is trimmed past, the new decisions it
    /// keeps for when a checkpoint is installed, thesis §3.4.4), or, if it
    /// holds none, the least instance the next new decision can have.
    pub fn learner_held_from(&self) -> Instance {
        self.learner.held_from()
    }

    /// Where the acceptors had trimmed the stream when this learner found
    /// its next instance gone (it needs a checkpoint at or past it from a
    /// peer); `None` while it can learn.
    pub fn learner_trimmed(&self) -> Option<Instance> {
        self.learner.trimmed
    }

    /// Counters.
    pub fn stats(&self) -> &StreamStats {
        &self.stats
    }

    /// The acceptor log, for the runtime to sync.
    pub fn log_mut(&mut self) -> &mut dyn AcceptorLog {
        self.log.as_mut()
    }

    /// Values proposed by this node and not yet delivered here.
    pub fn proposals_in_flight(&self) -> usize {
        self.proposer.in_flight()
    }

    /// Processes one input at time `now`.
    pub fn step(&mut self, now: TimeMicros, input: Input, out: &mut Output) {
        self.now = self.now.max(now);
        match input {
            Input::Message { from, message } => self.on_message(from, message, out),
            Input::Tick => self.on_tick(out),
        }
        self.after_step(out);
    }

    /// Proposes `bytes` to the stream. The value is delivered once by every
    /// learner unless this node crashes before it is decided.
    pub fn propose(
        &mut self,
        now: TimeMicros,
        bytes: Bytes,
        out: &mut Output,
    ) -> Result<ValueId, ProposeError> {
        self.propose_kind(now, ValueKind::Application, bytes, out)
    }

    /// Proposes a value of the given kind (control values carry
    /// subscription changes of the multicast layer, thesis §4.4).
    pub fn propose_kind(
        &mut self,
        now: TimeMicros,
        kind: ValueKind,
        bytes: Bytes,
        out: &mut Output,
    ) -> Result<ValueId, ProposeError> {
        self.now = self.now.max(now);
        let limit = self.config.limits.value_bytes_max;
        if bytes.len() > limit {
            return Err(ProposeError::TooLarge {
                bytes: bytes.len(),
                limit,
            });
        }
        let id = self.proposer.propose(kind, bytes)?;
        self.after_step(out);
        Ok(id)
    }

    /// As coordinator, proposes one instance that stands for `count`
    /// instances in the merge (rate leveling, thesis §3.3). Returns false
    /// when this node does not coordinate.
    pub fn propose_skip(&mut self, now: TimeMicros, count: u64, out: &mut Output) -> bool {
        self.now = self.now.max(now);
        let Some(coordinator) = self.coordinator.as_mut() else {
            return false;
        };
        if count == 0 {
            return true;
        }
        coordinator.pending_skip = coordinator.pending_skip.saturating_add(count);
        self.after_step(out);
        true
    }

    /// The total merge weight this node proposed (or queued as skips) as
    /// coordinator of its current ballot, not counting merge catch-up
    /// skips, and the average propose-to-decide delay (micros), for rate
    /// leveling; `None` when not coordinating.
    pub fn coordinator_progress(&self) -> Option<(Ballot, u64, u64)> {
        self.coordinator.as_ref().map(|c| {
            let weight = c
                .proposed_weight
                .saturating_add(c.pending_skip)
                .saturating_sub(c.catch_up_weight);
            (c.ballot, weight, c.decide_delay_micros)
        })
    }

    /// As coordinator, skips at once up to merge position `need` (beyond
    /// what is already decided, in flight or queued), for this node's own
    /// merge, which waits on the stream while others hold decided
    /// instances; see `MulticastNode`'s local catch-up. Returns whether a
    /// skip was queued. Does nothing when not coordinating.
    pub fn catch_up_local(&mut self, now: TimeMicros, need: u64, out: &mut Output) -> bool {
        self.now = self.now.max(now);
        let before = self.coordinator.as_ref().map_or(0, |c| c.pending_skip);
        self.catch_up(need);
        let after = self.coordinator.as_ref().map_or(0, |c| c.pending_skip);
        if after == before {
            return false;
        }
        self.after_step(out);
        true
    }

    /// As coordinator (ready, its learner level with its in-flight
    /// window): the merge position the stream reaches once everything it
    /// proposed is decided, and how many instances of fresh values it has
    /// proposed so far. `MulticastNode` skips the other streams it
    /// coordinates up to that position in the same round (anticipatory
    /// skips), so a value's merge does not wait for a second ring lap.
    pub fn projected_values(&self) -> Option<(u64, u64)> {
        let position = self.projected_position()?;
        let c = self.coordinator.as_ref()?;
        Some((position, c.value_instances))
    }

    /// Sets the merge position this node's merge needs the stream to
    /// reach (0: none); see [`amulet_wire::Message::Heartbeat`].
    pub fn set_merge_need(&mut self, position: u64) {
        self.merge_need = position;
    }

    /// Everything of the stream below `report.below` is reflected in a
    /// durable checkpoint of every subscriber this node runs by its map of
    /// version `report.map_version` (thesis §3.4.2's safe instance); sent
    /// to the stream's members in heartbeats.
    pub fn set_safe_instance(&mut self, report: SafeReport) {
        self.safe = report;
    }

    /// The safe instance of this node and of every member heard from
    /// (their latest report: a peer that lost its checkpoints reports
    /// less, which only makes trimming more careful).
    pub fn safe_instances(&self) -> BTreeMap<NodeId, SafeReport> {
        let mut all = self.peer_safe.clone();
        all.insert(self.me, self.safe);
        all
    }

    /// Acceptor log entries below this instance are gone.
    pub fn trimmed_below(&self) -> Instance {
        self.log.trimmed_below()
    }

    /// The learner's merge position: the merge weight of every delivered
    /// instance.
    pub fn merge_position(&self) -> u64 {
        self.learner.position
    }

    /// A one-line description of the coordinator and learner state, for
    /// simulator traces and debugging. Not a stable format.
    pub fn debug_state(&self) -> String {
        let coordinator = self.coordinator.as_ref().map(|c| {
            format!(
                "ballot={} phase={:?} prepared_to={} next={} in_flight={} foreign={:?} queue={} pending_skip={}",
                c.ballot,
                c.phase,
                c.prepared_to.0,
                c.next_instance.0,
                c.in_flight.len(),
                c.foreign.keys().take(4).collect::<Vec<_>>(),
                c.queue.len(),
                c.pending_skip
            )
        });
        format!(
            "learner next={} target={} repair={:?} trimmed={:?} | coordinator {:?} | highest_ballot={} ring_coordinator={:?}",
            self.learner.next.0,
            self.learner.target_known().0,
            self.learner.repair.as_ref().map(|r| r.instance.0),
            self.learner.trimmed,
            coordinator,
            self.highest_ballot,
            self.coordinator_node(),
        )
    }

    /// Lets the learner continue at `instance`, whose merge weight from
    /// instance 0 is `position`, after the application installed a
    /// checkpoint covering everything below it (forward or backward; see
    /// the learner's `resume_at`).
    pub fn resume_learner_at(&mut self, instance: Instance, position: u64) {
        if instance == self.learner.next {
            return;
        }
        self.learner.resume_at(instance, position);
        // A coordinator's window was placed by the learner's old position:
        // instances it waits to learn may now never be delivered here. It
        // steps down; the next election starts a fresh ballot with phase 1
        // from the new position (queued values are re-sent by their
        // proposers, which retry until delivery).
        self.coordinator = None;
    }

    /// The acceptor log, for the runtime to close when the stream is
    /// retired.
    pub fn into_log(self) -> Box<dyn AcceptorLog> {
        self.log
    }

    /// The learner's next instance to deliver.
    pub fn learner_next(&self) -> Instance {
        self.learner.next
    }

    /// Forgets acceptor state below `below` (coordinated trimming: the
    /// caller has made sure a trim quorum of subscribers holds durable
    /// checkpoints at or past it). Never above the learner's own next
    /// instance: this node's own delivery must not depend on others.
    pub fn trim_log(&mut self, below: Instance) {
        let below = below.min(self.learner.next);
        if below <= self.log.trimmed_below() {
            return;
        }
        if let Err(error) = self.log.trim(below) {
            panic!("acceptor log trim failed, cannot keep promises: {error}");
        }
    }

    fn on_message(&mut self, from: NodeId, message: Message, out: &mut Output) {
        if self.ring.heard(from, self.now) {
            self.ring.refresh(self.now);
        }
        match message {
            Message::Propose { values, hops } => self.on_propose(values, hops, out),
            Message::Phase1 { .. } => self.on_phase1(message, out),
            Message::Phase2 { .. } => self.on_phase2(message, out),
            Message::Decision {
                instance,
                ballot,
                batch,
                decided_by,
                hops,
            } => self.on_decision(from, instance, ballot, batch, decided_by, hops, out),
            Message::Reject {
                ballot,
                promised,
                instance,
            } => self.on_reject(ballot, promised, instance, out),
            Message::RetransmitRequest { from: first, to } => {
                self.on_retransmit_request(from, first, to, out)
            }
            Message::RetransmitReply {
                decided,
                trimmed_below,
            } => self.on_retransmit_reply(decided, trimmed_below, out),
            Message::Prepare { instance, ballot } => self.on_prepare(from, instance, ballot, out),
            Message::Promise {
                instance,
                ballot,
                accepted,
            } => self.on_promise(from, instance, ballot, accepted, out),
            Message::Accept {
                instance,
                ballot,
                batch,
            } => self.on_accept(from, instance, ballot, batch, out),
            Message::AcceptAck { instance, ballot } => {
                self.on_accept_ack(from, instance, ballot, out)
            }
            Message::Heartbeat {
                ballot,
                decided_below,
                voting,
                merge_need,
                hears,
                safe,
            } => {
                self.observe_ballot(ballot);
                self.ring.set_report(from, voting, hears);
                self.peer_safe.insert(from, safe);
                self.learner.observe_decided_below(decided_below, self.now);
                if merge_need > 0 {
                    // A need beyond what this coordinator has proposed: the
                    // stream lags some merge (not a learner behind in
                    // learning what is decided). An idle coordinator (nothing
                    // in flight) that cannot tell where its stream stands
                    // (its own learner behind its window, say trimmed past
                    // on a node without replicas, or phase 1 running) takes
                    // any need as one: catch-up cannot skip for it, pacing
                    // can (simulator, access seed 5000099: the global stream
                    // stopped). A busy one does not: its values move the
                    // stream, and pacing under load took pipeline slots from
                    // them (quick ordering benchmark, 32 KiB: -50%).
                    let lags = match self.projected_position() {
                        Some(projected) => merge_need > projected,
                        None => self
                            .coordinator
                            .as_ref()
                            .is_some_and(|c| c.in_flight.is_empty()),
                    };
                    if lags {
                        self.need_heard_at = Some(self.now);
                    }
                    self.catch_up(merge_need);
                }
            }
        }
    }

    /// When a peer last reported a merge need for this stream beyond what
    /// this coordinator had proposed (see `MulticastNode`'s rate leveling:
    /// a coordinator paces its stream only while some merge waits on it).
    pub fn need_heard_at(&self) -> Option<TimeMicros> {
        self.need_heard_at
    }

    /// Sends this node's merge need for the stream to every other member
    /// now, in a heartbeat out of its schedule: values wait in the merge
    /// here for a stream that decided nothing lately (its coordinator may
    /// have stopped pacing it) or whose next skip is late. The scheduled
    /// heartbeats carry on as before.
    pub fn send_merge_need_now(&mut self, now: TimeMicros, need: u64, out: &mut Output) {
        self.now = self.now.max(now);
        if need == 0 {
            return;
        }
        let heartbeat = Message::Heartbeat {
            ballot: self.highest_ballot,
            decided_below: self.learner.next,
            voting: self.acceptor.is_some(),
            merge_need: need,
            hears: self.ring.hears_mask(),
            safe: self.safe,
        };
        let targets: Vec<NodeId> = self.ring.others().collect();
        for to in targets {
            self.send(to, heartbeat.clone(), out);
        }
    }

    fn on_tick(&mut self, out: &mut Output) {
        self.ring.refresh(self.now);
        let interval = self.config.limits.heartbeat_interval_micros;
        if self
            .last_heartbeat
            .is_none_or(|t| self.now.since(t) >= interval)
        {
            self.last_heartbeat = Some(self.now);
            let heartbeat = Message::Heartbeat {
                ballot: self.highest_ballot,
                decided_below: self.learner.next,
                voting: self.acceptor.is_some(),
                merge_need: self.merge_need,
                hears: self.ring.hears_mask(),
                safe: self.safe,
            };
            if self.merge_need > 0 && self.coordinator.is_some() {
                self.catch_up(self.merge_need);
            }
            let targets: Vec<NodeId> = self.ring.others().collect();
            for to in targets {
                self.send(to, heartbeat.clone(), out);
            }
        }
        self.coordinator_tick(out);
        self.proposer_tick(out);
        self.learner_tick(out);
    }

    /// Work that follows any input: elections, pumping queued values and
    /// flushing proposals (unless batching per round), delivering.
    fn after_step(&mut self, out: &mut Output) {
        self.elect(out);
        if !self.per_round {
            self.coordinator_pump(out);
            self.proposer_flush(out);
        }
        self.deliver(out);
        self.check_invariants();
    }

    pub(crate) fn observe_ballot(&mut self, ballot: Ballot) {
        self.highest_ballot = self.highest_ballot.max(ballot);
    }

    pub(crate) fn envelope(&self, message: Message) -> Envelope {
        Envelope {
            stream: self.config.stream,
            message,
        }
    }

    /// Sends a message that reveals nothing about this node's votes.
    pub(crate) fn send(&self, to: NodeId, message: Message, out: &mut Output) {
        out.sends.push((to, self.envelope(message)));
    }

    /// Sends a message that carries or depends on a promise or vote of this
    /// acceptor: in sync mode it leaves only after the log is synced.
    pub(crate) fn send_after_vote(&self, to: NodeId, message: Message, out: &mut Output) {
        if self.config.storage == StorageMode::SyncDurable {
            out.sends_after_sync.push((to, self.envelope(message)));
        } else {
            out.sends.push((to, self.envelope(message)));
        }
    }

    /// Panics unless the node's roles agree with each other: a
    /// coordinator owns its ballot, is a voting acceptor, and no ballot it
    /// holds or promised is above the highest it has seen. Runs after
    /// every step; callers (the simulator) may also run it at any time.
    /// O(1).
    pub fn check_invariants(&self) {
        if let Some(coordinator) = &self.coordinator {
            assert_eq!(
                coordinator.ballot.node, self.me.0,
                "coordinator owns its ballot"
            );
            assert!(
                self.acceptor.is_some(),
                "only a voting acceptor coordinates"
            );
            assert!(coordinator.ballot <= self.highest_ballot);
        }
        if let Some(acceptor) = &self.acceptor {
            assert!(acceptor.promised <= self.highest_ballot);
        }
    }
}
