//! Replacing a replica that lost its state (issue 23: replica ids are
//! never reused; Riak's "kv679" data loss came from reusing one).
//!
//! The lost replica's position on the ring gets a new id and its old id is
//! *retired* (a ring change, ordered through the global stream in a
//! cluster). Then:
//!
//! 1. **The replacement bootstraps by full transfers**: from each peer,
//!    every stored object of the keys it holds, page by page in key order.
//!    Dot-based anti-entropy cannot do this: peers pruned dot-key entries
//!    for dots every *earlier* peer had. When a peer's transfer is done,
//!    the replacement closes that peer's own clock entry up to the
//!    peer's counter at the first page (every write of the peer up to
//!    then is in a page, or superseded in one); until then it takes
//!    nothing about that peer from syncs.
//! 2. **Survivors keep exchanging the retired id's dots** (anti-entropy
//!    examines them while the asker has not closed the id), so every live
//!    version the retired replica left anywhere reaches every replica of
//!    its keys.
//! 3. **A replica closes the retired id** once every replica sharing keys
//!    with both it and the retired position has answered it with every dot of the retired id
//!    it lacked (`SyncReply::complete`, or a full transfer), after the
//!    retirement: no live version of it can be missing here then, and no
//!    new one can appear (the retired replica is gone). A closed id counts
//!    as fully seen: contexts drop it (strip) and regain it fully where it
//!    held the key's position (fill), so its superseded versions can
//!    never come back.
//! 4. **It forgets the closed id** (clock entry, dot-key entries,
//!    watermark cells) once every one of those replicas closed it too:
//!    nobody can need those entries from it any more.

use crate::anti_entropy::SyncBudget;
use crate::clock_entry::ClockEntry;
use crate::dot::ReplicaId;
use crate::node_clock::NodeClock;
use crate::node_state::{shared, DottedBug, NodeState};
use crate::object::Object;
use crate::ring::Ring;
use bytes::Bytes;
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;
use std::ops::Bound;

/// Where a replacement's full transfer from one peer stands.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Transfer {
    /// The last key received (the next page starts after it).
    pub after: Option<Bytes>,
    /// The peer's own counter at the first page.
    pub snapshot: Option<u64>,
    /// The ids the peer knew as retired at the first page.
    pub retired: Vec<ReplicaId>,
    /// The peer's clock bases and closed ids at the first page.
    pub bases: Vec<(ReplicaId, u64)>,
    /// The peer's closed ids at the first page.
    pub closed: Vec<ReplicaId>,
    /// The keys the pages carried.
    pub received: BTreeSet<Bytes>,
}

/// A replacement asks a peer for the next page of its full transfer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TransferRequest {
    /// The replacement.
    pub from: ReplicaId,
    /// The page starts after this key (`None`: the first page).
    pub after: Option<Bytes>,
}

/// One page of a full transfer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TransferPage {
    /// The peer answering.
    pub from: ReplicaId,
    /// The request this answers.
    pub after: Option<Bytes>,
    /// The peer's clock bases (to fill the objects with).
    pub bases: Vec<(ReplicaId, u64)>,
    /// The retired ids the peer closed.
    pub closed: Vec<ReplicaId>,
    /// The retired ids the peer knows of.
    pub retired: Vec<ReplicaId>,
    /// The peer's own counter now.
    pub own_max: u64,
    /// Keys (that the replacement holds) and stored objects, in key order.
    pub objects: Vec<(Bytes, Object)>,
    /// Where the next page starts; `None` when this was the last.
    pub next: Option<Bytes>,
}

impl NodeState {
    /// A replacement: replica `id` (new, never used) at a position of
    /// `ring` whose previous replica lost its state. It holds nothing yet
    /// and fetches everything from its peers by full transfers.
    pub fn new_replacement(id: ReplicaId, ring: Ring) -> NodeState {
        let mut state = NodeState::new(id, ring);
        for peer in state.ring.peers(id) {
            if peer != id {
                state.transfers.insert(peer, Transfer::default());
            }
        }
        for (&retired, _) in state.ring.retired().clone().iter() {
            if state.ring.peers(retired).contains(&id) {
                state.retiring.insert(retired, BTreeSet::new());
            }
        }
        state
    }

    /// Applies a ring change (a replacement elsewhere): the ids it
    /// retires start retiring here.
    pub fn set_ring(&mut self, ring: Ring) {
        assert!(
            ring.members().contains(&self.id),
            "{} was replaced: a replaced replica stops",
            self.id
        );
        let newly: Vec<ReplicaId> = ring
            .retired()
            .keys()
            .copied()
            .filter(|r| !self.ring.is_retired(*r))
            .collect();
        self.ring = ring;
        self.issued.reset();
        for r in newly {
            if self.ring.peers(r).contains(&self.id) {
                self.retiring.insert(r, BTreeSet::new());
            }
        }
        if self.bug == DottedBug::CloseWithoutCoverage {
            for covering in self.retiring.values_mut() {
                covering.extend(self.ring.members().iter().copied());
            }
        }
        self.close_and_forget_retired();
    }

    /// The next transfer request of a replacement, if any is unfinished.
    pub fn transfer_request(&self) -> Option<(ReplicaId, TransferRequest)> {
        let (&peer, transfer) = self.transfers.iter().next()?;
        Some((
            peer,
            TransferRequest {
                from: self.id,
                after: transfer.after.clone(),
            },
        ))
    }

    /// The retired ids closed here.
    pub fn closed(&self) -> &BTreeSet<ReplicaId> {
        &self.closed
    }

    /// Unfinished full transfers (0 once a replacement has bootstrapped).
    pub fn transfers_pending(&self) -> usize {
        self.transfers.len()
    }

    /// Retired ids not closed yet plus closed ids not forgotten yet (0
    /// when quiescent).
    pub fn retired_in_flight(&self) -> usize {
        self.retiring.len() + self.closed_by.len()
    }

    /// The page after `request.after` of the keys the asker holds, within
    /// `budget`; `None` while the asker is not on this replica's ring yet
    /// (the ring change that made it has not reached this replica: an
    /// empty last page would let it close this replica's entry over keys
    /// it never got).
    pub fn answer_transfer(
        &self,
        request: &TransferRequest,
        budget: SyncBudget,
    ) -> Option<TransferPage> {
        if !self.ring.members().contains(&request.from) {
            return None;
        }
        let start = match &request.after {
            Some(key) => Bound::Excluded(key.clone()),
            None => Bound::Unbounded,
        };
        let mut objects = Vec::new();
        let mut bytes = 0;
        let mut next = None;
        for (key, object) in self.storage.range((start, Bound::Unbounded)) {
            if !self.ring.replicates(request.from, key) {
                continue;
            }
            if objects.len() >= budget.objects || (!objects.is_empty() && bytes >= budget.bytes) {
                next = objects.last().map(|(k, _): &(Bytes, Object)| k.clone());
                break;
            }
            bytes += key.len() + object.value_bytes();
            objects.push((key.clone(), object.clone()));
        }
        Some(TransferPage {
            from: self.id,
            after: request.after.clone(),
            bases: self.clock.bases().collect(),
            closed: self.closed.iter().copied().collect(),
            retired: self.ring.retired().keys().copied().collect(),
            own_max: self.clock.entry(self.id).max(),
            objects,
            next,
        })
    }

    /// Merges a page of a full transfer; the last page closes the peer's
    /// own entry up to its counter at the first page.
    pub fn apply_transfer(&mut self, page: &TransferPage) {
        let p = page.from;
        let Some(transfer) = self.transfers.get(&p) else {
            return; // finished already (a duplicate)
        };
        if transfer.after != page.after {
            return; // not the page asked for next (a duplicate or stale)
        }
        let mut transfer = transfer.clone();
        if transfer.snapshot.is_none() {
            transfer.snapshot = Some(page.own_max);
            transfer.retired = page.retired.clone();
            transfer.bases = page.bases.clone();
            transfer.closed = page.closed.clone();
        }
        transfer
            .received
            .extend(page.objects.iter().map(|(k, _)| k.clone()));
        let mut clock = NodeClock::new();
        for &(id, base) in &page.bases {
            clock.join_entry(id, &ClockEntry::from_base(base));
        }
        let closed: BTreeSet<ReplicaId> = page.closed.iter().copied().collect();
        for (key, object) in &page.objects {
            if !self.replicates(key) {
                continue;
            }
            let mut filled = object.clone();
            self.fill_from(&mut filled, key, &clock, &closed);
            self.update(key, &filled);
        }
        match &page.next {
            Some(next) => {
                transfer.after = Some(next.clone());
                self.transfers.insert(p, transfer);
            }
            None => {
                self.transfers.remove(&p);
                self.absorb_absent_keys(p, &transfer);
                let snapshot = transfer.snapshot.expect("set at the first page");
                self.clock.join_entry(p, &ClockEntry::from_base(snapshot));
                for r in &transfer.retired {
                    if let Some(covering) = self.retiring.get_mut(r) {
                        covering.insert(p);
                    }
                }
                self.close_and_forget_retired();
            }
        }
    }

    /// A key this replica stores that the peer's transfer did not carry
    /// is absent there: never written, or deleted and forgotten (the
    /// peer's clock is its tombstone). Anti-entropy would send such a key
    /// as an empty object filled from the peer's clock; the transfer does
    /// the same at its end, with the clock of its first page (a version
    /// the peer had seen by then and still held would have been paged),
    /// so versions the replacement got before it bootstrapped, which the
    /// peer saw deleted, go.
    fn absorb_absent_keys(&mut self, p: ReplicaId, transfer: &Transfer) {
        let mut clock = NodeClock::new();
        for &(id, base) in &transfer.bases {
            clock.join_entry(id, &ClockEntry::from_base(base));
        }
        let closed: BTreeSet<ReplicaId> = transfer.closed.iter().copied().collect();
        let absent: Vec<Bytes> = self
            .storage
            .keys()
            .filter(|k| !transfer.received.contains(*k) && self.ring.replicates(p, k))
            .cloned()
            .collect();
        for key in absent {
            let mut filled = Object::new();
            self.fill_from(&mut filled, &key, &clock, &closed);
            self.update(&key, &filled);
        }
    }

    /// The current replicas that share keys with both this replica and
    /// the retired position of `r` (only they can hold versions of `r`
    /// for keys this replica holds, or need `r`'s dots from it).
    fn sharing(&self, r: ReplicaId) -> Vec<ReplicaId> {
        shared(&self.ring.peers(r), &self.ring.peers(self.id))
            .into_iter()
            .filter(|p| *p != self.id)
            .collect()
    }

    /// Closes every retiring id every replica sharing its position with
    /// this one has covered, and forgets every closed id all of those
    /// closed.
    pub(crate) fn close_and_forget_retired(&mut self) {
        let ready: Vec<ReplicaId> = self
            .retiring
            .iter()
            .filter(|(r, covering)| {
                self.transfers.is_empty() && self.sharing(**r).iter().all(|p| covering.contains(p))
            })
            .map(|(r, _)| *r)
            .collect();
        for r in ready {
            self.retiring.remove(&r);
            self.closed.insert(r);
            self.closed_by.insert(r, BTreeSet::new());
        }
        let done: Vec<ReplicaId> = self
            .closed_by
            .iter()
            .filter(|(r, by)| self.sharing(**r).iter().all(|p| by.contains(p)))
            .map(|(r, _)| *r)
            .collect();
        for r in done {
            self.closed_by.remove(&r);
            self.clock.retire(r);
            self.dot_keys.retire(r);
            self.watermark.retire(r);
        }
    }
}
