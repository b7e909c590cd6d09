//! Ring membership from a failure detector (thesis A.2, without ZooKeeper).
//!
//! The ring is the stream's members in id order minus the ones this node
//! suspects. The coordinator is the lowest voting acceptor that this node
//! hears or, failing that, that a majority of acceptors hears (each
//! heartbeat says whom its sender hears). Both are liveness choices only: two nodes with different
//! views may both try to coordinate, and ballots keep that safe.
//!
//! Why the majority rule (a pre-vote, as in Raft's): under a "bridge"
//! partition where node 2 cannot hear coordinator 1 but both hear node 3,
//! the lowest-live rule makes 2 take over while 1 keeps coordinating; each
//! new ballot reaches node 3 and preempts the other's, and the stream
//! stalls (found by the fault suite, scenario partition-bridge). With the
//! rule, 2 sees that 1 and 3 still hear 1, defers to 1, and sends its
//! proposals to 1 through 3.

use amulet_types::{NodeId, StreamConfig, TimeMicros};
use std::collections::BTreeMap;

/// What this node believes about one peer.
#[derive(Clone, Debug)]
struct PeerState {
    /// Last time any message arrived from the peer.
    last_heard: TimeMicros,
    /// The peer said it is an acceptor that may vote.
    voting: bool,
    /// The acceptors the peer said it hears, by acceptor position (bit k:
    /// `acceptors[k]`), from its last heartbeat.
    hears: u32,
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
                    hears: 0,
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

    /// A heartbeat also says whether the peer may vote and which
    /// acceptors it hears.
    pub(crate) fn set_report(&mut self, from: NodeId, voting: bool, hears: u32) {
        let acceptor = self.acceptors.contains(&from);
        if let Some(peer) = self.peers.get_mut(&from) {
            peer.voting = voting && acceptor;
            peer.hears = hears;
        }
    }

    /// The acceptors this node hears directly (itself included when it is
    /// one), by acceptor position, for its heartbeats.
    pub(crate) fn hears_mask(&self) -> u32 {
        self.acceptors
            .iter()
            .enumerate()
            .filter(|(_, &a)| a == self.me || self.is_live(a))
            .fold(0, |mask, (k, _)| mask | (1 << k))
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

    /// The node this one believes coordinates (`me_voting` for this node
    /// itself): the lowest voting acceptor that this node hears or, when it
    /// does not, that a majority of acceptors hears as far as it knows.
    pub(crate) fn coordinator(&self, me_voting: bool) -> Option<NodeId> {
        let quorum = self.acceptors.len() / 2 + 1;
        self.acceptors
            .iter()
            .copied()
            .filter(|&c| self.votes(c, me_voting))
            .find(|&c| c == self.me || self.is_live(c) || self.support(c) >= quorum)
    }

    /// How many acceptors hear `c`, as far as this node knows: itself
    /// directly, live peers by their last heartbeat, and `c` itself when it
    /// is alive (heard by this node or reported by a live peer).
    fn support(&self, c: NodeId) -> usize {
        self.acceptors
            .iter()
            .filter(|&&a| {
                if a == self.me {
                    c == self.me || self.is_live(c)
                } else if a == c {
                    self.is_live(c) || self.reported(c)
                } else {
                    self.is_live(a) && self.reports(a, c)
                }
            })
            .count()
    }

    /// Whether live peer `a` said in its last heartbeat that it hears `c`.
    fn reports(&self, a: NodeId, c: NodeId) -> bool {
        let Some(k) = self.acceptors.iter().position(|&n| n == c) else {
            return false;
        };
        self.peers.get(&a).is_some_and(|p| p.hears & (1 << k) != 0)
    }

    /// Whether some live peer other than `c` says it hears `c`.
    fn reported(&self, c: NodeId) -> bool {
        self.live
            .iter()
            .any(|&a| a != self.me && a != c && self.reports(a, c))
    }

    /// The next hop towards `node`: `node` itself when this node hears it,
    /// else the first live peer that says it hears it (which forwards).
    pub(crate) fn route(&self, node: NodeId) -> NodeId {
        if node == self.me || self.is_live(node) {
            return node;
        }
        self.live
            .iter()
            .copied()
            .find(|&a| a != self.me && self.reports(a, node))
            .unwrap_or(node)
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
            base_position: 0,
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
        ring.set_report(NodeId(1), false, 0);
        assert_eq!(ring.coordinator(false), Some(NodeId(2)));
        assert_eq!(ring.last_acceptor_from(NodeId(2), false), Some(NodeId(3)));
    }

    /// Node 2 no longer hears coordinator 1; node 3 hears both.
    fn bridged_ring_at_node_2() -> Ring {
        let mut ring = Ring::new(NodeId(2), &config(), TimeMicros(0));
        let later = TimeMicros(10_000_000);
        ring.heard(NodeId(3), later);
        ring.heard(NodeId(4), later);
        ring.refresh(later);
        ring
    }

    #[test]
    fn ring_section_a2_no_takeover_while_a_majority_hears_the_coordinator() {
        let mut ring = bridged_ring_at_node_2();
        // Node 3 hears 1, 2 and 3.
        ring.set_report(NodeId(3), true, 0b111);
        assert_eq!(ring.coordinator(true), Some(NodeId(1)));
        assert_eq!(ring.route(NodeId(1)), NodeId(3), "proposals go through 3");
        assert_eq!(ring.hears_mask(), 0b110);
        // Node 3 loses 1 as well: a majority no longer hears it.
        ring.set_report(NodeId(3), true, 0b110);
        assert_eq!(ring.coordinator(true), Some(NodeId(2)));
    }

    #[test]
    fn ring_section_a2_without_reports_the_lowest_live_acceptor_coordinates() {
        let ring = bridged_ring_at_node_2();
        assert_eq!(ring.coordinator(true), Some(NodeId(2)));
        assert_eq!(ring.route(NodeId(1)), NodeId(1));
    }
}
