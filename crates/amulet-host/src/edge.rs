//! The client edge of a node (DMap §III-B): a request goes to the local
//! replica of the partition it names, which proposes it; its answer comes
//! back as [`Command::Reply`] with the runtime's token. Requests the node
//! cannot take are answered at once, with nothing ordered: "behind" while
//! the replica catches up or its state is on the way, "not a replica"
//! with the node's newest map otherwise.

use crate::command::{Command, Token};
use crate::config::{ReplicaBugs, CATCHING_UP_LAG};
use crate::host::Host;
use amulet_dmap::{MapCommand, MapError, MapReply, PartitionState, SnapshotPage};
use amulet_smr::{
    group_of, Body, ClientReply, ClientRequest, PartitionMap, Reconfiguration, Refusal, Replica,
    StateMachine,
};
use amulet_types::MapVersion;
use amulet_types::{NodeId, PartitionId, TimeMicros};

/// The answer to a snapshot page request.
#[derive(Debug)]
pub enum PageAnswer {
    /// The page.
    Page(SnapshotPage),
    /// The local replica has not executed the snapshot's opening yet.
    Behind,
    /// The local replica is far behind its streams (a restarted node
    /// replaying them): another replica answers sooner.
    CatchingUp,
    /// The snapshot is open but this replica was restored from a
    /// checkpoint since it opened and holds no copy of its entries:
    /// another replica serves it.
    HeldElsewhere,
    /// No local replica of the partition.
    NotAReplica,
    /// The snapshot is unknown or the page request is invalid.
    Failed(MapError),
}

/// The answer to a transaction's read at a read version.
#[derive(Debug)]
pub enum ReadAtAnswer {
    /// The read's reply, and whether a key it covered was written here
    /// since the read version.
    Read {
        /// The reply.
        reply: MapReply,
        /// A key the read covered was written since the read version.
        written_since: bool,
    },
    /// The local replica has not executed the begin yet.
    Behind,
    /// The local replica is far behind its streams: another answers
    /// sooner.
    CatchingUp,
    /// No local replica of the partition, or the read is not (only) of
    /// keys this partition holds: the newest map here, if any.
    NotAReplica(Option<Box<PartitionMap>>),
    /// The request was routed by an older partition map than the
    /// replica's.
    StaleMap(Box<PartitionMap>),
    /// The read failed (unknown map, an ended read version, one this
    /// replica holds no snapshot of, a bad request); nothing read.
    Failed(MapError),
}

/// Turns on the injected bugs of a replica (never in production).
/// Readies a replica the host creates (started, restored, forked at a
/// fence, installed from a peer's checkpoint): the configured first view
/// when it has no membership of its own, and the injected bugs.
pub(crate) fn prepare_replica<S: StateMachine>(
    replica: &mut Replica<S>,
    config: &crate::HostConfig<S>,
) {
    if let Some(view) = &config.membership {
        let first = amulet_membership::Membership::new(view.clone(), config.membership_bug);
        replica.set_initial_membership(first);
    }
    replica.set_fence_keys(config.fence_keys);
    apply_replica_bugs(replica, config.replica_bugs);
}

fn apply_replica_bugs<S: StateMachine>(replica: &mut Replica<S>, bugs: ReplicaBugs) {
    if bugs.complete_without_signals {
        replica.set_bug_complete_without_signals(true);
    }
    if bugs.answer_reads_locally {
        replica.set_bug_answer_reads_locally(true);
    }
    if bugs.begin_without_signals {
        replica.set_bug_begin_without_signals(true);
    }
    if bugs.access_at_edge {
        replica.set_bug_access_at_edge(true);
    }
    if bugs.fence_keys_unchecked {
        replica.set_bug_fence_keys_unchecked(true);
    }
}

impl<S: StateMachine> Host<S> {
    /// A client request for the replica of `partition` (any local replica
    /// when `None`: session requests go on the global stream), named
    /// `token` by the runtime. Its answer comes as a [`Command::Reply`]
    /// (or, if the replica is replaced first, [`Command::Abandon`]).
    pub fn submit(
        &mut self,
        now: TimeMicros,
        partition: Option<PartitionId>,
        request: ClientRequest<S::Command>,
        token: Token,
    ) {
        let partition = partition.or_else(|| self.replicas.keys().next().copied());
        let catching_up = partition.is_some_and(|p| self.catching_up(p));
        // A move's state travels as a checkpoint, and the old group hands
        // off once the new one holds a durable one: without checkpoints it
        // would wait forever. Refused at the edge.
        let move_without_checkpoints = self.checkpointer.every_micros() == 0
            && matches!(
                &request.body,
                Body::Reconfigure(Reconfiguration::Move { .. })
            );
        if move_without_checkpoints {
            let reply = ClientReply::Refused(Refusal::MoveNeedsCheckpoints);
            self.out.push(Command::Reply { token, reply });
            return;
        }
        if let Body::Reconfigure(Reconfiguration::Move { replicas, .. }) = &request.body {
            if let Some(idle) = self.idle_target(replicas) {
                let reply = ClientReply::Refused(Refusal::InvalidMap(
                    amulet_smr::InvalidMap::MoveToIdleNode(idle),
                ));
                self.out.push(Command::Reply { token, reply });
                return;
            }
        }
        if let Body::Reconfigure(reconfiguration) = &request.body {
            if let Some(gone) = self.inactive_target(reconfiguration) {
                let reply = ClientReply::Refused(Refusal::InvalidMap(
                    amulet_smr::InvalidMap::InactiveNode(gone),
                ));
                self.out.push(Command::Reply { token, reply });
                return;
            }
        }
        if let Body::Reconfigure(Reconfiguration::ReplaceGlobalStream { stream }) = &request.body {
            if let Some(stranger) =
                self.global_stream_stranger(&stream.acceptors, &stream.members())
            {
                let reply = ClientReply::Refused(Refusal::InvalidMap(
                    amulet_smr::InvalidMap::GlobalStreamStranger(stranger),
                ));
                self.out.push(Command::Reply { token, reply });
                return;
            }
        }
        if let Body::Membership(amulet_membership::Command::Leave { node }) = &request.body {
            if let Some(why) = self.leave_refused(*node) {
                let reply = ClientReply::Refused(Refusal::MembershipChange(why));
                self.out.push(Command::Reply { token, reply });
                return;
            }
        }
        let adopting = partition.is_some_and(|p| self.adopting(p));
        let here = partition.filter(|p| self.replicas.contains_key(p));
        let reply = match here {
            // Not proposed: the client resends it, with the same sequence,
            // to another replica at once instead of waiting for this one
            // to replay its streams.
            Some(_) if catching_up => ClientReply::Behind,
            Some(partition) => {
                let replica = self.replicas.get_mut(&partition).expect("checked");
                let id = replica.submit(now.0, request);
                self.pending.insert((partition, id), token);
                self.requests.insert(token, (partition, id));
                self.check_after_step();
                return;
            }
            // Moved here, its state still on the way: another replica of
            // the new group, or this one shortly.
            None if adopting => ClientReply::Behind,
            None => match self.current_map() {
                Some(map) => ClientReply::NotAReplica(Box::new(map.clone())),
                None => ClientReply::Refused(Refusal::NoDmap),
            },
        };
        self.out.push(Command::Reply { token, reply });
    }

    /// The first of a move's `replicas` that replicates nothing by this
    /// node's newest map and does not learn the global stream by its
    /// configuration: it would never execute the partition's share of
    /// the global order. `None` when this node does not run the global
    /// stream (it cannot judge; its replicas judge the rest).
    fn idle_target(&self, replicas: &[NodeId]) -> Option<NodeId> {
        let map = self.current_map()?;
        let global = self.global_stream_members(map)?;
        let hosting = map.hosting_nodes();
        replicas
            .iter()
            .copied()
            .find(|n| !hosting.contains(n) && !global.contains(n))
    }

    /// With membership on, the first new replica of a partition or
    /// acceptor of a partition's new stream that the view removed or that
    /// is leaving (a node the view does not know is not judged here). A
    /// move onto such a node left the partition on a stopped process
    /// until self-healing moved it off again (DMap seed 9023100: the
    /// operator moved the only partition onto node 1, which the view had
    /// removed, and node 1's own edge accepted it). The global stream's
    /// acceptors are judged by [`Host::global_stream_stranger`].
    fn inactive_target(&self, reconfiguration: &Reconfiguration) -> Option<NodeId> {
        let membership = self.membership()?;
        let view = membership.view();
        let named: Vec<NodeId> = match reconfiguration {
            Reconfiguration::Move {
                replicas, stream, ..
            } => replicas.iter().chain(&stream.acceptors).copied().collect(),
            Reconfiguration::ReplaceStream { stream, .. }
            | Reconfiguration::Split { stream, .. } => stream.acceptors.clone(),
            _ => Vec::new(),
        };
        named.into_iter().find(|n| view.gone(*n))
    }

    /// The first node of a new global stream that may not be in it: a
    /// member (of `members`) that neither learns the current global
    /// stream by this node's configuration of it nor is an active member
    /// of the view (a joiner the view admitted, vouched for by its
    /// observers' probes), or, with membership on, one of `acceptors`
    /// that is not an active member of the view. A node outside the view
    /// is probed by nobody, so it never learns the map that makes it an
    /// acceptor, and the whole cluster's order would wait for its vote
    /// (DMap seed 9018875: the operator made a joiner not yet admitted
    /// an acceptor, and with another acceptor dead the global stream
    /// stopped for good, the join with it).
    fn global_stream_stranger(&self, acceptors: &[NodeId], members: &[NodeId]) -> Option<NodeId> {
        let global = self
            .current_map()
            .and_then(|map| self.global_stream_members(map))
            .unwrap_or_default();
        let joined = self.joined_members();
        let membership_on = self.membership().is_some();
        members
            .iter()
            .copied()
            .find(|n| !global.contains(n) && !joined.contains(n))
            .or_else(|| {
                acceptors
                    .iter()
                    .copied()
                    .find(|n| membership_on && !joined.contains(n))
            })
    }

    /// The client behind `token` gave up (its proposal may have been
    /// lost): the request will not be answered.
    pub fn cancel(&mut self, token: Token) {
        if let Some(key) = self.requests.remove(&token) {
            self.pending.remove(&key);
        }
    }

    /// Abandons every request waiting at `partition`'s replica (replaced
    /// or removed): the runtime drops their waiters, and the clients
    /// resend with the same session sequence.
    pub(crate) fn abandon_requests(&mut self, partition: PartitionId) {
        let gone: Vec<(PartitionId, u64)> = self
            .pending
            .range((partition, 0)..=(partition, u64::MAX))
            .map(|(key, _)| *key)
            .collect();
        for key in gone {
            if let Some(token) = self.pending.remove(&key) {
                self.requests.remove(&token);
                self.out.push(Command::Abandon { token });
            }
        }
    }

    /// Whether the replica of `partition` is so far behind its streams (a
    /// restarted node replaying them) or waiting for a peer's checkpoint,
    /// that clients should go elsewhere.
    pub fn catching_up(&self, partition: PartitionId) -> bool {
        self.replicas.contains_key(&partition)
            && (self.node.group_lag(group_of(partition)) > CATCHING_UP_LAG
                || self.transfer.fetching(partition))
    }
}

impl Host<PartitionState> {
    /// A page of the open snapshot `snapshot` of `partition`, read from
    /// the local replica (snapshots never change, so pages are read
    /// without ordering, from any replica past the snapshot's opening).
    pub fn snapshot_page(
        &self,
        partition: PartitionId,
        snapshot: u64,
        after: Option<&[u8]>,
        limit: u32,
    ) -> PageAnswer {
        match self.replicas.get(&partition) {
            None => PageAnswer::NotAReplica,
            // The snapshot's id is the global position of its opening: a
            // replica that has not got there yet will.
            Some(replica) if replica.global_position() < snapshot => {
                if self.catching_up(partition) {
                    PageAnswer::CatchingUp
                } else {
                    PageAnswer::Behind
                }
            }
            Some(replica) if replica.state().snapshot_held_elsewhere(snapshot) => {
                PageAnswer::HeldElsewhere
            }
            Some(replica) => match replica.state().snapshot_page(snapshot, after, limit) {
                Ok(page) => PageAnswer::Page(page),
                Err(error) => PageAnswer::Failed(error),
            },
        }
    }

    /// A transaction's read `command` at read version `version`, served by
    /// the local replica of `partition` from the version's snapshot,
    /// without ordering. The request must be routed by the replica's own
    /// map version and involve this partition: the snapshot holds the
    /// keys the partition held at the version, and only merges add keys
    /// to a partition (a merged-in partition's snapshot is refused as held
    /// elsewhere), so under the current map every key the read may see
    /// is in it.
    pub fn read_at(
        &self,
        partition: PartitionId,
        map_version: MapVersion,
        version: u64,
        command: &MapCommand,
    ) -> ReadAtAnswer {
        let Some(replica) = self.replicas.get(&partition) else {
            return ReadAtAnswer::NotAReplica(self.current_map().cloned().map(Box::new));
        };
        let map = replica.map();
        if map_version < map.version {
            return ReadAtAnswer::StaleMap(Box::new(map.clone()));
        }
        if map_version > map.version || replica.global_position() < version {
            return if self.catching_up(partition) {
                ReadAtAnswer::CatchingUp
            } else {
                ReadAtAnswer::Behind
            };
        }
        match map.partitions_for(&PartitionState::placement(command)) {
            Ok(involved) if involved.contains(&partition) => {}
            Ok(_) => return ReadAtAnswer::NotAReplica(Some(Box::new(map.clone()))),
            // A map dropped since the read version (or never created):
            // where its keys were is gone with it, so no replica can tell
            // which snapshot holds a key. Said plainly, not as a routing
            // error a client would resend forever.
            Err(_) => {
                let name = command.map().map(|m| m.to_string()).unwrap_or_default();
                return ReadAtAnswer::Failed(MapError::UnknownMap(name));
            }
        }
        match replica
            .state()
            .read_at(version, command, replica.global_position())
        {
            Ok((reply, written_since)) => ReadAtAnswer::Read {
                reply,
                written_since,
            },
            Err(error) => ReadAtAnswer::Failed(error),
        }
    }
}
