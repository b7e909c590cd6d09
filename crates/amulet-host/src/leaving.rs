//! A member's graceful leave (docs/membership.md, SCONEKV §2): what the
//! host refuses at the edge before a `Leave` is ordered, and when a node
//! that left may stop.
//!
//! The replicas judge a leave by the view (an active member, not the
//! last). The host adds what the view cannot see: self-healing must be
//! able to give the leaver's vote in the global stream to another live
//! member (`next_global_repair`; otherwise the leaver would stay an
//! acceptor and never stop) and to move every partition it replicates
//! onto other live nodes (otherwise the leave would only lower their
//! replication).

use crate::host::Host;
use amulet_membership::{MemberState, ViewId};
use amulet_smr::StateMachine;
use amulet_types::{Instance, NodeId};

impl<S: StateMachine> Host<S> {
    /// Why a leave of `node` is refused here, or `None` to order it (the
    /// replicas then judge it by the view they execute).
    pub(crate) fn leave_refused(&self, node: NodeId) -> Option<String> {
        let membership = self.membership()?;
        let map = self.current_map()?;
        let view = membership.view();
        if view.state(node) != Some(MemberState::Active) {
            return None; // the replicas refuse it, with the view's reason
        }
        let live: Vec<NodeId> = self
            .takers(map, view)
            .into_iter()
            .filter(|n| *n != node && view.state(*n) == Some(MemberState::Active))
            .collect();
        let votes_globally = self
            .stream_acceptors(map, map.global_stream)
            .contains(&node);
        if votes_globally && self.global_repair(map, &live, [], &[]).is_none() {
            return Some(format!(
                "node {} is an acceptor of the global stream {} and no other live member learning it could take its vote: it cannot leave (add a node first)",
                node.0, map.global_stream.0
            ));
        }
        amulet_smr::leave_blocker(map, &live, node).map(|partition| {
            format!(
                "node {} cannot leave: partition {} would have no live node to move its replica to (add a node first)",
                node.0, partition.0
            )
        })
    }

    /// The view that removed this node, once the node has nothing left to
    /// do for the cluster: it runs no replica (every partition it held
    /// was handed off) and votes in no stream still in use. The runtime
    /// then stops. `None` while it is a member, or still serves.
    pub fn left_cluster(&self) -> Option<ViewId> {
        if !self.replicas.is_empty() {
            return None;
        }
        let membership = self.membership()?;
        let view = membership.view();
        if !view.removed().contains(&self.config.me) {
            return None;
        }
        let retired = self
            .current_map()
            .map(|m| m.retired_streams.clone())
            .unwrap_or_default();
        let me = self.config.me;
        let votes = self.node.streams().iter().any(|(stream, s)| {
            let config = s.config();
            if !config.acceptors.contains(&me) {
                return false;
            }
            // A retired stream still needs its acceptors until every
            // member still in the view is past it: the map retires it at
            // the move's position in the global order, but its replicas
            // reach the move's fence through the stream itself
            // (`amulet-sim --dmap --seed 9008438`: node 8, removed, stopped
            // as soon as it learned the map that retired p5's stream; node
            // 7 had lost its vote there, so node 9 alone prepared the
            // stream for good, and p5 never reached the fence).
            let passed = self.config.bugs.leave_before_retired_streams_pass
                || Self::past_for_all(s, view, me);
            !retired.contains(stream) || !passed
        });
        // A stream the newest map names this node an acceptor of and that
        // it has not opened yet (a partition moved here whose state it
        // still fetches) needs its vote as much: stopping would leave the
        // stream short of a voter, and the partition's next move, the one
        // that takes it off this node, reaches its fence through that
        // stream (`amulet-sim --dmap --seed 9013389`: node 4, removed while
        // fetching p1's state, stopped; with node 1 dead, p1's stream was
        // left with one voter for good).
        let unopened = self.newest_heard_map().is_some_and(|map| {
            map.streams.values().any(|spec| {
                spec.acceptors.contains(&me)
                    && !retired.contains(&spec.stream)
                    && !map.retired_streams.contains(&spec.stream)
                    && !self.node.streams().contains_key(&spec.stream)
            })
        });
        (!votes && !unopened).then(|| view.id())
    }

    /// Whether every member of `stream` but `me` and the removed ones
    /// reports, in its heartbeats, that it needs nothing of the stream any
    /// more (the safe instance of a retired stream no replica there
    /// merges, `amulet_smr::safe_to_report`).
    fn past_for_all(
        stream: &amulet_paxos::StreamNode,
        view: &amulet_membership::View,
        me: NodeId,
    ) -> bool {
        let safe = stream.safe_instances();
        stream
            .config()
            .members()
            .into_iter()
            .filter(|m| *m != me && !view.removed().contains(m))
            .all(|m| safe.get(&m).is_some_and(|r| r.below == Instance(u64::MAX)))
    }
}
