//! etcd through the `etcd-client` crate (gRPC): put is `KV.Put`, get is a
//! single-key `KV.Range` (linearizable, etcd's default).

use super::connection_for;
use crate::KvBackend;
use anyhow::Context as _;
use etcd_client::{Client, ConnectOptions, KvClient};
use std::time::Duration;

/// One client's handle: a clone of one of the shared gRPC clients.
#[derive(Clone)]
pub struct EtcdBackend {
    kv: KvClient,
}

impl EtcdBackend {
    /// Opens `connections` etcd clients, each balanced over all `endpoints`
    /// (e.g. `127.0.0.1:23791`), and returns `clients` handles spread over
    /// them round-robin (gRPC multiplexes the concurrent requests of the
    /// clients sharing one). `op_timeout` becomes the per-request gRPC timeout.
    pub async fn connect(
        endpoints: &[String],
        clients: usize,
        connections: usize,
        op_timeout: Duration,
    ) -> anyhow::Result<Vec<EtcdBackend>> {
        anyhow::ensure!(!endpoints.is_empty(), "no etcd endpoints");
        let options = ConnectOptions::new()
            .with_connect_timeout(Duration::from_secs(5))
            .with_timeout(op_timeout);
        let mut kvs = Vec::with_capacity(connections.max(1));
        for _ in 0..connections.max(1) {
            let c = Client::connect(endpoints, Some(options.clone()))
                .await
                .with_context(|| format!("connecting to etcd at {}", endpoints.join(",")))?;
            kvs.push(c.kv_client());
        }
        Ok((0..clients)
            .map(|i| EtcdBackend {
                kv: kvs[connection_for(i, kvs.len())].clone(),
            })
            .collect())
    }
}

impl KvBackend for EtcdBackend {
    fn name(&self) -> &str {
        "etcd"
    }

    async fn get(&self, key: &[u8]) -> anyhow::Result<Option<Vec<u8>>> {
        let mut kv = self.kv.clone();
        let mut resp = kv.get(key, None).await?;
        Ok(resp
            .take_kvs()
            .into_iter()
            .next()
            .map(|kv| kv.into_key_value().1))
    }

    async fn put(&self, key: &[u8], value: &[u8]) -> anyhow::Result<()> {
        let mut kv = self.kv.clone();
        kv.put(key, value, None).await?;
        Ok(())
    }
}
