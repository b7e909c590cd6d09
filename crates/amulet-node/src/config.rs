//! The node's TOML configuration and its validation.
//!
//! One file per node. `[peers]` and `[[streams]]` describe the whole
//! cluster and are meant to be identical in every node's file; `node`,
//! `listen` and `data_dir` are this node's own.

use amulet_types::{NodeId, StorageMode, StreamConfig, StreamId, StreamLimits};
pub use membership::MembershipEntry;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

mod generate;
mod membership;
pub use generate::{
    dmap_cluster_toml, free_local_ports, local_cluster_toml, local_dmap_cluster_toml,
    local_dmap_placement, LOCAL_REPLICATION,
};

/// How a stream's acceptors store their state, as written in the file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StorageName {
    /// [`StorageMode::Memory`].
    Memory,
    /// [`StorageMode::AsyncDurable`].
    Async,
    /// [`StorageMode::SyncDurable`].
    Sync,
}

impl StorageName {
    /// The storage mode it names.
    pub fn mode(self) -> StorageMode {
        match self {
            StorageName::Memory => StorageMode::Memory,
            StorageName::Async => StorageMode::AsyncDurable,
            StorageName::Sync => StorageMode::SyncDurable,
        }
    }
}

/// One `[[streams]]` entry.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StreamEntry {
    /// Stream id.
    pub id: u32,
    /// Acceptor node ids.
    pub acceptors: Vec<u32>,
    /// Learner node ids that are not acceptors (acceptors always learn).
    #[serde(default)]
    pub learners: Vec<u32>,
    /// `"memory"`, `"async"` or `"sync"`.
    pub storage: StorageName,
    /// Overrides of the default limits.
    #[serde(default)]
    pub limits: StreamLimits,
}

/// One `[[smr.partitions]]` entry.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PartitionEntry {
    /// Partition id.
    pub id: u32,
    /// The partition's own stream.
    pub stream: u32,
    /// Nodes holding a replica; each must be a member of `stream` and of
    /// the global stream.
    pub replicas: Vec<u32>,
}

/// The `[smr]` section: the initial partition map of the replicated
/// services (DMap). Identical in every node's file.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SmrEntry {
    /// The stream every replica subscribes to.
    pub global_stream: u32,
    /// The partitions.
    pub partitions: Vec<PartitionEntry>,
    /// Client API (gRPC) address of every node, by id: each node listens
    /// on its own and tells clients all of them with the partition map.
    #[serde(default)]
    pub clients: BTreeMap<String, String>,
    /// Milliseconds between a replica's checkpoints (thesis §3.4.2): a
    /// restarted replica continues from its last one instead of replaying
    /// its streams from the start. 0 turns them off.
    #[serde(default = "default_checkpoint_interval_ms")]
    pub checkpoint_interval_ms: u64,
    /// Whether replicas take a request routed by a client's older map
    /// when its keys are still inside the partition's range (fence keys,
    /// docs/dynatree.md; the default) or refuse every such request for a
    /// refresh (`false`: whole-map versions, for comparison). It decides
    /// execution: the same in every node's file, like the rest of `[smr]`.
    #[serde(default = "default_fence_keys")]
    pub fence_keys: bool,
}

fn default_fence_keys() -> bool {
    true
}

fn default_checkpoint_interval_ms() -> u64 {
    10_000
}

/// A node's configuration file.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NodeConfig {
    /// Cluster id; connections from another cluster are refused.
    pub cluster: u64,
    /// This node's id.
    pub node: u32,
    /// Address to accept peer connections on.
    pub listen: SocketAddr,
    /// Where the incarnation counter and durable logs live.
    pub data_dir: PathBuf,
    /// Every node of the cluster: id (as a string key) to address.
    pub peers: BTreeMap<String, String>,
    /// Every stream of the cluster.
    pub streams: Vec<StreamEntry>,
    /// Partitioned replication, if the cluster serves DMap.
    #[serde(default)]
    pub smr: Option<SmrEntry>,
    /// TLS on the peer transport and the client API; without it, both
    /// are plain TCP (and the node says so in its log).
    #[serde(default)]
    pub tls: Option<TlsEntry>,
    /// Membership and self-healing (docs/membership.md); defaults when
    /// absent.
    #[serde(default)]
    pub membership: Option<MembershipEntry>,
    /// The balancer (docs/dynatree.md); defaults when absent.
    #[serde(default)]
    pub balancer: BalancerEntry,
    /// The eventual maps' store (docs/eventual-maps.md); defaults when
    /// absent.
    #[serde(default)]
    pub eventual: EventualEntry,
    /// Where logs keep their older entries (docs/logs.md "Segment
    /// files"); defaults when absent.
    #[serde(default)]
    pub logs: LogsEntry,
}

/// `[logs]`: this node's segment files of DLog logs.
#[derive(Clone, Copy, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LogsEntry {
    /// At each checkpoint, a log's entries not in a segment file yet go
    /// to new ones in runs of at least this many bytes (default 16 MiB);
    /// the last run below it stays in memory (the recent appends), and a
    /// trim frees disk a whole segment at a time. 0 keeps every entry in
    /// memory and in the checkpoint file. Otherwise at least 256 (small
    /// values make many small files: they are for tests).
    #[serde(default = "default_segment_bytes")]
    pub segment_bytes: u64,
}

impl Default for LogsEntry {
    fn default() -> LogsEntry {
        LogsEntry {
            segment_bytes: default_segment_bytes(),
        }
    }
}

fn default_segment_bytes() -> u64 {
    16 << 20
}

/// `[eventual]`: this node's store of eventual replicas.
#[derive(Clone, Copy, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EventualEntry {
    /// Journal bytes after which the store folds its journal into a
    /// checkpoint (written in the background: docs/eventual-maps.md
    /// "Durability"). Smaller: a shorter replay after a crash, more
    /// checkpoints (each writes every local replica whole). At least
    /// 4096.
    #[serde(default = "default_checkpoint_journal_bytes")]
    pub checkpoint_journal_bytes: u64,
}

impl Default for EventualEntry {
    fn default() -> EventualEntry {
        EventualEntry {
            checkpoint_journal_bytes: default_checkpoint_journal_bytes(),
        }
    }
}

fn default_checkpoint_journal_bytes() -> u64 {
    64 << 20
}

/// `[balancer]`: range partitions split by themselves past a size bound
/// (docs/dynatree.md). A node proposes splits only for partitions whose
/// lowest live replica it is, so each node's file decides its own
/// proposals; the splits themselves are ordered and executed everywhere.
#[derive(Clone, Copy, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BalancerEntry {
    /// `false` pauses it: this node proposes no split.
    #[serde(default = "default_balancer_enabled")]
    pub enabled: bool,
    /// A partition holding more than this many entries of one range map
    /// is split at its middle key (at least 2).
    #[serde(default = "default_split_entries")]
    pub split_entries: u64,
    /// A partition holding more than this many bytes of keys and values
    /// of one range map is split at the key that halves them (default
    /// 256 MiB); 0: never by size. Merges keep below half of it.
    #[serde(default = "default_split_bytes")]
    pub split_bytes: u64,
    /// Two neighbouring ranges of a range map on the same replicas that
    /// together hold at most this many entries are merged; 0 (the
    /// default): never. At most half of `split_entries`.
    #[serde(default)]
    pub merge_entries: u64,
    /// A range partition executing more than this many commands per
    /// second over a load window is split at the median key of its load;
    /// 0 (the default): never by load. With it, merges also need both
    /// neighbours together under half of it.
    #[serde(default)]
    pub split_ops_per_second: u64,
    /// The load window, ms (default 10000, at least 100).
    #[serde(default = "default_load_window_ms")]
    pub load_window_ms: u64,
    /// Whether a node replicating at least two partitions more than
    /// another gives it one (with membership and checkpoints; default
    /// true).
    #[serde(default = "default_balancer_enabled")]
    pub moves: bool,
    /// Once the counts are even, moves also even out the nodes' bytes and
    /// load (docs/dynatree.md, "Moves by bytes and load"): bytes count
    /// once the partitions hold this many together (default 64 MiB)...
    #[serde(default = "default_weigh_bytes_from")]
    pub weigh_bytes_from: u64,
    /// ... and load once they execute this many commands per second
    /// together (default 1000).
    #[serde(default = "default_weigh_ops_per_second_from")]
    pub weigh_ops_per_second_from: u64,
}

impl Default for BalancerEntry {
    fn default() -> BalancerEntry {
        BalancerEntry {
            enabled: default_balancer_enabled(),
            split_entries: default_split_entries(),
            split_bytes: default_split_bytes(),
            merge_entries: 0,
            split_ops_per_second: 0,
            load_window_ms: default_load_window_ms(),
            moves: default_balancer_enabled(),
            weigh_bytes_from: default_weigh_bytes_from(),
            weigh_ops_per_second_from: default_weigh_ops_per_second_from(),
        }
    }
}

fn default_balancer_enabled() -> bool {
    true
}

fn default_split_entries() -> u64 {
    amulet_host::BalancerConfig::default().split_entries
}

fn default_load_window_ms() -> u64 {
    amulet_host::LOAD_WINDOW_MICROS / 1_000
}

fn default_weigh_bytes_from() -> u64 {
    amulet_host::BalancerConfig::default().weigh_bytes_from
}

fn default_weigh_ops_per_second_from() -> u64 {
    amulet_host::BalancerConfig::default().weigh_ops_per_second_from
}

fn default_split_bytes() -> u64 {
    amulet_host::BalancerConfig::default().split_bytes
}

/// Where a node's TLS files are: `dir` holds `ca.pem`, `node-<id>.pem` and
/// `node-<id>.key` (what `amulet cert` writes); `ca`, `cert` and `key`
/// name files elsewhere (each overrides the one from `dir`).
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TlsEntry {
    /// A directory in `amulet cert`'s layout.
    #[serde(default)]
    pub dir: Option<PathBuf>,
    /// The cluster CA's certificate.
    #[serde(default)]
    pub ca: Option<PathBuf>,
    /// This node's certificate chain.
    #[serde(default)]
    pub cert: Option<PathBuf>,
    /// This node's private key.
    #[serde(default)]
    pub key: Option<PathBuf>,
}

/// A configuration that cannot run, with what is wrong.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The file is not valid TOML for a node configuration.
    #[error("cannot parse configuration: {0}")]
    Parse(#[from] toml::de::Error),
    /// The file parses but describes something that cannot run.
    #[error("invalid configuration: {0}")]
    Invalid(String),
}

impl NodeConfig {
    /// Reads and validates a configuration file.
    pub fn load(path: &Path) -> Result<NodeConfig, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        NodeConfig::parse(&text)
    }

    /// Parses and validates configuration text.
    pub fn parse(text: &str) -> Result<NodeConfig, ConfigError> {
        let config: NodeConfig = toml::from_str(text)?;
        config.validate()?;
        Ok(config)
    }

    /// This node's TLS files, if the configuration has `[tls]`.
    pub fn tls_files(&self) -> Result<Option<amulet_tls::TlsFiles>, ConfigError> {
        let Some(tls) = &self.tls else {
            return Ok(None);
        };
        let from_dir = tls
            .dir
            .as_deref()
            .map(|dir| amulet_tls::TlsFiles::node(dir, self.me()));
        let pick = |explicit: &Option<PathBuf>, from_dir: Option<PathBuf>, what: &str| {
            explicit
                .clone()
                .or(from_dir)
                .ok_or_else(|| invalid(format!("[tls] names no {what}: give `dir` or `{what}`")))
        };
        Ok(Some(amulet_tls::TlsFiles {
            ca: pick(&tls.ca, from_dir.as_ref().map(|f| f.ca.clone()), "ca")?,
            cert: pick(&tls.cert, from_dir.as_ref().map(|f| f.cert.clone()), "cert")?,
            key: pick(&tls.key, from_dir.as_ref().map(|f| f.key.clone()), "key")?,
        }))
    }

    /// This node.
    pub fn me(&self) -> NodeId {
        NodeId(self.node)
    }

    /// Peers other than this node, with their addresses.
    pub fn peer_addrs(&self) -> Result<BTreeMap<NodeId, SocketAddr>, ConfigError> {
        let mut out = BTreeMap::new();
        for (id, addr) in &self.peers {
            let id: u32 = id
                .parse()
                .map_err(|_| invalid(format!("peer id {id:?} is not a number")))?;
            let addr: SocketAddr = addr
                .parse()
                .map_err(|_| invalid(format!("peer {id}: address {addr:?} is not ip:port")))?;
            if id != self.node {
                out.insert(NodeId(id), addr);
            }
        }
        Ok(out)
    }

    /// The cluster's first view (docs/membership.md): every node of
    /// `[peers]`, active, under its configured id, identical in every
    /// node's file. `None` without a service (`[smr]`: membership is
    /// replicated state of the service's replicas) or with `[membership]
    /// enabled = false`.
    pub fn first_view(&self) -> Result<Option<amulet_membership::View>, ConfigError> {
        if self.smr.is_none() || !self.membership_settings().enabled {
            return Ok(None);
        }
        let mut members = BTreeMap::new();
        for (id, addr) in &self.peers {
            let id: u32 = id
                .parse()
                .map_err(|_| invalid(format!("peer id {id:?} is not a number")))?;
            if members.values().any(|known| known == addr) {
                return Err(invalid(format!(
                    "peer {id}: address {addr} is another peer's"
                )));
            }
            members.insert(NodeId(id), addr.clone());
        }
        Ok((!members.is_empty()).then(|| amulet_membership::View::from_members(&members)))
    }

    /// `[membership]`, or its defaults.
    pub fn membership_settings(&self) -> MembershipEntry {
        self.membership.clone().unwrap_or_default()
    }

    /// Every node named in `[peers]`, this one included.
    fn known_nodes(&self) -> Result<Vec<u32>, ConfigError> {
        let mut known: Vec<u32> = self.peer_addrs()?.keys().map(|n| n.0).collect();
        known.push(self.node);
        Ok(known)
    }

    /// The streams this node is a member of, as protocol configurations.
    pub fn my_streams(&self) -> Vec<StreamConfig> {
        self.streams
            .iter()
            .map(stream_config)
            .filter(|c| c.members().contains(&self.me()))
            .collect()
    }

    /// Checks everything that can be checked without the network.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let known = self.known_nodes()?;
        self.membership_settings().validate()?;
        if self.node == 0 {
            return Err(invalid("node id 0 is reserved (ballot owner of nobody)"));
        }
        if self.eventual.checkpoint_journal_bytes < 4096 {
            return Err(invalid(format!(
                "[eventual] checkpoint_journal_bytes = {}: at least 4096 (a checkpoint writes every local replica whole)",
                self.eventual.checkpoint_journal_bytes
            )));
        }
        if (1..256).contains(&self.logs.segment_bytes) {
            return Err(invalid(format!(
                "[logs] segment_bytes = {}: 0 (no segment files) or at least 256",
                self.logs.segment_bytes
            )));
        }
        if self.balancer.split_entries < 2 {
            return Err(invalid(format!(
                "[balancer] split_entries = {}: at least 2 (a partition of one entry has no middle key)",
                self.balancer.split_entries
            )));
        }
        if self.balancer.merge_entries > self.balancer.split_entries / 2 {
            return Err(invalid(format!(
                "[balancer] merge_entries = {} is more than half of split_entries = {} (a merged partition would split again)",
                self.balancer.merge_entries, self.balancer.split_entries
            )));
        }
        if self.balancer.load_window_ms < 100 {
            return Err(invalid(format!(
                "[balancer] load_window_ms = {}: at least 100 (a shorter window splits on bursts)",
                self.balancer.load_window_ms
            )));
        }
        if self.streams.is_empty() {
            return Err(invalid("no [[streams]]"));
        }
        let mut ids: Vec<u32> = self.streams.iter().map(|s| s.id).collect();
        ids.sort_unstable();
        ids.dedup();
        if ids.len() != self.streams.len() {
            return Err(invalid("a stream id is listed twice"));
        }
        for entry in &self.streams {
            let config = stream_config(entry);
            config.validate().map_err(|e| invalid(format!("{e}")))?;
            for member in config.members() {
                if !known.contains(&member.0) {
                    return Err(invalid(format!(
                        "stream {}: node {} is not in [peers]",
                        entry.id, member.0
                    )));
                }
            }
        }
        let mine = self.my_streams();
        let membership = self.membership_settings();
        let joiner = membership.joiner && membership.enabled && self.smr.is_some();
        if membership.joiner && !joiner {
            return Err(invalid(
                "[membership] joiner = true needs membership enabled and an [smr] section",
            ));
        }
        if mine.is_empty() && !joiner {
            return Err(invalid(format!(
                "node {} is a member of no stream (a node that joins a running cluster has [membership] joiner = true)",
                self.node
            )));
        }
        if let Some(smr) = &self.smr {
            self.partition_map()?;
            self.client_addresses()?;
            // Sub-100 ms checkpoints would do little but rewrite files.
            if smr.checkpoint_interval_ms != 0 && smr.checkpoint_interval_ms < 100 {
                return Err(invalid(format!(
                    "[smr] checkpoint_interval_ms = {}: give 0 (off) or at least 100",
                    smr.checkpoint_interval_ms
                )));
            }
        }
        // The merge takes one M for all streams; streams disagreeing on it
        // would merge differently at different learners.
        let m = self.streams[0].limits.merge_instances_per_round;
        if self
            .streams
            .iter()
            .any(|s| s.limits.merge_instances_per_round != m)
        {
            return Err(invalid(
                "merge_instances_per_round must be the same for every stream",
            ));
        }
        Ok(())
    }

    /// Micros between replica checkpoints (0: none).
    pub fn checkpoint_interval_micros(&self) -> u64 {
        self.smr
            .as_ref()
            .map_or(0, |s| s.checkpoint_interval_ms.saturating_mul(1_000))
    }

    /// Every node's client API address (`[smr] clients`), checked.
    pub fn client_addresses(&self) -> Result<BTreeMap<NodeId, String>, ConfigError> {
        let Some(smr) = &self.smr else {
            return Ok(BTreeMap::new());
        };
        let known = self.known_nodes()?;
        let mut out = BTreeMap::new();
        for (id, addr) in &smr.clients {
            let id: u32 = id
                .parse()
                .map_err(|_| invalid(format!("[smr] clients: node id {id:?} is not a number")))?;
            if !known.contains(&id) {
                return Err(invalid(format!(
                    "[smr] clients: node {id} is not in [peers]"
                )));
            }
            addr.parse::<SocketAddr>().map_err(|_| {
                invalid(format!("[smr] clients: node {id}: {addr:?} is not ip:port"))
            })?;
            out.insert(NodeId(id), addr.clone());
        }
        Ok(out)
    }

    /// Where this node serves the client API, if it does.
    pub fn client_listen(&self) -> Result<Option<SocketAddr>, ConfigError> {
        Ok(self
            .client_addresses()?
            .get(&self.me())
            .map(|a| a.parse().expect("checked by client_addresses")))
    }

    /// The initial partition map of `[smr]`, checked: a valid map whose
    /// streams exist and whose replicas learn both their partition's
    /// stream and the global stream. `Ok(None)` without `[smr]`.
    pub fn partition_map(&self) -> Result<Option<amulet_smr::PartitionMap>, ConfigError> {
        let Some(smr) = &self.smr else {
            return Ok(None);
        };
        let member = |stream: u32, node: u32| {
            self.streams
                .iter()
                .find(|s| s.id == stream)
                .map(|s| stream_config(s).members().contains(&NodeId(node)))
        };
        let mut partitions = Vec::new();
        for p in &smr.partitions {
            for &node in &p.replicas {
                for stream in [p.stream, smr.global_stream] {
                    match member(stream, node) {
                        None => {
                            return Err(invalid(format!("partition {}: no stream {stream}", p.id)))
                        }
                        Some(false) => {
                            return Err(invalid(format!(
                                "partition {}: replica {node} is not a member of stream {stream}",
                                p.id
                            )))
                        }
                        Some(true) => {}
                    }
                }
            }
            partitions.push((
                amulet_types::PartitionId(p.id),
                amulet_smr::PartitionInfo {
                    stream: StreamId(p.stream),
                    replicas: p.replicas.iter().map(|n| NodeId(*n)).collect(),
                },
            ));
        }
        let count = partitions.len();
        let map = amulet_smr::PartitionMap::uniform(StreamId(smr.global_stream), partitions);
        if map.partitions.len() != count {
            return Err(invalid("[smr]: a partition id is listed twice"));
        }
        map.validate().map_err(|e| invalid(format!("[smr]: {e}")))?;
        Ok(Some(map))
    }

    /// Largest frame a peer may send: one full batch plus one maximal value
    /// (a value larger than a batch travels alone) plus envelope overhead.
    pub fn frame_bytes_max(&self) -> usize {
        self.streams
            .iter()
            .map(|s| s.limits.batch_bytes_max + s.limits.value_bytes_max)
            .max()
            .unwrap_or(0)
            + 64 * 1024
    }
}

fn stream_config(entry: &StreamEntry) -> StreamConfig {
    StreamConfig {
        stream: StreamId(entry.id),
        acceptors: entry.acceptors.iter().map(|n| NodeId(*n)).collect(),
        learners: entry.learners.iter().map(|n| NodeId(*n)).collect(),
        storage: entry.storage.mode(),
        limits: entry.limits.clone(),
        base_position: 0,
    }
}

fn invalid(reason: impl Into<String>) -> ConfigError {
    ConfigError::Invalid(reason.into())
}

#[cfg(test)]
mod tests;
