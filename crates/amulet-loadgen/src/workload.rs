//! YCSB core workloads and request distributions.

use crate::stats::OpType;
use rand::Rng;
use std::fmt;
use std::str::FromStr;

/// A workload: the operation mix of YCSB's core workloads, plus put-only.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Workload {
    /// YCSB A, update heavy: 50% read, 50% update.
    A,
    /// YCSB B, read mostly: 95% read, 5% update.
    B,
    /// YCSB C, read only.
    C,
    /// YCSB F: 50% read, 50% read-modify-write.
    F,
    /// 100% update (put of a loaded key).
    PutOnly,
    /// 100% appends to shared logs (thesis §3.6.3, DLog): each operation
    /// appends its value to one of the backend's logs (the log picked by
    /// the key); counted as updates. Needs no load phase.
    Append,
}

impl Workload {
    /// Every workload, in the order tables list them.
    pub const ALL: [Workload; 6] = [
        Workload::PutOnly,
        Workload::A,
        Workload::B,
        Workload::C,
        Workload::F,
        Workload::Append,
    ];

    /// The name used on the command line and in CSV rows.
    pub fn name(self) -> &'static str {
        match self {
            Workload::A => "a",
            Workload::B => "b",
            Workload::C => "c",
            Workload::F => "f",
            Workload::PutOnly => "put-only",
            Workload::Append => "append",
        }
    }

    /// The operation proportions, summing to 1.
    pub fn mix(self) -> &'static [(OpType, f64)] {
        match self {
            Workload::A => &[(OpType::Read, 0.5), (OpType::Update, 0.5)],
            Workload::B => &[(OpType::Read, 0.95), (OpType::Update, 0.05)],
            Workload::C => &[(OpType::Read, 1.0)],
            Workload::F => &[(OpType::Read, 0.5), (OpType::ReadModifyWrite, 0.5)],
            Workload::PutOnly | Workload::Append => &[(OpType::Update, 1.0)],
        }
    }

    /// Draws the next operation (YCSB's `DiscreteGenerator`).
    pub fn next_op<R: Rng + ?Sized>(self, rng: &mut R) -> OpType {
        let mix = self.mix();
        let mut u: f64 = rng.random();
        for &(op, p) in mix {
            if u < p {
                return op;
            }
            u -= p;
        }
        mix[mix.len() - 1].0
    }
}

impl fmt::Display for Workload {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Workload {
    type Err = String;
    fn from_str(s: &str) -> Result<Workload, String> {
        match s.trim().to_ascii_lowercase().as_str() {
            "a" | "workloada" => Ok(Workload::A),
            "b" | "workloadb" => Ok(Workload::B),
            "c" | "workloadc" => Ok(Workload::C),
            "f" | "workloadf" => Ok(Workload::F),
            "put-only" | "putonly" | "put" => Ok(Workload::PutOnly),
            "append" => Ok(Workload::Append),
            other => Err(format!(
                "unknown workload {other:?} (a, b, c, f, put-only, append)"
            )),
        }
    }
}

/// The request distribution over the loaded keys.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Distribution {
    Uniform,
    /// YCSB's scrambled zipfian with constant 0.99.
    Zipfian,
}

impl Distribution {
    pub fn name(self) -> &'static str {
        match self {
            Distribution::Uniform => "uniform",
            Distribution::Zipfian => "zipfian",
        }
    }
}

impl fmt::Display for Distribution {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Distribution {
    type Err = String;
    fn from_str(s: &str) -> Result<Distribution, String> {
        match s.trim().to_ascii_lowercase().as_str() {
            "uniform" => Ok(Distribution::Uniform),
            "zipfian" | "zipf" => Ok(Distribution::Zipfian),
            other => Err(format!("unknown distribution {other:?} (uniform, zipfian)")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    fn shares(w: Workload, n: usize) -> [f64; 3] {
        let mut rng = ChaCha8Rng::seed_from_u64(5);
        let mut c = [0usize; 3];
        for _ in 0..n {
            c[w.next_op(&mut rng).index()] += 1;
        }
        c.map(|x| x as f64 / n as f64)
    }

    #[test]
    fn mixes_sum_to_one() {
        for w in Workload::ALL {
            let total: f64 = w.mix().iter().map(|m| m.1).sum();
            assert!((total - 1.0).abs() < 1e-12, "{w}");
        }
    }

    #[test]
    fn drawn_mix_matches_the_workload() {
        let n = 200_000;
        let [r, u, m] = shares(Workload::A, n);
        assert!((r - 0.5).abs() < 0.01 && (u - 0.5).abs() < 0.01 && m == 0.0);
        let [r, u, m] = shares(Workload::B, n);
        assert!((r - 0.95).abs() < 0.005 && (u - 0.05).abs() < 0.005 && m == 0.0);
        assert_eq!(shares(Workload::C, n), [1.0, 0.0, 0.0]);
        let [r, u, m] = shares(Workload::F, n);
        assert!((r - 0.5).abs() < 0.01 && u == 0.0 && (m - 0.5).abs() < 0.01);
        assert_eq!(shares(Workload::PutOnly, n), [0.0, 1.0, 0.0]);
    }

    #[test]
    fn names_round_trip() {
        for w in Workload::ALL {
            assert_eq!(w.name().parse::<Workload>().unwrap(), w);
        }
        assert_eq!("A".parse::<Workload>().unwrap(), Workload::A);
        assert!("z".parse::<Workload>().is_err());
        assert_eq!(
            "zipfian".parse::<Distribution>().unwrap(),
            Distribution::Zipfian
        );
        assert_eq!(
            "uniform".parse::<Distribution>().unwrap(),
            Distribution::Uniform
        );
    }
}
