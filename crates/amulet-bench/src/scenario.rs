//! The scenario matrix and the acceptance targets.

use std::fmt;

/// Storage mode of every stream of a scenario.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Memory,
    Async,
    Sync,
}

impl Mode {
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Memory => "memory",
            Mode::Async => "async",
            Mode::Sync => "sync",
        }
    }
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Ring links that carry a value's bytes with 3 acceptors, proposer =
/// coordinator = node 1 and ring 1 -> 2 -> 3 (see `HOPS_RATIONALE`).
pub const PAYLOAD_HOPS: u32 = 2;

pub const HOPS_RATIONALE: &str = "\
Payload-carrying ring hops = 2. Node 1 proposes and, as the lowest live \
acceptor, coordinates every stream, so there is no proposer->coordinator hop. \
The ring is 1 -> 2 -> 3 in id order. Phase 2 carries the batch 1 -> 2 -> 3 \
(`coordinator.rs::send_phase2`/`on_phase2`: the last acceptor on the ring, \
node 3, decides). The decision then goes on 3 -> 1 -> 2, and \
`decide`/`learner.rs::on_decision` attach the batch only while \
`hops + 1 < ring.len()`, i.e. only to members that did not see phase 2; node \
1 and node 2 saw it, so the decision carries no payload. Each payload byte \
thus crosses 2 loopback links, and the 32 KiB target is \
0.5 x loopback / 2.";

/// 200 B values on one stream in memory mode must reach this.
pub const SMALL_TARGET_MSGS: f64 = 200_000.0;

/// The value size whose MB/s is held against loopback.
pub const LARGE_VALUE: usize = 32 * 1024;

/// One benchmark configuration.
#[derive(Clone, Debug)]
pub struct Scenario {
    /// `single` (one stream, size x mode) or `merge` (streams at one learner).
    pub group: &'static str,
    pub mode: Mode,
    pub streams: u32,
    pub value_bytes: usize,
    pub window: u32,
    /// `[streams.limits]` of this scenario (over `--stream-limit`).
    pub limits: Vec<(&'static str, u64)>,
}

impl Scenario {
    pub fn name(&self) -> String {
        format!(
            "{}-{}-{}-{}s",
            self.group,
            self.mode,
            size_label(self.value_bytes),
            self.streams
        )
    }
}

pub fn size_label(bytes: usize) -> String {
    if bytes >= 1024 && bytes.is_multiple_of(1024) {
        format!("{}KiB", bytes / 1024)
    } else {
        format!("{bytes}B")
    }
}

/// Stream limits of the `tuned` scenario.
pub const TUNED_LIMITS: [(&str, u64); 2] =
    [("memory_ring_slots", 1024), ("pipeline_instances_max", 256)];

/// Window of the `light` scenario (latency without queueing).
pub const LIGHT_WINDOW: u32 = 16;

/// Outstanding values that saturate a stream of `value_bytes` values.
/// Measured on the 2-CPU machine: 200 B gives the same msgs/s with 2048,
/// 4096 and 8192 outstanding (within run-to-run noise) but p50 3.6 ms
/// instead of 13 ms; 1 KiB likewise with 1024. 32 KiB: throughput is
/// window / latency until a CPU saturates; 256 gave 1298 MB/s against
/// 1067-1114 MB/s with 128 (2 runs each, 2026-11-23), p50 6.3 ms vs 3.7 ms.
pub fn default_window(value_bytes: usize) -> u32 {
    match value_bytes {
        0..=512 => 2048,
        513..=4096 => 1024,
        4097..=16384 => 512,
        _ => 256,
    }
}

/// Every scenario: {memory, async, sync} x {200 B, 1 KiB, 32 KiB} on one
/// stream, 1 KiB in memory with a window of 16 (latency without queueing),
/// 32 KiB in memory with limits for large values, then 1 KiB in memory
/// with 1, 2 and 4 streams merged at node 1.
pub fn matrix(window: Option<u32>) -> Vec<Scenario> {
    let mut all = Vec::new();
    for mode in [Mode::Memory, Mode::Async, Mode::Sync] {
        for value_bytes in [200, 1024, LARGE_VALUE] {
            all.push(Scenario {
                group: "single",
                mode,
                streams: 1,
                value_bytes,
                window: window.unwrap_or_else(|| default_window(value_bytes)),
                limits: vec![],
            });
        }
    }
    // Latency away from saturation: a few values outstanding.
    all.push(Scenario {
        group: "light",
        mode: Mode::Memory,
        streams: 1,
        value_bytes: 1024,
        window: LIGHT_WINDOW,
        limits: vec![],
    });
    // 32 KiB with limits sized for large values: a 1024-slot memory ring
    // (the default 16384 slots of 32 KiB batches, 512 MiB per node, take
    // seconds to fill, at a fraction of the speed) and 256 instances in
    // flight instead of 64.
    all.push(Scenario {
        group: "tuned",
        mode: Mode::Memory,
        streams: 1,
        value_bytes: LARGE_VALUE,
        window: window.unwrap_or(256),
        limits: TUNED_LIMITS.to_vec(),
    });
    for streams in [1, 2, 4] {
        all.push(Scenario {
            group: "merge",
            mode: Mode::Memory,
            streams,
            value_bytes: 1024,
            window: window.unwrap_or_else(|| default_window(1024)),
            limits: vec![],
        });
    }
    all
}

/// The acceptance target a scenario is held to, if any.
#[derive(Clone, Debug, PartialEq)]
pub enum Target {
    MbPerS(f64),
    MsgsPerS(f64),
}

impl Target {
    pub fn describe(&self) -> String {
        match self {
            Target::MbPerS(v) => format!(">= {v:.1} MB/s"),
            Target::MsgsPerS(v) => format!(">= {v:.0} msgs/s"),
        }
    }

    pub fn met(&self, msgs_per_s: f64, mb_per_s: f64) -> bool {
        match *self {
            Target::MbPerS(v) => mb_per_s >= v,
            Target::MsgsPerS(v) => msgs_per_s >= v,
        }
    }
}

/// The three nodes share the disk and each writes every payload byte.
pub const DISK_WRITERS: u32 = 3;

/// 32 KiB on one stream (default and tuned limits): in memory mode half of
/// loopback over the payload hops; in the durable modes half of the disk's
/// sequential fdatasync throughput over its [`DISK_WRITERS`]. 200 B on one
/// stream in memory: 200,000 msgs/s.
pub fn target(
    s: &Scenario,
    loopback_mb_per_s: Option<f64>,
    disk_mb_per_s: Option<f64>,
) -> Option<Target> {
    if !matches!(s.group, "single" | "tuned") || s.streams != 1 {
        return None;
    }
    if s.value_bytes == LARGE_VALUE {
        if s.mode != Mode::Memory {
            return disk_mb_per_s.map(|d| Target::MbPerS(0.5 * d / f64::from(DISK_WRITERS)));
        }
        return loopback_mb_per_s.map(|l| Target::MbPerS(0.5 * l / f64::from(PAYLOAD_HOPS)));
    }
    if s.value_bytes == 200 && s.mode == Mode::Memory {
        return Some(Target::MsgsPerS(SMALL_TARGET_MSGS));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matrix_has_every_scenario() {
        let all = matrix(None);
        assert_eq!(all.len(), 14);
        let names: Vec<String> = all.iter().map(Scenario::name).collect();
        assert!(names.contains(&"single-memory-200B-1s".to_string()));
        assert!(names.contains(&"single-sync-32KiB-1s".to_string()));
        assert!(names.contains(&"merge-memory-1KiB-4s".to_string()));
        assert!(names.contains(&"light-memory-1KiB-1s".to_string()));
        assert!(names.contains(&"tuned-memory-32KiB-1s".to_string()));
        let unique: std::collections::BTreeSet<_> = names.iter().collect();
        assert_eq!(unique.len(), names.len());
    }

    #[test]
    fn targets() {
        let all = matrix(None);
        let large = all
            .iter()
            .find(|s| s.value_bytes == LARGE_VALUE && s.mode == Mode::Memory)
            .unwrap();
        assert_eq!(
            target(large, Some(4000.0), Some(1.0)),
            Some(Target::MbPerS(1000.0))
        );
        assert_eq!(target(large, None, Some(1.0)), None);
        let durable = all
            .iter()
            .find(|s| s.value_bytes == LARGE_VALUE && s.mode != Mode::Memory && s.group == "single")
            .unwrap();
        assert_eq!(
            target(durable, Some(4000.0), Some(180.0)),
            Some(Target::MbPerS(30.0))
        );
        assert_eq!(target(durable, Some(4000.0), None), None);
        let small = &all[0];
        assert_eq!(
            target(small, Some(1.0), None),
            Some(Target::MsgsPerS(SMALL_TARGET_MSGS))
        );
        assert!(Target::MsgsPerS(10.0).met(10.0, 0.0));
        assert!(!Target::MbPerS(10.0).met(1e9, 9.9));
        let merge = all.iter().find(|s| s.group == "merge").unwrap();
        assert_eq!(target(merge, Some(1.0), None), None);
    }
}
