//! The load phase and the closed-loop run phase.

use crate::clock;
use crate::generator::{KeyChooser, ScrambledZipfian};
use crate::keys::key_name;
use crate::stats::{OpSet, OpStats, OpType, RunResult, Series};
use crate::workload::{Distribution, Workload};
use crate::KvBackend;
use rand::{RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::task::JoinSet;

/// How the load phase inserts the records.
#[derive(Clone, Debug)]
pub struct LoadSpec {
    pub record_count: u64,
    pub value_size: usize,
    /// Bound on one put; a put that takes longer counts as an error.
    pub op_timeout: Duration,
    /// Bound on the whole load phase; clients stop inserting when it passes.
    pub time_limit: Duration,
    pub seed: u64,
}

/// One closed-loop measurement.
#[derive(Clone, Debug)]
pub struct RunSpec {
    pub workload: Workload,
    pub distribution: Distribution,
    /// Keys are drawn from `[0, record_count)`.
    pub record_count: u64,
    pub value_size: usize,
    /// Operations completing before this are not measured.
    pub warmup: Duration,
    /// The measured window after the warmup.
    pub duration: Duration,
    /// Bound on one operation; one that takes longer counts as an error.
    pub op_timeout: Duration,
    pub seed: u64,
    /// Operations per second all clients together start at most (`None`:
    /// closed loop, each client starts its next operation at once). A
    /// client behind its schedule starts at once, so a rate above what the
    /// system serves is the closed loop.
    pub rate: Option<f64>,
    /// How many clients share the rate.
    pub clients: usize,
}

/// Everything one backend runs: a load phase, then each workload under each
/// distribution.
#[derive(Clone, Debug)]
pub struct Suite {
    pub workloads: Vec<Workload>,
    pub distributions: Vec<Distribution>,
    pub record_count: u64,
    pub value_size: usize,
    pub warmup: Duration,
    pub duration: Duration,
    pub op_timeout: Duration,
    /// Run the load phase (off when the keys are already there).
    pub load: bool,
    pub load_time_limit: Duration,
    pub seed: u64,
    /// Reported in the results: how many connections the handles share.
    pub connections: usize,
    /// Operations per second of the measured runs (not the load phase);
    /// see [`RunSpec::rate`].
    pub rate: Option<f64>,
}

/// SplitMix64 finaliser, to derive independent per-client seeds.
fn mix_seed(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

fn client_rng(seed: u64, salt: u64, client: usize) -> ChaCha8Rng {
    ChaCha8Rng::seed_from_u64(mix_seed(seed ^ mix_seed(salt ^ mix_seed(client as u64))))
}

/// Waits for every client task; a task that is still running `grace` after
/// the planned end is aborted (and reported) so that the phase is bounded.
async fn join_bounded<T: 'static>(mut set: JoinSet<T>, until: Instant) -> (Vec<T>, usize) {
    let mut done = Vec::with_capacity(set.len());
    let mut lost = 0;
    loop {
        let left = until.saturating_duration_since(clock::now());
        match tokio::time::timeout(left, set.join_next()).await {
            Ok(Some(Ok(v))) => done.push(v),
            Ok(Some(Err(e))) => {
                eprintln!("loadgen: client task failed: {e}");
                lost += 1;
            }
            Ok(None) => break,
            Err(_) => {
                lost += set.len();
                eprintln!(
                    "loadgen: aborting {} client(s) past the time bound",
                    set.len()
                );
                set.abort_all();
                while set.join_next().await.is_some() {}
                break;
            }
        }
    }
    (done, lost)
}

/// Inserts keys `0..record_count` (as YCSB key names), spread over the
/// handles: client `i` inserts `i, i + n, i + 2n, ...`. Returns the stats as
/// a run of workload `load` (op type update).
pub async fn load<B: KvBackend>(handles: &[Arc<B>], spec: &LoadSpec) -> RunResult {
    let n = handles.len().max(1);
    let start = clock::now();
    let started_unix = clock::unix_seconds();
    let deadline = start + spec.time_limit;
    let seconds = spec.time_limit.as_secs() as usize + 2;
    let mut set = JoinSet::new();
    for (i, h) in handles.iter().enumerate() {
        let h = Arc::clone(h);
        let spec = spec.clone();
        set.spawn(async move {
            let mut rng = client_rng(spec.seed, u64::MAX, i);
            let mut value = vec![0u8; spec.value_size];
            let mut stats = OpStats::new();
            let mut series = Series::with_seconds(seconds);
            let mut keynum = i as u64;
            while keynum < spec.record_count {
                let t0 = clock::now();
                if t0 >= deadline {
                    break;
                }
                rng.fill_bytes(&mut value);
                let key = key_name(keynum);
                let r =
                    tokio::time::timeout(spec.op_timeout, h.insert(key.as_bytes(), &value)).await;
                let t1 = clock::now();
                match r {
                    Ok(Ok(())) => {
                        stats.record(t1 - t0);
                        series.count(t1 - start, true);
                        series.record_latency(t1 - start, t1 - t0);
                    }
                    Ok(Err(e)) => {
                        stats.record_error(|| format!("{e:#}"));
                        series.count(t1 - start, false);
                    }
                    Err(_) => {
                        stats.record_error(|| format!("timed out after {:?}", spec.op_timeout));
                        series.count(t1 - start, false);
                    }
                }
                keynum += n as u64;
                tokio::task::yield_now().await;
            }
            (stats, series)
        });
    }
    let (done, lost) = join_bounded(set, deadline + spec.op_timeout + Duration::from_secs(5)).await;
    let elapsed = start.elapsed();
    let mut ops = OpSet::default();
    let mut series = Series::default();
    for (s, ser) in &done {
        ops.get_mut(OpType::Update).merge(s);
        series.merge(ser);
    }
    if lost > 0 {
        ops.get_mut(OpType::Update)
            .record_error(|| format!("{lost} load client(s) lost"));
    }
    let name = handles.first().map_or("?", |h| h.name()).to_string();
    RunResult {
        backend: name,
        workload: "load".into(),
        distribution: "sequential".into(),
        clients: handles.len(),
        connections: 0,
        value_size: spec.value_size,
        record_count: spec.record_count,
        warmup: Duration::ZERO,
        duration: elapsed,
        ops,
        series,
        started_unix,
    }
}

/// What one operation returned: `Ok(true)` when a read found nothing.
type Outcome = Result<anyhow::Result<bool>, tokio::time::error::Elapsed>;

async fn one_op<B: KvBackend>(
    h: &B,
    workload: Workload,
    op: OpType,
    key: &[u8],
    value: &[u8],
    op_timeout: Duration,
) -> Outcome {
    match op {
        OpType::Update if workload == Workload::Append => {
            tokio::time::timeout(op_timeout, async {
                h.append(key, value).await.map(|()| false)
            })
            .await
        }
        OpType::Read => {
            tokio::time::timeout(op_timeout, async { h.get(key).await.map(|v| v.is_none()) }).await
        }
        OpType::Update => {
            tokio::time::timeout(op_timeout, async {
                h.put(key, value).await.map(|()| false)
            })
            .await
        }
        OpType::ReadModifyWrite => {
            tokio::time::timeout(op_timeout, async {
                h.read_modify_write(key, value).await.map(|()| false)
            })
            .await
        }
    }
}

async fn client_loop<B: KvBackend>(
    h: Arc<B>,
    spec: Arc<RunSpec>,
    chooser: Arc<KeyChooser>,
    start: Instant,
    client: usize,
) -> (OpSet, Series) {
    let salt = ((spec.workload as u64) << 8) | spec.distribution as u64;
    let mut rng = client_rng(spec.seed, salt, client);
    let end = spec.warmup + spec.duration;
    let seconds = end.as_secs() as usize + 1;
    let mut value = vec![0u8; spec.value_size];
    let mut ops = OpSet::default();
    let mut series = Series::with_seconds(seconds);
    // With a rate, client i of n starts operation k at (k + i/n) / rate_i,
    // where rate_i is its share: the clients' starts interleave evenly.
    let clients = spec.clients.max(1) as f64;
    let interval = spec
        .rate
        .filter(|r| *r > 0.0)
        .map(|r| Duration::from_secs_f64(clients / r));
    let mut next_start = interval.map(|i| start + i.mul_f64(client as f64 / clients));
    loop {
        if let (Some(at), Some(interval)) = (next_start, interval) {
            if at > clock::now() {
                tokio::time::sleep_until(at.into()).await;
            }
            next_start = Some(at + interval);
        }
        let t0 = clock::now();
        if t0.saturating_duration_since(start) >= end {
            break;
        }
        let op = spec.workload.next_op(&mut rng);
        let key = key_name(chooser.next(&mut rng));
        if op != OpType::Read {
            rng.fill_bytes(&mut value);
        }
        let outcome = one_op(
            &*h,
            spec.workload,
            op,
            key.as_bytes(),
            &value,
            spec.op_timeout,
        )
        .await;
        let t1 = clock::now();
        let at = t1.saturating_duration_since(start);
        let measured = at >= spec.warmup && at < end;
        let stats = ops.get_mut(op);
        match outcome {
            Ok(Ok(miss)) => {
                series.count(at, true);
                series.record_latency(at, t1 - t0);
                if measured {
                    stats.record(t1 - t0);
                    stats.misses += u64::from(miss);
                }
            }
            Ok(Err(e)) => {
                series.count(at, false);
                if measured {
                    stats.record_error(|| format!("{e:#}"));
                }
            }
            Err(_) => {
                series.count(at, false);
                if measured {
                    stats.record_error(|| format!("timed out after {:?}", spec.op_timeout));
                }
            }
        }
        // Lets the other clients on this worker run even when the backend
        // answers without ever waiting (in-memory backends, instant errors).
        tokio::task::yield_now().await;
    }
    (ops, series)
}

/// Runs one closed-loop measurement: every handle is one client issuing one
/// operation at a time for `warmup + duration`; only operations completing
/// in the window after the warmup are measured.
pub async fn run<B: KvBackend>(
    handles: &[Arc<B>],
    spec: &RunSpec,
    connections: usize,
) -> RunResult {
    assert!(spec.record_count > 0, "record_count must be positive");
    let chooser = Arc::new(match spec.distribution {
        Distribution::Uniform => KeyChooser::Uniform {
            items: spec.record_count,
        },
        Distribution::Zipfian => KeyChooser::Zipfian(ScrambledZipfian::new(spec.record_count)),
    });
    let spec_arc = Arc::new(spec.clone());
    let start = clock::now();
    let started_unix = clock::unix_seconds();
    let mut set = JoinSet::new();
    for (i, h) in handles.iter().enumerate() {
        set.spawn(client_loop(
            Arc::clone(h),
            Arc::clone(&spec_arc),
            Arc::clone(&chooser),
            start,
            i,
        ));
    }
    let bound = start + spec.warmup + spec.duration + spec.op_timeout + Duration::from_secs(5);
    let (done, lost) = join_bounded(set, bound).await;
    let mut ops = OpSet::default();
    let mut series = Series::default();
    for (o, s) in &done {
        ops.merge(o);
        series.merge(s);
    }
    if lost > 0 {
        let op = spec.workload.mix()[0].0;
        ops.get_mut(op)
            .record_error(|| format!("{lost} client(s) lost"));
    }
    RunResult {
        backend: handles.first().map_or("?", |h| h.name()).to_string(),
        workload: spec.workload.name().into(),
        distribution: spec.distribution.name().into(),
        clients: handles.len(),
        connections,
        value_size: spec.value_size,
        record_count: spec.record_count,
        warmup: spec.warmup,
        duration: spec.duration,
        ops,
        series,
        started_unix,
    }
}

/// Loads the records (unless `suite.load` is off), then runs every workload
/// under every distribution with the same handles, one client per handle.
/// `on_result` sees each result as soon as it is there (the load phase
/// included, as workload `load`).
pub async fn run_suite<B: KvBackend>(
    handles: Vec<B>,
    suite: &Suite,
    mut on_result: impl FnMut(&RunResult),
) -> Vec<RunResult> {
    let handles: Vec<Arc<B>> = handles.into_iter().map(Arc::new).collect();
    let mut results = Vec::new();
    if handles.is_empty() {
        return results;
    }
    if suite.load {
        let mut r = load(
            &handles,
            &LoadSpec {
                record_count: suite.record_count,
                value_size: suite.value_size,
                op_timeout: suite.op_timeout,
                time_limit: suite.load_time_limit,
                seed: suite.seed,
            },
        )
        .await;
        r.connections = suite.connections;
        on_result(&r);
        results.push(r);
    }
    for &workload in &suite.workloads {
        for &distribution in &suite.distributions {
            let spec = RunSpec {
                workload,
                distribution,
                record_count: suite.record_count,
                value_size: suite.value_size,
                warmup: suite.warmup,
                duration: suite.duration,
                op_timeout: suite.op_timeout,
                seed: suite.seed,
                rate: suite.rate,
                clients: handles.len(),
            };
            let r = run(&handles, &spec, suite.connections).await;
            on_result(&r);
            results.push(r);
        }
    }
    results
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backends::memory::MemoryBackend;

    fn suite(workloads: Vec<Workload>) -> Suite {
        Suite {
            workloads,
            distributions: vec![Distribution::Uniform, Distribution::Zipfian],
            record_count: 500,
            value_size: 64,
            warmup: Duration::from_millis(100),
            duration: Duration::from_millis(300),
            op_timeout: Duration::from_secs(1),
            load: true,
            load_time_limit: Duration::from_secs(10),
            seed: 1,
            connections: 1,
            rate: None,
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn memory_suite_loads_and_runs_every_workload() {
        let store = MemoryBackend::new();
        let handles = vec![store.clone(); 8];
        let mut seen = 0;
        let results = run_suite(handles, &suite(Workload::ALL.to_vec()), |_| seen += 1).await;
        assert_eq!(results.len(), 1 + Workload::ALL.len() * 2);
        assert_eq!(seen, results.len());
        let load = &results[0];
        assert_eq!(load.workload, "load");
        assert_eq!(load.ops.get(OpType::Update).count(), 500);
        assert_eq!(store.len(), 500);
        for r in &results[1..] {
            assert_eq!(r.errors(), 0, "{}", r.workload);
            assert_eq!(r.misses(), 0, "{}: every key was loaded", r.workload);
            assert!(
                r.ops_per_sec() > 100.0,
                "{} {}",
                r.workload,
                r.ops_per_sec()
            );
            let w: Workload = r.workload.parse().unwrap();
            let issued: Vec<OpType> = r.op_types().collect();
            let mut expected: Vec<OpType> = w.mix().iter().map(|m| m.0).collect();
            expected.sort_by_key(|o| o.index());
            if w == Workload::B {
                // 5% updates: present unless the run was tiny.
                assert!(issued.contains(&OpType::Read));
            } else {
                assert_eq!(issued, expected, "{w}");
            }
            // Warmup and measured window are both in the series.
            assert!(r.series.ok.iter().sum::<u64>() >= r.ops.total().count());
        }
        assert_eq!(store.len(), 500, "runs only touch loaded keys");
    }

    /// Fails every put; reads succeed.
    struct FlakyBackend;

    impl KvBackend for FlakyBackend {
        fn name(&self) -> &str {
            "flaky"
        }
        async fn get(&self, _key: &[u8]) -> anyhow::Result<Option<Vec<u8>>> {
            tokio::time::sleep(Duration::from_micros(50)).await;
            Ok(Some(vec![1]))
        }
        async fn put(&self, _key: &[u8], _value: &[u8]) -> anyhow::Result<()> {
            anyhow::bail!("read-only")
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn errors_are_counted_and_clients_carry_on() {
        let handles: Vec<Arc<FlakyBackend>> = (0..4).map(|_| Arc::new(FlakyBackend)).collect();
        let spec = RunSpec {
            workload: Workload::F,
            distribution: Distribution::Uniform,
            record_count: 100,
            value_size: 16,
            warmup: Duration::from_millis(50),
            duration: Duration::from_millis(300),
            op_timeout: Duration::from_secs(1),
            seed: 9,
            rate: None,
            clients: handles.len(),
        };
        let r = run(&handles, &spec, 4).await;
        let reads = r.ops.get(OpType::Read);
        let rmw = r.ops.get(OpType::ReadModifyWrite);
        assert!(reads.count() > 10 && reads.errors == 0);
        assert!(rmw.errors > 10 && rmw.count() == 0);
        assert_eq!(rmw.first_error.as_deref(), Some("read-only"));
    }

    /// Never answers a put.
    struct StuckBackend;

    impl KvBackend for StuckBackend {
        fn name(&self) -> &str {
            "stuck"
        }
        async fn get(&self, _key: &[u8]) -> anyhow::Result<Option<Vec<u8>>> {
            Ok(None)
        }
        async fn put(&self, _key: &[u8], _value: &[u8]) -> anyhow::Result<()> {
            std::future::pending().await
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn hung_operations_time_out_and_the_run_ends() {
        let handles: Vec<Arc<StuckBackend>> = (0..3).map(|_| Arc::new(StuckBackend)).collect();
        let spec = RunSpec {
            workload: Workload::PutOnly,
            distribution: Distribution::Zipfian,
            record_count: 100,
            value_size: 8,
            warmup: Duration::ZERO,
            duration: Duration::from_millis(500),
            op_timeout: Duration::from_millis(100),
            seed: 2,
            rate: None,
            clients: handles.len(),
        };
        let t = clock::now();
        let r = run(&handles, &spec, 1).await;
        assert!(t.elapsed() < Duration::from_secs(3));
        let u = r.ops.get(OpType::Update);
        assert_eq!(u.count(), 0);
        assert!(u.errors >= 3, "{}", u.errors);
        assert!(u.first_error.as_deref().unwrap().contains("timed out"));
        let load = load(
            &handles,
            &LoadSpec {
                record_count: 1000,
                value_size: 8,
                op_timeout: Duration::from_millis(50),
                time_limit: Duration::from_millis(300),
                seed: 0,
            },
        )
        .await;
        assert!(t.elapsed() < Duration::from_secs(5));
        assert_eq!(load.ops.get(OpType::Update).count(), 0);
        assert!(load.errors() > 0);
    }
}
