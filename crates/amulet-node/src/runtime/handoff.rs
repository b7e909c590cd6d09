//! Moving a partition to another replica group (`Reconfiguration::Move`,
//! DMap §III-C: "the new set of replicas first recover the state from the
//! currently available partition"). At the move's fence the map names the
//! new group; replicas that stay and replicas that go both switch to the
//! new stream (fence.rs, as for a stream replacement). Here, on the event
//! loop's trim tick:
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

use super::*;
use amulet_smr::{handed_off, replicas_to_hand_off};

impl EventLoop {
    /// Starts fetching every partition `map` (the node's newest) gives
    /// this node and that it does not run; drops replicas moved away once
    /// the new group holds their state.
    pub(super) fn adopt_and_hand_off(&mut self, map: &PartitionMap) {
        let now = self.now();
        for partition in map.partitions_of(self.me) {
            if self.replicas.contains_key(&partition) || self.transfer.fetching(partition) {
                continue;
            }
            let peers = map.transfer_sources(partition, self.me);
            // A checkpoint past the move: it merges the new stream.
            let at_least = vec![(map.partitions[&partition].stream, Instance(0))];
            self.checkpointer.adopting(partition, now);
            if let Some((to, message)) = self.transfer.start(partition, peers, at_least, now) {
                tracing::info!(
                    partition = partition.0,
                    "partition moved here: fetching its state"
                );
                self.send_replica_message(to, message);
            }
        }
        let handed = replicas_to_hand_off(self.me, &self.replicas, |partition, map| {
            let stream = map.partitions[&partition].stream;
            self.node
                .streams()
                .get(&stream)
                .is_some_and(|s| handed_off(map, partition, &s.safe_instances()))
        });
        for partition in handed {
            self.hand_off(partition);
        }
    }

    /// Whether this node waits for `partition`'s state after a move gave
    /// it the partition (its newest map names it; it runs no replica).
    pub(super) fn adopting(&self, partition: PartitionId) -> bool {
        !self.replicas.contains_key(&partition)
            && self
                .current_map()
                .is_some_and(|m| m.partitions_of(self.me).contains(&partition))
    }

    /// Drops this node's replica of `partition`, moved to other nodes
    /// whose majority now holds its state.
    pub(super) fn hand_off(&mut self, partition: PartitionId) {
        self.replicas.remove(&partition);
        self.node.remove_group(GroupId(partition.0));
        self.checkpointer.removed(partition);
        self.transfer.cancel(partition);
        // Clients waiting here resend to the new group when their waiter
        // is dropped.
        self.pending.retain(|(p, _), _| *p != partition);
        if let Err(error) = self.store.remove(partition) {
            tracing::error!(%error, "cannot remove the checkpoint of a partition moved away");
        }
        tracing::info!(
            partition = partition.0,
            "partition moved away: the new group holds it, replica dropped"
        );
    }

    /// Whether a fetched checkpoint of `partition` can start the replica
    /// this node adopts: taken past the move (its map names this node).
    /// Streams its merge names that this node lacks are opened from that
    /// map when it is installed.
    pub(super) fn adoptable(&self, partition: PartitionId, body: &CheckpointBody) -> bool {
        body.replica.partition == partition
            && body
                .replica
                .map
                .partitions
                .get(&partition)
                .is_some_and(|info| info.replicas.contains(&self.me))
    }
}
