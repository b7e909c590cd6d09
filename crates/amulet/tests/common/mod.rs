//! The process-test harness shared by the real-process tests (first by
//! `dmap_processes.rs` and `dmap_repartitioning.rs`): a cluster of three `amulet node` processes on
//! 127.0.0.1 (each a replica of every partition, sync-durable acceptors),
//! killed on every path, and helpers that bound every wait. The nodes run
//! with TLS, as `amulet dev`'s do: one CA per test process
//! ([`certificates`]), and every client presents its user `admin`.

#![allow(dead_code)] // each test file uses its own part

use amulet_api::pb::{self, amulet_client::AmuletClient, map_request::Op};
use amulet_client::{Bytes, Client, ClientConfig, Error};
use amulet_node::{free_local_ports, local_dmap_cluster_toml};
use amulet_smr::{Reconfiguration, StreamSpec};
use amulet_types::{NodeId, StorageMode, StreamId};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::runtime::Runtime;
use tokio::task::JoinHandle;

pub const NODES: u32 = 3;

/// The tests' client runtime: two workers, like the machine's cores.
pub fn runtime() -> Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime")
}

/// The test process's CA, node 1-3 and user `admin` certificates, made once.
pub fn certificates() -> &'static std::path::Path {
    static DIR: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    DIR.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("amulet-proc-certs-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let nodes: Vec<NodeId> = (1..=NODES).map(NodeId).collect();
        amulet_tls::create::create_dev(&dir, &nodes).unwrap();
        dir
    })
}

/// A raw gRPC client of `address` over the cluster's TLS.
pub async fn raw_client(
    address: &str,
) -> Result<AmuletClient<tonic::transport::Channel>, tonic::Status> {
    let dir = certificates();
    let read = |f: &str| std::fs::read(dir.join(f)).unwrap();
    let tls = tonic::transport::ClientTlsConfig::new()
        .ca_certificate(tonic::transport::Certificate::from_pem(read("ca.pem")))
        .identity(tonic::transport::Identity::from_pem(
            read("admin.pem"),
            read("admin.key"),
        ))
        .domain_name(amulet_tls::NODE_SERVER_NAME);
    let channel = tonic::transport::Endpoint::from_shared(format!("https://{address}"))
        .map_err(|e| tonic::Status::invalid_argument(e.to_string()))?
        .tls_config(tls)
        .map_err(|e| tonic::Status::invalid_argument(e.to_string()))?
        .connect()
        .await
        .map_err(|e| tonic::Status::unavailable(e.to_string()))?;
    Ok(AmuletClient::new(channel))
}
pub const PARTITIONS: u32 = 3;

pub struct Cluster {
    pub dir: PathBuf,
    peer_ports: Vec<u16>,
    client_ports: Vec<u16>,
    children: BTreeMap<u32, Child>,
}

impl Drop for Cluster {
    fn drop(&mut self) {
        for child in self.children.values_mut() {
            let _ = child.kill();
            let _ = child.wait();
        }
        if std::thread::panicking() {
            self.print_log_tails();
        }
    }
}

impl Cluster {
    pub fn start(name: &str) -> Cluster {
        Cluster::start_with(name, None)
    }

    /// A cluster whose replicas checkpoint every `checkpoint_ms` (the
    /// default interval when `None`).
    pub fn start_with(name: &str, checkpoint_ms: Option<u64>) -> Cluster {
        Cluster::start_with_smr(name, checkpoint_ms, "")
    }

    /// A cluster as [`Cluster::start_with`] whose `[smr]` sections also
    /// hold `smr_lines` (each ending in a newline).
    pub fn start_with_smr(name: &str, checkpoint_ms: Option<u64>, smr_lines: &str) -> Cluster {
        Cluster::start_with_sections(name, checkpoint_ms, smr_lines, "")
    }

    /// A cluster as [`Cluster::start_with_smr`] whose files end with
    /// `sections` (whole TOML sections, e.g. `[balancer]`).
    pub fn start_with_sections(
        name: &str,
        checkpoint_ms: Option<u64>,
        smr_lines: &str,
        sections: &str,
    ) -> Cluster {
        let dir = std::env::temp_dir().join(format!("amulet-dmap-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let ports = free_local_ports(2 * NODES as usize).unwrap();
        let mut cluster = Cluster {
            dir,
            peer_ports: ports[..NODES as usize].to_vec(),
            client_ports: ports[NODES as usize..].to_vec(),
            children: BTreeMap::new(),
        };
        for node in 1..=NODES {
            let mut text = local_dmap_cluster_toml(
                11,
                &cluster.peer_ports,
                &cluster.client_ports,
                node,
                &cluster.dir.join(format!("data-{node}")),
                PARTITIONS,
                "sync",
            );
            let smr = "[smr]\nglobal_stream = 1\n";
            assert!(
                text.contains(smr),
                "the generated config has an [smr] section"
            );
            let interval = checkpoint_ms
                .map(|ms| format!("checkpoint_interval_ms = {ms}\n"))
                .unwrap_or_default();
            text = text.replace(smr, &format!("{smr}{interval}{smr_lines}"));
            text.push_str(&format!(
                "\n[tls]\ndir = {:?}\n",
                certificates().display().to_string()
            ));
            text.push_str(sections);
            std::fs::write(cluster.dir.join(format!("node-{node}.toml")), text).unwrap();
            cluster.spawn(node);
        }
        cluster
    }

    /// A failed test's evidence where CI shows it: the last lines of each
    /// node's log other than periodic checkpoints (the directory stays).
    fn print_log_tails(&self) {
        const LINES: usize = 40;
        eprintln!("node logs kept in {}", self.dir.display());
        for node in 1..=NODES {
            let Ok(text) = std::fs::read_to_string(self.dir.join(format!("node-{node}.log")))
            else {
                continue;
            };
            let lines: Vec<&str> = text
                .lines()
                .filter(|l| !l.contains("purpose=Periodic"))
                .collect();
            eprintln!(
                "--- node {node}: last {LINES} lines of {} kept",
                lines.len()
            );
            for line in &lines[lines.len().saturating_sub(LINES)..] {
                eprintln!("{line}");
            }
        }
    }

    pub fn spawn(&mut self, node: u32) {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.join(format!("node-{node}.log")))
            .unwrap();
        let child = Command::new(env!("CARGO_BIN_EXE_amulet"))
            .arg("node")
            .arg("--config")
            .arg(self.dir.join(format!("node-{node}.toml")))
            .arg("--stop-on-stdin-eof")
            .args(["--status-interval-ms", "60000"])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::from(log))
            .spawn()
            .unwrap();
        self.children.insert(node, child);
    }

    /// The process id of node `node`.
    pub fn pid(&self, node: u32) -> u32 {
        self.children[&node].id()
    }

    /// SIGKILL: no clean shutdown, no final sync.
    pub fn kill(&mut self, node: u32) {
        let mut child = self.children.remove(&node).unwrap();
        child.kill().unwrap();
        child.wait().unwrap();
    }

    pub fn addresses(&self) -> Vec<String> {
        self.client_ports
            .iter()
            .map(|p| format!("127.0.0.1:{p}"))
            .collect()
    }

    pub fn address(&self, node: u32) -> String {
        format!("127.0.0.1:{}", self.client_ports[node as usize - 1])
    }

    /// Stops every node cleanly (stdin closed) and checks they exit 0.
    pub fn stop(mut self) {
        #[allow(clippy::disallowed_methods)] // a wall-clock bound on the test
        let started = std::time::Instant::now();
        let nodes: Vec<u32> = self.children.keys().copied().collect();
        for node in &nodes {
            drop(self.children.get_mut(node).unwrap().stdin.take());
        }
        for node in nodes {
            let child = self.children.get_mut(&node).unwrap();
            loop {
                if let Some(status) = child.try_wait().unwrap() {
                    assert!(status.success(), "node {node} failed: {status}");
                    break;
                }
                assert!(
                    started.elapsed() < Duration::from_secs(30),
                    "node {node} did not stop"
                );
                std::thread::sleep(Duration::from_millis(20));
            }
            self.children.remove(&node);
        }
        self.check_no_secrets_logged();
        let _ = std::fs::remove_dir_all(&self.dir);
    }

    /// No node log holds a line of any private key (docs/security.md:
    /// secrets never appear in logs).
    fn check_no_secrets_logged(&self) {
        let keys: Vec<String> = std::fs::read_dir(certificates())
            .unwrap()
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "key"))
            .map(|p| std::fs::read_to_string(p).unwrap())
            .collect();
        for node in 1..=NODES {
            let log = self.dir.join(format!("node-{node}.log"));
            let Ok(text) = std::fs::read_to_string(&log) else {
                continue;
            };
            assert!(
                !text.contains("PRIVATE KEY"),
                "{} mentions a private key",
                log.display()
            );
            for key in &keys {
                for line in key
                    .lines()
                    .filter(|l| !l.starts_with("-----") && l.len() > 16)
                {
                    assert!(
                        !text.contains(line),
                        "{} holds a line of a private key",
                        log.display()
                    );
                }
            }
        }
    }
}

pub fn client_config() -> ClientConfig {
    ClientConfig {
        attempt_timeout: Duration::from_millis(1_500),
        operation_timeout: Duration::from_secs(60),
        tls: Some(amulet_client::TlsFiles::user(certificates(), "admin")),
        ..Default::default()
    }
}

/// Sends `op` as session `session`, sequence `sequence`, to `address`.
pub async fn raw_execute(
    address: &str,
    partition: u32,
    version: u64,
    session: u64,
    sequence: u64,
    op: Op,
) -> Result<pb::MapResponse, tonic::Status> {
    let mut raw = raw_client(address).await?;
    let request = pb::MapRequest {
        header: Some(pb::RequestHeader {
            map_version: version,
            partition,
            session,
            sequence,
        }),
        op: Some(op),
    };
    raw.execute(request).await.map(|r| r.into_inner())
}

/// Node `node`'s replica status, by partition (None while it does not answer).
pub async fn replica_status(client: &Client, address: &str) -> Option<Vec<pb::ReplicaStatus>> {
    client.status(address).await.ok().map(|s| s.replicas)
}

/// Asks for `change` and waits until every node applied it.
pub fn reconfigure(runtime: &tokio::runtime::Runtime, client: &Client, change: Reconfiguration) {
    let before = client.partition_map().version.0;
    let from = match runtime.block_on(client.reconfigure(&change)) {
        Ok(from) => from,
        // The replica that took the request was replaced while it waited
        // (a node catching up installed a peer's checkpoint): it may have
        // taken effect; the map says.
        Err(Error::Unavailable(_) | Error::OutcomeUnknown(_)) => before,
        Err(e) => panic!("{change:?} refused: {e}"),
    };
    let applied =
        runtime.block_on(client.wait_for_map_version(from + 1, Duration::from_secs(60), |_| {}));
    assert!(applied, "{change:?} was not applied by every node in 60 s");
}

pub fn stream_spec(stream: u32) -> StreamSpec {
    StreamSpec {
        stream: StreamId(stream),
        acceptors: (1..=NODES).map(NodeId).collect(),
        learners: Vec::new(),
        storage: StorageMode::SyncDurable,
        base_position: 0,
    }
}

/// Waits until node `node` runs a replica of `partition` (`present`) or
/// does not (`!present`).
pub fn wait_for_replica(
    runtime: &tokio::runtime::Runtime,
    client: &Client,
    cluster: &Cluster,
    node: u32,
    partition: u32,
    present: bool,
) {
    let address = cluster.address(node);
    for _ in 0..1_200 {
        if let Some(replicas) = runtime.block_on(replica_status(client, &address)) {
            if replicas.iter().any(|r| r.partition == partition) == present {
                return;
            }
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!(
        "node {node} still {} partition {partition} after 60 s",
        if present { "lacks" } else { "runs" }
    );
}

/// Every acknowledged write is there, read by key.
pub fn check_acknowledged(
    runtime: &tokio::runtime::Runtime,
    client: &Client,
    name: &str,
    acked: &BTreeMap<Bytes, Bytes>,
    when: &str,
) {
    let map = client.map(name).unwrap();
    runtime.block_on(async {
        for (key, value) in acked {
            assert_eq!(
                map.get(key.clone()).await.unwrap().as_ref(),
                Some(value),
                "acknowledged write {key:?}, {when}"
            );
        }
    });
}

/// Writers putting fresh keys into one map until stopped, recording what
/// was acknowledged; an outcome-unknown write is counted apart (it may or
/// may not be there at the end).
pub struct Writers {
    stop: Arc<AtomicBool>,
    acked: Arc<Mutex<BTreeMap<Bytes, Bytes>>>,
    tasks: Vec<JoinHandle<u32>>,
}

impl Writers {
    /// Starts `count` writers on map `name`.
    pub fn start(runtime: &Runtime, client: &Arc<Client>, name: &str, count: u32) -> Writers {
        let stop = Arc::new(AtomicBool::new(false));
        let acked = Arc::new(Mutex::new(BTreeMap::new()));
        let tasks = (0..count)
            .map(|w| {
                let (client, stop, acked) = (client.clone(), stop.clone(), acked.clone());
                let name = name.to_string();
                runtime.spawn(async move {
                    let map = client.map(&name).unwrap();
                    let mut unknown = 0u32;
                    for i in 0..100_000u32 {
                        if stop.load(Ordering::Relaxed) {
                            break;
                        }
                        let key = Bytes::from(format!("w{w}-{i:06}"));
                        let value = Bytes::from(format!("v{i}"));
                        match map.put(key.clone(), value.clone()).await {
                            Ok(_) => {
                                acked.lock().unwrap().insert(key, value);
                            }
                            Err(Error::OutcomeUnknown(_) | Error::Unavailable(_)) => unknown += 1,
                            Err(e) => panic!("writer {w}: {e}"),
                        }
                    }
                    unknown
                })
            })
            .collect();
        Writers { stop, acked, tasks }
    }

    /// Waits (up to 30 s) until `n` writes more than now are acknowledged.
    pub fn more(&self, n: usize) {
        let target = self.acked.lock().unwrap().len() + n;
        for _ in 0..600 {
            if self.acked.lock().unwrap().len() >= target {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!("writers stalled below {target} acknowledged writes");
    }

    /// The writes acknowledged so far.
    pub fn acked(&self) -> BTreeMap<Bytes, Bytes> {
        self.acked.lock().unwrap().clone()
    }

    /// Stops the writers: every acknowledged write, and how many had an
    /// unknown outcome.
    pub fn stop(self, runtime: &Runtime) -> (BTreeMap<Bytes, Bytes>, u32) {
        self.stop.store(true, Ordering::Relaxed);
        let acked = self.acked.clone();
        let unknown = self
            .tasks
            .into_iter()
            .map(|t| runtime.block_on(t).unwrap())
            .sum();
        let acked = acked.lock().unwrap().clone();
        (acked, unknown)
    }
}
