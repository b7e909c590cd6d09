//! Amulet through its Rust client (`amulet-client`): get and put on one
//! map, each a linearizable command in a session (puts apply exactly once
//! even when resent); the `append` workload appends to DLog logs.

use super::connection_for;
use crate::KvBackend;
use amulet_client::{Client, ClientConfig, DLog, DMap};
use std::time::Duration;

/// One client's handle: the map through one of the shared clients.
#[derive(Clone)]
pub struct AmuletBackend {
    map: DMap,
    /// The logs of the `append` workload (`{map}-log-{i}`), none without.
    logs: Vec<DLog>,
    /// [`Routing::no_map_cache`].
    no_map_cache: bool,
}

/// The log (or stream) index `key` picks among `count`: FNV-1a, so every
/// backend spreads the same keys the same way.
pub fn log_index(key: &[u8], count: usize) -> usize {
    let hash = key.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    });
    (hash % count.max(1) as u64) as usize
}

/// How the load generator's Amulet clients send their operations.
#[derive(Clone, Copy, Debug)]
pub struct Routing {
    /// Bounds one operation, retries included.
    pub op_timeout: Duration,
    /// [`ClientConfig::batches_in_flight`].
    pub batches_in_flight: usize,
    /// The opposite of [`ClientConfig::one_replica_per_partition`].
    pub random_replica: bool,
    /// A map created here is split by key ranges over the cluster's first
    /// this many partitions, cut where YCSB's first `records` keys fall
    /// evenly (DynaTree's experiments, docs/dynatree.md); 0: hashed.
    pub range_partitions: usize,
    /// The workload's key count, for those cuts.
    pub records: u64,
    /// Fetch the partition map from a node before every operation: no
    /// client cache of the map (DynaTree's Fig. 3, "without cache").
    pub no_map_cache: bool,
}

/// The range layout of [`Routing::range_partitions`] over `map`'s
/// partitions: cuts at the quantiles of YCSB's key names `0..records`.
fn range_layout(
    map: &amulet_smr::PartitionMap,
    partitions: usize,
    records: u64,
) -> anyhow::Result<amulet_smr::Layout> {
    let ids: Vec<_> = map.partitions.keys().copied().take(partitions).collect();
    anyhow::ensure!(
        ids.len() == partitions,
        "--amulet-range-partitions {partitions}: the cluster has {} partitions",
        map.partitions.len()
    );
    // A sample of the keys is enough for the quantiles: every k-th one.
    let step = (records / 100_000).max(1);
    let mut keys: Vec<String> = (0..records)
        .step_by(step as usize)
        .map(crate::keys::key_name)
        .collect();
    keys.sort();
    let mut ranges = vec![(amulet_client::Bytes::new(), ids[0])];
    for (at, id) in ids.iter().enumerate().skip(1) {
        let cut = &keys[at * keys.len() / partitions];
        ranges.push((amulet_client::Bytes::from(cut.clone()), *id));
    }
    Ok(amulet_smr::Layout::Range(ranges))
}

impl Routing {
    /// The clients' configuration.
    pub fn config(&self) -> ClientConfig {
        ClientConfig {
            operation_timeout: self.op_timeout,
            attempt_timeout: self.op_timeout.min(Duration::from_secs(2)),
            batches_in_flight: self.batches_in_flight,
            one_replica_per_partition: !self.random_replica,
            ..Default::default()
        }
    }
}

impl AmuletBackend {
    /// Without a map cache: the map fetched again before the operation.
    async fn uncached(&self) {
        if self.no_map_cache {
            self.map.client().refresh_map().await;
        }
    }

    /// Opens `connections` clients through `seeds` (client API
    /// addresses), creates `map` if needed, and returns `clients` handles
    /// spread over the clients round-robin. `routing` sets how the clients
    /// send ([`Routing::config`]). With `logs` > 0 it also creates the logs
    /// `{map}-log-0` .. (if absent) for `append`.
    pub async fn connect(
        seeds: &[String],
        map: &str,
        clients: usize,
        connections: usize,
        routing: Routing,
        logs: usize,
    ) -> anyhow::Result<Vec<AmuletBackend>> {
        let config = routing.config();
        let mut maps = Vec::new();
        for at in 0..connections.max(1) {
            let client = Client::connect_with(seeds.to_vec(), config.clone()).await?;
            if at == 0 && routing.range_partitions > 0 {
                let layout = range_layout(
                    &client.partition_map(),
                    routing.range_partitions,
                    routing.records.max(1),
                )?;
                match client.create_map_with(map, layout).await {
                    Ok(_) | Err(amulet_client::Error::AlreadyExists(_)) => {}
                    Err(e) => return Err(e.into()),
                }
            }
            let mut handles = Vec::new();
            for i in 0..logs {
                handles.push(
                    client
                        .create_log_if_absent(&format!("{map}-log-{i}"))
                        .await?,
                );
            }
            maps.push((client.create_map_if_absent(map).await?, handles));
        }
        Ok((0..clients)
            .map(|i| {
                let (map, logs) = maps[connection_for(i, maps.len())].clone();
                AmuletBackend {
                    map,
                    logs,
                    no_map_cache: routing.no_map_cache,
                }
            })
            .collect())
    }
}

impl KvBackend for AmuletBackend {
    fn name(&self) -> &str {
        "amulet"
    }

    async fn get(&self, key: &[u8]) -> anyhow::Result<Option<Vec<u8>>> {
        self.uncached().await;
        Ok(self.map.get(key.to_vec()).await?.map(|v| v.to_vec()))
    }

    async fn put(&self, key: &[u8], value: &[u8]) -> anyhow::Result<()> {
        self.uncached().await;
        self.map.put(key.to_vec(), value.to_vec()).await?;
        Ok(())
    }

    async fn append(&self, key: &[u8], value: &[u8]) -> anyhow::Result<()> {
        anyhow::ensure!(!self.logs.is_empty(), "no logs: connect with logs > 0");
        let log = &self.logs[log_index(key, self.logs.len())];
        log.append(value.to_vec()).await?;
        Ok(())
    }
}
