//! Anti-entropy by node-clock exchange (DottedDB §IV-G 1, Alg. 3): a
//! replica sends its node clock to a peer; the peer answers with the
//! objects of the keys whose dots the clock lacks (found through its
//! dot-key map, only keys the asker replicates) and its own clock; the
//! asker merges the objects, closes the gaps of the peer's own entry,
//! raises its watermark and prunes its dot-key map. No Merkle tree, and
//! nothing is sent when nothing is missing.
//!
//! Replies are cut at a budget. The asker then closes the peer's own
//! entry only up to the counter the reply covered: a clock that claimed
//! a dot whose object it never received would fill contexts over it and
//! discard that version on the next merge (`DottedBug::SyncAdvancesWholeClock`).

use crate::dot::{Dot, ReplicaId};
use crate::node_clock::NodeClock;
use crate::node_state::{shared, DottedBug, NodeState};
use crate::object::Object;
use bytes::Bytes;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

impl SyncRequest {
    /// The bases of the clock the ask carries.
    pub fn bases(&self) -> Vec<(ReplicaId, u64)> {
        self.clock.bases().collect()
    }
}

/// `sync_clock(i, NC_i)`: the asker's id and clock.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SyncRequest {
    /// The asker.
    pub from: ReplicaId,
    /// Its node clock.
    pub clock: NodeClock,
    /// The retired ids it closed (nothing of theirs is missing there).
    pub closed: Vec<ReplicaId>,
}

/// `sync_repair(p, NC_p, O)`: the answerer's id, clock and the objects
/// the asker lacks (stripped, as stored; the asker fills them from
/// `clock`). The clock travels without its bitmaps: the asker only reads
/// its bases.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SyncReply {
    /// The answerer.
    pub from: ReplicaId,
    /// Its node clock's bases (bitmaps dropped).
    pub clock: NodeClock,
    /// Keys and stored objects (an empty object for a key deleted and
    /// forgotten: filled, it carries the delete).
    pub objects: Vec<(Bytes, Object)>,
    /// Every dot of the answerer's own entry up to this counter that the
    /// asker lacked was examined and its key sent when the asker holds
    /// it: the asker may close its entry for the answerer up to here.
    pub covered: u64,
    /// Retired ids whose dots the asker lacked were all examined (their
    /// keys sent where the asker holds them): a retiring replica counts
    /// the answerer as covering them.
    pub complete: Vec<ReplicaId>,
    /// The retired ids the answerer closed.
    pub closed: Vec<ReplicaId>,
}

/// How much one reply may carry and scan.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SyncBudget {
    /// Objects per reply.
    pub objects: usize,
    /// Value bytes per reply (at least one object is always sent).
    pub bytes: usize,
    /// Missing dots examined per reply.
    pub dots: usize,
}

impl Default for SyncBudget {
    fn default() -> SyncBudget {
        SyncBudget {
            objects: 1024,
            bytes: 4 << 20,
            dots: 1 << 16,
        }
    }
}

/// What applying a reply did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SyncApplied {
    /// Objects merged.
    pub objects: usize,
    /// Dot-key entries pruned.
    pub pruned: usize,
}

impl NodeState {
    /// `anti_entropy`'s message to `peer` (Alg. 3), carrying only the
    /// entries `peer` compares: its own, those of the replicas both share
    /// ranges with, every retired id, and any id this ring does not list
    /// (a replacement the peer may already know). An entry the peer wants
    /// and does not find reads as empty there, which only makes it send
    /// keys this replica already holds (merging is idempotent); never one
    /// fewer.
    pub fn sync_request(&self, peer: ReplicaId) -> SyncRequest {
        let shared = shared(&self.ring.peers(self.id), &self.ring.peers(peer));
        let members = self.ring.members();
        let retired = self.ring.retired();
        let clock = self.clock.restricted(|n| {
            n == peer || shared.contains(&n) || retired.contains_key(&n) || !members.contains(&n)
        });
        SyncRequest {
            from: self.id,
            clock,
            closed: self.closed.iter().copied().collect(),
        }
    }

    /// `sync_clock` (Alg. 3): the reply to `request`, within `budget`. The
    /// answerer's own entry is examined first, so a cut reply still
    /// covers a prefix of it.
    pub fn answer_sync(&self, request: &SyncRequest, budget: SyncBudget) -> SyncReply {
        self.answer_sync_below(request, budget, None)
    }

    /// [`NodeState::answer_sync`] for the dots at or below `horizon` only
    /// (per replica id, the largest counter to consider; an id it lacks:
    /// none). The service passes this replica's clock as it was a moment
    /// ago: younger dots are still on their way by replication, and
    /// sending them again would double the bytes of a round for nothing.
    /// The own entry is covered only up to its horizon, so the asker
    /// closes nothing it has not been sent.
    pub fn answer_sync_below(
        &self,
        request: &SyncRequest,
        budget: SyncBudget,
        horizon: Option<&BTreeMap<ReplicaId, u64>>,
    ) -> SyncReply {
        let limit = |n: ReplicaId| horizon.map_or(u64::MAX, |h| h.get(&n).copied().unwrap_or(0));
        let asker = request.from;
        let mut ids = vec![self.id];
        for n in shared(&self.ring.peers(self.id), &self.ring.peers(asker)) {
            if n != self.id {
                ids.push(n);
            }
        }
        // Retired ids that held a position both share, while the asker
        // has not closed them: their surviving versions still travel.
        let retired: Vec<ReplicaId> = self
            .ring
            .retired()
            .keys()
            .copied()
            .filter(|r| !request.closed.contains(r))
            .filter(|&r| {
                let around = self.ring.peers(r);
                around.contains(&self.id) && around.contains(&asker)
            })
            .collect();
        ids.extend(retired.iter().copied());
        let mut objects = Vec::new();
        let mut sent: BTreeSet<Bytes> = BTreeSet::new();
        let (mut bytes, mut dots) = (0usize, 0usize);
        // An asker this replica's ring does not know yet (a replacement
        // whose ring change has not arrived here) gets nothing and closes
        // nothing.
        if !self.ring.members().contains(&asker) {
            return SyncReply {
                from: self.id,
                clock: self.clock.without_bitmaps(),
                objects: Vec::new(),
                covered: 0,
                complete: Vec::new(),
                closed: self.closed.iter().copied().collect(),
            };
        }
        let own_max = self.clock.entry(self.id).max();
        let mut covered = own_max.min(limit(self.id));
        let mut complete = Vec::new();
        'ids: for n in ids {
            let (mine, theirs) = (self.clock.entry(n), request.clock.entry(n));
            let below = limit(n);
            // A retired id's missing dots are taken from the dot-key map,
            // only those of keys the asker holds (the only ones a reply
            // can send), instead of being counted out one by one: its
            // replica is gone, so the asker's entry keeps the gaps of the
            // keys it does not hold for good, and the entries of those
            // keys stay here until the id is forgotten. Walking them would
            // spend a small dot budget before the reply could say the id
            // is complete, every time: the id would never close (the
            // service swarm with lost stores, seeds 470 and 887, 5 dots
            // per reply). The walk is bounded by the id's entries, which
            // only shrink: a retired id issues no dot.
            let retired_id = retired.contains(&n);
            let missing: Box<dyn Iterator<Item = u64> + '_> = if retired_id {
                Box::new(
                    self.dot_keys
                        .counters(n, theirs.base(), below)
                        .filter(|&c| mine.contains(c) && !theirs.contains(c))
                        .filter(|&c| {
                            self.dot_keys
                                .get(Dot::new(n, c))
                                .is_some_and(|key| self.ring.replicates(asker, key))
                        }),
                )
            } else {
                Box::new(mine.missing_from(&theirs).take_while(|&c| c <= below))
            };
            for c in missing {
                let full = dots >= budget.dots
                    || objects.len() >= budget.objects
                    || (!objects.is_empty() && bytes >= budget.bytes);
                if full {
                    if n == self.id {
                        covered = c - 1;
                    }
                    break 'ids;
                }
                dots += 1;
                let Some(key) = self.dot_keys.get(Dot::new(n, c)) else {
                    continue;
                };
                if sent.contains(key) || !self.ring.replicates(asker, key) {
                    continue;
                }
                let object = self.storage.get(key).cloned().unwrap_or_default();
                bytes += key.len() + object.value_bytes();
                sent.insert(key.clone());
                objects.push((key.clone(), object));
            }
            // Complete only when the horizon hid none of its dots.
            if retired.contains(&n) && mine.max() <= below {
                complete.push(n);
            }
        }
        SyncReply {
            from: self.id,
            clock: self.clock.without_bitmaps(),
            objects,
            covered,
            complete,
            closed: self.closed.iter().copied().collect(),
        }
    }

    /// What an ask told of its sender: a peer's bases are as good a report
    /// in its ask as in its answer (both are its clock when sent, and the
    /// watermark only rises), so the answerer's watermark learns them and
    /// its dot-key map is pruned with them. Alg. 3 learns only from
    /// answers; learning from both directions halves the time a dot-key
    /// entry waits for a peer's report. Returns the entries pruned.
    pub fn note_peer_bases(&mut self, peer: ReplicaId, bases: &[(ReplicaId, u64)]) -> usize {
        let peers = self.ring.peers(self.id);
        if peer == self.id || !peers.contains(&peer) {
            return 0;
        }
        for &(id, base) in bases {
            if peers.contains(&id) {
                self.watermark.update_cell(peer, id, base);
            }
        }
        self.prune_dot_keys(&peers)
    }

    /// Raises this replica's own watermark row to its clock and prunes the
    /// dot-key map by the watermark. Returns the entries pruned.
    fn prune_dot_keys(&mut self, peers: &[ReplicaId]) -> usize {
        let own = self.clock.clone();
        self.watermark.update_peer(self.id, &own, peers);
        let ring = &self.ring;
        let me = self.id;
        let watermark = &self.watermark;
        let pruned = match self.bug {
            DottedBug::PruneBeforeEveryPeer => {
                self.dot_keys
                    .prune(watermark, |_| vec![me], |n, _| watermark.get(me, n))
            }
            _ => {
                // Per entry a hash and a few cells, no allocation.
                let groups = ring.group_replicas();
                self.dot_keys.prune(
                    watermark,
                    |n| shared(peers, &ring.peers(n)),
                    |n, key| watermark.min_over(n, &groups[ring.group(key)]),
                )
            }
        };
        self.stats.dot_keys_pruned += pruned as u64;
        pruned
    }

    /// `sync_repair` (Alg. 3): merges the reply's objects (filled from the
    /// answerer's clock), closes the answerer's own entry up to what the
    /// reply covered, raises the watermark and prunes the dot-key map.
    pub fn apply_sync(&mut self, reply: &SyncReply) -> SyncApplied {
        let p = reply.from;
        let mut applied = SyncApplied::default();
        let their_closed: BTreeSet<ReplicaId> = reply.closed.iter().copied().collect();
        for (key, object) in &reply.objects {
            if !self.replicates(key) {
                continue;
            }
            let mut filled = object.clone();
            self.fill_from(&mut filled, key, &reply.clock, &their_closed);
            self.update(key, &filled);
            applied.objects += 1;
        }
        // A replacement learns nothing about a peer's dots from a sync
        // until its full transfer from that peer is done: the peer's
        // dot-key map lost entries before the replacement existed.
        if !self.transfers.contains_key(&p) {
            let theirs = reply.clock.entry(p);
            let closed = match self.bug {
                DottedBug::SyncAdvancesWholeClock => theirs,
                _ => theirs.up_to(reply.covered),
            };
            self.clock.join_entry(p, &closed);
            for r in &reply.complete {
                if let Some(covering) = self.retiring.get_mut(r) {
                    covering.insert(p);
                }
            }
        }
        for r in &reply.closed {
            if let Some(by) = self.closed_by.get_mut(r) {
                by.insert(p);
            }
        }
        let peers = self.ring.peers(self.id);
        self.watermark.update_peer(p, &reply.clock, &peers);
        applied.pruned = self.prune_dot_keys(&peers);
        self.close_and_forget_retired();
        applied
    }
}
