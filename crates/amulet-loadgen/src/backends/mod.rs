//! Backends measured by the load generator; see the crate docs for adding
//! one.

pub mod amulet;
pub mod amulet_eventual;
#[cfg(feature = "etcd")]
pub mod etcd;
pub mod memory;
pub mod redis;
#[cfg(feature = "zookeeper")]
pub mod zookeeper;

/// Which of `connections` shared connections client `client` uses.
pub fn connection_for(client: usize, connections: usize) -> usize {
    client % connections.max(1)
}
