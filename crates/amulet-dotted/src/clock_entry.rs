//! One replica's entry in a node clock (DottedDB §IV-B): the counters seen
//! from that replica as a *base* (every counter `1..=base`) plus a bitmap
//! of the counters seen above it. Counters are issued consecutively, so
//! the bitmap only holds the gaps anti-entropy has not filled yet.
//!
//! Normalised after every change: the bit right above the base is never
//! set (it would extend the base) and there is no trailing zero word, so
//! two entries holding the same counters are equal.

use serde::{Deserialize, Serialize};

/// Words a bitmap may grow to: 2^20 counters above the base (128 KiB). A
/// counter further above is not recorded: a clock that does not record a
/// dot only makes anti-entropy send that dot's key again (merging is
/// idempotent), never loses one.
pub const BITMAP_WORDS_MAX: usize = 1 << 14;

/// The counters seen from one replica.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ClockEntry {
    /// Every counter in `1..=base` was seen.
    base: u64,
    /// Bit `i` (word `i / 64`, bit `i % 64`) is counter `base + 1 + i`.
    bits: Vec<u64>,
}

impl ClockEntry {
    /// An entry holding exactly `1..=base`.
    pub fn from_base(base: u64) -> ClockEntry {
        ClockEntry {
            base,
            bits: Vec::new(),
        }
    }

    /// The largest `b` with every counter in `1..=b` seen.
    pub fn base(&self) -> u64 {
        self.base
    }

    /// Whether counters above the base were seen (gaps remain).
    pub fn has_gaps(&self) -> bool {
        !self.bits.is_empty()
    }

    /// Words of the bitmap (for metrics and invariants).
    pub fn bitmap_words(&self) -> usize {
        self.bits.len()
    }

    /// Whether counter `c` was seen.
    pub fn contains(&self, c: u64) -> bool {
        if c == 0 || c <= self.base {
            return true;
        }
        let i = c - self.base - 1;
        let word = (i / 64) as usize;
        word < self.bits.len() && self.bits[word] & (1 << (i % 64)) != 0
    }

    /// The largest counter seen (0 when none).
    pub fn max(&self) -> u64 {
        match self.bits.last() {
            None => self.base,
            Some(&word) => {
                let top = 63 - u64::from(word.leading_zeros());
                self.base + 1 + (self.bits.len() as u64 - 1) * 64 + top
            }
        }
    }

    /// Records counter `c`; false when it lies beyond the bitmap's bound
    /// and was not recorded.
    pub fn add(&mut self, c: u64) -> bool {
        if c <= self.base {
            return true;
        }
        let i = c - self.base - 1;
        let word = (i / 64) as usize;
        if word >= BITMAP_WORDS_MAX {
            return false;
        }
        if word >= self.bits.len() {
            self.bits.resize(word + 1, 0);
        }
        self.bits[word] |= 1 << (i % 64);
        self.normalise();
        true
    }

    /// The union of both entries' counters.
    pub fn join(&self, other: &ClockEntry) -> ClockEntry {
        let base = self.base.max(other.base);
        let mut mine = self.bits_above(base);
        let theirs = other.bits_above(base);
        if theirs.len() > mine.len() {
            mine.resize(theirs.len(), 0);
        }
        for (word, their) in mine.iter_mut().zip(&theirs) {
            *word |= their;
        }
        let mut joined = ClockEntry { base, bits: mine };
        joined.normalise();
        joined
    }

    /// The counters of this entry that are at most `c`.
    pub fn up_to(&self, c: u64) -> ClockEntry {
        if c <= self.base {
            return ClockEntry::from_base(c);
        }
        // Bit i is counter base + 1 + i: keep the bits below `kept`.
        let kept = c - self.base;
        let (full, rest) = ((kept / 64) as usize, kept % 64);
        let mut bits = self.bits.clone();
        bits.truncate(full + usize::from(rest > 0));
        if rest > 0 && bits.len() == full + 1 {
            bits[full] &= (1u64 << rest) - 1;
        }
        let mut entry = ClockEntry {
            base: self.base,
            bits,
        };
        entry.normalise();
        entry
    }

    /// The counters seen here and not in `other`, ascending, lazily (a
    /// fresh peer misses millions; callers stop at their budget).
    pub fn missing_from<'a>(&'a self, other: &'a ClockEntry) -> impl Iterator<Item = u64> + 'a {
        (other.base + 1..=self.max()).filter(move |&c| self.contains(c) && !other.contains(c))
    }

    /// Every counter seen, ascending (tests and small entries only).
    pub fn counters(&self) -> Vec<u64> {
        (1..=self.max()).filter(|&c| self.contains(c)).collect()
    }

    /// The bitmap re-based at `base` (which is at least `self.base`):
    /// counters at or below it are dropped.
    fn bits_above(&self, base: u64) -> Vec<u64> {
        debug_assert!(base >= self.base);
        shifted_right(&self.bits, base - self.base)
    }

    /// Moves the run of counters right above the base into the base and
    /// drops trailing zero words.
    fn normalise(&mut self) {
        let mut run = 0u64;
        for &word in &self.bits {
            let ones = u64::from(word.trailing_ones());
            run += ones;
            if ones < 64 {
                break;
            }
        }
        if run > 0 {
            self.bits = shifted_right(&self.bits, run);
            self.base += run;
        }
        while self.bits.last() == Some(&0) {
            self.bits.pop();
        }
        debug_assert!(self.bits.first().is_none_or(|w| w & 1 == 0));
    }
}

/// `bits` shifted towards bit 0 by `by` bits.
fn shifted_right(bits: &[u64], by: u64) -> Vec<u64> {
    let words = (by / 64) as usize;
    let shift = (by % 64) as u32;
    if words >= bits.len() {
        return Vec::new();
    }
    let rest = &bits[words..];
    let mut out = Vec::with_capacity(rest.len());
    for (i, &word) in rest.iter().enumerate() {
        let high = if shift == 0 {
            0
        } else {
            rest.get(i + 1).map_or(0, |next| next << (64 - shift))
        };
        out.push((word >> shift) | high);
    }
    while out.last() == Some(&0) {
        out.pop();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_vectors::entry;

    fn pair(e: &ClockEntry) -> (u64, u64) {
        assert!(e.bits.len() <= 1);
        (e.base, e.bits.first().copied().unwrap_or(0))
    }

    // Vectors from the authors' clock library (ServerWideClocks,
    // swc_node's eunit tests: norm, values, add_aux, join_aux,
    // subtract_dots), in its {base, bitmap} notation.

    #[test]
    fn dotteddb_iv_b_an_entry_is_normalised_into_its_base() {
        assert_eq!(pair(&entry(5, 3)), (7, 0));
        assert_eq!(pair(&entry(5, 2)), (5, 2));
        assert_eq!(entry(0, 0), ClockEntry::default());
    }

    #[test]
    fn dotteddb_iv_b_an_entry_holds_its_base_and_its_bits() {
        assert_eq!(entry(0, 0).counters(), Vec::<u64>::new());
        assert_eq!(entry(5, 3).counters(), vec![1, 2, 3, 4, 5, 6, 7]);
        assert_eq!(entry(2, 5).counters(), vec![1, 2, 3, 5]);
    }

    #[test]
    fn dotteddb_iv_b_adding_a_counter_extends_the_base_or_sets_a_bit() {
        let add = |base, bitmap, c| {
            let mut e = entry(base, bitmap);
            e.add(c);
            pair(&e)
        };
        assert_eq!(add(5, 3, 8), (8, 0));
        assert_eq!(add(5, 3, 7), (7, 0));
        assert_eq!(add(5, 3, 4), (7, 0));
        assert_eq!(add(2, 5, 4), (5, 0));
        assert_eq!(add(2, 5, 6), (3, 6));
        assert_eq!(add(2, 4, 6), (2, 12));
        assert_eq!(add(0, 0, 8), (0, 128));
    }

    #[test]
    fn dotteddb_iv_b_joining_entries_unites_their_counters() {
        let join = |a: (u64, u64), b: (u64, u64)| pair(&entry(a.0, a.1).join(&entry(b.0, b.1)));
        assert_eq!(join((5, 3), (2, 4)), join((2, 4), (5, 3)));
        assert_eq!(join((5, 3), (2, 4)), (7, 0));
        assert_eq!(join((2, 2), (3, 0)), (4, 0));
        assert_eq!(join((2, 2), (3, 1)), (4, 0));
        assert_eq!(join((2, 2), (3, 2)), (5, 0));
        assert_eq!(join((2, 2), (3, 4)), (4, 2));
        assert_eq!(join((3, 2), (1, 4)), (5, 0));
        assert_eq!(join((3, 2), (1, 16)), (3, 6));
    }

    #[test]
    fn dotteddb_iv_g_missing_counters_are_a_set_difference() {
        let missing = |a: (u64, u64), b: (u64, u64)| {
            let (a, b) = (entry(a.0, a.1), entry(b.0, b.1));
            a.missing_from(&b).collect::<Vec<_>>()
        };
        assert_eq!(missing((12, 0), (5, 14)), vec![6, 10, 11, 12]);
        assert_eq!(missing((7, 0), (5, 14)), vec![6]);
        assert_eq!(missing((4, 0), (5, 14)), Vec::<u64>::new());
        assert_eq!(missing((5, 0), (5, 14)), Vec::<u64>::new());
        assert_eq!(missing((5, 0), (15, 0)), Vec::<u64>::new());
        assert_eq!(missing((7, 10), (5, 14)), vec![6, 11]);
        assert_eq!(missing((5, 10), (7, 10)), Vec::<u64>::new());
        assert_eq!(missing((5, 14), (7, 10)), vec![8]);
    }

    #[test]
    fn an_entry_cut_at_a_counter_keeps_what_lies_at_or_below_it() {
        let e = entry(2, 0b1011_0100);
        assert_eq!(e.counters(), vec![1, 2, 5, 7, 8, 10]);
        assert_eq!(e.up_to(8).counters(), vec![1, 2, 5, 7, 8]);
        assert_eq!(e.up_to(1).counters(), vec![1]);
        assert_eq!(e.up_to(100), e);
        let mut far = ClockEntry::from_base(3);
        far.add(3 + 64 * 3 + 5);
        assert_eq!(far.up_to(3 + 64 * 3 + 4), ClockEntry::from_base(3));
        assert_eq!(far.max(), 3 + 64 * 3 + 5);
    }

    #[test]
    fn a_counter_beyond_the_bitmap_bound_is_not_recorded() {
        let mut e = ClockEntry::from_base(10);
        assert!(!e.add(10 + 1 + 64 * BITMAP_WORDS_MAX as u64));
        assert!(!e.contains(10 + 1 + 64 * BITMAP_WORDS_MAX as u64));
        assert!(e.add(10 + 64 * BITMAP_WORDS_MAX as u64));
        assert_eq!(e.bitmap_words(), BITMAP_WORDS_MAX);
    }
}
