//! Amulet through its Rust client (`amulet-client`): get and put on one
//! map, each a linearizable command in a session (puts apply exactly once
//! even when resent).

use super::connection_for;
use crate::KvBackend;
use amulet_client::{Client, ClientConfig, DMap};
use std::time::Duration;

/// One client's handle: the map through one of the shared clients.
#[derive(Clone)]
pub struct AmuletBackend {
    map: DMap,
}

impl AmuletBackend {
    /// Opens `connections` clients through `seeds` (client API
    /// addresses), creates `map` if needed, and returns `clients` handles
    /// spread over the clients round-robin. `op_timeout` bounds one
    /// operation, retries included; `batches_in_flight` is
    /// [`ClientConfig::batches_in_flight`].
    pub async fn connect(
        seeds: &[String],
        map: &str,
        clients: usize,
        connections: usize,
        op_timeout: Duration,
        batches_in_flight: usize,
    ) -> anyhow::Result<Vec<AmuletBackend>> {
        let config = ClientConfig {
            operation_timeout: op_timeout,
            attempt_timeout: op_timeout.min(Duration::from_secs(2)),
            batches_in_flight,
            ..Default::default()
        };
        let mut maps = Vec::new();
        for _ in 0..connections.max(1) {
            let client = Client::connect_with(seeds.to_vec(), config.clone()).await?;
            maps.push(client.create_map_if_absent(map).await?);
        }
        Ok((0..clients)
            .map(|i| AmuletBackend {
                map: maps[connection_for(i, maps.len())].clone(),
            })
            .collect())
    }
}

impl KvBackend for AmuletBackend {
    fn name(&self) -> &str {
        "amulet"
    }

    async fn get(&self, key: &[u8]) -> anyhow::Result<Option<Vec<u8>>> {
        Ok(self.map.get(key.to_vec()).await?.map(|v| v.to_vec()))
    }

    async fn put(&self, key: &[u8], value: &[u8]) -> anyhow::Result<()> {
        self.map.put(key.to_vec(), value.to_vec()).await?;
        Ok(())
    }
}
