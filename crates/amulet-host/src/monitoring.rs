//! Membership in the node (docs/membership.md): the node's edge monitor
//! runs on the host's timer over the view its replicas executed; probes
//! travel as replica messages and are answered by the event loop; alerts
//! and cuts are multicast on the global stream, where every replica
//! applies them at the same position.

use crate::command::Command;
use crate::host::Host;
use amulet_membership::{Membership, MonitorOutput};
use amulet_smr::{Body, CommandEnvelope, Origin, PartitionMap, ReplicaMessage, StateMachine};
use amulet_types::{NodeId, TimeMicros};
use std::sync::Arc;

/// What membership has done at this node since it started (metrics).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MembershipCounters {
    /// Probes sent to this node's subjects.
    pub probes_sent: u64,
    /// Probes answered (other nodes watching this one).
    pub probes_answered: u64,
    /// Alerts this node multicast (change and stay opinions).
    pub alerts_proposed: u64,
    /// Cuts this node multicast (most are stale: any member may propose).
    pub cuts_proposed: u64,
    /// Membership commands that could not be multicast (no global stream
    /// here yet, or it refused the value).
    pub proposals_failed: u64,
    /// Self-healing moves this node proposed (as the view's lowest active
    /// member).
    pub repairs_proposed: u64,
    /// Partition maps sent to a peer whose probe or probe reply carried an
    /// older version.
    pub maps_sent: u64,
    /// Partition maps this node, running no replica, took from a peer.
    pub maps_learned: u64,
    /// Memberships sent to a peer whose probe or probe reply carried an
    /// older view.
    pub views_sent: u64,
    /// Memberships this node, running no replica, took from a peer.
    pub views_learned: u64,
}

impl<S: StateMachine> Host<S> {
    /// Multicasts on `stream` a command this node proposes itself (a
    /// membership alert or cut, a hand-off report), which no replica
    /// answers: request 0 is no replica's (their numbers start at 1).
    pub(crate) fn propose_unanswered(
        &mut self,
        now: TimeMicros,
        stream: amulet_types::StreamId,
        map_version: amulet_types::MapVersion,
        body: Body<S::Command>,
    ) -> Result<(), amulet_multicast::MulticastError> {
        let envelope = CommandEnvelope::<S::Command> {
            origin: Origin {
                node: self.config.me,
                incarnation: self.config.incarnation,
                request: 0,
            },
            timestamp_micros: now.0,
            map_version,
            session: None,
            body,
            principal: None,
        };
        self.node
            .multicast(now, stream, envelope.encode())
            .map(|_| ())
    }

    /// The membership as the most advanced of this node's replicas
    /// executed it (or the last one that went); `None` when membership is
    /// off or this node runs no replica (it has not executed any view).
    pub fn membership(&self) -> Option<Arc<Membership>> {
        self.membership_at().map(|(_, membership)| membership)
    }

    /// [`Host::membership`] with the global position where it was
    /// executed.
    fn membership_at(&self) -> Option<(u64, Arc<Membership>)> {
        self.replicas
            .values()
            .filter_map(|r| Some((r.global_position(), r.membership()?.clone())))
            .chain(self.known_membership.clone())
            .max_by_key(|(position, _)| *position)
    }

    /// How far this node's newest membership has come: its view's number,
    /// then its next node id, which a join raises within a view ((0, 0)
    /// without membership).
    fn view_stamp(&self) -> (u64, u32) {
        self.membership().map_or((0, 0), |m| stamp_of(&m))
    }

    /// What membership has done here.
    pub fn membership_counters(&self) -> crate::MembershipCounters {
        crate::MembershipCounters {
            repairs_proposed: self.healing.repairs_proposed,
            ..self.membership_counters
        }
    }

    /// The monitor's turn (from [`Host::tick`]): probes due, and the
    /// alerts and cuts the executed view calls for.
    pub(crate) fn run_monitor(&mut self, now: TimeMicros) {
        let Some(membership) = self.membership() else {
            return;
        };
        let map_version = self.map_version();
        let (view, view_next_id) = stamp_of(&membership);
        let unexecuted = self.replicas.is_empty();
        let Some(monitor) = self.monitor.as_mut() else {
            return;
        };
        monitor.set_copy_unexecuted(unexecuted);
        let me = self.config.me;
        for output in monitor.tick(&membership, now) {
            match output {
                MonitorOutput::Probe { to, nonce } => {
                    self.membership_counters.probes_sent += 1;
                    self.out.push(Command::SendReplica {
                        to,
                        message: Box::new(ReplicaMessage::Probe {
                            from: me,
                            nonce,
                            map_version,
                            view,
                            view_next_id,
                        }),
                    });
                }
                MonitorOutput::Propose(command) => self.propose_membership(now, command),
            }
        }
    }

    /// Multicasts a membership command on the global stream. Nobody waits
    /// for it: the monitor proposes again while the executed view still
    /// calls for it.
    fn propose_membership(&mut self, now: TimeMicros, command: amulet_membership::Command) {
        let Some(map) = self.current_map() else {
            return;
        };
        let (stream, map_version) = (map.global_stream, map.version);
        match &command {
            amulet_membership::Command::Cut { .. } => self.membership_counters.cuts_proposed += 1,
            _ => self.membership_counters.alerts_proposed += 1,
        }
        if self.config.bugs.membership_at_edge {
            // Broken on purpose (the simulator's agreement checker must
            // catch it): the command takes effect here before the order.
            for replica in self.replicas.values_mut() {
                replica.bug_apply_membership_unordered(&command);
            }
        }
        // Alerts and cuts are never answered.
        let proposed = self.propose_unanswered(now, stream, map_version, Body::Membership(command));
        if let Err(error) = proposed {
            self.membership_counters.proposals_failed += 1;
            tracing::debug!(?error, "a membership command could not be multicast");
        }
    }

    /// A probe (answered at once), a probe's reply (to the monitor), or a
    /// peer's newer map or view. Both probe messages carry the sender's
    /// map version and view number, so every monitored edge keeps both
    /// ends' maps and views current.
    pub(crate) fn on_probe_message(&mut self, message: ReplicaMessage) {
        match message {
            ReplicaMessage::Probe {
                from,
                nonce,
                map_version,
                view,
                view_next_id,
            } => {
                self.membership_counters.probes_answered += 1;
                let (my_view, my_next_id) = self.view_stamp();
                let reply = ReplicaMessage::ProbeReply {
                    from: self.config.me,
                    nonce,
                    map_version: self.map_version(),
                    view: my_view,
                    view_next_id: my_next_id,
                };
                self.out.push(Command::SendReplica {
                    to: from,
                    message: Box::new(reply),
                });
                self.tell_map_if_older(from, map_version);
                self.tell_view_if_older(from, (view, view_next_id));
            }
            ReplicaMessage::ProbeReply {
                from,
                nonce,
                map_version,
                view,
                view_next_id,
            } => {
                if let Some(monitor) = self.monitor.as_mut() {
                    monitor.on_reply(from, nonce);
                }
                self.tell_map_if_older(from, map_version);
                self.tell_view_if_older(from, (view, view_next_id));
            }
            ReplicaMessage::Map { map, .. } => self.learn_map(*map),
            ReplicaMessage::View {
                position,
                membership,
                ..
            } => self.learn_view(position, *membership),
            _ => {}
        }
    }

    /// Sends this node's newest membership to `peer` if `peer_view` (its
    /// view's number and next node id) is older. A node the view removed
    /// that comes back probes by the view it last executed: the first of
    /// its subjects to answer tells it.
    ///
    /// A peer that runs no replica (none in this node's map) is also sent
    /// a membership of its own view whose reports it has not been sent
    /// yet: it monitors by its copy, and a copy whose reports are stale
    /// within the view hides the subjects waiting for its opinion (an
    /// unstable subject is resolved only when every observer spoke; the
    /// cut removing a dead node waited for good: `amulet-sim --dmap --seed
    /// 9008124`).
    fn tell_view_if_older(&mut self, peer: NodeId, peer_view: (u64, u32)) {
        let Some((position, membership)) = self.membership_at() else {
            return;
        };
        let newer_view = stamp_of(&membership) > peer_view;
        let replicating = self
            .current_map()
            .is_some_and(|map| !map.partitions_of(peer).is_empty());
        let news = stamp_of(&membership) == peer_view
            && !replicating
            && self
                .views_told
                .get(&peer)
                .is_none_or(|told| **told != *membership);
        if !newer_view && !news {
            return;
        }
        if replicating {
            self.views_told.remove(&peer);
        } else {
            self.views_told.insert(peer, membership.clone());
        }
        let message = ReplicaMessage::View {
            from: self.config.me,
            position,
            membership: Box::new((*membership).clone()),
        };
        self.membership_counters.views_sent += 1;
        self.out.push(Command::SendReplica {
            to: peer,
            message: Box::new(message),
        });
    }

    /// A peer's newer membership. Kept only by a node that runs no
    /// replica, for the reason [`Host::learn_map`] gives: one that does
    /// executes views at the point of the order where they take effect.
    /// A node the view removed then finds it has left
    /// ([`Host::left_cluster`]) and its runtime stops.
    fn learn_view(&mut self, position: u64, membership: Membership) {
        let known_position = self.membership_at().map_or(0, |(p, _)| p);
        let newer = stamp_of(&membership) > self.view_stamp()
            || (stamp_of(&membership) == self.view_stamp() && position > known_position);
        if !self.replicas.is_empty() || !newer {
            return;
        }
        if stamp_of(&membership) > self.view_stamp() {
            tracing::info!(
                view = membership.view().id().0,
                removed = membership.view().removed().contains(&self.config.me),
                "view learned from a peer"
            );
        }
        self.membership_counters.views_learned += 1;
        self.known_membership = Some((position, Arc::new(membership)));
    }

    /// Sends this node's newest map to `peer` if `peer_version` is older.
    fn tell_map_if_older(&mut self, peer: NodeId, peer_version: u64) {
        let Some(map) = self.current_map().filter(|m| m.version.0 > peer_version) else {
            return;
        };
        let message = ReplicaMessage::Map {
            from: self.config.me,
            map: Box::new(map.clone()),
        };
        self.membership_counters.maps_sent += 1;
        self.out.push(Command::SendReplica {
            to: peer,
            message: Box::new(message),
        });
    }

    /// A peer's newer map. Kept only by a node that runs no replica: one
    /// that does learns maps by executing them, at the point of the order
    /// where they take effect, and decides by them (trimming's safe
    /// instances, hand-offs); a map ahead of its replicas would have it
    /// report streams its replicas still merge as no longer needed.
    pub(crate) fn learn_map(&mut self, map: PartitionMap) {
        if map.version.0 <= self.map_version() {
            return;
        }
        if !self.replicas.is_empty() {
            if self
                .heard_map
                .as_ref()
                .is_none_or(|m| m.version < map.version)
            {
                self.heard_map = Some(Box::new(map));
            }
            return;
        }
        tracing::info!(
            map_version = map.version.0,
            "partition map learned from a peer"
        );
        self.membership_counters.maps_learned += 1;
        self.known_map = Some(map);
    }
}

/// A membership's view number and next node id: a later view, or the same
/// view after a join, is greater.
fn stamp_of(membership: &Membership) -> (u64, u32) {
    let view = membership.view();
    (view.id().0, view.next_id().0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use amulet_membership::{Command as MembershipCommand, MembershipBug, View};

    #[test]
    fn sconekv_2_a_join_within_a_view_makes_a_copy_older() {
        let addresses: Vec<String> = (1..=3).map(|n| format!("n{n}:7000")).collect();
        let before = Membership::new(View::initial(&addresses), MembershipBug::None);
        let mut after = before.clone();
        after.apply(&MembershipCommand::Join {
            address: "n9:7000".into(),
            client_address: String::new(),
        });
        assert_eq!(
            before.view().id(),
            after.view().id(),
            "a join keeps the view"
        );
        // A node running no replica holding `before` is told `after`.
        assert!(stamp_of(&after) > stamp_of(&before));
    }
}
