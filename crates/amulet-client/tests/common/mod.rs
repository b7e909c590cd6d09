//! Three real nodes in this test process (TCP on 127.0.0.1, memory
//! storage, two partitions, every node a replica of both), shared by the
//! client's in-process tests.

#![allow(dead_code)] // each test file uses its own part

use amulet_node::{free_local_ports, local_dmap_cluster_toml, Node, NodeConfig};
use std::path::PathBuf;

/// The running nodes, their client addresses and their data directory.
pub struct InProcess {
    pub nodes: Vec<Node>,
    pub addresses: Vec<String>,
    pub dir: PathBuf,
}

/// Starts the nodes of cluster `cluster` in a fresh directory named after
/// `name`.
pub async fn start(name: &str, cluster: u64) -> InProcess {
    start_with(name, cluster, |text| text).await
}

/// As [`start`], with each node's configuration text passed through
/// `edit` first.
pub async fn start_with(name: &str, cluster: u64, edit: impl Fn(String) -> String) -> InProcess {
    let dir = std::env::temp_dir().join(format!("amulet-{name}-{}", std::process::id()));
    // A port free when picked can be taken by another process before a
    // node binds it: pick again, a bounded number of times.
    for _attempt in 0..4 {
        let _ = std::fs::remove_dir_all(&dir);
        let ports = free_local_ports(6).unwrap();
        let (peers, clients) = ports.split_at(3);
        let mut nodes = Vec::new();
        let mut taken = None;
        for node in 1..=3u32 {
            let text = local_dmap_cluster_toml(
                cluster,
                peers,
                clients,
                node,
                &dir.join(format!("node-{node}")),
                2,
                "memory",
            );
            let config = NodeConfig::parse(&edit(text)).unwrap();
            match Node::start(config, None, None).await {
                Ok(started) => nodes.push(started),
                Err(error) if format!("{error:#}").contains("in use") => {
                    taken = Some(error);
                    break;
                }
                Err(error) => panic!("node {node} did not start: {error}"),
            }
        }
        if let Some(error) = taken {
            eprintln!("{name}: {error:#}; picking other ports");
            for node in nodes {
                node.stop().await.unwrap();
            }
            continue;
        }
        let addresses = clients.iter().map(|p| format!("127.0.0.1:{p}")).collect();
        return InProcess {
            nodes,
            addresses,
            dir,
        };
    }
    panic!("{name}: every set of ports picked was taken before the nodes bound it");
}

impl InProcess {
    /// Stops every node and removes the directory.
    pub async fn stop(self) {
        for node in self.nodes {
            node.stop().await.unwrap();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
