//! Partitioned state machine replication over atomic multicast (thesis
//! §2.7, ch. 5; DMap §III-B; S-SMR).
//!
//! A [`Replica`] of one partition executes a deterministic
//! [`StateMachine`] over the merged delivery of its partition's stream and
//! the global stream. It is sans-IO: the caller feeds it client requests,
//! delivered values, peer messages and ticks with the current time, and
//! drains [`Output`]s (values to multicast, messages to other replicas,
//! replies to clients).
//!
//! - The [`PartitionMap`] (token ring for hash-partitioned keyspaces, key
//!   ranges for range-partitioned ones, replica sets, versioned) is part of
//!   the replicated state and changes only through the global stream.
//!   Every command carries its client's map version; a stale one is
//!   answered with the current map.
//! - Commands of one partition go on its stream; commands that span
//!   partitions go on the global stream, and every involved replica sends
//!   its partial result to the other involved partitions and waits for one
//!   from each before it completes (the signal exchange of S-SMR).
//! - Client sessions make retries take effect once ([`SessionTable`]).
#![deny(missing_docs)]

mod access;
pub use amulet_types::checkpoint_format;
mod envelope;
mod fence;
mod hand_off;
mod healing;
mod load_sample;
mod map_error;
mod partition_map;
mod rebalancing;
mod reconfiguration;
mod refusal;
mod replica;
mod session_table;
mod split_at_key;
mod state_machine;
mod trim_point;
mod weighing;

pub use access::{
    AccessChange, AccessControl, AccessError, Need, Permission, Principal, TokenRecord,
    BOOTSTRAP_ADMIN, CLUSTER_ADMIN, EVERY_MAP,
};
pub use envelope::{Body, CommandEnvelope, Origin, ReplicaMessage};
pub use fence::{
    group_of, newest_map, open_stream, open_streams, work_fences, FenceDone, FenceHost,
};
pub use hand_off::{handed_off, replicas_to_hand_off};
pub use healing::{
    cluster_proposer, leave_blocker, next_global_repair, next_repair, GlobalStreamNow,
};
pub use load_sample::{load_median, LoadSample, LOAD_SAMPLES_MAX};
pub use map_error::{InvalidMap, PartitionMapError};
pub use partition_map::{
    next_range_start, starts_range, EventualLayout, Keys, Layout, PartitionInfo, PartitionMap,
    Placement,
};
pub use rebalancing::next_rebalance;
pub use reconfiguration::{Reconfiguration, StreamSpec};
pub use refusal::Refusal;
pub use replica::{
    ClientReply, ClientRequest, FenceWork, Output, Replica, ReplicaCheckpoint, ReplicaConfig,
    RequestId, RestoreError,
};
pub use session_table::{SessionCheck, SessionTable};
pub use state_machine::{ExecContext, KeyspaceChange, StateMachine};
pub use trim_point::{safe_to_report, trim_point, TrimQuorum};
pub use weighing::{next_weight_move, weigh, PartitionWeight, WEIGHT_OF_ALL};
