//! A Merkle tree over the keys of one replica group (MerkleDB's baseline,
//! DottedDB §III-A 1, as Riak's hashtree): keys hash into a fixed number
//! of *segments* (the leaves, each a sorted list of key → object hash);
//! every inner node hashes `width` children, up to one root. Two replicas
//! compare trees level by level, descend only where hashes differ, and
//! end by comparing the key-hash lists of the differing segments.
//!
//! Inner levels are rebuilt lazily, before an exchange reads them (Riak
//! updates segments on write and rehashes on exchange).

use bytes::Bytes;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A hash tree of `segments` leaves and fan-out `width`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HashTree {
    width: usize,
    /// Leaves: key → hash of its object.
    segments: Vec<BTreeMap<Bytes, u64>>,
    /// `levels[0]` is the root level (one hash), the last the segments'
    /// hashes. Valid unless `dirty`.
    levels: Vec<Vec<u64>>,
    dirty: bool,
}

impl HashTree {
    /// An empty tree (`segments` a power of `width`, as Riak's).
    pub fn new(segments: usize, width: usize) -> HashTree {
        assert!(
            width >= 2 && segments >= width,
            "segments {segments} width {width}"
        );
        let mut depth = 0;
        let mut n = 1;
        while n < segments {
            n *= width;
            depth += 1;
        }
        assert_eq!(n, segments, "segments must be a power of the width");
        let mut tree = HashTree {
            width,
            segments: vec![BTreeMap::new(); segments],
            levels: (0..=depth).map(|l| vec![0; width.pow(l as u32)]).collect(),
            dirty: true,
        };
        tree.rebuild();
        tree
    }

    /// Levels, root first.
    pub fn depth(&self) -> usize {
        self.levels.len()
    }

    /// The segment of `key`.
    pub fn segment_of(&self, key: &[u8]) -> usize {
        (crate::ring::token(key) % self.segments.len() as u64) as usize
    }

    /// Sets `key`'s object hash.
    pub fn insert(&mut self, key: &Bytes, hash: u64) {
        let s = self.segment_of(key);
        if self.segments[s].insert(key.clone(), hash) != Some(hash) {
            self.dirty = true;
        }
    }

    /// The hashes at `level` of nodes `indices` (rebuilding first).
    pub fn hashes(&mut self, level: usize, indices: &[u32]) -> Vec<(u32, u64)> {
        self.rebuild();
        indices
            .iter()
            .filter_map(|&i| self.levels.get(level)?.get(i as usize).map(|h| (i, *h)))
            .collect()
    }

    /// The children (at `level + 1`) of node `index` at `level`.
    pub fn children(&self, index: u32) -> impl Iterator<Item = u32> {
        let width = self.width as u32;
        (0..width).map(move |c| index * width + c)
    }

    /// The key-hash list of segment `s`.
    pub fn segment(&self, s: u32) -> Vec<(Bytes, u64)> {
        self.segments
            .get(s as usize)
            .map(|m| m.iter().map(|(k, h)| (k.clone(), *h)).collect())
            .unwrap_or_default()
    }

    /// Bytes the tree holds: 8 per inner hash, key length + 8 per leaf
    /// entry.
    pub fn metadata_bytes(&self) -> usize {
        let inner: usize = self.levels.iter().map(|l| l.len() * 8).sum();
        let leaves: usize = self
            .segments
            .iter()
            .flat_map(|s| s.keys())
            .map(|k| k.len() + 8)
            .sum();
        inner + leaves
    }

    fn rebuild(&mut self) {
        if !self.dirty {
            return;
        }
        let last = self.levels.len() - 1;
        for (i, segment) in self.segments.iter().enumerate() {
            let mut h = 0xcbf2_9ce4_8422_2325u64;
            for (k, v) in segment {
                h = mix(mix(h, crate::ring::token(k)), *v);
            }
            self.levels[last][i] = h;
        }
        for level in (0..last).rev() {
            for i in 0..self.levels[level].len() {
                let mut h = 0x8422_2325_cbf2_9ce4u64;
                for c in 0..self.width {
                    h = mix(h, self.levels[level + 1][i * self.width + c]);
                }
                self.levels[level][i] = h;
            }
        }
        self.dirty = false;
    }
}

fn mix(h: u64, v: u64) -> u64 {
    let mut x = h ^ v.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}
