//! The bank benchmark of transactions (issue 21; SCONEKV §6's kind of
//! workload): accounts with balances, closed-loop clients moving random
//! amounts between two accounts in transactions (read both, write both),
//! and one operation in ten a read-only audit of every account, whose
//! total must never change. Keys are chosen uniformly or by YCSB's
//! scrambled zipfian; a share of the transfers is between accounts of
//! different partitions (Amulet's multi-partition commits; etcd has one
//! Raft group, so the share changes nothing there).
//!
//! Reported per system: attempts and commits per second (throughput and
//! goodput), aborts by reason, retries per commit, the commit's and the
//! whole transaction's latency (p50/p99), audits and audits that saw a
//! wrong total (an isolation bug: must be 0).

pub mod amulet;
#[cfg(feature = "etcd")]
pub mod etcd;

use crate::generator::ScrambledZipfian;
use hdrhistogram::Histogram;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

/// Balance of every account at the start.
pub const INITIAL_BALANCE: i64 = 1_000;

/// The key of account `i`.
pub fn account_key(i: u64) -> Vec<u8> {
    format!("acct{i:07}").into_bytes()
}

/// How one attempt of a transfer ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Attempt {
    /// Committed; the commit call took this long.
    Committed(Duration),
    /// Aborted by the system for `reason` (`conflict`, `too-old`, ...):
    /// run again.
    Aborted(&'static str),
}

/// A system the bank benchmark measures.
pub trait BankBackend: Send + Sync + 'static {
    /// Short name for the CSV.
    fn name(&self) -> &str;

    /// Sets every account of `0..accounts` to [`INITIAL_BALANCE`].
    fn load(&self, accounts: u64) -> impl Future<Output = anyhow::Result<()>> + Send;

    /// One attempt to move `amount` from `from` to `to` (no overdraft:
    /// a transfer that would go negative moves nothing, and commits).
    fn transfer(
        &self,
        from: u64,
        to: u64,
        amount: i64,
    ) -> impl Future<Output = anyhow::Result<Attempt>> + Send;

    /// The sum of every balance, read at one point (a read-only
    /// transaction).
    fn audit(&self, accounts: u64) -> impl Future<Output = anyhow::Result<i64>> + Send;

    /// The partition of account `i` (one for a system without them).
    fn partition_of(&self, i: u64) -> u32;
}

/// What one run measures.
#[derive(Clone, Debug)]
pub struct BankSpec {
    /// Accounts.
    pub accounts: u64,
    /// Closed-loop clients.
    pub clients: usize,
    /// Zipfian keys (else uniform).
    pub zipfian: bool,
    /// Share of transfers between accounts of different partitions.
    pub multi_share: f64,
    /// One operation in this many is an audit (10: 10%).
    pub audit_every: u32,
    /// Measured time.
    pub duration: Duration,
    /// Unmeasured time before it.
    pub warmup: Duration,
    /// Seed of the clients' choices.
    pub seed: u64,
}

/// What one run measured.
#[derive(Clone, Debug, Default)]
pub struct BankResult {
    /// Transfer attempts.
    pub attempts: u64,
    /// Transfers committed.
    pub commits: u64,
    /// Aborts: by conflict, by an ended read version, others.
    pub aborts_conflict: u64,
    /// See `aborts_conflict`.
    pub aborts_too_old: u64,
    /// See `aborts_conflict`.
    pub aborts_other: u64,
    /// Errors (the client carried on).
    pub errors: u64,
    /// Audits completed.
    pub audits: u64,
    /// Audits that saw a total other than the initial one.
    pub audit_violations: u64,
    /// Commit call latency of committed transfers, µs.
    pub commit_us: Option<Histogram<u64>>,
    /// Whole transfer latency (retries included), µs.
    pub transfer_us: Option<Histogram<u64>>,
    /// Measured seconds.
    pub seconds: f64,
    /// Transfers whose accounts were in different partitions.
    pub multi_partition: u64,
    /// First error message, for the log.
    pub first_error: Option<String>,
}

fn histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 60_000_000, 3).expect("valid bounds")
}

impl BankResult {
    fn merge(&mut self, other: BankResult) {
        self.attempts += other.attempts;
        self.commits += other.commits;
        self.aborts_conflict += other.aborts_conflict;
        self.aborts_too_old += other.aborts_too_old;
        self.aborts_other += other.aborts_other;
        self.errors += other.errors;
        self.audits += other.audits;
        self.audit_violations += other.audit_violations;
        self.multi_partition += other.multi_partition;
        for (mine, theirs) in [
            (&mut self.commit_us, other.commit_us),
            (&mut self.transfer_us, other.transfer_us),
        ] {
            if let Some(theirs) = theirs {
                mine.get_or_insert_with(histogram)
                    .add(theirs)
                    .expect("same bounds");
            }
        }
        if self.first_error.is_none() {
            self.first_error = other.first_error;
        }
    }

    /// Percentile `q` of committed commits' latency, µs.
    pub fn commit_percentile(&self, q: f64) -> u64 {
        self.commit_us
            .as_ref()
            .map_or(0, |h| h.value_at_quantile(q))
    }

    /// Percentile `q` of whole transfers' latency, µs.
    pub fn transfer_percentile(&self, q: f64) -> u64 {
        self.transfer_us
            .as_ref()
            .map_or(0, |h| h.value_at_quantile(q))
    }

    /// The CSV header.
    pub fn csv_header() -> &'static str {
        "system,distribution,multi_share,clients,seconds,attempts_per_sec,commits_per_sec,audits_per_sec,aborts_conflict,aborts_too_old,aborts_other,errors,retries_per_commit,commit_p50_us,commit_p99_us,transfer_p50_us,transfer_p99_us,audit_violations,multi_partition_share"
    }

    /// One CSV row.
    pub fn csv_row(&self, system: &str, spec: &BankSpec) -> String {
        let per_sec = |n: u64| n as f64 / self.seconds.max(1e-9);
        format!(
            "{system},{},{:.2},{},{:.1},{:.1},{:.1},{:.1},{},{},{},{},{:.3},{},{},{},{},{},{:.3}",
            if spec.zipfian { "zipfian" } else { "uniform" },
            spec.multi_share,
            spec.clients,
            self.seconds,
            per_sec(self.attempts),
            per_sec(self.commits),
            per_sec(self.audits),
            self.aborts_conflict,
            self.aborts_too_old,
            self.aborts_other,
            self.errors,
            (self.attempts.saturating_sub(self.commits)) as f64 / self.commits.max(1) as f64,
            self.commit_percentile(0.5),
            self.commit_percentile(0.99),
            self.transfer_percentile(0.5),
            self.transfer_percentile(0.99),
            self.audit_violations,
            self.multi_partition as f64 / self.commits.max(1) as f64,
        )
    }
}

/// Accounts grouped by partition, for choosing pairs within one or across
/// two.
struct Layout {
    by_partition: Vec<Vec<u64>>,
    partition_of: Vec<usize>,
}

impl Layout {
    fn new<B: BankBackend>(backend: &B, accounts: u64) -> Layout {
        let mut ids: Vec<u32> = (0..accounts).map(|i| backend.partition_of(i)).collect();
        let mut distinct = ids.clone();
        distinct.sort();
        distinct.dedup();
        let index = |p: u32| distinct.binary_search(&p).expect("listed");
        let mut by_partition = vec![Vec::new(); distinct.len()];
        let partition_of: Vec<usize> = ids.drain(..).map(index).collect();
        for (i, p) in partition_of.iter().enumerate() {
            by_partition[*p].push(i as u64);
        }
        Layout {
            by_partition,
            partition_of,
        }
    }
}

/// Runs the bank workload against `backends` (one handle per client):
/// the closed loop for warmup + duration, measured after the warmup, then
/// one final audit.
pub async fn run_bank<B: BankBackend>(
    backends: Vec<B>,
    spec: &BankSpec,
) -> anyhow::Result<BankResult> {
    anyhow::ensure!(!backends.is_empty(), "no clients");
    let layout = Arc::new(Layout::new(&backends[0], spec.accounts));
    let zipf = Arc::new(ScrambledZipfian::new(spec.accounts));
    let started = crate::clock::now();
    let measure_from = started + spec.warmup;
    let end = measure_from + spec.duration;
    let mut tasks = Vec::new();
    for (c, backend) in backends.into_iter().enumerate() {
        let spec = spec.clone();
        let layout = layout.clone();
        let zipf = zipf.clone();
        tasks.push(tokio::spawn(async move {
            let mut rng = ChaCha8Rng::seed_from_u64(spec.seed ^ (c as u64).wrapping_mul(0x9E37));
            let mut result = BankResult::default();
            let choose = |rng: &mut ChaCha8Rng| {
                if spec.zipfian {
                    zipf.next(rng)
                } else {
                    rng.random_range(0..spec.accounts)
                }
            };
            loop {
                let now = crate::clock::now();
                if now >= end {
                    break;
                }
                let measured = now >= measure_from;
                if rng.random_range(0..spec.audit_every.max(1)) == 0 {
                    match backend.audit(spec.accounts).await {
                        Ok(total) => {
                            if measured {
                                result.audits += 1;
                            }
                            if total != INITIAL_BALANCE * spec.accounts as i64 {
                                result.audit_violations += 1;
                            }
                        }
                        Err(e) => {
                            result.errors += u64::from(measured);
                            result
                                .first_error
                                .get_or_insert_with(|| format!("audit: {e:#}"));
                        }
                    }
                    continue;
                }
                let from = choose(&mut rng);
                let multi = layout.by_partition.len() > 1 && rng.random_bool(spec.multi_share);
                let home = layout.partition_of[from as usize];
                let mut tries = 0;
                let to = loop {
                    tries += 1;
                    let to = if multi || tries > 1_000 {
                        choose(&mut rng)
                    } else {
                        let mine = &layout.by_partition[home];
                        mine[rng.random_range(0..mine.len())]
                    };
                    let other = layout.partition_of[to as usize] != home;
                    if to != from && (other == multi || tries > 1_000 || mine_only(&layout, home)) {
                        break to;
                    }
                };
                let amount = rng.random_range(1..=10);
                let began = crate::clock::now();
                let mut backoff = Duration::from_micros(500);
                loop {
                    match backend.transfer(from, to, amount).await {
                        Ok(Attempt::Committed(commit)) => {
                            if measured {
                                result.attempts += 1;
                                result.commits += 1;
                                result.multi_partition += u64::from(multi);
                                result
                                    .commit_us
                                    .get_or_insert_with(histogram)
                                    .saturating_record(commit.as_micros() as u64);
                                result
                                    .transfer_us
                                    .get_or_insert_with(histogram)
                                    .saturating_record(began.elapsed().as_micros() as u64);
                            }
                            break;
                        }
                        Ok(Attempt::Aborted(reason)) => {
                            if measured {
                                result.attempts += 1;
                                match reason {
                                    "conflict" => result.aborts_conflict += 1,
                                    "too-old" => result.aborts_too_old += 1,
                                    _ => result.aborts_other += 1,
                                }
                            }
                            if crate::clock::now() >= end {
                                break;
                            }
                            let jitter = rng.random_range(0..=backoff.as_micros() as u64);
                            tokio::time::sleep(Duration::from_micros(jitter)).await;
                            backoff = (backoff * 2).min(Duration::from_millis(50));
                        }
                        Err(e) => {
                            result.errors += u64::from(measured);
                            result
                                .first_error
                                .get_or_insert_with(|| format!("transfer: {e:#}"));
                            break;
                        }
                    }
                }
            }
            result
        }));
    }
    let mut total = BankResult::default();
    for task in tasks {
        total.merge(task.await?);
    }
    total.seconds = spec.duration.as_secs_f64();
    Ok(total)
}

/// Whether the partition is the only one with accounts (no pair across
/// partitions exists).
fn mine_only(layout: &Layout, _home: usize) -> bool {
    layout.by_partition.iter().filter(|p| !p.is_empty()).count() < 2
}
