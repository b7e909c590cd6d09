//! Amulet's TLS: who may talk to a node, proven by certificates from the
//! cluster's CA.
//!
//! - [`TlsFiles`]: the PEM files of one party (the CA certificate, its own
//!   certificate chain and key) and the directory layout `amulet cert` and
//!   `amulet dev` write.
//! - [`Identity`]: what a certificate says its holder is, a node (its id)
//!   or a user (a name), read from a `urn:amulet:...` subject alternative
//!   name. A peer must be a node whose id matches its Hello; a client must
//!   be a user.
//! - [`TlsContext`]: the rustls configurations built from the files, built
//!   again when a file changes (certificate rotation without a restart).
//! - [`create`]: certificate creation (rcgen) for a CA, nodes and users.
//! - [`Token`]: bearer tokens (`amt1.ID.SECRET`) for clients without a
//!   certificate.
#![deny(missing_docs)]

mod context;
pub mod create;
mod error;
mod files;
mod identity;
mod token;

pub use context::TlsContext;
pub use error::TlsError;
pub use files::TlsFiles;
pub use identity::{identity_of, node_server_name, Identity, NODE_SERVER_NAME};
pub use rustls;
pub use token::{bearer, Token, TokenFormatError, TOKEN_PREFIX};
pub use tokio_rustls;
