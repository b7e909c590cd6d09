//! What a replica executed since the balancer last looked (docs/dynatree.md,
//! "Splits by load"): how many commands, and a sample of the keys they
//! named, so that a hot range can be cut at its median key by load rather
//! than by size (DynaTree's oracle splits "past a load threshold").
//!
//! The sample needs no generator, so that every run of a seed samples the
//! same keys: the n-th keyed command is kept when a hash of n is a
//! multiple of `stride` (a power of two), and when [`LOAD_SAMPLES_MAX`]
//! are kept the stride doubles and those no longer multiples are dropped.
//! Each kept key so stands for about the same number of commands, and the
//! sample's median is the load's median, in bounded memory and O(1) per
//! command (the execution hot path). Hashing n, not keeping every
//! `stride`-th command, is what keeps a periodic workload (a client
//! cycling over four keys) from being sampled at one phase only.

use bytes::Bytes;

/// Keys kept at most (then thinned to half).
pub const LOAD_SAMPLES_MAX: usize = 64;

/// Commands executed and a systematic sample of their keys.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LoadSample {
    /// Commands executed (keyed or not: a scan is load too).
    ops: u64,
    /// Keyed commands seen, for the stride.
    keyed: u64,
    /// A power of two: about one in `stride` keyed commands is kept; 0
    /// stands for 1.
    stride: u64,
    /// The kept keys with their keyspace, in the order executed, and the
    /// hash that kept them.
    samples: Vec<(u64, String, Bytes)>,
}

/// SplitMix64's finalizer: a bijection that spreads consecutive numbers.
fn mix(mut x: u64) -> u64 {
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

impl LoadSample {
    /// Counts one executed command; `key` is the one it names, if it names
    /// one key of a keyspace (the first, for several).
    pub fn record(&mut self, key: Option<(&str, &Bytes)>) {
        self.ops += 1;
        let Some((keyspace, key)) = key else {
            return;
        };
        self.keyed += 1;
        let hash = mix(self.keyed);
        let mut stride = self.stride.max(1);
        if hash & (stride - 1) != 0 {
            return;
        }
        self.samples.push((hash, keyspace.to_owned(), key.clone()));
        while self.samples.len() >= LOAD_SAMPLES_MAX && stride < 1 << 62 {
            // Keep those a stride twice as long keeps.
            stride *= 2;
            self.samples.retain(|(hash, _, _)| hash & (stride - 1) == 0);
        }
        self.stride = stride;
        debug_assert!(self.samples.iter().all(|(h, _, _)| h & (stride - 1) == 0));
    }

    /// Commands executed.
    pub fn ops(&self) -> u64 {
        self.ops
    }

    /// The kept keys with their keyspace, each standing for about the
    /// same number of keyed commands.
    pub fn samples(&self) -> impl Iterator<Item = (&str, &Bytes)> {
        self.samples
            .iter()
            .map(|(_, keyspace, key)| (keyspace.as_str(), key))
    }
}

/// Where a sorted sample of one range's keys is best cut in two by load:
/// the sampled key with as many samples below it as at or above it (ties:
/// the lower), among those `allowed`; `None` when no allowed cut leaves at
/// least a quarter of the samples on each side (one hot key cannot be cut,
/// and a cut beside it would only move the rest).
pub fn load_median(sorted: &[Bytes], allowed: impl Fn(&Bytes) -> bool) -> Option<Bytes> {
    debug_assert!(sorted.windows(2).all(|w| w[0] <= w[1]), "unsorted");
    let n = sorted.len();
    let mut best: Option<(usize, &Bytes)> = None;
    for (below, key) in sorted.iter().enumerate() {
        if below > 0 && sorted[below - 1] == *key {
            continue; // the same cut as the first copy of this key
        }
        if below * 4 < n || below * 4 > 3 * n || !allowed(key) {
            continue;
        }
        let off = (2 * below).abs_diff(n);
        if best.is_none_or(|(b, _)| off < b) {
            best = Some((off, key));
        }
    }
    best.map(|(_, key)| key.clone())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn key(i: u64) -> Bytes {
        Bytes::from(format!("k{i:06}"))
    }

    fn sorted_keys(sample: &LoadSample) -> Vec<Bytes> {
        let mut keys: Vec<Bytes> = sample.samples().map(|(_, k)| k.clone()).collect();
        keys.sort();
        keys
    }

    /// The sample stays bounded however many commands there are, and
    /// spreads over all of them: over keys 0..10,000 in order its median
    /// is near 5,000.
    #[test]
    fn dynatree_oracle_load_sample_is_bounded_and_spread() {
        let mut sample = LoadSample::default();
        for i in 0..10_000 {
            sample.record(Some(("m", &key(i))));
            sample.record(None);
        }
        assert_eq!(sample.ops(), 20_000);
        let keys = sorted_keys(&sample);
        assert!(keys.len() < LOAD_SAMPLES_MAX && keys.len() >= LOAD_SAMPLES_MAX / 8);
        let cut = load_median(&keys, |_| true).expect("a cut");
        assert!(cut > key(3_500) && cut < key(6_500), "median {cut:?}");
    }

    /// The cut by load is the median of where the load fell, not of the
    /// keys: 3/4 of the commands on keys 0..10 and 1/4 on 10..100 cut
    /// below 10.
    #[test]
    fn dynatree_oracle_hot_range_splits_at_its_median_key_by_load() {
        let mut sample = LoadSample::default();
        for round in 0..100u64 {
            for i in 0..3 {
                sample.record(Some(("m", &key((round * 3 + i) % 10))));
            }
            sample.record(Some(("m", &key(10 + round % 90))));
        }
        let keys = sorted_keys(&sample);
        let cut = load_median(&keys, |_| true).expect("a cut");
        assert!(cut < key(10), "cut at {cut:?}");
    }

    /// One hot key cannot be cut: no cut leaves a quarter on each side.
    #[test]
    fn dynatree_oracle_one_hot_key_is_not_cut() {
        let mut keys = vec![key(5); 40];
        keys.push(key(1));
        keys.push(key(9));
        keys.sort();
        assert_eq!(load_median(&keys, |_| true), None);
    }

    proptest! {
        /// A cut, when there is one, is a sampled key that is allowed and
        /// leaves at least a quarter of the samples on each side.
        #[test]
        fn load_median_leaves_a_quarter_each_side(
            mut keys in proptest::collection::vec(0u64..20, 0..80),
            banned in 0u64..20,
        ) {
            keys.sort();
            let keys: Vec<Bytes> = keys.into_iter().map(key).collect();
            let banned = key(banned);
            if let Some(cut) = load_median(&keys, |k| *k != banned) {
                prop_assert!(cut != banned);
                prop_assert!(keys.contains(&cut));
                let below = keys.iter().filter(|k| **k < cut).count();
                prop_assert!(below * 4 >= keys.len() && below * 4 <= 3 * keys.len());
            }
        }
    }
}
