//! DMap's state machine (DMap §III; thesis ch. 5): the named, bytewise
//! ordered maps one partition holds, executed deterministically over the
//! order the multicast layer delivers.
//!
//! This crate knows nothing of streams, replicas or partition maps. The
//! replication layer (`amulet-smr`) routes each [`MapCommand`] to the
//! partitions that hold its keys, has every replica of those partitions
//! [`PartitionState::execute`] it at the same point of the order, and
//! [`combine`]s the partial replies of a command that spans partitions
//! (size, range reads, putAll, snapshots, ...) into the one reply the
//! client sees.
//!
//! Maps are persistent B-trees (`imbl::OrdSet`s of entries): cloning one is O(1) and shares structure, so a
//! snapshot for an iterator is a clone held until it is released or its
//! lease ends, and writers never wait for readers (design decision 9).
#![deny(missing_docs)]

mod combine;
mod command;
mod conflict_range;
mod entries;
mod error;
pub mod field_record;
mod limits;
mod log;
pub mod log_segments;
mod map_name;
mod partition_state;
mod reply;
mod smr_machine;
mod transaction;

pub use combine::combine;
pub use command::{KeyBound, KeyRange, MapCommand, Nearest, RangeQuery, ReadConflict, TxnWrite};
pub use conflict_range::{conflict_range, read_range};
pub use entries::{Entries, Stored};
pub use error::MapError;
pub use limits::MapLimits;
pub use log::{Log, LogRead, Refused};
pub use map_name::MapName;
pub use partition_state::{
    ExecContext, Holders, PartitionCheckpoint, PartitionState, SnapshotId, SnapshotPage, TxnBugs,
};
pub use reply::{Entry, MapReply};
pub use transaction::{ReadVersion, TransactionCheckpoint};
