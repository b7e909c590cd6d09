//! Membership agreement in the DMap swarms (docs/membership.md): every
//! host runs its edge monitor as in production, and every replica of
//! every partition is observed after every step; the membership each
//! holds at a global position must be the one every other replica held
//! there (alerts and cuts take effect at the same point of the order
//! everywhere, so every node installs the same sequence of views).

use crate::harness::Harness;
use crate::violation::{Property, Violation};
use amulet_membership::Membership;
use amulet_types::{NodeId, PartitionId};
use std::collections::BTreeMap;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

/// The agreement record.
#[derive(Default)]
pub(super) struct MembershipObserver {
    /// Per replica: the global position and membership last seen.
    seen: BTreeMap<(NodeId, PartitionId), (u64, *const Membership)>,
    /// By global position: the membership's digest and the first replica
    /// seen holding it there.
    by_position: BTreeMap<u64, (u64, NodeId, PartitionId)>,
    /// Agreement is reported once per run.
    diverged: bool,
    /// The greatest view any replica installed (the run's statistics).
    pub(super) greatest_view: u64,
}

impl MembershipObserver {
    /// Records every live replica's membership at its global position
    /// and reports the first position where two replicas disagree.
    pub(super) fn observe(&mut self, harness: &Harness, violations: &mut Vec<Violation>) {
        for (node, host) in harness.hosts() {
            for (partition, replica) in host.replicas() {
                let Some(membership) = replica.membership() else {
                    continue;
                };
                let position = replica.global_position();
                let key = (node, *partition);
                let now = (position, Arc::as_ptr(membership));
                if self.seen.get(&key) == Some(&now) {
                    continue;
                }
                self.seen.insert(key, now);
                self.greatest_view = self.greatest_view.max(membership.view().id().0);
                let digest = digest(membership);
                match self.by_position.get(&position) {
                    None => {
                        self.by_position
                            .insert(position, (digest, node, *partition));
                    }
                    Some(&(first, other_node, other_partition))
                        if first != digest && !self.diverged =>
                    {
                        self.diverged = true;
                        violations.push(Violation::new(
                            Property::MembershipAgreement,
                            format!(
                                "at global position {position}, node {node}'s replica of {partition} holds view {} ({:?}), node {other_node}'s replica of {other_partition} another membership",
                                membership.view().id().0,
                                membership.view().members()
                            ),
                        ));
                    }
                    Some(_) => {}
                }
            }
        }
    }
}

fn digest(membership: &Membership) -> u64 {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    postcard::to_allocvec(membership)
        .expect("encodes")
        .hash(&mut hasher);
    hasher.finish()
}
