//! The Amulet node runtime: the real-world shell around the sans-IO
//! protocol cores. It reads a node's configuration, opens its acceptor
//! logs, links it to its peers over TCP, and runs the event loop that
//! feeds [`amulet_multicast::MulticastNode`] and carries out what it asks
//! (sends, group-commit syncs, deliveries). An in-node load generator
//! measures throughput and latency without a client protocol.
#![deny(missing_docs)]

mod access_api;
mod api_connection;
mod balancer_status;
mod balancer_switch;
mod checkpoint_store;
mod client_api;
mod client_limits;
pub mod config;
mod digest;
mod eventual_api;
mod eventual_store;
mod inbound;
mod injected_bug;
pub mod load;
mod log_segment_store;
mod membership_api;
mod metrics;
mod node_handle;
mod outbound;
mod read_streams;
mod runtime;
mod storage_setup;
mod transport;

pub use checkpoint_store::{CheckpointBody, CheckpointError, CheckpointStore};
pub use config::{
    dmap_cluster_toml, free_local_ports, local_cluster_toml, local_dmap_cluster_toml,
    local_dmap_placement, ConfigError, NodeConfig,
};
pub use digest::{common_prefix, DigestPoint, CHECKPOINT_EVERY_VALUES};
pub use load::{LoadReport, LoadSpec};
pub use node_handle::{
    CheckpointStatus, HandleError, NodeHandle, NodeStats, PageAnswer, ReplicaStatus, StreamStatus,
};
pub use runtime::{EventualAnswer, Node, NodeReport};
