//! `amulet get/put/del/scan/size/first/last/status/create-map/drop-map`:
//! one operation against a cluster through the Rust client; and the
//! operator's `split/merge/replace-stream` (online repartitioning). Without
//! `--addr` they talk to the `amulet dev` cluster of `./amulet-data`.

use crate::dev::{ClusterFile, DEFAULT_DIR, DEFAULT_MAP};
use amulet_client::{Bytes, Client, ClientConfig, KeyBound, TlsFiles};
use anyhow::Context;
use std::path::Path;
use std::time::Duration;

/// Where the cluster is and which map to use.
#[derive(clap::Args, Clone)]
pub struct Target {
    /// Client API addresses (host:port, comma separated); default: the
    /// `amulet dev` cluster in ./amulet-data.
    #[arg(long, value_delimiter = ',', global = true)]
    addr: Vec<String>,
    /// The map.
    #[arg(long, default_value = DEFAULT_MAP, global = true)]
    map: String,
    /// Give up after this many seconds.
    #[arg(long, default_value_t = 10, global = true)]
    timeout_secs: u64,
    /// TLS: the directory holding `ca.pem`, `USER.pem` and `USER.key`
    /// (`amulet cert`'s layout); default: the `amulet dev` cluster's
    /// `./amulet-data/tls` when no --addr is given, else $AMULET_TLS_DIR
    /// (unset: plain TCP).
    #[arg(long, global = true)]
    tls_dir: Option<std::path::PathBuf>,
    /// TLS: the user whose certificate is presented.
    #[arg(long, default_value = "admin", global = true, env = "AMULET_USER")]
    user: String,
    /// TLS: authenticate with this bearer token (`amulet token create`)
    /// instead of a certificate; only the CA of --tls-dir is used.
    #[arg(long, global = true, env = "AMULET_TOKEN", hide_env_values = true)]
    token: Option<String>,
}

/// One client operation.
#[derive(clap::Subcommand, Clone)]
pub enum Op {
    /// Print the value of KEY (an eventual map: every concurrent value,
    /// then `context: HEX`).
    Get {
        key: String,
        /// Eventual maps: replicas to hear from (0: a majority).
        #[arg(long, default_value_t = 0)]
        r: u32,
    },
    /// Set KEY to VALUE (an eventual map: superseding what --context saw;
    /// prints the values after it and the new context).
    Put {
        key: String,
        value: String,
        /// Eventual maps: the context of the read this write replaces.
        #[arg(long)]
        context: Option<String>,
        /// Eventual maps: replicas to hold it before the answer (0: a
        /// majority).
        #[arg(long, default_value_t = 0)]
        w: u32,
    },
    /// Remove KEY (an eventual map: what --context saw of it).
    Del {
        key: String,
        /// Eventual maps: the context of the read this delete replaces.
        #[arg(long)]
        context: Option<String>,
        /// Eventual maps: replicas to hold it (0: a majority).
        #[arg(long, default_value_t = 0)]
        w: u32,
    },
    /// Print entries in key order: the whole map from a snapshot; between
    /// bounds, page by page (each page a linearizable read within one
    /// range partition); with --limit or --reverse, one linearizable
    /// range read.
    Scan {
        /// Least key (inclusive).
        #[arg(long)]
        from: Option<String>,
        /// Greatest key (exclusive).
        #[arg(long)]
        to: Option<String>,
        /// Most entries.
        #[arg(long)]
        limit: Option<u32>,
        /// Descending order (range reads).
        #[arg(long)]
        reverse: bool,
    },
    /// Print the number of entries.
    Size,
    /// Print the entry with the least key.
    First,
    /// Print the entry with the greatest key.
    Last,
    /// Create a map named NAME (default: --map): hash-partitioned and
    /// linearizable, or with --eventual an eventual map (Dynamo-style,
    /// docs/eventual-maps.md) with --replicas replicas per key.
    CreateMap {
        name: Option<String>,
        /// An eventually consistent map (siblings and contexts).
        #[arg(long)]
        eventual: bool,
        /// Partitioned by key ranges (docs/dynatree.md): it starts in one
        /// partition, the lowest, and the balancer splits it as it grows.
        #[arg(long, conflicts_with = "eventual")]
        range: bool,
        /// Eventual maps: replicas per key, on distinct nodes.
        #[arg(long, default_value_t = 3)]
        replicas: u32,
        /// Eventual maps: virtual nodes (0: 16, rounded up to a multiple
        /// of the node count).
        #[arg(long, default_value_t = 0)]
        vnodes: u32,
        /// Eventual maps: the MerkleDB baseline's store (per-key clocks,
        /// tombstones, Merkle-tree anti-entropy), for comparisons.
        #[arg(long)]
        merkle: bool,
    },
    /// Drop the map named by --map and its entries.
    DropMap,
    /// Show partitions, streams, replicas, map version and health.
    Status {
        /// Also write every node's eventual virtual nodes as CSV rows to
        /// this file (node, map, replica, keys, tombstones, metadata
        /// bytes, dot-key map, non-stripped keys, watermark lag,
        /// anti-entropy bytes sent and received, writes coordinated).
        #[arg(long)]
        eventual_csv: Option<std::path::PathBuf>,
    },
    /// Run a transaction: statements `get KEY`, `put KEY VALUE`, `del
    /// KEY`, `scan [FROM [TO]]`, `map NAME`, in order, committed together
    /// at the end (strictly serializable; see docs/transactions.md).
    Txn(crate::txn_command::TxnArgs),
    /// Load sorted `KEY<TAB>VALUE` lines into the map, pre-splitting a
    /// range map into partitions as it goes (docs/dynatree.md).
    BulkLoad(crate::bulk_load_command::BulkLoadArgs),
    /// Logs (DLog, docs/logs.md): create, append, multi-append, read,
    /// tail, trim, bounds, drop.
    #[command(subcommand)]
    Log(crate::log_command::LogOp),
    /// Access control (docs/security.md): show, grant, revoke, assign,
    /// unassign. Needs the cluster admin role.
    #[command(subcommand)]
    Access(crate::access_command::AccessOp),
    /// Bearer tokens for clients without a certificate: create, revoke.
    #[command(subcommand)]
    Token(crate::access_command::TokenOp),
    /// Print who the cluster takes this client for, and its roles.
    Whoami,
    /// The balancer (docs/dynatree.md): pause or resume it on every
    /// node, or show what each node's decided lately. Pause and resume
    /// need the cluster admin role.
    #[command(subcommand)]
    Balancer(crate::balancer_command::BalancerOp),
    /// Member NODE leaves the cluster gracefully (docs/membership.md): the
    /// next view removes it, self-healing moves its partitions onto the
    /// other live nodes, and the node stops by itself once it holds none.
    /// Refused, with nothing changed, for an acceptor of the global stream
    /// no other live member could replace, or a node whose partitions
    /// have no other live node to go to.
    Leave {
        node: u32,
        /// Wait up to this many seconds until the node is removed and
        /// holds no replica, printing progress (0: do not wait).
        #[arg(long, default_value_t = 120)]
        wait_secs: u64,
    },
    /// Split partition SOURCE: the keys from the token --at-token (hash
    /// maps; default: the middle of SOURCE's first token segment) and, for
    /// range maps, from --at-key MAP=KEY on move to the new partition NEW
    /// (default: an id never used) on a new stream (same replicas, which
    /// fork it at a fence while clients keep running).
    Split {
        source: u32,
        new: Option<u32>,
        /// Id of the new partition's stream; default: one the cluster
        /// never used (allocated from the map the change is checked
        /// against).
        #[arg(long)]
        stream: Option<u32>,
        #[arg(long)]
        at_token: Option<u32>,
        /// MAP=KEY: cut of a range-partitioned map.
        #[arg(long)]
        at_key: Vec<String>,
        /// Acceptor storage of the new stream: memory, async or sync.
        #[arg(long, default_value = "sync")]
        storage: String,
    },
    /// Merge partition SOURCE into INTO (same replicas); SOURCE and its
    /// stream retire.
    Merge { source: u32, into: u32 },
    /// Move PARTITION onto a new stream with acceptors --acceptors (thesis
    /// §4.2: acceptor replacement); the old stream retires.
    ReplaceStream {
        partition: u32,
        /// Id of the new stream; default: one the cluster never used.
        #[arg(long)]
        stream: Option<u32>,
        /// Node ids, comma separated (an odd number; default: the
        /// partition's replicas).
        #[arg(long, value_delimiter = ',')]
        acceptors: Vec<u32>,
        #[arg(long, default_value = "sync")]
        storage: String,
    },
    /// Continue the global stream on a new stream with acceptors
    /// --acceptors (thesis §4.2 for the stream every partition merges):
    /// every replica swaps it at the same point of the order; the old one
    /// retires. Learners: --learners (default: every node running the
    /// current global stream), and every replica, not among the
    /// acceptors. Each must run the current global stream, else refused
    /// (global-stream-stranger) with nothing changed.
    ReplaceGlobalStream {
        /// Node ids, comma separated (an odd number).
        #[arg(long, value_delimiter = ',', required = true)]
        acceptors: Vec<u32>,
        /// Node ids, comma separated; default: every node whose status
        /// shows it runs the current global stream.
        #[arg(long, value_delimiter = ',')]
        learners: Vec<u32>,
        /// Id of the new stream; default: one the cluster never used.
        #[arg(long)]
        stream: Option<u32>,
        #[arg(long, default_value = "sync")]
        storage: String,
    },
    /// Move PARTITION to the replica group --to (node ids, comma
    /// separated, each already a replica of some partition) on a new
    /// stream whose acceptors are the new replicas; new replicas fetch the
    /// state from the old ones (DMap §III-C state transfer).
    Move {
        partition: u32,
        #[arg(long, value_delimiter = ',', required = true)]
        to: Vec<u32>,
        /// Id of the new stream; default: one the cluster never used.
        #[arg(long)]
        stream: Option<u32>,
        #[arg(long, default_value = "sync")]
        storage: String,
    },
}

/// The addresses to connect to, and the TLS files (if any) to use.
fn addresses(target: &Target) -> anyhow::Result<(Vec<String>, Option<TlsFiles>)> {
    let explicit = target
        .tls_dir
        .as_deref()
        .map(|dir| TlsFiles::user(dir, &target.user));
    if !target.addr.is_empty() {
        let tls = explicit.or_else(TlsFiles::from_env);
        return Ok((target.addr.clone(), tls));
    }
    match ClusterFile::read(Path::new(DEFAULT_DIR))? {
        Some(cluster) => {
            let tls = explicit.or_else(|| cluster.user_tls(Path::new(DEFAULT_DIR), &target.user));
            Ok((cluster.client_addresses(), tls))
        }
        None => Ok((
            (1..=3).map(|i| format!("127.0.0.1:{}", 7100 + i)).collect(),
            explicit.or_else(TlsFiles::from_env),
        )),
    }
}

fn show(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Runs one operation.
pub fn run(target: Target, op: Op) -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(run_async(target, op))
}

async fn run_async(target: Target, op: Op) -> anyhow::Result<()> {
    let (client, addresses) = connect(&target, None).await?;
    let result = execute(&client, &target, op, &addresses).await;
    client.close().await;
    result
}

/// A client of the cluster `target` names (or of `seed` alone, if given),
/// and the addresses it was given.
pub(crate) async fn connect(
    target: &Target,
    seed: Option<&str>,
) -> anyhow::Result<(Client, Vec<String>)> {
    let (mut addresses, tls) = addresses(target)?;
    if let Some(seed) = seed {
        addresses = vec![seed.to_string()];
    }
    let token = target
        .token
        .clone()
        .filter(|t| !t.is_empty())
        .map(amulet_client::BearerToken);
    // With a token, only the CA of the TLS files: the token names the user.
    let tls = match (&token, tls) {
        (Some(_), Some(files)) => Some(TlsFiles::ca_only(files.ca)),
        (_, tls) => tls,
    };
    let config = ClientConfig {
        operation_timeout: Duration::from_secs(target.timeout_secs.max(1)),
        tls,
        token,
        ..Default::default()
    };
    let client = Client::connect_with(addresses.clone(), config)
        .await
        .with_context(|| format!("cannot reach a node at {}", addresses.join(", ")))?;
    Ok((client, addresses))
}

async fn execute(
    client: &Client,
    target: &Target,
    op: Op,
    addresses: &[String],
) -> anyhow::Result<()> {
    let map = client.map(&target.map)?;
    if matches!(op, Op::Get { .. } | Op::Put { .. } | Op::Del { .. })
        && client.is_eventual(&target.map).await == Some(true)
    {
        use crate::eventual_command::{run, EventualOp};
        let eventual = match &op {
            Op::Get { key, r } => EventualOp::Get { key, r: *r },
            Op::Put {
                key,
                value,
                context,
                w,
            } => EventualOp::Put {
                key,
                value,
                context: context.as_deref(),
                w: *w,
            },
            Op::Del { key, context, w } => EventualOp::Del {
                key,
                context: context.as_deref(),
                w: *w,
            },
            _ => unreachable!("matched above"),
        };
        return run(client, &target.map, eventual).await;
    }
    match op {
        Op::Get { key, .. } => match map.get(key).await? {
            Some(value) => println!("{}", show(&value)),
            None => anyhow::bail!("no such key"),
        },
        Op::Put { key, value, .. } => {
            let previous = map.put(key, value).await?;
            match previous {
                Some(p) => println!("OK (was {})", show(&p)),
                None => println!("OK"),
            }
        }
        Op::Del { key, .. } => match map.remove(key).await? {
            Some(p) => println!("removed (was {})", show(&p)),
            None => println!("no such key"),
        },
        Op::Scan {
            from,
            to,
            limit,
            reverse,
        } => {
            if from.is_none() && to.is_none() && limit.is_none() && !reverse {
                let mut snapshot = map.snapshot().await?;
                let mut count = 0u64;
                while let Some((key, value)) = snapshot.next().await? {
                    println!("{}\t{}", show(&key), show(&value));
                    count += 1;
                }
                let id = snapshot.id();
                snapshot.close().await?;
                eprintln!("({count} entries, snapshot at global position {id})");
            } else if limit.is_none() && !reverse {
                let bound = |k: Option<String>, inclusive: bool| {
                    k.map(|k| KeyBound {
                        key: Bytes::from(k),
                        inclusive,
                    })
                };
                let mut scan = map.scan(bound(from, true), bound(to, false), 1_000);
                let mut count = 0u64;
                while let Some(page) = scan.next_page().await? {
                    for (key, value) in &page {
                        println!("{}\t{}", show(key), show(value));
                    }
                    count += page.len() as u64;
                }
                eprintln!("({count} entries, {} range reads)", scan.reads());
            } else {
                let bound = |k: Option<String>, inclusive: bool| {
                    k.map(|k| KeyBound {
                        key: Bytes::from(k),
                        inclusive,
                    })
                };
                let (entries, more) = map
                    .range(
                        bound(from, true),
                        bound(to, false),
                        limit.unwrap_or(1000),
                        reverse,
                    )
                    .await?;
                for (key, value) in &entries {
                    println!("{}\t{}", show(key), show(value));
                }
                eprintln!(
                    "({} entries{})",
                    entries.len(),
                    if more { ", more follow" } else { "" }
                );
            }
        }
        Op::Size => println!("{}", map.size().await?),
        Op::First | Op::Last => {
            let entry = if matches!(op, Op::First) {
                map.first_entry().await?
            } else {
                map.last_entry().await?
            };
            match entry {
                Some((key, value)) => println!("{}\t{}", show(&key), show(&value)),
                None => anyhow::bail!("the map is empty"),
            }
        }
        Op::CreateMap {
            name,
            eventual,
            range,
            replicas,
            vnodes,
            merkle,
        } => {
            let name = name.as_deref().unwrap_or(&target.map);
            if range {
                let map = client.partition_map();
                let first = map
                    .partitions
                    .keys()
                    .next()
                    .copied()
                    .ok_or_else(|| anyhow::anyhow!("the cluster's map has no partition"))?;
                let layout = amulet_smr::Layout::Range(vec![(Bytes::new(), first)]);
                client.create_map_with(name, layout).await?;
                println!(
                    "created range map {name:?} (one partition, {first}; it splits as it grows)"
                );
            } else if eventual {
                client
                    .create_eventual_map_with(name, replicas, vnodes, merkle)
                    .await?;
                println!("created eventual map {name:?} ({replicas} replicas per key)");
            } else {
                client.create_map(name).await?;
                println!("created map {name:?}");
            }
        }
        Op::DropMap => {
            client.drop_map(&target.map).await?;
            println!("dropped map {:?}", target.map);
        }
        Op::Status { eventual_csv } => {
            status(client, addresses).await?;
            if let Some(path) = eventual_csv {
                crate::eventual_command::status_csv(client, &path).await?;
            }
        }
        Op::Txn(args) => crate::txn_command::run(client, &target.map, &args).await?,
        Op::BulkLoad(args) => crate::bulk_load_command::run(client, &target.map, &args).await?,
        Op::Log(log_op) => crate::log_command::run(client, &log_op).await?,
        Op::Access(access_op) => crate::access_command::run_access(client, &access_op).await?,
        Op::Token(token_op) => crate::access_command::run_token(client, &token_op).await?,
        Op::Whoami => crate::access_command::run_whoami(client).await?,
        Op::Balancer(op) => crate::balancer_command::run(client, &op).await?,
        Op::Leave { node, wait_secs } => {
            client.leave(node).await?;
            println!("node {node} is leaving: the next view removes it and its partitions move to the live nodes");
            if wait_secs > 0 {
                crate::membership_command::wait_until_left(client, node, wait_secs).await?;
            }
        }
        Op::Split { .. }
        | Op::Merge { .. }
        | Op::ReplaceStream { .. }
        | Op::Move { .. }
        | Op::ReplaceGlobalStream { .. } => {
            let mut op = op;
            if let Op::ReplaceGlobalStream { learners, .. } = &mut op {
                if learners.is_empty() {
                    *learners = global_stream_runners(client).await;
                }
            }
            let configured = client.running_streams().await;
            // Checked once here for a clear error; built again on the
            // freshest map at every attempt.
            crate::reconfigure_command::reconfiguration(&client.partition_map(), &op, &configured)?;
            crate::reconfigure_command::reconfigure(client, &op, &configured, target.timeout_secs)
                .await?;
        }
    }
    Ok(())
}

/// The nodes whose status shows they run the current global stream.
async fn global_stream_runners(client: &Client) -> Vec<u32> {
    let global = client.partition_map().global_stream.0;
    let mut runners = Vec::new();
    for (_, address) in client.node_addresses() {
        if let Ok(status) = client.status(&address).await {
            if status.streams.iter().any(|s| s.stream == global) {
                runners.push(status.node);
            }
        }
    }
    runners
}

async fn status(client: &Client, seeds: &[String]) -> anyhow::Result<()> {
    let map = client.partition_map();
    println!(
        "partition map version {}, global stream {}",
        map.version.0, map.global_stream.0
    );
    for (id, p) in &map.partitions {
        let replicas: Vec<String> = p.replicas.iter().map(|n| n.0.to_string()).collect();
        println!(
            "  partition {}: stream {}, replicas [{}]",
            id.0,
            p.stream.0,
            replicas.join(", ")
        );
        // Nodes a move took it from that have not yet said they hold
        // nothing of it (docs/ARCHITECTURE.md, hand-off sets).
        if let Some(from) = map.handing_off.get(id) {
            let from: Vec<String> = from.iter().map(|n| n.0.to_string()).collect();
            println!("    handing off from [{}]", from.join(", "));
        }
    }
    let maps: Vec<&String> = map.keyspaces.keys().collect();
    println!("  maps: {maps:?}");
    let mut addresses: Vec<(u32, String)> = client
        .node_addresses()
        .into_iter()
        .map(|(n, a)| (n.0, a))
        .collect();
    if addresses.is_empty() {
        addresses = seeds.iter().map(|a| (0, a.clone())).collect();
    }
    let mut healthy = 0;
    let mut newest_view: Option<amulet_api::pb::MembershipStatus> = None;
    let mut held = std::collections::BTreeMap::new();
    for (node, address) in &addresses {
        match client.status(address).await {
            Ok(s) => {
                healthy += 1;
                held.insert(
                    s.node,
                    s.replicas.iter().map(|r| r.partition).collect::<Vec<u32>>(),
                );
                if let Some(view) = &s.membership {
                    if newest_view
                        .as_ref()
                        .is_none_or(|known| view.view > known.view)
                    {
                        newest_view = Some(view.clone());
                    }
                }
                let streams: Vec<String> = s
                    .streams
                    .iter()
                    .map(|st| {
                        format!(
                            "s{}@{}{}",
                            st.stream,
                            st.decided_below,
                            if st.coordinator { "*" } else { "" }
                        )
                    })
                    .collect();
                let replicas: Vec<String> = s
                    .replicas
                    .iter()
                    .map(|r| {
                        // Measured only with splits by load.
                        let load = match r.ops_per_second {
                            0 => String::new(),
                            ops => format!(", {ops} ops/s"),
                        };
                        format!(
                            "p{}(global {}, queued {}, sessions {}, {} entries, {}{load})",
                            r.partition,
                            r.global_position,
                            r.queued,
                            r.sessions,
                            r.entries,
                            human_bytes(r.payload_bytes)
                        )
                    })
                    .collect();
                println!(
                    "node {node} {address}: up, map v{}; streams {} (decided below; * = coordinator); replicas {}",
                    s.map_version,
                    streams.join(" "),
                    replicas.join(" ")
                );
                if let Some(balancer) = s
                    .balancer
                    .as_ref()
                    .filter(|b| !b.enabled || !b.recent.is_empty())
                {
                    crate::balancer_command::print_balancer(s.node, balancer);
                }
                for e in &s.eventual {
                    println!(
                        "  eventual {} r{}: {} keys, {} coordinated, dot-key map {}, non-stripped {}, watermark lag {}, clock bitmap {} bits, anti-entropy {} B sent / {} B received",
                        e.map,
                        e.replica,
                        e.keys,
                        e.coordinated,
                        e.dot_keys,
                        e.non_stripped,
                        e.watermark_lag,
                        e.clock_bitmap_bits,
                        e.sync_bytes_sent,
                        e.sync_bytes_received
                    );
                }
            }
            Err(e) => println!("node {node} {address}: DOWN ({e})"),
        }
    }
    if let Some(view) = &newest_view {
        crate::membership_command::print_view(view);
        if let Some(progress) = crate::membership_command::rehoming(&map, view, &held) {
            println!("{progress}");
        }
    }
    println!("health: {healthy}/{} nodes answer", addresses.len());
    Ok(())
}

/// `bytes` for people: B, KiB, MiB or GiB, one decimal past bytes.
fn human_bytes(bytes: u64) -> String {
    const UNITS: [&str; 4] = ["B", "KiB", "MiB", "GiB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} B")
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

#[cfg(test)]
mod tests {
    use super::human_bytes;

    #[test]
    fn sizes_print_in_the_largest_unit_under_1024() {
        assert_eq!(human_bytes(0), "0 B");
        assert_eq!(human_bytes(1023), "1023 B");
        assert_eq!(human_bytes(1024), "1.0 KiB");
        assert_eq!(human_bytes(123_090), "120.2 KiB");
        assert_eq!(human_bytes(256 * 1024 * 1024), "256.0 MiB");
        assert_eq!(human_bytes(5 << 40), "5120.0 GiB");
    }
}
