//! The Rust client of Amulet.
//!
//! ```no_run
//! # async fn demo() -> Result<(), amulet_client::Error> {
//! let client = amulet_client::Client::connect(["127.0.0.1:7101"]).await?;
//! let users = client.create_map_if_absent("users").await?;
//! users.put("alice", "admin").await?;
//! // Typed keys: FoundationDB tuples sort like their values.
//! use amulet_client::tuple::{pack, Element};
//! users.put(pack(&[Element::from("user"), Element::from(42i64)]), "x").await?;
//! assert_eq!(users.get("alice").await?.as_deref(), Some(&b"admin"[..]));
//! let mut all = users.snapshot().await?;
//! while let Some((key, value)) = all.next().await? {
//!     println!("{key:?} = {value:?}");
//! }
//! # Ok(()) }
//! ```
//!
//! The client caches the partition map and refreshes it when a node says
//! it is stale; it sends each operation to a random replica of the
//! partition that holds the key (after a failed attempt, to another one);
//! it runs every operation in a session
//! and resends it with the same sequence number after a timeout or a lost
//! connection, so that an operation applies once however often it is
//! sent (DMap §III-B). Sessions come from a pool, one per operation in
//! flight, so a `Client` is shared freely between tasks. Operations that
//! tasks issue to the same node at the same time travel together in one
//! ExecuteBatch call (each with its own session, sequence and outcome).
//!
//! The rules behind all this (routing, resends, sessions) live in
//! [`rules`], which never reads the clock or draws randomness itself: the
//! client passes its [`Clock`]'s time and its generator (both from a
//! [`ClientEnv`], real ones by default), and the simulator passes virtual
//! time and its seed's generator, so both run the same rules.
#![deny(missing_docs)]

mod access;
mod batcher;
mod bulk_load;
mod client;
mod config;
mod env;
mod error;
pub mod eventual;
mod log;
mod map;
mod membership;
mod node_channel;
mod read_versions;
mod reconfigure;
pub mod rules;
mod scan;
mod session_pool;
mod snapshot;
mod transaction;

pub use amulet_dmap::{field_record, KeyBound, Nearest};
pub use amulet_tls::TlsFiles;
pub use amulet_tuple as tuple;
pub use bulk_load::{BulkLoad, BulkLoaded};
pub use bytes::Bytes;
pub use client::Client;
pub use config::{BearerToken, ClientConfig, TOKEN_ENV};
pub use env::{ClientEnv, Clock, TokioClock};
pub use error::Error;
pub use eventual::{Context, EventualMap, Versioned};
pub use log::{DLog, LogBounds, LogEntries, Tail};
pub use map::DMap;
pub use scan::Scan;
pub use snapshot::Snapshot;
pub use transaction::Transaction;
