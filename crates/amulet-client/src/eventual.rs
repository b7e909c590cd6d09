//! Eventual maps (docs/eventual-maps.md): Dynamo-style maps that stay
//! writable on any side of a partition. A read returns every concurrent
//! value (siblings) with an opaque causal [`Context`]; a write or delete
//! given that context supersedes exactly what the read returned.
//!
//! ```no_run
//! # async fn demo(client: amulet_client::Client) -> Result<(), amulet_client::Error> {
//! use amulet_client::eventual::Context;
//! let carts = client.create_eventual_map("carts", 3).await?;
//! carts.put(b"alice", b"book", &Context::empty()).await?;
//! let read = carts.get(b"alice").await?; // siblings + context
//! carts.put(b"alice", b"book,pen", &read.context).await?; // supersedes them
//! # Ok(()) }
//! ```
//!
//! Any node takes a request and forwards it to the key's replicas. Reads
//! move on to another node when one does not answer; a write is sent once
//! more only when its node surely never took it (no connection).

use crate::{Client, Error};
use amulet_api::{pb, REASON_KEY};
use amulet_smr::{EventualLayout, Layout};
use bytes::Bytes;
use std::fmt;
use std::str::FromStr;
use std::time::Duration;
use tonic::Code;

/// How long one attempt waits (a node answers within its own 2.5 s).
const ATTEMPT_TIMEOUT: Duration = Duration::from_secs(5);
/// Nodes a read tries.
const READ_ATTEMPTS: usize = 3;

/// An opaque causal context: what a read saw. Give it back with the
/// write that replaces what it saw. Shown and parsed as hex.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Context(Bytes);

impl Context {
    /// The context of a write that saw nothing (it supersedes nothing: a
    /// blind write adds a sibling).
    pub fn empty() -> Context {
        Context(Bytes::new())
    }

    /// A context from the bytes a reply carried.
    pub fn from_bytes(bytes: impl Into<Bytes>) -> Context {
        Context(bytes.into())
    }

    /// The bytes to store or send.
    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }
}

impl fmt::Display for Context {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for b in self.0.iter() {
            write!(f, "{b:02x}")?;
        }
        Ok(())
    }
}

impl FromStr for Context {
    type Err = Error;

    fn from_str(s: &str) -> Result<Context, Error> {
        let bad = || Error::InvalidArgument(format!("a context is hex, not {s:?}"));
        if !s.len().is_multiple_of(2) {
            return Err(bad());
        }
        let bytes = (0..s.len())
            .step_by(2)
            .map(|i| s.get(i..i + 2).and_then(|h| u8::from_str_radix(h, 16).ok()))
            .collect::<Option<Vec<u8>>>()
            .ok_or_else(bad)?;
        Ok(Context(bytes.into()))
    }
}

/// A key's concurrent values and the context that covers them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Versioned {
    /// The siblings (one value unless writes were concurrent; none for a
    /// key never written or deleted).
    pub values: Vec<Bytes>,
    /// What to give back with the next write of the key.
    pub context: Context,
}

impl Versioned {
    fn from_pb(v: pb::Versioned) -> Versioned {
        Versioned {
            values: v.values,
            context: Context(v.context),
        }
    }
}

/// A handle on an eventual map. `r` and `w` (0: a majority of the map's
/// replicas) count the replicas a read hears from and a write is held by
/// before it answers.
#[derive(Clone)]
pub struct EventualMap {
    client: Client,
    name: String,
    r: u32,
    w: u32,
}

impl Client {
    /// Creates an eventual map with `replicas` replicas per key (on
    /// distinct nodes) and the default virtual nodes.
    pub async fn create_eventual_map(
        &self,
        name: &str,
        replicas: u32,
    ) -> Result<EventualMap, Error> {
        self.create_eventual_map_with(name, replicas, 0, false)
            .await
    }

    /// Creates an eventual map with `vnodes` virtual nodes (0: 16; rounded
    /// up to a multiple of the node count); with `merkle`, on the MerkleDB
    /// baseline's store (per-key clocks, tombstones, Merkle-tree
    /// anti-entropy), for comparisons.
    pub async fn create_eventual_map_with(
        &self,
        name: &str,
        replicas: u32,
        vnodes: u32,
        merkle: bool,
    ) -> Result<EventualMap, Error> {
        let layout = Layout::Eventual(EventualLayout {
            replicas,
            vnodes,
            placement: None,
            merkle,
        });
        self.create_map_with(name, layout).await?;
        self.eventual_map(name)
    }

    /// A handle on the eventual map `name` (which need not exist yet).
    pub fn eventual_map(&self, name: &str) -> Result<EventualMap, Error> {
        amulet_dmap::MapName::new(name).map_err(|e| Error::InvalidArgument(e.to_string()))?;
        Ok(EventualMap {
            client: self.clone(),
            name: name.to_string(),
            r: 0,
            w: 0,
        })
    }

    /// Whether `name` is an eventual map (`None`: no such map), by the
    /// partition map, fetched again when the cached one does not know it.
    pub async fn is_eventual(&self, name: &str) -> Option<bool> {
        let known = |client: &Client| {
            client
                .partition_map()
                .keyspaces
                .get(name)
                .map(|l| matches!(l, Layout::Eventual(_)))
        };
        if let Some(known) = known(self) {
            return Some(known);
        }
        self.refresh_map().await;
        known(self)
    }
}

impl Client {
    /// A random node other than those in `avoid` (while another is
    /// known): a request that failed at one goes elsewhere.
    pub(crate) fn node_avoiding(
        &self,
        avoid: &[String],
    ) -> Result<(crate::node_channel::NodeClient, String), Error> {
        let address = {
            let known: Vec<String> = self.node_addresses().into_values().collect();
            let mut candidates: Vec<String> = known
                .iter()
                .filter(|a| !avoid.contains(a))
                .cloned()
                .collect();
            if candidates.is_empty() {
                candidates = known;
            }
            let at = self.with_rng(|rng| rng.next_u64()) as usize % candidates.len().max(1);
            candidates
                .get(at)
                .cloned()
                .ok_or_else(|| Error::Unavailable("no node address known".into()))?
        };
        Ok((self.channel(&address)?, address))
    }
}

impl EventualMap {
    /// The map's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// This handle with read and write quorums `r` and `w` (0: majority).
    pub fn with_quorums(mut self, r: u32, w: u32) -> EventualMap {
        self.r = r;
        self.w = w;
        self
    }

    /// The siblings of `key` and their context.
    pub async fn get(&self, key: &[u8]) -> Result<Versioned, Error> {
        self.get_with(key, self.r).await
    }

    /// As [`EventualMap::get`], hearing from `r` replicas.
    pub async fn get_with(&self, key: &[u8], r: u32) -> Result<Versioned, Error> {
        let request = pb::EventualGetRequest {
            map: self.name.clone(),
            key: Bytes::copy_from_slice(key),
            r,
        };
        let mut last = Error::Unavailable("no node answered".into());
        let mut tried = Vec::new();
        for _ in 0..READ_ATTEMPTS {
            let (mut channel, address) = self.client.node_avoiding(&tried)?;
            let call = tokio::time::timeout(ATTEMPT_TIMEOUT, channel.eventual_get(request.clone()));
            match call.await {
                Ok(Ok(reply)) => return Ok(Versioned::from_pb(reply.into_inner())),
                Ok(Err(status)) if status.code() != Code::Unavailable => {
                    return Err(Error::from_status(&status))
                }
                Ok(Err(status)) => last = Error::from_status(&status),
                Err(_) => last = Error::Unavailable(format!("{address} did not answer in time")),
            }
            tried.push(address);
        }
        Err(last)
    }

    /// Writes `value` at `key`, superseding what `context` saw (an empty
    /// context supersedes nothing). Returns the siblings after the write
    /// at the replica that took it, and their context.
    pub async fn put(
        &self,
        key: &[u8],
        value: &[u8],
        context: &Context,
    ) -> Result<Versioned, Error> {
        self.write(key, Some(value), context, self.w).await
    }

    /// As [`EventualMap::put`], held by `w` replicas before it answers.
    pub async fn put_with(
        &self,
        key: &[u8],
        value: &[u8],
        context: &Context,
        w: u32,
    ) -> Result<Versioned, Error> {
        self.write(key, Some(value), context, w).await
    }

    /// Deletes what `context` saw of `key` (a concurrent write stays). No
    /// tombstone is kept.
    pub async fn delete(&self, key: &[u8], context: &Context) -> Result<Versioned, Error> {
        self.write(key, None, context, self.w).await
    }

    /// As [`EventualMap::delete`], held by `w` replicas.
    pub async fn delete_with(
        &self,
        key: &[u8],
        context: &Context,
        w: u32,
    ) -> Result<Versioned, Error> {
        self.write(key, None, context, w).await
    }

    /// Reads `key`, calls `merge` with its siblings (to resolve them into
    /// one value, like a shopping cart's union), and writes the result
    /// with the read's context.
    pub async fn update(
        &self,
        key: &[u8],
        merge: impl FnOnce(&[Bytes]) -> Vec<u8>,
    ) -> Result<Versioned, Error> {
        let read = self.get(key).await?;
        let value = merge(&read.values);
        self.put(key, &value, &read.context).await
    }

    async fn write(
        &self,
        key: &[u8],
        value: Option<&[u8]>,
        context: &Context,
        w: u32,
    ) -> Result<Versioned, Error> {
        let key = Bytes::copy_from_slice(key);
        let context = context.0.clone();
        let mut tried = Vec::new();
        for _ in 0..READ_ATTEMPTS {
            let (mut channel, address) = self.client.node_avoiding(&tried)?;
            let call = async {
                match value {
                    Some(v) => {
                        let request = pb::EventualPutRequest {
                            map: self.name.clone(),
                            key: key.clone(),
                            value: Bytes::copy_from_slice(v),
                            context: context.clone(),
                            w,
                        };
                        channel.eventual_put(request).await
                    }
                    None => {
                        let request = pb::EventualDeleteRequest {
                            map: self.name.clone(),
                            key: key.clone(),
                            context: context.clone(),
                            w,
                        };
                        channel.eventual_delete(request).await
                    }
                }
            };
            match tokio::time::timeout(ATTEMPT_TIMEOUT, call).await {
                Ok(Ok(reply)) => return Ok(Versioned::from_pb(reply.into_inner())),
                Ok(Err(status)) if never_taken(&status) => tried.push(address),
                Ok(Err(status)) if status.code() == Code::Unavailable => {
                    return Err(Error::OutcomeUnknown(format!(
                        "{} (the write may have taken effect at some replicas)",
                        status.message()
                    )))
                }
                Ok(Err(status)) => return Err(Error::from_status(&status)),
                Err(_) => {
                    return Err(Error::OutcomeUnknown(format!(
                        "{address} did not answer in time (the write may have taken effect)"
                    )))
                }
            }
        }
        Err(Error::Unavailable("no node took the write".into()))
    }
}

/// Whether a failed call surely never reached a node's service (no
/// connection), so sending it elsewhere cannot apply it twice.
fn never_taken(status: &tonic::Status) -> bool {
    status.code() == Code::Unavailable
        && status.metadata().get(REASON_KEY).is_none()
        && status.message() != "the node is stopping"
        && (status.message().contains("connect") || status.message().contains("transport"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_context_round_trips_through_its_hex_form() {
        let context = Context::from_bytes(vec![1u8, 0xab, 0]);
        assert_eq!(context.to_string(), "01ab00");
        assert_eq!("01ab00".parse::<Context>().unwrap(), context);
        assert_eq!("".parse::<Context>().unwrap(), Context::empty());
        assert!("0".parse::<Context>().is_err());
        assert!("zz".parse::<Context>().is_err());
    }
}
