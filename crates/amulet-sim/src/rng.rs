//! The one seeded random number generator that drives a simulation.
//!
//! An in-house xoshiro256** seeded through splitmix64, so that a seed means
//! the same run on every platform and every toolchain, forever: no crate
//! upgrade can change the stream of numbers behind a recorded failing seed.
//! Floating point is only produced from 53 random bits by one exact
//! multiplication, which IEEE 754 makes identical everywhere.

/// Deterministic pseudo-random generator (xoshiro256**).
///
/// Invariant: the state is never all zero (splitmix64 seeding guarantees it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rng {
    state: [u64; 4],
}

/// One step of splitmix64: advances `x` and returns a well-mixed output.
fn splitmix64(x: &mut u64) -> u64 {
    *x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *x;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

impl Rng {
    /// A generator whose whole output is determined by `seed`.
    pub fn new(seed: u64) -> Rng {
        let mut x = seed;
        let state = [
            splitmix64(&mut x),
            splitmix64(&mut x),
            splitmix64(&mut x),
            splitmix64(&mut x),
        ];
        assert!(state != [0; 4], "splitmix64 never yields four zero words");
        Rng { state }
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        let s = &mut self.state;
        let result = s[1].wrapping_mul(5).rotate_left(7).wrapping_mul(9);
        let t = s[1] << 17;
        s[2] ^= s[0];
        s[3] ^= s[1];
        s[1] ^= s[2];
        s[0] ^= s[3];
        s[2] ^= t;
        s[3] = s[3].rotate_left(45);
        result
    }

    /// An independent sub-stream, so that one component drawing more or
    /// fewer numbers does not shift what another component draws (the
    /// network's losses do not change the nemesis' schedule).
    pub fn fork(&mut self) -> Rng {
        Rng::new(self.next_u64())
    }

    /// Uniform in `[0, bound)`. Unbiased (rejection sampling).
    ///
    /// Panics if `bound == 0`: there is no such number.
    pub fn below(&mut self, bound: u64) -> u64 {
        assert!(bound > 0, "Rng::below(0) has no value to return");
        // Reject the top partial copy of [0, bound) so every residue is
        // equally likely.
        let zone = u64::MAX - (u64::MAX % bound + 1) % bound;
        loop {
            let x = self.next_u64();
            if x <= zone {
                return x % bound;
            }
        }
    }

    /// Uniform in `[min, max]` (both inclusive). Panics if `min > max`.
    pub fn range(&mut self, min: u64, max: u64) -> u64 {
        assert!(min <= max, "Rng::range({min}, {max}) is empty");
        if min == 0 && max == u64::MAX {
            return self.next_u64();
        }
        min + self.below(max - min + 1)
    }

    /// Uniform in `[0, 1)`, from 53 random bits.
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// True with probability `probability` (values outside `[0, 1]` clamp).
    pub fn chance(&mut self, probability: f64) -> bool {
        if probability <= 0.0 {
            return false;
        }
        if probability >= 1.0 {
            return true;
        }
        self.unit() < probability
    }

    /// An exponentially distributed wait with the given mean, at least 1:
    /// the inter-arrival time of a Poisson process of faults.
    pub fn exponential(&mut self, mean: u64) -> u64 {
        // 1 - unit() lies in (0, 1], so the logarithm is finite.
        let sample = -(1.0 - self.unit()).ln() * mean as f64;
        (sample as u64).max(1)
    }

    /// A uniformly chosen element, or `None` for an empty slice.
    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> Option<&'a T> {
        if items.is_empty() {
            return None;
        }
        let index = self.below(items.len() as u64) as usize;
        items.get(index)
    }

    /// Shuffles `items` in place (Fisher-Yates).
    pub fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            let j = self.below(i as u64 + 1) as usize;
            items.swap(i, j);
        }
    }
}

/// The seed's generator drives the real client's rules
/// (`amulet_client::rules`), which draw through `next_u64` only and reduce
/// it themselves: a `rand` upgrade cannot change a recorded run.
impl rand::RngCore for Rng {
    fn next_u32(&mut self) -> u32 {
        (Rng::next_u64(self) >> 32) as u32
    }

    fn next_u64(&mut self) -> u64 {
        Rng::next_u64(self)
    }

    fn fill_bytes(&mut self, dst: &mut [u8]) {
        for chunk in dst.chunks_mut(8) {
            let bytes = Rng::next_u64(self).to_le_bytes();
            chunk.copy_from_slice(&bytes[..chunk.len()]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_stream_different_seed_different_stream() {
        let mut a = Rng::new(42);
        let mut b = Rng::new(42);
        let mut c = Rng::new(43);
        let xs: Vec<u64> = (0..8).map(|_| a.next_u64()).collect();
        let ys: Vec<u64> = (0..8).map(|_| b.next_u64()).collect();
        let zs: Vec<u64> = (0..8).map(|_| c.next_u64()).collect();
        assert_eq!(xs, ys);
        assert_ne!(xs, zs);
    }

    #[test]
    fn stream_is_stable_across_platforms_and_releases() {
        // Pinned output: if this changes, every recorded seed replays a
        // different run.
        let mut rng = Rng::new(0);
        let first = rng.next_u64();
        let mut again = Rng::new(0);
        assert_eq!(first, again.next_u64());
        assert_eq!(first, 0x99EC_5F36_CB75_F2B4);
    }

    #[test]
    fn helpers_stay_in_bounds() {
        let mut rng = Rng::new(7);
        for _ in 0..10_000 {
            assert!(rng.below(3) < 3);
            let x = rng.range(5, 9);
            assert!((5..=9).contains(&x));
            let u = rng.unit();
            assert!((0.0..1.0).contains(&u));
            assert!(rng.exponential(100) >= 1);
        }
        assert!(!rng.chance(0.0));
        assert!(rng.chance(1.0));
        assert_eq!(rng.pick::<u8>(&[]), None);
    }

    #[test]
    fn shuffle_is_a_permutation_and_fork_is_independent() {
        let mut rng = Rng::new(9);
        let mut items: Vec<u32> = (0..50).collect();
        rng.shuffle(&mut items);
        let mut sorted = items.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, (0..50).collect::<Vec<_>>());
        let mut parent = Rng::new(1);
        let mut child = parent.fork();
        assert_ne!(parent.next_u64(), child.next_u64());
    }
}
