//! One named map: the ordered-map API (DMap §III, `java.util.SortedMap`
//! and `NavigableMap`).

use crate::{Client, Error, Snapshot};
use amulet_dmap::{KeyBound, MapCommand, MapName, MapReply, Nearest, RangeQuery};
use bytes::Bytes;

/// A key and its value.
pub type Entry = (Bytes, Bytes);

/// A handle on one map of the cluster; cheap to clone.
#[derive(Clone, Debug)]
pub struct DMap {
    client: Client,
    name: MapName,
}

fn unexpected(reply: MapReply) -> Error {
    Error::Protocol(format!("unexpected reply {reply:?}"))
}

impl DMap {
    pub(crate) fn new(client: Client, name: MapName) -> DMap {
        DMap { client, name }
    }

    /// The map's name.
    pub fn name(&self) -> &MapName {
        &self.name
    }

    /// The client it uses.
    pub fn client(&self) -> &Client {
        &self.client
    }

    async fn value(&self, command: MapCommand) -> Result<Option<Bytes>, Error> {
        match self.client.execute(command).await? {
            MapReply::Value(v) => Ok(v),
            other => Err(unexpected(other)),
        }
    }

    async fn flag(&self, command: MapCommand) -> Result<bool, Error> {
        match self.client.execute(command).await? {
            MapReply::Flag(f) => Ok(f),
            other => Err(unexpected(other)),
        }
    }

    async fn entry(&self, command: MapCommand) -> Result<Option<Entry>, Error> {
        match self.client.execute(command).await? {
            MapReply::Entry(e) => Ok(e),
            other => Err(unexpected(other)),
        }
    }

    async fn done(&self, command: MapCommand) -> Result<(), Error> {
        match self.client.execute(command).await? {
            MapReply::Done => Ok(()),
            other => Err(unexpected(other)),
        }
    }

    /// The value of `key`.
    pub async fn get(&self, key: impl Into<Bytes>) -> Result<Option<Bytes>, Error> {
        self.value(MapCommand::Get {
            map: self.name.clone(),
            key: key.into(),
        })
        .await
    }

    /// Whether `key` has a value.
    pub async fn contains_key(&self, key: impl Into<Bytes>) -> Result<bool, Error> {
        self.flag(MapCommand::ContainsKey {
            map: self.name.clone(),
            key: key.into(),
        })
        .await
    }

    /// Sets `key` to `value`; returns the previous value.
    pub async fn put(
        &self,
        key: impl Into<Bytes>,
        value: impl Into<Bytes>,
    ) -> Result<Option<Bytes>, Error> {
        self.value(MapCommand::Put {
            map: self.name.clone(),
            key: key.into(),
            value: value.into(),
        })
        .await
    }

    /// Removes `key`; returns the removed value.
    pub async fn remove(&self, key: impl Into<Bytes>) -> Result<Option<Bytes>, Error> {
        self.value(MapCommand::Remove {
            map: self.name.clone(),
            key: key.into(),
        })
        .await
    }

    /// Sets `key` only if it has no value; returns the existing value
    /// (`None`: it was set).
    pub async fn put_if_absent(
        &self,
        key: impl Into<Bytes>,
        value: impl Into<Bytes>,
    ) -> Result<Option<Bytes>, Error> {
        self.value(MapCommand::PutIfAbsent {
            map: self.name.clone(),
            key: key.into(),
            value: value.into(),
        })
        .await
    }

    /// Sets `key` only if it has a value; returns the previous value.
    pub async fn replace(
        &self,
        key: impl Into<Bytes>,
        value: impl Into<Bytes>,
    ) -> Result<Option<Bytes>, Error> {
        self.value(MapCommand::Replace {
            map: self.name.clone(),
            key: key.into(),
            value: value.into(),
        })
        .await
    }

    /// Sets `key` to `value` if its value is `expected`; whether it did.
    pub async fn compare_and_set(
        &self,
        key: impl Into<Bytes>,
        expected: impl Into<Bytes>,
        value: impl Into<Bytes>,
    ) -> Result<bool, Error> {
        self.flag(MapCommand::ReplaceIfEquals {
            map: self.name.clone(),
            key: key.into(),
            expected: expected.into(),
            value: value.into(),
        })
        .await
    }

    /// Removes `key` if its value is `expected`; whether it did.
    pub async fn remove_if_equals(
        &self,
        key: impl Into<Bytes>,
        expected: impl Into<Bytes>,
    ) -> Result<bool, Error> {
        self.flag(MapCommand::RemoveIfEquals {
            map: self.name.clone(),
            key: key.into(),
            expected: expected.into(),
        })
        .await
    }

    /// Sets and removes fields of the field record stored at `key`
    /// (docs/field-records.md; encode one with
    /// [`amulet_dmap::field_record::encode`]) in one ordered step, keeping
    /// its other fields: a field with a value is set, one with `None`
    /// removed. Whether the key had a value (a missing key stays missing).
    /// A stored value that is not a field record is refused and kept.
    pub async fn merge_fields<N, V>(
        &self,
        key: impl Into<Bytes>,
        fields: impl IntoIterator<Item = (N, Option<V>)>,
    ) -> Result<bool, Error>
    where
        N: Into<Bytes>,
        V: Into<Bytes>,
    {
        self.flag(MapCommand::MergeFields {
            map: self.name.clone(),
            key: key.into(),
            fields: fields
                .into_iter()
                .map(|(name, value)| (name.into(), value.map(Into::into)))
                .collect(),
        })
        .await
    }

    /// Sets every entry, atomically across partitions.
    pub async fn put_all<K, V>(
        &self,
        entries: impl IntoIterator<Item = (K, V)>,
    ) -> Result<(), Error>
    where
        K: Into<Bytes>,
        V: Into<Bytes>,
    {
        self.done(MapCommand::PutAll {
            map: self.name.clone(),
            entries: entries
                .into_iter()
                .map(|(k, v)| (k.into(), v.into()))
                .collect(),
        })
        .await
    }

    /// Whether some key has `value`.
    pub async fn contains_value(&self, value: impl Into<Bytes>) -> Result<bool, Error> {
        self.flag(MapCommand::ContainsValue {
            map: self.name.clone(),
            value: value.into(),
        })
        .await
    }

    /// Number of entries.
    pub async fn size(&self) -> Result<u64, Error> {
        match self
            .client
            .execute(MapCommand::Size {
                map: self.name.clone(),
            })
            .await?
        {
            MapReply::Count(n) => Ok(n),
            other => Err(unexpected(other)),
        }
    }

    /// Whether the map has no entries.
    pub async fn is_empty(&self) -> Result<bool, Error> {
        self.flag(MapCommand::IsEmpty {
            map: self.name.clone(),
        })
        .await
    }

    /// Removes every entry.
    pub async fn clear(&self) -> Result<(), Error> {
        self.done(MapCommand::Clear {
            map: self.name.clone(),
        })
        .await
    }

    /// The entry with the least key.
    pub async fn first_entry(&self) -> Result<Option<Entry>, Error> {
        self.entry(MapCommand::FirstEntry {
            map: self.name.clone(),
        })
        .await
    }

    /// The entry with the greatest key.
    pub async fn last_entry(&self) -> Result<Option<Entry>, Error> {
        self.entry(MapCommand::LastEntry {
            map: self.name.clone(),
        })
        .await
    }

    /// The floor, ceiling, higher or lower entry of `key`.
    pub async fn nearest(
        &self,
        key: impl Into<Bytes>,
        nearest: Nearest,
    ) -> Result<Option<Entry>, Error> {
        self.entry(MapCommand::NearestEntry {
            map: self.name.clone(),
            key: key.into(),
            nearest,
        })
        .await
    }

    /// Greatest entry with a key <= `key`.
    pub async fn floor_entry(&self, key: impl Into<Bytes>) -> Result<Option<Entry>, Error> {
        self.nearest(key, Nearest::Floor).await
    }

    /// Least entry with a key >= `key`.
    pub async fn ceiling_entry(&self, key: impl Into<Bytes>) -> Result<Option<Entry>, Error> {
        self.nearest(key, Nearest::Ceiling).await
    }

    /// Least entry with a key > `key`.
    pub async fn higher_entry(&self, key: impl Into<Bytes>) -> Result<Option<Entry>, Error> {
        self.nearest(key, Nearest::Higher).await
    }

    /// Greatest entry with a key < `key`.
    pub async fn lower_entry(&self, key: impl Into<Bytes>) -> Result<Option<Entry>, Error> {
        self.nearest(key, Nearest::Lower).await
    }

    /// At most `limit` entries between `from` and `to` (either open), in
    /// ascending order, or the highest ones descending if `reverse`; and
    /// whether the limit cut the range short. One linearizable read.
    pub async fn range(
        &self,
        from: Option<KeyBound>,
        to: Option<KeyBound>,
        limit: u32,
        reverse: bool,
    ) -> Result<(Vec<Entry>, bool), Error> {
        match self
            .client
            .execute(MapCommand::Range {
                map: self.name.clone(),
                range: RangeQuery {
                    from,
                    to,
                    limit,
                    reverse,
                },
            })
            .await?
        {
            MapReply::Entries { entries, more } => Ok((entries, more)),
            other => Err(unexpected(other)),
        }
    }

    /// A snapshot of the whole map at one point of the order, read in key
    /// order a page at a time from every partition; writers never wait for
    /// it. Release it with [`Snapshot::close`] (or let its lease end).
    pub async fn snapshot(&self) -> Result<Snapshot, Error> {
        let command = MapCommand::OpenSnapshot {
            map: self.name.clone(),
            lease_micros: self.client.config().snapshot_lease.as_micros() as u64,
        };
        match self.client.execute(command.clone()).await? {
            MapReply::Snapshot(id) => {
                // After the command, so a map refreshed on the way counts.
                let partitions = self.client.partitions_for(&command);
                Ok(Snapshot::new(self.client.clone(), id, partitions))
            }
            other => Err(unexpected(other)),
        }
    }
}
