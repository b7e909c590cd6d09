//! Three nodes in one process, driven through `NodeHandle`: values
//! multicast at any node are delivered by every node in the same order.

use amulet_node::{local_cluster_toml, Node, NodeConfig};
use amulet_types::StreamId;
use bytes::Bytes;
use std::time::Duration;

use tokio::sync::mpsc;

const VALUES_PER_NODE: usize = 200;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn handles_multicast_and_every_node_delivers_the_same_order() {
    let dir = std::env::temp_dir().join(format!("amulet-in-process-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let ports = amulet_node::free_local_ports(3).unwrap();
    let mut nodes = Vec::new();
    let mut receivers = Vec::new();
    for node in 1..=3u32 {
        let data_dir = dir.join(format!("node-{node}"));
        let text = local_cluster_toml(1, &ports, node, &data_dir, 2, "async");
        let config = NodeConfig::parse(&text).unwrap();
        let (tx, rx) = mpsc::unbounded_channel();
        nodes.push(Node::start(config, None, Some(tx)).await.unwrap());
        receivers.push(rx);
    }
    // Every node multicasts to both streams.
    for (i, node) in nodes.iter().enumerate() {
        let handle = node.handle();
        for k in 0..VALUES_PER_NODE {
            let stream = StreamId(1 + (k % 2) as u32);
            let bytes = Bytes::from(format!("node {i} value {k}"));
            handle.multicast(stream, bytes).await.unwrap();
        }
    }
    let total = 3 * VALUES_PER_NODE;
    let mut orders = Vec::new();
    for rx in &mut receivers {
        let mut order = Vec::new();
        let collect = async {
            while order.len() < total {
                let merged = rx.recv().await.expect("node stopped");
                order.push((merged.stream, merged.value.id, merged.value.bytes));
            }
        };
        tokio::time::timeout(Duration::from_secs(20), collect)
            .await
            .expect("values were not all delivered in time");
        orders.push(order);
    }
    assert_eq!(orders[0], orders[1]);
    assert_eq!(orders[0], orders[2]);
    for node in nodes {
        let report = tokio::time::timeout(Duration::from_secs(5), node.stop())
            .await
            .expect("clean shutdown in time")
            .unwrap();
        assert!(report.delivered.count >= total as u64);
    }
    let _ = std::fs::remove_dir_all(&dir);
}
