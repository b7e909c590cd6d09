//! An in-process map: measures the load generator's own overhead and drives
//! the runner's tests.

use crate::KvBackend;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// A shared in-memory map; clones share the same map.
#[derive(Clone, Debug, Default)]
pub struct MemoryBackend {
    map: Arc<Mutex<HashMap<Vec<u8>, Vec<u8>>>>,
}

impl MemoryBackend {
    pub fn new() -> MemoryBackend {
        MemoryBackend::default()
    }

    /// Number of keys stored.
    pub fn len(&self) -> usize {
        self.map.lock().expect("memory backend lock").len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl KvBackend for MemoryBackend {
    fn name(&self) -> &str {
        "memory"
    }

    async fn get(&self, key: &[u8]) -> anyhow::Result<Option<Vec<u8>>> {
        Ok(self
            .map
            .lock()
            .expect("memory backend lock")
            .get(key)
            .cloned())
    }

    async fn put(&self, key: &[u8], value: &[u8]) -> anyhow::Result<()> {
        self.map
            .lock()
            .expect("memory backend lock")
            .insert(key.to_vec(), value.to_vec());
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn default_read_modify_write_reads_then_writes() {
        let m = MemoryBackend::new();
        assert_eq!(m.get(b"k").await.unwrap(), None);
        m.put(b"k", b"v1").await.unwrap();
        m.read_modify_write(b"k", b"v2").await.unwrap();
        assert_eq!(m.get(b"k").await.unwrap().as_deref(), Some(&b"v2"[..]));
        assert_eq!(m.len(), 1);
    }
}
