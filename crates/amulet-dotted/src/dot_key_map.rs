//! The dot-key map, DKM (DottedDB §IV-D 2): which key each locally stored
//! version's dot belongs to, so anti-entropy can turn the dots a peer is
//! missing into the keys to send. An entry goes once every peer of the
//! dot's replica has the dot (the watermark says so).

use crate::dot::{Dot, ReplicaId};
use crate::watermark::Watermark;
use bytes::Bytes;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Dot → key, grouped by replica id and ordered by counter.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DotKeyMap {
    /// Empty inner maps are never kept.
    by_id: BTreeMap<ReplicaId, BTreeMap<u64, Bytes>>,
    /// Entries over all ids.
    len: usize,
    /// Per id, the largest counter pruned (for the invariants: a
    /// version's entry is here or no newer than a pruned one).
    pruned_through: BTreeMap<ReplicaId, u64>,
}

impl DotKeyMap {
    /// An empty map.
    pub fn new() -> DotKeyMap {
        DotKeyMap::default()
    }

    /// Records that `dot` is a version of `key`.
    pub fn add(&mut self, dot: Dot, key: &Bytes) {
        let old = self
            .by_id
            .entry(dot.id)
            .or_default()
            .insert(dot.counter, key.clone());
        match old {
            None => self.len += 1,
            Some(old) => assert_eq!(&old, key, "dot {dot} names two keys"),
        }
    }

    /// The key of `dot`, when still mapped.
    pub fn get(&self, dot: Dot) -> Option<&Bytes> {
        self.by_id.get(&dot.id)?.get(&dot.counter)
    }

    /// Entries held.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether no entry is held.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Removes every dot `(n, c)` that every replica which could ask for
    /// it has (Alg. 3's last loop): all of `n`'s dots up to the smallest
    /// base any peer of `n` reported for `n`, and above that each dot whose
    /// key's own replicas all reported a base for `n` at least its counter
    /// (`known_for_key(n, key)`: the smallest base they reported). Only a replica of the key ever receives it from
    /// this map (anti-entropy sends an asker only keys it holds), and a
    /// replica's base never falls (a lost store takes a new id), so the
    /// other peers of `n` need not be waited for. Returns the entries
    /// removed.
    pub fn prune(
        &mut self,
        watermark: &Watermark,
        peers_of: impl Fn(ReplicaId) -> Vec<ReplicaId>,
        known_for_key: impl Fn(ReplicaId, &Bytes) -> u64,
    ) -> usize {
        let mut removed = 0;
        let pruned_through = &mut self.pruned_through;
        self.by_id.retain(|&n, dots| {
            let peers = peers_of(n);
            let known_by_all = watermark.min_over(n, &peers);
            let kept = dots.split_off(&(known_by_all.saturating_add(1)));
            if !dots.is_empty() {
                let through = pruned_through.entry(n).or_insert(0);
                *through = (*through).max(known_by_all);
            }
            removed += dots.len();
            *dots = kept;
            // A key's replicas are among `n`'s peers, so no dot above the
            // largest base any of them reported can go.
            let known_by_some = peers
                .iter()
                .map(|&p| watermark.get(p, n))
                .max()
                .unwrap_or(0);
            let mut above = dots.split_off(&(known_by_some.saturating_add(1)));
            let mut highest = 0;
            let before = dots.len();
            dots.retain(|&c, key| {
                let keep = known_for_key(n, key) < c;
                if !keep {
                    highest = c;
                }
                keep
            });
            removed += before - dots.len();
            dots.append(&mut above);
            if highest > 0 {
                let through = pruned_through.entry(n).or_insert(0);
                *through = (*through).max(highest);
            }
            !dots.is_empty()
        });
        self.len -= removed;
        removed
    }

    /// Every entry (invariants and tests).
    pub fn iter(&self) -> impl Iterator<Item = (Dot, &Bytes)> + '_ {
        self.by_id
            .iter()
            .flat_map(|(id, dots)| dots.iter().map(|(c, k)| (Dot::new(*id, *c), k)))
    }

    /// The counters of `id`'s entries above `after` and at most
    /// `through`, ascending.
    pub fn counters(
        &self,
        id: ReplicaId,
        after: u64,
        through: u64,
    ) -> impl Iterator<Item = u64> + '_ {
        self.by_id
            .get(&id)
            .filter(|_| after < through)
            .into_iter()
            .flat_map(move |dots| dots.range(after + 1..=through).map(|(c, _)| *c))
    }

    /// Forgets a retired replica id's entries.
    pub fn retire(&mut self, id: ReplicaId) {
        if let Some(dots) = self.by_id.remove(&id) {
            self.len -= dots.len();
        }
        self.pruned_through.remove(&id);
    }

    /// Whether `dot`'s entry is here or was pruned.
    pub fn holds_or_pruned(&self, dot: Dot) -> bool {
        self.get(dot).is_some()
            || dot.counter <= self.pruned_through.get(&dot.id).copied().unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_vectors::id;

    fn key(k: &'static str) -> Bytes {
        Bytes::from_static(k.as_bytes())
    }

    /// K5 of the clock library's swc_dotkeymap tests.
    fn k5() -> DotKeyMap {
        let mut d = DotKeyMap::new();
        d.add(Dot::new(id('a'), 1), &key("k1"));
        d.add(Dot::new(id('a'), 2), &key("k2"));
        d.add(Dot::new(id('b'), 4), &key("kb"));
        d.add(Dot::new(id('b'), 2), &key("kb2"));
        d.add(Dot::new(id('c'), 20), &key("kc"));
        d
    }

    fn remaining(d: &DotKeyMap) -> Vec<(char, u64)> {
        d.iter()
            .map(|(dot, _)| (char::from_u32(dot.id.0 as u32).unwrap(), dot.counter))
            .collect()
    }

    // The clock library's prune vectors (swc_dotkeymap prune_test): the
    // watermark row of a peer `p` holds what `p` reported; the minimum is
    // over the rows that hold a column for the dot's id.
    #[test]
    fn dotteddb_iv_g_entries_known_by_every_peer_are_pruned() {
        let peers_of = |_n: ReplicaId| Vec::new();
        let mut wm = Watermark::new();
        let mut d = k5();
        assert_eq!(d.prune(&wm, peers_of, |_, _| 0), 0);
        assert_eq!(d.len(), 5);
        wm.update_cell(id('a'), id('c'), 1);
        assert_eq!(
            d.clone().prune(&wm, |_| vec![id('a')], |_, _| 0),
            0,
            "row a has no column a yet"
        );
        wm.update_cell(id('a'), id('a'), 2);
        let mut pruned = k5();
        assert_eq!(pruned.prune(&wm, |_| vec![id('a')], |_, _| 0), 2);
        assert_eq!(remaining(&pruned), vec![('b', 2), ('b', 4), ('c', 20)]);
        d.prune(
            &wm,
            |n| {
                if n == id('a') {
                    vec![id('a')]
                } else {
                    vec![id('a'), id('z')]
                }
            },
            |_, _| 0,
        );
        assert_eq!(remaining(&d), vec![('b', 2), ('b', 4), ('c', 20)]);
        wm.update_cell(id('b'), id('b'), 10);
        wm.update_cell(id('z'), id('c'), 190);
        wm.update_cell(id('c'), id('c'), 200);
        d.prune(
            &wm,
            |n| match n {
                n if n == id('b') => vec![id('b')],
                n if n == id('c') => vec![id('z'), id('c')],
                _ => vec![],
            },
            |_, _| 0,
        );
        assert!(d.is_empty());
    }

    // A dot whose key's own replicas all have it goes before every peer
    // of its replica id has reported: only a replica of the key is ever
    // sent the key by anti-entropy.
    #[test]
    fn dotteddb_iv_g_an_entry_goes_once_its_keys_replicas_have_the_dot() {
        let peers = |_n: ReplicaId| vec![id('a'), id('b'), id('c'), id('d')];
        let replicas = |k: &Bytes| match &k[..] {
            b"ab" => vec![id('a'), id('b')],
            _ => vec![id('c'), id('d')],
        };
        let mut d = DotKeyMap::new();
        d.add(Dot::new(id('a'), 1), &key("ab"));
        d.add(Dot::new(id('a'), 2), &key("cd"));
        d.add(Dot::new(id('a'), 3), &key("ab"));
        let mut wm = Watermark::new();
        wm.update_cell(id('a'), id('a'), 3);
        wm.update_cell(id('b'), id('a'), 2);
        assert_eq!(
            d.prune(&wm, peers, |n, k| wm.min_over(n, &replicas(k))),
            1,
            "c and d never reported"
        );
        assert_eq!(remaining(&d), vec![('a', 2), ('a', 3)]);
        assert!(d.holds_or_pruned(Dot::new(id('a'), 1)));
        wm.update_cell(id('c'), id('a'), 1);
        wm.update_cell(id('d'), id('a'), 9);
        assert_eq!(
            d.prune(&wm, peers, |n, k| wm.min_over(n, &replicas(k))),
            0,
            "c lacks a:2"
        );
        wm.update_cell(id('c'), id('a'), 2);
        assert_eq!(d.prune(&wm, peers, |n, k| wm.min_over(n, &replicas(k))), 1);
        assert_eq!(remaining(&d), vec![('a', 3)], "b lacks a:3");
        wm.update_cell(id('b'), id('a'), 3);
        assert_eq!(d.prune(&wm, peers, |n, k| wm.min_over(n, &replicas(k))), 1);
        assert!(d.is_empty());
    }
}
