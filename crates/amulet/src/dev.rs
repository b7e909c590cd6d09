//! `amulet dev`: a whole local DMap cluster in one command. Three node
//! processes on 127.0.0.1 (or `--nodes N`), each an acceptor of every
//! stream and a replica of each of three partitions (3 partitions x 3
//! replicas; with more nodes each partition has three replicas, spread
//! over the nodes), data under `./amulet-data`. Ctrl-C stops it cleanly; running it again on the same
//! directory recovers the data (the acceptors' durable logs are replayed).

use crate::order_demo::{stop, watch_interrupt, Children};
use amulet_node::local_dmap_cluster_toml;
use anyhow::Context;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::Ordering;
use std::time::Duration;

/// Nodes of a new cluster unless `--nodes` says otherwise.
const NODES: u16 = 3;
/// The most nodes `amulet dev` starts (client ports base+1.., peer ports
/// base+11.. must not meet).
const NODES_MAX: u16 = 9;
/// The map `amulet dev` creates and the CLI uses by default.
pub const DEFAULT_MAP: &str = "default";
/// Where `amulet dev` keeps its cluster, and where the other commands look
/// for it when no address is given.
pub const DEFAULT_DIR: &str = "amulet-data";
const CLUSTER_FILE: &str = "cluster.json";
/// Where `amulet dev` keeps its CA and certificates, under its directory.
pub const TLS_DIR: &str = "tls";

/// Options of `amulet dev`.
#[derive(clap::Args)]
pub struct DevArgs {
    /// Where configurations, data and logs go; an existing cluster there
    /// is restarted with its data.
    #[arg(long, default_value = DEFAULT_DIR)]
    dir: PathBuf,
    /// Number of partitions of a new cluster.
    #[arg(long, default_value_t = 3)]
    partitions: u32,
    /// Number of nodes of a new cluster, 1 to 9. Up to three, every node
    /// holds every partition; with more, each partition has three
    /// replicas spread over the nodes, and the global stream is on nodes
    /// 1-3.
    #[arg(long, default_value_t = NODES)]
    nodes: u16,
    /// Acceptor storage of a new cluster: sync (fsync before every vote),
    /// async (fsync every 5 ms) or memory (lost when all nodes stop).
    #[arg(long, default_value = "sync")]
    storage: String,
    /// First port of a new cluster: clients use base+1..base+N, nodes talk
    /// among themselves on base+11..base+10+N.
    #[arg(long, default_value_t = 7100)]
    base_port: u16,
    /// Stop after this many seconds (default: run until Ctrl-C).
    #[arg(long)]
    seconds: Option<u64>,
    /// A new cluster without TLS: peers and clients unauthenticated, over
    /// plain TCP. (By default `amulet dev` creates a CA, node
    /// certificates and the user `admin`'s in `DIR/tls`, and the nodes
    /// require them.)
    #[arg(long)]
    insecure: bool,
    /// The balancer's bound for this run: a range partition holding more
    /// entries of one map splits (docs/dynatree.md; default: the nodes'
    /// own, 1,000,000). For watching a range map grow.
    #[arg(long)]
    split_entries: Option<u64>,
    /// The balancer's moves by weight count bytes from this many in the
    /// cluster for this run (default: the nodes' own, 64 MiB). For
    /// watching replicas move to even out the nodes' bytes.
    #[arg(long)]
    weigh_bytes_from: Option<u64>,
    /// Judge requests by whole-map versions for this run (`[smr]
    /// fence_keys = false`), to compare with fence keys.
    #[arg(long)]
    whole_map_versions: bool,
}

/// What `amulet dev` writes once and reads again on every run.
#[derive(Serialize, Deserialize)]
pub struct ClusterFile {
    /// Cluster id.
    pub cluster: u64,
    /// Client API ports.
    pub client_ports: Vec<u16>,
    /// Node-to-node ports.
    pub peer_ports: Vec<u16>,
    /// Partitions.
    pub partitions: u32,
    /// Acceptor storage.
    pub storage: String,
    /// Times the cluster was started.
    #[serde(default)]
    pub runs: u64,
    /// Whether nodes require TLS (certificates in `tls/`); clusters made
    /// before TLS have none.
    #[serde(default)]
    pub tls: bool,
}

impl ClusterFile {
    /// Reads `dir/cluster.json`.
    pub fn read(dir: &Path) -> anyhow::Result<Option<ClusterFile>> {
        let path = dir.join(CLUSTER_FILE);
        match std::fs::read_to_string(&path) {
            Ok(text) => Ok(Some(serde_json::from_str(&text).with_context(|| {
                format!("{} is not a cluster file", path.display())
            })?)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e).with_context(|| format!("cannot read {}", path.display())),
        }
    }

    fn write(&self, dir: &Path) -> anyhow::Result<()> {
        let path = dir.join(CLUSTER_FILE);
        std::fs::write(&path, serde_json::to_string_pretty(self)?)
            .with_context(|| format!("cannot write {}", path.display()))
    }

    /// The TLS files of user `user`, if the cluster in `dir` has TLS.
    pub fn user_tls(&self, dir: &Path, user: &str) -> Option<amulet_client::TlsFiles> {
        self.tls
            .then(|| amulet_client::TlsFiles::user(&dir.join(TLS_DIR), user))
    }

    /// The client API addresses.
    pub fn client_addresses(&self) -> Vec<String> {
        self.client_ports
            .iter()
            .map(|p| format!("127.0.0.1:{p}"))
            .collect()
    }
}

/// Runs the local cluster.
pub fn run(args: DevArgs) -> anyhow::Result<()> {
    anyhow::ensure!(
        ["memory", "async", "sync"].contains(&args.storage.as_str()),
        "--storage must be memory, async or sync"
    );
    anyhow::ensure!(
        (1..=16).contains(&args.partitions),
        "--partitions must be 1 to 16"
    );
    anyhow::ensure!(
        (1..=NODES_MAX).contains(&args.nodes),
        "--nodes must be 1 to {NODES_MAX}"
    );
    std::fs::create_dir_all(&args.dir)
        .with_context(|| format!("cannot create {}", args.dir.display()))?;
    let mut cluster = match ClusterFile::read(&args.dir)? {
        Some(existing) => {
            if args.nodes != NODES && usize::from(args.nodes) != existing.peer_ports.len() {
                println!(
                    "amulet dev: --nodes is ignored: the cluster in {} has {} nodes and keeps them",
                    args.dir.display(),
                    existing.peer_ports.len()
                );
            }
            if args.insecure && existing.tls {
                println!(
                    "amulet dev: --insecure is ignored: the cluster in {} was made with TLS and keeps it",
                    args.dir.display()
                );
            }
            existing
        }
        None => {
            let base = args.base_port;
            ClusterFile {
                cluster: u64::from(std::process::id()) << 16 | u64::from(base),
                client_ports: (1..=args.nodes).map(|i| base + i).collect(),
                peer_ports: (1..=args.nodes).map(|i| base + 10 + i).collect(),
                partitions: args.partitions,
                storage: args.storage.clone(),
                runs: 0,
                tls: !args.insecure,
            }
        }
    };
    cluster.runs += 1;
    cluster.write(&args.dir)?;
    let tls_dir = std::path::absolute(args.dir.join(TLS_DIR))?;
    let node_count = cluster.peer_ports.len() as u32;
    let (_, placement) = amulet_node::local_dmap_placement(node_count, cluster.partitions);
    let replicas = placement.first().map_or(0, Vec::len);
    if cluster.tls {
        let nodes: Vec<_> = (1..=node_count).map(amulet_types::NodeId).collect();
        amulet_tls::create::create_dev(&tls_dir, &nodes)
            .with_context(|| format!("cannot create the TLS files in {}", tls_dir.display()))?;
    } else {
        println!("amulet dev: TLS is off (--insecure): anyone who reaches the ports is trusted");
    }
    let exe = std::env::current_exe().context("cannot find the amulet executable")?;
    println!(
        "amulet dev: {node_count} nodes, {} partitions x {replicas} replicas, {} storage, data in {} (run {})",
        cluster.partitions,
        cluster.storage,
        args.dir.display(),
        cluster.runs
    );
    let interrupted = watch_interrupt()?;
    let mut children = Children(Vec::new());
    for node in 1..=node_count {
        let data_dir = std::path::absolute(args.dir.join(format!("node-{node}")))?;
        let config_path = args.dir.join(format!("node-{node}.toml"));
        let mut text = local_dmap_cluster_toml(
            cluster.cluster,
            &cluster.peer_ports,
            &cluster.client_ports,
            node,
            &data_dir,
            cluster.partitions,
            &cluster.storage,
        );
        if cluster.tls {
            text.push_str(&format!(
                "\n[tls]\ndir = {:?}\n",
                tls_dir.display().to_string()
            ));
        }
        if args.whole_map_versions {
            text = text.replacen("\n[smr]\n", "\n[smr]\nfence_keys = false\n", 1);
        }
        if args.split_entries.is_some() || args.weigh_bytes_from.is_some() {
            text.push_str("\n[balancer]\n");
        }
        if let Some(bound) = args.split_entries {
            text.push_str(&format!("split_entries = {bound}\n"));
        }
        if let Some(bytes) = args.weigh_bytes_from {
            text.push_str(&format!("weigh_bytes_from = {bytes}\n"));
        }
        std::fs::write(&config_path, text)?;
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(args.dir.join(format!("node-{node}.log")))?;
        let child = Command::new(&exe)
            .arg("node")
            .arg("--config")
            .arg(&config_path)
            .arg("--stop-on-stdin-eof")
            .args(["--status-interval-ms", "60000"])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::from(log))
            .spawn()
            .context("cannot start a node")?;
        children.0.push(child);
    }
    let addresses = cluster.client_addresses();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let tls = cluster.user_tls(&args.dir, amulet_tls::create::DEV_USER_NAME);
    let used = runtime.block_on(use_cluster(&addresses, cluster.runs, tls.clone()));
    if let Err(error) = used {
        stop(&mut children)?;
        return Err(error.context(format!(
            "the cluster did not come up; see the node logs in {}",
            args.dir.display()
        )));
    }
    println!("serving clients on {}", addresses.join(", "));
    if let Some(tls) = &tls {
        println!(
            "TLS on: clients trust {} and present {} (libraries: export AMULET_TLS_DIR={})",
            tls.ca.display(),
            tls.cert.display(),
            tls_dir.display()
        );
    }
    println!("try, in another terminal:  amulet put hello world && amulet get hello && amulet scan && amulet status");
    match args.seconds {
        Some(s) => println!("stopping in {s} s (or on Ctrl-C)"),
        None => println!("Ctrl-C stops the cluster; running `amulet dev` again recovers its data"),
    }
    #[allow(clippy::disallowed_methods)] // a wall-clock bound on the demo, not protocol time
    let started = std::time::Instant::now();
    let mut left = std::collections::BTreeSet::new();
    loop {
        std::thread::sleep(Duration::from_millis(100));
        if interrupted.load(Ordering::Relaxed) {
            println!("interrupted; stopping the cluster");
            break;
        }
        if args
            .seconds
            .is_some_and(|s| started.elapsed() >= Duration::from_secs(s))
        {
            println!("stopping the cluster");
            break;
        }
        for (i, child) in children.0.iter_mut().enumerate() {
            if let Some(status) = child.try_wait()? {
                if status.success() {
                    // A node that left the cluster (`amulet leave`) stops
                    // cleanly by itself once its partitions moved away.
                    if left.insert(i) {
                        println!(
                            "node {} stopped by itself (it left the cluster); see {}",
                            i + 1,
                            args.dir.join(format!("node-{}.log", i + 1)).display()
                        );
                    }
                    continue;
                }
                anyhow::bail!(
                    "node {} exited ({status}); see {}",
                    i + 1,
                    args.dir.join(format!("node-{}.log", i + 1)).display()
                );
            }
        }
    }
    drop(runtime);
    stop(&mut children)?;
    println!("stopped cleanly; data kept in {}", args.dir.display());
    Ok(())
}

/// Waits for the cluster, makes sure the default map exists, and uses it:
/// records this run, and shows what earlier runs left.
async fn use_cluster(
    addresses: &[String],
    run: u64,
    tls: Option<amulet_client::TlsFiles>,
) -> anyhow::Result<()> {
    let config = amulet_client::ClientConfig {
        operation_timeout: Duration::from_secs(60),
        tls,
        ..Default::default()
    };
    let client = amulet_client::Client::connect_with(addresses.to_vec(), config).await?;
    let map = client.create_map_if_absent(DEFAULT_MAP).await?;
    let runs = client.create_map_if_absent("dev-runs").await?;
    let earlier = runs.size().await?;
    runs.put(
        format!("run-{run:06}"),
        format!("started at unix time {}", unix_seconds()),
    )
    .await?;
    let entries = map.size().await?;
    println!(
        "cluster is up: map {DEFAULT_MAP:?} holds {entries} entries; {earlier} earlier run(s) recorded in map \"dev-runs\""
    );
    client.close().await;
    Ok(())
}

#[allow(clippy::disallowed_methods)] // a label for humans, not protocol time
fn unix_seconds() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}
