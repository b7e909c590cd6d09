//! Amulet's eventual maps through the Rust client (docs/eventual-maps.md),
//! on DottedDB's store or the MerkleDB baseline's (`--merkle`), for the
//! paper's comparison on real processes (DottedDB §V, Table II).
//!
//! - `get`: a read from a majority of the key's replicas (R = 2 of 3);
//!   the reply's context is kept for the key by this client;
//! - `put` and `insert`: a write held by a majority (W = 2 of 3) with the
//!   context this client last saw for the key (none for a key it never
//!   read: a blind write, which keeps what it did not see as a sibling);
//! - `read_modify_write`: the paper's update: a read, then a write with
//!   the read's context (supersedes exactly what it read).

use super::connection_for;
use crate::KvBackend;
use amulet_client::{Client, ClientConfig, Context, EventualMap};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Contexts a client keeps at most (then it forgets them all: the next
/// writes of those keys are blind).
const CONTEXTS_MAX: usize = 1 << 16;

/// One client's handle.
#[derive(Clone)]
pub struct EventualBackend {
    map: EventualMap,
    name: &'static str,
    contexts: Arc<Mutex<HashMap<Vec<u8>, Context>>>,
}

impl EventualBackend {
    /// Opens `connections` clients through `seeds`, creates the eventual
    /// map `map` (3 replicas per key; the baseline's store with `merkle`)
    /// if needed, and returns `clients` handles.
    pub async fn connect(
        seeds: &[String],
        map: &str,
        merkle: bool,
        clients: usize,
        connections: usize,
        op_timeout: Duration,
    ) -> anyhow::Result<Vec<EventualBackend>> {
        let config = ClientConfig {
            operation_timeout: op_timeout,
            attempt_timeout: op_timeout.min(Duration::from_secs(2)),
            ..Default::default()
        };
        let mut maps = Vec::new();
        for i in 0..connections.max(1) {
            let client = Client::connect_with(seeds.to_vec(), config.clone()).await?;
            if i == 0 && client.is_eventual(map).await.is_none() {
                match client.create_eventual_map_with(map, 3, 0, merkle).await {
                    Ok(_) | Err(amulet_client::Error::AlreadyExists(_)) => {}
                    Err(e) => return Err(e.into()),
                }
                // Every node applies the map's creation before the load.
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
            maps.push(client.eventual_map(map)?);
        }
        let name = if merkle {
            "amulet-merkle"
        } else {
            "amulet-eventual"
        };
        Ok((0..clients)
            .map(|i| EventualBackend {
                map: maps[connection_for(i, maps.len())].clone(),
                name,
                contexts: Arc::new(Mutex::new(HashMap::new())),
            })
            .collect())
    }

    fn context(&self, key: &[u8]) -> Context {
        let contexts = self.contexts.lock().expect("contexts lock");
        contexts.get(key).cloned().unwrap_or_default()
    }

    fn keep(&self, key: &[u8], context: Context) {
        let mut contexts = self.contexts.lock().expect("contexts lock");
        if contexts.len() >= CONTEXTS_MAX {
            contexts.clear();
        }
        contexts.insert(key.to_vec(), context);
    }
}

impl KvBackend for EventualBackend {
    fn name(&self) -> &str {
        self.name
    }

    async fn get(&self, key: &[u8]) -> anyhow::Result<Option<Vec<u8>>> {
        let read = self.map.get(key).await?;
        let first = read.values.first().map(|v| v.to_vec());
        self.keep(key, read.context);
        Ok(first)
    }

    async fn put(&self, key: &[u8], value: &[u8]) -> anyhow::Result<()> {
        let written = self.map.put(key, value, &self.context(key)).await?;
        self.keep(key, written.context);
        Ok(())
    }

    async fn read_modify_write(&self, key: &[u8], value: &[u8]) -> anyhow::Result<()> {
        let read = self.map.get(key).await?;
        let written = self.map.put(key, value, &read.context).await?;
        self.keep(key, written.context);
        Ok(())
    }
}
