//! `amulet dev --nodes 5`: a local cluster of five processes, each
//! partition on three of them, serving clients at every node; a split and
//! a move without ids get ids the cluster never used; a node leaves
//! gracefully (SCONEKV §2) and its partitions move to the others; the
//! balancer evens out the partitions per node (docs/dynatree.md), onto
//! members that replicate nothing too.
// Wall-clock bounds on the test's waits, not protocol time.
#![allow(clippy::disallowed_methods)]

mod common;

use std::io::Read;
use std::net::TcpListener;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const NODES: u16 = 5;

fn amulet() -> Command {
    Command::new(env!("CARGO_BIN_EXE_amulet"))
}

/// A base port whose client (base+1..) and peer (base+11..) ports are free.
fn free_base() -> u16 {
    let seed = u64::from(std::process::id()).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    for attempt in 0..64u64 {
        let base = 23_000 + 20 * ((seed.wrapping_add(attempt) >> 7) % 400) as u16;
        let ports = (1..=NODES).flat_map(|i| [base + i, base + 10 + i]);
        if ports
            .into_iter()
            .all(|p| TcpListener::bind(("127.0.0.1", p)).is_ok())
        {
            return base;
        }
    }
    panic!("no free ports for an amulet dev cluster");
}

/// Stops the dev process group on drop (it also stops itself after its
/// `--seconds`).
struct Dev(Child);

impl Drop for Dev {
    fn drop(&mut self) {
        let group = format!("-{}", self.0.id());
        let _ = Command::new("kill").args(["-INT", "--", &group]).status();
        let deadline = Instant::now() + Duration::from_secs(20);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.0.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let _ = Command::new("kill").args(["-KILL", "--", &group]).status();
        let _ = self.0.wait();
    }
}

fn run(args: &[&str]) -> String {
    let output = amulet().args(args).output().expect("run amulet");
    let text = String::from_utf8_lossy(&output.stdout).to_string()
        + &String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "amulet {args:?}: {text}");
    text
}

fn run_fails(args: &[&str]) -> String {
    let output = amulet().args(args).output().expect("run amulet");
    let text = String::from_utf8_lossy(&output.stdout).to_string()
        + &String::from_utf8_lossy(&output.stderr);
    assert!(
        !output.status.success(),
        "amulet {args:?} succeeded: {text}"
    );
    text
}

/// The partitions each node replicates, from `amulet status`.
fn replicas_per_node(status: &str) -> std::collections::BTreeMap<String, usize> {
    let mut counts = std::collections::BTreeMap::new();
    for line in status
        .lines()
        .filter(|l| l.trim_start().starts_with("partition ") && l.contains("replicas ["))
    {
        let replicas = line.split('[').nth(1).expect("a replica list");
        for node in replicas.trim_end_matches(']').split(", ") {
            *counts.entry(node.to_string()).or_insert(0) += 1;
        }
    }
    counts
}

/// One dev cluster at a time: two of five processes each would share the
/// machine's two cores (and a CI run's).
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// A running `amulet dev --nodes 5` (memory storage, no TLS, `extra`
/// arguments), once it serves clients: the process, its base port, its
/// directory, its log file and the log's text so far.
fn start_dev(
    name: &str,
    extra: &[&str],
) -> (Dev, u16, std::path::PathBuf, std::path::PathBuf, String) {
    start_dev_of(NODES, name, extra)
}

/// [`start_dev`] of `nodes` nodes (the ports of five are free, for
/// nodes that join).
fn start_dev_of(
    nodes: u16,
    name: &str,
    extra: &[&str],
) -> (Dev, u16, std::path::PathBuf, std::path::PathBuf, String) {
    let dir = std::env::temp_dir().join(format!("amulet-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let base = free_base();
    let log = dir.with_extension("log");
    let out = std::fs::File::create(&log).unwrap();
    let child = amulet()
        .args([
            "dev",
            "--nodes",
            &nodes.to_string(),
            "--insecure",
            "--storage",
            "memory",
            "--seconds",
            "240",
        ])
        .args(extra)
        .arg("--dir")
        .arg(&dir)
        .args(["--base-port", &base.to_string()])
        .stdin(Stdio::null())
        .stdout(out.try_clone().unwrap())
        .stderr(out)
        .process_group(0)
        .spawn()
        .expect("start amulet dev");
    let dev = Dev(child);
    let deadline = Instant::now() + Duration::from_secs(90);
    let mut text = String::new();
    while !text.contains("serving clients") {
        assert!(
            Instant::now() < deadline,
            "amulet dev did not come up:\n{text}"
        );
        std::thread::sleep(Duration::from_millis(200));
        text.clear();
        std::fs::File::open(&log)
            .unwrap()
            .read_to_string(&mut text)
            .unwrap();
    }
    let partitions = extra
        .iter()
        .position(|a| *a == "--partitions")
        .map_or("3", |at| extra[at + 1]);
    assert!(
        text.contains(&format!(
            "{nodes} nodes, {partitions} partitions x 3 replicas"
        )),
        "{text}"
    );
    (dev, base, dir, log, text)
}

#[test]
fn dev_with_five_nodes_places_three_replicas_per_partition_serves_everywhere_and_allocates_ids() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let (dev, base, dir, log, mut text) = start_dev("dev-nodes", &[]);
    let address = |node: u16| format!("127.0.0.1:{}", base + node);
    let status = run(&["status", "--addr", &address(1)]);
    assert!(status.contains("health: 5/5 nodes answer"), "{status}");
    let mut holders = std::collections::BTreeSet::new();
    let mut partitions = 0;
    for line in status
        .lines()
        .filter(|l| l.trim_start().starts_with("partition ") && l.contains("replicas ["))
    {
        let replicas = line.split('[').nth(1).expect("a replica list");
        let replicas: Vec<&str> = replicas.trim_end_matches(']').split(", ").collect();
        assert_eq!(replicas.len(), 3, "{line}");
        holders.extend(replicas.into_iter().map(str::to_string));
        partitions += 1;
    }
    assert_eq!(partitions, 3, "{status}");
    assert_eq!(holders.len(), 5, "every node holds a replica: {status}");
    for node in 1..=NODES {
        let key = format!("key-{node}");
        run(&["put", &key, "value", "--addr", &address(node)]);
        let read = run(&["get", &key, "--addr", &address(NODES + 1 - node)]);
        assert_eq!(
            read.trim(),
            "value",
            "{key} through node {}",
            NODES + 1 - node
        );
    }
    // Repartitioning without naming ids: the cluster's map allocates them
    // (streams 1-4 are in use, partitions 1-3).
    let split = run(&["split", "1", "--addr", &address(2)]);
    assert!(
        split.contains("new: PartitionId(4)") && split.contains("stream: StreamId(5)"),
        "{split}"
    );
    // The old replica hands off once a majority of the new group holds a
    // checkpoint past the move (10 s apart): up to two intervals after
    // the fence, more on a loaded machine (a CI run timed out at 30 s).
    let moved = run(&[
        "move",
        "2",
        "--to",
        "3,4,5",
        "--addr",
        &address(3),
        "--timeout-secs",
        "120",
    ]);
    // The split left nodes 1-3 with three partitions and node 5 with one:
    // the balancer moves one of theirs to node 5 on its own, before or
    // after the operator's move (whichever is ordered second is rebuilt
    // on the map after the first), so the move's stream is 6 or 7.
    assert!(
        moved.contains("stream: StreamId(6)") || moved.contains("stream: StreamId(7)"),
        "{moved}"
    );
    let status = run(&["status", "--addr", &address(1)]);
    assert!(
        status.contains("partition 4: stream 5, replicas [1, 2, 3]"),
        "{status}"
    );
    assert!(
        status.contains("replicas [3, 4, 5]")
            && status
                .lines()
                .any(|l| l.contains("partition 2: stream ") && l.contains("replicas [3, 4, 5]")),
        "{status}"
    );
    // The operator's move alone leaves node 3 with four partitions and
    // node 5 with one: only the balancer's moves bring every node within
    // one partition of the others.
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let status = run(&["status", "--addr", &address(1)]);
        let counts = replicas_per_node(&status);
        if counts.len() == NODES as usize
            && counts.values().max().unwrap() - counts.values().min().unwrap() <= 1
        {
            println!("replicas per node after the balancer: {counts:?}");
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the balancer did not even out the partitions per node: {counts:?}\n{status}"
        );
        std::thread::sleep(Duration::from_millis(500));
    }
    for node in 1..=NODES {
        let read = run(&["get", &format!("key-{node}"), "--addr", &address(node)]);
        assert_eq!(
            read.trim(),
            "value",
            "key-{node} after the split and the move"
        );
    }
    // The global stream onto other acceptors (thesis §4.2): refused, with
    // nothing changed, when an acceptor does not run the current one;
    // then done, and every key reads back.
    let refused = run_fails(&[
        "replace-global-stream",
        "--acceptors",
        "1,2,9",
        "--addr",
        &address(1),
    ]);
    assert!(
        refused.contains("global-stream-stranger")
            || refused.contains("does not learn the global stream"),
        "{refused}"
    );
    let replaced = run(&[
        "replace-global-stream",
        "--acceptors",
        "1,2,5",
        "--addr",
        &address(2),
        "--timeout-secs",
        "120",
    ]);
    assert!(replaced.contains("done"), "{replaced}");
    let status = run(&["status", "--addr", &address(3)]);
    let global = status
        .lines()
        .find_map(|l| l.split("global stream ").nth(1))
        .expect("a global stream in the status");
    assert_ne!(global.trim(), "1", "{status}");
    for node in 1..=NODES {
        let read = run(&["get", &format!("key-{node}"), "--addr", &address(node)]);
        assert_eq!(
            read.trim(),
            "value",
            "key-{node} after the global stream's replacement"
        );
    }
    // A graceful leave (docs/membership.md). Refused, nothing changed: a
    // node not in the view, no node.
    let refused = run_fails(&["leave", "9", "--addr", &address(2)]);
    assert!(refused.contains("not an active member"), "{refused}");
    let refused = run_fails(&["leave", "0", "--addr", &address(2)]);
    assert!(refused.contains("node ids start at 1"), "{refused}");
    // Node 5, an acceptor of the global stream (1, 2, 5), leaves: the
    // next view removes it, self-healing gives its vote to node 3 (the
    // lowest live member learning the global stream) and moves its
    // partitions onto the other live nodes, and node 5 stops by itself
    // (it would not while it still voted in a stream in use).
    let left = run(&["leave", "5", "--wait-secs", "100", "--addr", &address(1)]);
    assert!(
        left.contains("node 5 left") || left.contains("it left"),
        "{left}"
    );
    let status = run(&["status", "--addr", &address(1)]);
    assert!(status.contains("removed [5]"), "{status}");
    for line in status
        .lines()
        .filter(|l| l.trim_start().starts_with("partition ") && l.contains("replicas ["))
    {
        let replicas = line.split('[').nth(1).expect("a replica list");
        let replicas: Vec<&str> = replicas.trim_end_matches(']').split(", ").collect();
        assert_eq!(replicas.len(), 3, "still three replicas: {line}");
        assert!(!replicas.contains(&"5"), "a replica left on node 5: {line}");
    }
    for node in 1..NODES {
        let read = run(&["get", &format!("key-{node}"), "--addr", &address(node)]);
        assert_eq!(read.trim(), "value", "key-{node} after node 5 left");
    }
    let read = run(&["get", "key-5", "--addr", &address(1)]);
    assert_eq!(
        read.trim(),
        "value",
        "key-5 (written through node 5) after it left"
    );
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        text.clear();
        std::fs::File::open(&log)
            .unwrap()
            .read_to_string(&mut text)
            .unwrap();
        if text.contains("node 5 stopped by itself") {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "node 5 did not stop after leaving:\n{text}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    // Node 5's vote went with a new global stream.
    let status = run(&["status", "--addr", &address(1)]);
    let after_leave = status
        .lines()
        .find_map(|l| l.split("global stream ").nth(1))
        .expect("a global stream in the status");
    assert_ne!(after_leave.trim(), global.trim(), "{status}");
    // A node the view removed is no acceptor of a new global stream,
    // though it learned the current one: refused, nothing changed.
    let refused = run_fails(&[
        "replace-global-stream",
        "--acceptors",
        "1,2,5",
        "--addr",
        &address(1),
    ]);
    assert!(
        refused.contains("global-stream-stranger")
            || refused.contains("not an active member of the view"),
        "{refused}"
    );
    // Nor is it a partition's new replica: the move is refused, and
    // partition 1 keeps its replicas.
    let before = run(&["status", "--addr", &address(1)]);
    let refused = run_fails(&["move", "1", "--to", "1,2,5", "--addr", &address(1)]);
    assert!(
        refused.contains("inactive-node") || refused.contains("removed from the view"),
        "{refused}"
    );
    let after = run(&["status", "--addr", &address(1)]);
    assert_eq!(replicas_of(&before, 1), replicas_of(&after, 1));
    drop(dev);
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_file(&log);
}

/// The replicas of `partition` in `amulet status`'s text, as printed.
fn replicas_of(status: &str, partition: u32) -> Vec<String> {
    let line = status
        .lines()
        .find(|l| {
            l.trim_start()
                .starts_with(&format!("partition {partition}: "))
        })
        .unwrap_or_else(|| panic!("no partition {partition}: {status}"));
    let replicas = line.split('[').nth(1).expect("a replica list");
    replicas
        .trim_end_matches(']')
        .split(", ")
        .map(str::to_string)
        .collect()
}

/// The map version in `amulet status`'s text.
fn map_version(status: &str) -> u64 {
    let at = status
        .find("partition map version ")
        .expect("a map version");
    status[at + "partition map version ".len()..]
        .split(|c: char| !c.is_ascii_digit())
        .next()
        .and_then(|v| v.parse().ok())
        .expect("a number")
}

/// docs/dynatree.md, "Moves by bytes and load": a range map's two halves,
/// on p1 (nodes 1-3) and p3 (nodes 2-4), hold all the bytes; every node
/// holds two partitions but node 5 one, so the counts are even, but nodes
/// 2 and 3 hold twice what 1 and 4 hold and node 5 nothing. The balancer
/// moves one heavy replica to node 5 by itself (once: the four nodes then
/// at half and one at the whole is as even as two partitions of three
/// replicas on five nodes get), and every value reads back.
#[test]
fn dynatree_oracle_moves_a_replica_to_even_out_the_nodes_bytes() {
    use amulet_client::{Bytes, Client};
    use amulet_smr::Layout;
    use amulet_types::PartitionId;
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    // Bytes count from the first one (64 MiB by default).
    let (dev, base, dir, log, _) = start_dev("dev-weights", &["--weigh-bytes-from", "1"]);
    let address = |node: u16| format!("127.0.0.1:{}", base + node);
    let status = run(&["status", "--addr", &address(1)]);
    assert_eq!(replicas_of(&status, 1), ["1", "2", "3"], "{status}");
    assert_eq!(replicas_of(&status, 3), ["2", "3", "4"], "{status}");
    let runtime = common::runtime();
    let client = runtime
        .block_on(Client::connect((1..=NODES).map(address)))
        .unwrap();
    let halves = Layout::Range(vec![
        (Bytes::new(), PartitionId(1)),
        (Bytes::from_static(b"m"), PartitionId(3)),
    ]);
    runtime
        .block_on(client.create_map_with("heavy", halves))
        .unwrap();
    let map = client.map("heavy").unwrap();
    let value = Bytes::from(vec![b'w'; 8 * 1024]);
    let keys: Vec<Bytes> = (0..150)
        .flat_map(|i| ["a", "n"].map(|half| Bytes::from(format!("{half}{i:04}"))))
        .collect();
    runtime.block_on(async {
        for key in &keys {
            map.put(key.clone(), value.clone()).await.unwrap();
        }
    });
    let heavy_on = |status: &str, node: &str| {
        [1, 3]
            .iter()
            .filter(|p| replicas_of(status, **p).iter().any(|n| n == node))
            .count()
    };
    let deadline = Instant::now() + Duration::from_secs(150);
    let status = loop {
        let status = run(&["status", "--addr", &address(1)]);
        if heavy_on(&status, "5") == 1 && !status.contains("handing off") {
            break status;
        }
        assert!(
            Instant::now() < deadline,
            "no heavy replica moved to node 5:\n{status}"
        );
        std::thread::sleep(Duration::from_millis(500));
    };
    let both: Vec<u16> = (1..=NODES)
        .filter(|n| heavy_on(&status, &n.to_string()) == 2)
        .collect();
    assert_eq!(both.len(), 1, "one node holds both halves: {status}");
    let counts = replicas_per_node(&status);
    assert!(
        counts.values().max().unwrap() - counts.values().min().unwrap() <= 1,
        "the counts stay within one: {counts:?}\n{status}"
    );
    let decisions = run(&["balancer", "status", "--addr", &address(1)]);
    assert!(decisions.contains("move by weight"), "{decisions}");
    println!("{decisions}");
    // Settled: no further move in the next ten seconds (reports come every
    // second; a move is planned on the first turn after them).
    let version = map_version(&status);
    std::thread::sleep(Duration::from_secs(10));
    let later = run(&["status", "--addr", &address(1)]);
    assert_eq!(map_version(&later), version, "moves went on:\n{later}");
    runtime.block_on(async {
        for key in &keys {
            let read = map.get(key.clone()).await.unwrap();
            assert_eq!(read.as_ref(), Some(&value), "{key:?}");
        }
    });
    drop(dev);
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_file(&log);
}

/// docs/dynatree.md, "Members replicating nothing": a cluster of five
/// whose one partition is on nodes 1-3 (nodes 4 and 5 members that
/// replicate nothing, as nodes that have just joined). A range map grows
/// by splits, which keep the replicas on 1-3; the balancer then moves
/// replicas onto 4 and 5 by itself until every node's count is within
/// one, and every value reads back.
#[test]
fn dynatree_oracle_spreads_a_grown_map_onto_members_replicating_nothing() {
    use amulet_client::{Bytes, Client};
    use amulet_smr::Layout;
    use amulet_types::PartitionId;
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let (dev, base, dir, log, _) = start_dev(
        "dev-spread",
        &["--partitions", "1", "--split-entries", "100"],
    );
    let address = |node: u16| format!("127.0.0.1:{}", base + node);
    let status = run(&["status", "--addr", &address(1)]);
    assert_eq!(replicas_of(&status, 1), ["1", "2", "3"], "{status}");
    let counts = replicas_per_node(&status);
    assert!(
        !counts.contains_key("4") && !counts.contains_key("5"),
        "{counts:?}"
    );
    let runtime = common::runtime();
    let client = runtime
        .block_on(Client::connect((1..=NODES).map(address)))
        .unwrap();
    runtime
        .block_on(
            client.create_map_with("grow", Layout::Range(vec![(Bytes::new(), PartitionId(1))])),
        )
        .unwrap();
    let map = client.map("grow").unwrap();
    // Keys in a scattered order (a multiplicative walk over 0..600).
    let keys: Vec<Bytes> = (0..600u64)
        .map(|i| Bytes::from(format!("k{:04}", (i * 389) % 600)))
        .collect();
    runtime.block_on(async {
        for key in &keys {
            map.put(key.clone(), key.clone()).await.unwrap();
        }
    });
    let deadline = Instant::now() + Duration::from_secs(150);
    let status = loop {
        let status = run(&["status", "--addr", &address(1)]);
        let counts = replicas_per_node(&status);
        let spread = (1..=NODES).all(|n| counts.get(&n.to_string()).is_some_and(|c| *c > 0));
        let even = counts.values().max().unwrap() - counts.values().min().unwrap() <= 1;
        if spread && even && !status.contains("handing off") {
            break status;
        }
        assert!(
            Instant::now() < deadline,
            "the replicas did not spread onto nodes 4 and 5: {counts:?}\n{status}"
        );
        std::thread::sleep(Duration::from_millis(500));
    };
    println!("{status}");
    let decisions = run(&["balancer", "status", "--addr", &address(1)]);
    assert!(decisions.contains("move"), "{decisions}");
    // A move to node 9, which replicates nothing and does not learn the
    // global stream, is refused at the edge with nothing ordered.
    let refused = run_fails(&[
        "move",
        "1",
        "--to",
        "1,2,9",
        "--addr",
        &address(1),
        "--timeout-secs",
        "10",
    ]);
    assert!(
        refused.contains("move-to-idle-node")
            || refused.contains("does not learn the global stream"),
        "{refused}"
    );
    let after = run(&["status", "--addr", &address(1)]);
    assert!(
        !replicas_per_node(&after).contains_key("9"),
        "nothing ordered:\n{after}"
    );
    runtime.block_on(async {
        for key in &keys {
            let read = map.get(key.clone()).await.unwrap();
            assert_eq!(read.as_ref(), Some(key), "{key:?}");
        }
    });
    drop(dev);
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_file(&log);
}

/// Waits (bounded) until `amulet status` at `addr` satisfies `done`;
/// answers that status.
fn wait_for_status(addr: &str, what: &str, done: impl Fn(&str) -> bool) -> String {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let output = amulet()
            .args(["status", "--addr", addr])
            .output()
            .expect("run amulet status");
        let status = String::from_utf8_lossy(&output.stdout).to_string();
        if done(&status) {
            return status;
        }
        assert!(Instant::now() < deadline, "{what}: not in 120 s\n{status}");
        std::thread::sleep(Duration::from_millis(500));
    }
}

/// Whether `status` shows every node of `nodes` replicating a partition,
/// each within one partition of the others, and nothing being re-homed.
fn evened_over(status: &str, nodes: &[u16]) -> bool {
    let counts = replicas_per_node(status);
    let names: Vec<String> = nodes.iter().map(u16::to_string).collect();
    counts
        .keys()
        .eq(names.iter().collect::<std::collections::BTreeSet<_>>())
        && counts.values().max().unwrap() - counts.values().min().unwrap() <= 1
        && !status.contains("re-homing")
}

/// SCONEKV §2 (a join is ordered on the global stream like every view
/// change): `amulet join` adds nodes no configuration file names to a
/// running three-node cluster; the view admits them, the balancer moves
/// partitions onto them, clients reach them by the view's client
/// addresses; a joiner killed for good is removed and its partitions are
/// re-homed, with every key read back through the other joiner.
#[test]
fn sconekv_2_amulet_join_adds_nodes_that_take_partitions_and_one_killed_for_good_is_re_homed() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let (dev, base, dir, log, _) = start_dev_of(3, "dev-join", &[]);
    let address = |node: u16| format!("127.0.0.1:{}", base + node);
    let peer = |node: u16| format!("127.0.0.1:{}", base + 10 + node);
    let like = dir.join("node-1.toml");
    let like = like.to_str().unwrap();
    for i in 0..30 {
        run(&[
            "put",
            &format!("k{i}"),
            &format!("v{i}"),
            "--addr",
            &address(1),
        ]);
    }
    let join_args = |node: u16| {
        let config = dir.join(format!("joined-{node}.toml"));
        let data = dir.join(format!("joined-{node}"));
        vec![
            "join".to_string(),
            "--addr".into(),
            address(2),
            "--like".into(),
            like.into(),
            "--peer-address".into(),
            peer(node),
            "--client-address".into(),
            address(node),
            "--data-dir".into(),
            data.display().to_string(),
            "--config".into(),
            config.display().to_string(),
        ]
    };
    // Refused at the edge, nothing ordered, no file written: an address
    // nobody can reach, and a member's peer address.
    let mut unreachable = join_args(4);
    unreachable[6] = "0.0.0.0:9".into();
    let unreachable: Vec<&str> = unreachable.iter().map(String::as_str).collect();
    let refused = run_fails(&unreachable);
    assert!(refused.contains("reachable"), "{refused}");
    let mut taken = join_args(4);
    taken[6] = peer(1);
    let taken: Vec<&str> = taken.iter().map(String::as_str).collect();
    let refused = run_fails(&taken);
    assert!(refused.contains("node 1 of the view is at"), "{refused}");
    assert!(!dir.join("joined-4.toml").exists());
    let status = run(&["status", "--addr", &address(1)]);
    assert!(status.contains("view 1: 3 members"), "{status}");
    // Node 4 joins; the balancer spreads the partitions over four nodes.
    let start_joiner = |node: u16| {
        let out = std::fs::File::create(dir.join(format!("joined-{node}.log"))).unwrap();
        let child = amulet()
            .args(join_args(node))
            .stdin(Stdio::null())
            .stdout(out.try_clone().unwrap())
            .stderr(out)
            .process_group(0)
            .spawn()
            .expect("start amulet join");
        Dev(child)
    };
    let joiner_4 = start_joiner(4);
    let status = wait_for_status(&address(1), "node 4 admitted and given partitions", |s| {
        s.contains("view 2: 4 members") && evened_over(s, &[1, 2, 3, 4])
    });
    assert!(
        status.contains(&format!("node 4 {} active", peer(4))),
        "{status}"
    );
    assert!(
        status.contains(&format!("clients at {}", address(4))),
        "{status}"
    );
    // Node 5 joins through another member; it reaches node 4 by the view.
    let _joiner_5 = start_joiner(5);
    wait_for_status(&address(1), "node 5 admitted and given partitions", |s| {
        s.contains("view 3: 5 members") && evened_over(s, &[1, 2, 3, 4, 5])
    });
    for i in 0..30 {
        let read = run(&["get", &format!("k{i}"), "--addr", &address(4)]);
        assert_eq!(read.trim(), format!("v{i}"), "k{i} through node 4");
    }
    // Node 4 is killed for good (SIGKILL): removed, its partitions
    // re-homed.
    let group = format!("-{}", joiner_4.0.id());
    let _ = Command::new("kill").args(["-KILL", "--", &group]).status();
    drop(joiner_4);
    let status = wait_for_status(&address(1), "node 4 removed and re-homed", |s| {
        s.contains("removed [4]") && evened_over(s, &[1, 2, 3, 5])
    });
    println!("after node 4 was killed for good:\n{status}");
    for i in 0..30 {
        let read = run(&["get", &format!("k{i}"), "--addr", &address(5)]);
        assert_eq!(read.trim(), format!("v{i}"), "k{i} through node 5");
    }
    drop(dev);
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_file(&log);
}
