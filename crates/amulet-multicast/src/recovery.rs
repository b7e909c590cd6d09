//! Non-disruptive recovery (thesis §3.4.4): a learner trimmed past keeps
//! the new decisions that reach it while its replica fetches a peer's
//! checkpoint; a checkpoint at or past the first of them is followed by
//! those decisions alone, with no log tail fetched from the acceptors.
//! The node and the simulator both ask and judge by these two functions.

use crate::group::GroupId;
use crate::multicast_node::MulticastNode;
use amulet_types::{Instance, StreamId};

impl MulticastNode {
    /// Per stream `group` merges that was trimmed past this node's
    /// learner, the first of the new decisions the learner holds meanwhile
    /// (or the trim point, if that is later): what a peer's checkpoint
    /// should reach (`at_least` of a checkpoint request).
    pub fn held_decisions(&self, group: GroupId) -> Vec<(StreamId, Instance)> {
        let Some(merger) = self.merger(group) else {
            return Vec::new();
        };
        merger
            .streams()
            .iter()
            .filter_map(|id| {
                let stream = self.streams().get(id)?;
                let below = stream.learner_trimmed()?;
                Some((*id, stream.learner_held_from().max(below)))
            })
            .collect()
    }

    /// Trims this node's acceptor log of `stream` below `point` (a trim
    /// point computed from the node's partition map), but never past the
    /// first instance no merge here has passed. A merge stops at every
    /// barrier's fence until its replica has applied the reconfiguration
    /// (say, a move giving a partition to other nodes), so the map is
    /// current only below that instance; trimming further by an older map
    /// would count the replicas a partition moved away from and forget
    /// what the group it moved to still needs. Streams no merge here
    /// feeds on are trimmed at `point`.
    pub fn trim_stream(&mut self, stream: StreamId, point: Instance) {
        let merged = self
            .groups
            .values()
            .filter_map(|merger| merger.next_instance(stream))
            .max();
        if let Some(node) = self.stream_mut(stream) {
            node.trim_log(merged.map_or(point, |m| point.min(m)));
        }
    }
}

/// Whether a checkpoint whose merge lanes stand at `lanes` (per stream, the
/// first instance it does not reflect) reaches every `at_least`: each
/// stream named has a lane at or past its instance.
pub fn checkpoint_reaches(
    lanes: impl IntoIterator<Item = (StreamId, Instance)> + Clone,
    at_least: &[(StreamId, Instance)],
) -> bool {
    at_least.iter().all(|(stream, instance)| {
        lanes
            .clone()
            .into_iter()
            .any(|(s, next)| s == *stream && next >= *instance)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thesis_3_4_4_a_checkpoint_reaches_what_every_named_stream_needs() {
        let lanes = [(StreamId(1), Instance(90)), (StreamId(2), Instance(500))];
        assert!(checkpoint_reaches(lanes, &[]));
        assert!(checkpoint_reaches(lanes, &[(StreamId(2), Instance(500))]));
        assert!(!checkpoint_reaches(lanes, &[(StreamId(2), Instance(501))]));
        assert!(!checkpoint_reaches(
            lanes,
            &[(StreamId(1), Instance(10)), (StreamId(3), Instance(0))]
        ));
    }
}
