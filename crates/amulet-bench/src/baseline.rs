//! Loopback TCP throughput, the denominator of the 32 KiB target: a blast
//! over one connection in this process and, when `iperf3` is on the PATH,
//! iperf3 itself.

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
    fn best_is_the_higher() {
        let l = Loopback {
            blast_mb_per_s: Some(3000.0),
            iperf3_mb_per_s: Some(4000.0),
            iperf3_note: None,
        };
        assert_eq!(l.best(), Some(4000.0));
        assert_eq!(l.source(), "iperf3");
        assert_eq!(Loopback::default().best(), None);
    }
}
