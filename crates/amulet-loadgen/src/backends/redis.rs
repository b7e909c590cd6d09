//! Redis through the `redis` crate (tokio, multiplexed connections): GET and
//! SET, and XADD for the `append` workload (Redis Streams).

use super::connection_for;
use crate::KvBackend;
use anyhow::Context as _;
use redis::aio::MultiplexedConnection;
use redis::AsyncConnectionConfig;
use std::time::Duration;

/// One client's handle: a clone of one of the shared multiplexed connections.
#[derive(Clone)]
pub struct RedisBackend {
    conn: MultiplexedConnection,
    /// Streams of the `append` workload.
    streams: usize,
}

impl RedisBackend {
    /// Opens `connections` multiplexed connections to `url` (e.g.
    /// `redis://127.0.0.1:26379/`) and returns `clients` handles spread over
    /// them round-robin; with `connections == clients` every client has its
    /// own connection (as YCSB's redis binding, one connection per thread).
    /// `op_timeout` is the redis crate's response timeout (its default of
    /// 500 ms would fail slow fsyncs before the load generator's own bound).
    /// `streams`: how many streams `append` spreads over.
    pub async fn connect(
        url: &str,
        clients: usize,
        connections: usize,
        op_timeout: Duration,
        streams: usize,
    ) -> anyhow::Result<Vec<RedisBackend>> {
        let client = redis::Client::open(url).with_context(|| format!("redis url {url}"))?;
        let config = AsyncConnectionConfig::new()
            .set_connection_timeout(Some(Duration::from_secs(5)))
            .set_response_timeout(Some(op_timeout));
        let mut conns = Vec::with_capacity(connections.max(1));
        for _ in 0..connections.max(1) {
            let c = client
                .get_multiplexed_async_connection_with_config(&config)
                .await
                .with_context(|| format!("connecting to redis at {url}"))?;
            conns.push(c);
        }
        Ok((0..clients)
            .map(|i| RedisBackend {
                conn: conns[connection_for(i, conns.len())].clone(),
                streams: streams.max(1),
            })
            .collect())
    }
}

impl KvBackend for RedisBackend {
    fn name(&self) -> &str {
        "redis"
    }

    async fn get(&self, key: &[u8]) -> anyhow::Result<Option<Vec<u8>>> {
        let mut conn = self.conn.clone();
        let v: Option<Vec<u8>> = redis::cmd("GET").arg(key).query_async(&mut conn).await?;
        Ok(v)
    }

    async fn put(&self, key: &[u8], value: &[u8]) -> anyhow::Result<()> {
        let mut conn = self.conn.clone();
        let () = redis::cmd("SET")
            .arg(key)
            .arg(value)
            .query_async(&mut conn)
            .await?;
        Ok(())
    }

    /// Redis Streams: `XADD bench-log-<i> * v <value>` (the stream picked
    /// by the key as the Amulet backend picks its log), durable under
    /// `appendfsync always` like a SET.
    async fn append(&self, key: &[u8], value: &[u8]) -> anyhow::Result<()> {
        let mut conn = self.conn.clone();
        let stream = format!("bench-log-{}", super::amulet::log_index(key, self.streams));
        let _id: String = redis::cmd("XADD")
            .arg(stream)
            .arg("*")
            .arg("v")
            .arg(value)
            .query_async(&mut conn)
            .await?;
        Ok(())
    }
}
