//! Transport peers and client addresses that follow the view
//! (docs/membership.md, "Joining a running cluster"): a node that joined
//! after this one started is named by no configuration file here, only by
//! the view (its peer address from its `Join`, and the client address it
//! gave). Once this node's newest view names it, the transport links to
//! it (writes to it, accepts its connections) and the client API tells
//! clients where it serves, with the partition map.

use super::EventLoop;
use amulet_membership::Membership;
use amulet_types::NodeId;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, RwLock};

/// Every node's client API address by id, as the client API tells
/// clients: the configuration's (`[smr] clients`), then those joiners gave.
pub(crate) type ClientAddresses = Arc<RwLock<BTreeMap<NodeId, String>>>;

/// What the event loop has taken from the view so far.
pub(crate) struct ViewPeers {
    /// The membership last followed (a new one is a new `Arc`: replicas
    /// change it copy-on-write).
    followed: Option<Arc<Membership>>,
    /// Shared with the client API.
    addresses: ClientAddresses,
}

impl ViewPeers {
    /// Starting from the configured client addresses (`addresses`).
    pub(crate) fn new(addresses: ClientAddresses) -> ViewPeers {
        ViewPeers {
            followed: None,
            addresses,
        }
    }
}

impl EventLoop {
    /// Links to every member of this node's newest view it has no link
    /// to, and learns the client addresses joiners gave. Cheap when the
    /// membership is the one last followed (the common case: called on
    /// every tick).
    pub(super) fn follow_view(&mut self) {
        let Some(membership) = self.host.membership() else {
            return;
        };
        let followed = &self.view_peers.followed;
        if followed
            .as_ref()
            .is_some_and(|f| Arc::ptr_eq(f, &membership))
        {
            return;
        }
        for (node, member) in membership.view().nodes() {
            if *node == self.me {
                continue;
            }
            if let Some(transport) = self.transport.as_mut() {
                if !transport.has_peer(*node) {
                    // Joiners' addresses were checked at the edge;
                    // configured members' are in [peers] already.
                    match member.address.parse::<SocketAddr>() {
                        Ok(addr) => {
                            tracing::info!(peer = %node, %addr, "linking to a member the view added");
                            transport.add_peer(*node, addr);
                        }
                        Err(_) => {
                            tracing::debug!(peer = %node, address = %member.address, "a view member's address is not ip:port")
                        }
                    }
                }
            }
            if !member.client_address.is_empty() {
                let mut addresses = self.view_peers.addresses.write().expect("addresses lock");
                addresses
                    .entry(*node)
                    .or_insert_with(|| member.client_address.clone());
            }
        }
        self.view_peers.followed = Some(membership);
    }
}
