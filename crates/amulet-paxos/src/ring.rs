//! Ring membership from a failure detector (thesis A.2, without ZooKeeper).
//!
//! The ring is the stream's members in id order minus the ones this node
//! suspects. The coordinator is the lowest live acceptor that can vote.
//! Both are liveness choices only: two nodes with different views may both
//! try to coordinate, and ballots keep that safe.

use amulet_types::{NodeId, StreamConfig, TimeMicros};
use std::collections::BTreeMap;

/// What this node believes about one peer.
#[derive(Clone, Debug)]
struct PeerState {
    /// Last time any message arrived from the peer.
    last_heard: TimeMicros,
    /// The peer said it is an acceptor that may vote.
    voting: bool,
}

/// Failure detector and the ring view it implies.
#[derive(Debug)]
pub(crate) struct Ring {
    me: NodeId,
    members: Vec<NodeId>,
    acceptors: Vec<NodeId>,
    peers: BTreeMap<NodeId, PeerState>,
    suspect_after_micros: u64,
    /// Members in ring order that are not suspected (always contains me).
    live: Vec<NodeId>,
}

impl Ring {
    pub(crate) fn new(me: NodeId, config: &StreamConfig, now: TimeMicros) -> Ring {
        let members = config.members();
        assert!(
            members.contains(&me),
            "{me} is not a member of {}",
            config.stream
        );
        let peers = members
            .iter()
            .filter(|&&n| n != me)
            .map(|&n| {
                let state = PeerState {
                    last_heard: now,
                    voting: config.is_acceptor(n),
                };
                (n, state)
            })
            .collect();
        let mut ring = Ring {
            me,
            members: members.clone(),
            acceptors: config.acceptors.clone(),
            peers,
            suspect_after_micros: config.limits.suspect_after_micros,
            live: members,
        };
        ring.refresh(now);
        ring
    }

    /// Any message from `from` proves it alive.
    pub(crate) fn heard(&mut self, from: NodeId, now: TimeMicros) -> bool {
        let Some(peer) = self.peers.get_mut(&from) else {
            return false;
        };
        let was_suspected = now.since(peer.last_heard) > self.suspect_after_micros;
        peer.last_heard = now;
        was_suspected
    }

    /// A heartbeat also says whether the peer may vote.
    pub(crate) fn set_voting(&mut self, from: NodeId, voting: bool) {
        if let Some(peer) = self.peers.get_mut(&from) {
            peer.voting = voting && self.acceptors.contains(&from);
        }
    }

    /// Recomputes the live ring; returns whether it changed.
    pub(crate) fn refresh(&mut self, now: TimeMicros) -> bool {
        let live: Vec<NodeId> = self
            .members
            .iter()
            .copied()
            .filter(|n| *n == self.me || !self.suspects(*n, now))
            .collect();
        let changed = live != self.live;
        self.live = live;
        changed
    }

    fn suspects(&self, node: NodeId, now: TimeMicros) -> bool {
        self.peers
            .get(&node)
            .is_some_and(|p| now.since(p.last_heard) > self.suspect_after_micros)
    }

    /// The next live member after me, if any.
    pub(crate) fn successor(&self) -> Option<NodeId> {
        let position = self.position(self.me)?;
        let next = self.live[(position + 1) % self.live.len()];
        (next != self.me).then_some(next)
    }

    fn position(&self, node: NodeId) -> Option<usize> {
        self.live.iter().position(|&n| n == node)
    }

    /// Number of live members.
    pub(crate) fn len(&self) -> usize {
        self.live.len()
    }

    /// The node this one believes coordinates: the lowest live acceptor
    /// that can vote (`me_voting` for this node itself).
    pub(crate) fn coordinator(&self, me_voting: bool) -> Option<NodeId> {
        self.live
            .iter()
            .copied()
            .find(|&n| self.votes(n, me_voting))
    }

    /// The last live voting acceptor met when walking the ring from `from`.
    pub(crate) fn last_acceptor_from(&self, from: NodeId, me_voting: bool) -> Option<NodeId> {
        let start = self.position(from)?;
        (0..self.live.len())
            .rev()
            .map(|k| self.live[(start + k) % self.live.len()])
            .find(|&n| self.votes(n, me_voting))
    }

    fn votes(&self, node: NodeId, me_voting: bool) -> bool {
        if node == self.me {
            me_voting
        } else {
            self.acceptors.contains(&node) && self.peers.get(&node).is_some_and(|p| p.voting)
        }
    }

    /// Every member but me (heartbeat and decision broadcast targets).
    pub(crate) fn others(&self) -> impl Iterator<Item = NodeId> + '_ {
        self.members.iter().copied().filter(move |&n| n != self.me)
    }

    /// Acceptors but me, in id order.
    pub(crate) fn other_acceptors(&self) -> impl Iterator<Item = NodeId> + '_ {
        self.acceptors
            .iter()
            .copied()
            .filter(move |&n| n != self.me)
    }

    /// Whether `node` is a live member in my view.
    pub(crate) fn is_live(&self, node: NodeId) -> bool {
        self.position(node).is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use amulet_types::{StorageMode, StreamId, StreamLimits};

    fn config() -> StreamConfig {
        StreamConfig {
            stream: StreamId(1),
            acceptors: vec![NodeId(1), NodeId(2), NodeId(3)],
            learners: vec![NodeId(4)],
            storage: StorageMode::Memory,
            limits: StreamLimits::default(),
        }
    }

    #[test]
    fn ring_successor_skips_suspected_members_appendix_a2() {
        let mut ring = Ring::new(NodeId(1), &config(), TimeMicros(0));
        assert_eq!(ring.successor(), Some(NodeId(2)));
        assert_eq!(ring.coordinator(true), Some(NodeId(1)));
        let later = TimeMicros(10_000_000);
        for n in [3, 4] {
            ring.heard(NodeId(n), later);
        }
        assert!(ring.refresh(later));
        assert_eq!(ring.successor(), Some(NodeId(3)));
        assert_eq!(ring.last_acceptor_from(NodeId(1), true), Some(NodeId(3)));
    }

    #[test]
    fn coordinator_is_lowest_live_voting_acceptor() {
        let mut ring = Ring::new(NodeId(4), &config(), TimeMicros(0));
        ring.set_voting(NodeId(1), false);
        assert_eq!(ring.coordinator(false), Some(NodeId(2)));
        assert_eq!(ring.last_acceptor_from(NodeId(2), false), Some(NodeId(3)));
    }
}
