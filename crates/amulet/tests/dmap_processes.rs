//! DMap on real processes (issue 3 acceptance): three `amulet node`
//! processes on 127.0.0.1 serve three partitions, each node a replica of
//! every partition (3 partitions x 3 replicas) with sync-durable
//! acceptors. Clients write through the Rust client while each node in
//! turn is killed with SIGKILL (one replica of every partition) and
//! restarted; at the end every acknowledged write is present. A
//! `putIfAbsent` whose reply is dropped (its node killed before it could
//! answer) and resent with the same session and sequence applies once.
//! A snapshot of 1,000,000 entries is iterated while writers change the
//! map and equals the map as of the snapshot, with the client holding at
//! most a page per partition. Every child is killed on every path and
//! every wait is bounded.

mod common;

use amulet_api::pb::{self, map_request::Op};
use amulet_client::{Bytes, Client, ClientConfig, Error};
use common::{client_config, raw_execute, replica_status, Cluster, NODES, PARTITIONS};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

#[test]
fn dmap_iii_acknowledged_writes_survive_sigkill_of_one_replica_per_partition() {
    let mut cluster = Cluster::start("kill");
    let runtime = common::runtime();
    let client = runtime
        .block_on(Client::connect_with(cluster.addresses(), client_config()))
        .unwrap();
    let map = runtime.block_on(client.create_map("kill")).unwrap();

    // A putIfAbsent whose reply is dropped: send it to node 3 in a
    // session, kill node 3 before reading any reply, resend the same
    // session and sequence to node 1.
    let version = client.partition_map().version.0;
    let key = Bytes::from_static(b"once");
    let partition = client.partition_map().partition_of("kill", &key).unwrap().0;
    let session = 0x5e55_1011u64;
    runtime.block_on(async {
        let mut raw = common::raw_client(&cluster.address(1)).await.unwrap();
        raw.open_session(pb::OpenSessionRequest {
            session,
            lease_micros: 600_000_000,
            map_version: version,
        })
        .await
        .unwrap();
    });
    let put_once = Op::PutIfAbsent(pb::PutIfAbsent {
        map: "kill".into(),
        key: key.clone(),
        value: Bytes::from_static(b"first"),
    });
    let address3 = cluster.address(3);
    let op = put_once.clone();
    let in_flight = runtime.spawn(async move {
        // The session's opening may not have reached node 3's replica yet
        // ("session expired"): resend until it is ordered or node 3 dies.
        for _ in 0..100 {
            match raw_execute(&address3, partition, version, session, 1, op.clone()).await {
                Err(s)
                    if amulet_api::error_kind(&s)
                        == Some(amulet_api::ErrorKind::SessionExpired) =>
                {
                    tokio::time::sleep(Duration::from_millis(10)).await
                }
                other => return other,
            }
        }
        Err(tonic::Status::unknown("session never opened"))
    });
    // Wait until the putIfAbsent has been executed (another session sees
    // its value), then kill node 3 and drop whatever it answered: the
    // resend must not apply it a second time.
    runtime.block_on(async {
        for _ in 0..500 {
            if map.get(key.clone()).await.unwrap().is_some() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("the first putIfAbsent was never executed");
    });
    cluster.kill(3);
    in_flight.abort();
    let resent = runtime.block_on(async {
        for _ in 0..200 {
            match raw_execute(
                &cluster.address(1),
                partition,
                version,
                session,
                1,
                put_once.clone(),
            )
            .await
            {
                Ok(reply) => return reply,
                Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
            }
        }
        panic!("the resent putIfAbsent never got an answer");
    });
    // The resend answers what the first execution answered ("absent: it
    // was set"); had it applied again it would return "first".
    assert_eq!(
        resent.result,
        Some(pb::map_response::Result::Value(pb::OptionalValue {
            value: None
        })),
        "the resent putIfAbsent must return the first execution's reply"
    );
    cluster.spawn(3);

    // Writers: unique keys, recording which writes were acknowledged.
    let acked: Arc<Mutex<BTreeMap<String, String>>> = Arc::default();
    let unknown: Arc<Mutex<Vec<String>>> = Arc::default();
    let stop = Arc::new(AtomicBool::new(false));
    let mut writers = Vec::new();
    for w in 0..4 {
        let map = map.clone();
        let acked = acked.clone();
        let unknown = unknown.clone();
        let stop = stop.clone();
        writers.push(runtime.spawn(async move {
            let mut i = 0u64;
            while !stop.load(Ordering::Relaxed) && i < 100_000 {
                let key = format!("w{w}-{i:06}");
                let value = format!("value of {key}");
                match map.put(key.clone(), value.clone()).await {
                    Ok(_) => {
                        acked.lock().unwrap().insert(key, value);
                    }
                    Err(Error::OutcomeUnknown(_) | Error::Unavailable(_)) => {
                        unknown.lock().unwrap().push(key);
                    }
                    Err(e) => panic!("write {key} failed: {e}"),
                }
                i += 1;
            }
        }));
    }
    std::thread::sleep(Duration::from_secs(2));
    for node in 1..=NODES {
        let before = acked.lock().unwrap().len();
        cluster.kill(node);
        std::thread::sleep(Duration::from_millis(1_500));
        cluster.spawn(node);
        std::thread::sleep(Duration::from_millis(2_500));
        let after = acked.lock().unwrap().len();
        assert!(
            after > before,
            "writes stalled around the kill of node {node} ({before} -> {after})"
        );
    }
    stop.store(true, Ordering::Relaxed);
    for writer in writers {
        runtime.block_on(writer).unwrap();
    }
    let acked = acked.lock().unwrap().clone();
    let unknown = unknown.lock().unwrap().clone();
    assert!(acked.len() > 100, "too few writes: {}", acked.len());

    // Every acknowledged write is present, read from a snapshot and by
    // key; nothing else but writes that were attempted.
    runtime.block_on(async {
        let mut snapshot = map.snapshot().await.unwrap();
        let mut found = BTreeMap::new();
        while let Some((k, v)) = snapshot.next().await.unwrap() {
            found.insert(
                String::from_utf8(k.to_vec()).unwrap(),
                String::from_utf8(v.to_vec()).unwrap(),
            );
        }
        snapshot.close().await.unwrap();
        assert_eq!(found.remove("once").as_deref(), Some("first"));
        for (k, v) in &acked {
            assert_eq!(found.get(k), Some(v), "acknowledged write {k} lost");
        }
        for k in found.keys() {
            assert!(
                acked.contains_key(k) || unknown.contains(k),
                "{k} was never written"
            );
        }
        for (k, v) in acked.iter().step_by(97) {
            assert_eq!(
                map.get(k.clone()).await.unwrap().as_deref(),
                Some(v.as_bytes())
            );
        }
        eprintln!(
            "{} acknowledged writes present after killing each node once; {} with unknown outcome",
            acked.len(),
            unknown.len()
        );
    });
    runtime.block_on(client.close());
    drop(runtime);
    cluster.stop();
}

#[test]
fn dmap_iii_b_a_million_entry_snapshot_iterates_exactly_while_writers_run() {
    const ENTRIES: u32 = 1_000_000;
    const BATCH: u32 = 10_000;
    let cluster = Cluster::start("million");
    let runtime = common::runtime();
    let config = ClientConfig {
        page_entries: 1_000,
        ..client_config()
    };
    let client = runtime
        .block_on(Client::connect_with(cluster.addresses(), config))
        .unwrap();
    let map = runtime.block_on(client.create_map("million")).unwrap();
    let key = |i: u32| Bytes::from(format!("key{i:08}"));
    let value = |i: u32| Bytes::from(format!("v{i}"));
    runtime.block_on(async {
        for start in (0..ENTRIES).step_by(BATCH as usize) {
            map.put_all((start..start + BATCH).map(|i| (key(i), value(i))))
                .await
                .unwrap();
        }
        assert_eq!(map.size().await.unwrap(), u64::from(ENTRIES));
    });

    let mut snapshot = runtime.block_on(map.snapshot()).unwrap();
    // Writers start after the snapshot is open: they overwrite, remove
    // and add keys while it is read, and none of that may show.
    let stop = Arc::new(AtomicBool::new(false));
    let mut writers = Vec::new();
    for w in 0..2u32 {
        let map = map.clone();
        let stop = stop.clone();
        writers.push(runtime.spawn(async move {
            let mut n = 0u32;
            while !stop.load(Ordering::Relaxed) && n < 1_000_000 {
                let i = (n * 7_919 + w * 13) % ENTRIES;
                match n % 3 {
                    0 => map
                        .put(key(i), Bytes::from_static(b"changed"))
                        .await
                        .unwrap(),
                    1 => map.remove(key(i)).await.unwrap(),
                    _ => map
                        .put(Bytes::from(format!("new{w}-{n}")), Bytes::new())
                        .await
                        .unwrap(),
                };
                n += 1;
            }
            n
        }));
    }
    let page_bound = PARTITIONS as usize * 1_000;
    let mut buffered_max = 0;
    let mut count = 0u32;
    runtime.block_on(async {
        while let Some((k, v)) = snapshot.next().await.unwrap() {
            assert_eq!(k, key(count), "entry {count} out of place");
            assert_eq!(v, value(count), "entry {count} has a later value");
            buffered_max = buffered_max.max(snapshot.buffered());
            count += 1;
        }
    });
    stop.store(true, Ordering::Relaxed);
    let writes: u32 = writers
        .into_iter()
        .map(|w| runtime.block_on(w).unwrap())
        .sum();
    assert_eq!(count, ENTRIES, "the snapshot returned {count} entries");
    assert!(
        buffered_max <= page_bound,
        "the client held {buffered_max} entries, above a page per partition ({page_bound})"
    );
    assert!(writes > 0, "the writers made no progress");
    runtime.block_on(async {
        // The writes did happen, after the snapshot's point.
        let size = map.size().await.unwrap();
        assert_ne!(size, u64::from(ENTRIES) + 1, "size {size}");
        snapshot.close().await.unwrap();
        client.close().await;
    });
    eprintln!(
        "iterated {count} entries exactly while {writes} writes ran; client held at most {buffered_max} entries (bound {page_bound})"
    );
    drop(runtime);
    cluster.stop();
}

#[test]
fn thesis_3_4_2_a_replica_killed_after_its_checkpoints_continues_from_them() {
    let mut cluster = Cluster::start_with("ckpt", Some(200));
    let runtime = common::runtime();
    let client = runtime
        .block_on(Client::connect_with(cluster.addresses(), client_config()))
        .unwrap();
    let map = runtime.block_on(client.create_map("ckpt")).unwrap();
    let key = |i: u32| Bytes::from(format!("k{i:04}"));
    let value = |i: u32| Bytes::from(format!("value {i}"));
    runtime.block_on(async {
        for i in 0..200 {
            map.put(key(i), value(i)).await.unwrap();
        }
    });
    // Wait for node 3 to write two more checkpoints of every partition
    // (the second one started after the writes above were acknowledged).
    let address3 = cluster.address(3);
    let written = |replicas: &[pb::ReplicaStatus]| -> Vec<u64> {
        replicas.iter().map(|r| r.checkpoints_written).collect()
    };
    let before = runtime
        .block_on(replica_status(&client, &address3))
        .expect("node 3 answers");
    assert_eq!(before.len(), PARTITIONS as usize);
    let mut after = before.clone();
    for _ in 0..200 {
        after = runtime
            .block_on(replica_status(&client, &address3))
            .expect("node 3 answers");
        if written(&after)
            .iter()
            .zip(written(&before))
            .all(|(now, then)| *now >= then + 2)
        {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(
        written(&after)
            .iter()
            .zip(written(&before))
            .all(|(now, then)| *now >= then + 2),
        "node 3 wrote no checkpoints: {after:?}"
    );
    for p in 1..=PARTITIONS {
        let file = cluster
            .dir
            .join(format!("data-3/checkpoints/partition-{p}.ckpt"));
        assert!(file.exists(), "{} is missing", file.display());
    }

    // SIGKILL node 3; the others take more writes; node 3 restarts.
    cluster.kill(3);
    runtime.block_on(async {
        for i in 200..400 {
            map.put(key(i), value(i)).await.unwrap();
        }
    });
    cluster.spawn(3);
    // It continues from its checkpoints: its first status reports their
    // positions with nothing written in this run yet.
    let mut restarted = None;
    for _ in 0..200 {
        if let Some(replicas) = runtime.block_on(replica_status(&client, &address3)) {
            restarted = Some(replicas);
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let restarted = restarted.expect("node 3 answers after its restart");
    for r in &restarted {
        assert!(
            r.checkpoint_global_position > 0,
            "partition {} did not start from its checkpoint: {r:?}",
            r.partition
        );
    }
    let log = std::fs::read_to_string(cluster.dir.join("node-3.log")).unwrap();
    assert_eq!(
        log.matches("replica restored from its checkpoint").count(),
        PARTITIONS as usize,
        "one restore per partition"
    );
    // Every write, before and after the kill, reads back through node 3's
    // own replicas (the replica that receives a read executes it).
    let version = client.partition_map().version.0;
    runtime.block_on(async {
        for i in 0..400 {
            let partition = client
                .partition_map()
                .partition_of("ckpt", &key(i))
                .unwrap()
                .0;
            let get = Op::Get(pb::Get {
                map: "ckpt".into(),
                key: key(i),
            });
            let mut answer = None;
            for _ in 0..200 {
                match raw_execute(&address3, partition, version, 0, 0, get.clone()).await {
                    Ok(reply) => {
                        answer = Some(reply);
                        break;
                    }
                    // Catching up ("behind") or not connected yet.
                    Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
                }
            }
            assert_eq!(
                answer.and_then(|a| a.result),
                Some(pb::map_response::Result::Value(pb::OptionalValue {
                    value: Some(value(i))
                })),
                "key {i} through node 3"
            );
        }
    });
    // Once every replica holds a checkpoint past them, every node's
    // acceptors trim every stream (thesis §3.4.2).
    let trimmed = |address: &str| -> Vec<u64> {
        runtime
            .block_on(client.status(address))
            .map(|s| s.streams.iter().map(|t| t.trimmed_below).collect())
            .unwrap_or_default()
    };
    let all_trimmed = |t: &[u64]| t.len() == PARTITIONS as usize + 1 && t.iter().all(|b| *b > 0);
    for _ in 0..200 {
        if (1..=NODES).all(|n| all_trimmed(&trimmed(&cluster.address(n)))) {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    for n in 1..=NODES {
        let t = trimmed(&cluster.address(n));
        assert!(all_trimmed(&t), "node {n} trimmed below {t:?}");
    }
    runtime.block_on(client.close());
    drop(runtime);
    cluster.stop();
}

#[test]
fn thesis_3_4_2_a_replica_behind_the_trim_point_recovers_from_a_peers_checkpoint() {
    let mut cluster = Cluster::start_with("transfer", Some(200));
    let runtime = common::runtime();
    let client = runtime
        .block_on(Client::connect_with(cluster.addresses(), client_config()))
        .unwrap();
    let map = runtime.block_on(client.create_map("transfer")).unwrap();
    let key = |i: u32| Bytes::from(format!("t{i:04}"));
    let value = |i: u32| Bytes::from(format!("value {i}"));
    runtime.block_on(async {
        for i in 0..100 {
            map.put(key(i), value(i)).await.unwrap();
        }
    });
    // Where node 3's streams stand when it goes down.
    let decided = |address: &str| -> Vec<u64> {
        runtime
            .block_on(client.status(address))
            .map(|s| s.streams.iter().map(|t| t.decided_below).collect())
            .unwrap_or_default()
    };
    let trimmed = |address: &str| -> Vec<u64> {
        runtime
            .block_on(client.status(address))
            .map(|s| s.streams.iter().map(|t| t.trimmed_below).collect())
            .unwrap_or_default()
    };
    let at_kill = decided(&cluster.address(3));
    assert_eq!(at_kill.len(), PARTITIONS as usize + 1);
    cluster.kill(3);
    // Writes go on; the others checkpoint and, being a majority of every
    // partition, trim every stream past where node 3 stopped.
    runtime.block_on(async {
        for i in 100..300 {
            map.put(key(i), value(i)).await.unwrap();
        }
    });
    let past = |t: &[u64]| t.len() == at_kill.len() && t.iter().zip(&at_kill).all(|(t, k)| t > k);
    for _ in 0..300 {
        if past(&trimmed(&cluster.address(1))) && past(&trimmed(&cluster.address(2))) {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    for n in 1..=2 {
        let t = trimmed(&cluster.address(n));
        assert!(
            past(&t),
            "node {n} trimmed below {t:?}, node 3 stopped at {at_kill:?}"
        );
    }
    // Node 3 restarts from its own (now too old) checkpoints, finds its
    // streams trimmed past it, and installs a peer's checkpoint.
    cluster.spawn(3);
    let log_path = cluster.dir.join("node-3.log");
    let restored_from_peer = || {
        std::fs::read_to_string(&log_path)
            .unwrap_or_default()
            .matches("replica restored from a peer's checkpoint")
            .count()
    };
    for _ in 0..400 {
        if restored_from_peer() >= PARTITIONS as usize {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(
        restored_from_peer() >= PARTITIONS as usize,
        "node 3 installed {} peer checkpoints",
        restored_from_peer()
    );
    // It catches up and serves every write, before and after its crash.
    let address3 = cluster.address(3);
    let version = client.partition_map().version.0;
    runtime.block_on(async {
        for i in 0..300 {
            let partition = client
                .partition_map()
                .partition_of("transfer", &key(i))
                .unwrap()
                .0;
            let get = Op::Get(pb::Get {
                map: "transfer".into(),
                key: key(i),
            });
            let mut answer = None;
            for _ in 0..200 {
                match raw_execute(&address3, partition, version, 0, 0, get.clone()).await {
                    Ok(reply) => {
                        answer = Some(reply);
                        break;
                    }
                    Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
                }
            }
            assert_eq!(
                answer.and_then(|a| a.result),
                Some(pb::map_response::Result::Value(pb::OptionalValue {
                    value: Some(value(i))
                })),
                "key {i} through node 3"
            );
        }
    });
    runtime.block_on(client.close());
    drop(runtime);
    cluster.stop();
}
