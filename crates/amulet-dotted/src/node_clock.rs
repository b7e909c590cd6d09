//! The node clock, NC (DottedDB §IV-B, §IV-D 1): every dot this replica
//! has seen, directly (it coordinated the update) or transitively (by
//! replication or anti-entropy), as one [`ClockEntry`] per replica id.
//!
//! It is what lets objects drop their causal past (strip) and get it back
//! (fill), what stands in for the tombstones of deleted keys, and what
//! anti-entropy compares.

use crate::clock_entry::ClockEntry;
use crate::dot::{Dot, ReplicaId};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A node clock (the clock library's bitmapped version vector).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeClock {
    /// Empty entries are never stored, so equal clocks are equal values.
    entries: BTreeMap<ReplicaId, ClockEntry>,
}

impl NodeClock {
    /// A clock that has seen nothing.
    pub fn new() -> NodeClock {
        NodeClock::default()
    }

    /// The entry of `id` (empty when nothing was seen from it).
    pub fn entry(&self, id: ReplicaId) -> ClockEntry {
        self.entries.get(&id).cloned().unwrap_or_default()
    }

    /// The base of `id`'s entry: every counter `1..=base` was seen.
    pub fn base(&self, id: ReplicaId) -> u64 {
        self.entries.get(&id).map_or(0, ClockEntry::base)
    }

    /// Whether `dot` was seen.
    pub fn contains(&self, dot: Dot) -> bool {
        self.entries
            .get(&dot.id)
            .is_some_and(|e| e.contains(dot.counter))
    }

    /// Records `dot`; false when it lies beyond the entry's bitmap bound
    /// and was not recorded (see [`crate::clock_entry::BITMAP_WORDS_MAX`]).
    pub fn add(&mut self, dot: Dot) -> bool {
        self.entries.entry(dot.id).or_default().add(dot.counter)
    }

    /// A new dot of replica `id`, which must be this clock's own replica:
    /// a replica has seen every dot it issued, so its own entry has no
    /// gaps and the next counter is its base plus one.
    pub fn event(&mut self, id: ReplicaId) -> Dot {
        let entry = self.entries.entry(id).or_default();
        assert!(
            !entry.has_gaps(),
            "{id}'s own entry has gaps: it issued a dot it does not know"
        );
        let dot = Dot::new(id, entry.base() + 1);
        entry.add(dot.counter);
        dot
    }

    /// Unites `entry` into the entry of `id`.
    pub fn join_entry(&mut self, id: ReplicaId, entry: &ClockEntry) {
        let joined = self.entry(id).join(entry);
        if joined != ClockEntry::default() {
            self.entries.insert(id, joined);
        }
    }

    /// Unites every entry of `other` into this clock (the clock library's
    /// `merge`).
    pub fn merge(&mut self, other: &NodeClock) {
        for (id, entry) in &other.entries {
            self.join_entry(*id, entry);
        }
    }

    /// The clock reduced to its bases (what the watermark keeps).
    pub fn bases(&self) -> impl Iterator<Item = (ReplicaId, u64)> + '_ {
        self.entries.iter().map(|(id, e)| (*id, e.base()))
    }

    /// The clock with every bitmap dropped: what a sync reply carries.
    /// The asker reads nothing but bases from it (fill, closing the
    /// answerer's own entry, which never has gaps, and the watermark), so
    /// the bitmaps, the bulk of a clock under load, stay home.
    pub fn without_bitmaps(&self) -> NodeClock {
        let entries = self
            .entries
            .iter()
            .map(|(id, e)| (*id, ClockEntry::from_base(e.base())))
            .filter(|(_, e)| *e != ClockEntry::default())
            .collect();
        NodeClock { entries }
    }

    /// The clock restricted to the entries `keep` selects: what a sync
    /// request carries (the entries the answerer compares).
    pub fn restricted(&self, mut keep: impl FnMut(ReplicaId) -> bool) -> NodeClock {
        let entries = self
            .entries
            .iter()
            .filter(|(id, _)| keep(**id))
            .map(|(id, e)| (*id, e.clone()))
            .collect();
        NodeClock { entries }
    }

    /// The largest counter seen from each replica id.
    pub fn maxes(&self) -> BTreeMap<ReplicaId, u64> {
        self.entries.iter().map(|(id, e)| (*id, e.max())).collect()
    }

    /// The replica ids with an entry.
    pub fn ids(&self) -> impl Iterator<Item = ReplicaId> + '_ {
        self.entries.keys().copied()
    }

    /// The entries, by id.
    pub fn entries(&self) -> impl Iterator<Item = (ReplicaId, &ClockEntry)> + '_ {
        self.entries.iter().map(|(id, e)| (*id, e))
    }

    /// Forgets a retired replica id (its dots are in every base that
    /// matters by then; DottedDB §IV key idea 3).
    pub fn retire(&mut self, id: ReplicaId) {
        self.entries.remove(&id);
    }

    /// Bitmap words over all entries (metrics: gaps anti-entropy has yet
    /// to close).
    pub fn bitmap_words(&self) -> usize {
        self.entries.values().map(ClockEntry::bitmap_words).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_vectors::{clock, id};

    // Vectors from the authors' clock library (swc_node's eunit tests:
    // merge, base, event).

    #[test]
    fn dotteddb_iv_b_merging_clocks_unites_every_entry() {
        let mut a = clock(&[('a', 5, 3)]);
        a.merge(&clock(&[('a', 2, 4)]));
        assert_eq!(a, clock(&[('a', 7, 0)]));
        let mut a = clock(&[('a', 5, 3)]);
        a.merge(&clock(&[('b', 2, 4)]));
        assert_eq!(a, clock(&[('a', 7, 0), ('b', 2, 4)]));
        let mut a = clock(&[('a', 5, 3), ('c', 1, 2)]);
        a.merge(&clock(&[('b', 2, 4), ('d', 5, 3)]));
        assert_eq!(
            a,
            clock(&[('a', 7, 0), ('b', 2, 4), ('c', 1, 2), ('d', 7, 0)])
        );
        let mut a = clock(&[('a', 5, 3), ('c', 1, 2)]);
        a.merge(&clock(&[('b', 2, 4), ('c', 5, 3)]));
        assert_eq!(a, clock(&[('a', 7, 0), ('b', 2, 4), ('c', 7, 0)]));
    }

    #[test]
    fn dotteddb_iv_b_the_base_of_an_entry_ignores_its_gaps() {
        let c = clock(&[('a', 5, 3), ('b', 2, 4), ('c', 1, 2), ('d', 5, 2)]);
        let bases: Vec<_> = c.bases().collect();
        assert_eq!(
            bases,
            vec![(id('a'), 7), (id('b'), 2), (id('c'), 1), (id('d'), 5)]
        );
    }

    #[test]
    fn dotteddb_iv_e_a_replica_issues_the_next_counter_of_its_own_entry() {
        let mut c = clock(&[('a', 7, 0)]);
        assert_eq!(c.event(id('a')), Dot::new(id('a'), 8));
        assert_eq!(c, clock(&[('a', 8, 0)]));
        let mut c = clock(&[('a', 5, 3)]);
        assert_eq!(c.event(id('b')), Dot::new(id('b'), 1));
        assert_eq!(c, clock(&[('a', 5, 3), ('b', 1, 0)]));
        let mut c = clock(&[('a', 5, 3), ('b', 2, 0), ('c', 1, 2), ('d', 5, 3)]);
        assert_eq!(c.event(id('b')), Dot::new(id('b'), 3));
        assert_eq!(
            c,
            clock(&[('a', 5, 3), ('b', 3, 0), ('c', 1, 2), ('d', 5, 3)])
        );
    }

    #[test]
    fn dotteddb_iv_g_missing_dots_per_entry_match_the_clock_library() {
        let b1 = clock(&[
            ('a', 12, 0),
            ('b', 7, 0),
            ('c', 4, 0),
            ('d', 5, 0),
            ('e', 5, 0),
            ('f', 7, 10),
            ('g', 5, 10),
            ('h', 5, 14),
        ]);
        let b2 = clock(&[
            ('a', 5, 14),
            ('b', 5, 14),
            ('c', 5, 14),
            ('d', 5, 14),
            ('e', 15, 0),
            ('f', 5, 14),
            ('g', 7, 10),
            ('h', 7, 10),
        ]);
        let missing: Vec<(char, Vec<u64>)> = "abcdefgh"
            .chars()
            .map(|n| {
                let (mine, theirs) = (b1.entry(id(n)), b2.entry(id(n)));
                (n, mine.missing_from(&theirs).collect())
            })
            .filter(|(_, m): &(char, Vec<u64>)| !m.is_empty())
            .collect();
        assert_eq!(
            missing,
            vec![
                ('a', vec![6, 10, 11, 12]),
                ('b', vec![6]),
                ('f', vec![6, 11]),
                ('h', vec![8]),
            ]
        );
        let lone = clock(&[('a', 2, 2), ('b', 3, 0)]);
        let empty = NodeClock::new();
        assert_eq!(
            lone.entry(id('a'))
                .missing_from(&empty.entry(id('a')))
                .collect::<Vec<_>>(),
            vec![1, 2, 4]
        );
    }

    #[test]
    #[should_panic(expected = "own entry has gaps")]
    fn a_replica_whose_own_entry_has_gaps_refuses_to_issue_a_dot() {
        let mut c = clock(&[('a', 2, 2)]);
        c.event(id('a'));
    }
}
