//! The Rust client's transactions against three real nodes in this
//! process (docs/transactions.md; the shared scenarios are in
//! `spec/conformance/transactions.json`): what a single client's cached
//! partition map and a node's reply bound must not break.

mod common;

use amulet_client::{Bytes, Client, KeyBound};

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sconekv_reads_see_a_map_another_client_created_since_this_one_fetched_the_map() {
    let cluster = common::start("txn-created", 5).await;
    let address = cluster.addresses[0].clone();
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
    cluster.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sconekv_a_range_read_of_the_most_a_node_serves_with_removals_buffered_is_served() {
    let cluster = common::start("txn-range", 5).await;
    let address = cluster.addresses[0].clone();
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
    cluster.stop().await;
}
