//! Self-healing in the node (docs/membership.md): once the view has
//! removed a node (it failed, or left), the view's lowest active member
//! that replicates some partition proposes the replacement of the global
//! stream if the node was one of its acceptors
//! (`amulet_smr::next_global_repair`), then the moves that give each
//! partition back its replicas on live nodes
//! (`amulet_smr::next_repair`), one at a time, through one of its
//! replicas, as an operator's `amulet move` would. A proposal built on a
//! map another one changed first fails on the map version and is built
//! again from the new map at the next turn.

use crate::host::Host;
use amulet_membership::MemberState;
use amulet_smr::{Body, ClientRequest, PartitionMap, StateMachine};
use amulet_types::{MapVersion, NodeId, PartitionId, StorageMode, StreamId, TimeMicros};

/// How often the proposer looks for a partition to repair.
pub(crate) const HEAL_INTERVAL_MICROS: u64 = 1_000_000;

/// A repair proposed on a map version that is still the newest after this
/// long is proposed again (its barrier may have been lost with a
/// coordinator, or refused while another reconfiguration took effect).
const REPAIR_RETRY_MICROS: u64 = 5_000_000;

impl<S: StateMachine> Host<S> {
    /// The healer's turn (from [`Host::tick`]).
    pub(crate) fn heal(&mut self, now: TimeMicros) {
        if !self.config.self_healing {
            return;
        }
        // A move's state travels as a checkpoint: without them no move
        // could finish, and only the global stream is repaired (it moves
        // no state). That repair still matters: it makes an admitted
        // joiner a learner of the global stream, without which the
        // joiner cannot order its alerts, and a node it observes is never
        // cut (simulator, DMap seed 9061930: node 7 joined, observed node
        // 2, which then died for good, and node 2 stayed unstable at five
        // of six reports for good).
        let moves_state = self.checkpointer.every_micros() != 0;
        // A repair that took effect (the map moved past the version it
        // was proposed on) is followed by the next one at once, not at the
        // next interval: re-homing a removed node's partitions one a
        // second left a cluster that lost several nodes under-replicated
        // for as many seconds as it had partitions to move.
        let took_effect = self.healing.proposed.is_some_and(|(version, _)| {
            self.current_map().is_some_and(|map| map.version > version)
        });
        let looked_lately = self
            .healing
            .looked_at
            .is_some_and(|at| now.since(at) < HEAL_INTERVAL_MICROS);
        if !took_effect && looked_lately {
            return;
        }
        self.healing.looked_at = Some(now);
        let Some(map) = self.current_map() else {
            return;
        };
        let Some(live) = self.live_if_proposer(map) else {
            self.healing.proposed = None;
            return;
        };
        if let Some((version, at)) = self.healing.proposed {
            if version == map.version && now.since(at) < REPAIR_RETRY_MICROS {
                return; // the last repair has not taken effect yet
            }
        }
        let stream_of = |stream: StreamId| {
            (
                self.stream_storage(map, stream),
                self.stream_acceptors(map, stream),
            )
        };
        let also_used = self.node.streams().keys().copied();
        // The global stream first: every other repair is ordered on it,
        // and it survives one acceptor fewer than it has no longer.
        let global = self.global_repair(map, &live, also_used.clone(), &self.joined_members());
        let partitions = || {
            moves_state
                .then(|| amulet_smr::next_repair(map, &live, also_used, stream_of))
                .flatten()
        };
        let Some(mut repair) = global.or_else(partitions) else {
            self.healing.proposed = None;
            return;
        };
        if self.config.bugs.healing_keeps_removed_replica {
            keep_a_removed_replica(&mut repair, map, &live);
        }
        if self.config.bugs.healing_keeps_removed_acceptor {
            // A partition's stream's acceptors, or the global stream's.
            let acceptors_of = |partition: Option<PartitionId>| {
                let stream = match partition {
                    Some(partition) => map.partitions.get(&partition).map(|p| p.stream),
                    None => Some(map.global_stream),
                };
                stream
                    .map(|stream| self.stream_acceptors(map, stream))
                    .unwrap_or_default()
            };
            keep_a_removed_acceptor(&mut repair, acceptors_of, &live);
        }
        let target = match &repair {
            // Every partition's, none in particular.
            amulet_smr::Reconfiguration::ReplaceGlobalStream { .. } => Some(RepairOf::GlobalStream),
            _ => map
                .partitions
                .keys()
                .copied()
                .find(|p| repair.involves(*p))
                .map(RepairOf::Partition),
        };
        if looked_lately && target.is_some() && target == self.healing.repaired {
            // The partition the last repair took effect on needs another
            // at once: the next waits for the interval. A repair whose
            // result needs repairing again (a stream an operator gave
            // other acceptors, a healer bug) would otherwise open a new
            // stream every few milliseconds for good (simulator, DMap seed
            // 9 with `--bug healing-keeps-removed-acceptor`: hundreds of
            // streams in a virtual second, and the run never ended).
            self.healing.proposed = None;
            return;
        }
        let version = map.version;
        let Some(replica) = self
            .replicas
            .values_mut()
            .filter(|r| r.map().version == version)
            .max_by_key(|r| r.global_position())
        else {
            return;
        };
        tracing::info!(
            map_version = version.0,
            ?repair,
            "self-healing: proposing a repair"
        );
        self.healing.proposed = Some((version, now));
        self.healing.repaired = target;
        self.healing.repairs_proposed += 1;
        let request = ClientRequest {
            map_version: version,
            session: None,
            body: Body::Reconfigure(repair),
            // The node's own change: nobody to check (a client's needs the
            // cluster admin role).
            principal: None,
        };
        replica.submit(now.0, request);
    }
}

impl<S: StateMachine> Host<S> {
    /// The live nodes when this node proposes the cluster's own changes
    /// (self-healing's repairs, the balancer's moves), else `None`. The
    /// proposer is the view's lowest active member that replicates some
    /// partition of `map` (a node with no replica executes no view: it
    /// could not judge). Live: see [`Host::takers`]. `None` without
    /// membership.
    pub(crate) fn live_if_proposer(&self, map: &PartitionMap) -> Option<Vec<NodeId>> {
        if self.cluster_proposer(map) != Some(self.config.me) {
            return None;
        }
        let membership = self.membership()?;
        Some(self.takers(map, membership.view()))
    }

    /// The nodes that may be given a partition: every node the map names,
    /// and every active member of `view` that learns the global stream
    /// (by this node's configuration of it), except those removed or
    /// leaving (a node outside the view is not judged here). A member
    /// replicating nothing (it has just joined, or its partitions all
    /// moved away) counts: it learns the map that gives it one from its
    /// peers' probes (docs/membership.md, "Maps for a node without a
    /// replica") and then the global stream's order from where the
    /// partition's checkpoint stands. One that does not learn the global
    /// stream could never execute the partition's share of it.
    pub(crate) fn takers(&self, map: &PartitionMap, view: &amulet_membership::View) -> Vec<NodeId> {
        let global = self.global_stream_members(map).unwrap_or_default();
        let active = view
            .nodes()
            .iter()
            .filter(|(n, m)| m.state == MemberState::Active && global.contains(n))
            .map(|(n, _)| *n);
        let mut nodes: Vec<NodeId> = map
            .hosting_nodes()
            .into_iter()
            .chain(active)
            .filter(|n| !view.gone(*n))
            .collect();
        nodes.sort();
        nodes.dedup();
        nodes
    }

    /// The active members of the view (by this node's membership) that
    /// are not gone: a joiner admitted by a cut among them, whom the
    /// global stream's replacement makes a learner
    /// (`amulet_smr::next_global_repair`).
    pub(crate) fn joined_members(&self) -> Vec<NodeId> {
        self.membership()
            .map(|membership| membership.view().active_members())
            .unwrap_or_default()
    }

    /// The members (acceptors and learners) of `map`'s global stream by
    /// this node's configuration of it; `None` when this node does not
    /// run that stream. A node that learns the global stream can execute
    /// a partition's share of the global order, so it may be given one.
    pub(crate) fn global_stream_members(&self, map: &PartitionMap) -> Option<Vec<NodeId>> {
        self.node
            .streams()
            .get(&map.global_stream)
            .map(|s| s.config().members())
    }

    /// The replacement of `map`'s global stream that `live` and `joined`
    /// call for (`amulet_smr::next_global_repair`), with the current
    /// global stream as this node runs it.
    pub(crate) fn global_repair(
        &self,
        map: &PartitionMap,
        live: &[NodeId],
        also_used: impl IntoIterator<Item = StreamId>,
        joined: &[NodeId],
    ) -> Option<amulet_smr::Reconfiguration> {
        let acceptors = self.stream_acceptors(map, map.global_stream);
        let members = self.global_stream_members(map).unwrap_or_default();
        let current = amulet_smr::GlobalStreamNow {
            storage: self.stream_storage(map, map.global_stream),
            acceptors: &acceptors,
            members: &members,
        };
        amulet_smr::next_global_repair(map, live, also_used, current, joined)
    }

    /// The node that proposes the cluster's own changes under `map`
    /// (`amulet_smr::cluster_proposer`; `None` without membership).
    pub(crate) fn cluster_proposer(&self, map: &PartitionMap) -> Option<NodeId> {
        let membership = self.membership()?;
        amulet_smr::cluster_proposer(map, membership.view())
    }

    /// The storage of `stream`: as this node runs it, else as `map`
    /// records it (synced when neither knows it). A new stream for a
    /// partition (a repair's, a split's) keeps its current one's.
    pub(crate) fn stream_storage(&self, map: &PartitionMap, stream: StreamId) -> StorageMode {
        self.node
            .streams()
            .get(&stream)
            .map(|s| s.config().storage)
            .or_else(|| map.streams.get(&stream).map(|s| s.storage))
            .unwrap_or(StorageMode::SyncDurable)
    }

    /// The acceptors of `stream` by this node's configuration of it, else
    /// by `map`'s record of it (a stream created at run time); none when
    /// neither knows it.
    pub(crate) fn stream_acceptors(&self, map: &PartitionMap, stream: StreamId) -> Vec<NodeId> {
        self.node
            .streams()
            .get(&stream)
            .map(|s| s.config().acceptors.clone())
            .or_else(|| map.streams.get(&stream).map(|s| s.acceptors.clone()))
            .unwrap_or_default()
    }

    /// Partitions of the newest map with a replica on a node the view
    /// removed or that is leaving: self-healing's work left (0 when
    /// membership is off). A metric; `amulet status` draws the same from
    /// the map and the view.
    pub fn rehoming_partitions(&self) -> u64 {
        let (Some(membership), Some(map)) = (self.membership(), self.current_map()) else {
            return 0;
        };
        let view = membership.view();
        let gone = |n: &NodeId| view.gone(*n);
        map.partitions
            .values()
            .filter(|p| p.replicas.iter().any(gone))
            .count() as u64
    }
}

/// Injected bug: the repair keeps one of the partition's removed replicas
/// in place of a live node it would have taken.
fn keep_a_removed_replica(
    repair: &mut amulet_smr::Reconfiguration,
    map: &amulet_smr::PartitionMap,
    live: &[NodeId],
) {
    if let amulet_smr::Reconfiguration::Move {
        partition,
        replicas,
        stream,
    } = repair
    {
        let old = &map.partitions[partition].replicas;
        if let Some(dead) = old.iter().find(|n| !live.contains(n)) {
            replicas.pop();
            replicas.push(*dead);
            stream.acceptors = replicas.clone();
            stream.learners.retain(|n| n != dead);
        }
    }
}

/// The broken variant `healing_keeps_removed_acceptor`: the repair's new
/// stream keeps an acceptor of the partition's (or the global) current
/// stream that is not live, in place of its last acceptor (which stays a
/// learner, so the replicas all still learn the stream).
fn keep_a_removed_acceptor(
    repair: &mut amulet_smr::Reconfiguration,
    acceptors_of: impl Fn(Option<amulet_types::PartitionId>) -> Vec<NodeId>,
    live: &[NodeId],
) {
    let (acceptors, stream) = match repair {
        amulet_smr::Reconfiguration::Move {
            partition, stream, ..
        }
        | amulet_smr::Reconfiguration::ReplaceStream { partition, stream } => {
            (acceptors_of(Some(*partition)), stream)
        }
        amulet_smr::Reconfiguration::ReplaceGlobalStream { stream } => (acceptors_of(None), stream),
        _ => return,
    };
    let Some(dead) = acceptors.iter().find(|n| !live.contains(n)) else {
        return;
    };
    if stream.acceptors.contains(dead) {
        return;
    }
    if let Some(displaced) = stream.acceptors.pop() {
        stream.learners.push(displaced);
    }
    stream.acceptors.push(*dead);
    stream.learners.retain(|n| n != dead);
}

/// What a repair is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RepairOf {
    /// The global stream (its replacement).
    GlobalStream,
    /// One partition (a move, or its stream's replacement).
    Partition(PartitionId),
}

/// The healer's record.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Healing {
    /// When the healer last looked.
    pub(crate) looked_at: Option<TimeMicros>,
    /// The map version and time of the last repair proposed.
    pub(crate) proposed: Option<(MapVersion, TimeMicros)>,
    /// What the last repair proposed was for.
    pub(crate) repaired: Option<RepairOf>,
    /// Repairs proposed here since the node started.
    pub(crate) repairs_proposed: u64,
}
