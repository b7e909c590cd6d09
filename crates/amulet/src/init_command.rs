//! `amulet init`: the files of a cluster of several machines, one
//! directory per machine. Given the machines' peer addresses, it writes
//! each node's configuration (the same peers, streams and partitions in
//! every file, placed like `amulet dev --nodes N`), a cluster CA, each
//! node's certificate and key (only in that node's directory) and the user
//! `admin`'s client certificate. Nothing is overwritten: a second run on
//! the same directory is refused.

use amulet_node::{dmap_cluster_toml, local_dmap_placement, NodeConfig};
use amulet_tls::create::{create_ca, create_node, create_user, Validity, CA_DAYS, LEAF_DAYS};
use amulet_types::NodeId;
use anyhow::Context;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

/// The most nodes `amulet init` places.
const NODES_MAX: usize = 64;
/// The user whose client certificate `amulet init` creates.
const ADMIN: &str = "admin";

/// Options of `amulet init`.
#[derive(clap::Args)]
pub struct InitArgs {
    /// The nodes' peer addresses, HOST:PORT comma separated, in node id
    /// order (node 1 first). Each node listens there for its peers.
    #[arg(long, value_delimiter = ',', required = true)]
    nodes: Vec<String>,
    /// The nodes' client API addresses, in the same order; default: each
    /// node's host at its peer port + 1.
    #[arg(long, value_delimiter = ',')]
    clients: Vec<String>,
    /// Where the files go: DIR/node-N/ for machine N, DIR/client/ for
    /// clients, DIR/ca/ for the CA's key (keep it off the machines).
    #[arg(long, default_value = "amulet-cluster")]
    dir: PathBuf,
    /// Number of partitions.
    #[arg(long, default_value_t = 3)]
    partitions: u32,
    /// Acceptor storage: sync (fsync before every vote), async (fsync every
    /// 5 ms) or memory.
    #[arg(long, default_value = "sync")]
    storage: String,
    /// The data directory on each machine (`{node}` is replaced by the
    /// node id, for several nodes on one machine).
    #[arg(long, default_value = "/var/lib/amulet")]
    data_dir: String,
    /// Where each machine's directory is installed (its configuration
    /// names its TLS files there; `{node}` is replaced by the node id).
    #[arg(long, default_value = "/etc/amulet")]
    etc_dir: String,
    /// Cluster id (default: drawn at random).
    #[arg(long)]
    cluster: Option<u64>,
    /// No TLS: peers and clients unauthenticated, over plain TCP.
    #[arg(long)]
    insecure: bool,
}

/// Checks a HOST:PORT (a host name or an IP address, and a port above 0).
fn check_address(what: &str, address: &str) -> anyhow::Result<()> {
    if let Ok(socket) = address.parse::<SocketAddr>() {
        anyhow::ensure!(socket.port() > 0, "{what} {address:?}: bad port");
        return Ok(());
    }
    let (host, port) = address
        .rsplit_once(':')
        .ok_or_else(|| anyhow::anyhow!("{what} {address:?}: expected HOST:PORT"))?;
    let port: u16 = port
        .parse()
        .map_err(|_| anyhow::anyhow!("{what} {address:?}: bad port"))?;
    anyhow::ensure!(port > 0, "{what} {address:?}: bad port");
    anyhow::ensure!(
        !host.is_empty()
            && host
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '.' || c == '-'),
        "{what} {address:?}: bad host"
    );
    Ok(())
}

/// `address` with its port moved by `by`.
fn next_port(address: &str, by: u16) -> anyhow::Result<String> {
    let (host, port) = address
        .rsplit_once(':')
        .ok_or_else(|| anyhow::anyhow!("{address:?}: expected HOST:PORT"))?;
    let port: u16 = port.parse().context("a port")?;
    let next = port
        .checked_add(by)
        .ok_or_else(|| anyhow::anyhow!("{address:?}: no port above it"))?;
    Ok(format!("{host}:{next}"))
}

fn host_of(address: &str) -> String {
    let host = address.rsplit_once(':').map_or(address, |(h, _)| h);
    host.trim_start_matches('[')
        .trim_end_matches(']')
        .to_string()
}

/// Runs `amulet init`.
pub fn run(args: InitArgs) -> anyhow::Result<()> {
    anyhow::ensure!(
        (1..=NODES_MAX).contains(&args.nodes.len()),
        "--nodes: 1 to {NODES_MAX} addresses"
    );
    anyhow::ensure!(
        (1..=16).contains(&args.partitions),
        "--partitions must be 1 to 16"
    );
    anyhow::ensure!(
        ["memory", "async", "sync"].contains(&args.storage.as_str()),
        "--storage must be memory, async or sync"
    );
    for address in &args.nodes {
        check_address("--nodes", address)?;
    }
    let clients: Vec<String> = if args.clients.is_empty() {
        args.nodes
            .iter()
            .map(|a| next_port(a, 1))
            .collect::<anyhow::Result<_>>()?
    } else {
        args.clients.clone()
    };
    anyhow::ensure!(
        clients.len() == args.nodes.len(),
        "--clients: one address per node ({} given for {} nodes)",
        clients.len(),
        args.nodes.len()
    );
    for address in &clients {
        check_address("--clients", address)?;
    }
    let mut every: Vec<&String> = args.nodes.iter().chain(&clients).collect();
    every.sort();
    if let Some(pair) = every.windows(2).find(|w| w[0] == w[1]) {
        anyhow::bail!("address {} is given twice", pair[0]);
    }
    anyhow::ensure!(
        !args.dir.exists() || args.dir.read_dir()?.next().is_none(),
        "{} is not empty: amulet init overwrites nothing",
        args.dir.display()
    );
    std::fs::create_dir_all(&args.dir)
        .with_context(|| format!("cannot create {}", args.dir.display()))?;
    // A cluster id from the time and the process: two clusters made by
    // two runs differ, and a node never joins another cluster's peers.
    #[allow(clippy::disallowed_methods)] // an id, not protocol time
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    let cluster = args
        .cluster
        .unwrap_or((now ^ u64::from(std::process::id()).rotate_left(40)) >> 1);
    let ca_dir = args.dir.join("ca");
    let ca_cert = if args.insecure {
        None
    } else {
        Some(create_ca(
            &ca_dir,
            "amulet cluster CA",
            Validity::days(CA_DAYS),
        )?)
    };
    let count = args.nodes.len() as u32;
    for node in 1..=count {
        let machine = args.dir.join(format!("node-{node}"));
        let etc = args.etc_dir.replace("{node}", &node.to_string());
        let data = args.data_dir.replace("{node}", &node.to_string());
        let mut text =
            format!("# Node {node} of {count}: install this directory as {etc} on its machine.\n");
        text.push_str(&dmap_cluster_toml(
            cluster,
            &args.nodes,
            &clients,
            node,
            Path::new(&data),
            args.partitions,
            &args.storage,
        ));
        if let Some(ca_cert) = &ca_cert {
            let host = host_of(&args.nodes[node as usize - 1]);
            let client_host = host_of(&clients[node as usize - 1]);
            let files = create_node(
                &ca_dir,
                NodeId(node),
                &[host, client_host],
                Validity::days(LEAF_DAYS),
            )?;
            // The machine gets the CA's certificate and its own key only.
            let tls = machine.join("tls");
            std::fs::create_dir_all(&tls)?;
            for from in [ca_cert.clone(), files.cert.clone(), files.key.clone()] {
                let name = from.file_name().expect("a file name");
                std::fs::copy(&from, tls.join(name))
                    .with_context(|| format!("cannot copy {}", from.display()))?;
            }
            std::fs::remove_file(&files.cert)?;
            std::fs::remove_file(&files.key)?;
            text.push_str(&format!(
                "\n[tls]\ndir = {:?}\n",
                format!("{}/tls", etc.trim_end_matches('/'))
            ));
        }
        std::fs::create_dir_all(&machine)?;
        let config = machine.join("amulet.toml");
        // What is written parses, with a valid partition map.
        let parsed = NodeConfig::parse(&text)
            .with_context(|| format!("the configuration of node {node} does not parse"))?;
        anyhow::ensure!(parsed.partition_map()?.is_some(), "no partition map");
        std::fs::write(&config, text)
            .with_context(|| format!("cannot write {}", config.display()))?;
    }
    if let Some(ca_cert) = &ca_cert {
        let client = args.dir.join("client");
        std::fs::create_dir_all(&client)?;
        let user = create_user(&ca_dir, ADMIN, Validity::days(LEAF_DAYS))?;
        for from in [ca_cert.clone(), user.cert.clone(), user.key.clone()] {
            let name = from.file_name().expect("a file name");
            std::fs::copy(&from, client.join(name))?;
        }
        std::fs::remove_file(&user.cert)?;
        std::fs::remove_file(&user.key)?;
    }
    let (_, placement) = local_dmap_placement(count, args.partitions);
    println!(
        "cluster {cluster}: {count} nodes, {} partitions x {} replicas, {} storage",
        args.partitions,
        placement.first().map_or(0, Vec::len),
        args.storage
    );
    for node in 1..=count {
        println!(
            "  node {node}: peers at {}, clients at {}: copy {} to {} on its machine",
            args.nodes[node as usize - 1],
            clients[node as usize - 1],
            args.dir.join(format!("node-{node}")).display(),
            args.etc_dir.replace("{node}", &node.to_string())
        );
    }
    println!(
        "then on each machine: amulet node --config <its directory>/amulet.toml (deploy/amulet.service runs it under systemd, deploy/Containerfile in a container)"
    );
    if args.insecure {
        println!("TLS is off (--insecure): anyone who reaches the ports is trusted");
    } else {
        println!(
            "clients: amulet status --addr {} --tls-dir {}",
            clients.join(","),
            args.dir.join("client").display()
        );
        println!(
            "keep {} off the machines: it signs certificates",
            ca_dir.join("ca.key").display()
        );
    }
    Ok(())
}
