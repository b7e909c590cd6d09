//! The PEM files one party needs, and the directory layout `amulet cert`
//! and `amulet dev` write: `ca.pem` (and `ca.key`, kept by whoever signs),
//! `node-<id>.pem`/`.key` for nodes, `<user>.pem`/`.key` for users.

use amulet_types::NodeId;
use std::path::{Path, PathBuf};

/// Environment variable naming a TLS directory clients use when they are
/// given no TLS configuration.
pub const TLS_DIR_ENV: &str = "AMULET_TLS_DIR";
/// Environment variable naming the user whose certificate clients present
/// from [`TLS_DIR_ENV`] (default `admin`).
pub const USER_ENV: &str = "AMULET_USER";
/// The user `amulet dev` creates.
pub const DEV_USER: &str = "admin";

/// The CA certificate to trust, and one's own certificate chain and key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TlsFiles {
    /// PEM certificate(s) of the cluster CA: the only roots trusted.
    pub ca: PathBuf,
    /// PEM certificate chain presented (leaf first).
    pub cert: PathBuf,
    /// PEM private key of the leaf (PKCS#8, SEC1 or PKCS#1).
    pub key: PathBuf,
}

impl TlsFiles {
    /// Node `node`'s files in `dir`.
    pub fn node(dir: &Path, node: NodeId) -> TlsFiles {
        TlsFiles {
            ca: ca_cert(dir),
            cert: dir.join(format!("node-{}.pem", node.0)),
            key: dir.join(format!("node-{}.key", node.0)),
        }
    }

    /// User `user`'s files in `dir`.
    pub fn user(dir: &Path, user: &str) -> TlsFiles {
        TlsFiles {
            ca: ca_cert(dir),
            cert: dir.join(format!("{user}.pem")),
            key: dir.join(format!("{user}.key")),
        }
    }

    /// Only the CA certificate `ca`, no certificate of one's own: for a
    /// client that authenticates with a bearer token.
    pub fn ca_only(ca: impl Into<PathBuf>) -> TlsFiles {
        TlsFiles {
            ca: ca.into(),
            cert: PathBuf::new(),
            key: PathBuf::new(),
        }
    }

    /// Whether a certificate of one's own is named (not [`TlsFiles::ca_only`]).
    pub fn has_certificate(&self) -> bool {
        !self.cert.as_os_str().is_empty()
    }

    /// The user files named by `AMULET_TLS_DIR` and `AMULET_USER`, if the
    /// first is set.
    pub fn from_env() -> Option<TlsFiles> {
        let dir = std::env::var_os(TLS_DIR_ENV).filter(|d| !d.is_empty())?;
        let user = std::env::var(USER_ENV)
            .ok()
            .filter(|u| !u.is_empty())
            .unwrap_or_else(|| DEV_USER.to_string());
        Some(TlsFiles::user(Path::new(&dir), &user))
    }

    /// The three paths, for messages and change detection.
    pub fn paths(&self) -> [&Path; 3] {
        [&self.ca, &self.cert, &self.key]
    }
}

/// The CA certificate in `dir`.
pub fn ca_cert(dir: &Path) -> PathBuf {
    dir.join("ca.pem")
}

/// The CA key in `dir`.
pub fn ca_key(dir: &Path) -> PathBuf {
    dir.join("ca.key")
}
