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

    /// The first instance of `stream` that no merge here has passed (the
    /// greatest lane over this node's groups; `None` when none merges
    /// it). A node trims its acceptor log of the stream no further: its
    /// partition map is current up to there. A merge stops at every
    /// barrier's fence until its replica has applied the reconfiguration
    /// (say, a move giving a partition to other nodes), so below this
    /// point no map change is unknown here; trimming past it by an older
    /// map would count the replicas a partition moved away from and
    /// forget what the group it moved to still needs.
    pub fn merged_through(&self, stream: StreamId) -> Option<Instance> {
        self.groups
            .values()
            .filter_map(|merger| merger.next_instance(stream))
            .max()
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
    fn section_3_4_4_a_checkpoint_reaches_what_every_named_stream_needs() {
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
