//! The cluster view: who is a member, in which state, and who watches whom.
//!
//! Rapid's monitoring topology (Suresh et al., §4.1): K pseudo-random
//! rings over the members; on each ring a member's successor is one of its
//! observers. A subject's observers are the distinct successors over the K
//! rings, so on small clusters (fewer than K + 1 members) K shrinks to
//! what the ring can give (`members - 1`), never counting one observer
//! twice. The rings are a pure function of the member ids, so every node
//! derives the same observers from the same view.

use amulet_types::NodeId;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

/// Rapid's K: observers per subject on a large cluster.
pub const K_MAX: usize = 10;

/// A view's number: one more at every view change.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
pub struct ViewId(pub u64);

/// Where a node is in its membership.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum MemberState {
    /// Asked to join: has its id, is probed by its expected observers, is
    /// not a member yet (no observer duty, no replicas).
    Joining,
    /// A member.
    Active,
    /// A member that asked to leave; leaves at the next view change.
    Leaving,
}

/// One node the view knows.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Member {
    /// Where its peers reach it.
    pub address: String,
    /// Its state.
    pub state: MemberState,
    /// Where clients reach it (its gRPC API), for a node that joined
    /// (`Command::Join`); empty for a configured member, whose client
    /// address is in every node's configuration (`[smr] clients`).
    /// Checkpoint files of format 8 and older predate it (empty).
    #[serde(default, deserialize_with = "client_address_since_format_9")]
    pub client_address: String,
}

/// Decodes `Member::client_address` of a checkpoint file of format 9 or
/// later; an older file has none (postcard is positional: nothing is read).
fn client_address_since_format_9<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<String, D::Error> {
    if amulet_types::checkpoint_format::decoding_format() <= 8 {
        return Ok(String::new());
    }
    String::deserialize(deserializer)
}

/// The cluster view.
///
/// Invariants (checked by [`View::check`]): every id in `nodes` is below
/// `next_id` and not in `removed`; at least one node is a member (Active or
/// Leaving); no two nodes share an address.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct View {
    id: ViewId,
    nodes: BTreeMap<NodeId, Member>,
    removed: BTreeSet<NodeId>,
    next_id: u32,
}

/// The position of `node` on ring `ring`: a 64-bit mix of both (splitmix64's
/// finaliser), fixed forever so that every version of every node derives
/// the same observers.
fn ring_position(ring: usize, node: NodeId) -> u64 {
    let mut z = ((ring as u64) << 32 | u64::from(node.0)).wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

impl View {
    /// The first view: `members` active, ids `1..=members.len()` in order.
    ///
    /// Panics on no members or a repeated address: a cluster starts with at
    /// least one node, each at its own address.
    pub fn initial(addresses: &[String]) -> View {
        assert!(!addresses.is_empty(), "a view has at least one member");
        let nodes: BTreeMap<NodeId, Member> = addresses
            .iter()
            .enumerate()
            .map(|(index, address)| {
                let member = Member {
                    address: address.clone(),
                    state: MemberState::Active,
                    client_address: String::new(),
                };
                (NodeId(index as u32 + 1), member)
            })
            .collect();
        let view = View {
            id: ViewId(1),
            next_id: nodes.len() as u32 + 1,
            nodes,
            removed: BTreeSet::new(),
        };
        view.check();
        view
    }

    /// The first view of a configured cluster: `members` active under
    /// their configured ids; ids above the greatest are the joiners'.
    ///
    /// Panics on no members or a repeated address, like [`View::initial`].
    pub fn from_members(members: &BTreeMap<NodeId, String>) -> View {
        assert!(!members.is_empty(), "a view has at least one member");
        let nodes: BTreeMap<NodeId, Member> = members
            .iter()
            .map(|(id, address)| {
                let member = Member {
                    address: address.clone(),
                    state: MemberState::Active,
                    client_address: String::new(),
                };
                (*id, member)
            })
            .collect();
        let greatest = nodes.keys().next_back().map_or(0, |id| id.0);
        let view = View {
            id: ViewId(1),
            next_id: greatest + 1,
            nodes,
            removed: BTreeSet::new(),
        };
        view.check();
        view
    }

    /// This view's number.
    pub fn id(&self) -> ViewId {
        self.id
    }

    /// Every node the view knows (joining ones included).
    pub fn nodes(&self) -> &BTreeMap<NodeId, Member> {
        &self.nodes
    }

    /// Ids removed for good: never members again, never reused.
    pub fn removed(&self) -> &BTreeSet<NodeId> {
        &self.removed
    }

    /// The id the next joiner gets.
    pub fn next_id(&self) -> NodeId {
        NodeId(self.next_id)
    }

    /// `node`'s state, if the view knows it.
    pub fn state(&self, node: NodeId) -> Option<MemberState> {
        self.nodes.get(&node).map(|member| member.state)
    }

    /// Whether `node` was removed or is leaving: its partitions are to be
    /// re-homed and it takes no new ones.
    pub fn gone(&self, node: NodeId) -> bool {
        self.removed.contains(&node) || self.state(node) == Some(MemberState::Leaving)
    }

    /// The active members that are not gone, in id order: the nodes a
    /// partition or the global stream may be given (a joiner the view
    /// admitted is one of them).
    pub fn active_members(&self) -> Vec<NodeId> {
        self.nodes
            .iter()
            .filter(|(&id, member)| member.state == MemberState::Active && !self.gone(id))
            .map(|(&id, _)| id)
            .collect()
    }

    /// True for Active and Leaving nodes: the ones in the rings.
    pub fn is_member(&self, node: NodeId) -> bool {
        matches!(
            self.state(node),
            Some(MemberState::Active | MemberState::Leaving)
        )
    }

    /// The members, in id order.
    pub fn members(&self) -> Vec<NodeId> {
        self.nodes
            .iter()
            .filter(|(_, member)| member.state != MemberState::Joining)
            .map(|(&id, _)| id)
            .collect()
    }

    /// The node at `address`, if any.
    pub fn node_at(&self, address: &str) -> Option<NodeId> {
        self.nodes
            .iter()
            .find(|(_, member)| member.address == address)
            .map(|(&id, _)| id)
    }

    /// The number of rings over `members` ring members: K, or fewer on a
    /// cluster too small to give K distinct observers.
    fn rings(members: usize) -> usize {
        members.saturating_sub(1).clamp(1, K_MAX)
    }

    /// `subject`'s observers: its distinct successors over the rings of the
    /// members (with `subject` placed on them when it is joining: its
    /// *expected* observers). Empty when no other member exists.
    pub fn observers_of(&self, subject: NodeId) -> Vec<NodeId> {
        let mut ring_members = self.members();
        if !ring_members.contains(&subject) {
            ring_members.push(subject);
        }
        let wanted = View::rings(ring_members.len()).min(ring_members.len() - 1);
        let mut observers: Vec<NodeId> = Vec::with_capacity(wanted);
        for ring in 0..wanted {
            let here = ring_position(ring, subject);
            // The successor on this ring: the member with the smallest
            // position above `here`, wrapping around; one already chosen on
            // an earlier ring is passed over, so a subject has exactly
            // min(K, members - 1) distinct observers.
            let successor = ring_members
                .iter()
                .filter(|&&node| node != subject && !observers.contains(&node))
                .map(|&node| {
                    (
                        ring_position(ring, node).wrapping_sub(here).wrapping_sub(1),
                        node,
                    )
                })
                .min();
            if let Some((_, observer)) = successor {
                observers.push(observer);
            }
        }
        observers
    }

    /// The subjects `observer` watches: the members and joiners whose
    /// observers include it.
    pub fn subjects_of(&self, observer: NodeId) -> Vec<NodeId> {
        if !self.is_member(observer) {
            return Vec::new();
        }
        self.nodes
            .keys()
            .copied()
            .filter(|&subject| {
                subject != observer && self.observers_of(subject).contains(&observer)
            })
            .collect()
    }

    /// Asserts the invariants.
    pub fn check(&self) {
        assert!(
            self.nodes
                .values()
                .any(|member| member.state != MemberState::Joining),
            "view {:?} has no member",
            self.id
        );
        for (id, member) in &self.nodes {
            assert!(
                id.0 < self.next_id,
                "{id:?} is not below the next id {}",
                self.next_id
            );
            assert!(
                !self.removed.contains(id),
                "{id:?} is both in the view and removed"
            );
            assert_eq!(
                self.node_at(&member.address),
                Some(*id),
                "address {} is shared",
                member.address
            );
        }
    }

    /// Records a new joiner at `address` (clients reach it at
    /// `client_address`) and returns its fresh id.
    pub(crate) fn add_joiner(&mut self, address: String, client_address: String) -> NodeId {
        let id = NodeId(self.next_id);
        self.next_id += 1;
        self.nodes.insert(
            id,
            Member {
                address,
                state: MemberState::Joining,
                client_address,
            },
        );
        id
    }

    /// Marks a member as leaving.
    pub(crate) fn set_leaving(&mut self, node: NodeId) {
        if let Some(member) = self.nodes.get_mut(&node) {
            member.state = MemberState::Leaving;
        }
    }

    /// Forgets a joiner that was refused (its id is spent).
    pub(crate) fn refuse_joiner(&mut self, node: NodeId) {
        if self.state(node) == Some(MemberState::Joining) {
            self.nodes.remove(&node);
            self.removed.insert(node);
        }
    }

    /// The next view: `joined` become active, `removed` leave for good.
    pub(crate) fn change(&mut self, joined: &[NodeId], removed: &[NodeId]) {
        for node in joined {
            if let Some(member) = self.nodes.get_mut(node) {
                member.state = MemberState::Active;
            }
        }
        for node in removed {
            self.nodes.remove(node);
            self.removed.insert(*node);
        }
        self.id = ViewId(self.id.0 + 1);
        self.check();
    }
}

/// A first view of `members` nodes at made-up addresses, for tests.
#[cfg(test)]
pub(crate) fn test_view(members: usize) -> View {
    let addresses: Vec<String> = (0..members).map(|i| format!("n{i}:7000")).collect();
    View::initial(&addresses)
}

#[cfg(test)]
mod tests {
    use super::test_view as view;
    use super::*;

    /// A view as checkpoint files of format 8 and older hold it: members
    /// without a client address.
    #[derive(Serialize)]
    struct Format8View {
        id: ViewId,
        nodes: BTreeMap<NodeId, Format8Member>,
        removed: BTreeSet<NodeId>,
        next_id: u32,
    }

    #[derive(Serialize)]
    struct Format8Member {
        address: String,
        state: MemberState,
    }

    #[test]
    fn sconekv_2_a_view_of_checkpoint_format_8_decodes_with_no_client_addresses() {
        let mut current = view(3);
        let joiner = current.add_joiner("n9:7000".into(), "n9:7100".into());
        let older = Format8View {
            id: current.id,
            nodes: current
                .nodes
                .iter()
                .map(|(id, m)| {
                    let member = Format8Member {
                        address: m.address.clone(),
                        state: m.state,
                    };
                    (*id, member)
                })
                .collect(),
            removed: current.removed.clone(),
            next_id: current.next_id,
        };
        let bytes = postcard::to_allocvec(&older).unwrap();
        let read: View = amulet_types::checkpoint_format::with_decoding_format(8, || {
            postcard::from_bytes(&bytes)
        })
        .expect("format 8 decodes");
        assert_eq!(read.state(joiner), Some(MemberState::Joining));
        assert!(read.nodes.values().all(|m| m.client_address.is_empty()));
        let mut without = current.clone();
        for member in without.nodes.values_mut() {
            member.client_address.clear();
        }
        assert_eq!(read, without);
        // Format 9 and messages between nodes keep it.
        let bytes = postcard::to_allocvec(&current).unwrap();
        let read: View = postcard::from_bytes(&bytes).unwrap();
        assert_eq!(read.nodes[&joiner].client_address, "n9:7100");
        assert_eq!(read, current);
    }

    #[test]
    fn rapid_4_1_observers_are_distinct_and_scale_down_on_small_clusters() {
        for members in 1..=14 {
            let view = view(members);
            for subject in view.members() {
                let observers = view.observers_of(subject);
                assert!(!observers.contains(&subject));
                let mut distinct = observers.clone();
                distinct.sort();
                distinct.dedup();
                assert_eq!(distinct.len(), observers.len());
                assert_eq!(observers.len(), K_MAX.min(members - 1));
                assert!(members == 1 || !observers.is_empty());
            }
        }
        // On three nodes each node watches both others.
        let three = view(3);
        for subject in three.members() {
            assert_eq!(three.observers_of(subject).len(), 2);
        }
    }

    #[test]
    fn rapid_4_1_subjects_and_observers_are_the_same_relation() {
        let view = view(9);
        for observer in view.members() {
            for subject in view.subjects_of(observer) {
                assert!(view.observers_of(subject).contains(&observer));
            }
        }
    }

    #[test]
    fn view_ids_are_never_reused() {
        let mut view = view(3);
        let joiner = view.add_joiner("n9:7000".into(), String::new());
        assert_eq!(joiner, NodeId(4));
        view.change(&[joiner], &[NodeId(2)]);
        assert_eq!(view.next_id(), NodeId(5));
        assert!(view.removed().contains(&NodeId(2)));
        assert_eq!(view.id(), ViewId(2));
        let second = view.add_joiner("n2:7000".into(), String::new());
        assert_eq!(second, NodeId(5), "a rejoining address gets a new id");
    }
}
