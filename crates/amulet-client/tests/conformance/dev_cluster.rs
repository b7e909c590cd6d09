//! The `amulet dev` cluster the conformance scenarios run against: one
//! process group on free 127.0.0.1 ports, stopped on drop.

use std::io::Read;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const PORT_LOW: u16 = 22000;
const PORT_HIGH: u16 = 22990;
const START_TIMEOUT: Duration = Duration::from_secs(60);
const STOP_TIMEOUT: Duration = Duration::from_secs(15);
/// The cluster stops itself after this long even if this process dies.
const LIFETIME_SECONDS: u64 = 900;

pub(crate) fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn amulet_bin() -> PathBuf {
    let path = std::env::var_os("AMULET_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_root().join("target/release/amulet"));
    assert!(
        path.is_file(),
        "no amulet binary at {}: build it (cargo build --release -p amulet) or set AMULET_BIN",
        path.display()
    );
    path
}

fn ports_free(ports: &[u16]) -> bool {
    ports
        .iter()
        .all(|p| TcpListener::bind(("127.0.0.1", *p)).is_ok())
}

/// An `amulet dev` cluster, stopped (its whole process group) on drop.
pub(crate) struct DevCluster {
    child: Option<Child>,
    dir: PathBuf,
    pub(crate) addresses: Vec<String>,
}

impl DevCluster {
    pub(crate) fn start() -> DevCluster {
        let binary = amulet_bin();
        let mut last = String::new();
        let seed = std::process::id() as u64
            ^ std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos() as u64;
        for attempt in 0..8u64 {
            let slots = u64::from((PORT_HIGH - 20 - PORT_LOW) / 20);
            let mixed = (seed.wrapping_add(attempt))
                .wrapping_mul(0x9e37_79b9_7f4a_7c15)
                .rotate_left(17);
            let base = PORT_LOW + 20 * (mixed % slots) as u16;
            let ports: Vec<u16> = [1, 2, 3, 11, 12, 13].iter().map(|i| base + i).collect();
            if !ports_free(&ports) {
                continue;
            }
            let dir = std::env::temp_dir().join(format!(
                "amulet-rs-conformance-{}-{attempt}",
                std::process::id()
            ));
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(&dir).unwrap();
            let log = std::fs::File::create(dir.join("dev.log")).unwrap();
            let child = {
                use std::os::unix::process::CommandExt;
                Command::new(&binary)
                    .arg("dev")
                    .arg("--dir")
                    .arg(&dir)
                    .args(["--base-port", &base.to_string()])
                    .args(["--storage", "memory"])
                    .args(["--seconds", &LIFETIME_SECONDS.to_string()])
                    .stdin(Stdio::null())
                    .stdout(log.try_clone().unwrap())
                    .stderr(log)
                    .process_group(0)
                    .spawn()
                    .expect("start amulet dev")
            };
            let mut cluster = DevCluster {
                child: Some(child),
                dir,
                addresses: (1..=3).map(|i| format!("127.0.0.1:{}", base + i)).collect(),
            };
            match cluster.wait_ready() {
                Ok(()) => return cluster,
                Err(e) => {
                    last = e;
                    cluster.stop();
                }
            }
        }
        panic!("could not start an amulet dev cluster: {last}");
    }

    /// The user `admin`'s TLS files `amulet dev` made.
    pub(crate) fn tls(&self) -> amulet_client::TlsFiles {
        amulet_client::TlsFiles::user(&self.dir.join("tls"), "admin")
    }

    fn log(&self) -> String {
        let mut text = String::new();
        if let Ok(mut f) = std::fs::File::open(self.dir.join("dev.log")) {
            let _ = f.read_to_string(&mut text);
        }
        text
    }

    fn wait_ready(&mut self) -> Result<(), String> {
        let deadline = Instant::now() + START_TIMEOUT;
        while Instant::now() < deadline {
            if let Some(status) = self.child.as_mut().unwrap().try_wait().unwrap() {
                return Err(format!("amulet dev exited with {status}: {}", self.log()));
            }
            if self.log().contains("serving clients") {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        Err(format!(
            "amulet dev not ready in {START_TIMEOUT:?}: {}",
            self.log()
        ))
    }

    fn signal_group(pid: u32, signal: &str) {
        let _ = Command::new("kill")
            .args([signal, "--", &format!("-{pid}")])
            .stderr(Stdio::null())
            .status();
    }

    fn stop(&mut self) {
        let Some(mut child) = self.child.take() else {
            return;
        };
        // SIGTERM lets `amulet dev` stop its nodes; then the whole group is
        // killed in case anything is left.
        Self::signal_group(child.id(), "-TERM");
        let deadline = Instant::now() + STOP_TIMEOUT;
        while Instant::now() < deadline {
            if child.try_wait().ok().flatten().is_some() {
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Self::signal_group(child.id(), "-KILL");
        let _ = child.kill();
        let _ = child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

impl Drop for DevCluster {
    fn drop(&mut self) {
        self.stop();
    }
}
