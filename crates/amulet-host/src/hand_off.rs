//! Moving a partition to another replica group (`Reconfiguration::Move`,
//! DMap §III-C: "the new set of replicas first recover the state from the
//! currently available partition"). At the move's fence the map names the
//! new group; replicas that stay and replicas that go both switch to the
//! new stream (as for a stream replacement). Here, on the trim tick:
//!
//! - a node the map names as a replica of a partition it does not run
//!   *adopts* it: it fetches a peer's checkpoint taken past the move (its
//!   merge has a lane of the new stream) and starts the replica and its
//!   merge group from it. Until then it reports safe instance 0, so no
//!   stream it is a member of is trimmed past what it will need.
//! - a node whose replica the map no longer names keeps it (executing,
//!   checkpointing, serving state transfers) until a majority of the new
//!   group holds a durable checkpoint that reflects at least one instance
//!   of the new stream, then drops it. The state is never held by fewer
//!   than a majority of one group.

use crate::command::Command;
use crate::host::Host;
use amulet_smr::{group_of, handed_off, replicas_to_hand_off, Body, PartitionMap, StateMachine};
use amulet_types::{Instance, NodeId, PartitionId, StreamId, TimeMicros};

/// How often a node handing off a partition whose new stream its merge
/// has taken nothing of yet sends a value on that stream.
const NUDGE_MICROS: u64 = 2_000_000;

impl<S: StateMachine> Host<S> {
    /// Starts fetching every partition `map` (the node's newest) gives
    /// this node and that it does not run; drops replicas moved away once
    /// the new group holds their state.
    pub(crate) fn adopt_and_hand_off(&mut self, map: &PartitionMap, now: TimeMicros) {
        let me = self.config.me;
        for partition in map.partitions_of(me) {
            if self.replicas.contains_key(&partition) || self.transfer.fetching(partition) {
                continue;
            }
            let peers = map.transfer_sources(partition, me);
            // A checkpoint past the move: it merges the new stream.
            let at_least = vec![(map.partitions[&partition].stream, Instance(0))];
            self.checkpointer.track(partition, now);
            if let Some((to, message)) = self.transfer.start(partition, peers, at_least, now) {
                tracing::info!(
                    partition = partition.0,
                    "partition moved here: fetching its state"
                );
                self.out.push(Command::SendReplica {
                    to,
                    message: Box::new(message),
                });
            }
        }
        self.forget_abandoned_adoptions();
        let at_fence = self.config.bugs.hand_off_at_fence;
        let node = &self.node;
        let handed = replicas_to_hand_off(me, &self.replicas, |partition, map| {
            let stream = map.partitions[&partition].stream;
            at_fence
                || node
                    .streams()
                    .get(&stream)
                    .is_some_and(|s| handed_off(map, partition, &s.safe_instances()))
        });
        for partition in handed {
            self.hand_off(partition);
        }
        self.nudge_idle_hand_offs(now);
        self.report_handed_off(now);
    }

    /// Gets a first instance of a moved partition's new stream through the
    /// merge while this node hands the partition off. A hand-off ends once
    /// a majority of the new group holds a checkpoint reflecting an
    /// instance of the new stream, and an idle cluster decides none: its
    /// streams are paced only while a merge holds values back
    /// (`amulet_multicast`'s pacing on demand), so the move of a cold
    /// partition never finished (found with `amulet dev --nodes 5`: a move
    /// by weight after the writes stopped stayed "handing off" for good,
    /// and with it every later split, merge or move of the partition).
    /// The nudge is `Body::HandedOff` on the partition's own stream, which
    /// replicas execute as nothing (only the global stream's counts); as a
    /// value it wakes the pacing of the streams merged with it. Sent every
    /// [`NUDGE_MICROS`] while this node's merge has taken nothing of the
    /// new stream.
    fn nudge_idle_hand_offs(&mut self, now: TimeMicros) {
        let mut due = Vec::new();
        for (partition, replica) in &self.replicas {
            if !replica.moved_away() {
                continue;
            }
            let map = replica.map();
            let Some(info) = map.partitions.get(partition) else {
                continue;
            };
            let merged = self
                .node
                .merger(group_of(*partition))
                .and_then(|m| m.next_instance(info.stream))
                .is_some_and(|next| next > Instance(0));
            let recently = self
                .hand_off_nudged
                .get(partition)
                .is_some_and(|at| now.since(*at) < NUDGE_MICROS);
            if !merged && !recently {
                due.push((*partition, info.stream, map.version));
            }
        }
        self.hand_off_nudged
            .retain(|p, _| self.replicas.get(p).is_some_and(|r| r.moved_away()));
        for (partition, stream, version) in due {
            self.hand_off_nudged.insert(partition, now);
            let nudge = Body::HandedOff {
                partition,
                node: self.config.me,
                stream,
            };
            match self.propose_unanswered(now, stream, version, nudge) {
                Ok(()) => {
                    tracing::debug!(partition = partition.0, "nudged a hand-off's new stream")
                }
                Err(error) => tracing::debug!(?error, "a hand-off nudge could not be multicast"),
            }
        }
    }

    /// Reports, on the global stream, every partition whose hand-off set
    /// (`PartitionMap::handing_off`, by the node's newest map) lists this
    /// node while it holds nothing of it: no replica, no state being
    /// fetched. The set decides the learners of the partition's next
    /// stream; once the report is ordered the node is left out of them.
    /// The node that proposes the cluster's own changes (self-healing's
    /// repairs) also reports for the nodes the view removed, which never
    /// will. Reported again a second later while the map still lists it.
    fn report_handed_off(&mut self, now: TimeMicros) {
        const AGAIN_MICROS: u64 = 1_000_000;
        let Some(map) = self.current_map() else {
            return;
        };
        if map.handing_off.is_empty() {
            self.handed_off_reported.clear();
            return;
        }
        let me = self.config.me;
        let (version, global) = (map.version, map.global_stream);
        let removed: Vec<NodeId> = match self.live_if_proposer(map) {
            Some(_) => self
                .membership()
                .map(|m| m.view().removed().iter().copied().collect())
                .unwrap_or_default(),
            None => Vec::new(),
        };
        let holds_nothing = |p: &PartitionId| {
            self.config.bugs.handed_off_while_holding
                || (!self.replicas.contains_key(p) && !self.transfer.fetching(*p))
        };
        let listed: Vec<(PartitionId, NodeId)> = map
            .handing_off
            .iter()
            .flat_map(|(p, from)| from.iter().map(|n| (*p, *n)))
            .filter(|(p, n)| (*n == me && holds_nothing(p)) || removed.contains(n))
            .collect();
        let due: Vec<(PartitionId, NodeId, StreamId)> = listed
            .iter()
            .filter_map(|(p, n)| Some((*p, *n, map.partitions.get(p)?.stream)))
            .filter(|(p, n, _)| {
                self.handed_off_reported
                    .get(&(*p, *n))
                    .is_none_or(|(at, when)| {
                        *at != version || now.0 >= when.0.saturating_add(AGAIN_MICROS)
                    })
            })
            .collect();
        self.handed_off_reported
            .retain(|reported, _| listed.contains(reported));
        for (partition, node, stream) in due {
            self.handed_off_reported
                .insert((partition, node), (version, now));
            let report = Body::HandedOff {
                partition,
                node,
                stream,
            };
            match self.propose_unanswered(now, global, version, report) {
                Ok(_) => tracing::info!(
                    partition = partition.0,
                    node = node.0,
                    "reported a node holds nothing of a partition it was handing off"
                ),
                Err(error) => {
                    tracing::debug!(?error, "a hand-off report could not be multicast")
                }
            }
        }
    }

    /// Forgets the partitions this node was adopting that a newer map no
    /// longer gives it (they moved on before their state arrived): nothing
    /// of them will come, and an adoption's safe instance 0 would hold
    /// every stream's trimming back for good. Run after every round, since
    /// any executed command may bring the newer map.
    pub(crate) fn forget_abandoned_adoptions(&mut self) {
        let Some(map) = self.current_map() else {
            return;
        };
        // Adoptions start by the current map; only a newer one can
        // abandon them (cheap on the hot path: one comparison).
        if self.adoptions_checked_at == Some(map.version) {
            return;
        }
        let (version, given) = (map.version, map.partitions_of(self.config.me));
        self.adoptions_checked_at = Some(version);
        let abandoned: Vec<PartitionId> = self
            .checkpointer
            .partitions()
            .chain(self.transfer.fetched_partitions())
            .filter(|p| !self.replicas.contains_key(p) && !given.contains(p))
            .collect();
        for partition in abandoned {
            self.checkpointer.removed(partition);
            self.transfer.cancel(partition);
        }
    }

    /// Drops this node's replica of `partition`, moved to other nodes
    /// whose majority now holds its state (or found moved away after being
    /// down through it).
    pub(crate) fn hand_off(&mut self, partition: PartitionId) {
        self.remember_maps();
        self.replicas.remove(&partition);
        self.node.remove_group(group_of(partition));
        self.checkpointer.removed(partition);
        self.transfer.cancel(partition);
        // Clients waiting here resend to the new group when their waiter
        // is dropped.
        self.abandon_requests(partition);
        let write = self.checkpointer.number();
        self.out
            .push(Command::RemoveCheckpoint { partition, write });
        self.counters.hand_offs += 1;
        tracing::info!(
            partition = partition.0,
            "partition moved away: replica dropped"
        );
    }
}
