//! Gap repair by a learner (thesis A.1.4): "a learner proposes a null value
//! for an outstanding instance by starting phase 1 with a very high ballot".
//! Classic single-instance Paxos straight to the acceptors; the decision is
//! the highest-ballot vote a quorum reports, or `Null` if none voted.
//! Acceptors promise the ballot for this instance only, so the coordinator
//! keeps its ballot for every other instance.

use crate::coordinator::HOPS_DIRECT;
use crate::output::Output;
use crate::stream_node::StreamNode;
use amulet_types::{Ballot, Instance, NodeId, TimeMicros};
use amulet_wire::{Batch, Message};
use std::collections::{BTreeMap, BTreeSet};

#[derive(Debug)]
pub(crate) struct Repair {
    pub(crate) instance: Instance,
    ballot: Ballot,
    started: TimeMicros,
    promises: BTreeMap<NodeId, Option<(Ballot, Batch)>>,
    /// Set once a quorum promised: the batch being accepted.
    accepting: Option<Batch>,
    acks: BTreeSet<NodeId>,
}

impl StreamNode {
    pub(crate) fn start_repair(&mut self, instance: Instance, out: &mut Output) {
        if self
            .learner
            .repair
            .as_ref()
            .is_some_and(|r| r.instance == instance)
        {
            return;
        }
        let ballot = self.highest_ballot.next_for(self.me);
        self.observe_ballot(ballot);
        self.stats.repairs_started += 1;
        self.learner.repair = Some(Repair {
            instance,
            ballot,
            started: self.now,
            promises: BTreeMap::new(),
            accepting: None,
            acks: BTreeSet::new(),
        });
        // Includes this node if it is an acceptor: the runtime loops
        // messages to self back.
        for to in self.config.acceptors.clone() {
            self.send(to, Message::Prepare { instance, ballot }, out);
        }
    }

    /// A repair that got no quorum in time is abandoned; the next gap
    /// check starts again with a higher ballot.
    pub(crate) fn repair_tick(&mut self, _out: &mut Output) {
        let retry = self.config.limits.retry_after_micros;
        if let Some(repair) = &self.learner.repair {
            if self.now.since(repair.started) >= retry {
                self.learner.repair = None;
            }
        }
    }

    pub(crate) fn repair_rejected(&mut self, ballot: Ballot) {
        if self
            .learner
            .repair
            .as_ref()
            .is_some_and(|r| r.ballot == ballot)
        {
            self.learner.repair = None;
        }
    }

    pub(crate) fn on_promise(
        &mut self,
        from: NodeId,
        instance: Instance,
        ballot: Ballot,
        accepted: Option<(Ballot, Batch)>,
        out: &mut Output,
    ) {
        let quorum = self.config.quorum();
        let Some(repair) = self.learner.repair.as_mut() else {
            return;
        };
        if repair.instance != instance || repair.ballot != ballot || repair.accepting.is_some() {
            return;
        }
        repair.promises.insert(from, accepted);
        if repair.promises.len() < quorum {
            return;
        }
        let batch = repair
            .promises
            .values()
            .flatten()
            .max_by_key(|(b, _)| *b)
            .map_or(Batch::Null, |(_, batch)| batch.clone());
        repair.accepting = Some(batch.clone());
        for to in self.config.acceptors.clone() {
            let accept = Message::Accept {
                instance,
                ballot,
                batch: batch.clone(),
            };
            self.send(to, accept, out);
        }
    }

    pub(crate) fn on_accept_ack(
        &mut self,
        from: NodeId,
        instance: Instance,
        ballot: Ballot,
        out: &mut Output,
    ) {
        let quorum = self.config.quorum();
        let Some(repair) = self.learner.repair.as_mut() else {
            return;
        };
        if repair.instance != instance || repair.ballot != ballot {
            return;
        }
        let Some(batch) = repair.accepting.clone() else {
            return;
        };
        repair.acks.insert(from);
        if repair.acks.len() < quorum {
            return;
        }
        self.learner.repair = None;
        let targets: Vec<NodeId> = self.ring.others().collect();
        for to in targets {
            let decision = Message::Decision {
                instance,
                ballot,
                batch: Some(batch.clone()),
                decided_by: self.me,
                hops: HOPS_DIRECT,
            };
            self.send(to, decision, out);
        }
        self.learn(instance, Some(ballot), batch);
    }
}
