//! Hand-made histories for the checkers' tests.

use crate::history::History;
use amulet_types::{NodeId, StreamId, TimeMicros, ValueId};
use std::collections::BTreeSet;

/// Value `sequence` of proposer `proposer`, incarnation 1.
pub fn v(proposer: u32, sequence: u64) -> ValueId {
    ValueId {
        proposer: NodeId(proposer),
        incarnation: 1,
        sequence,
    }
}

/// A set of streams from their numbers.
pub fn streams(ids: &[u32]) -> BTreeSet<StreamId> {
    ids.iter().map(|id| StreamId(*id)).collect()
}

/// Records each value as multicast by its proposer to one stream.
pub fn propose_all(history: &mut History, values: &[(ValueId, u32)]) {
    for (value, stream) in values {
        history.propose(
            TimeMicros(0),
            *value,
            streams(&[*stream]),
            value.proposer,
            value.incarnation,
        );
    }
}

/// Starts learner `node` (next incarnation) subscribed to `subscriptions`
/// and records it delivering `deliveries` as (stream, value).
pub fn learn(
    history: &mut History,
    node: u32,
    subscriptions: &[u32],
    deliveries: &[(u32, ValueId)],
) {
    let incarnation = history
        .learners()
        .iter()
        .filter(|run| run.node == NodeId(node))
        .count() as u32
        + 1;
    history.learner_started(
        TimeMicros(0),
        NodeId(node),
        incarnation,
        streams(subscriptions),
    );
    for (stream, value) in deliveries {
        history.deliver(NodeId(node), StreamId(*stream), *value);
    }
}
