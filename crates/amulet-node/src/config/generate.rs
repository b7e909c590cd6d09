//! Configuration texts the project writes for its users: the local
//! clusters of `amulet dev` and the tests, and the per-machine files of
//! `amulet init`, with the placement they share.

use std::path::Path;

/// The head of node `node`'s file: cluster, node, where it listens (its
/// entry of `peers`), its data directory, and the `[peers]` table.
fn header(cluster: u64, peers: &[String], node: u32, data_dir: &Path) -> String {
    let mut text = format!(
        "cluster = {cluster}\nnode = {node}\nlisten = {:?}\ndata_dir = {:?}\n\n[peers]\n",
        peers[node as usize - 1],
        data_dir.display().to_string()
    );
    for (i, address) in peers.iter().enumerate() {
        text.push_str(&format!("{} = {address:?}\n", i + 1));
    }
    text
}

/// The configuration text of node `node` (1-based) of a cluster on
/// 127.0.0.1 at `ports` (node i listens on `ports[i-1]`), with streams
/// 1..=`streams` each accepted and learned by every node. Used by
/// `amulet dev` and tests.
pub fn local_cluster_toml(
    cluster: u64,
    ports: &[u16],
    node: u32,
    data_dir: &Path,
    streams: u32,
    storage: &str,
) -> String {
    let peers: Vec<String> = ports.iter().map(|p| format!("127.0.0.1:{p}")).collect();
    let mut text = header(cluster, &peers, node, data_dir);
    let members: Vec<String> = (1..=ports.len()).map(|i| i.to_string()).collect();
    for stream in 1..=streams {
        text.push_str(&format!(
            "\n[[streams]]\nid = {stream}\nacceptors = [{}]\nstorage = \"{storage}\"\n",
            members.join(", ")
        ));
    }
    text
}

/// `count` ports on 127.0.0.1 that were free a moment ago (bound together
/// with port 0, then released for nodes to take; another process could take
/// one in between, which makes a node fail to start with a clear error).
pub fn free_local_ports(count: usize) -> std::io::Result<Vec<u16>> {
    // Below Linux's ephemeral range (32768-60999): a port the OS hands out
    // for "port 0" can be taken again by any outgoing connection (a peer
    // link of another cluster in the same test run) before the node
    // binds it. Random starting points keep concurrent callers apart.
    const LOW: u32 = 20_000;
    const HIGH: u32 = 32_000;
    #[allow(clippy::disallowed_methods)] // a seed for port choice, not protocol time
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos())
        ^ std::process::id().wrapping_mul(2_654_435_761);
    static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let mut candidate = LOW
        + (seed.wrapping_add(NEXT.fetch_add(7_919, std::sync::atomic::Ordering::Relaxed)))
            % (HIGH - LOW);
    let mut listeners = Vec::with_capacity(count);
    for _ in 0..(HIGH - LOW) {
        if listeners.len() == count {
            break;
        }
        candidate = if candidate + 1 >= HIGH {
            LOW
        } else {
            candidate + 1
        };
        let port = u16::try_from(candidate).expect("below 32000");
        if handed_out(port) {
            continue;
        }
        if let Ok(listener) = std::net::TcpListener::bind(("127.0.0.1", port)) {
            listeners.push(listener);
        }
    }
    if listeners.len() < count {
        return Err(std::io::Error::new(
            std::io::ErrorKind::AddrInUse,
            "no free ports in 20000-32000",
        ));
    }
    let ports: Vec<u16> = listeners
        .iter()
        .map(|l| l.local_addr().map(|a| a.port()))
        .collect::<std::io::Result<_>>()?;
    for &port in &ports {
        hand_out(port);
    }
    Ok(ports)
}

/// Ports [`free_local_ports`] has already given to a caller in this
/// process. Two tests of one binary run at once: the ports one picked are
/// free again (their listeners closed) until its nodes bind them, so the
/// other could pick them in between, and one cluster fails to start with
/// "Address already in use" (CI saw it). A process never gets a port twice
/// (11,999 ports are many more than any test process uses).
static HANDED_OUT: std::sync::Mutex<Vec<u64>> = std::sync::Mutex::new(Vec::new());

fn handed_out(port: u16) -> bool {
    let words = HANDED_OUT
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    words
        .get(usize::from(port) / 64)
        .is_some_and(|word| word & (1 << (port % 64)) != 0)
}

fn hand_out(port: u16) {
    let mut words = HANDED_OUT
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let index = usize::from(port) / 64;
    if words.len() <= index {
        words.resize(index + 1, 0);
    }
    words[index] |= 1 << (port % 64);
}

/// Replicas per partition (and acceptors per stream) in a local DMap
/// cluster of more nodes than this.
pub const LOCAL_REPLICATION: usize = 3;

/// The placement of a local DMap cluster of `nodes` nodes: the global
/// stream's acceptors, and each of `partitions` partitions' replicas (also
/// its stream's acceptors). With at most [`LOCAL_REPLICATION`] nodes every
/// node does everything; with more, the global stream is on nodes 1-3 and
/// partition `p`'s three replicas start at node `3 (p - 1) mod nodes + 1`
/// and wrap around, so the replicas spread evenly (partition counts per
/// node differ by at most one when `3 * partitions` is a multiple of
/// `nodes`, by at most two otherwise).
pub fn local_dmap_placement(nodes: u32, partitions: u32) -> (Vec<u32>, Vec<Vec<u32>>) {
    let factor = (LOCAL_REPLICATION as u32).min(nodes);
    let global: Vec<u32> = (1..=factor).collect();
    let replicas = (0..partitions)
        .map(|p| (0..factor).map(|i| (p * factor + i) % nodes + 1).collect())
        .collect();
    (global, replicas)
}

/// The configuration of node `node` (1-based) in a local DMap cluster:
/// one node per entry of `peer_ports`, each serving the client API on the
/// matching entry of `client_ports`; stream 1 is the global stream and
/// streams 2.. order the `partitions` partitions, placed by
/// [`local_dmap_placement`]: on three nodes every node is an acceptor of
/// every stream and a replica of every partition; on more, each partition
/// has three replicas, which accept its stream and learn the global one.
pub fn local_dmap_cluster_toml(
    cluster: u64,
    peer_ports: &[u16],
    client_ports: &[u16],
    node: u32,
    data_dir: &Path,
    partitions: u32,
    storage: &str,
) -> String {
    let peers: Vec<String> = peer_ports
        .iter()
        .map(|p| format!("127.0.0.1:{p}"))
        .collect();
    let clients: Vec<String> = client_ports
        .iter()
        .map(|p| format!("127.0.0.1:{p}"))
        .collect();
    dmap_cluster_toml(
        cluster, &peers, &clients, node, data_dir, partitions, storage,
    )
}

/// The configuration of node `node` (1-based) of a DMap cluster whose
/// nodes are reached among themselves at `peers` (node i at `peers[i-1]`,
/// where it also listens) and by clients at `clients`; placed by
/// [`local_dmap_placement`]. `amulet init` writes one per machine.
pub fn dmap_cluster_toml(
    cluster: u64,
    peers: &[String],
    clients: &[String],
    node: u32,
    data_dir: &Path,
    partitions: u32,
    storage: &str,
) -> String {
    let nodes = peers.len() as u32;
    let (global, placement) = local_dmap_placement(nodes, partitions);
    let list = |ids: &[u32]| {
        ids.iter()
            .map(|i| i.to_string())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut text = header(cluster, peers, node, data_dir);
    // The global stream: every replica learns it.
    let learners: Vec<u32> = (1..=nodes).filter(|n| !global.contains(n)).collect();
    text.push_str(&format!(
        "\n[[streams]]\nid = 1\nacceptors = [{}]\nstorage = \"{storage}\"\n",
        list(&global)
    ));
    if !learners.is_empty() {
        text.push_str(&format!("learners = [{}]\n", list(&learners)));
    }
    for (p, replicas) in placement.iter().enumerate() {
        text.push_str(&format!(
            "\n[[streams]]\nid = {}\nacceptors = [{}]\nstorage = \"{storage}\"\n",
            p + 2,
            list(replicas)
        ));
    }
    text.push_str("\n[smr]\nglobal_stream = 1\n");
    for (p, replicas) in placement.iter().enumerate() {
        text.push_str(&format!(
            "\n[[smr.partitions]]\nid = {}\nstream = {}\nreplicas = [{}]\n",
            p + 1,
            p + 2,
            list(replicas)
        ));
    }
    text.push_str("\n[smr.clients]\n");
    for (i, address) in clients.iter().enumerate() {
        text.push_str(&format!("{} = {address:?}\n", i + 1));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::free_local_ports;

    #[test]
    fn ports_handed_out_once_are_never_handed_out_again_in_this_process() {
        let mut seen = std::collections::HashSet::new();
        for _ in 0..50 {
            for port in free_local_ports(6).unwrap() {
                assert!((20_000..32_000).contains(&port));
                assert!(seen.insert(port), "port {port} handed out twice");
            }
        }
    }
}
