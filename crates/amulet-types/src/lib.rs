//! Shared vocabulary of Amulet: the ids every layer speaks (node, stream,
//! instance, ballot, value id), time as an input, and stream configuration
//! with its named, validated limits.
#![deny(missing_docs)]

pub mod checkpoint_format;
mod config;
mod ids;
mod safe_report;

pub use config::{ConfigError, StorageMode, StreamConfig, StreamLimits};
pub use ids::{
    Ballot, Instance, MapVersion, NodeId, PartitionId, SessionId, StreamId, TimeMicros, ValueId,
};
pub use safe_report::SafeReport;
