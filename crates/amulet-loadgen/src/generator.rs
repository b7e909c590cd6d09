//! Key-number generators, following YCSB's `UniformLongGenerator`,
//! `ZipfianGenerator` (Gray et al., "Quickly Generating Billion-Record
//! Synthetic Databases", SIGMOD 1994) and `ScrambledZipfianGenerator`.

use crate::keys::fnvhash64;
use rand::Rng;

/// YCSB's default zipfian constant.
pub const ZIPFIAN_CONSTANT: f64 = 0.99;

/// The item count of the zipfian generator inside YCSB's scrambled zipfian
/// (its `ITEM_COUNT`): popularity is drawn over this many items and hashed
/// down to the record count, so the hot set does not depend on the record
/// count and the hot keys are spread over the key space.
pub const SCRAMBLED_ITEM_COUNT: u64 = 10_000_000_000;

/// YCSB's precomputed `zeta(SCRAMBLED_ITEM_COUNT, 0.99)` (its `ZETAN`), which
/// would take 10^10 terms to compute.
pub const SCRAMBLED_ZETAN: f64 = 26.469_028_201_783_02;

/// `zeta(n, theta) = sum_{i=1..n} 1 / i^theta` (YCSB's `zetastatic`).
pub fn zeta(n: u64, theta: f64) -> f64 {
    (1..=n).map(|i| 1.0 / (i as f64).powf(theta)).sum()
}

/// Zipfian over `[0, items)`: item 0 is the most popular, item `i` is drawn
/// with probability proportional to `1 / (i + 1)^theta`.
#[derive(Clone, Debug)]
pub struct Zipfian {
    items: u64,
    theta: f64,
    alpha: f64,
    zetan: f64,
    eta: f64,
    /// `1 + 0.5^theta`: below `u * zetan` of this, the answer is item 1.
    half_pow_theta: f64,
}

impl Zipfian {
    /// Zipfian over `items` items with constant `theta`, computing `zeta`.
    pub fn new(items: u64, theta: f64) -> Zipfian {
        Zipfian::with_zetan(items, theta, zeta(items, theta))
    }

    /// Zipfian over `items` items with a precomputed `zeta(items, theta)`.
    pub fn with_zetan(items: u64, theta: f64, zetan: f64) -> Zipfian {
        assert!(items >= 1, "zipfian needs at least one item");
        assert!(
            theta > 0.0 && theta < 1.0,
            "zipfian constant must be in (0, 1)"
        );
        let zeta2theta = zeta(2, theta);
        let eta = (1.0 - (2.0 / items as f64).powf(1.0 - theta)) / (1.0 - zeta2theta / zetan);
        Zipfian {
            items,
            theta,
            alpha: 1.0 / (1.0 - theta),
            zetan,
            eta,
            half_pow_theta: 1.0 + 0.5f64.powf(theta),
        }
    }

    /// The number of items.
    pub fn items(&self) -> u64 {
        self.items
    }

    /// The zipfian constant.
    pub fn theta(&self) -> f64 {
        self.theta
    }

    /// The next item (YCSB's `nextLong`, clamped to the last item where
    /// YCSB's formula can return one past it for `u` close to 1).
    pub fn next<R: Rng + ?Sized>(&self, rng: &mut R) -> u64 {
        let u: f64 = rng.random();
        let uz = u * self.zetan;
        if uz < 1.0 {
            return 0;
        }
        if uz < self.half_pow_theta {
            return 1.min(self.items - 1);
        }
        let v = (self.items as f64) * (self.eta * u - self.eta + 1.0).powf(self.alpha);
        (v as u64).min(self.items - 1)
    }
}

/// YCSB's scrambled zipfian over `[0, items)`: a zipfian draw over
/// [`SCRAMBLED_ITEM_COUNT`] items, hashed with FNV-64 and taken modulo `items`.
#[derive(Clone, Debug)]
pub struct ScrambledZipfian {
    items: u64,
    inner: Zipfian,
}

impl ScrambledZipfian {
    /// With YCSB's constant 0.99 (and its precomputed zeta).
    pub fn new(items: u64) -> ScrambledZipfian {
        ScrambledZipfian::with_constant(items, ZIPFIAN_CONSTANT)
    }

    /// With another constant; zeta over 10^10 items is then computed, which
    /// takes a while, exactly as in YCSB.
    pub fn with_constant(items: u64, theta: f64) -> ScrambledZipfian {
        assert!(items >= 1, "scrambled zipfian needs at least one item");
        // YCSB builds ZipfianGenerator(0, ITEM_COUNT), i.e. ITEM_COUNT + 1 items.
        let n = SCRAMBLED_ITEM_COUNT + 1;
        let inner = if theta == ZIPFIAN_CONSTANT {
            Zipfian::with_zetan(n, theta, SCRAMBLED_ZETAN)
        } else {
            Zipfian::new(n, theta)
        };
        ScrambledZipfian { items, inner }
    }

    /// The next item.
    pub fn next<R: Rng + ?Sized>(&self, rng: &mut R) -> u64 {
        fnvhash64(self.inner.next(rng)) % self.items
    }
}

/// How a client picks the key number of its next operation.
#[derive(Clone, Debug)]
pub enum KeyChooser {
    /// Uniform over `[0, items)`.
    Uniform { items: u64 },
    /// YCSB scrambled zipfian over `[0, items)`.
    Zipfian(ScrambledZipfian),
}

impl KeyChooser {
    /// The next key number.
    pub fn next<R: Rng + ?Sized>(&self, rng: &mut R) -> u64 {
        match self {
            KeyChooser::Uniform { items } => rng.random_range(0..*items),
            KeyChooser::Zipfian(z) => z.next(rng),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    /// `sum_{i=1..n} i^-theta` by Euler–Maclaurin:
    /// `zeta_R(theta) + n^(1-theta)/(1-theta) + n^-theta/2 - theta n^(-theta-1)/12`,
    /// with the Riemann zeta near 1 from its Laurent series.
    fn zeta_asymptotic(n: f64, theta: f64) -> f64 {
        let s1 = theta - 1.0;
        let riemann = 1.0 / s1 + 0.577_215_664_901_532_9 + 0.072_815_845_483_676_7 * s1;
        riemann + n.powf(1.0 - theta) / (1.0 - theta) + 0.5 * n.powf(-theta)
            - theta * n.powf(-theta - 1.0) / 12.0
    }

    #[test]
    fn zeta_agrees_with_the_asymptotic_form() {
        let exact = zeta(1_000_000, 0.99);
        assert!((exact - zeta_asymptotic(1e6, 0.99)).abs() < 1e-3, "{exact}");
    }

    #[test]
    fn ycsb_precomputed_zetan_is_zeta_of_ten_billion() {
        let z = zeta_asymptotic(1e10 + 1.0, 0.99);
        assert!((z - SCRAMBLED_ZETAN).abs() < 1e-3, "{z}");
    }

    #[test]
    fn zipfian_frequencies_follow_the_power_law() {
        let n = 1000u64;
        let z = Zipfian::new(n, ZIPFIAN_CONSTANT);
        let zetan = zeta(n, ZIPFIAN_CONSTANT);
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        let draws = 400_000;
        let mut counts = vec![0u64; n as usize];
        for _ in 0..draws {
            let v = z.next(&mut rng);
            assert!(v < n);
            counts[v as usize] += 1;
        }
        let freq =
            |range: std::ops::Range<usize>| counts[range].iter().sum::<u64>() as f64 / draws as f64;
        let expected = |range: std::ops::Range<usize>| {
            range
                .map(|i| 1.0 / ((i + 1) as f64).powf(ZIPFIAN_CONSTANT) / zetan)
                .sum::<f64>()
        };
        // Items 0 and 1 are exact in the algorithm; bands further out follow
        // the approximation within a few percent of their mass.
        for band in [0..1, 1..2, 2..10, 10..100, 100..1000] {
            let (got, want) = (freq(band.clone()), expected(band.clone()));
            assert!(
                (got - want).abs() / want < 0.10,
                "band {band:?}: got {got:.4}, want {want:.4}"
            );
        }
        // The most popular item is item 0, at about 1/zetan (13%).
        assert!(counts[0] > counts[1] && counts[1] > counts[2]);
    }

    #[test]
    fn scrambled_zipfian_has_a_scattered_hot_set() {
        let n = 10_000u64;
        let z = ScrambledZipfian::new(n);
        let mut rng = ChaCha8Rng::seed_from_u64(11);
        let draws = 400_000;
        let mut counts = vec![0u64; n as usize];
        for _ in 0..draws {
            let v = z.next(&mut rng);
            assert!(v < n);
            counts[v as usize] += 1;
        }
        let mut sorted: Vec<(u64, usize)> =
            counts.iter().enumerate().map(|(i, &c)| (c, i)).collect();
        sorted.sort_unstable_by(|a, b| b.cmp(a));
        // The hottest key gets about 1/ZETAN (3.8%) of the draws.
        let top = sorted[0].0 as f64 / draws as f64;
        assert!((0.03..0.06).contains(&top), "top key share {top}");
        // Skewed: the hottest 1% of the keys take far more than 1%.
        let top1pct: u64 = sorted[..(n as usize / 100)].iter().map(|p| p.0).sum();
        let share = top1pct as f64 / draws as f64;
        assert!(share > 0.2, "top 1% share {share}");
        // Scrambled: the hot keys are not the low key numbers.
        let hot_low = sorted[..10].iter().filter(|p| p.1 < 10).count();
        assert!(hot_low < 3, "hot keys cluster at the low numbers");
        // Every key number is reachable in principle; most get some traffic.
        assert!(counts.iter().filter(|&&c| c > 0).count() > (n as usize) / 2);
    }

    #[test]
    fn uniform_is_flat() {
        let n = 100u64;
        let chooser = KeyChooser::Uniform { items: n };
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        let mut counts = vec![0u64; n as usize];
        for _ in 0..200_000 {
            counts[chooser.next(&mut rng) as usize] += 1;
        }
        let (min, max) = (counts.iter().min().unwrap(), counts.iter().max().unwrap());
        assert!(*min > 1700 && *max < 2300, "min {min} max {max}");
    }

    #[test]
    fn single_item_generators_return_it() {
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let z = Zipfian::new(1, ZIPFIAN_CONSTANT);
        let s = ScrambledZipfian::new(1);
        for _ in 0..1000 {
            assert_eq!(z.next(&mut rng), 0);
            assert_eq!(s.next(&mut rng), 0);
        }
    }
}
