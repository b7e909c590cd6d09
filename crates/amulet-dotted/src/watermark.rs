//! The watermark, WM (DottedDB §IV-D 3): for each peer (this replica
//! included), the bases of that peer's node clock as last reported in an
//! anti-entropy exchange. A dot whose counter is at most every peer's
//! base for its replica is known everywhere it is needed, so its dot-key
//! entry can go. Only bases are kept (a matrix), which delays that
//! garbage collection a little and costs nothing else.

use crate::dot::ReplicaId;
use crate::node_clock::NodeClock;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// peer → (replica id → base of that peer's entry for it).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Watermark {
    rows: BTreeMap<ReplicaId, BTreeMap<ReplicaId, u64>>,
}

impl Watermark {
    /// A watermark that knows nothing.
    pub fn new() -> Watermark {
        Watermark::default()
    }

    /// Raises `WM[peer][id]` to at least `base`.
    pub fn update_cell(&mut self, peer: ReplicaId, id: ReplicaId, base: u64) {
        let cell = self.rows.entry(peer).or_default().entry(id).or_insert(0);
        *cell = (*cell).max(base);
    }

    /// Raises `peer`'s row to the bases of its clock, for the ids in
    /// `relevant` (Alg. 3: `n ∈ dom(NC_p) ∩ peers(i)`).
    pub fn update_peer(&mut self, peer: ReplicaId, clock: &NodeClock, relevant: &[ReplicaId]) {
        for (id, base) in clock.bases() {
            if relevant.contains(&id) {
                self.update_cell(peer, id, base);
            }
        }
    }

    /// `WM[peer][id]` (0 when never reported).
    pub fn get(&self, peer: ReplicaId, id: ReplicaId) -> u64 {
        self.rows
            .get(&peer)
            .and_then(|row| row.get(&id))
            .copied()
            .unwrap_or(0)
    }

    /// The smallest base any of `peers` reported for `id` (0 when `peers`
    /// is empty or one of them never reported): every peer in `peers` has
    /// seen `id`'s dots up to it.
    pub fn min_over(&self, id: ReplicaId, peers: &[ReplicaId]) -> u64 {
        peers.iter().map(|&p| self.get(p, id)).min().unwrap_or(0)
    }

    /// Forgets a retired replica id, as a row and as a column.
    pub fn retire(&mut self, id: ReplicaId) {
        self.rows.remove(&id);
        for row in self.rows.values_mut() {
            row.remove(&id);
        }
    }

    /// Cells held (metrics).
    pub fn cells(&self) -> usize {
        self.rows.values().map(BTreeMap::len).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dot::Dot;
    use crate::test_vectors::id;

    // The clock library's update vectors (swc_watermark update_test,
    // min_test, get_test), for the cells this replica uses.
    #[test]
    fn dotteddb_iv_g_a_watermark_cell_only_grows() {
        let mut m = Watermark::new();
        m.update_cell(id('a'), id('b'), 4);
        m.update_cell(id('a'), id('c'), 10);
        m.update_cell(id('c'), id('c'), 2);
        m.update_cell(id('c'), id('c'), 20);
        m.update_cell(id('c'), id('c'), 15);
        assert_eq!(m.get(id('c'), id('c')), 20);
        assert_eq!(m.get(id('a'), id('c')), 10);
        assert_eq!(m.get(id('a'), id('a')), 0);
        assert_eq!(m.get(id('b'), id('a')), 0);
        let mut c1 = NodeClock::new();
        for c in 1..=12 {
            c1.add(Dot::new(id('a'), c));
        }
        for c in 1..=7 {
            c1.add(Dot::new(id('b'), c));
        }
        c1.add(Dot::new(id('c'), 4));
        let mut m10 = m.clone();
        m10.update_peer(id('a'), &c1, &[id('b'), id('c')]);
        assert_eq!(m10.get(id('a'), id('b')), 7, "raised");
        assert_eq!(m10.get(id('a'), id('c')), 10, "never lowered");
        assert_eq!(m10.get(id('a'), id('a')), 0, "a is not relevant");
        assert_eq!(m.min_over(id('c'), &[id('a'), id('c')]), 10);
        assert_eq!(m.min_over(id('c'), &[id('a'), id('c'), id('z')]), 0);
        assert_eq!(m.min_over(id('c'), &[]), 0);
    }
}
