//! A replica's state (DottedDB §IV-D: the five structures) and what it
//! does for clients and for its peers' replication messages (Alg. 1 and
//! Alg. 2). Sans-IO: the runtime (the node, or the simulator) delivers
//! messages, chooses when to run anti-entropy and stripping, and makes
//! the state durable; the state never issues a dot twice as long as it is
//! restored exactly.

use crate::dot::{Dot, ReplicaId};
use crate::dot_key_map::DotKeyMap;
use crate::node_clock::NodeClock;
use crate::object::Object;
use crate::ring::Ring;
use crate::version_vector::VersionVector;
use crate::watermark::Watermark;
use bytes::Bytes;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

/// Deliberately broken variants, for the simulator's checkers to catch.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum DottedBug {
    /// The real thing.
    #[default]
    None,
    /// Anti-entropy merges the peer's whole own clock entry even when the
    /// reply was cut at its budget (claims dots it never received).
    SyncAdvancesWholeClock,
    /// Strip drops context entries below the clock's largest counter
    /// instead of its base (across gaps fill cannot restore).
    StripPastGaps,
    /// Store forgets a deleted object before its context is stripped.
    ForgetUnstrippedDeletes,
    /// The dot-key map is pruned once this replica's own watermark row
    /// covers a dot, before every peer has it.
    PruneBeforeEveryPeer,
    /// A replica closes a retired id as soon as it learns of the
    /// retirement, before it has every live version of it.
    CloseWithoutCoverage,
    /// The runtime (here: the simulator) gives a replacement the id of
    /// the replica it replaces.
    ReuseReplicaId,
    /// The runtime (here: the simulator) answers and replicates a write
    /// before its journal is synced (`journal.rs`); the core itself runs
    /// as without a bug.
    AckBeforeSync,
    /// A replication message's skip hint leaves out the coordinator's
    /// earlier dots for the receiver's keys (`skips.rs`): the receiver
    /// counts versions it never got as seen.
    SkipsOwnKeys,
}

/// Why a replica refused a client write.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Refused {
    /// This replica does not hold the key (route to one of `replicas`).
    NotAReplica {
        /// The key's replicas.
        replicas: Vec<ReplicaId>,
    },
}

impl Refused {
    /// `Ok` when `id` replicates `key` on `ring`, else where to go.
    pub fn unless_replica(ring: &Ring, id: ReplicaId, key: &[u8]) -> Result<(), Refused> {
        if ring.replicates(id, key) {
            Ok(())
        } else {
            Err(Refused::NotAReplica {
                replicas: ring.replicas(key),
            })
        }
    }
}

/// Counters for metrics and the simulator's reports.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeStats {
    /// Writes this replica coordinated (dots issued).
    pub coordinated: u64,
    /// Objects merged in from replication or anti-entropy.
    pub updates: u64,
    /// Objects removed from storage (deletes with nothing left: no
    /// tombstone kept).
    pub forgotten: u64,
    /// Dots beyond a clock entry's bitmap bound, not recorded.
    pub dots_not_recorded: u64,
    /// Dot-key entries pruned.
    pub dot_keys_pruned: u64,
}

/// One replica of an eventual map: node clock, dot-key map, watermark,
/// non-stripped keys and storage (DottedDB §IV-D 1–5).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeState {
    pub(crate) id: ReplicaId,
    pub(crate) ring: Ring,
    /// NC: every dot seen.
    pub(crate) clock: NodeClock,
    /// DKM: dot → key of locally stored versions, until every peer has it.
    pub(crate) dot_keys: DotKeyMap,
    /// WM: peers' clock bases as last exchanged.
    pub(crate) watermark: Watermark,
    /// NSK: keys whose stored context is not empty yet.
    pub(crate) non_stripped: BTreeSet<Bytes>,
    /// ST: key → stripped object.
    pub(crate) storage: BTreeMap<Bytes, Object>,
    /// Where the next strip pass resumes in NSK.
    strip_cursor: Option<Bytes>,
    /// A replacement's full transfers still to finish, by peer
    /// (`replacement.rs`).
    pub(crate) transfers: BTreeMap<ReplicaId, crate::replacement::Transfer>,
    /// Retired ids not closed here yet → peers whose replies covered all
    /// their dots since the retirement.
    pub(crate) retiring: BTreeMap<ReplicaId, BTreeSet<ReplicaId>>,
    /// Retired ids closed here: every live version of theirs is here, and
    /// contexts count all their dots as seen.
    pub(crate) closed: BTreeSet<ReplicaId>,
    /// Closed ids still in the clock → peers known to have closed them
    /// too (the id is forgotten when all have).
    pub(crate) closed_by: BTreeMap<ReplicaId, BTreeSet<ReplicaId>>,
    /// Own dots issued per peer, for skip hints (volatile: restarts
    /// from the own base after a restart or a ring change).
    #[serde(skip)]
    pub(crate) issued: crate::skips::Issued,
    pub(crate) stats: NodeStats,
    pub(crate) bug: DottedBug,
}

impl NodeState {
    /// A replica `id` of `ring` that has seen nothing.
    pub fn new(id: ReplicaId, ring: Ring) -> NodeState {
        assert!(ring.members().contains(&id), "{id} is not on the ring");
        NodeState {
            id,
            ring,
            clock: NodeClock::new(),
            dot_keys: DotKeyMap::new(),
            watermark: Watermark::new(),
            non_stripped: BTreeSet::new(),
            storage: BTreeMap::new(),
            strip_cursor: None,
            transfers: BTreeMap::new(),
            retiring: BTreeMap::new(),
            closed: BTreeSet::new(),
            closed_by: BTreeMap::new(),
            issued: crate::skips::Issued::default(),
            stats: NodeStats::default(),
            bug: DottedBug::None,
        }
    }

    /// The same, running a broken variant.
    pub fn with_bug(mut self, bug: DottedBug) -> NodeState {
        self.bug = bug;
        self
    }

    /// This replica's id.
    pub fn id(&self) -> ReplicaId {
        self.id
    }

    /// The ring it places keys by.
    pub fn ring(&self) -> &Ring {
        &self.ring
    }

    /// The node clock.
    pub fn clock(&self) -> &NodeClock {
        &self.clock
    }

    /// Its counters.
    pub fn stats(&self) -> NodeStats {
        self.stats
    }

    /// Objects stored (deleted keys with nothing left are not).
    pub fn stored_keys(&self) -> usize {
        self.storage.len()
    }

    /// Dot-key entries held (0 once every peer has every dot).
    pub fn dot_keys_len(&self) -> usize {
        self.dot_keys.len()
    }

    /// Keys whose stored context is not stripped yet.
    pub fn non_stripped_len(&self) -> usize {
        self.non_stripped.len()
    }

    /// The stored (stripped) objects, by key.
    pub fn stored(&self) -> impl Iterator<Item = (&Bytes, &Object)> + '_ {
        self.storage.iter()
    }

    /// The least base of this replica's own entry among `peers` as last
    /// exchanged (what every peer is known to have of its dots).
    pub fn acknowledged_by_peers(&self, peers: &[ReplicaId]) -> u64 {
        let others: Vec<ReplicaId> = peers.iter().copied().filter(|p| *p != self.id).collect();
        if others.is_empty() {
            return self.clock.base(self.id);
        }
        self.watermark.min_over(self.id, &others)
    }

    /// Whether this replica holds `key`.
    pub fn replicates(&self, key: &[u8]) -> bool {
        self.ring.replicates(self.id, key)
    }

    /// Fetch (Alg. 2): the stored object filled from the node clock; a
    /// key never written or deleted and forgotten reads as no values with
    /// a filled context, so a write with that context supersedes the old
    /// versions the clock stands in for.
    pub fn fetch(&self, key: &[u8]) -> Object {
        let mut object = self.storage.get(key).cloned().unwrap_or_default();
        self.fill_from(&mut object, key, &self.clock, &self.closed);
        object
    }

    /// Fill with `clock` (this replica's or a peer's) and the closed ids
    /// of whoever `clock` belongs to: the key's replicas and the retired
    /// ids that held its positions up to their bases, closed ids fully.
    pub(crate) fn fill_from(
        &self,
        object: &mut Object,
        key: &[u8],
        clock: &NodeClock,
        closed: &BTreeSet<ReplicaId>,
    ) {
        let mut ids = self.ring.replicas(key);
        for retired in self.ring.retired_replicas(key) {
            if closed.contains(&retired) {
                object.raise_context(retired, u64::MAX);
            } else {
                ids.push(retired);
            }
        }
        object.fill(clock, &ids);
    }

    /// PUT and DELETE at their coordinator (Alg. 1): a new dot of this
    /// replica for `value` (`None` deletes), superseding every version
    /// `context` has seen. Returns the object to send to the key's other
    /// replicas.
    pub fn coordinate(
        &mut self,
        key: &Bytes,
        value: Option<Bytes>,
        context: &VersionVector,
    ) -> Result<Object, Refused> {
        Refused::unless_replica(&self.ring, self.id, key)?;
        // Alg. 1 as the authors' clock library does it (swc_kv: discard,
        // then add), not as printed: merging the local object with
        // `({ver}, cc)` where `cc[i] := c` drops every earlier version this
        // replica coordinated for the key, since `cc[i]` covers all of
        // `i`'s smaller counters, even a concurrent write the client never
        // saw (the simulator's causality checker caught it).
        let own = self.clock.entry(self.id);
        assert!(!own.has_gaps(), "{}'s own entry has gaps", self.id);
        let dot = Dot::new(self.id, own.base() + 1);
        self.issued.start(own.base());
        let others = self
            .ring
            .replicas(key)
            .into_iter()
            .filter(|r| *r != self.id);
        self.issued.record(dot.counter, others);
        let mut object = self.fetch(key);
        object.discard(context);
        object.add(dot, value);
        self.store(key, object.clone());
        assert_eq!(
            self.clock.base(self.id),
            dot.counter,
            "{} did not record its own new dot {dot}",
            self.id
        );
        self.stats.coordinated += 1;
        Ok(object)
    }

    /// Update (Alg. 2): merges `object` (filled, from a coordinator or a
    /// peer) into the local one and stores the result, which it returns.
    pub fn update(&mut self, key: &Bytes, object: &Object) -> Object {
        debug_assert!(
            self.replicates(key),
            "{} got {key:?} it does not hold",
            self.id
        );
        let merged = object.merge(&self.fetch(key));
        self.store(key, merged.clone());
        self.stats.updates += 1;
        merged
    }

    /// Store (Alg. 2): strips the object, keeps or forgets it, records its
    /// versions' dots in the clock and the dot-key map, and tracks whether
    /// it is fully stripped.
    pub(crate) fn store(&mut self, key: &Bytes, mut object: Object) {
        self.strip(key, &mut object);
        for dot in object.versions().keys() {
            // A closed id's dots all count as seen; its clock entry and
            // dot-key entries are on their way out.
            if self.closed.contains(&dot.id) {
                continue;
            }
            if !self.clock.add(*dot) {
                self.stats.dots_not_recorded += 1;
            }
            self.dot_keys.add(*dot, key);
        }
        let forget = match self.bug {
            DottedBug::ForgetUnstrippedDeletes => object.values().is_empty(),
            _ => object.is_forgettable(),
        };
        if object.context().is_empty() {
            self.non_stripped.remove(key);
        } else {
            self.non_stripped.insert(key.clone());
        }
        if forget {
            self.non_stripped.remove(key);
            if self.storage.remove(key).is_some() || !object.versions().is_empty() {
                self.stats.forgotten += 1;
            }
        } else {
            self.storage.insert(key.clone(), object);
        }
    }

    /// Strip, restricted to what fill restores for `key`: entries of the
    /// key's replicas and of the retired ids that held its positions up to
    /// their bases, closed ids whole. An entry of an id this replica's ring
    /// does not place on the key (a replacement whose ring change has not
    /// arrived here) stays: fill would not bring it back, and a stale copy
    /// of a version it superseded could return.
    fn strip(&self, key: &[u8], object: &mut Object) {
        let replicas = self.ring.replicas(key);
        let retired = self.ring.retired_replicas(key);
        let clock = &self.clock;
        let closed = &self.closed;
        let past_gaps = self.bug == DottedBug::StripPastGaps;
        object.retain_context(|id, c| {
            if retired.contains(&id) && closed.contains(&id) {
                return false;
            }
            if !replicas.contains(&id) && !retired.contains(&id) {
                return true;
            }
            if past_gaps {
                c > clock.entry(id).max()
            } else {
                c > clock.base(id)
            }
        });
    }

    /// One pass of the causality strip (Alg. 3 `strip_causality`) over at
    /// most `max_keys` non-stripped keys, resuming where the last pass
    /// stopped. Returns the keys visited.
    pub fn strip_some(&mut self, max_keys: usize) -> usize {
        // From the cursor to the end, then around from the start: a pass
        // that stopped early never starves the keys before it.
        let start = self.strip_cursor.take();
        let mut keys: Vec<Bytes> = match &start {
            Some(from) => self
                .non_stripped
                .range(from.clone()..)
                .take(max_keys)
                .cloned()
                .collect(),
            None => self.non_stripped.iter().take(max_keys).cloned().collect(),
        };
        if let Some(from) = &start {
            let more = max_keys - keys.len();
            keys.extend(self.non_stripped.range(..from.clone()).take(more).cloned());
        }
        // Strip in place: the versions and their dots were recorded when
        // the object was stored (re-recording them would bring back
        // dot-key entries already pruned), only the context shrinks.
        for key in &keys {
            let Some(mut object) = self.storage.remove(key) else {
                self.non_stripped.remove(key);
                continue;
            };
            self.strip(key, &mut object);
            let forget = match self.bug {
                DottedBug::ForgetUnstrippedDeletes => object.values().is_empty(),
                _ => object.is_forgettable(),
            };
            if forget || object.context().is_empty() {
                self.non_stripped.remove(key);
            }
            if forget {
                self.stats.forgotten += 1;
            } else {
                self.storage.insert(key.clone(), object);
            }
        }
        if keys.len() == max_keys {
            if let Some(last) = keys.last() {
                let mut next = last.to_vec();
                next.push(0);
                self.strip_cursor = Some(Bytes::from(next));
            }
        }
        keys.len()
    }

    /// Bytes of the node's own causality metadata (DottedDB §V-E 1): the
    /// clock (16 per entry, 8 per bitmap word), the dot-key map (16 + key
    /// per entry), the watermark (16 per cell), the non-stripped keys.
    pub fn metadata_bytes(&self) -> usize {
        let [clock, dkm, wm, nsk] = self.metadata_parts();
        clock + dkm + wm + nsk
    }

    /// [`NodeState::metadata_bytes`] by structure: clock, dot-key map,
    /// watermark, non-stripped keys.
    pub fn metadata_parts(&self) -> [usize; 4] {
        let clock: usize = self
            .clock
            .entries()
            .map(|(_, e)| 16 + 8 * e.bitmap_words())
            .sum();
        let dkm: usize = self.dot_keys.iter().map(|(_, k)| 16 + k.len()).sum();
        let nsk: usize = self.non_stripped.iter().map(Bytes::len).sum();
        [clock, dkm, 16 * self.watermark.cells(), nsk]
    }

    /// Bytes of the stored objects' clocks: 16 per version dot and per
    /// context entry (what stripping shrinks).
    pub fn object_clock_bytes(&self) -> usize {
        self.storage.values().map(Object::clock_bytes).sum()
    }

    /// Whether both hold the same five structures (counters aside).
    pub fn same_state(&self, other: &NodeState) -> bool {
        self.clock == other.clock
            && self.dot_keys == other.dot_keys
            && self.watermark == other.watermark
            && self.non_stripped == other.non_stripped
            && self.storage == other.storage
            && self.transfers == other.transfers
            && self.retiring == other.retiring
            && self.closed == other.closed
            && self.closed_by == other.closed_by
    }

    /// Asserts the structures agree (the simulator calls it after every
    /// step).
    pub fn check_invariants(&self) {
        assert!(
            !self.clock.entry(self.id).has_gaps(),
            "{}: own clock entry has gaps",
            self.id
        );
        for (key, object) in &self.storage {
            assert!(
                !object.is_forgettable(),
                "{}: stored a forgettable {key:?}",
                self.id
            );
            assert_eq!(
                self.non_stripped.contains(key),
                !object.context().is_empty(),
                "{}: NSK disagrees with {key:?}'s context",
                self.id
            );
            for dot in object.versions().keys() {
                if self.closed.contains(&dot.id) {
                    continue;
                }
                if self.stats.dots_not_recorded == 0 {
                    assert!(
                        self.clock.contains(*dot),
                        "{}: version {dot} not in NC",
                        self.id
                    );
                }
                let entry = self.dot_keys.get(*dot);
                assert!(
                    entry == Some(key) || (entry.is_none() && self.dot_keys.holds_or_pruned(*dot)),
                    "{}: version {dot} of {key:?} missing from the dot-key map",
                    self.id
                );
            }
        }
        for key in &self.non_stripped {
            assert!(
                self.storage.contains_key(key),
                "{}: NSK names a key not stored",
                self.id
            );
        }
        for (dot, _) in self.dot_keys.iter() {
            if self.stats.dots_not_recorded == 0 && !self.closed.contains(&dot.id) {
                assert!(
                    self.clock.contains(dot),
                    "{}: DKM dot {dot} not in NC",
                    self.id
                );
            }
        }
    }
}

/// The ids in both lists.
pub(crate) fn shared(a: &[ReplicaId], b: &[ReplicaId]) -> Vec<ReplicaId> {
    a.iter().copied().filter(|id| b.contains(id)).collect()
}
