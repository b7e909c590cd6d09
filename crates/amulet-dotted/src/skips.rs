//! Skip hints on replication messages: a coordinator tells a replica
//! which of its recent dots were for the replica's keys, so the replica
//! can count the others as seen at once.
//!
//! A replica's node clock entry for a peer `n` has a gap at every dot `n`
//! issued for a key the replica does not hold. Alg. 3 closes those gaps
//! only when the replica syncs with `n` itself (the answerer's own entry),
//! so with one random peer per anti-entropy round the replica's base for
//! `n` lags by several rounds, and so do the watermarks of every replica
//! waiting on that base to prune its dot-key map (DottedDB §IV-G). The
//! coordinator knows exactly which of its dots it issued for the
//! replica's keys: each replication message carries the last few of them
//! and the counter after which that list is complete; every other dot of
//! the coordinator in that stretch is for keys the replica does not hold,
//! which is what closing by sync would also claim. Lost messages leave the
//! stretch open for anti-entropy, as before.
//!
//! The record is volatile: after a restart or a ring change it starts
//! again from the coordinator's own base, so it never speaks for a dot it
//! did not see issued under the ring it was issued by.

use crate::dot::{Dot, ReplicaId};
use crate::node_state::{DottedBug, NodeState};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, VecDeque};

/// Own dots remembered per peer (the hint's length bound).
pub const SKIP_HINT_DOTS: usize = 8;

/// Most gap counters one hint may close (work per message is bounded;
/// what is left stays for anti-entropy).
pub const SKIP_HINT_SPAN_MAX: u64 = 1 << 12;

/// What a replication message of dot `(n, c)` says of `n`'s other dots:
/// every counter in `(since, c)` not in `mine` was issued for a key the
/// receiver does not replicate.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Skips {
    /// The replicated dot `(n, c)`.
    pub dot: Dot,
    /// The list below is complete after this counter.
    pub since: u64,
    /// The sender's dots in `(since, c)` for the receiver's keys.
    pub mine: Vec<u64>,
}

/// A coordinator's record of the dots it issued per peer.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Issued {
    /// The own base when recording started (none yet: not started).
    from: Option<u64>,
    /// Per peer: the counter after which `dots` is complete, and the last
    /// own dots issued for its keys, oldest first.
    per_peer: BTreeMap<ReplicaId, (u64, VecDeque<u64>)>,
}

impl Issued {
    /// Starts recording at `base` (the own base before the next dot) if
    /// not started.
    pub fn start(&mut self, base: u64) {
        if self.from.is_none() {
            self.from = Some(base);
        }
    }

    /// Forgets everything: the next dot starts a new record (a restart or
    /// a ring change).
    pub fn reset(&mut self) {
        *self = Issued::default();
    }

    /// Records own dot `c`, issued for a key `peers` replicate.
    pub fn record(&mut self, c: u64, peers: impl IntoIterator<Item = ReplicaId>) {
        let from = self.from.expect("started before the first dot");
        debug_assert!(c > from, "dot {c} at or below the start {from}");
        for peer in peers {
            let (since, dots) = self
                .per_peer
                .entry(peer)
                .or_insert_with(|| (from, VecDeque::new()));
            dots.push_back(c);
            if dots.len() > SKIP_HINT_DOTS {
                *since = dots.pop_front().expect("over the bound");
            }
        }
    }

    /// The hint for own dot `c` sent to `peer`, when the record still
    /// covers it.
    pub fn hint(&self, peer: ReplicaId, dot: Dot) -> Option<Skips> {
        let from = self.from?;
        let (since, mine) = match self.per_peer.get(&peer) {
            Some((since, dots)) => (
                *since,
                dots.iter().copied().filter(|&d| d < dot.counter).collect(),
            ),
            None => (from, Vec::new()),
        };
        (dot.counter > since).then_some(Skips { dot, since, mine })
    }
}

impl NodeState {
    /// The skip hint to send with the replication of own dot `dot` to
    /// `to` (none for another replica's dot, one the record no longer
    /// covers, or a receiver this replica's ring does not list: the
    /// record knows only the keys of the ring it was kept under).
    pub fn skips_for(&self, to: ReplicaId, dot: Dot) -> Option<Skips> {
        if dot.id != self.id || to == self.id || !self.ring.members().contains(&to) {
            return None;
        }
        let mut skips = self.issued.hint(to, dot)?;
        if self.bug == DottedBug::SkipsOwnKeys {
            skips.mine.clear();
        }
        Some(skips)
    }

    /// Applies the skip hint that came with the replication of its dot
    /// `(n, c)`: every counter of `n` in `(since, c)` not in `mine` counts
    /// as seen. Returns the counters added.
    pub fn note_skips(&mut self, skips: &Skips) -> u64 {
        let (from, c) = (skips.dot.id, skips.dot.counter);
        if from == self.id || self.closed.contains(&from) || !self.ring.members().contains(&from) {
            return 0;
        }
        let low = skips.since.max(self.clock.base(from)) + 1;
        let high = c.min(low.saturating_add(SKIP_HINT_SPAN_MAX));
        let mut added = 0;
        for x in low..high {
            if skips.mine.contains(&x) {
                continue;
            }
            // Beyond the bitmap bound the dot stays a gap: anti-entropy
            // closes it later.
            if self.clock.add(Dot::new(from, x)) {
                added += 1;
            }
        }
        added
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_vectors::id;

    #[test]
    fn a_hint_lists_every_dot_for_the_peer_since_its_start() {
        let mut issued = Issued::default();
        let d = |c| Dot::new(id('a'), c);
        assert_eq!(issued.hint(id('b'), d(5)), None, "not started");
        issued.start(4);
        issued.record(5, [id('b')]);
        issued.record(6, [id('c')]);
        issued.record(7, [id('b'), id('c')]);
        let hint = |since, mine| {
            Some(Skips {
                dot: d(7),
                since,
                mine,
            })
        };
        assert_eq!(issued.hint(id('b'), d(7)), hint(4, vec![5]));
        assert_eq!(issued.hint(id('c'), d(7)), hint(4, vec![6]));
        assert_eq!(
            issued.hint(id('d'), d(7)),
            hint(4, vec![]),
            "nothing issued for d since 4"
        );
        for c in 8..8 + SKIP_HINT_DOTS as u64 {
            issued.record(c, [id('b')]);
        }
        let hint = issued.hint(id('b'), d(15)).expect("covered");
        assert_eq!(hint.since, 7, "the oldest dots fell out");
        assert_eq!(hint.mine, (8..15).collect::<Vec<_>>());
        assert_eq!(issued.hint(id('b'), d(7)), None, "no longer covered");
        issued.reset();
        assert_eq!(issued.hint(id('b'), d(15)), None);
    }
}
