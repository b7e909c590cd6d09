//! DynaTree's oracle, as Amulet's balancer (docs/dynatree.md): a range
//! map created with one partition splits by itself as data arrives, with
//! no operator command, while clients write, until every partition is
//! within the configured bound; once most keys are removed, neighbours
//! merge back. Every acknowledged key reads back throughout.

#![allow(clippy::disallowed_methods)] // wall-clock bounds on a real-process test

mod common;

use amulet_client::{Client, KeyBound};
use amulet_smr::Layout;
use amulet_types::PartitionId;
use bytes::Bytes;
use common::{client_config, Cluster};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The balancer's bound in this test: a partition holding more than this
/// many entries of the map splits at its middle key.
const SPLIT_ENTRIES: usize = 300;

/// Neighbours that together hold at most this many entries merge.
const MERGE_ENTRIES: usize = 150;

/// Keys written: first a shuffled half, then the other half in order
/// (sequential inserts all land on the last range).
const KEYS: usize = 2_400;

/// The map's ranges in the client's map, refreshed from the nodes.
async fn ranges(client: &Client, name: &str) -> Vec<(Bytes, PartitionId)> {
    let version = client.partition_map().version.0;
    client
        .wait_for_map_version(version + 1, Duration::from_millis(300), |_| {})
        .await;
    match client.partition_map().keyspaces.get(name) {
        Some(Layout::Range(ranges)) => ranges.clone(),
        other => panic!("{name} is not a range map: {other:?}"),
    }
}

/// The entries of each of the map's ranges, in key order, once `done`
/// holds of them (asserted within a minute).
fn settle(
    runtime: &tokio::runtime::Runtime,
    client: &Client,
    name: &str,
    done: impl Fn(&[usize]) -> bool,
) -> Vec<usize> {
    settle_sized(runtime, client, name, |sizes| {
        done(
            &sizes
                .iter()
                .map(|(entries, _)| *entries)
                .collect::<Vec<_>>(),
        )
    })
    .into_iter()
    .map(|(entries, _)| entries)
    .collect()
}

/// The entries, and bytes of keys and values, of each of the map's
/// ranges, in key order, once `done` holds of them (asserted within a
/// minute).
fn settle_sized(
    runtime: &tokio::runtime::Runtime,
    client: &Client,
    name: &str,
    done: impl Fn(&[(usize, usize)]) -> bool,
) -> Vec<(usize, usize)> {
    let began = Instant::now();
    loop {
        let ranges = runtime.block_on(ranges(client, name));
        let map = client.map(name).unwrap();
        let mut truncated = false;
        let sizes: Vec<(usize, usize)> = ranges
            .iter()
            .enumerate()
            .map(|(at, (start, _))| {
                let from = Some(KeyBound {
                    key: start.clone(),
                    inclusive: true,
                });
                let to = ranges.get(at + 1).map(|(next, _)| KeyBound {
                    key: next.clone(),
                    inclusive: false,
                });
                let (entries, more) = runtime.block_on(map.range(from, to, 1_000, false)).unwrap();
                // Past 1,000 it is far over any bound here: 1,001.
                let bytes = entries.iter().map(|(k, v)| k.len() + v.len()).sum();
                // Cut short (by count or by the reply's size): its bytes
                // are not all counted, so the sizes are not final.
                truncated |= more;
                (entries.len() + usize::from(more), bytes)
            })
            .collect();
        if !truncated && done(&sizes) {
            return sizes;
        }
        assert!(
            began.elapsed() < Duration::from_secs(60),
            "the balancer did not settle within a minute: {sizes:?}"
        );
        std::thread::sleep(Duration::from_millis(500));
    }
}

/// A cluster checkpointing every second whose `[balancer]` section holds
/// `balancer`, its client, and a range map `name` of one partition.
fn start_range_map(
    cluster_name: &str,
    balancer: &str,
    name: &str,
) -> (Cluster, tokio::runtime::Runtime, Arc<Client>) {
    let cluster = Cluster::start_with_sections(
        cluster_name,
        Some(1_000),
        "",
        &format!("\n[balancer]\n{balancer}\n"),
    );
    let runtime = common::runtime();
    let client = Arc::new(
        runtime
            .block_on(Client::connect_with(cluster.addresses(), client_config()))
            .unwrap(),
    );
    let one = vec![(Bytes::new(), PartitionId(1))];
    runtime
        .block_on(client.create_map_with(name, Layout::Range(one)))
        .unwrap();
    (cluster, runtime, client)
}

#[test]
fn dynatree_oracle_a_range_map_grows_from_one_partition_by_itself() {
    let name = "grown";
    let (cluster, runtime, client) = start_range_map(
        "balancer",
        &format!("split_entries = {SPLIT_ENTRIES}\nmerge_entries = {MERGE_ENTRIES}"),
        name,
    );
    let keys: Vec<Bytes> = (0..KEYS).map(|i| Bytes::from(format!("k{i:06}"))).collect();
    // A fixed shuffle of the first half (a multiplicative permutation),
    // then the second half in order.
    let half = KEYS / 2;
    let mut order: Vec<usize> = (0..half).map(|i| (i * 7919) % half).collect();
    order.extend(half..KEYS);
    let writers = 8;
    let tasks: Vec<_> = (0..writers)
        .map(|w| {
            let client = client.clone();
            let mine: Vec<Bytes> = order
                .iter()
                .skip(w)
                .step_by(writers)
                .map(|i| keys[*i].clone())
                .collect();
            runtime.spawn(async move {
                let map = client.map(name).unwrap();
                for key in mine {
                    let value = Bytes::from(format!("v-{}", String::from_utf8_lossy(&key)));
                    map.put(key.clone(), value).await.unwrap_or_else(|e| {
                        panic!("put {key:?}: {e}");
                    });
                }
            })
        })
        .collect();
    for task in tasks {
        runtime.block_on(task).unwrap();
    }
    // Every partition within the bound, within a minute of the last put.
    let settled = settle(&runtime, &client, name, |sizes| {
        sizes.iter().all(|s| *s <= SPLIT_ENTRIES)
    });
    println!("partitions' entries after the balancer settled: {settled:?}");
    assert_eq!(settled.iter().sum::<usize>(), KEYS);
    assert!(
        settled.len() >= KEYS / SPLIT_ENTRIES,
        "{} partitions for {KEYS} entries of at most {SPLIT_ENTRIES}",
        settled.len()
    );
    // Every key reads back its value.
    let map = client.map(name).unwrap();
    for key in &keys {
        let value = runtime.block_on(map.get(key.clone())).unwrap();
        let expected = format!("v-{}", String::from_utf8_lossy(key));
        assert_eq!(value.as_deref(), Some(expected.as_bytes()), "{key:?}");
    }
    assert_eq!(runtime.block_on(map.size()).unwrap(), KEYS as u64);
    // Removing nine keys in ten leaves neighbours that together hold at
    // most MERGE_ENTRIES: they merge until no two neighbours could.
    let kept: Vec<&Bytes> = keys.iter().step_by(10).collect();
    let tasks: Vec<_> = (0..writers)
        .map(|w| {
            let client = client.clone();
            let gone: Vec<Bytes> = keys
                .iter()
                .enumerate()
                .filter(|(i, _)| i % 10 != 0 && i % writers == w)
                .map(|(_, k)| k.clone())
                .collect();
            runtime.spawn(async move {
                let map = client.map(name).unwrap();
                for key in gone {
                    map.remove(key.clone())
                        .await
                        .unwrap_or_else(|e| panic!("remove {key:?}: {e}"));
                }
            })
        })
        .collect();
    for task in tasks {
        runtime.block_on(task).unwrap();
    }
    let merged = settle(&runtime, &client, name, |sizes| {
        sizes
            .windows(2)
            .all(|pair| pair[0] + pair[1] > MERGE_ENTRIES)
    });
    println!("partitions' entries after the merges: {merged:?}");
    assert_eq!(merged.iter().sum::<usize>(), kept.len());
    assert!(merged.len() < settled.len(), "{merged:?}");
    for key in &kept {
        let value = runtime.block_on(map.get((*key).clone())).unwrap();
        let expected = format!("v-{}", String::from_utf8_lossy(key));
        assert_eq!(value.as_deref(), Some(expected.as_bytes()), "{key:?}");
    }
    assert_eq!(runtime.block_on(map.size()).unwrap(), kept.len() as u64);
    // The nodes logged the splits they proposed (a proposal built on a
    // map another one replaced first fails and is made again).
    let splits: usize = (1..=common::NODES)
        .map(|node| {
            let log = std::fs::read_to_string(cluster.dir.join(format!("node-{node}.log")))
                .unwrap_or_default();
            log.matches("balancer: proposing a split").count()
        })
        .sum();
    assert!(
        splits >= settled.len() - 1,
        "{splits} splits proposed for {} partitions",
        settled.len()
    );
    runtime.block_on(client.close());
    drop(runtime);
    cluster.stop();
}

/// DynaTree's oracle splits "past a size threshold (bytes and entries)":
/// a map of 4 KiB values, far under the entry bound, splits by the bytes
/// of its keys and values until every partition holds at most
/// `split_bytes`; every value reads back.
#[test]
fn dynatree_oracle_a_range_map_of_large_values_splits_by_bytes() {
    const SPLIT_BYTES: usize = 128 * 1024;
    const VALUE_BYTES: usize = 4 * 1024;
    const LARGE_KEYS: usize = 240;
    let name = "large";
    let (cluster, runtime, client) = start_range_map(
        "balancer-bytes",
        &format!("split_entries = 1000000\nsplit_bytes = {SPLIT_BYTES}"),
        name,
    );
    let value = |i: usize| Bytes::from(vec![b'a' + (i % 26) as u8; VALUE_BYTES]);
    let keys: Vec<Bytes> = (0..LARGE_KEYS)
        .map(|i| Bytes::from(format!("k{i:06}")))
        .collect();
    let writers = 4;
    let tasks: Vec<_> = (0..writers)
        .map(|w| {
            let client = client.clone();
            let mine: Vec<(usize, Bytes)> = keys
                .iter()
                .cloned()
                .enumerate()
                .skip(w)
                .step_by(writers)
                .collect();
            runtime.spawn(async move {
                let map = client.map(name).unwrap();
                for (i, key) in mine {
                    map.put(key.clone(), value(i))
                        .await
                        .unwrap_or_else(|e| panic!("put {key:?}: {e}"));
                }
            })
        })
        .collect();
    for task in tasks {
        runtime.block_on(task).unwrap();
    }
    let settled = settle_sized(&runtime, &client, name, |sizes| {
        sizes.iter().all(|(_, bytes)| *bytes <= SPLIT_BYTES)
    });
    println!("partitions' (entries, bytes) after the balancer settled: {settled:?}");
    let total: usize = keys.iter().map(|k| k.len() + VALUE_BYTES).sum();
    assert_eq!(settled.iter().map(|(_, b)| b).sum::<usize>(), total);
    assert!(
        settled.len() >= total / SPLIT_BYTES,
        "{} partitions for {total} bytes of at most {SPLIT_BYTES}",
        settled.len()
    );
    let map = client.map(name).unwrap();
    for (i, key) in keys.iter().enumerate() {
        let got = runtime.block_on(map.get(key.clone())).unwrap();
        assert_eq!(got, Some(value(i)), "{key:?}");
    }
    runtime.block_on(client.close());
    drop(runtime);
    cluster.stop();
}

/// DynaTree's oracle splits "past a load threshold", at the median key by
/// load: a map of 100 small keys, far under the size bounds, whose
/// commands all fall on its first 20 keys splits by itself once it runs
/// more than `split_ops_per_second`, and only inside those 20 keys (a cut
/// by size would be at the 50th key); the 80 cold keys stay in one range,
/// and every key reads back.
#[test]
fn dynatree_oracle_a_hot_range_splits_by_load_at_its_median_key() {
    const ALL_KEYS: usize = 100;
    const HOT_KEYS: usize = 20;
    let name = "hot";
    let (cluster, runtime, client) = start_range_map(
        "balancer-load",
        "split_ops_per_second = 150\nload_window_ms = 1000",
        name,
    );
    let key = |i: usize| Bytes::from(format!("k{i:06}"));
    let map = client.map(name).unwrap();
    for i in 0..ALL_KEYS {
        runtime
            .block_on(map.put(key(i), Bytes::from("cold")))
            .unwrap();
    }
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writers = 4;
    let tasks: Vec<_> = (0..writers)
        .map(|w| {
            let (client, stop) = (client.clone(), stop.clone());
            runtime.spawn(async move {
                let map = client.map(name).unwrap();
                let mut n = 0;
                // Bounded: the test stops it, or 100,000 puts.
                while !stop.load(std::sync::atomic::Ordering::Relaxed) && n < 100_000 {
                    let k = key((w + n * writers) % HOT_KEYS);
                    map.put(k.clone(), Bytes::from(format!("hot{n}")))
                        .await
                        .unwrap_or_else(|e| panic!("put {k:?}: {e}"));
                    n += 1;
                }
                n
            })
        })
        .collect();
    let began = Instant::now();
    let cuts = loop {
        let ranges = runtime.block_on(ranges(&client, name));
        if ranges.len() >= 2 {
            break ranges[1..]
                .iter()
                .map(|(start, _)| start.clone())
                .collect::<Vec<_>>();
        }
        assert!(
            began.elapsed() < Duration::from_secs(60),
            "a hot range did not split by load within a minute"
        );
        std::thread::sleep(Duration::from_millis(250));
    };
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let puts: usize = tasks
        .into_iter()
        .map(|t| runtime.block_on(t).unwrap())
        .sum();
    println!(
        "split by load after {:?} and {puts} puts, at {cuts:?}",
        began.elapsed()
    );
    assert!(
        cuts.iter().all(|cut| *cut > key(0) && *cut < key(HOT_KEYS)),
        "cuts outside the hot keys: {cuts:?}"
    );
    for i in 0..ALL_KEYS {
        let got = runtime.block_on(map.get(key(i))).unwrap();
        assert!(got.is_some(), "{:?} lost", key(i));
    }
    runtime.block_on(client.close());
    drop(runtime);
    cluster.stop();
}

/// DynaTree's B+tree surface: `bulk_load` of sorted input pre-splits a
/// range map into partitions of `partition_entries` as it goes (the
/// balancer's bound is far above, so every cut is the load's), writes
/// every entry, and refuses input that stops being sorted at the key where
/// it does, with what came before loaded.
#[test]
fn dynatree_bulk_load_pre_splits_sorted_input_into_partitions() {
    // Small enough for `settle` to count each range (1,000 at most).
    const ENTRIES: usize = 3_600;
    const PER_PARTITION: u64 = 900;
    let name = "loaded";
    let (cluster, runtime, client) = start_range_map("bulk-load", "split_entries = 1000000", name);
    let key = |i: usize| Bytes::from(format!("k{i:08}"));
    let value = |i: usize| Bytes::from(format!("v{i}"));
    let map = client.map(name).unwrap();
    let options = amulet_client::BulkLoad {
        partition_entries: PER_PARTITION,
        ..amulet_client::BulkLoad::default()
    };
    let loaded = runtime
        .block_on(map.bulk_load((0..ENTRIES).map(|i| (key(i), value(i))), &options))
        .unwrap();
    println!("{loaded:?}");
    assert_eq!(loaded.entries, ENTRIES as u64);
    assert_eq!(
        loaded.splits, 3,
        "the first chunk starts at the map's first range"
    );
    let sizes = settle(&runtime, &client, name, |sizes| sizes.len() == 4);
    assert_eq!(sizes, vec![PER_PARTITION as usize; 4]);
    for i in (0..ENTRIES).step_by(7) {
        assert_eq!(runtime.block_on(map.get(key(i))).unwrap(), Some(value(i)));
    }
    // A range scan over the four partitions, page by page: every key of
    // [k500, k3100) once, in order, in pages of at most 128 that never
    // cross a partition's end.
    let mut scan = map.scan(
        Some(amulet_client::KeyBound {
            key: key(500),
            inclusive: true,
        }),
        Some(amulet_client::KeyBound {
            key: key(3_100),
            inclusive: false,
        }),
        128,
    );
    let mut scanned = Vec::new();
    let mut pages = 0;
    while let Some(page) = runtime.block_on(scan.next_page()).unwrap() {
        assert!(!page.is_empty() && page.len() <= 128, "{}", page.len());
        let partition = |k: &Bytes| client.partition_map().partition_of(name, k).unwrap();
        assert_eq!(partition(&page[0].0), partition(&page[page.len() - 1].0));
        scanned.extend(page.into_iter().map(|(k, _)| k));
        pages += 1;
    }
    assert_eq!(scanned, (500..3_100).map(key).collect::<Vec<_>>());
    // 400, 900, 900 and 400 keys in pages of 128.
    assert_eq!(pages, 4 + 8 + 8 + 4);
    assert_eq!(scan.reads(), pages);
    // Unsorted: refused at the key that goes back; the chunk before it is
    // loaded, nothing of its own chunk.
    let unsorted = [
        (key(ENTRIES), value(0)),
        (key(ENTRIES + 1), value(1)),
        (key(5), value(5)),
    ];
    let small = amulet_client::BulkLoad {
        partition_entries: 2,
        ..options
    };
    let error = runtime
        .block_on(map.bulk_load(unsorted, &small))
        .unwrap_err();
    assert!(
        matches!(&error, amulet_client::Error::InvalidArgument(m) if m.contains("sorted")),
        "{error}"
    );
    assert!(runtime.block_on(map.get(key(ENTRIES))).unwrap().is_some());
    assert_eq!(runtime.block_on(map.get(key(5))).unwrap(), Some(value(5)));
    // A hash map over every partition (the four the load made): never
    // split, and each partition fills batches of its own (cut at every
    // change of partition, sorted keys made batches of one or two).
    runtime.block_on(client.create_map("hashed")).unwrap();
    let hashed = client.map("hashed").unwrap();
    let partitions_before = client.partition_map().partitions.len();
    let batched = amulet_client::BulkLoad {
        batch_entries: 500,
        ..options
    };
    let loaded = runtime
        .block_on(hashed.bulk_load((0..2_000).map(|i| (key(i), value(i))), &batched))
        .unwrap();
    println!("hash map: {loaded:?}");
    assert_eq!((loaded.entries, loaded.splits), (2_000, 0));
    assert!(
        loaded.batches <= 4 + partitions_before as u64,
        "{loaded:?} over {partitions_before} partitions"
    );
    assert_eq!(client.partition_map().partitions.len(), partitions_before);
    for i in (0..2_000).step_by(13) {
        assert_eq!(
            runtime.block_on(hashed.get(key(i))).unwrap(),
            Some(value(i))
        );
    }
    runtime.block_on(client.close());
    drop(runtime);
    cluster.stop();
}

/// Sequential inserts, the worst case of range partitioning (every write
/// lands on the map's last range): the tail splits where the last load
/// window's writes start, not at its middle, so the ranges it leaves
/// behind, never written again, stay nearly full instead of at half the
/// bound. Keys go in at about 400 a second, so a window (closed at the
/// balancer's turn, once a second) covers less than half of a tail past
/// the bound of 1,000.
#[test]
fn dynatree_growth_sequential_inserts_split_the_tail_early() {
    const BOUND: usize = 1_000;
    const KEYS: usize = 6_000;
    const BATCH: usize = 20;
    let name = "appended";
    let (cluster, runtime, client) = start_range_map(
        "balancer-tail",
        &format!("split_entries = {BOUND}\nload_window_ms = 100"),
        name,
    );
    let map = client.map(name).unwrap();
    let key = |i: usize| Bytes::from(format!("k{i:08}"));
    let started = Instant::now();
    for first in (0..KEYS).step_by(BATCH) {
        let batch: Vec<(Bytes, Bytes)> = (first..first + BATCH).map(|i| (key(i), key(i))).collect();
        runtime.block_on(map.put_all(batch)).unwrap();
        // Paced: batch n goes no earlier than n * 50 ms.
        let due = Duration::from_millis(50 * (first / BATCH + 1) as u64);
        if let Some(wait) = due.checked_sub(started.elapsed()) {
            std::thread::sleep(wait);
        }
    }
    let sizes = settle(&runtime, &client, name, |sizes| {
        sizes.iter().all(|n| *n <= BOUND) && sizes.iter().sum::<usize>() == KEYS
    });
    println!("ranges after {KEYS} sequential inserts: {sizes:?}");
    let log: String = (1..=3)
        .map(|n| std::fs::read_to_string(cluster.dir.join(format!("node-{n}.log"))).unwrap())
        .collect();
    let tail_splits = log.matches("proposing a tail split").count();
    assert!(tail_splits >= 2, "{tail_splits} tail splits: {sizes:?}");
    // Middle cuts leave ranges of about half the bound behind.
    let behind = &sizes[..sizes.len() - 1];
    let mean = behind.iter().sum::<usize>() / behind.len().max(1);
    assert!(
        mean >= BOUND * 7 / 10,
        "ranges left behind hold {mean} on average: {sizes:?}"
    );
    for i in (0..KEYS).step_by(97) {
        assert_eq!(runtime.block_on(map.get(key(i))).unwrap(), Some(key(i)));
    }
    runtime.block_on(client.close());
    drop(runtime);
    cluster.stop();
}

/// The operator's pause (docs/dynatree.md, "Pause and decisions"):
/// `SetBalancer` on every node stops every split, a node restarted while
/// paused stays paused (the switch is kept in its data directory), and
/// once resumed the map splits to its bound; the decisions show in
/// `amulet balancer status` (and `Status`).
#[test]
fn dynatree_oracle_a_paused_balancer_splits_nothing_until_resumed() {
    let name = "paused";
    let bound = 100;
    let (mut cluster, runtime, client) =
        start_range_map("balancer-pause", &format!("split_entries = {bound}"), name);
    for (node, answer) in runtime.block_on(client.set_balancer_everywhere(false)) {
        let status = answer.unwrap_or_else(|e| panic!("pause node {node}: {e}"));
        assert!(!status.enabled, "node {node}");
    }
    // Node 1 leads partition 1 (it proposes its splits): restarted, it
    // keeps the switch.
    cluster.kill(1);
    cluster.spawn(1);
    let began = Instant::now();
    let restarted = loop {
        if let Ok(status) = runtime.block_on(client.status(&cluster.address(1))) {
            break status;
        }
        assert!(
            began.elapsed() < Duration::from_secs(30),
            "node 1 is not back"
        );
        std::thread::sleep(Duration::from_millis(200));
    };
    assert!(
        !restarted.balancer.expect("a balancer status").enabled,
        "node 1 came back paused"
    );
    let map = client.map(name).unwrap();
    let keys = 4 * bound;
    for i in 0..keys {
        let key = Bytes::from(format!("k{i:05}"));
        runtime
            .block_on(map.put(key, Bytes::from_static(b"v")))
            .unwrap();
    }
    // Three balancer turns past the bound (one a second): nothing split.
    std::thread::sleep(Duration::from_secs(3));
    assert_eq!(
        runtime.block_on(ranges(&client, name)).len(),
        1,
        "split while paused"
    );
    let cli = |op: &str| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_amulet"))
            .args(["--addr", &cluster.address(2), "--tls-dir"])
            .arg(common::certificates())
            .args(["balancer", op])
            .output()
            .unwrap();
        assert!(out.status.success(), "amulet balancer {op}: {out:?}");
        String::from_utf8(out.stdout).unwrap()
    };
    let paused = cli("status");
    assert_eq!(paused.matches("balancer PAUSED").count(), 3, "{paused}");
    let resumed = cli("resume");
    assert_eq!(resumed.matches("balancer running").count(), 3, "{resumed}");
    let settled = settle(&runtime, &client, name, |sizes| {
        sizes.iter().all(|s| *s <= bound)
    });
    assert_eq!(settled.iter().sum::<usize>(), keys);
    let decided = cli("status");
    assert!(
        decided.contains("split of p1: p1 -> p"),
        "node 1's first split is listed: {decided}"
    );
    cluster.stop();
}
