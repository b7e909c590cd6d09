//! Bulk loading sorted input (docs/dynatree.md, "Bulk load"): the B+tree
//! surface DynaTree lists, with what a B+tree's bulk load buys: the input
//! arrives in key order, so the tree is built leaf by leaf instead of by
//! splitting full leaves. Here the leaves are range partitions: before each
//! chunk of `partition_entries` entries after the first is written, the
//! range holding the chunk's first key is split there (the same `Split` an operator's
//! `amulet split` orders), so every chunk lands in its own partition and
//! no partition is filled and then split with its data in it. The entries
//! go in `putAll` batches that each stay within one partition (ordered on
//! that partition's stream, not the global one), several in flight.
//!
//! Not atomic: a load that fails part way leaves what it wrote, and the
//! same load run again overwrites it with the same values. Input that is
//! not strictly increasing is refused (`InvalidArgument`) where it stops
//! being so, before anything of its chunk is written.

use crate::{Client, DMap, Error};
use amulet_smr::{Layout, PartitionMap, Reconfiguration};
use amulet_types::{PartitionId, StorageMode, StreamId};
use bytes::Bytes;
use std::collections::BTreeMap;
use tokio::task::JoinSet;

/// How a bulk load cuts and batches its input.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BulkLoad {
    /// Entries per partition the load pre-splits the map into (0: no
    /// pre-split; a map not in ranges is never split). Below the nodes'
    /// `split_entries`, or the balancer splits each chunk again.
    pub partition_entries: u64,
    /// Most entries in one `putAll` (the nodes accept 10,000).
    pub batch_entries: usize,
    /// Most key and value bytes in one `putAll` (the nodes accept 3 MiB).
    pub batch_bytes: usize,
    /// `putAll`s in flight at once.
    pub in_flight: usize,
}

impl Default for BulkLoad {
    fn default() -> BulkLoad {
        BulkLoad {
            // Half the balancer's default bound: room to grow before the
            // balancer splits a loaded partition.
            partition_entries: 500_000,
            batch_entries: 1_000,
            batch_bytes: 1024 * 1024,
            in_flight: 8,
        }
    }
}

/// What a bulk load did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BulkLoaded {
    /// Entries written: acknowledged by the nodes (so after an error,
    /// what is known to be in the map).
    pub entries: u64,
    /// Their key and value bytes.
    pub bytes: u64,
    /// Splits it ordered (a cut that already started a range needs none).
    pub splits: u64,
    /// `putAll`s it sent.
    pub batches: u64,
}

impl DMap {
    /// Loads `entries`, sorted by key with no key twice, into this map:
    /// pre-splitting a range map into partitions of
    /// `options.partition_entries` as it goes, then writing each chunk in
    /// batches within one partition. Reads as it goes, so the input may be
    /// far larger than memory. See the module's documentation.
    pub async fn bulk_load(
        &self,
        entries: impl IntoIterator<Item = (Bytes, Bytes)>,
        options: &BulkLoad,
    ) -> Result<BulkLoaded, Error> {
        if options.batch_entries == 0 || options.batch_bytes == 0 || options.in_flight == 0 {
            return Err(Error::InvalidArgument(format!(
                "bulk load: batch_entries, batch_bytes and in_flight must be positive: {options:?}"
            )));
        }
        let chunk_entries = match options.partition_entries {
            0 => 10_000,
            n => usize::try_from(n).unwrap_or(usize::MAX),
        };
        let mut loaded = BulkLoaded::default();
        let mut previous: Option<Bytes> = None;
        let mut input = entries.into_iter().peekable();
        let mut first = true;
        while input.peek().is_some() {
            let mut chunk = Vec::new();
            for (key, value) in input.by_ref().take(chunk_entries) {
                if let Some(previous) = &previous {
                    if key <= *previous {
                        return Err(Error::InvalidArgument(format!(
                            "bulk load: key {key:?} after {previous:?}: the input must be sorted by key, each key once ({} entries loaded)",
                            loaded.entries
                        )));
                    }
                }
                previous = Some(key.clone());
                chunk.push((key, value));
            }
            // The first chunk joins the range it falls in: a cut before it
            // would leave a range with nothing of the load.
            if options.partition_entries > 0 && !first && self.cut_at(&chunk[0].0).await? {
                loaded.splits += 1;
            }
            first = false;
            self.write_chunk(chunk, options, &mut loaded).await?;
        }
        Ok(loaded)
    }

    /// Splits the range holding `key` at `key`, unless it starts one (or
    /// the map is not in ranges); whether it split.
    async fn cut_at(&self, key: &Bytes) -> Result<bool, Error> {
        let client = self.client();
        client.refresh_map().await;
        let name = self.name().as_str().to_owned();
        if !needs_cut(&client.partition_map(), &name, key) {
            return Ok(false);
        }
        let configured = client.running_streams().await;
        let result = client
            .reconfigure_with(|map| split_at(map, &name, key, &configured))
            .await;
        match result {
            Ok(_) => Ok(true),
            Err(error) => {
                // The balancer (or another loader) may have cut there
                // first: then the load goes on.
                client.refresh_map().await;
                if needs_cut(&client.partition_map(), &name, key) {
                    Err(error)
                } else {
                    Ok(false)
                }
            }
        }
    }

    /// Writes a sorted chunk in `putAll`s that each stay within one
    /// partition of the client's map, `in_flight` at a time. Each
    /// partition fills a batch of its own: in a hash map consecutive keys
    /// fall in different partitions, and a batch cut at every change of
    /// partition held one or two entries. `loaded` counts what the nodes
    /// acknowledged.
    async fn write_chunk(
        &self,
        chunk: Vec<(Bytes, Bytes)>,
        options: &BulkLoad,
        loaded: &mut BulkLoaded,
    ) -> Result<(), Error> {
        let map = self.client().partition_map();
        let name = self.name().as_str();
        let mut tasks: JoinSet<Result<(u64, u64), Error>> = JoinSet::new();
        // Per partition (None: the map does not place the key; the node
        // refuses it), the batch filling and its bytes.
        let mut filling: BTreeMap<Option<PartitionId>, (Batch, usize)> = BTreeMap::new();
        let mut first_error = None;
        for (key, value) in chunk {
            let partition: Option<PartitionId> = map.partition_of(name, &key).ok();
            let size = key.len() + value.len();
            let (batch, bytes) = filling.entry(partition).or_default();
            let full = (!batch.is_empty()
                && (batch.len() >= options.batch_entries || *bytes + size > options.batch_bytes))
                .then(|| std::mem::take(batch));
            if full.is_some() {
                *bytes = 0;
            }
            *bytes += size;
            batch.push((key, value));
            if let Some(full) = full {
                self.send_batch(full, options, &mut tasks, loaded, &mut first_error)
                    .await;
            }
            if first_error.is_some() {
                break;
            }
        }
        if first_error.is_none() {
            for (_, (batch, _)) in filling {
                if !batch.is_empty() {
                    self.send_batch(batch, options, &mut tasks, loaded, &mut first_error)
                        .await;
                }
            }
        }
        while let Some(joined) = tasks.join_next().await {
            acknowledged(joined, loaded, &mut first_error);
        }
        first_error.map_or(Ok(()), Err)
    }

    /// Sends one `putAll` once fewer than `in_flight` are, unless one
    /// failed meanwhile.
    async fn send_batch(
        &self,
        batch: Vec<(Bytes, Bytes)>,
        options: &BulkLoad,
        tasks: &mut JoinSet<Result<(u64, u64), Error>>,
        loaded: &mut BulkLoaded,
        first_error: &mut Option<Error>,
    ) {
        while tasks.len() >= options.in_flight {
            match tasks.join_next().await {
                Some(joined) => acknowledged(joined, loaded, first_error),
                None => break,
            }
        }
        if first_error.is_some() {
            return;
        }
        loaded.batches += 1;
        let handle = self.clone();
        tasks.spawn(async move {
            let entries = batch.len() as u64;
            let bytes = batch.iter().map(|(k, v)| (k.len() + v.len()) as u64).sum();
            handle.put_all(batch).await.map(|()| (entries, bytes))
        });
    }
}

/// Entries of one `putAll`.
type Batch = Vec<(Bytes, Bytes)>;

/// Counts a finished `putAll` into `loaded`, or keeps the first error.
fn acknowledged(
    joined: Result<Result<(u64, u64), Error>, tokio::task::JoinError>,
    loaded: &mut BulkLoaded,
    first_error: &mut Option<Error>,
) {
    match joined {
        Ok(Ok((entries, bytes))) => {
            loaded.entries += entries;
            loaded.bytes += bytes;
        }
        Ok(Err(error)) => {
            first_error.get_or_insert(error);
        }
        Err(panic) => {
            first_error.get_or_insert(Error::Protocol(format!("a batch failed: {panic}")));
        }
    }
}

/// Whether `key` falls inside a range of map `name` without starting it.
fn needs_cut(map: &PartitionMap, name: &str, key: &Bytes) -> bool {
    match map.keyspaces.get(name) {
        Some(Layout::Range(ranges)) => !amulet_smr::starts_range(ranges, key),
        _ => false,
    }
}

/// The split of the range of `name` holding `key` at `key`, on `map`: a new
/// partition on a new stream with the same replicas and storage.
fn split_at(
    map: &PartitionMap,
    name: &str,
    key: &Bytes,
    configured: &[StreamId],
) -> Result<Reconfiguration, Error> {
    let source = map
        .partition_of(name, key)
        .map_err(|e| Error::InvalidArgument(format!("bulk load into {name:?}: {e}")))?;
    let storage = map
        .partitions
        .get(&source)
        .and_then(|info| map.streams.get(&info.stream))
        .map_or(StorageMode::SyncDurable, |spec| spec.storage);
    Reconfiguration::split_at_key(
        map,
        source,
        name,
        key.clone(),
        storage,
        configured.iter().copied(),
    )
    .ok_or_else(|| {
        Error::Protocol(format!(
            "partition {source} missing from map v{}",
            map.version.0
        ))
    })
}

impl Client {
    /// Every stream some node runs (from `Status`), for stream ids to
    /// allocate above: a node's configuration file may name streams the map
    /// does not know. Nodes that do not answer are skipped (the map still
    /// knows every stream a partition ever used).
    pub async fn running_streams(&self) -> Vec<StreamId> {
        let mut streams = Vec::new();
        for (_, address) in self.node_addresses() {
            if let Ok(status) = self.status(&address).await {
                streams.extend(status.streams.iter().map(|s| StreamId(s.stream)));
            }
        }
        streams
    }
}
