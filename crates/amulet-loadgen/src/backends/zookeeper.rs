//! Apache ZooKeeper through the `zookeeper-client` crate (pure Rust, tokio):
//! key `k` is the persistent znode `/amulet-bench/<k>` ([`znode_path`]) with
//! the value as its data. put is `setData`, and on `NoNode` a `create` (on
//! `NodeExists`, another client created it meanwhile, `setData` again); get is
//! `getData`, `NoNode` being a miss.
//!
//! Consistency differs from the etcd and Amulet backends: ZooKeeper writes go
//! through the leader and are linearizable, but a read is served by the server
//! the session is connected to from its local state, which may lag the leader
//! (ZooKeeper guarantees sequential consistency per session, not linearizable
//! reads; a linearizable read would need a `sync` before it, which this
//! backend does not issue). etcd's and Amulet's reads are linearizable, so
//! ZooKeeper's reads do less work here than theirs.
//!
//! Sessions: `connections` sessions, session `i` pinned to endpoint
//! `i % endpoints.len()` (one endpoint in its connect string, so the sessions
//! spread over the ensemble instead of the client's shuffled pick); client
//! handles share them round-robin ([`connection_for`]). A session pipelines the
//! requests of the clients sharing it over its one TCP connection.

use super::connection_for;
use crate::KvBackend;
use anyhow::Context as _;
use std::time::Duration;
use zookeeper_client::{Acls, Client, CreateMode, Error};

/// The znode under which every benchmark key lives (created at connect).
pub const ROOT: &str = "/amulet-bench";

/// One client's handle: a clone of one of the shared sessions.
#[derive(Clone)]
pub struct ZookeeperBackend {
    client: Client,
    op_timeout: Duration,
}

/// Whether `key` can be a znode name as it is: non-empty and only ASCII
/// letters, digits, `-` and `_` (YCSB's `user<digits>` keys are).
fn is_plain(key: &[u8]) -> bool {
    !key.is_empty()
        && key
            .iter()
            .all(|&b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// The znode of `key`: `/amulet-bench/<key>` when the key is plain (non-empty,
/// only ASCII letters, digits, `-` and `_`), else `/amulet-bench/~<hex of the
/// key>`. `~` is never in a plain name, so the mapping is injective, and no
/// byte string can yield a `/`, `.` or `..`, an empty name or a character
/// ZooKeeper rejects.
pub fn znode_path(key: &[u8]) -> String {
    let mut path = String::with_capacity(ROOT.len() + 2 + 2 * key.len());
    path.push_str(ROOT);
    path.push('/');
    if is_plain(key) {
        // Plain keys are ASCII.
        path.extend(key.iter().map(|&b| b as char));
    } else {
        path.push('~');
        for b in key {
            path.push_str(&format!("{b:02x}"));
        }
    }
    path
}

/// Awaits `f` for at most `limit`; a timeout is an error.
async fn bounded<T>(
    limit: Duration,
    what: &str,
    f: impl std::future::Future<Output = Result<T, Error>>,
) -> anyhow::Result<Result<T, Error>> {
    tokio::time::timeout(limit, f)
        .await
        .map_err(|_| anyhow::anyhow!("zookeeper {what} timed out after {limit:?}"))
}

impl ZookeeperBackend {
    /// Opens `connections` sessions, session `i` to `endpoints[i % n]` (e.g.
    /// `127.0.0.1:21811`), creates [`ROOT`] when it is missing, and returns
    /// `clients` handles spread over the sessions round-robin. `op_timeout`
    /// bounds every operation (and connecting, at least 10 s).
    pub async fn connect(
        endpoints: &[String],
        clients: usize,
        connections: usize,
        op_timeout: Duration,
    ) -> anyhow::Result<Vec<ZookeeperBackend>> {
        anyhow::ensure!(!endpoints.is_empty(), "no zookeeper endpoints");
        let connect_limit = op_timeout.max(Duration::from_secs(10));
        let mut sessions = Vec::with_capacity(connections.max(1));
        for i in 0..connections.max(1) {
            let endpoint = &endpoints[i % endpoints.len()];
            anyhow::ensure!(
                !endpoint.contains(['/', ',']),
                "zookeeper endpoint {endpoint:?}: expected host:port"
            );
            let connecting = Client::connector()
                .with_session_timeout(Duration::from_secs(10))
                .with_connection_timeout(Duration::from_secs(5))
                .with_fail_eagerly()
                .connect(endpoint);
            let client = bounded(connect_limit, "connect", connecting)
                .await
                .and_then(|r| r.map_err(anyhow::Error::from))
                .with_context(|| format!("connecting to zookeeper at {endpoint}"))?;
            sessions.push(client);
        }
        let options = CreateMode::Persistent.with_acls(Acls::anyone_all());
        match bounded(
            connect_limit,
            "create",
            sessions[0].create(ROOT, &[], &options),
        )
        .await?
        {
            Ok(_) | Err(Error::NodeExists) => {}
            Err(e) => return Err(e).with_context(|| format!("creating {ROOT}")),
        }
        Ok((0..clients)
            .map(|i| ZookeeperBackend {
                client: sessions[connection_for(i, sessions.len())].clone(),
                op_timeout,
            })
            .collect())
    }

    async fn set_data(&self, path: &str, value: &[u8]) -> anyhow::Result<Result<(), Error>> {
        let r = bounded(
            self.op_timeout,
            "setData",
            self.client.set_data(path, value, None),
        )
        .await?;
        Ok(r.map(|_stat| ()))
    }
}

impl KvBackend for ZookeeperBackend {
    fn name(&self) -> &str {
        "zookeeper"
    }

    async fn get(&self, key: &[u8]) -> anyhow::Result<Option<Vec<u8>>> {
        let path = znode_path(key);
        match bounded(self.op_timeout, "getData", self.client.get_data(&path)).await? {
            Ok((data, _stat)) => Ok(Some(data)),
            Err(Error::NoNode) => Ok(None),
            Err(e) => Err(e).with_context(|| format!("getData {path}")),
        }
    }

    async fn put(&self, key: &[u8], value: &[u8]) -> anyhow::Result<()> {
        let path = znode_path(key);
        match self.set_data(&path, value).await? {
            Ok(()) => Ok(()),
            Err(Error::NoNode) => self.create_or_set(&path, value).await,
            Err(e) => Err(e).with_context(|| format!("setData {path}")),
        }
    }

    /// The load phase's keys are new: create first (one trip through the
    /// leader, where put would take two).
    async fn insert(&self, key: &[u8], value: &[u8]) -> anyhow::Result<()> {
        self.create_or_set(&znode_path(key), value).await
    }
}

impl ZookeeperBackend {
    async fn create_or_set(&self, path: &str, value: &[u8]) -> anyhow::Result<()> {
        let options = CreateMode::Persistent.with_acls(Acls::anyone_all());
        let created = bounded(
            self.op_timeout,
            "create",
            self.client.create(path, value, &options),
        )
        .await?;
        match created {
            Ok(_) => Ok(()),
            // It exists (another client created it, or a load phase ran
            // before): overwrite it.
            Err(Error::NodeExists) => self
                .set_data(path, value)
                .await?
                .with_context(|| format!("setData {path} after NodeExists")),
            Err(e) => Err(e).with_context(|| format!("create {path}")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn ycsb_keys_map_to_a_child_of_the_root_as_they_are() {
        assert_eq!(
            znode_path(b"user6284781860667377211"),
            "/amulet-bench/user6284781860667377211"
        );
        assert_eq!(znode_path(b"a-b_C9"), "/amulet-bench/a-b_C9");
        assert_eq!(
            znode_path(crate::keys::key_name(7).as_bytes()),
            format!("/amulet-bench/{}", crate::keys::key_name(7))
        );
    }

    #[test]
    fn other_bytes_are_hex_encoded_behind_a_tilde() {
        assert_eq!(znode_path(b""), "/amulet-bench/~");
        assert_eq!(znode_path(b"a/b"), "/amulet-bench/~612f62");
        assert_eq!(znode_path(b".."), "/amulet-bench/~2e2e");
        assert_eq!(znode_path(b"."), "/amulet-bench/~2e");
        assert_eq!(znode_path(b"x\0\n\x7f\xff"), "/amulet-bench/~78000a7fff");
        assert_eq!(znode_path(b"zookeeper"), "/amulet-bench/zookeeper");
        // A plain key that looks like an encoding cannot collide: `~` is
        // never plain.
        assert_eq!(znode_path(b"~61"), "/amulet-bench/~7e3631");
    }

    #[test]
    fn every_path_is_one_valid_name_under_the_root_and_distinct() {
        let mut keys: Vec<Vec<u8>> = (0u8..=255).map(|b| vec![b]).collect();
        keys.extend((0u8..=255).map(|b| vec![b'k', b]));
        keys.extend([
            b"".to_vec(),
            b"//".to_vec(),
            b"user1/".to_vec(),
            "ключ".as_bytes().to_vec(),
            b"~61".to_vec(),
        ]);
        // Distinct keys only: a collision below is two keys sharing a path.
        keys.sort();
        keys.dedup();
        let mut seen = HashSet::new();
        for key in &keys {
            let path = znode_path(key);
            let name = path
                .strip_prefix("/amulet-bench/")
                .unwrap_or_else(|| panic!("{path} is not under the root"));
            assert!(!name.is_empty(), "{key:?}");
            assert!(name != "." && name != "..", "{key:?}");
            assert!(
                name.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || b == b'~'),
                "{key:?} -> {path}"
            );
            assert!(seen.insert(path.clone()), "{key:?} collides at {path}");
        }
    }
}
