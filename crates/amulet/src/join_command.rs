//! `amulet join`: a new node joins a running cluster (docs/membership.md,
//! "Joining a running cluster"). It asks a member to order its join
//! (`ChangeMembership`), which gives it an id; writes its configuration,
//! made from a member's file under that id; and runs the node. The node
//! is in no stream at first: its observers admit it at the next view
//! change once they reach it, self-healing puts it among the global
//! stream's learners, and the balancer moves partitions onto it.

use crate::client_commands::Target;
use amulet_api::pb;
use anyhow::Context;
use std::net::SocketAddr;
use std::path::PathBuf;

/// Options of `amulet join`.
#[derive(clap::Args)]
pub struct JoinArgs {
    /// A member's client API address (host:port) to ask; default: --addr,
    /// or the `amulet dev` cluster in ./amulet-data.
    #[arg(long)]
    seed_node: Option<String>,
    /// A member's configuration file: the new node's is made from it
    /// (cluster id, streams, `[smr]`, `[peers]`, which name the cluster's
    /// first view and must stay as in every member's file), under the new
    /// id and with the addresses and directory below.
    #[arg(long)]
    like: PathBuf,
    /// Where the members reach the new node (ip:port: it listens there).
    #[arg(long)]
    peer_address: SocketAddr,
    /// Where clients reach its API (ip:port: it listens there).
    #[arg(long)]
    client_address: SocketAddr,
    /// Its data directory.
    #[arg(long)]
    data_dir: PathBuf,
    /// Where to write its configuration (refused if the file exists: a
    /// node that joined restarts with `amulet node --config FILE`).
    #[arg(long)]
    config: PathBuf,
    /// Write the configuration and stop; start the node later with
    /// `amulet node --config FILE`.
    #[arg(long)]
    no_start: bool,
}

/// Joins, writes the configuration, then runs the node in this process.
pub fn run(target: Target, args: JoinArgs) -> anyhow::Result<()> {
    if args.config.exists() {
        anyhow::bail!(
            "{} exists: a node that joined restarts with `amulet node --config {}`",
            args.config.display(),
            args.config.display()
        );
    }
    let template = std::fs::read_to_string(&args.like)
        .with_context(|| format!("cannot read {}", args.like.display()))?;
    // Checked as a member's file before anything is ordered.
    amulet_node::NodeConfig::parse(&template)
        .with_context(|| format!("{} is not a node's configuration", args.like.display()))?;
    let mut table: toml::Table = template
        .parse()
        .with_context(|| format!("{} is not TOML", args.like.display()))?;
    // With TLS the new node presents `node-ID.pem` of the member's
    // `[tls] dir`, for the id the join gives it.
    let tls_dir = match table.get("tls").and_then(toml::Value::as_table) {
        None => None,
        Some(tls) if tls.contains_key("cert") || tls.contains_key("key") => anyhow::bail!(
            "{}'s [tls] names its own certificate: give a member's file whose [tls] names only a dir (amulet cert's layout), where the new node's certificate will be",
            args.like.display()
        ),
        Some(tls) => Some(PathBuf::from(
            tls.get("dir")
                .and_then(toml::Value::as_str)
                .context("[tls] names no dir")?,
        )),
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let node = runtime.block_on(ask_to_join(&target, &args))?;
    drop(runtime);
    make_config(&mut table, node, &args)?;
    let text = toml::to_string(&table).context("cannot write the configuration")?;
    let config = amulet_node::NodeConfig::parse(&text)
        .context("the new node's configuration does not check")?;
    std::fs::create_dir_all(&args.data_dir)
        .with_context(|| format!("cannot create {}", args.data_dir.display()))?;
    std::fs::write(&args.config, text)
        .with_context(|| format!("cannot write {}", args.config.display()))?;
    println!(
        "node {node} is joining (cluster {}); its configuration is {}",
        config.cluster,
        args.config.display()
    );
    if let Some(dir) = &tls_dir {
        let files = amulet_tls::TlsFiles::node(dir, amulet_types::NodeId(node));
        if !files.cert.exists() || !files.key.exists() {
            println!(
                "its certificate is not in {} yet: create it with `amulet cert create-node --dir {} --node {node} --host {}`",
                dir.display(),
                dir.display(),
                args.peer_address.ip()
            );
            println!(
                "then start it with: amulet node --config {}",
                args.config.display()
            );
            return Ok(());
        }
    }
    if args.no_start {
        println!(
            "start it with: amulet node --config {}",
            args.config.display()
        );
        return Ok(());
    }
    let exe = std::env::current_exe().context("cannot find the amulet binary")?;
    use std::os::unix::process::CommandExt;
    let error = std::process::Command::new(exe)
        .arg("node")
        .arg("--config")
        .arg(&args.config)
        .exec();
    Err(error).context("cannot start the node")
}

/// Orders the join and answers the new node's id. A node already in the
/// view at this peer address (a join whose answer was lost, asked again)
/// keeps its id while it is joining.
async fn ask_to_join(target: &Target, args: &JoinArgs) -> anyhow::Result<u32> {
    let (client, addresses) =
        crate::client_commands::connect(target, args.seed_node.as_deref()).await?;
    let peer = args.peer_address.to_string();
    let joined = match client.join(&peer, &args.client_address.to_string()).await {
        Ok(node) => Ok(node),
        Err(error) => match member_at(&client, &addresses, &peer).await {
            Some(member) if member.state == "joining" => Ok(member.node),
            Some(member) => Err(anyhow::anyhow!(
                "node {} of the view is at {peer} ({}): give this node another address",
                member.node,
                member.state
            )),
            None => Err(anyhow::Error::new(error).context("the join was refused")),
        },
    };
    client.close().await;
    joined
}

/// The member of the newest view any of `addresses` reports at `peer`.
async fn member_at(
    client: &amulet_client::Client,
    addresses: &[String],
    peer: &str,
) -> Option<pb::MemberStatus> {
    let mut newest: Option<pb::MembershipStatus> = None;
    for address in addresses {
        let Ok(status) = client.status(address).await else {
            continue;
        };
        if let Some(view) = status.membership {
            if newest.as_ref().is_none_or(|n| view.view > n.view) {
                newest = Some(view);
            }
        }
    }
    newest?.members.into_iter().find(|m| m.address == peer)
}

/// The member's file `table` made the new node's: its id, addresses and
/// directory, its client address among `[smr] clients`, and `[membership]
/// joiner = true`. `[peers]` stays: it names the cluster's first view,
/// identical in every node's file; the node reaches later members
/// through the view.
fn make_config(table: &mut toml::Table, node: u32, args: &JoinArgs) -> anyhow::Result<()> {
    table.insert("node".into(), toml::Value::Integer(i64::from(node)));
    table.insert("listen".into(), args.peer_address.to_string().into());
    let data_dir = std::path::absolute(&args.data_dir)?;
    table.insert("data_dir".into(), data_dir.display().to_string().into());
    let smr = table
        .get_mut("smr")
        .and_then(toml::Value::as_table_mut)
        .context("the member's file has no [smr]: the cluster serves no DMap to join")?;
    let clients = smr
        .entry("clients")
        .or_insert_with(|| toml::Value::Table(toml::Table::new()))
        .as_table_mut()
        .context("[smr] clients is not a table")?;
    clients.insert(node.to_string(), args.client_address.to_string().into());
    let membership = table
        .entry("membership")
        .or_insert_with(|| toml::Value::Table(toml::Table::new()))
        .as_table_mut()
        .context("[membership] is not a table")?;
    membership.insert("joiner".into(), true.into());
    Ok(())
}
