//! The Rust client's transactions against three real nodes in this
//! process (docs/transactions.md; the shared scenarios are in
//! `spec/conformance/transactions.json`): what a single client's cached
//! partition map and a node's reply bound must not break.

use amulet_client::{Bytes, Client, KeyBound};
use amulet_node::{free_local_ports, local_dmap_cluster_toml, Node, NodeConfig};

async fn cluster(name: &str) -> (Vec<Node>, String, std::path::PathBuf) {
    let dir = std::env::temp_dir().join(format!("amulet-txn-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let ports = free_local_ports(6).unwrap();
    let (peers, clients) = ports.split_at(3);
    let mut nodes = Vec::new();
    for node in 1..=3u32 {
        let text = local_dmap_cluster_toml(
            5,
            peers,
            clients,
            node,
            &dir.join(format!("node-{node}")),
            2,
            "memory",
        );
        let config = NodeConfig::parse(&text).unwrap();
        nodes.push(Node::start(config, None, None).await.unwrap());
    }
    (nodes, format!("127.0.0.1:{}", clients[0]), dir)
}

async fn stop(nodes: Vec<Node>, dir: std::path::PathBuf) {
    for node in nodes {
        node.stop().await.unwrap();
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sconekv_reads_see_a_map_another_client_created_since_this_one_fetched_the_map() {
    let (nodes, address, dir) = cluster("created").await;
    let reader = Client::connect([address.clone()]).await.unwrap();
    reader.create_map("old").await.unwrap();
    // Another client creates a map after `reader` cached its partition map.
    let writer = Client::connect([address]).await.unwrap();
    let fresh = writer.create_map("fresh").await.unwrap();
    fresh.put("k", "v").await.unwrap();
    let seen = reader
        .transact(|tx| async move { tx.get("fresh", "k").await })
        .await
        .unwrap();
    assert_eq!(seen, Some(Bytes::from_static(b"v")));
    stop(nodes, dir).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sconekv_a_range_read_of_the_most_a_node_serves_with_removals_buffered_is_served() {
    let (nodes, address, dir) = cluster("range").await;
    let client = Client::connect([address]).await.unwrap();
    let m = client.create_map("m").await.unwrap();
    m.put_all((0..30u32).map(|i| (format!("k{i:02}"), format!("v{i}"))))
        .await
        .unwrap();
    let (entries, more) = client
        .transact(|tx| async move {
            tx.delete("m", "k00");
            // 10,000 is the most entries a node serves in one reply: the
            // removal buffered here must not make the client ask for more.
            let from = KeyBound {
                key: Bytes::from_static(b"k"),
                inclusive: true,
            };
            tx.range("m", Some(from), None, 10_000, false).await
        })
        .await
        .unwrap();
    assert!(!more);
    assert_eq!(entries.len(), 29, "every entry but the one removed");
    assert_eq!(entries[0].0, Bytes::from_static(b"k01"));
    stop(nodes, dir).await;
}
