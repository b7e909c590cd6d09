//! The host core: what a node does between the network, its disks and the
//! protocol cores, written once and run by both the node runtime
//! (`amulet-node`: tokio, TCP, files) and the simulator (`amulet-sim`:
//! virtual time, a faulty network, simulated disks).
//!
//! A [`Host`] owns a node's [`amulet_multicast::MulticastNode`] (its
//! streams and merges) and its [`amulet_smr::Replica`]s. It is sans-IO in
//! the manner of etcd's `RawNode` (Ready/Advance) and openraft's engine
//! (`Command`s): the runtime feeds it inputs (peer messages, client
//! requests, ticks with the time, completions of checkpoint writes and
//! reads), calls [`Host::flush`], and carries out the [`Command`]s it
//! drains (send a message, answer a client, write, read or remove a
//! checkpoint file). The host never reads the clock, never draws a random
//! number and never touches a file: acceptor logs are the runtime's
//! [`amulet_storage::AcceptorLog`]s (opened through a [`LogOpener`]), and
//! checkpoint files are commands.
//!
//! What lives here, one concept per file:
//!
//! | concept | file | paper |
//! |---|---|---|
//! | starting from checkpoints | `start.rs` | thesis §3.4.2 |
//! | the flush loop and group commit | `flush.rs` | thesis A.3, A.4 |
//! | the client edge (requests, snapshot pages, "behind") | `edge.rs` | DMap §III-B |
//! | checkpoint scheduling, taking checkpoints | `checkpointer.rs`, `checkpointing.rs` | thesis §3.4.2 |
//! | the checkpoint file format | `checkpoint_codec.rs` | thesis §3.4.2 |
//! | safe instances and trimming | `trimming.rs` | thesis §3.4.2 |
//! | state transfer, both sides, chunked | `state_transfer.rs`, `recovery.rs` | thesis §3.4.2, §3.4.4 |
//! | fences: splits, merges, stream replacements | `fences.rs` | DMap §III-C, thesis §4.7 |
//! | moves: adoption and hand-off | `hand_off.rs` | DMap §III-C |
//! | tailing logs from a local replica, per-log status | `log_tail.rs` | thesis §3.5.2 |
//! | the balancer (splits, merges, moves) | `balancer.rs` | DynaTree Alg. 1–4 |
//! | load windows for splits by load | `load.rs` | DynaTree's oracle |
//! | invariants checked after every step | `invariants.rs` | |
#![deny(missing_docs)]

mod balancer;
mod checkpoint_codec;
mod checkpointer;
mod checkpointing;
mod command;
mod config;
mod edge;
mod fences;
mod flush;
mod hand_off;
mod healing;
mod host;
mod invariants;
mod late_streams;
mod leaving;
mod load;
mod log_tail;
mod monitoring;
mod recovery;
mod signal_asks;
mod start;
mod state_transfer;
mod status;
mod storage;
mod trimming;
mod weight_reports;

pub use balancer::{BalancerConfig, BalancerDecision, BALANCER_DECISIONS_KEPT};
pub use checkpoint_codec::{
    decode_checkpoint, encode_checkpoint, encode_checkpoint_to, CheckpointBody,
};
pub use checkpointer::{CheckpointStats, Lanes};
pub use command::{CheckpointFile, Command, Durability, Token, WriteId, WriteOutcome};
pub use config::{
    HostBugs, HostConfig, ReplicaBugs, ASYNC_SYNC_INTERVAL_MICROS, CATCHING_UP_LAG,
    FLUSH_ROUNDS_PER_CALL, LIVELOCK_ROUNDS, TRANSFER_RETRY_AFTER_MICROS, TRIM_INTERVAL_MICROS,
};
pub use edge::{PageAnswer, ReadAtAnswer};
pub use flush::Flushed;
pub use host::{Host, HostCounters, HostError, StartError};
pub use load::LOAD_WINDOW_MICROS;
pub use log_tail::{LogStatus, TailAnswer};
pub use monitoring::MembershipCounters;
pub use status::{CheckpointStatus, ReplicaStatus, StreamStatus};
pub use storage::{runtime_stream_config, LogOpener};
