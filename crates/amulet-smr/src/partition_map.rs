//! The partition map (DMap §III; MRP-Store §3.5.1): which partition holds
//! a key of a keyspace, which stream orders each partition, and which
//! nodes replicate it. Versioned; changed only by commands of the global
//! stream, so every replica changes it at the same point of the order.

use crate::map_error::{InvalidMap, PartitionMapError};
use amulet_types::{MapVersion, NodeId, PartitionId, StreamId};
use bytes::Bytes;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::ops::Bound;

/// One partition: the stream that orders its commands and its replicas.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PartitionInfo {
    /// The partition's own stream.
    pub stream: StreamId,
    /// Nodes holding a replica.
    pub replicas: Vec<NodeId>,
}

/// How a keyspace (a named map) spreads its keys, chosen at creation.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Layout {
    /// By the key's 32-bit token on the map's token ring (DMap's scheme):
    /// even spread, but a range read touches every partition.
    Hash,
    /// By key ranges (MRP-Store §3.5.1): each entry is the least key of a
    /// range and the partition holding `[key, next key)`. The first key is
    /// empty. A range read inside one range is a single-partition command.
    Range(Vec<(Bytes, PartitionId)>),
    /// An eventual map (issue 23, docs/eventual-maps.md): its keys live on
    /// a ring of virtual nodes, not in partitions, and its data path does
    /// not go through the streams; only its placement is replicated here.
    Eventual(EventualLayout),
}

/// An eventual map's layout: what a request asks for, and the placement
/// the cluster made of it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct EventualLayout {
    /// Replicas per key (on distinct nodes).
    pub replicas: u32,
    /// Virtual nodes asked for (0: the default), before rounding up to a
    /// multiple of the node count.
    pub vnodes: u32,
    /// Made by the partition map when the keyspace is created (what a
    /// request carries here is ignored: placement is the cluster's).
    pub placement: Option<amulet_dotted::Placement>,
    /// The MerkleDB baseline's store, for comparisons.
    pub merkle: bool,
}

/// Which keys of which keyspace a command touches.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Placement {
    /// The keyspace; `None` for commands on every partition of the cluster
    /// (creating a keyspace, releasing a snapshot).
    pub keyspace: Option<String>,
    /// The keys.
    pub keys: Keys,
}

/// The keys a command touches within its keyspace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Keys {
    /// One key.
    One(Bytes),
    /// Several keys.
    Many(Vec<Bytes>),
    /// Every key between two bounds.
    Range(Bound<Bytes>, Bound<Bytes>),
    /// Every key.
    All,
    /// Keys of several keyspaces (a transaction's commit: its writes and
    /// read conflict ranges may name several maps). Used with
    /// `Placement::keyspace` `None`; involves the union of the partitions
    /// each part involves, and only those.
    Across(Vec<(String, Keys)>),
}

/// The partition map.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PartitionMap {
    /// Increases with every change.
    pub version: MapVersion,
    /// The stream every replica subscribes to; orders multi-partition
    /// commands and map changes.
    pub global_stream: StreamId,
    /// Partitions by id.
    pub partitions: BTreeMap<PartitionId, PartitionInfo>,
    /// Hash layout: `(first token, partition)` sorted by token, starting at
    /// token 0; a partition holds tokens up to the next entry's.
    pub token_ring: Vec<(u32, PartitionId)>,
    /// Keyspaces and their layouts.
    pub keyspaces: BTreeMap<String, Layout>,
    /// Streams created at run time by reconfigurations (the streams of
    /// the initial configuration are in the nodes' configuration files),
    /// so a node restarted or restored from a checkpoint opens them too.
    #[serde(default)]
    pub streams: BTreeMap<StreamId, crate::StreamSpec>,
    /// Streams no partition uses any more; their ids are never reused.
    #[serde(default)]
    pub retired_streams: BTreeSet<StreamId>,
    /// Partitions merged away, and the partition each merged into; their
    /// ids are never reused. A replica of a merged partition still running
    /// where the partition it merged into is already past the merge (it
    /// installed a peer's checkpoint) knows from this that it can go.
    #[serde(default)]
    pub merged: BTreeMap<PartitionId, PartitionId>,
    /// Each node's eventual store, by the random incarnation its
    /// directory was made with (issue 23: replica ids are never reused).
    /// A node hosts eventual replicas only while this names its store; a
    /// node that comes back with another store (the old one lost) has
    /// every eventual replica id it held replaced by a new one here.
    #[serde(default)]
    pub eventual_stores: BTreeMap<NodeId, u64>,
    /// Per partition, the nodes a move took it from whose hand-off has not
    /// been ordered done (`Body::HandedOff`): they may still hold its only
    /// state. A later move or stream replacement of the partition must
    /// keep them in its new stream, so their replicas carry on to it
    /// instead of dropping at its fence; a split or merge of it waits.
    /// Files of checkpoint format 7 and older predate it (empty).
    #[serde(default, deserialize_with = "handing_off_since_format_8")]
    pub handing_off: BTreeMap<PartitionId, BTreeSet<NodeId>>,
}

/// Decodes `PartitionMap::handing_off` of a checkpoint file of format 8 or
/// later; an older file has none (postcard is positional: nothing is read).
fn handing_off_since_format_8<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<BTreeMap<PartitionId, BTreeSet<NodeId>>, D::Error> {
    if crate::checkpoint_format::decoding_format() <= 7 {
        return Ok(BTreeMap::new());
    }
    BTreeMap::<PartitionId, BTreeSet<NodeId>>::deserialize(deserializer)
}

/// The token of a key: CRC-32C of its bytes (Castagnoli polynomial, as in
/// iSCSI and `java.util.zip.CRC32C`), so every client language computes it
/// with a standard library.
pub fn token(key: &[u8]) -> u32 {
    crc32c::crc32c(key)
}

impl PartitionMap {
    /// A stream id nobody used: one above every id the map knows (the
    /// global stream, the partitions' streams, the streams made at run
    /// time, the retired ones) and every id in `also_used` (streams that
    /// only nodes' configuration files name). Allocating from the map
    /// version a change is checked against makes the choice safe: a
    /// change built on an older map is refused as stale, and one naming a
    /// used stream as `StreamInUse`.
    pub fn next_stream_id(&self, also_used: impl IntoIterator<Item = StreamId>) -> StreamId {
        let known = std::iter::once(self.global_stream)
            .chain(self.partitions.values().map(|p| p.stream))
            .chain(self.streams.keys().copied())
            .chain(self.retired_streams.iter().copied())
            .chain(also_used);
        StreamId(known.map(|s| s.0).max().unwrap_or(0) + 1)
    }

    /// A partition id nobody used: one above every partition and every
    /// partition merged away (their ids are never reused).
    pub fn next_partition_id(&self) -> PartitionId {
        let known = self.partitions.keys().chain(self.merged.keys());
        PartitionId(known.map(|p| p.0).max().unwrap_or(0) + 1)
    }

    /// Version 1 of a map whose partitions split the token ring evenly.
    pub fn uniform(
        global_stream: StreamId,
        partitions: Vec<(PartitionId, PartitionInfo)>,
    ) -> PartitionMap {
        let count = partitions.len().max(1) as u64;
        let token_ring = partitions
            .iter()
            .enumerate()
            .map(|(i, (id, _))| ((((i as u64) << 32) / count) as u32, *id))
            .collect();
        PartitionMap {
            version: MapVersion(1),
            global_stream,
            partitions: partitions.into_iter().collect(),
            token_ring,
            keyspaces: BTreeMap::new(),
            streams: BTreeMap::new(),
            retired_streams: BTreeSet::new(),
            merged: BTreeMap::new(),
            eventual_stores: BTreeMap::new(),
            handing_off: BTreeMap::new(),
        }
    }

    /// Checks the structure: partitions with replicas and distinct streams,
    /// a token ring starting at 0 in increasing order over known
    /// partitions, range layouts starting at the empty key in increasing
    /// order over known partitions.
    pub fn validate(&self) -> Result<(), PartitionMapError> {
        if self.partitions.is_empty() {
            return Err(InvalidMap::NoPartitions.into());
        }
        let mut streams = vec![self.global_stream];
        for (id, info) in &self.partitions {
            if info.replicas.is_empty() {
                return Err(InvalidMap::NoReplicas(*id).into());
            }
            streams.push(info.stream);
        }
        streams.sort();
        if streams.windows(2).any(|w| w[0] == w[1]) {
            return Err(InvalidMap::SharedStream.into());
        }
        if self.token_ring.first().map(|e| e.0) != Some(0)
            || self.token_ring.windows(2).any(|w| w[0].0 >= w[1].0)
            || self
                .token_ring
                .iter()
                .any(|e| !self.partitions.contains_key(&e.1))
        {
            return Err(InvalidMap::BadTokenRing.into());
        }
        for (name, layout) in &self.keyspaces {
            if let Layout::Range(ranges) = layout {
                if ranges.first().map(|r| r.0.is_empty()) != Some(true)
                    || ranges.windows(2).any(|w| w[0].0 >= w[1].0)
                    || ranges.iter().any(|r| !self.partitions.contains_key(&r.1))
                {
                    return Err(InvalidMap::BadRanges(name.clone()).into());
                }
            }
        }
        Ok(())
    }

    /// The partition holding `key` of `keyspace`.
    pub fn partition_of(
        &self,
        keyspace: &str,
        key: &[u8],
    ) -> Result<PartitionId, PartitionMapError> {
        match self.layout(keyspace)? {
            Layout::Hash => Ok(self.token_owner(token(key))),
            Layout::Range(ranges) => Ok(range_owner(ranges, key)),
            Layout::Eventual(_) => Err(PartitionMapError::Eventual(keyspace.to_string())),
        }
    }

    fn token_owner(&self, token: u32) -> PartitionId {
        let at = self.token_ring.partition_point(|e| e.0 <= token);
        self.token_ring[at.checked_sub(1).expect("the ring starts at token 0")].1
    }

    fn layout(&self, keyspace: &str) -> Result<&Layout, PartitionMapError> {
        self.keyspaces
            .get(keyspace)
            .ok_or_else(|| PartitionMapError::UnknownKeyspace(keyspace.to_string()))
    }

    /// The partitions a command placed at `placement` involves, sorted.
    pub fn partitions_for(
        &self,
        placement: &Placement,
    ) -> Result<Vec<PartitionId>, PartitionMapError> {
        if let Keys::Across(parts) = &placement.keys {
            let mut involved = Vec::new();
            for (keyspace, keys) in parts {
                if matches!(keys, Keys::Across(_)) {
                    return Err(PartitionMapError::Invalid(InvalidMap::NestedPlacement));
                }
                involved.extend(self.partitions_for(&Placement {
                    keyspace: Some(keyspace.clone()),
                    keys: keys.clone(),
                })?);
            }
            involved.sort();
            involved.dedup();
            if involved.is_empty() {
                involved.extend(self.partitions.keys().next().copied());
            }
            return Ok(involved);
        }
        let Some(keyspace) = &placement.keyspace else {
            return Ok(self.partitions.keys().copied().collect());
        };
        let layout = self.layout(keyspace)?;
        let mut involved: Vec<PartitionId> = match (&placement.keys, layout) {
            (Keys::One(key), _) => vec![self.partition_of(keyspace, key)?],
            (Keys::Many(keys), _) => keys
                .iter()
                .map(|k| self.partition_of(keyspace, k))
                .collect::<Result<_, _>>()?,
            (Keys::Range(from, to), Layout::Range(ranges)) => ranges_overlapping(ranges, from, to),
            (Keys::All, Layout::Range(ranges)) => ranges.iter().map(|r| r.1).collect(),
            (Keys::Range(..) | Keys::All, Layout::Hash) => {
                self.token_ring.iter().map(|e| e.1).collect()
            }
            (Keys::Range(..) | Keys::All, Layout::Eventual(_)) => {
                return Err(PartitionMapError::Eventual(keyspace.clone()))
            }
            (Keys::Across(_), _) => {
                return Err(PartitionMapError::Invalid(InvalidMap::NestedPlacement))
            }
        };
        involved.sort();
        involved.dedup();
        if involved.is_empty() {
            // An empty range (or no keys): any one partition answers it,
            // with nothing; take the lowest so every replica agrees.
            involved.push(
                *self
                    .partitions
                    .keys()
                    .next()
                    .expect("validated: partitions exist"),
            );
        }
        Ok(involved)
    }

    /// Partitions `node` replicates.
    pub fn partitions_of(&self, node: NodeId) -> Vec<PartitionId> {
        self.partitions
            .iter()
            .filter(|(_, info)| info.replicas.contains(&node))
            .map(|(id, _)| *id)
            .collect()
    }

    /// Partitions moved away from `node` (`Reconfiguration::Move`) that it
    /// still learns the stream of: its replica stays, serving the state to
    /// the new group, until a majority of that group holds it.
    pub fn leaving(&self, node: NodeId) -> Vec<PartitionId> {
        self.partitions
            .iter()
            .filter(|(_, info)| {
                !info.replicas.contains(&node)
                    && self
                        .streams
                        .get(&info.stream)
                        .is_some_and(|spec| spec.members().contains(&node))
            })
            .map(|(id, _)| *id)
            .collect()
    }

    /// The partition holding `partition`'s state by this map: itself, or
    /// the one it was merged into (following merges of merges).
    pub fn merged_into(&self, mut partition: PartitionId) -> PartitionId {
        for _ in 0..self.merged.len() {
            match self.merged.get(&partition) {
                Some(into) => partition = *into,
                None => break,
            }
        }
        partition
    }

    /// Whether `node`'s replica of `partition`, kept by an older map, is
    /// obsolete by this one: the partition holding its state now (itself,
    /// or the one it was merged into) has replicas and `node` is not among
    /// them. A node down through a move and its hand-off learns so from a
    /// peer that no longer runs the partition (`ReplicaMessage::NotHeld`),
    /// and drops the replica instead of asking for its state forever.
    pub fn moved_off(&self, partition: PartitionId, node: NodeId) -> bool {
        self.partitions
            .get(&self.merged_into(partition))
            .is_some_and(|info| !info.replicas.is_empty() && !info.replicas.contains(&node))
    }

    /// Whether this map, newer than `own` (the map of `node`'s replica of
    /// `partition`), makes that replica obsolete (`moved_off`). Learned
    /// from a peer's `NotHeld` answer or from the map of a checkpoint it
    /// sent: the node drops the replica instead of installing state that
    /// is no longer its own.
    pub fn obsoletes(&self, own: &PartitionMap, partition: PartitionId, node: NodeId) -> bool {
        self.version > own.version && self.moved_off(partition, node)
    }

    /// Every node replicating some partition, sorted.
    pub fn hosting_nodes(&self) -> Vec<NodeId> {
        let mut nodes: Vec<NodeId> = self
            .partitions
            .values()
            .flat_map(|p| p.replicas.iter().copied())
            .collect();
        nodes.sort();
        nodes.dedup();
        nodes
    }

    /// Whom `node`, a replica of `partition` by this map whose streams were
    /// trimmed past it, asks for a checkpoint: the partition's other
    /// replicas, then every other node hosting a partition. Those answer
    /// `NotHeld` with their newer map when the partition moved away while
    /// `node` was down and its replicas here, handed off, run nothing.
    pub fn recovery_sources(&self, partition: PartitionId, node: NodeId) -> Vec<NodeId> {
        let mut peers: Vec<NodeId> = self
            .partitions
            .get(&partition)
            .map(|info| info.replicas.clone())
            .unwrap_or_default();
        let others: Vec<NodeId> = self
            .hosting_nodes()
            .into_iter()
            .filter(|n| !peers.contains(n))
            .collect();
        peers.extend(others);
        peers.retain(|n| *n != node);
        peers
    }

    /// Every node that may run a replica of `partition`: its replicas
    /// first, then the other members of its stream (after a move, the
    /// replicas that go, which keep executing it until the new group holds
    /// its state). Signals of multi-partition commands go to all of them:
    /// a replica being handed off waits for them like any other.
    pub fn runners(&self, partition: PartitionId) -> Vec<NodeId> {
        let Some(info) = self.partitions.get(&partition) else {
            return Vec::new();
        };
        let mut nodes = info.replicas.clone();
        if let Some(spec) = self.streams.get(&info.stream) {
            nodes.extend(
                spec.members()
                    .into_iter()
                    .filter(|n| !info.replicas.contains(n)),
            );
        }
        nodes
    }

    /// Whom `node`, newly given `partition` by a move, asks for its state:
    /// the partition's other replicas first (one that stayed has it at
    /// once), then the other members of its stream (the replicas that go,
    /// which keep it until the new group holds it).
    pub fn transfer_sources(&self, partition: PartitionId, node: NodeId) -> Vec<NodeId> {
        let mut peers = self.runners(partition);
        peers.retain(|n| *n != node);
        peers
    }

    /// Adds a keyspace; a new version.
    pub fn create_keyspace(&mut self, name: &str, layout: Layout) -> Result<(), PartitionMapError> {
        if self.keyspaces.contains_key(name) {
            return Err(PartitionMapError::KeyspaceExists(name.to_string()));
        }
        let mut next = self.clone();
        next.version = MapVersion(self.version.0 + 1);
        let layout = match layout {
            Layout::Eventual(asked) => {
                let placement = amulet_dotted::Placement::new(
                    asked.replicas,
                    asked.vnodes,
                    &self.hosting_nodes().iter().map(|n| n.0).collect::<Vec<_>>(),
                    next.version.0,
                )
                .map_err(|e| InvalidMap::EventualReplicas(e.to_string()))?;
                let placement = amulet_dotted::Placement {
                    merkle: asked.merkle,
                    ..placement
                };
                Layout::Eventual(EventualLayout {
                    placement: Some(placement),
                    ..asked
                })
            }
            other => other,
        };
        next.keyspaces.insert(name.to_string(), layout);
        next.validate()?;
        *self = next;
        Ok(())
    }

    /// The eventual maps and their placements.
    pub fn eventual_placements(&self) -> BTreeMap<String, amulet_dotted::Placement> {
        self.keyspaces
            .iter()
            .filter_map(|(name, layout)| match layout {
                Layout::Eventual(EventualLayout {
                    placement: Some(p), ..
                }) => Some((name.clone(), p.clone())),
                _ => None,
            })
            .collect()
    }

    /// Records `node`'s eventual store `incarnation`. The same one again
    /// changes nothing (false). A first one is recorded (a new version).
    /// Another one means the node's previous store is lost: every eventual
    /// replica id the node held is retired and replaced by a fresh id at
    /// its position (`Placement::replace`), which starts from full
    /// transfers, instead of issuing the lost replica's dots twice.
    pub fn register_eventual_store(&mut self, node: NodeId, incarnation: u64) -> bool {
        let previous = self.eventual_stores.get(&node).copied();
        if previous == Some(incarnation) {
            return false;
        }
        self.eventual_stores.insert(node, incarnation);
        self.version = MapVersion(self.version.0 + 1);
        if previous.is_some() {
            for layout in self.keyspaces.values_mut() {
                if let Layout::Eventual(EventualLayout {
                    placement: Some(placement),
                    ..
                }) = layout
                {
                    for id in placement.held_by(node.0) {
                        *placement = placement.replace(id);
                    }
                }
            }
        }
        true
    }

    /// Removes a keyspace; a new version.
    pub fn drop_keyspace(&mut self, name: &str) -> Result<(), PartitionMapError> {
        self.keyspaces
            .remove(name)
            .ok_or_else(|| PartitionMapError::UnknownKeyspace(name.to_string()))?;
        self.version = MapVersion(self.version.0 + 1);
        Ok(())
    }
}

/// Whether one of a range map's `ranges` (sorted by first key, the first
/// at the empty key) starts at `key`: a cut there exists already.
pub fn starts_range(ranges: &[(Bytes, PartitionId)], key: &[u8]) -> bool {
    ranges.binary_search_by(|r| r.0[..].cmp(key)).is_ok()
}

/// The first key of the range after the one holding `key` (`None`: the
/// empty key, the map's first), or `None` from the last range on.
pub fn next_range_start<'a>(
    ranges: &'a [(Bytes, PartitionId)],
    key: Option<&[u8]>,
) -> Option<&'a Bytes> {
    let key = key.unwrap_or_default();
    ranges
        .get(ranges.partition_point(|r| &r.0[..] <= key))
        .map(|r| &r.0)
}

fn range_owner(ranges: &[(Bytes, PartitionId)], key: &[u8]) -> PartitionId {
    let at = ranges.partition_point(|r| &r.0[..] <= key);
    ranges[at.checked_sub(1).expect("ranges start at the empty key")].1
}

/// Partitions whose range `[lower_i, lower_{i+1})` meets `(from, to)`.
fn ranges_overlapping(
    ranges: &[(Bytes, PartitionId)],
    from: &Bound<Bytes>,
    to: &Bound<Bytes>,
) -> Vec<PartitionId> {
    let mut out = Vec::new();
    for (i, (lower, partition)) in ranges.iter().enumerate() {
        let upper = ranges.get(i + 1).map(|r| &r.0);
        // The range's keys are >= lower and < upper.
        let below_to = match to {
            Bound::Unbounded => true,
            Bound::Included(t) => lower <= t,
            Bound::Excluded(t) => lower < t,
        };
        let above_from = match (from, upper) {
            (_, None) | (Bound::Unbounded, _) => true,
            (Bound::Included(f) | Bound::Excluded(f), Some(u)) => f < u,
        };
        if below_to && above_from {
            out.push(*partition);
        }
    }
    out
}

#[cfg(test)]
mod tests;
