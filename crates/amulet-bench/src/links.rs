//! Bytes each node sent to each other node, from the kernel's TCP socket
//! statistics (`ss -tinp`): checks the payload-carrying hop count that the
//! 32 KiB target divides by, instead of only assuming it.
//!
//! Each node dials every peer's listen port with one outbound connection,
//! so a socket owned by node i's process whose peer port is node j's listen
//! port is the link i -> j; its `bytes_sent` counts what i sent to j.
//! Sampled while node 1 runs; the last sample lags the end by at most one
//! sampling period.

use crate::clock::now;
use std::collections::BTreeMap;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How often `ss` runs while a scenario goes on.
const PERIOD: Duration = Duration::from_millis(250);

/// Tracks bytes sent per link (src node, dst node).
pub struct LinkSampler {
    /// Process id to node id.
    pids: BTreeMap<u32, u32>,
    /// Listen port to node id.
    ports: BTreeMap<u16, u32>,
    /// Per socket (src, dst, local port): highest bytes_sent seen.
    sockets: BTreeMap<(u32, u32, u16), u64>,
    next: Option<Instant>,
    /// `ss` ran and parsed at least once.
    pub available: bool,
}

impl LinkSampler {
    pub fn new(pids: BTreeMap<u32, u32>, ports: BTreeMap<u16, u32>) -> LinkSampler {
        LinkSampler {
            pids,
            ports,
            sockets: BTreeMap::new(),
            next: None,
            available: false,
        }
    }

    /// Samples if a period has passed since the last sample.
    pub fn maybe_sample(&mut self) {
        if self.next.is_some_and(|t| now() < t) {
            return;
        }
        self.next = Some(now() + PERIOD);
        self.sample();
    }

    /// Runs `ss` once (bounded to a second) and records what it shows.
    pub fn sample(&mut self) {
        let Ok(child) = Command::new("ss")
            .args(["-tinpH", "state", "established"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
        else {
            return;
        };
        let Ok(out) = crate::cluster::wait_output(child, Duration::from_secs(1)) else {
            return;
        };
        if !out.status.success() {
            return;
        }
        self.parse(&String::from_utf8_lossy(&out.stdout));
    }

    /// Reads `ss -tinpH` output: a socket line, then an indented line of
    /// TCP info with `bytes_sent:N` (absent when nothing was sent).
    pub fn parse(&mut self, text: &str) {
        self.available = true;
        let mut current: Option<(u32, u32, u16)> = None;
        for line in text.lines() {
            if !line.starts_with(char::is_whitespace) {
                current = self.socket_of(line);
                continue;
            }
            let Some(key) = current.take() else {
                continue;
            };
            let sent = line
                .split_whitespace()
                .find_map(|w| w.strip_prefix("bytes_sent:"))
                .and_then(|v| v.parse::<u64>().ok())
                .unwrap_or(0);
            let entry = self.sockets.entry(key).or_insert(0);
            *entry = (*entry).max(sent);
        }
    }

    /// (src node, dst node, local port) of an outbound socket of ours.
    fn socket_of(&self, line: &str) -> Option<(u32, u32, u16)> {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let local = fields.get(2)?;
        let peer = fields.get(3)?;
        let local_port: u16 = local.rsplit(':').next()?.parse().ok()?;
        let peer_port: u16 = peer.rsplit(':').next()?.parse().ok()?;
        let dst = *self.ports.get(&peer_port)?;
        let at = line.find("pid=")? + 4;
        let pid: u32 = line[at..]
            .split(|c: char| !c.is_ascii_digit())
            .next()?
            .parse()
            .ok()?;
        let src = *self.pids.get(&pid)?;
        Some((src, dst, local_port))
    }

    /// Bytes sent per link, summed over its sockets (a reconnect opens a
    /// new one).
    pub fn links(&self) -> BTreeMap<(u32, u32), u64> {
        let mut out = BTreeMap::new();
        for (&(src, dst, _), &bytes) in &self.sockets {
            *out.entry((src, dst)).or_insert(0) += bytes;
        }
        out
    }
}

/// Per-link bytes over the payload node 1 delivered.
#[derive(Clone, Debug, Default)]
pub struct LinkReport {
    /// (src, dst, bytes sent / payload bytes delivered at node 1).
    pub ratios: Vec<(u32, u32, f64)>,
}

impl LinkReport {
    pub fn new(links: &BTreeMap<(u32, u32), u64>, payload_bytes: u64) -> Option<LinkReport> {
        if payload_bytes == 0 || links.is_empty() {
            return None;
        }
        let ratios = links
            .iter()
            .map(|(&(s, d), &b)| (s, d, b as f64 / payload_bytes as f64))
            .collect();
        Some(LinkReport { ratios })
    }

    /// Links that carried at least half the payload: the payload hops.
    pub fn payload_links(&self) -> usize {
        self.ratios.iter().filter(|(_, _, r)| *r >= 0.5).count()
    }

    /// Sum over the links: payload crossings per delivered byte.
    pub fn total(&self) -> f64 {
        self.ratios.iter().map(|(_, _, r)| r).sum()
    }

    /// `1>2:1.01 2>3:1.01 3>1:0.00`, links with (almost) nothing left out.
    pub fn describe(&self) -> String {
        self.ratios
            .iter()
            .filter(|(_, _, r)| *r >= 0.005)
            .map(|(s, d, r)| format!("{s}>{d}:{r:.2}"))
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// Waits until `deadline` while sampling (used by tests).
#[cfg(test)]
fn sample_until(sampler: &mut LinkSampler, deadline: crate::clock::Deadline) {
    while !deadline.passed() {
        sampler.maybe_sample();
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SS: &str = "\
0       0       127.0.0.1:33450 127.0.0.1:39647 users:((\"amulet\",pid=4204,fd=12))
\t bbr wscale:10,10 rto:204 mss:65483 bytes_sent:2759333315 bytes_retrans:2125205 bytes_acked:2757208111
0       0       127.0.0.1:39647 127.0.0.1:33450 users:((\"amulet\",pid=4194,fd=11))
\t bbr wscale:10,10 bytes_received:2757208110 segs_out:11727
0       0       127.0.0.1:40002 127.0.0.1:41625 users:((\"amulet\",pid=4194,fd=14))
\t bbr bytes_sent:3455976 bytes_acked:3455977
0       0       127.0.0.1:50000 127.0.0.1:41625 users:((\"other\",pid=999,fd=14))
\t bbr bytes_sent:77
0       0       127.0.0.1:33464 127.0.0.1:39647 users:((\"amulet\",pid=4207,fd=12))
\t bbr wscale:10,10 bytes_acked:1
";

    #[test]
    fn parses_links_from_ss() {
        // Node 3 = pid 4194 listens on 39647; node 1 = 4207 on 41625.
        let pids = BTreeMap::from([(4194, 3), (4204, 2), (4207, 1)]);
        let ports = BTreeMap::from([(39647, 3), (41625, 1), (42901, 2)]);
        let mut s = LinkSampler::new(pids, ports);
        s.parse(SS);
        // A later sample with more bytes, and a second socket after a
        // reconnect, add up per link.
        s.parse(
            "0 0 127.0.0.1:33451 127.0.0.1:39647 users:((\"amulet\",pid=4204,fd=15))\n\
             \t bytes_sent:100\n",
        );
        let links = s.links();
        assert_eq!(links.get(&(2, 3)), Some(&(2_759_333_315 + 100)));
        assert_eq!(links.get(&(3, 1)), Some(&3_455_976));
        assert_eq!(links.get(&(1, 3)), Some(&0));
        assert_eq!(links.len(), 3);
        let report = LinkReport::new(&links, 2_759_333_415).unwrap();
        assert_eq!(report.payload_links(), 1);
        assert_eq!(report.describe(), "2>3:1.00");
        assert!((report.total() - 1.0).abs() < 0.01);
    }

    #[test]
    fn sampling_without_matches_is_harmless() {
        let mut s = LinkSampler::new(BTreeMap::new(), BTreeMap::new());
        sample_until(
            &mut s,
            crate::clock::Deadline::after(Duration::from_millis(30)),
        );
        assert!(s.links().is_empty());
        assert!(LinkReport::new(&s.links(), 10).is_none());
    }
}
