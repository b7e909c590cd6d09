//! Three `amulet node` processes on loopback for one scenario: configs,
//! spawning, bounded waits, and a guard that kills every child on every path.

use crate::clock::{now, Deadline};
use crate::links::{LinkReport, LinkSampler};
use crate::scenario::{Mode, Scenario};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::fs;
use std::io::Read;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::thread;
use std::time::{Duration, Instant};

/// Nodes of every scenario: 1 proposes and learns (and, as the lowest id,
/// coordinates every stream); 2 and 3 are acceptors and learners.
pub const NODES: [u32; 3] = [1, 2, 3];

/// Extra time a scenario may take beyond its warmup and duration (process
/// start, connection set-up, stop and report writing).
const GRACE: Duration = Duration::from_secs(20);

/// Allowance for node 1 to connect to its peers before its first offer.
const STARTUP_MS: u64 = 500;

/// `count` distinct free ports on 127.0.0.1 (held together while chosen).
pub fn free_ports(count: usize) -> std::io::Result<Vec<u16>> {
    let listeners = (0..count)
        .map(|_| TcpListener::bind("127.0.0.1:0"))
        .collect::<std::io::Result<Vec<_>>>()?;
    listeners
        .iter()
        .map(|l| l.local_addr().map(|a| a.port()))
        .collect()
}

/// Child processes killed (and reaped) when dropped, whatever the path.
#[derive(Default)]
pub struct Children {
    children: Vec<(String, Child)>,
    /// Per child: when it was spawned and the CPU ticks last seen in
    /// `/proc/<pid>/stat` (user + system), sampled while waiting.
    cpu: BTreeMap<String, (Instant, Option<Instant>, u64)>,
}

impl Children {
    pub fn push(&mut self, name: &str, child: Child) {
        self.cpu.insert(name.to_string(), (now(), None, 0));
        self.children.push((name.to_string(), child));
    }

    /// Reads every running child's CPU time so far.
    pub fn sample_cpu(&mut self) {
        for (name, child) in &self.children {
            let Some(ticks) = cpu_ticks(child.id()) else {
                continue;
            };
            if let Some(entry) = self.cpu.get_mut(name) {
                entry.1 = Some(now());
                entry.2 = ticks;
            }
        }
    }

    /// CPU use of `name` over its life as last sampled, in % of one CPU.
    pub fn cpu_percent(&self, name: &str) -> Option<f64> {
        let (spawned, seen, ticks) = self.cpu.get(name)?;
        let wall = seen.as_ref()?.duration_since(*spawned).as_secs_f64();
        (wall > 0.0).then(|| *ticks as f64 / CLOCK_TICKS / wall * 100.0)
    }

    pub fn pid(&self, name: &str) -> Option<u32> {
        self.children
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, c)| c.id())
    }

    pub fn get_mut(&mut self, name: &str) -> Option<&mut Child> {
        self.children
            .iter_mut()
            .find(|(n, _)| n == name)
            .map(|(_, c)| c)
    }

    /// Waits for `name` to exit until `limit` passes; `None` on timeout.
    /// Samples the children's CPU use meanwhile.
    pub fn wait_for(&mut self, name: &str, limit: Duration) -> Option<ExitStatus> {
        self.wait_for_with(name, limit, || {})
    }

    /// `wait_for`, calling `each` on every poll.
    pub fn wait_for_with(
        &mut self,
        name: &str,
        limit: Duration,
        mut each: impl FnMut(),
    ) -> Option<ExitStatus> {
        let deadline = Deadline::after(limit);
        loop {
            self.sample_cpu();
            each();
            match self.get_mut(name)?.try_wait() {
                Ok(Some(status)) => return Some(status),
                Ok(None) if deadline.passed() => return None,
                Ok(None) => thread::sleep(Duration::from_millis(20)),
                Err(_) => return None,
            }
        }
    }

    /// Asks `name` to stop (SIGTERM through `kill`, which the node handles).
    pub fn terminate(&mut self, name: &str) {
        let Some(child) = self.get_mut(name) else {
            return;
        };
        if matches!(child.try_wait(), Ok(None)) {
            let _ = Command::new("kill")
                .args(["-TERM", &child.id().to_string()])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status();
        }
    }

    /// Kills and reaps every child still running.
    pub fn kill_all(&mut self) {
        for (_, child) in &mut self.children {
            if matches!(child.try_wait(), Ok(None)) {
                let _ = child.kill();
            }
            let _ = child.wait();
        }
        self.children.clear();
    }
}

impl Drop for Children {
    fn drop(&mut self) {
        self.kill_all();
    }
}

/// `USER_HZ`, the unit of `/proc/<pid>/stat` CPU times on Linux.
const CLOCK_TICKS: f64 = 100.0;

/// User + system CPU ticks of a running process (Linux `/proc`).
fn cpu_ticks(pid: u32) -> Option<u64> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after "pid (comm) ": state is the first, utime the 12th.
    let rest = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    Some(utime + stime)
}

/// Polls `child` until it exits or `limit` passes.
pub fn wait_bounded(child: &mut Child, limit: Duration) -> Option<ExitStatus> {
    let deadline = Deadline::after(limit);
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return Some(status),
            Ok(None) if deadline.passed() => return None,
            Ok(None) => thread::sleep(Duration::from_millis(20)),
            Err(_) => return None,
        }
    }
}

/// Like `Child::wait_with_output`, but killed after `limit`.
pub fn wait_output(mut child: Child, limit: Duration) -> Result<Output, String> {
    let mut stdout = child.stdout.take();
    let mut stderr = child.stderr.take();
    let out_reader = thread::spawn(move || {
        let mut buf = Vec::new();
        if let Some(s) = stdout.as_mut() {
            let _ = s.read_to_end(&mut buf);
        }
        buf
    });
    let err_reader = thread::spawn(move || {
        let mut buf = Vec::new();
        if let Some(s) = stderr.as_mut() {
            let _ = s.read_to_end(&mut buf);
        }
        buf
    });
    let status = wait_bounded(&mut child, limit);
    if status.is_none() {
        let _ = child.kill();
        let _ = child.wait();
    }
    let stdout = out_reader.join().unwrap_or_default();
    let stderr = err_reader.join().unwrap_or_default();
    match status {
        Some(status) => Ok(Output {
            status,
            stdout,
            stderr,
        }),
        None => Err(format!("timed out after {limit:?}")),
    }
}

/// Node config in the node crate's TOML format (`amulet-node`'s
/// `config.rs`; acceptors always learn, so `learners` stays empty).
pub fn node_config(
    node: u32,
    ports: &[u16],
    data_dir: &Path,
    streams: u32,
    mode: Mode,
    limits: &[String],
) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "cluster = 1");
    let _ = writeln!(s, "node = {node}");
    let _ = writeln!(s, "listen = \"127.0.0.1:{}\"", ports[node as usize - 1]);
    let _ = writeln!(s, "data_dir = {:?}", data_dir.display().to_string());
    let _ = writeln!(s, "\n[peers]");
    for (i, port) in ports.iter().enumerate() {
        let _ = writeln!(s, "{} = \"127.0.0.1:{port}\"", i + 1);
    }
    let members = NODES.map(|n| n.to_string()).join(", ");
    for stream in 1..=streams {
        let _ = writeln!(s, "\n[[streams]]");
        let _ = writeln!(s, "id = {stream}");
        let _ = writeln!(s, "acceptors = [{members}]");
        let _ = writeln!(s, "storage = \"{}\"", mode.as_str());
        if !limits.is_empty() {
            let _ = writeln!(s, "[streams.limits]");
            for line in limits {
                let _ = writeln!(s, "{line}");
            }
        }
    }
    s
}

/// Node 1's report (`--report`), read leniently: missing fields are zero.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default)]
pub struct NodeReport {
    pub values: u64,
    pub bytes: u64,
    pub values_all: u64,
    pub window_micros: u64,
    pub latency_p50_micros: u64,
    pub latency_p99_micros: u64,
    pub latency_max_micros: u64,
    pub delivered: DigestPoint,
    pub digest_checkpoints: Vec<DigestPoint>,
}

/// A prefix of a node's delivery order: its length and a hash chain over it.
#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(default)]
pub struct DigestPoint {
    pub count: u64,
    pub digest: u64,
}

/// Whether the learners delivered in one order, from their reports.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Agreement {
    /// Every prefix length two reports share has the same digest;
    /// `compared` such prefixes were checked (0 if none overlapped).
    Agree { compared: usize },
    /// A prefix of `count` values differs between node 1 and `node`.
    Differ { node: u32, count: u64 },
    /// A peer wrote no report (killed before it could).
    Missing,
}

impl Agreement {
    pub fn label(&self) -> String {
        match self {
            Agreement::Agree { compared } if *compared > 0 => "yes".into(),
            Agreement::Agree { .. } => "unchecked".into(),
            Agreement::Differ { node, count } => format!("NO (node {node} at {count})"),
            Agreement::Missing => "unchecked".into(),
        }
    }
}

/// Compares node 1's delivery checkpoints with each peer's.
pub fn agreement(node1: &NodeReport, peers: &[(u32, Option<NodeReport>)]) -> Agreement {
    let mut compared = 0;
    let mut missing = false;
    for (node, peer) in peers {
        let Some(peer) = peer else {
            missing = true;
            continue;
        };
        let mut points = peer.digest_checkpoints.clone();
        points.push(peer.delivered);
        for p in points {
            let mine = node1
                .digest_checkpoints
                .iter()
                .chain(std::iter::once(&node1.delivered))
                .find(|q| q.count == p.count);
            if let Some(q) = mine {
                if q.digest != p.digest {
                    return Agreement::Differ {
                        node: *node,
                        count: p.count,
                    };
                }
                compared += 1;
            }
        }
    }
    if missing && compared == 0 {
        Agreement::Missing
    } else {
        Agreement::Agree { compared }
    }
}

/// What one scenario measured.
#[derive(Clone, Debug)]
pub struct Measured {
    pub report: NodeReport,
    /// Delivery order of node 1 against nodes 2 and 3.
    pub agreement: Agreement,
    /// 1-minute load average when the scenario ended (other processes on a
    /// 2-CPU machine distort the figures).
    pub load1: Option<f64>,
    /// CPU use of nodes 1, 2 and 3 over their lives, in % of one CPU.
    pub cpu_percent: [Option<f64>; 3],
    /// Distinct WARN/ERROR messages from the nodes' logs (first few).
    pub warnings: Vec<String>,
    /// A node said it ran a durable mode on a memory log.
    pub durable_fallback: bool,
    /// Bytes sent per link over the payload delivered (from `ss`).
    pub links: Option<LinkReport>,
    /// Values node 1 delivered in each second of its run (from its
    /// once-a-second `status delivered=N` lines), warmup included.
    pub timeline: Vec<u64>,
    pub msgs_per_s: f64,
    pub mb_per_s: f64,
}

impl Measured {
    pub fn from_report(report: NodeReport) -> Result<Measured, String> {
        if report.window_micros == 0 {
            return Err("report has an empty measurement window".into());
        }
        let secs = report.window_micros as f64 / 1e6;
        Ok(Measured {
            agreement: Agreement::Agree { compared: 0 },
            load1: None,
            cpu_percent: [None; 3],
            warnings: Vec::new(),
            durable_fallback: false,
            links: None,
            timeline: Vec::new(),
            msgs_per_s: report.values as f64 / secs,
            mb_per_s: report.bytes as f64 / secs / 1e6,
            report,
        })
    }
}

/// Everything the driver needs to run scenarios.
#[derive(Clone, Debug)]
pub struct RunSettings {
    pub amulet: PathBuf,
    pub seconds: u64,
    pub warmup_ms: u64,
    pub keep_data: bool,
    /// `key = value` lines for every stream's `[streams.limits]`.
    pub limits: Vec<String>,
    /// Sample per-link bytes with `ss` while node 1 runs.
    pub link_stats: bool,
}

/// Runs one scenario in `dir`: three nodes, node 1 loads and reports.
pub fn run_scenario(
    settings: &RunSettings,
    scenario: &Scenario,
    dir: &Path,
) -> Result<Measured, String> {
    fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let ports = free_ports(NODES.len()).map_err(|e| format!("free ports: {e}"))?;
    let duration_ms = settings.seconds * 1000;
    // `--duration-ms` bounds the node's whole run; the load's warmup starts
    // at its first offer, so node 1 runs warmup + measurement + set-up.
    let node1_ms = settings.warmup_ms + duration_ms + STARTUP_MS;
    let report_path = dir.join("report.json");
    let _ = fs::remove_file(&report_path);
    for node in &NODES[1..] {
        let _ = fs::remove_file(peer_report(dir, *node));
    }
    let mut children = Children::default();
    // Peers first, so node 1 finds them listening; they stop by themselves
    // a little after node 1 should have finished (a safety net if this
    // driver dies), and are killed once node 1 is done.
    let peer_ms = node1_ms + 5_000;
    for &node in NODES.iter().rev() {
        let data_dir = dir.join(format!("data-{node}"));
        fs::create_dir_all(&data_dir).map_err(|e| format!("{}: {e}", data_dir.display()))?;
        let config = dir.join(format!("node-{node}.toml"));
        let text = node_config(
            node,
            &ports,
            &data_dir,
            scenario.streams,
            scenario.mode,
            &merged_limits(&settings.limits, &scenario.limits),
        );
        fs::write(&config, text).map_err(|e| format!("{}: {e}", config.display()))?;
        let log = dir.join(format!("node-{node}.log"));
        let log = fs::File::create(&log).map_err(|e| format!("{}: {e}", log.display()))?;
        let log_err = log.try_clone().map_err(|e| e.to_string())?;
        let mut cmd = Command::new(&settings.amulet);
        cmd.arg("node").arg("--config").arg(&config);
        if node == 1 {
            let streams: Vec<String> = (1..=scenario.streams).map(|s| s.to_string()).collect();
            cmd.arg("--load-streams")
                .arg(streams.join(","))
                .arg("--load-value-bytes")
                .arg(scenario.value_bytes.to_string())
                .arg("--load-window")
                .arg(scenario.window.to_string())
                .arg("--load-warmup-ms")
                .arg(settings.warmup_ms.to_string())
                .arg("--duration-ms")
                .arg(node1_ms.to_string())
                .arg("--report")
                .arg(&report_path);
        } else {
            cmd.arg("--duration-ms")
                .arg(peer_ms.to_string())
                .arg("--report")
                .arg(peer_report(dir, node));
        }
        cmd.stdin(Stdio::null())
            .stdout(Stdio::from(log))
            .stderr(Stdio::from(log_err))
            .env(
                "RUST_LOG",
                std::env::var("RUST_LOG").unwrap_or("warn".into()),
            );
        let child = cmd
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", settings.amulet.display()))?;
        children.push(&format!("node-{node}"), child);
        if node != 1 {
            thread::sleep(Duration::from_millis(100));
        }
    }
    let started = now();
    let limit = Duration::from_millis(node1_ms) + GRACE;
    let pids = NODES
        .iter()
        .filter_map(|&n| children.pid(&format!("node-{n}")).map(|pid| (pid, n)))
        .collect();
    let listen = NODES.iter().map(|&n| (ports[n as usize - 1], n)).collect();
    let mut sampler = LinkSampler::new(pids, listen);
    let status = children.wait_for_with("node-1", limit, || {
        if settings.link_stats {
            sampler.maybe_sample();
        }
    });
    let took = started.elapsed();
    // Peers' log lines after node 1 stopped are about node 1 going away.
    let peer_log_len: Vec<u64> = NODES[1..]
        .iter()
        .map(|n| fs::metadata(dir.join(format!("node-{n}.log"))).map_or(0, |m| m.len()))
        .collect();
    let cpu_percent = NODES.map(|n| children.cpu_percent(&format!("node-{n}")));
    // Stop the peers cleanly (SIGTERM), then kill whatever is left.
    for node in ["node-2", "node-3"] {
        children.terminate(node);
    }
    for node in ["node-2", "node-3"] {
        children.wait_for(node, Duration::from_secs(3));
    }
    children.kill_all();
    if !settings.keep_data {
        for node in NODES {
            let _ = fs::remove_dir_all(dir.join(format!("data-{node}")));
        }
    }
    let log_tail = || tail(&dir.join("node-1.log"), 12);
    match status {
        None => {
            return Err(format!(
                "node 1 did not finish within {limit:?} (killed){}",
                log_tail()
            ))
        }
        Some(status) if !status.success() => {
            return Err(format!(
                "node 1 exited with {status} after {took:.1?}{}",
                log_tail()
            ))
        }
        Some(_) => {}
    }
    let text = fs::read_to_string(&report_path)
        .map_err(|e| format!("no report {}: {e}{}", report_path.display(), log_tail()))?;
    let report: NodeReport = serde_json::from_str(&text).map_err(|e| format!("bad report: {e}"))?;
    let peers: Vec<(u32, Option<NodeReport>)> = NODES[1..]
        .iter()
        .map(|&node| {
            let report = fs::read_to_string(peer_report(dir, node))
                .ok()
                .and_then(|t| serde_json::from_str(&t).ok());
            (node, report)
        })
        .collect();
    let agreement = agreement(&report, &peers);
    let mut measured = Measured::from_report(report)?;
    measured.agreement = agreement;
    measured.load1 = load_average();
    measured.cpu_percent = cpu_percent;
    let payload = measured.report.delivered.count * scenario.value_bytes as u64;
    measured.links = LinkReport::new(&sampler.links(), payload);
    let logs: Vec<String> = NODES
        .iter()
        .enumerate()
        .map(|(i, n)| {
            let text = fs::read_to_string(dir.join(format!("node-{n}.log"))).unwrap_or_default();
            match i.checked_sub(1).map(|p| peer_log_len[p] as usize) {
                Some(len) if len < text.len() => {
                    let mut cut = len;
                    while !text.is_char_boundary(cut) {
                        cut -= 1;
                    }
                    text[..cut].to_string()
                }
                _ => text,
            }
        })
        .collect();
    measured.warnings = warnings(&logs, 5);
    measured.timeline = timeline(&logs[0]);
    measured.durable_fallback = logs.iter().any(|l| l.contains(DURABLE_FALLBACK));
    Ok(measured)
}

/// `--stream-limit` lines with the scenario's own limits replacing any of
/// the same key (TOML refuses a key twice).
pub fn merged_limits(global: &[String], own: &[(&str, u64)]) -> Vec<String> {
    let key = |line: &str| line.split('=').next().unwrap_or("").trim().to_string();
    let mut out: Vec<String> = global
        .iter()
        .filter(|line| !own.iter().any(|(k, _)| key(line) == *k))
        .cloned()
        .collect();
    out.extend(own.iter().map(|(k, v)| format!("{k} = {v}")));
    out
}

fn peer_report(dir: &Path, node: u32) -> PathBuf {
    dir.join(format!("report-{node}.json"))
}

/// Per-second deliveries from `status delivered=N` lines (cumulative N).
pub fn timeline(log: &str) -> Vec<u64> {
    let mut last = 0;
    let mut out = Vec::new();
    for line in log.lines() {
        let Some(rest) = line.strip_prefix("status delivered=") else {
            continue;
        };
        let Some(n) = rest
            .split_whitespace()
            .next()
            .and_then(|v| v.parse::<u64>().ok())
        else {
            continue;
        };
        out.push(n.saturating_sub(last));
        last = n;
    }
    out
}

/// What the node logs when a durable mode runs on a memory log.
const DURABLE_FALLBACK: &str = "durable acceptor log not available";

/// Distinct WARN and ERROR messages, at most `max`: deduplicated on level,
/// target and message (fields such as `peer=` dropped), each shown as its
/// first occurrence with its fields (timestamp dropped) and a count.
pub fn warnings(logs: &[String], max: usize) -> Vec<String> {
    let mut out: Vec<(String, String, usize)> = Vec::new();
    for line in logs.iter().flat_map(|l| l.lines()) {
        let Some(at) = line.find(" WARN ").or_else(|| line.find(" ERROR ")) else {
            continue;
        };
        let text = line[at + 1..].trim();
        let key: Vec<&str> = text
            .split_whitespace()
            .take_while(|w| !w.contains('='))
            .collect();
        let key = key.join(" ");
        if let Some(entry) = out.iter_mut().find(|(k, _, _)| *k == key) {
            entry.2 += 1;
        } else if out.len() < max {
            out.push((key, text.to_string(), 1));
        }
    }
    out.into_iter()
        .map(|(_, text, n)| {
            if n > 1 {
                format!("{text} (x{n})")
            } else {
                text
            }
        })
        .collect()
}

/// The 1-minute load average (Linux), if readable.
pub fn load_average() -> Option<f64> {
    fs::read_to_string("/proc/loadavg")
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// The last `lines` lines of a log, indented, for error messages.
fn tail(path: &Path, lines: usize) -> String {
    let text = fs::read_to_string(path).unwrap_or_default();
    let all: Vec<&str> = text.lines().collect();
    let start = all.len().saturating_sub(lines);
    if start == all.len() {
        return String::new();
    }
    let mut s = format!("\n  last lines of {}:", path.display());
    for line in &all[start..] {
        let _ = write!(s, "\n    {line}");
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_lists_peers_and_streams() {
        let limits = vec!["pipeline_instances_max = 128".to_string()];
        let text = node_config(
            2,
            &[7001, 7002, 7003],
            Path::new("/d/x"),
            2,
            Mode::Sync,
            &limits,
        );
        assert_eq!(text.matches("[streams.limits]").count(), 2);
        assert!(text.contains("\npipeline_instances_max = 128\n"));
        assert!(text.contains("node = 2\n"));
        assert!(text.contains("listen = \"127.0.0.1:7002\""));
        assert!(text.contains("data_dir = \"/d/x\""));
        assert!(text.contains("3 = \"127.0.0.1:7003\""));
        assert_eq!(text.matches("[[streams]]").count(), 2);
        assert!(text.contains("acceptors = [1, 2, 3]"));
        assert!(!text.contains("learners"));
        assert!(text.contains("storage = \"sync\""));
    }

    #[test]
    fn warnings_are_deduplicated() {
        let logs = vec![
            "2026-11-23T03:12:04Z  WARN amulet_node::storage_setup: durable acceptor log \
             not available yet: using a memory log stream=s1\nstatus delivered=5\n"
                .to_string(),
            "2026-11-23T03:12:05Z  WARN amulet_node::storage_setup: durable acceptor log \
             not available yet: using a memory log stream=s2\n\
             2026-11-23T03:12:07Z ERROR amulet_node::x: boom peer=n1\n"
                .to_string(),
        ];
        let w = warnings(&logs, 5);
        assert_eq!(
            w,
            vec![
                "WARN amulet_node::storage_setup: durable acceptor log not available yet: \
                 using a memory log stream=s1 (x2)",
                "ERROR amulet_node::x: boom peer=n1",
            ]
        );
        assert!(logs[0].contains(DURABLE_FALLBACK));
    }

    #[test]
    fn timeline_from_status_lines() {
        let log = "status delivered=9128 digest=e0\nnoise\nstatus delivered=11167 digest=f3\n\
                   final node=1 delivered=12000\nstatus delivered=x\n";
        assert_eq!(timeline(log), vec![9128, 2039]);
    }

    #[test]
    fn scenario_limits_win() {
        let global = vec![
            "pipeline_instances_max = 64".to_string(),
            "batch_bytes_max = 65536".to_string(),
        ];
        assert_eq!(
            merged_limits(&global, &[("pipeline_instances_max", 256)]),
            vec!["batch_bytes_max = 65536", "pipeline_instances_max = 256"]
        );
        assert_eq!(merged_limits(&global, &[]), global);
    }

    fn point(count: u64, digest: u64) -> DigestPoint {
        DigestPoint { count, digest }
    }

    #[test]
    fn agreement_compares_common_prefixes() {
        let node1 = NodeReport {
            delivered: point(2500, 9),
            digest_checkpoints: vec![point(1024, 1), point(2048, 2)],
            ..NodeReport::default()
        };
        let same = NodeReport {
            delivered: point(2100, 7),
            digest_checkpoints: vec![point(1024, 1), point(2048, 2)],
            ..NodeReport::default()
        };
        let peers = vec![(2, Some(same.clone())), (3, Some(same.clone()))];
        assert_eq!(agreement(&node1, &peers), Agreement::Agree { compared: 4 });
        let mut other = same;
        other.digest_checkpoints[1].digest = 5;
        let peers = vec![(2, None), (3, Some(other))];
        assert_eq!(
            agreement(&node1, &peers),
            Agreement::Differ {
                node: 3,
                count: 2048
            }
        );
        assert_eq!(agreement(&node1, &[(2, None)]), Agreement::Missing);
    }

    #[test]
    fn ports_are_distinct() {
        let ports = free_ports(3).unwrap();
        assert!(ports[0] != ports[1] && ports[1] != ports[2] && ports[0] != ports[2]);
    }

    #[test]
    fn report_rates() {
        let report: NodeReport = serde_json::from_str(
            r#"{"values": 1000, "bytes": 2000000, "values_all": 1200,
                "window_micros": 500000, "latency_p50_micros": 800,
                "latency_p99_micros": 2500, "latency_max_micros": 9000,
                "digest": "abc"}"#,
        )
        .unwrap();
        let m = Measured::from_report(report).unwrap();
        assert_eq!(m.msgs_per_s, 2000.0);
        assert_eq!(m.mb_per_s, 4.0);
        assert!(Measured::from_report(NodeReport::default()).is_err());
    }

    #[test]
    fn guard_kills_children() {
        let mut children = Children::default();
        let child = Command::new("sleep").arg("30").spawn().unwrap();
        let id = child.id();
        children.push("sleeper", child);
        assert!(children
            .wait_for("sleeper", Duration::from_millis(50))
            .is_none());
        children.sample_cpu();
        assert!(children.cpu_percent("sleeper").is_some());
        drop(children);
        let alive = Path::new(&format!("/proc/{id}")).exists()
            && !fs::read_to_string(format!("/proc/{id}/stat"))
                .unwrap_or_default()
                .contains(") Z");
        assert!(!alive, "child {id} survived the guard");
    }
}
