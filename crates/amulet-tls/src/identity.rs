//! What a certificate says its holder is. Amulet names identities in a
//! subject alternative name URI, `urn:amulet:node:<id>` or
//! `urn:amulet:user:<name>`, so one CA can sign both and a node
//! certificate cannot pass for a user's or the other way round. Node
//! certificates also carry the DNS names [`NODE_SERVER_NAME`] (what
//! clients verify) and `node-<id>.amulet` (what a peer dialing that node
//! verifies, so a node cannot answer for another).

use crate::TlsError;
use amulet_types::NodeId;
use x509_parser::extensions::GeneralName;

/// The DNS name every node certificate carries; clients verify it.
pub const NODE_SERVER_NAME: &str = "amulet-node";
const NODE_URN: &str = "urn:amulet:node:";
const USER_URN: &str = "urn:amulet:user:";

/// A certificate holder.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Identity {
    /// A node of the cluster.
    Node(NodeId),
    /// A client's user.
    User(String),
}

impl std::fmt::Display for Identity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Identity::Node(node) => write!(f, "node {}", node.0),
            Identity::User(user) => write!(f, "user {user:?}"),
        }
    }
}

/// The DNS name node `node`'s certificate carries for its peers.
pub fn node_server_name(node: NodeId) -> String {
    format!("node-{}.amulet", node.0)
}

/// The URI naming `identity` in a certificate.
pub fn identity_uri(identity: &Identity) -> String {
    match identity {
        Identity::Node(node) => format!("{NODE_URN}{}", node.0),
        Identity::User(user) => format!("{USER_URN}{user}"),
    }
}

/// Whether `user` is a name a certificate may carry: 1-64 of
/// `[A-Za-z0-9_.-]`, so it is also a file name and a log field.
pub fn valid_user(user: &str) -> bool {
    (1..=64).contains(&user.len())
        && user
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'.' || b == b'-')
}

/// The identity the DER certificate `der` names: exactly one Amulet URI.
/// (The chain was verified by rustls before this is asked.)
pub fn identity_of(der: &[u8]) -> Result<Identity, TlsError> {
    let (_, cert) = x509_parser::parse_x509_certificate(der)
        .map_err(|e| TlsError::Identity(format!("undecodable certificate: {e}")))?;
    let names = cert
        .subject_alternative_name()
        .map_err(|e| TlsError::Identity(format!("bad subject alternative names: {e}")))?;
    let mut found = None;
    for name in names.iter().flat_map(|n| n.value.general_names.iter()) {
        let GeneralName::URI(uri) = name else {
            continue;
        };
        let identity = if let Some(id) = uri.strip_prefix(NODE_URN) {
            let id = id
                .parse::<u32>()
                .map_err(|_| TlsError::Identity(format!("bad node id in {uri:?}")))?;
            Identity::Node(NodeId(id))
        } else if let Some(user) = uri.strip_prefix(USER_URN) {
            if !valid_user(user) {
                return Err(TlsError::Identity(format!("bad user name in {uri:?}")));
            }
            Identity::User(user.to_string())
        } else {
            continue;
        };
        if found.replace(identity).is_some() {
            return Err(TlsError::Identity(
                "the certificate names more than one Amulet identity".into(),
            ));
        }
    }
    found.ok_or_else(|| {
        TlsError::Identity(
            "the certificate names no Amulet identity (urn:amulet:node:ID or urn:amulet:user:NAME)"
                .into(),
        )
    })
}
