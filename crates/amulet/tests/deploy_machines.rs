//! README "Deployment", followed: `amulet init` writes one directory per
//! machine, each node runs from its own directory on its own "machine" (a
//! network namespace with its own address on a bridge when the test runs
//! as root, else its own 127.0.0.x address), and a client reaches the
//! cluster through the addresses and certificates `amulet init` printed.
//! Five machines; then one is killed for good, and the survivors cut it
//! from the view (docs/membership.md) and keep serving.
// Wall-clock bounds on the test's waits, not protocol time.
#![allow(clippy::disallowed_methods)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const NODES: u32 = 5;
const BRIDGE: &str = "amd-br0";
const SUBNET: &str = "10.213.78";

fn amulet_bin() -> &'static str {
    env!("CARGO_BIN_EXE_amulet")
}

fn ok(program: &str, args: &[&str]) -> bool {
    Command::new(program)
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

fn namespace(node: u32) -> String {
    format!("amd-ns{node}")
}

/// The machines: network namespaces on a bridge, removed on drop.
struct Machines {
    namespaces: bool,
}

impl Machines {
    fn new() -> Machines {
        let root = Command::new("id")
            .arg("-u")
            .output()
            .is_ok_and(|o| o.stdout == b"0\n");
        // AMULET_DEPLOY_LOOPBACK=1 takes the 127.0.0.x path even as root.
        let loopback = std::env::var_os("AMULET_DEPLOY_LOOPBACK").is_some();
        let namespaces = root && !loopback && ok("ip", &["netns", "list"]);
        let machines = Machines { namespaces };
        machines.remove();
        if namespaces {
            let mut steps: Vec<Vec<String>> = vec![
                vec!["link", "add", BRIDGE, "type", "bridge"]
                    .into_iter()
                    .map(String::from)
                    .collect(),
                vec![
                    "addr".into(),
                    "add".into(),
                    format!("{SUBNET}.1/24"),
                    "dev".into(),
                    BRIDGE.into(),
                ],
                vec!["link", "set", BRIDGE, "up"]
                    .into_iter()
                    .map(String::from)
                    .collect(),
            ];
            for node in 1..=NODES {
                let (ns, host, inner) = (
                    namespace(node),
                    format!("amd-h{node}"),
                    format!("amd-n{node}"),
                );
                let exec = |rest: &[&str]| -> Vec<String> {
                    ["netns", "exec", &ns, "ip"]
                        .iter()
                        .chain(rest)
                        .map(|s| s.to_string())
                        .collect()
                };
                steps.push(vec!["netns".into(), "add".into(), ns.clone()]);
                steps.push(
                    ["link", "add", &host, "type", "veth", "peer", "name", &inner]
                        .map(String::from)
                        .to_vec(),
                );
                steps.push(
                    ["link", "set", &inner, "netns", &ns]
                        .map(String::from)
                        .to_vec(),
                );
                steps.push(
                    ["link", "set", &host, "master", BRIDGE]
                        .map(String::from)
                        .to_vec(),
                );
                steps.push(["link", "set", &host, "up"].map(String::from).to_vec());
                steps.push(exec(&[
                    "addr",
                    "add",
                    &format!("{SUBNET}.{}/24", node + 1),
                    "dev",
                    &inner,
                ]));
                steps.push(exec(&["link", "set", &inner, "up"]));
                steps.push(exec(&["link", "set", "lo", "up"]));
            }
            for step in steps {
                let args: Vec<&str> = step.iter().map(String::as_str).collect();
                assert!(ok("ip", &args), "ip {args:?} failed");
            }
        }
        machines
    }

    /// Node `node`'s address on its machine.
    fn host(&self, node: u32) -> String {
        if self.namespaces {
            format!("{SUBNET}.{}", node + 1)
        } else {
            format!("127.0.0.{}", node + 10)
        }
    }

    /// A command run on node `node`'s machine.
    fn command(&self, node: u32, program: &str) -> Command {
        if self.namespaces {
            let mut command = Command::new("ip");
            command.args(["netns", "exec", &namespace(node), program]);
            command
        } else {
            Command::new(program)
        }
    }

    fn remove(&self) {
        if self.namespaces {
            for node in 1..=NODES {
                ok("ip", &["netns", "del", &namespace(node)]);
                ok("ip", &["link", "del", &format!("amd-h{node}")]);
            }
            ok("ip", &["link", "del", BRIDGE]);
        }
    }
}

impl Drop for Machines {
    fn drop(&mut self) {
        self.remove();
    }
}

/// The node processes, stopped (stdin closed, then killed) on drop.
struct Nodes(Vec<Child>);

impl Drop for Nodes {
    fn drop(&mut self) {
        for child in &mut self.0 {
            drop(child.stdin.take());
        }
        let deadline = Instant::now() + Duration::from_secs(20);
        for child in &mut self.0 {
            while Instant::now() < deadline && child.try_wait().ok().flatten().is_none() {
                std::thread::sleep(Duration::from_millis(100));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Starts `node` on its machine from its directory under `cluster`,
/// logging to `log`; it stops when its stdin closes.
fn start_node(machines: &Machines, cluster: &Path, node: u32, log: &Path) -> Child {
    let config = cluster.join(format!("node-{node}/amulet.toml"));
    machines
        .command(node, amulet_bin())
        .arg("node")
        .arg("--config")
        .arg(&config)
        .arg("--stop-on-stdin-eof")
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(log).unwrap())
        .spawn()
        .expect("start a node")
}

/// Runs the CLI from the "operator's machine" (the root namespace).
fn cli(args: &[&str]) -> (bool, String) {
    let output = Command::new(amulet_bin())
        .args(args)
        .output()
        .expect("run amulet");
    let text = String::from_utf8_lossy(&output.stdout).to_string()
        + &String::from_utf8_lossy(&output.stderr);
    (output.status.success(), text)
}

/// Retries `args` until it succeeds (the cluster is forming), for 60 s.
fn cli_until_ok(args: &[&str]) -> String {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let (success, text) = cli(args);
        if success {
            return text;
        }
        assert!(
            Instant::now() < deadline,
            "amulet {args:?} kept failing: {text}"
        );
        std::thread::sleep(Duration::from_millis(500));
    }
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("amulet-deploy-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn deployment_init_writes_one_directory_per_machine_and_the_nodes_form_a_cluster() {
    let machines = Machines::new();
    println!("machines in network namespaces: {}", machines.namespaces);
    let dir = temp_dir("machines");
    let cluster = dir.join("cluster");
    let peers: Vec<String> = (1..=NODES)
        .map(|n| format!("{}:7400", machines.host(n)))
        .collect();
    let data = format!("{}/data-{{node}}", dir.display());
    let etc = format!("{}/node-{{node}}", cluster.display());
    let (success, printed) = cli(&[
        "init",
        "--nodes",
        &peers.join(","),
        "--dir",
        cluster.to_str().unwrap(),
        "--data-dir",
        &data,
        "--etc-dir",
        &etc,
        "--partitions",
        "2",
    ]);
    assert!(success, "{printed}");
    // Each machine's directory holds its configuration and its own key only.
    for node in 1..=NODES {
        let tls = cluster.join(format!("node-{node}/tls"));
        let mut names: Vec<String> = std::fs::read_dir(&tls)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
            .collect();
        names.sort();
        assert_eq!(
            names,
            vec![
                "ca.pem".to_string(),
                format!("node-{node}.key"),
                format!("node-{node}.pem")
            ]
        );
    }
    assert!(
        !cluster.join("ca/node-1.key").exists(),
        "node keys leave the CA directory"
    );
    // A second init on the same directory overwrites nothing.
    let (again, refusal) = cli(&[
        "init",
        "--nodes",
        &peers.join(","),
        "--dir",
        cluster.to_str().unwrap(),
    ]);
    assert!(!again && refusal.contains("not empty"), "{refusal}");

    let mut nodes = Nodes(Vec::new());
    for node in 1..=NODES {
        let log = dir.join(format!("node-{node}.log"));
        nodes.0.push(start_node(&machines, &cluster, node, &log));
    }
    // The client line `amulet init` printed, as written.
    let line = printed
        .lines()
        .find(|l| l.starts_with("clients: amulet status"))
        .expect("a client line");
    let words: Vec<&str> = line
        .trim_start_matches("clients: amulet ")
        .split(' ')
        .collect();
    let (addr, tls_dir) = (words[2], words[4]);
    let target = ["--addr", addr, "--tls-dir", tls_dir];
    let with = |command: &[&str]| -> Vec<String> {
        target
            .iter()
            .chain(command)
            .map(|s| s.to_string())
            .collect()
    };
    let status = cli_until_ok(
        &with(&["status"])
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>(),
    );
    assert!(
        status.contains("partition 1: stream 2, replicas [1, 2, 3]"),
        "{status}"
    );
    cli_until_ok(
        &with(&["create-map", "default"])
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>(),
    );
    for i in 0..20 {
        let put = with(&["put", &format!("key-{i}"), &format!("value-{i}")]);
        cli_until_ok(&put.iter().map(String::as_str).collect::<Vec<_>>());
    }
    let (success, scanned) = cli(&with(&["size"])
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>());
    assert!(success && scanned.trim() == "20", "{scanned}");
    let status = cli_until_ok(
        &with(&["status"])
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>(),
    );
    assert!(
        status.contains(&format!("health: {NODES}/{NODES} nodes answer")),
        "{status}"
    );
    assert!(
        status.contains(&format!("view 1: {NODES} members; removed []")),
        "every node is in the first view: {status}"
    );
    // Without the certificates, nobody gets in.
    let (success, refused) = cli(&["--addr", addr, "size"]);
    assert!(
        !success,
        "a client without a certificate was served: {refused}"
    );

    // SCONEKV §2 / Rapid: a machine that dies is cut from the view by its
    // observers' alerts, and every node installs the same next view.
    let victim = NODES as usize - 1;
    nodes.0[victim].kill().expect("kill the last node");
    let _ = nodes.0[victim].wait();
    let killed = Instant::now();
    let deadline = killed + Duration::from_secs(60);
    let removed = format!("view 2: {} members; removed [{NODES}]", NODES - 1);
    let status = loop {
        let (_, status) = cli(&with(&["status"])
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>());
        if status.contains(&removed) {
            break status;
        }
        assert!(
            Instant::now() < deadline,
            "node {NODES} was not removed from the view within 60 s: {status}"
        );
        std::thread::sleep(Duration::from_millis(200));
    };
    println!(
        "node {NODES} removed from the view {:.1} s after it was killed",
        killed.elapsed().as_secs_f64()
    );
    assert!(
        status.contains(&format!("view change to 2: joined [], removed [{NODES}]")),
        "{status}"
    );
    // The survivors still serve (each partition keeps a majority).
    let put = with(&["put", "after-the-kill", "yes"]);
    cli_until_ok(&put.iter().map(String::as_str).collect::<Vec<_>>());
    // Self-healing (thesis §4.2): the lowest active member moves every
    // partition the dead node replicated to live nodes; the new replicas
    // fetch the state from a peer.
    let status = loop {
        let (_, status) = cli(&with(&["status"])
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>());
        let partitions: Vec<&str> = status
            .lines()
            .filter(|l| l.trim_start().starts_with("partition ") && l.contains("replicas ["))
            .collect();
        let dead = format!("{NODES}");
        // ... and the dead node, which never says it holds nothing, is
        // reported so by the repairs' proposer: no partition is left
        // handing off (which would hold its splits and merges back).
        let healed = !partitions.is_empty()
            && partitions.iter().all(|line| {
                let replicas = line.split('[').nth(1).unwrap_or("").trim_end_matches(']');
                replicas.split(", ").count() == 3 && !replicas.split(", ").any(|r| r == dead)
            })
            && !status.contains("handing off from");
        if healed {
            break status;
        }
        assert!(
            Instant::now() < deadline,
            "node {NODES}'s partitions were not re-homed within 60 s of its kill: {status}"
        );
        std::thread::sleep(Duration::from_millis(200));
    };
    println!(
        "node {NODES}'s partitions re-homed {:.1} s after it was killed:\n{status}",
        killed.elapsed().as_secs_f64()
    );
    let (success, size) = cli(&with(&["size"])
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>());
    assert!(success && size.trim() == "21", "nothing lost: {size}");

    // The dead machine comes back with an empty disk (its data directory
    // wiped, its configuration kept): it starts from the first view and
    // map, finds its partitions moved away (its peers' checkpoints and
    // `NotHeld` say so) and drops them, and executes nothing that would
    // tell it the view removed it. Its subjects' probe replies do
    // (docs/membership.md "Views for a node without a replica"): it then
    // holds no replica and no vote and stops by itself, with exit status
    // 0, changing nothing.
    std::fs::remove_dir_all(dir.join(format!("data-{NODES}"))).expect("wipe the dead node's disk");
    let again = dir.join(format!("node-{NODES}-again.log"));
    nodes.0.push(start_node(&machines, &cluster, NODES, &again));
    let back = Instant::now();
    let deadline = back + Duration::from_secs(60);
    let exit = loop {
        let child = nodes.0.last_mut().expect("just pushed");
        if let Some(exit) = child.try_wait().expect("poll the restarted node") {
            break exit;
        }
        assert!(
            Instant::now() < deadline,
            "the removed node {NODES}, restarted, did not stop within 60 s: {}",
            std::fs::read_to_string(&again).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(200));
    };
    let log = std::fs::read_to_string(&again).unwrap_or_default();
    assert!(
        exit.success() && log.contains("is no longer a member"),
        "the removed node {NODES} stopped with {exit}: {log}"
    );
    println!(
        "the removed node {NODES}, restarted, stopped by itself {:.1} s later (view learned from a peer: {})",
        back.elapsed().as_secs_f64(),
        log.contains("view learned from a peer")
    );
    let status = cli_until_ok(
        &with(&["status"])
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>(),
    );
    assert!(status.contains(&removed), "still view 2: {status}");
    let (success, size) = cli(&with(&["size"])
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>());
    assert!(success && size.trim() == "21", "nothing lost: {size}");
    drop(nodes);
    drop(machines);
    let _ = std::fs::remove_dir_all(Path::new(&dir));
}

#[test]
fn deployment_init_refuses_bad_addresses_and_writes_nothing() {
    let parent = temp_dir("refused");
    let dir = parent.join("cluster");
    let target = dir.to_str().unwrap();
    for (args, why) in [
        (vec!["--nodes", "10.0.0.1"], "expected HOST:PORT"),
        (vec!["--nodes", "10.0.0.1:0"], "bad port"),
        (vec!["--nodes", "10.0.0.1:99999"], "bad port"),
        (vec!["--nodes", "bad host:7400"], "bad host"),
        (
            vec!["--nodes", "10.0.0.1:7400,10.0.0.1:7400"],
            "given twice",
        ),
        (
            vec![
                "--nodes",
                "10.0.0.1:7400,10.0.0.2:7400",
                "--clients",
                "10.0.0.1:7401",
            ],
            "one address per node",
        ),
        (
            vec!["--nodes", "10.0.0.1:7400", "--storage", "fast"],
            "--storage",
        ),
        (
            vec!["--nodes", "10.0.0.1:7400", "--partitions", "0"],
            "--partitions",
        ),
    ] {
        let mut all = vec!["init", "--dir", target];
        all.extend(&args);
        let (success, text) = cli(&all);
        assert!(!success && text.contains(why), "{args:?}: {text}");
        assert!(!dir.exists(), "{args:?} wrote {}", dir.display());
    }
    let _ = std::fs::remove_dir_all(&parent);
}
