//! Eventual maps on real processes (docs/eventual-maps.md): three `amulet
//! node` processes on 127.0.0.1. A node whose eventual store is lost (its
//! `eventual/` directory gone, as with a replaced disk) must not make its
//! virtual nodes again under their old ids: it would issue their dots a
//! second time, and peers that saw the first ones would take the new
//! writes for known ones (Riak's "kv679"). It registers its new store
//! through the global stream, the cluster gives its virtual nodes new ids
//! and retires the old ones, and the new ones fetch everything by full
//! transfers (DottedDB §IV, issue 23). Every child is killed on every path
//! and every wait is bounded.

mod common;

use amulet_client::{Bytes, Client, Context};
use common::{client_config, Cluster};
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

const KEYS: u32 = 200;

fn runtime() -> tokio::runtime::Runtime {
    common::runtime()
}

/// Node `node`'s virtual nodes of `map`: replica id → keys stored.
fn vnodes(
    runtime: &tokio::runtime::Runtime,
    client: &Client,
    address: &str,
    map: &str,
) -> Option<BTreeMap<u64, u64>> {
    let status = runtime.block_on(client.status(address)).ok()?;
    Some(
        status
            .eventual
            .iter()
            .filter(|e| e.map == map)
            .map(|e| (e.replica, e.keys))
            .collect(),
    )
}

#[test]
fn dotteddb_kv679_a_node_that_lost_its_eventual_store_gets_new_replica_ids_and_loses_no_write() {
    let mut cluster = Cluster::start("eventual-lost");
    let runtime = runtime();
    let client = runtime
        .block_on(Client::connect_with(cluster.addresses(), client_config()))
        .unwrap();
    let map = runtime
        .block_on(client.create_eventual_map("carts", 3))
        .unwrap();
    // Every write held by a majority (2 of 3): losing one node's store
    // loses none of them.
    for k in 0..KEYS {
        let key = format!("key-{k}");
        let value = format!("value-{k}");
        runtime
            .block_on(map.put(key.as_bytes(), value.as_bytes(), &Context::empty()))
            .unwrap();
    }
    let address = cluster.address(2);
    let before = vnodes(&runtime, &client, &address, "carts").unwrap();
    let old: BTreeSet<u64> = before.keys().copied().collect();
    let held: u64 = before.values().sum();
    assert!(held > 0, "node 2 holds keys of the map: {before:?}");

    cluster.kill(2);
    std::fs::remove_dir_all(cluster.dir.join("data-2").join("eventual")).unwrap();
    cluster.spawn(2);

    // Node 2 comes back with other ids, as many, holding (after their full
    // transfers) as many keys as before.
    #[allow(clippy::disallowed_methods)] // a wall-clock bound on the test
    let started = std::time::Instant::now();
    let new = loop {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "node 2 did not get new virtual nodes holding its keys"
        );
        if let Some(now) = vnodes(&runtime, &client, &address, "carts") {
            let ids: BTreeSet<u64> = now.keys().copied().collect();
            if ids.len() == old.len() && ids.is_disjoint(&old) && now.values().sum::<u64>() == held
            {
                break now;
            }
            assert!(
                ids.is_disjoint(&old),
                "node 2 made a lost virtual node again under its old id: {ids:?} against {old:?}"
            );
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    // No node holds a retired id.
    for node in [1, 3] {
        let ids = vnodes(&runtime, &client, &cluster.address(node), "carts").unwrap();
        assert!(
            ids.keys().all(|id| !old.contains(id)),
            "node {node}: {ids:?}"
        );
        assert!(ids.keys().all(|id| !new.contains_key(id)));
    }

    // Every key reads back from all three replicas, and writes over it
    // (coordinated wherever the client's node sends them) supersede it.
    let all = map.clone().with_quorums(3, 3);
    for k in 0..KEYS {
        let key = format!("key-{k}");
        let read = runtime.block_on(all.get(key.as_bytes())).unwrap();
        assert_eq!(
            read.values,
            vec![Bytes::from(format!("value-{k}"))],
            "{key} after node 2 lost its store"
        );
        let again = format!("again-{k}");
        runtime
            .block_on(all.put(key.as_bytes(), again.as_bytes(), &read.context))
            .unwrap();
    }
    for k in 0..KEYS {
        let key = format!("key-{k}");
        let read = runtime.block_on(all.get(key.as_bytes())).unwrap();
        assert_eq!(
            read.values,
            vec![Bytes::from(format!("again-{k}"))],
            "{key}"
        );
    }
    drop(client);
    cluster.stop();
}
