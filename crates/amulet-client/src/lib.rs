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
#![deny(missing_docs)]
// The client is an I/O shell, not a protocol core: the wall clock (attempt
// timeouts, session renewal) and OS randomness (session ids, replica
// choice) are its inputs, unlike in the simulated crates.
#![allow(clippy::disallowed_methods)]

mod batcher;
mod client;
mod config;
mod error;
mod map;
mod session_pool;
mod snapshot;

pub use amulet_dmap::{KeyBound, Nearest};
pub use amulet_tuple as tuple;
pub use bytes::Bytes;
pub use client::Client;
pub use config::ClientConfig;
pub use error::Error;
pub use map::DMap;
pub use snapshot::Snapshot;
