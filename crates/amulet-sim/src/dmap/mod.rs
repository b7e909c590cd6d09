//! DMap under simulation: partitions of three replicas, each node a real
//! [`amulet_multicast::MulticastNode`] (its partition's stream and the
//! global stream) feeding a real [`amulet_smr::Replica`] of
//! [`amulet_dmap::PartitionState`], over the same faulty network and
//! nemesis as the multicast swarm. Simulated clients with sessions issue
//! single- and multi-partition map operations and snapshot scans, retry
//! on timeouts and stale maps, and record a history that the
//! linearizability checker judges against [`SortedMapModel`].

mod client;
mod cluster;
mod model;
mod txn_client;
mod workload;

pub use cluster::{
    run_access_seed, run_dmap_pauses_only_seed, run_dmap_seed, run_dmap_with, run_fields_seed,
    run_logs_seed, run_txn_seed, ClientKind, DmapBug, Draws, PinnedBefore, WithoutLoadSplits,
};
pub use model::{MapOp, Observed, SortedMapModel};
