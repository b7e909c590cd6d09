//! Why TLS material could not be loaded, created or accepted.

use std::path::PathBuf;

/// A TLS failure; every variant names what to fix.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// A file could not be read.
    #[error("cannot read {path}: {error}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        error: std::io::Error,
    },
    /// A file could not be written.
    #[error("cannot write {path}: {error}")]
    Write {
        /// The file.
        path: PathBuf,
        /// Why.
        error: std::io::Error,
    },
    /// A file holds no usable PEM of the kind needed.
    #[error("{path}: {what}")]
    Pem {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        what: String,
    },
    /// rustls refused the material (a key that does not match, ...).
    #[error("TLS configuration: {0}")]
    Config(String),
    /// A certificate names no Amulet identity, or more than one.
    #[error("certificate identity: {0}")]
    Identity(String),
    /// Certificate creation failed.
    #[error("certificate creation: {0}")]
    Create(String),
    /// A file that `create` would write exists already.
    #[error("{0} exists; remove it first or choose another directory")]
    Exists(PathBuf),
}
