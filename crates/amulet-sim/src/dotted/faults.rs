//! What happens to the simulated replicas beside the workload: crashes
//! (a torn journal tail lost), a node's replacement (its disks destroyed,
//! new replica ids), and the quiescence rounds after healing.

use super::{Disk, World, QUIESCENCE_ROUNDS_MAX};
use amulet_dotted::{DottedBug, Input, NodeState, ReplicaId, Ring, SyncBudget};

impl World {
    /// Node `node`'s disks are destroyed: each of its virtual nodes comes
    /// back as a replacement with a new id (`amulet_dotted::replacement`),
    /// the old ids retired on every replica's ring. Writes no other
    /// replica had durably are lost with it.
    pub(super) fn replace(&mut self, node: usize) {
        let slots: Vec<usize> = (node..self.nodes.len())
            .step_by(self.options.nodes)
            .collect();
        let durable: Vec<Option<NodeState>> = (0..self.nodes.len())
            .map(|j| {
                (!slots.contains(&j)).then(|| {
                    let disk = &self.disks[j];
                    NodeState::recover(&disk.checkpoint, &disk.journal[..disk.synced])
                })
            })
            .collect();
        let mut ring = self.nodes[slots[0]].ring().clone();
        let mut fresh = Vec::new();
        for &i in &slots {
            let old = self.nodes[i].id();
            for w in self.writes.iter_mut().filter(|w| w.dot.id == old) {
                // A replica of the key whose clock has the dot stored the
                // version or a later one (a replica that does not hold
                // the key may have the dot from closing the entry).
                let held = durable
                    .iter()
                    .flatten()
                    .any(|n| n.replicates(&w.key) && n.clock().contains(w.dot));
                w.lost |= !held;
            }
            let new = if self.bug == DottedBug::ReuseReplicaId {
                old
            } else {
                let new = ReplicaId(self.next_id);
                self.next_id += 1;
                ring = ring.replace(old, new);
                new
            };
            fresh.push((i, new));
        }
        self.log(format!("replace node {node}: {fresh:?}"));
        self.stats.replacements += 1;
        // The ring change reaches the other replicas at different times
        // (in a cluster: when each executes it from the global stream).
        for j in 0..self.nodes.len() {
            if !slots.contains(&j) {
                let delay = self.rng.range(1, 300_000);
                self.at(delay, super::Event::SetRing(j, Box::new(ring.clone())));
            }
        }
        for (i, new) in fresh {
            let state = if self.bug == DottedBug::ReuseReplicaId {
                NodeState::new(new, ring.clone())
            } else {
                NodeState::new_replacement(new, ring.clone())
            }
            .with_bug(self.bug);
            self.disks[i] = Disk {
                checkpoint: state.clone(),
                journal: Vec::new(),
                synced: 0,
            };
            self.nodes[i] = state;
            self.knowledge.reset(i);
            self.incarnation[i] += 1;
            self.up[i] = true;
            self.slot_of.insert(new, i);
        }
    }

    /// The ring change of a replacement reaches replica `j` (also while
    /// its node is down: it executes it when it restarts).
    pub(super) fn set_ring(&mut self, j: usize, ring: Ring) {
        if ring.retired().len() > self.nodes[j].ring().retired().len() {
            self.apply(j, Input::SetRing(ring));
            self.commit(j);
        }
    }

    /// Replica `i`'s node stopped: the journal keeps what was synced and,
    /// of the rest, a prefix that reached the disk before the tear; the
    /// replica restarts from its checkpoint and that journal.
    pub(super) fn crash(&mut self, i: usize) {
        self.up[i] = false;
        let disk = &mut self.disks[i];
        let unsynced = disk.journal.len() - disk.synced;
        let reached = self.rng.below(unsynced as u64 + 1) as usize;
        disk.journal.truncate(disk.synced + reached);
        disk.synced = disk.journal.len();
        self.nodes[i] = NodeState::recover(&disk.checkpoint, &disk.journal);
        self.stats.crashes += 1;
        self.stats.inputs_lost += (unsynced - reached) as u64;
        self.log(format!(
            "crash {}: {unsynced} unsynced inputs, {reached} reached the disk",
            self.nodes[i].id()
        ));
    }

    /// After healing: every replica syncs with every peer, and strips
    /// every key, round after round until a round changes nothing.
    pub(super) fn quiesce(&mut self) -> bool {
        for round in 0..QUIESCENCE_ROUNDS_MAX {
            let before: Vec<NodeState> = self.nodes.clone();
            for a in 0..self.nodes.len() {
                for _ in 0..10_000 {
                    let Some((peer, request)) = self.nodes[a].transfer_request() else {
                        break;
                    };
                    let p = self.index(peer);
                    let Some(page) = self.nodes[p].answer_transfer(&request, SyncBudget::default())
                    else {
                        break; // every ring change has arrived by now
                    };
                    self.nodes[a].apply_transfer(&page);
                    self.nodes[a].check_invariants();
                }
            }
            let same =
                |a: &[NodeState], b: &[NodeState]| a.iter().zip(b).all(|(x, y)| x.same_state(y));
            for a in 0..self.nodes.len() {
                let id = self.nodes[a].id();
                for p in self.nodes[a].ring().peers(id) {
                    let p = self.index(p);
                    if p == a {
                        continue;
                    }
                    let reply = self.nodes[p].answer_sync(
                        &self.nodes[a].sync_request(self.nodes[p].id()),
                        SyncBudget::default(),
                    );
                    self.nodes[a].apply_sync(&reply);
                    self.nodes[a].check_invariants();
                }
            }
            for node in &mut self.nodes {
                node.strip_some(usize::MAX);
                node.check_invariants();
            }
            if same(&self.nodes, &before) {
                self.log(format!("quiescent after {round} rounds"));
                return true;
            }
        }
        false
    }
}
