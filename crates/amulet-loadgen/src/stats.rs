//! Per-operation latency histograms and error counts, merged over clients.

use hdrhistogram::Histogram;
use std::fmt;
use std::time::Duration;

/// The operation types of the run phase.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum OpType {
    Read,
    Update,
    ReadModifyWrite,
}

impl OpType {
    /// Every op type, in table and CSV order.
    pub const ALL: [OpType; 3] = [OpType::Read, OpType::Update, OpType::ReadModifyWrite];

    /// Position in [`OpType::ALL`].
    pub fn index(self) -> usize {
        match self {
            OpType::Read => 0,
            OpType::Update => 1,
            OpType::ReadModifyWrite => 2,
        }
    }

    /// The name used in tables and CSV column prefixes.
    pub fn name(self) -> &'static str {
        match self {
            OpType::Read => "read",
            OpType::Update => "update",
            OpType::ReadModifyWrite => "rmw",
        }
    }
}

impl fmt::Display for OpType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Largest latency the histograms hold (longer ones saturate to it): 60 s.
pub const MAX_LATENCY_US: u64 = 60_000_000;

/// One operation type's latencies (successful operations, in microseconds)
/// and failures.
#[derive(Clone, Debug)]
pub struct OpStats {
    pub hist: Histogram<u64>,
    /// Operations that returned an error or timed out.
    pub errors: u64,
    /// Reads (and reads of read-modify-writes) that found no value.
    pub misses: u64,
    /// The first error message seen, for the report.
    pub first_error: Option<String>,
}

impl Default for OpStats {
    fn default() -> OpStats {
        OpStats::new()
    }
}

impl OpStats {
    pub fn new() -> OpStats {
        OpStats {
            hist: Histogram::new_with_bounds(1, MAX_LATENCY_US, 3)
                .expect("static histogram bounds are valid"),
            errors: 0,
            misses: 0,
            first_error: None,
        }
    }

    /// Records a successful operation that took `latency`.
    pub fn record(&mut self, latency: Duration) {
        let us = u64::try_from(latency.as_micros())
            .unwrap_or(u64::MAX)
            .max(1);
        self.hist.saturating_record(us);
    }

    /// Counts a failed operation.
    pub fn record_error(&mut self, message: impl FnOnce() -> String) {
        self.errors += 1;
        if self.first_error.is_none() {
            self.first_error = Some(message());
        }
    }

    /// Successful operations.
    pub fn count(&self) -> u64 {
        self.hist.len()
    }

    /// Latency at `q` (0..=1) in microseconds; 0 when empty.
    pub fn quantile_us(&self, q: f64) -> u64 {
        if self.hist.is_empty() {
            0
        } else {
            self.hist.value_at_quantile(q)
        }
    }

    pub fn mean_us(&self) -> f64 {
        if self.hist.is_empty() {
            0.0
        } else {
            self.hist.mean()
        }
    }

    /// Adds `other` into `self`.
    pub fn merge(&mut self, other: &OpStats) {
        self.hist
            .add(&other.hist)
            .expect("histograms share their bounds");
        self.errors += other.errors;
        self.misses += other.misses;
        if self.first_error.is_none() {
            self.first_error.clone_from(&other.first_error);
        }
    }
}

/// Per-operation-type stats of one client or of a whole run.
#[derive(Clone, Debug, Default)]
pub struct OpSet {
    pub ops: [OpStats; 3],
}

impl OpSet {
    pub fn get(&self, op: OpType) -> &OpStats {
        &self.ops[op.index()]
    }

    pub fn get_mut(&mut self, op: OpType) -> &mut OpStats {
        &mut self.ops[op.index()]
    }

    pub fn merge(&mut self, other: &OpSet) {
        for (a, b) in self.ops.iter_mut().zip(&other.ops) {
            a.merge(b);
        }
    }

    /// All op types together.
    pub fn total(&self) -> OpStats {
        let mut all = OpStats::new();
        for s in &self.ops {
            all.merge(s);
        }
        all
    }
}

/// Operations completed in each second since a client loop started (warmup
/// included), successes and errors, and the latencies of the successes
/// (for per-second percentiles in timelines).
#[derive(Clone, Debug, Default)]
pub struct Series {
    pub ok: Vec<u64>,
    pub errors: Vec<u64>,
    /// Latency of the successful operations completed in each second, µs
    /// (`None`: none completed).
    pub latency: Vec<Option<Histogram<u64>>>,
}

impl Series {
    pub fn with_seconds(seconds: usize) -> Series {
        Series {
            ok: vec![0; seconds],
            errors: vec![0; seconds],
            latency: vec![None; seconds],
        }
    }

    /// Records the latency of a successful operation completed `at` after
    /// the start.
    pub fn record_latency(&mut self, at: Duration, latency: Duration) {
        let s = at.as_secs() as usize;
        if let Some(slot) = self.latency.get_mut(s) {
            let h = slot.get_or_insert_with(|| {
                // 1 µs .. 10 min at 2 significant digits: ~3 KiB a second.
                Histogram::new_with_bounds(1, 600_000_000, 2).expect("valid bounds")
            });
            let micros = u64::try_from(latency.as_micros()).unwrap_or(u64::MAX);
            h.saturating_record(micros.max(1));
        }
    }

    /// The `q` quantile (0..=1) of second `s`'s latencies, µs.
    pub fn quantile_micros(&self, s: usize, q: f64) -> Option<u64> {
        self.latency
            .get(s)?
            .as_ref()
            .map(|h| h.value_at_quantile(q))
    }

    /// Counts one completion `at` after the start; beyond the last second it
    /// is not counted.
    pub fn count(&mut self, at: Duration, ok: bool) {
        let s = at.as_secs() as usize;
        let v = if ok { &mut self.ok } else { &mut self.errors };
        if let Some(c) = v.get_mut(s) {
            *c += 1;
        }
    }

    pub fn merge(&mut self, other: &Series) {
        fn add(a: &mut Vec<u64>, b: &[u64]) {
            if a.len() < b.len() {
                a.resize(b.len(), 0);
            }
            for (x, y) in a.iter_mut().zip(b) {
                *x += y;
            }
        }
        add(&mut self.ok, &other.ok);
        add(&mut self.errors, &other.errors);
        if self.latency.len() < other.latency.len() {
            self.latency.resize(other.latency.len(), None);
        }
        for (mine, theirs) in self.latency.iter_mut().zip(&other.latency) {
            match (mine.as_mut(), theirs) {
                (Some(m), Some(t)) => m.add(t).expect("same bounds"),
                (None, Some(t)) => *mine = Some(t.clone()),
                _ => {}
            }
        }
    }
}

/// The result of one (backend, workload, distribution) run.
#[derive(Clone, Debug)]
pub struct RunResult {
    pub backend: String,
    pub workload: String,
    pub distribution: String,
    pub clients: usize,
    pub connections: usize,
    pub value_size: usize,
    pub record_count: u64,
    pub warmup: Duration,
    pub duration: Duration,
    /// Operations that completed inside the measured window (after warmup).
    pub ops: OpSet,
    /// Per-second completions over warmup and measurement.
    pub series: Series,
    /// Unix time at the start of the run.
    pub started_unix: u64,
}

impl RunResult {
    /// Successful operations per second in the measured window.
    pub fn ops_per_sec(&self) -> f64 {
        let ok: u64 = self.ops.ops.iter().map(|s| s.count()).sum();
        ok as f64 / self.duration.as_secs_f64().max(1e-9)
    }

    pub fn errors(&self) -> u64 {
        self.ops.ops.iter().map(|s| s.errors).sum()
    }

    pub fn misses(&self) -> u64 {
        self.ops.ops.iter().map(|s| s.misses).sum()
    }

    /// The op types this run issued (or saw errors for).
    pub fn op_types(&self) -> impl Iterator<Item = OpType> + '_ {
        OpType::ALL.into_iter().filter(|&op| {
            let s = self.ops.get(op);
            s.count() > 0 || s.errors > 0
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merged_histograms_keep_counts_and_quantiles() {
        let mut a = OpStats::new();
        let mut b = OpStats::new();
        for us in 1..=500u64 {
            a.record(Duration::from_micros(us));
        }
        for us in 501..=1000u64 {
            b.record(Duration::from_micros(us));
        }
        b.record_error(|| "boom".into());
        b.record_error(|| "second".into());
        a.merge(&b);
        assert_eq!(a.count(), 1000);
        assert_eq!(a.errors, 2);
        assert_eq!(a.first_error.as_deref(), Some("boom"));
        let p50 = a.quantile_us(0.5);
        let p99 = a.quantile_us(0.99);
        assert!((499..=501).contains(&p50), "p50 {p50}");
        assert!((989..=991).contains(&p99), "p99 {p99}");
        assert_eq!(a.quantile_us(1.0), 1000);
    }

    #[test]
    fn latencies_are_clamped_into_range() {
        let mut s = OpStats::new();
        s.record(Duration::from_nanos(10));
        s.record(Duration::from_secs(3600));
        assert_eq!(s.count(), 2);
        assert_eq!(s.quantile_us(0.0), 1);
        assert!(s.quantile_us(1.0) >= MAX_LATENCY_US);
        assert_eq!(OpStats::new().quantile_us(0.99), 0);
    }

    #[test]
    fn op_sets_merge_per_type_and_total() {
        let mut x = OpSet::default();
        let mut y = OpSet::default();
        x.get_mut(OpType::Read).record(Duration::from_micros(100));
        y.get_mut(OpType::Read).record(Duration::from_micros(300));
        y.get_mut(OpType::Update).record(Duration::from_micros(200));
        y.get_mut(OpType::Update).misses += 1;
        x.merge(&y);
        assert_eq!(x.get(OpType::Read).count(), 2);
        assert_eq!(x.get(OpType::Update).count(), 1);
        assert_eq!(x.get(OpType::ReadModifyWrite).count(), 0);
        let t = x.total();
        assert_eq!(t.count(), 3);
        assert_eq!(t.misses, 1);
    }

    #[test]
    fn series_merge_and_bounds() {
        let mut a = Series::with_seconds(2);
        a.count(Duration::from_millis(500), true);
        a.count(Duration::from_millis(1500), false);
        a.count(Duration::from_secs(5), true); // past the end: dropped
        let mut b = Series::with_seconds(3);
        b.count(Duration::from_millis(2500), true);
        a.merge(&b);
        assert_eq!(a.ok, vec![1, 0, 1]);
        assert_eq!(a.errors, vec![0, 1, 0]);
    }

    #[test]
    fn per_second_latencies_merge_into_per_second_percentiles() {
        let mut a = Series::with_seconds(3);
        let mut b = Series::with_seconds(3);
        for ms in 1..=99 {
            a.record_latency(Duration::from_millis(1_500), Duration::from_millis(ms));
        }
        b.record_latency(Duration::from_millis(1_700), Duration::from_millis(900));
        a.merge(&b);
        assert_eq!(a.quantile_micros(0, 0.99), None, "nothing in second 0");
        let p50 = a.quantile_micros(1, 0.5).unwrap();
        let p99 = a.quantile_micros(1, 0.99).unwrap();
        assert!((49_000..=51_000).contains(&p50), "p50 {p50}");
        assert!((98_000..=100_000).contains(&p99), "p99 {p99}");
        assert!(a.quantile_micros(1, 1.0).unwrap() >= 890_000);
    }
}
