//! The acceptor role (thesis A.1.3): promises, votes, the log, and answers
//! to retransmission requests. Safety of the whole stream rests here.

use crate::output::Output;
use crate::stream_node::StreamNode;
use amulet_storage::{LogRecord, Recovered, StorageError};
use amulet_types::{Ballot, Instance, NodeId};
use amulet_wire::{batch_encoded_len, Accepted, Batch, Message};
use std::collections::BTreeMap;

/// Most decided instances sent in one retransmission reply.
const RETRANSMIT_INSTANCES_MAX: u64 = 256;
/// Encoded bytes of one instance in a reply besides its batch (instance
/// number and framing), counted against the reply's budget.
const RETRANSMIT_INSTANCE_OVERHEAD: usize = 16;

/// Promises of a voting acceptor. Votes live in the log.
#[derive(Debug)]
pub(crate) struct AcceptorState {
    /// Promised for every instance (ring phase 1).
    pub(crate) promised: Ballot,
    /// Promised for single instances above `promised` (gap repair).
    pub(crate) instance_promises: BTreeMap<Instance, Ballot>,
}

/// A fatal storage failure: an acceptor that cannot write cannot keep its
/// promises, so it stops rather than vote unsafely.
pub(crate) fn storage_failed(error: StorageError) -> ! {
    panic!("acceptor log failed, stopping to keep promises safe: {error}")
}

impl AcceptorState {
    pub(crate) fn recover(recovered: &Recovered) -> AcceptorState {
        AcceptorState {
            promised: recovered.promised,
            instance_promises: recovered.instance_promises.iter().copied().collect(),
        }
    }

    pub(crate) fn highest_ballot(&self) -> Ballot {
        let instance_max = self.instance_promises.values().copied().max();
        self.promised.max(instance_max.unwrap_or(Ballot::ZERO))
    }

    /// The promise that binds `instance`.
    pub(crate) fn promise_for(&self, instance: Instance) -> Ballot {
        let single = self.instance_promises.get(&instance).copied();
        self.promised.max(single.unwrap_or(Ballot::ZERO))
    }
}

/// Fields of a ring phase 1 message being accumulated.
pub(crate) struct Phase1Tally {
    pub(crate) ballot: Ballot,
    pub(crate) from: Instance,
    pub(crate) to: Instance,
    pub(crate) votes: u32,
    pub(crate) accepted: Vec<Accepted>,
    pub(crate) accepted_end: Instance,
    pub(crate) trimmed_below: Instance,
}

impl Phase1Tally {
    /// Adds an acceptor's vote. Only the highest ballot of an instance
    /// matters to the coordinator, so a tally keeps one vote per instance;
    /// and the message must fit one frame (peers size frames for one full
    /// batch plus one largest value): while the votes held exceed that,
    /// the range shrinks from its top (`to` becomes the highest instance
    /// held, whose vote is dropped), never below its first instance. The
    /// coordinator prepares the rest with the next phase 1 from `to`. A
    /// range of a whole prepare window of 1 MiB values made a frame of
    /// several MiB that the peer refused, every time it was sent again.
    pub(crate) fn add(&mut self, vote: Accepted, budget: usize) {
        match self
            .accepted
            .iter_mut()
            .find(|a| a.instance == vote.instance)
        {
            Some(held) if held.ballot >= vote.ballot => return,
            Some(held) => *held = vote,
            None => self.accepted.push(vote),
        }
        let len = |a: &Accepted| batch_encoded_len(&a.batch) + RETRANSMIT_INSTANCE_OVERHEAD;
        let mut bytes: usize = self.accepted.iter().map(len).sum();
        while bytes > budget {
            let Some(top) = self.accepted.iter().map(|a| a.instance).max() else {
                break;
            };
            if top <= self.from {
                break;
            }
            self.to = self.to.min(top);
            self.accepted.retain(|a| a.instance < top);
            bytes = self.accepted.iter().map(len).sum();
        }
        debug_assert!(self.accepted.iter().all(|a| a.instance < self.to));
    }
}

impl StreamNode {
    /// This acceptor's part of ring phase 1. Returns whether it promised.
    pub(crate) fn phase1_vote(&mut self, tally: &mut Phase1Tally, out: &mut Output) -> bool {
        let Some(acceptor) = self.acceptor.as_mut() else {
            return false;
        };
        if tally.ballot < acceptor.promised {
            let reject = Message::Reject {
                ballot: tally.ballot,
                promised: acceptor.promised,
                instance: None,
            };
            self.send(NodeId(tally.ballot.node), reject, out);
            return false;
        }
        if tally.ballot > acceptor.promised {
            acceptor.promised = tally.ballot;
            let stale: Vec<Instance> = acceptor
                .instance_promises
                .iter()
                .filter(|(_, b)| **b <= tally.ballot)
                .map(|(i, _)| *i)
                .collect();
            for instance in stale {
                acceptor.instance_promises.remove(&instance);
            }
            self.log
                .save_promise(tally.ballot)
                .unwrap_or_else(|e| storage_failed(e));
        }
        let trimmed = self.log.trimmed_below();
        let end = self.log.end();
        let budget = self.config.limits.batch_bytes_max + self.config.limits.value_bytes_max;
        let mut instance = tally.from.max(trimmed);
        while instance < tally.to.min(end) {
            if let Some(record) = self
                .log
                .read(instance)
                .unwrap_or_else(|e| storage_failed(e))
            {
                tally.add(
                    Accepted {
                        instance,
                        ballot: record.ballot,
                        batch: record.batch,
                    },
                    budget,
                );
            }
            instance = instance.next();
        }
        tally.votes += 1;
        tally.accepted_end = tally.accepted_end.max(end);
        tally.trimmed_below = tally.trimmed_below.max(trimmed);
        true
    }

    /// This acceptor's vote in phase 2 (ring or classic). Returns whether it
    /// voted; a refusal tells the ballot's owner.
    pub(crate) fn phase2_vote(
        &mut self,
        instance: Instance,
        ballot: Ballot,
        batch: &Batch,
        out: &mut Output,
    ) -> bool {
        let Some(acceptor) = self.acceptor.as_mut() else {
            return false;
        };
        if instance < self.log.trimmed_below() {
            // Decided and trimmed: no vote. A coordinator whose ballot is
            // below the promise must still hear of it, or one that kept
            // proposing in instances trimmed since (its pipeline full of
            // them) never learns that a higher ballot exists and never
            // proposes again (simulator seed 3002177 of `--fields`).
            if ballot < acceptor.promised {
                let reject = Message::Reject {
                    ballot,
                    promised: acceptor.promised,
                    instance: None,
                };
                self.send(NodeId(ballot.node), reject, out);
            } else {
                // Tell the ballot's owner the instance is gone, or a
                // coordinator whose own learner fell behind the trim point
                // (it never learns these decisions) resends phase 2 for
                // them forever: its pipeline stays full and its stream
                // stops (simulator seed 2002987 of `--dmap`).
                let reply = Message::RetransmitReply {
                    decided: Vec::new(),
                    trimmed_below: self.log.trimmed_below(),
                };
                self.send(NodeId(ballot.node), reply, out);
            }
            return false;
        }
        let promise = acceptor.promise_for(instance);
        if ballot < promise {
            let only_instance = promise > acceptor.promised;
            let reject = Message::Reject {
                ballot,
                promised: promise,
                instance: only_instance.then_some(instance),
            };
            self.send(NodeId(ballot.node), reject, out);
            return false;
        }
        if ballot > acceptor.promised {
            // Voting in a ballot implies promising it; persist so a restart
            // does not accept a lower ballot again.
            acceptor.promised = ballot;
            self.log
                .save_promise(ballot)
                .unwrap_or_else(|e| storage_failed(e));
        }
        let existing = self
            .log
            .read(instance)
            .unwrap_or_else(|e| storage_failed(e));
        if let Some(existing) = existing.filter(|r| r.decided) {
            // Never vote again in a decided instance, and vote only for the
            // decided value. A ballot proposing another value is no breach
            // of Paxos when it is below the deciding ballot, and the record's
            // ballot is not the deciding one: it is this acceptor's own vote,
            // which may be lower (seed 9023174 of `--dmap`: this acceptor
            // voted Skip in b1.1, promised b10.3 to a gap repair that
            // decided the Skip again, forgot that single-instance promise
            // once its learner passed the instance, then saw a competing
            // repair's Null in b9.2; an assertion here stopped the node).
            // Uniform agreement is checked on what learners deliver.
            return &existing.batch == batch;
        }
        let record = LogRecord {
            instance,
            ballot,
            batch: batch.clone(),
            decided: false,
        };
        self.log.save(&record).unwrap_or_else(|e| storage_failed(e));
        true
    }

    /// Records a decision in the acceptor log so it can be retransmitted.
    /// `ballot` is `None` when the decision came without its ballot
    /// (retransmission): then a vote of another value is left alone, since
    /// lowering a reported ballot could mislead a later phase 1.
    pub(crate) fn log_decision(
        &mut self,
        instance: Instance,
        ballot: Option<Ballot>,
        batch: &Batch,
    ) {
        if !self.config.is_acceptor(self.me) || instance < self.log.trimmed_below() {
            return;
        }
        // The common case, from the index alone: this acceptor voted in the
        // deciding ballot (one batch per ballot and instance), or the
        // decision is logged already.
        match (self.log.vote(instance), ballot) {
            (Some((_, true)), _) => return,
            (Some((voted, false)), Some(ballot)) if voted == ballot => {
                self.log
                    .mark_decided(instance, voted)
                    .unwrap_or_else(|e| storage_failed(e));
                return;
            }
            _ => {}
        }
        let existing = self
            .log
            .read(instance)
            .unwrap_or_else(|e| storage_failed(e));
        let result = match (existing, ballot) {
            (Some(record), _) if record.decided => Ok(()),
            (Some(record), _) if &record.batch == batch => {
                self.log.mark_decided(instance, record.ballot)
            }
            (Some(_), None) => Ok(()),
            (_, ballot) => self.log.save(&LogRecord {
                instance,
                ballot: ballot.unwrap_or(Ballot::ZERO),
                batch: batch.clone(),
                decided: true,
            }),
        };
        result.unwrap_or_else(|e| storage_failed(e));
    }

    /// Decided instances `[from, to)` from this acceptor's log.
    pub(crate) fn on_retransmit_request(
        &mut self,
        requester: NodeId,
        from: Instance,
        to: Instance,
        out: &mut Output,
    ) {
        if !self.config.is_acceptor(self.me) {
            return;
        }
        let decided = self.read_decided(from, to);
        let reply = Message::RetransmitReply {
            decided,
            trimmed_below: self.log.trimmed_below(),
        };
        self.send(requester, reply, out);
    }

    /// Decided records in `[from, to)`, bounded in count and bytes, stopping
    /// at the first instance not known decided (replies are gap-free).
    pub(crate) fn read_decided(&self, from: Instance, to: Instance) -> Vec<(Instance, Batch)> {
        // A reply must fit one frame, which peers size for one full batch
        // plus one largest value (and 64 KiB of envelope): a reply larger
        // than that made the receiver drop the connection, so a far
        // behind learner could never catch up.
        let budget = self.config.limits.batch_bytes_max + self.config.limits.value_bytes_max;
        let mut decided = Vec::new();
        let mut bytes = 0;
        let first = from.max(self.log.trimmed_below());
        let last = to
            .min(self.log.end())
            .min(Instance(first.0 + RETRANSMIT_INSTANCES_MAX));
        let mut instance = first;
        while instance < last {
            match self
                .log
                .read(instance)
                .unwrap_or_else(|e| storage_failed(e))
            {
                Some(record) if record.decided => {
                    let len = batch_encoded_len(&record.batch) + RETRANSMIT_INSTANCE_OVERHEAD;
                    if !decided.is_empty() && bytes + len > budget {
                        break;
                    }
                    bytes += len;
                    decided.push((instance, record.batch));
                }
                _ => break,
            }
            instance = instance.next();
        }
        decided
    }

    /// Classic phase 1 of gap repair, at this acceptor.
    pub(crate) fn on_prepare(
        &mut self,
        from: NodeId,
        instance: Instance,
        ballot: Ballot,
        out: &mut Output,
    ) {
        self.observe_ballot(ballot);
        let trimmed = self.log.trimmed_below();
        let decided = if instance < trimmed {
            Vec::new()
        } else {
            self.read_decided(instance, instance.next())
        };
        if instance < trimmed || !decided.is_empty() {
            // Nothing to vote on: the answer is already known (or gone).
            let reply = Message::RetransmitReply {
                decided,
                trimmed_below: trimmed,
            };
            self.send(from, reply, out);
            return;
        }
        let Some(acceptor) = self.acceptor.as_mut() else {
            return;
        };
        let promise = acceptor.promise_for(instance);
        if ballot < promise {
            let reject = Message::Reject {
                ballot,
                promised: promise,
                instance: Some(instance),
            };
            self.send(from, reject, out);
            return;
        }
        if ballot > promise {
            acceptor.instance_promises.insert(instance, ballot);
            self.log
                .save_instance_promise(instance, ballot)
                .unwrap_or_else(|e| storage_failed(e));
        }
        let accepted = self
            .log
            .read(instance)
            .unwrap_or_else(|e| storage_failed(e))
            .map(|r| (r.ballot, r.batch));
        let promise = Message::Promise {
            instance,
            ballot,
            accepted,
        };
        self.send_after_vote(from, promise, out);
    }

    /// Classic phase 2 of gap repair, at this acceptor.
    pub(crate) fn on_accept(
        &mut self,
        from: NodeId,
        instance: Instance,
        ballot: Ballot,
        batch: Batch,
        out: &mut Output,
    ) {
        self.observe_ballot(ballot);
        if self.phase2_vote(instance, ballot, &batch, out) {
            self.send_after_vote(from, Message::AcceptAck { instance, ballot }, out);
        }
    }

    /// Forgets single-instance promises the learner has passed.
    pub(crate) fn prune_instance_promises(&mut self, below: Instance) {
        if let Some(acceptor) = self.acceptor.as_mut() {
            acceptor.instance_promises = acceptor.instance_promises.split_off(&below);
        }
    }
}
