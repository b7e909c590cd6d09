//! Asking for signals by the node's newest map (S-SMR's signals, thesis
//! §4): a replica waiting for another partition's signal asks that
//! partition's runners by its own map, which may be older than the map
//! under which they ran it. When a move took the partition from those
//! runners and its hand-off finished, none of them answers any more, and
//! the replica, with every replica waiting on it in turn, waits forever
//! (`amulet-sim --dmap --seed 2000129`: p6 at node 5 waited at position 23
//! for p2, asking nodes 4-6, while node 2, p2's only replica since a move,
//! had executed position 23 long ago). The node asks the runners its
//! newest map adds as well; a replica past the position answers with its
//! partial, or that it executed the command long ago.
//!
//! The newest map is the newest the node has heard of, a peer's too
//! (`Host::heard_map`): at a node that lost its state, every replica
//! replays from far back, and the maps they executed may all name runners
//! that no longer run the partition (`amulet-sim --dmap --seed 9007420`:
//! node 4's p2 replica waited at position 5 for p1's signal from nodes
//! 1-3, which had moved p1 away long before; node 4 was the cluster's
//! proposer, so self-healing waited with it).

use crate::command::Command;
use crate::host::Host;
use amulet_smr::{ReplicaMessage, StateMachine};
use amulet_types::TimeMicros;

/// How often the node asks for signals by its newest map (a replica asks
/// by its own at its signal retry interval).
const NEWER_RUNNERS_ASK_MICROS: u64 = 1_000_000;

impl<S: StateMachine> Host<S> {
    /// Asks the runners the newest map names, and the replica's map does
    /// not, for each signal a replica here still waits for.
    pub(crate) fn ask_newer_runners(&mut self, now: TimeMicros) {
        if self
            .newer_runners_asked_at
            .is_some_and(|at| now.since(at) < NEWER_RUNNERS_ASK_MICROS)
        {
            return;
        }
        self.newer_runners_asked_at = Some(now);
        // A peer's map counts here, not only the node's own: when every
        // replica at this node is far behind, the node's own newest map
        // may name only runners that have all moved on (seed 9007420).
        let Some(newest) = self.newest_heard_map() else {
            return;
        };
        let me = self.config.me;
        let mut asks = Vec::new();
        for replica in self.replicas.values() {
            if replica.map().version == newest.version {
                continue;
            }
            for (position, partition) in replica.missing_signals() {
                let known = replica.map().runners(partition);
                for to in newest.runners(partition) {
                    if !known.contains(&to) && to != me {
                        asks.push((to, position));
                    }
                }
            }
        }
        asks.sort_unstable();
        asks.dedup();
        for (to, position) in asks {
            self.out.push(Command::SendReplica {
                to,
                message: Box::new(ReplicaMessage::SignalRequest {
                    global_position: position,
                    from: me,
                }),
            });
        }
    }
}
