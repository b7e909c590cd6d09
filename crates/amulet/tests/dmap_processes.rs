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

use amulet_api::pb::{self, amulet_client::AmuletClient, map_request::Op};
use amulet_client::{Bytes, Client, ClientConfig, Error};
use amulet_node::{free_local_ports, local_dmap_cluster_toml};
use amulet_smr::{Reconfiguration, StreamSpec};
use amulet_types::{NodeId, PartitionId, StorageMode, StreamId};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

const NODES: u32 = 3;
const PARTITIONS: u32 = 3;

struct Cluster {
    dir: PathBuf,
    peer_ports: Vec<u16>,
    client_ports: Vec<u16>,
    children: BTreeMap<u32, Child>,
}

impl Drop for Cluster {
    fn drop(&mut self) {
        for child in self.children.values_mut() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Cluster {
    fn start(name: &str) -> Cluster {
        Cluster::start_with(name, None)
    }

    /// A cluster whose replicas checkpoint every `checkpoint_ms` (the
    /// default interval when `None`).
    fn start_with(name: &str, checkpoint_ms: Option<u64>) -> Cluster {
        let dir = std::env::temp_dir().join(format!("amulet-dmap-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let ports = free_local_ports(2 * NODES as usize).unwrap();
        let mut cluster = Cluster {
            dir,
            peer_ports: ports[..NODES as usize].to_vec(),
            client_ports: ports[NODES as usize..].to_vec(),
            children: BTreeMap::new(),
        };
        for node in 1..=NODES {
            let mut text = local_dmap_cluster_toml(
                11,
                &cluster.peer_ports,
                &cluster.client_ports,
                node,
                &cluster.dir.join(format!("data-{node}")),
                PARTITIONS,
                "sync",
            );
            if let Some(ms) = checkpoint_ms {
                let smr = "[smr]\nglobal_stream = 1\n";
                assert!(
                    text.contains(smr),
                    "the generated config has an [smr] section"
                );
                text = text.replace(smr, &format!("{smr}checkpoint_interval_ms = {ms}\n"));
            }
            std::fs::write(cluster.dir.join(format!("node-{node}.toml")), text).unwrap();
            cluster.spawn(node);
        }
        cluster
    }

    fn spawn(&mut self, node: u32) {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.join(format!("node-{node}.log")))
            .unwrap();
        let child = Command::new(env!("CARGO_BIN_EXE_amulet"))
            .arg("node")
            .arg("--config")
            .arg(self.dir.join(format!("node-{node}.toml")))
            .arg("--stop-on-stdin-eof")
            .args(["--status-interval-ms", "60000"])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::from(log))
            .spawn()
            .unwrap();
        self.children.insert(node, child);
    }

    /// SIGKILL: no clean shutdown, no final sync.
    fn kill(&mut self, node: u32) {
        let mut child = self.children.remove(&node).unwrap();
        child.kill().unwrap();
        child.wait().unwrap();
    }

    fn addresses(&self) -> Vec<String> {
        self.client_ports
            .iter()
            .map(|p| format!("127.0.0.1:{p}"))
            .collect()
    }

    fn address(&self, node: u32) -> String {
        format!("127.0.0.1:{}", self.client_ports[node as usize - 1])
    }

    /// Stops every node cleanly (stdin closed) and checks they exit 0.
    fn stop(mut self) {
        #[allow(clippy::disallowed_methods)] // a wall-clock bound on the test
        let started = std::time::Instant::now();
        let nodes: Vec<u32> = self.children.keys().copied().collect();
        for node in &nodes {
            drop(self.children.get_mut(node).unwrap().stdin.take());
        }
        for node in nodes {
            let child = self.children.get_mut(&node).unwrap();
            loop {
                if let Some(status) = child.try_wait().unwrap() {
                    assert!(status.success(), "node {node} failed: {status}");
                    break;
                }
                assert!(
                    started.elapsed() < Duration::from_secs(30),
                    "node {node} did not stop"
                );
                std::thread::sleep(Duration::from_millis(20));
            }
            self.children.remove(&node);
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn client_config() -> ClientConfig {
    ClientConfig {
        attempt_timeout: Duration::from_millis(1_500),
        operation_timeout: Duration::from_secs(60),
        ..Default::default()
    }
}

/// Sends `op` as session `session`, sequence `sequence`, to `address`.
async fn raw_execute(
    address: &str,
    partition: u32,
    version: u64,
    session: u64,
    sequence: u64,
    op: Op,
) -> Result<pb::MapResponse, tonic::Status> {
    let mut raw = AmuletClient::connect(format!("http://{address}"))
        .await
        .map_err(|e| tonic::Status::unavailable(e.to_string()))?;
    let request = pb::MapRequest {
        header: Some(pb::RequestHeader {
            map_version: version,
            partition,
            session,
            sequence,
        }),
        op: Some(op),
    };
    raw.execute(request).await.map(|r| r.into_inner())
}

#[test]
fn section_3_acknowledged_writes_survive_sigkill_of_one_replica_per_partition() {
    let mut cluster = Cluster::start("kill");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
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
        let mut raw = AmuletClient::connect(format!("http://{}", cluster.address(1)))
            .await
            .unwrap();
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
fn section_3_b_a_million_entry_snapshot_iterates_exactly_while_writers_run() {
    const ENTRIES: u32 = 1_000_000;
    const BATCH: u32 = 10_000;
    let cluster = Cluster::start("million");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
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

/// Node `node`'s replica status, by partition (None while it does not answer).
async fn replica_status(client: &Client, address: &str) -> Option<Vec<pb::ReplicaStatus>> {
    client.status(address).await.ok().map(|s| s.replicas)
}

#[test]
fn section_3_4_2_a_replica_killed_after_its_checkpoints_continues_from_them() {
    let mut cluster = Cluster::start_with("ckpt", Some(200));
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
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
fn section_3_4_2_a_replica_behind_the_trim_point_recovers_from_a_peers_checkpoint() {
    let mut cluster = Cluster::start_with("transfer", Some(200));
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
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

/// Asks for `change` and waits until every node applied it.
fn reconfigure(runtime: &tokio::runtime::Runtime, client: &Client, change: Reconfiguration) {
    let before = client.partition_map().version.0;
    let from = match runtime.block_on(client.reconfigure(&change)) {
        Ok(from) => from,
        // The replica that took the request was replaced while it waited
        // (a node catching up installed a peer's checkpoint): it may have
        // taken effect; the map says.
        Err(Error::Unavailable(_) | Error::OutcomeUnknown(_)) => before,
        Err(e) => panic!("{change:?} refused: {e}"),
    };
    let applied =
        runtime.block_on(client.wait_for_map_version(from + 1, Duration::from_secs(60), |_| {}));
    assert!(applied, "{change:?} was not applied by every node in 60 s");
}

fn stream_spec(stream: u32) -> StreamSpec {
    StreamSpec {
        stream: StreamId(stream),
        acceptors: (1..=NODES).map(NodeId).collect(),
        learners: Vec::new(),
        storage: StorageMode::SyncDurable,
        base_position: 0,
    }
}

#[test]
fn section_3_c_split_stream_replacement_restart_and_merge_under_load_lose_no_write() {
    let mut cluster = Cluster::start_with("repart", Some(200));
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let client = Arc::new(
        runtime
            .block_on(Client::connect_with(cluster.addresses(), client_config()))
            .unwrap(),
    );
    runtime.block_on(client.create_map("rp")).unwrap();
    // Two writers put fresh keys until told to stop, recording what was
    // acknowledged; an outcome-unknown write is kept apart (it may or may
    // not be there at the end).
    let stop = Arc::new(AtomicBool::new(false));
    let acked = Arc::new(Mutex::new(BTreeMap::new()));
    let mut writers = Vec::new();
    for w in 0..2u32 {
        let (client, stop, acked) = (client.clone(), stop.clone(), acked.clone());
        writers.push(runtime.spawn(async move {
            let map = client.map("rp").unwrap();
            let mut unknown = 0u32;
            for i in 0..100_000u32 {
                if stop.load(Ordering::Relaxed) {
                    break;
                }
                let key = Bytes::from(format!("w{w}-{i:06}"));
                let value = Bytes::from(format!("v{i}"));
                match map.put(key.clone(), value.clone()).await {
                    Ok(_) => {
                        acked.lock().unwrap().insert(key, value);
                    }
                    Err(Error::OutcomeUnknown(_) | Error::Unavailable(_)) => unknown += 1,
                    Err(e) => panic!("writer {w}: {e}"),
                }
            }
            unknown
        }));
    }
    let wait_for_writes = |n: usize| {
        for _ in 0..600 {
            if acked.lock().unwrap().len() >= n {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!("writers stalled below {n} acknowledged writes");
    };
    wait_for_writes(200);

    // Split partition 1 at the middle of its token segment onto stream 5.
    let map = client.partition_map();
    let segment_end = map.token_ring[1].0;
    reconfigure(
        &runtime,
        &client,
        Reconfiguration::Split {
            source: PartitionId(1),
            new: PartitionId(4),
            stream: stream_spec(5),
            at_token: Some(segment_end / 2),
            at_keys: Vec::new(),
        },
    );
    let map = client.partition_map();
    assert!(map.partitions.contains_key(&PartitionId(4)), "{map:?}");
    let written = acked.lock().unwrap().len();
    wait_for_writes(written + 200);

    // Move partition 2 onto a new stream (acceptor replacement).
    reconfigure(
        &runtime,
        &client,
        Reconfiguration::ReplaceStream {
            partition: PartitionId(2),
            stream: stream_spec(6),
        },
    );
    assert_eq!(
        client.partition_map().partitions[&PartitionId(2)].stream,
        StreamId(6)
    );
    let written = acked.lock().unwrap().len();
    wait_for_writes(written + 200);

    // SIGKILL node 3 and restart it: it must reopen the streams created
    // at run time and the split-off partition from its checkpoints.
    cluster.kill(3);
    let written = acked.lock().unwrap().len();
    wait_for_writes(written + 100);
    cluster.spawn(3);
    let address3 = cluster.address(3);
    let mut up = false;
    for _ in 0..400 {
        if let Some(replicas) = runtime.block_on(replica_status(&client, &address3)) {
            if replicas.iter().any(|r| r.partition == 4) {
                up = true;
                break;
            }
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(up, "node 3 did not come back with partition 4");

    // Merge partition 4 back into 1.
    reconfigure(
        &runtime,
        &client,
        Reconfiguration::Merge {
            source: PartitionId(4),
            into: PartitionId(1),
        },
    );
    let written = acked.lock().unwrap().len();
    wait_for_writes(written + 200);
    stop.store(true, Ordering::Relaxed);
    let unknown: u32 = writers
        .into_iter()
        .map(|w| runtime.block_on(w).unwrap())
        .sum();

    // Every acknowledged write is there, read by key and in a snapshot.
    let map = client.map("rp").unwrap();
    let acked = acked.lock().unwrap().clone();
    runtime.block_on(async {
        for (key, value) in &acked {
            assert_eq!(
                map.get(key.clone()).await.unwrap().as_ref(),
                Some(value),
                "acknowledged write {key:?}"
            );
        }
        let mut snapshot = map.snapshot().await.unwrap();
        let mut seen = 0usize;
        while let Some((key, value)) = snapshot.next().await.unwrap() {
            if let Some(expected) = acked.get(&key) {
                assert_eq!(&value, expected);
                seen += 1;
            }
        }
        snapshot.close().await.unwrap();
        assert_eq!(
            seen,
            acked.len(),
            "the snapshot holds every acknowledged write"
        );
        let size = map.size().await.unwrap();
        assert!(
            size >= acked.len() as u64 && size <= acked.len() as u64 + u64::from(unknown),
            "size {size}, {} acknowledged, {unknown} unknown",
            acked.len()
        );
    });
    let final_map = client.partition_map();
    let partitions: Vec<u32> = final_map.partitions.keys().map(|p| p.0).collect();
    assert_eq!(partitions, vec![1, 2, 3]);
    println!(
        "{} acknowledged writes across a split, a stream replacement, a restart and a merge; map version {}",
        acked.len(),
        final_map.version.0
    );
    runtime.block_on(client.close());
    drop(runtime);
    cluster.stop();
}

/// Waits until node `node` runs a replica of `partition` (`present`) or
/// does not (`!present`).
fn wait_for_replica(
    runtime: &tokio::runtime::Runtime,
    client: &Client,
    cluster: &Cluster,
    node: u32,
    partition: u32,
    present: bool,
) {
    let address = cluster.address(node);
    for _ in 0..1_200 {
        if let Some(replicas) = runtime.block_on(replica_status(client, &address)) {
            if replicas.iter().any(|r| r.partition == partition) == present {
                return;
            }
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!(
        "node {node} still {} partition {partition} after 60 s",
        if present { "lacks" } else { "runs" }
    );
}

/// Every acknowledged write is there, read by key.
fn check_acknowledged(
    runtime: &tokio::runtime::Runtime,
    client: &Client,
    acked: &BTreeMap<Bytes, Bytes>,
    when: &str,
) {
    let map = client.map("mv").unwrap();
    runtime.block_on(async {
        for (key, value) in acked {
            assert_eq!(
                map.get(key.clone()).await.unwrap().as_ref(),
                Some(value),
                "acknowledged write {key:?}, {when}"
            );
        }
    });
}

#[test]
fn dmap_section_3_c_a_partition_moved_to_other_nodes_arrives_by_state_transfer_and_loses_no_write()
{
    let mut cluster = Cluster::start_with("move", Some(200));
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let client = Arc::new(
        runtime
            .block_on(Client::connect_with(cluster.addresses(), client_config()))
            .unwrap(),
    );
    runtime.block_on(client.create_map("mv")).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let acked = Arc::new(Mutex::new(BTreeMap::new()));
    let mut writers = Vec::new();
    for w in 0..2u32 {
        let (client, stop, acked) = (client.clone(), stop.clone(), acked.clone());
        writers.push(runtime.spawn(async move {
            let map = client.map("mv").unwrap();
            let mut unknown = 0u32;
            for i in 0..100_000u32 {
                if stop.load(Ordering::Relaxed) {
                    break;
                }
                let key = Bytes::from(format!("w{w}-{i:06}"));
                let value = Bytes::from(format!("v{i}"));
                match map.put(key.clone(), value.clone()).await {
                    Ok(_) => {
                        acked.lock().unwrap().insert(key, value);
                    }
                    Err(Error::OutcomeUnknown(_) | Error::Unavailable(_)) => unknown += 1,
                    Err(e) => panic!("writer {w}: {e}"),
                }
            }
            unknown
        }));
    }
    let wait_for_writes = |n: usize| {
        for _ in 0..600 {
            if acked.lock().unwrap().len() >= n {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!("writers stalled below {n} acknowledged writes");
    };
    let more_writes = |n: usize| {
        let written = acked.lock().unwrap().len();
        wait_for_writes(written + n);
    };
    let nodes = |ids: &[u32]| ids.iter().copied().map(NodeId).collect::<Vec<_>>();
    let move_to = |replicas: &[u32], stream: u32, acceptors: &[u32]| {
        let learners = (1..=NODES)
            .filter(|n| !acceptors.contains(n))
            .map(NodeId)
            .collect();
        Reconfiguration::Move {
            partition: PartitionId(2),
            replicas: nodes(replicas),
            stream: StreamSpec {
                stream: StreamId(stream),
                acceptors: nodes(acceptors),
                learners,
                storage: StorageMode::SyncDurable,
                base_position: 0,
            },
        }
    };
    wait_for_writes(300);

    // Partition 2 leaves node 3: node 3 drops its replica once both new
    // replicas hold a checkpoint past the move.
    reconfigure(&runtime, &client, move_to(&[1, 2], 5, &[1, 2, 3]));
    more_writes(200);
    wait_for_replica(&runtime, &client, &cluster, 3, 2, false);

    // Partition 2 moves to node 3 alone: node 3 fetches its state from
    // node 1 or 2 (state transfer), they drop theirs once node 3 holds it,
    // and from then on every read of partition 2 is answered by node 3's
    // transferred state.
    reconfigure(&runtime, &client, move_to(&[3], 6, &[3]));
    more_writes(200);
    wait_for_replica(&runtime, &client, &cluster, 3, 2, true);
    wait_for_replica(&runtime, &client, &cluster, 1, 2, false);
    wait_for_replica(&runtime, &client, &cluster, 2, 2, false);
    more_writes(200);
    let snapshot = acked.lock().unwrap().clone();
    check_acknowledged(
        &runtime,
        &client,
        &snapshot,
        "with partition 2 on node 3 alone",
    );

    // Back to all three nodes (nodes 1 and 2 fetch it from node 3), then
    // a SIGKILL and restart of node 3 under load.
    reconfigure(&runtime, &client, move_to(&[1, 2, 3], 7, &[1, 2, 3]));
    wait_for_replica(&runtime, &client, &cluster, 1, 2, true);
    wait_for_replica(&runtime, &client, &cluster, 2, 2, true);
    more_writes(200);
    cluster.kill(3);
    more_writes(200);
    cluster.spawn(3);
    wait_for_replica(&runtime, &client, &cluster, 3, 2, true);
    more_writes(200);
    stop.store(true, Ordering::Relaxed);
    let unknown: u32 = writers
        .into_iter()
        .map(|w| runtime.block_on(w).unwrap())
        .sum();
    let acked = acked.lock().unwrap().clone();
    check_acknowledged(&runtime, &client, &acked, "at the end");
    let size = runtime.block_on(client.map("mv").unwrap().size()).unwrap();
    assert!(
        size >= acked.len() as u64 && size <= acked.len() as u64 + u64::from(unknown),
        "size {size}, {} acknowledged, {unknown} unknown",
        acked.len()
    );
    let map = client.partition_map();
    assert_eq!(map.partitions[&PartitionId(2)].replicas, nodes(&[1, 2, 3]));
    println!(
        "{} acknowledged writes across three moves of partition 2 and a restart; map version {}",
        acked.len(),
        map.version.0
    );
    runtime.block_on(client.close());
    drop(runtime);
    cluster.stop();
}
