//! YCSB-style closed-loop key-value benchmark.
//!
//! `amulet-loadgen` measures key-value stores side by side in one run: each of
//! `clients` tasks issues one operation at a time (closed loop) for a fixed
//! duration after a warmup, choosing operations by a YCSB core workload mix
//! ([`Workload`]: A, B, C, F and put-only) and keys by a uniform or YCSB
//! scrambled-zipfian distribution ([`generator`]). Keys are YCSB's
//! `user{fnv64(n)}` ([`keys::key_name`]); a load phase first inserts
//! `record_count` keys in parallel over the clients. Latencies go to per-op
//! HDR histograms in microseconds ([`stats`]) that are merged at the end;
//! errors are counted per operation type and the client carries on.
//!
//! # Backends
//! `backends::etcd` (cargo feature `etcd`), `backends::zookeeper` (cargo
//! feature `zookeeper`), [`backends::redis`], [`backends::amulet`] and
//! [`backends::memory`]. Their reads are not equally strong: etcd's and
//! Amulet's are linearizable, ZooKeeper's are served by the server a session
//! is connected to (sequentially consistent, possibly stale), Redis has one
//! server.
//!
//! # Adding a backend
//! Implement [`KvBackend`] for a connection handle (one handle per client;
//! handles may share a connection inside, e.g. a cloned gRPC channel), write a
//! `connect` that returns `Vec<YourBackend>` (one per client), and add a
//! `BackendKind` variant and its arm in `run_backend` in `src/cli.rs` that
//! calls [`runner::run_suite`] with those handles. [`backends::memory`] is the
//! smallest implementation, [`backends::redis`] a networked one.

pub mod backends;
pub mod bank;
pub mod cli;
pub mod clock;
pub mod generator;
pub mod keys;
pub mod output;
pub mod runner;
pub mod stats;
pub mod workload;

pub use runner::{run_suite, LoadSpec, RunSpec};
pub use stats::{OpType, RunResult};
pub use workload::{Distribution, Workload};

use std::future::Future;

/// A key-value store as the load generator sees it.
///
/// The runner gives every closed-loop client its own handle (`Vec<B>`, one per
/// client) and calls it from tokio tasks, so the futures must be `Send`: the
/// methods are `async fn` with a `Send` bound spelled out (the form
/// `trait_variant::make(Send)` expands to). Implementations simply write
/// `async fn get(&self, key: &[u8]) -> anyhow::Result<Option<Vec<u8>>> { .. }`
/// in their `impl` block. A handle may own a dedicated connection or share
/// one with other handles (a clone of a multiplexed connection).
pub trait KvBackend: Send + Sync + 'static {
    /// Short name for tables and CSV rows (e.g. `etcd`, `redis`, `amulet`).
    fn name(&self) -> &str;

    /// The value stored under `key`, or `None` when there is none.
    fn get(&self, key: &[u8]) -> impl Future<Output = anyhow::Result<Option<Vec<u8>>>> + Send;

    /// Stores `value` under `key` (insert or overwrite).
    fn put(&self, key: &[u8], value: &[u8]) -> impl Future<Output = anyhow::Result<()>> + Send;

    /// YCSB's insert, which the load phase issues for keys it has not
    /// written before. The default is a put; a backend whose put costs more
    /// for a new key (ZooKeeper: setData fails, then create) may override
    /// it with the operation meant for new keys.
    fn insert(&self, key: &[u8], value: &[u8]) -> impl Future<Output = anyhow::Result<()>> + Send {
        self.put(key, value)
    }

    /// Appends `value` to the log that `key` picks (the `append`
    /// workload). The default is a put of `key`, for stores without logs
    /// (etcd, ZooKeeper: the nearest thing they do); Amulet appends to a
    /// DLog log, Redis to a stream (XADD).
    fn append(&self, key: &[u8], value: &[u8]) -> impl Future<Output = anyhow::Result<()>> + Send {
        self.put(key, value)
    }

    /// YCSB's read-modify-write: reads `key`, then writes `value`. The default
    /// is a get followed by a put (not atomic, as in YCSB); a backend with a
    /// native operation may override it.
    fn read_modify_write(
        &self,
        key: &[u8],
        value: &[u8],
    ) -> impl Future<Output = anyhow::Result<()>> + Send {
        async move {
            let _old = self.get(key).await?;
            self.put(key, value).await
        }
    }
}
