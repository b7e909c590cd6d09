//! The client's side of TLS: the cluster CA as the only root, the user's
//! certificate presented, and the node's certificate required to name
//! `amulet-node` (every node certificate from the cluster CA does; a
//! user's does not, so a client cannot be answered by another client).

use crate::Error;
use amulet_tls::{TlsFiles, NODE_SERVER_NAME};
use tonic::transport::{Certificate, ClientTlsConfig, Identity};

/// Reads `files` once, for every connection the client opens.
pub(crate) fn client_tls(files: &TlsFiles) -> Result<ClientTlsConfig, Error> {
    let read = |path: &std::path::Path| {
        std::fs::read(path).map_err(|e| {
            Error::InvalidArgument(format!("TLS: cannot read {}: {e}", path.display()))
        })
    };
    let (ca, cert, key) = (read(&files.ca)?, read(&files.cert)?, read(&files.key)?);
    Ok(ClientTlsConfig::new()
        .ca_certificate(Certificate::from_pem(ca))
        .identity(Identity::from_pem(cert, key))
        .domain_name(NODE_SERVER_NAME))
}
