//! The flush loop: moves a node's outputs along until it is quiet.
//!
//! One round: the replicas' outputs (proposals become multicasts, signals
//! go to peers or to the local replicas, replies to the runtime); the
//! multicast layer's effects (sends; a group commit if any send depends on
//! a log write, then those sends; learners trimmed past; merged
//! deliveries, fed to the replicas); messages to this node looped back;
//! the work of merges stopped at a fence. Rounds repeat while they produce
//! more; between rounds, once quiet, fetched peer checkpoints are checked
//! and installed (never in the middle of a round: undrained deliveries
//! belong to the replica being replaced).
//!
//! Group commit (thesis A.4): one sync of every dirty acceptor log covers
//! every vote and promise of the round; a message that depends on a write
//! leaves only after it (`sends_after_sync`).

use crate::command::Command;
use crate::config::{FLUSH_ROUNDS_PER_CALL, LIVELOCK_ROUNDS};
use crate::host::{Host, HostError};
use crate::storage::LogOpener;
use amulet_smr::{Output, StateMachine};
use amulet_types::{NodeId, PartitionId, TimeMicros};
use amulet_wire::{Envelope, ValueKind};

/// Whether a flush left the host quiet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flushed {
    /// Nothing more to do until the next input.
    Settled,
    /// Rounds remain: call [`Host::flush`] again soon (after taking other
    /// inputs, so one busy node cannot starve them).
    Unsettled,
}

impl<S: StateMachine> Host<S> {
    /// Carries everything the inputs so far set in motion as far as it
    /// goes (at most [`FLUSH_ROUNDS_PER_CALL`] rounds); the commands to
    /// carry out are queued. `storage` opens the logs of streams that
    /// fences create and installed checkpoints name.
    pub fn flush(
        &mut self,
        now: TimeMicros,
        storage: &mut dyn LogOpener,
    ) -> Result<Flushed, HostError> {
        for _ in 0..FLUSH_ROUNDS_PER_CALL {
            if self.round(now, storage)? {
                self.unsettled_rounds += 1;
                if self.config.checking() {
                    assert!(
                        self.unsettled_rounds < LIVELOCK_ROUNDS,
                        "node {} never settles: its outputs have fed its inputs for {} rounds (a livelock)",
                        self.config.me,
                        self.unsettled_rounds
                    );
                }
                continue;
            }
            if self.fetched.is_empty() {
                self.unsettled_rounds = 0;
                self.remember_maps();
                self.write_out_logs()?;
                return Ok(Flushed::Settled);
            }
            self.install_fetched(now, storage)?;
        }
        self.write_out_logs()?;
        Ok(Flushed::Unsettled)
    }

    /// One round; whether it did anything.
    fn round(&mut self, now: TimeMicros, storage: &mut dyn LogOpener) -> Result<bool, HostError> {
        if !self.asked_streams.is_empty() {
            self.open_late_streams(now, storage)?;
        }
        self.drain_replicas(now);
        let effects = self.node.drain();
        // What this round's sends (and replies) depend on reaches the OS
        // first: a process crash must not take a vote already sent.
        self.write_out_logs()?;
        let busy = !effects.is_empty();
        let mut local = Vec::new();
        self.route(effects.sends, &mut local);
        if !effects.sends_after_sync.is_empty() {
            self.sync_logs(|_| true)?;
            self.counters.syncs += 1;
            self.report_sync(|_| true);
            self.route(effects.sends_after_sync, &mut local);
        }
        for (stream, below) in effects.trimmed {
            tracing::warn!(%stream, %below, "learner fell behind the acceptors' trim point");
            self.need_transfer(stream, below, now);
        }
        for (group, merged) in effects.delivered {
            if let Some(replica) = self.replicas.get_mut(&PartitionId(group.0)) {
                replica.on_deliver(merged.stream, &merged.value.bytes);
            }
            if self.config.report_deliveries {
                self.out.push(Command::Deliver { group, merged });
            }
        }
        for (group, event) in effects.subscriptions {
            self.out.push(Command::Subscription { group, event });
        }
        for envelope in local {
            self.node.on_message(now, self.config.me, envelope);
        }
        let released = if self.replicas.is_empty() {
            0
        } else {
            self.work_fences(now, storage)?
        };
        self.forget_abandoned_adoptions();
        self.check_after_step();
        Ok(busy || released > 0)
    }

    /// Carries out what the replicas asked for: proposals become
    /// multicasts (their effects drained by the caller), signals go out
    /// (to the replicas here directly), replies go to the runtime.
    fn drain_replicas(&mut self, now: TimeMicros) {
        let me = self.config.me;
        let partitions: Vec<PartitionId> = self.replicas.keys().copied().collect();
        for partition in partitions {
            let Some(replica) = self.replicas.get_mut(&partition) else {
                continue;
            };
            for output in replica.drain() {
                match output {
                    Output::Propose {
                        stream,
                        value,
                        barrier,
                    } => {
                        let kind = if barrier {
                            ValueKind::Barrier
                        } else {
                            ValueKind::Application
                        };
                        // A refusal (proposer queue full) surfaces as the
                        // client's timeout; it retries.
                        if let Err(error) = self.node.multicast_kind(now, stream, kind, value) {
                            tracing::debug!(?error, "replica proposal refused");
                        }
                    }
                    Output::Send { to, message } if to == me => {
                        for replica in self.replicas.values_mut() {
                            replica.on_message(message.clone());
                        }
                    }
                    Output::Send { to, message } => {
                        self.out.push(Command::SendReplica {
                            to,
                            message: Box::new(message),
                        });
                    }
                    Output::Reply { request, reply } => {
                        if let Some(token) = self.pending.remove(&(partition, request)) {
                            self.requests.remove(&token);
                            self.out.push(Command::Reply { token, reply });
                        }
                    }
                }
            }
        }
    }

    /// Sends to peers; keeps messages to this node for looping back.
    fn route(&mut self, sends: Vec<(NodeId, Envelope)>, local: &mut Vec<Envelope>) {
        for (to, envelope) in sends {
            if to == self.config.me {
                local.push(envelope);
            } else {
                self.out.push(Command::Send { to, envelope });
            }
        }
    }
}
