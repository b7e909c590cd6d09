//! The denominators of the 32 KiB targets, measured in the same run:
//! loopback TCP throughput (a blast over one connection in this process
//! and, when `iperf3` is on the PATH, iperf3 itself) for memory mode, and
//! the disk's sequential fdatasync throughput for the durable modes.

use crate::clock::{now, Deadline};
use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::process::{Command, Stdio};
use std::thread;
use std::time::Duration;

/// Bytes per write of the blast sender.
const CHUNK: usize = 64 * 1024;

/// Loopback figures measured in this run, in MB/s (10^6 bytes).
#[derive(Clone, Debug, Default)]
pub struct Loopback {
    pub blast_mb_per_s: Option<f64>,
    pub iperf3_mb_per_s: Option<f64>,
    /// Why iperf3 gave no figure, when it did not.
    pub iperf3_note: Option<String>,
    /// The disk under the nodes' data: one writer appending 32 KiB and
    /// fdatasyncing after each write ([`disk_fdatasync`]).
    pub disk_mb_per_s: Option<f64>,
}

impl Loopback {
    /// The denominator: the higher of the two figures (the stricter target).
    pub fn best(&self) -> Option<f64> {
        match (self.blast_mb_per_s, self.iperf3_mb_per_s) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        }
    }

    /// Which measurement `best` comes from.
    pub fn source(&self) -> &'static str {
        match (self.blast_mb_per_s, self.iperf3_mb_per_s) {
            (Some(a), Some(b)) if b >= a => "iperf3",
            (Some(_), _) => "blast",
            (None, Some(_)) => "iperf3",
            (None, None) => "none",
        }
    }
}

/// Bytes per write of the disk baseline: one 32 KiB value per group
/// commit, the durable scenarios' worst case.
const DISK_CHUNK: usize = 32 * 1024;

/// The disk's sequential fdatasync throughput in MB/s: one writer appends
/// 32 KiB to a new file in `dir` and fdatasyncs after each write, for
/// `seconds` (the file is removed). Each of the three nodes writes every
/// payload byte to a log on this disk, so a third of it is what one
/// durable stream can get.
pub fn disk_fdatasync(dir: &std::path::Path, seconds: f64) -> std::io::Result<f64> {
    std::fs::create_dir_all(dir)?;
    let path = dir.join("disk-baseline.tmp");
    let mut file = std::fs::File::create(&path)?;
    let chunk = vec![0x5a_u8; DISK_CHUNK];
    let started = now();
    let deadline = Deadline::after(Duration::from_secs_f64(seconds));
    let mut total = 0u64;
    let result = loop {
        if deadline.passed() {
            break Ok(());
        }
        if let Err(e) = file.write_all(&chunk).and_then(|()| file.sync_data()) {
            break Err(e);
        }
        total += DISK_CHUNK as u64;
    };
    let elapsed = started.elapsed().as_secs_f64();
    drop(file);
    let _ = std::fs::remove_file(&path);
    result?;
    Ok(total as f64 / elapsed.max(1e-9) / 1e6)
}

/// One TCP connection on 127.0.0.1; one thread writes 64 KiB chunks for
/// `seconds`, another reads and counts. Returns MB/s as the receiver saw it.
pub fn blast(seconds: f64) -> std::io::Result<f64> {
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let addr = listener.local_addr()?;
    // Connect before accepting: the backlog completes the handshake, so the
    // receiver's accept cannot wait for a client that never comes.
    let mut sender = TcpStream::connect(addr)?;
    let (receiver, _) = listener.accept()?;
    receiver.set_read_timeout(Some(Duration::from_secs(10)))?;
    sender.set_write_timeout(Some(Duration::from_secs(10)))?;
    let reader = thread::spawn(move || -> std::io::Result<(u64, f64)> {
        let mut receiver = receiver;
        let mut buf = vec![0u8; 256 * 1024];
        let mut total = 0u64;
        let mut started = None;
        loop {
            let n = receiver.read(&mut buf)?;
            if n == 0 {
                break;
            }
            started.get_or_insert_with(now);
            total += n as u64;
        }
        let elapsed = started.map_or(0.0, |s| s.elapsed().as_secs_f64());
        Ok((total, elapsed))
    });
    let chunk = vec![0xA5u8; CHUNK];
    let deadline = Deadline::after(Duration::from_secs_f64(seconds));
    while !deadline.passed() {
        sender.write_all(&chunk)?;
    }
    sender.shutdown(Shutdown::Write)?;
    drop(sender);
    let (total, elapsed) = reader
        .join()
        .map_err(|_| std::io::Error::other("blast receiver panicked"))??;
    if elapsed <= 0.0 {
        return Err(std::io::Error::other("blast received nothing"));
    }
    Ok(total as f64 / elapsed / 1e6)
}

/// Whether an executable named `name` is on the PATH.
pub fn on_path(name: &str) -> bool {
    std::env::var_os("PATH").is_some_and(|paths| {
        std::env::split_paths(&paths).any(|dir| {
            let candidate = dir.join(name);
            candidate.is_file()
        })
    })
}

/// `iperf3 -s -1` and `iperf3 -c 127.0.0.1 -t seconds -J`; MB/s received.
pub fn iperf3(seconds: u64) -> Result<f64, String> {
    let port = crate::cluster::free_ports(1).map_err(|e| e.to_string())?[0];
    let server = Command::new("iperf3")
        .args(["-s", "-1", "-B", "127.0.0.1", "-p", &port.to_string()])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("cannot start iperf3 server: {e}"))?;
    let mut guard = crate::cluster::Children::default();
    guard.push("iperf3-server", server);
    let mut last_error = String::new();
    for _ in 0..3 {
        thread::sleep(Duration::from_millis(500));
        let client = Command::new("iperf3")
            .args(["-c", "127.0.0.1", "-p", &port.to_string()])
            .args(["-t", &seconds.to_string(), "-J"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot start iperf3 client: {e}"))?;
        let limit = Duration::from_secs(seconds + 15);
        match crate::cluster::wait_output(client, limit) {
            Ok(out) if out.status.success() => {
                return parse_iperf3(&String::from_utf8_lossy(&out.stdout));
            }
            Ok(out) => {
                last_error = format!(
                    "iperf3 client exited with {}: {}",
                    out.status,
                    String::from_utf8_lossy(&out.stdout)
                        .lines()
                        .find(|l| l.contains("\"error\""))
                        .unwrap_or("")
                        .trim()
                );
            }
            Err(e) => last_error = e,
        }
    }
    Err(last_error)
}

/// MB/s from iperf3's JSON: `end.sum_received.bits_per_second`.
pub fn parse_iperf3(json: &str) -> Result<f64, String> {
    let v: serde_json::Value =
        serde_json::from_str(json).map_err(|e| format!("iperf3 JSON: {e}"))?;
    let end = &v["end"];
    let bps = end["sum_received"]["bits_per_second"]
        .as_f64()
        .or_else(|| end["sum"]["bits_per_second"].as_f64())
        .ok_or_else(|| "iperf3 JSON has no end.sum_received.bits_per_second".to_string())?;
    Ok(bps / 8.0 / 1e6)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blast_moves_bytes() {
        let mb = blast(0.2).expect("blast");
        assert!(mb > 1.0, "loopback at {mb} MB/s");
    }

    #[test]
    fn iperf3_json() {
        let json = r#"{"end":{"sum_sent":{"bits_per_second":8e10},
            "sum_received":{"bits_per_second":4e10}}}"#;
        assert_eq!(parse_iperf3(json).unwrap(), 5000.0);
        assert!(parse_iperf3("{}").is_err());
    }

    #[test]
    fn disk_baseline_writes_and_cleans_up() {
        let dir = std::env::temp_dir().join(format!("amulet-disk-baseline-{}", std::process::id()));
        let mb = disk_fdatasync(&dir, 0.05).unwrap();
        assert!(mb > 0.0);
        assert!(!dir.join("disk-baseline.tmp").exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn best_is_the_higher() {
        let l = Loopback {
            blast_mb_per_s: Some(3000.0),
            iperf3_mb_per_s: Some(4000.0),
            iperf3_note: None,
            disk_mb_per_s: None,
        };
        assert_eq!(l.best(), Some(4000.0));
        assert_eq!(l.source(), "iperf3");
        assert_eq!(Loopback::default().best(), None);
    }
}
