//! What happened in a run, as the checkers see it: every value multicast,
//! and for every learner incarnation the sequence it delivered.
//!
//! A learner *incarnation* is one run of a learner process, from start to
//! crash or to the end of the simulation. Uniform properties (agreement,
//! integrity, order) hold for every incarnation, crashed or not; validity
//! only asks for deliveries by *correct* incarnations (the last incarnation
//! of a node, never crashed) of values from *correct* proposer
//! incarnations.

use amulet_types::{NodeId, StreamId, TimeMicros, ValueId};
use std::collections::{BTreeMap, BTreeSet};

/// One `multicast(streams, value)`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Proposal {
    /// The value.
    pub value: ValueId,
    /// The streams it was multicast to (one in Multi-Ring Paxos).
    pub streams: BTreeSet<StreamId>,
    /// The proposing node.
    pub proposer: NodeId,
    /// The proposer's incarnation.
    pub incarnation: u32,
    /// When it was multicast.
    pub time: TimeMicros,
}

/// One learner incarnation and what it delivered.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LearnerRun {
    /// The node.
    pub node: NodeId,
    /// Its incarnation; increases at every restart.
    pub incarnation: u32,
    /// The streams it subscribes to.
    pub subscriptions: BTreeSet<StreamId>,
    /// Its merged delivery sequence, in delivery order. The first
    /// `recovered` entries were not delivered by this incarnation but
    /// restored from a checkpoint at start; they count as delivered.
    pub deliveries: Vec<(StreamId, ValueId)>,
    /// How many leading `deliveries` came from recovery.
    pub recovered: usize,
    /// When it started.
    pub started: TimeMicros,
    /// Whether it ended in a crash.
    pub crashed: bool,
}

impl LearnerRun {
    /// `node#incarnation`, the name used in violation messages.
    pub fn name(&self) -> String {
        format!("{}#{}", self.node, self.incarnation)
    }
}

/// The record of one run. Built by the driver through the recording
/// methods, consumed by the checkers.
///
/// Invariant: at most one incarnation per node is live (not crashed) and it
/// is the last one recorded for that node.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct History {
    proposals: BTreeMap<ValueId, Proposal>,
    learners: Vec<LearnerRun>,
    live_learners: BTreeMap<NodeId, usize>,
    crashed_proposers: BTreeSet<(NodeId, u32)>,
    healed_at: Option<TimeMicros>,
    finished_at: Option<TimeMicros>,
}

impl History {
    /// An empty history.
    pub fn new() -> History {
        History::default()
    }

    /// Records `multicast(streams, value)` by `proposer#incarnation`.
    /// Panics if the same value is multicast twice: value ids are unique by
    /// construction, so that is a driver bug.
    pub fn propose(
        &mut self,
        time: TimeMicros,
        value: ValueId,
        streams: BTreeSet<StreamId>,
        proposer: NodeId,
        incarnation: u32,
    ) {
        assert!(!streams.is_empty(), "{value:?} multicast to no stream");
        let proposal = Proposal {
            value,
            streams,
            proposer,
            incarnation,
            time,
        };
        let previous = self.proposals.insert(value, proposal);
        assert!(previous.is_none(), "{value:?} multicast twice");
    }

    /// Records that `proposer#incarnation` crashed: its values need not be
    /// delivered.
    pub fn proposer_crashed(&mut self, proposer: NodeId, incarnation: u32) {
        self.crashed_proposers.insert((proposer, incarnation));
    }

    /// Records the start of a learner incarnation with an empty state.
    pub fn learner_started(
        &mut self,
        time: TimeMicros,
        node: NodeId,
        incarnation: u32,
        subscriptions: BTreeSet<StreamId>,
    ) {
        self.learner_recovered(time, node, incarnation, subscriptions, Vec::new());
    }

    /// Records the start of a learner incarnation that restored `recovered`
    /// (the merged sequence its checkpoint covers) before delivering more.
    /// Panics if the node still has a live incarnation or the incarnation
    /// does not increase.
    pub fn learner_recovered(
        &mut self,
        time: TimeMicros,
        node: NodeId,
        incarnation: u32,
        subscriptions: BTreeSet<StreamId>,
        recovered: Vec<(StreamId, ValueId)>,
    ) {
        assert!(
            !self.live_learners.contains_key(&node),
            "{node} started while its previous incarnation is live"
        );
        let last = self.learners.iter().rev().find(|run| run.node == node);
        if let Some(last) = last {
            assert!(
                incarnation > last.incarnation,
                "{node} incarnation must increase"
            );
        }
        self.live_learners.insert(node, self.learners.len());
        self.learners.push(LearnerRun {
            node,
            incarnation,
            subscriptions,
            recovered: recovered.len(),
            deliveries: recovered,
            started: time,
            crashed: false,
        });
    }

    /// Records that the live incarnation of learner `node` delivered
    /// `value` from `stream`. Panics if `node` has no live incarnation.
    pub fn deliver(&mut self, node: NodeId, stream: StreamId, value: ValueId) {
        let index = *self
            .live_learners
            .get(&node)
            .unwrap_or_else(|| panic!("{node} delivered while not running"));
        self.learners[index].deliveries.push((stream, value));
    }

    /// Records that the live incarnation of learner `node` crashed. A node
    /// without a live incarnation is ignored (it was not a learner).
    pub fn learner_crashed(&mut self, node: NodeId) {
        if let Some(index) = self.live_learners.remove(&node) {
            self.learners[index].crashed = true;
        }
    }

    /// Records the start of the healed (liveness) phase.
    pub fn healed(&mut self, time: TimeMicros) {
        self.healed_at = Some(time);
    }

    /// Records the end of the run: validity may now be checked.
    pub fn finished(&mut self, time: TimeMicros) {
        self.finished_at = Some(time);
    }

    /// Every multicast, by value.
    pub fn proposals(&self) -> &BTreeMap<ValueId, Proposal> {
        &self.proposals
    }

    /// Every learner incarnation, in start order.
    pub fn learners(&self) -> &[LearnerRun] {
        &self.learners
    }

    /// The currently live incarnation of `node`, if any.
    pub fn live_learner(&self, node: NodeId) -> Option<&LearnerRun> {
        self.live_learners.get(&node).map(|i| &self.learners[*i])
    }

    /// Whether `proposer#incarnation` crashed.
    pub fn is_proposer_crashed(&self, proposer: NodeId, incarnation: u32) -> bool {
        self.crashed_proposers.contains(&(proposer, incarnation))
    }

    /// Correct learner incarnations: live at the end of the run.
    pub fn correct_learners(&self) -> impl Iterator<Item = &LearnerRun> {
        self.live_learners.values().map(|i| &self.learners[*i])
    }

    /// When the network was healed, if it was.
    pub fn healed_at(&self) -> Option<TimeMicros> {
        self.healed_at
    }

    /// When the run finished, if it did.
    pub fn finished_at(&self) -> Option<TimeMicros> {
        self.finished_at
    }

    /// Values delivered over all incarnations.
    pub fn delivery_count(&self) -> usize {
        self.learners.iter().map(|run| run.deliveries.len()).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn incarnations_are_tracked_and_correct_ones_are_the_live_ones() {
        let mut history = History::new();
        let streams: BTreeSet<StreamId> = [StreamId(0)].into();
        let value = ValueId {
            proposer: NodeId(1),
            incarnation: 1,
            sequence: 1,
        };
        history.propose(TimeMicros(0), value, streams.clone(), NodeId(1), 1);
        history.learner_started(TimeMicros(0), NodeId(2), 1, streams.clone());
        history.deliver(NodeId(2), StreamId(0), value);
        history.learner_crashed(NodeId(2));
        history.learner_recovered(
            TimeMicros(5),
            NodeId(2),
            2,
            streams,
            vec![(StreamId(0), value)],
        );
        assert_eq!(history.learners().len(), 2);
        assert!(history.learners()[0].crashed);
        let correct: Vec<_> = history.correct_learners().collect();
        assert_eq!(correct.len(), 1);
        assert_eq!(correct[0].incarnation, 2);
        assert_eq!(correct[0].recovered, 1);
        assert_eq!(history.delivery_count(), 2);
    }
}
