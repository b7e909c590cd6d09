//! Interactive, strictly serializable transactions across maps and
//! partitions (SCONEKV §4–§5 on the total order; docs/transactions.md).
//!
//! A [`Transaction`] reads at one read version (taken at its first read,
//! shared with the client's other transactions that start together) from
//! any replica past it, buffers its writes (reading its own), and commits
//! them in one command that every involved partition votes on: all apply
//! or none does. [`Client::transact`] runs a closure as a transaction and
//! runs it again on a conflict, with backoff, until it commits or the
//! operation timeout passes.

use crate::read_versions::Held;
use crate::rules::Outcome;
use crate::{Client, Error};
use amulet_dmap::{
    combine, conflict_range, KeyBound, KeyRange, MapCommand, MapLimits, MapName, MapReply, Nearest,
    RangeQuery, ReadConflict, TxnWrite,
};
use bytes::Bytes;
use std::collections::BTreeMap;
use std::future::Future;
use std::ops::Bound;
use std::sync::{Arc, Mutex};
use tokio::sync::OnceCell;

/// A key and its value.
pub type Entry = (Bytes, Bytes);

/// One transaction; cheap to clone (clones are the same transaction, so a
/// closure given to [`Client::transact`] may move it into async blocks).
#[derive(Clone)]
pub struct Transaction {
    client: Client,
    read_version: Arc<OnceCell<Result<Arc<Held>, Error>>>,
    state: Arc<Mutex<State>>,
}

impl std::fmt::Debug for Transaction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = self.state.lock().expect("transaction lock");
        f.debug_struct("Transaction")
            .field("read_version", &self.read_version.get())
            .field("reads", &state.reads.len())
            .field("writes", &state.writes.len())
            .finish()
    }
}

#[derive(Default)]
struct State {
    reads: Vec<ReadConflict>,
    /// Buffered writes by map and key (`None`: removed); the last write of
    /// a key wins.
    writes: BTreeMap<(MapName, Bytes), Option<Bytes>>,
    /// A read found a key it covered written since the read version: a
    /// commit with writes is bound to conflict.
    doomed: Option<Error>,
    /// A write named an invalid map: the commit fails with this.
    invalid: Option<Error>,
    /// Committed or abandoned.
    finished: bool,
    /// The read version was given back.
    released: bool,
}

fn unexpected(reply: MapReply) -> Error {
    Error::Protocol(format!("unexpected reply {reply:?}"))
}

fn map_name(map: &str) -> Result<MapName, Error> {
    MapName::new(map).map_err(|e| Error::InvalidArgument(e.to_string()))
}

impl Client {
    /// Starts a transaction. Prefer [`Client::transact`], which runs it
    /// again on conflicts; a transaction started here is committed with
    /// [`Transaction::commit`] or dropped.
    pub fn transaction(&self) -> Transaction {
        Transaction {
            client: self.clone(),
            read_version: Arc::new(OnceCell::new()),
            state: Arc::new(Mutex::new(State::default())),
        }
    }

    /// Runs `f` as a transaction and commits it; on a conflict (or an
    /// ended read version) runs it again from a new read version, pausing
    /// longer each time, until it commits or the operation timeout passes.
    /// `f` may run several times: keep its effects inside the transaction.
    ///
    /// ```no_run
    /// # async fn demo(client: amulet_client::Client) -> Result<(), amulet_client::Error> {
    /// client
    ///     .transact(|tx| async move {
    ///         let from = tx.get("accounts", "alice").await?.unwrap_or_default();
    ///         let to = tx.get("accounts", "bob").await?.unwrap_or_default();
    ///         let (from, to) = (parse(&from) - 10, parse(&to) + 10);
    ///         tx.put("accounts", "alice", from.to_string());
    ///         tx.put("accounts", "bob", to.to_string());
    ///         Ok(())
    ///     })
    ///     .await?;
    /// # Ok(()) }
    /// # fn parse(b: &[u8]) -> i64 { std::str::from_utf8(b).ok().and_then(|s| s.parse().ok()).unwrap_or(0) }
    /// ```
    pub async fn transact<T, F, Fut>(&self, mut f: F) -> Result<T, Error>
    where
        F: FnMut(Transaction) -> Fut,
        Fut: Future<Output = Result<T, Error>>,
    {
        let mut backoff = self.backoff();
        loop {
            let tx = self.transaction();
            let result = match f(tx.clone()).await {
                Ok(value) => tx.commit().await.map(|()| value),
                Err(e) => {
                    tx.abandon();
                    Err(e)
                }
            };
            match result {
                Err(e) if e.is_transaction_retryable() => {
                    let Some(until) = backoff.pause(self.now()) else {
                        return Err(e);
                    };
                    self.sleep_until(until).await;
                }
                other => return other,
            }
        }
    }
}

impl Transaction {
    /// The read version, taken at the first read.
    async fn version(&self) -> Result<u64, Error> {
        let held = self
            .read_version
            .get_or_init(|| async {
                let lease = self.client.config().transaction_lease.as_micros() as u64;
                self.client
                    .read_versions()
                    .acquire(&self.client, lease)
                    .await
                    .map(Arc::new)
            })
            .await;
        held.as_ref().map(|h| h.version).map_err(Clone::clone)
    }

    /// The read version this transaction reads at, if it has read.
    pub fn read_version(&self) -> Option<u64> {
        self.read_version
            .get()
            .and_then(|r| r.as_ref().ok())
            .map(|h| h.version)
    }

    /// Runs read `command` at the read version in every partition it
    /// involves and combines the partial replies; records the conflict
    /// range. A read that finds a key it covered written since the read
    /// version fails at once when the transaction has writes (it could
    /// only conflict), and otherwise dooms a later write.
    async fn read(&self, command: MapCommand) -> Result<MapReply, Error> {
        let version = self.version().await?;
        let mut backoff = self.client.backoff();
        let mut refreshed = false;
        let (reply, written_since) = loop {
            match self.read_once(version, &command).await {
                Ok(answer) => break answer,
                Err(Outcome::Refused(Error::NotFound(_))) if !refreshed => {
                    // The map may have been created since this client
                    // last fetched the partition map: look once more.
                    refreshed = true;
                    self.client.refresh_map().await;
                }
                Err(Outcome::Refused(e)) => return Err(e),
                Err(outcome) => {
                    if matches!(outcome, Outcome::StaleMap(_) | Outcome::NotAReplica(_)) {
                        self.client.refresh_map().await;
                    }
                    let Some(until) = backoff.pause(self.client.now()) else {
                        return Err(give_up(outcome));
                    };
                    self.client.sleep_until(until).await;
                }
            }
        };
        if let MapReply::Failed(error) = &reply {
            return Err(Error::from_map_error(error));
        }
        let map = command.map().expect("reads name a map").clone();
        let range = conflict_range(&command, &reply);
        let mut state = self.state.lock().expect("transaction lock");
        if written_since && state.doomed.is_none() {
            state.doomed = Some(Error::Conflict {
                map: map.to_string(),
                key: None,
                message: "a key this transaction read was written after its read version"
                    .to_string(),
            });
        }
        state.reads.push(ReadConflict { map, range });
        if !state.writes.is_empty() {
            if let Some(doomed) = &state.doomed {
                return Err(doomed.clone());
            }
        }
        Ok(reply)
    }

    /// One try of a read at every partition it involves: the combined
    /// reply and whether any partition saw a covered key written since.
    async fn read_once(
        &self,
        version: u64,
        command: &MapCommand,
    ) -> Result<(MapReply, bool), Outcome<MapReply>> {
        let partitions = self.client.partitions_for(command);
        if partitions.is_empty() {
            return Err(Outcome::Refused(Error::NotFound(format!(
                "no map named {:?}",
                command.map().map(|m| m.as_str()).unwrap_or("")
            ))));
        }
        let mut partials = Vec::with_capacity(partitions.len());
        let mut written_since = false;
        for partition in &partitions {
            match self
                .client
                .read_at_attempt(*partition, version, command)
                .await
            {
                Outcome::Done((reply, since)) => {
                    if let MapReply::Failed(error) = &reply {
                        return Err(Outcome::Refused(Error::from_map_error(error)));
                    }
                    partials.push(reply);
                    written_since |= since;
                }
                Outcome::SessionOk => {
                    return Err(Outcome::Refused(Error::Protocol(
                        "a read answered as a session".into(),
                    )))
                }
                Outcome::StaleMap(why) => return Err(Outcome::StaleMap(why)),
                Outcome::NotAReplica(why) => return Err(Outcome::NotAReplica(why)),
                Outcome::Behind(why) => return Err(Outcome::Behind(why)),
                Outcome::SessionExpired(why) => return Err(Outcome::SessionExpired(why)),
                Outcome::StaleSequence(why) => return Err(Outcome::StaleSequence(why)),
                Outcome::ReplyLost(why) => return Err(Outcome::ReplyLost(why)),
                Outcome::Retryable(why) => return Err(Outcome::Retryable(why)),
                Outcome::NoAnswer(why) => return Err(Outcome::NoAnswer(why)),
                Outcome::Refused(e) => return Err(Outcome::Refused(e)),
            }
        }
        // Several partitions' flags cover more than the combined reply:
        // only a single partition's tells for sure.
        let sure = partials.len() == 1 && written_since;
        Ok((combine(command, &partials), sure))
    }

    /// The value of `key` in `map` as of the read version, or as this
    /// transaction wrote it.
    pub async fn get(&self, map: &str, key: impl Into<Bytes>) -> Result<Option<Bytes>, Error> {
        let (map, key) = (map_name(map)?, key.into());
        if let Some(write) = self.buffered(&map, &key) {
            return Ok(write);
        }
        match self.read(MapCommand::Get { map, key }).await? {
            MapReply::Value(value) => Ok(value),
            other => Err(unexpected(other)),
        }
    }

    fn buffered(&self, map: &MapName, key: &Bytes) -> Option<Option<Bytes>> {
        let state = self.state.lock().expect("transaction lock");
        state.writes.get(&(map.clone(), key.clone())).cloned()
    }

    /// At most `limit` entries of `map` between `from` and `to` (either
    /// open), ascending or, if `reverse`, the highest descending, as of
    /// the read version with this transaction's writes applied; and
    /// whether the limit cut the range short. A key inserted into the
    /// part of the range that was read by another transaction makes this
    /// one conflict (phantoms count).
    pub async fn range(
        &self,
        map: &str,
        from: Option<KeyBound>,
        to: Option<KeyBound>,
        limit: u32,
        reverse: bool,
    ) -> Result<(Vec<Entry>, bool), Error> {
        let map = map_name(map)?;
        let query = KeyRange {
            from: from.clone(),
            to: to.clone(),
        };
        let mine: Vec<(Bytes, Option<Bytes>)> = {
            let state = self.state.lock().expect("transaction lock");
            state
                .writes
                .iter()
                .filter(|((m, key), _)| *m == map && in_range(&query, key))
                .map(|((_, key), value)| (key.clone(), value.clone()))
                .collect()
        };
        // Ask for enough that removals of this transaction still leave
        // `limit` entries when there are, within what a node serves in one
        // reply (above it, a page shorter than `limit` comes back marked
        // `more`, as any cut-short range does).
        let removed = mine.iter().filter(|(_, v)| v.is_none()).count() as u32;
        let served_max = limit.max(MapLimits::default().range_entries_max);
        let asked = limit.saturating_add(removed).min(served_max);
        let reply = self
            .read(MapCommand::Range {
                map,
                range: RangeQuery {
                    from,
                    to,
                    limit: asked,
                    reverse,
                },
            })
            .await?;
        let MapReply::Entries { entries, more } = reply else {
            return Err(unexpected(reply));
        };
        let mut merged: BTreeMap<Bytes, Bytes> = entries.into_iter().collect();
        // Writes beyond the last entry read stay out when the read was
        // cut short: entries between are unknown here.
        let last = merged.keys().next_back().cloned();
        let first = merged.keys().next().cloned();
        for (key, value) in mine {
            let beyond = more
                && if reverse {
                    first.as_ref().is_some_and(|f| key < *f)
                } else {
                    last.as_ref().is_some_and(|l| key > *l)
                };
            if beyond {
                continue;
            }
            match value {
                Some(value) => {
                    merged.insert(key, value);
                }
                None => {
                    merged.remove(&key);
                }
            }
        }
        let mut out: Vec<Entry> = merged.into_iter().collect();
        if reverse {
            out.reverse();
        }
        let cut = out.len() > limit as usize;
        out.truncate(limit as usize);
        Ok((out, more || cut))
    }

    /// The entry with the least key of `map`.
    pub async fn first_entry(&self, map: &str) -> Result<Option<Entry>, Error> {
        Ok(self.range(map, None, None, 1, false).await?.0.pop())
    }

    /// The entry with the greatest key of `map`.
    pub async fn last_entry(&self, map: &str) -> Result<Option<Entry>, Error> {
        Ok(self.range(map, None, None, 1, true).await?.0.pop())
    }

    /// The floor, ceiling, higher or lower entry of `key` in `map`.
    pub async fn nearest(
        &self,
        map: &str,
        key: impl Into<Bytes>,
        nearest: Nearest,
    ) -> Result<Option<Entry>, Error> {
        let key = key.into();
        let bound = |inclusive| {
            Some(KeyBound {
                key: key.clone(),
                inclusive,
            })
        };
        let (from, to, reverse) = match nearest {
            Nearest::Floor => (None, bound(true), true),
            Nearest::Lower => (None, bound(false), true),
            Nearest::Ceiling => (bound(true), None, false),
            Nearest::Higher => (bound(false), None, false),
        };
        Ok(self.range(map, from, to, 1, reverse).await?.0.pop())
    }

    /// Sets `key` of `map` to `value` when the transaction commits.
    pub fn put(&self, map: &str, key: impl Into<Bytes>, value: impl Into<Bytes>) {
        self.write(map, key.into(), Some(value.into()));
    }

    /// Removes `key` of `map` when the transaction commits.
    pub fn delete(&self, map: &str, key: impl Into<Bytes>) {
        self.write(map, key.into(), None);
    }

    fn write(&self, map: &str, key: Bytes, value: Option<Bytes>) {
        let mut state = self.state.lock().expect("transaction lock");
        match map_name(map) {
            Ok(map) => {
                state.writes.insert((map, key), value);
            }
            Err(e) => {
                state.invalid.get_or_insert(e);
            }
        }
    }

    /// Commits: nothing to send for a transaction without writes (its
    /// reads were a consistent snapshot; it never conflicts); otherwise one
    /// command, voted on by every partition it involves. A conflict or an
    /// ended read version is [`Error::is_transaction_retryable`]; the
    /// commit runs in a session, so a resend never applies twice.
    pub async fn commit(&self) -> Result<(), Error> {
        let command = {
            let mut state = self.state.lock().expect("transaction lock");
            if state.finished {
                return Err(Error::InvalidArgument(
                    "the transaction was committed or abandoned already".into(),
                ));
            }
            state.finished = true;
            if let Some(invalid) = state.invalid.clone() {
                drop(state);
                self.release();
                return Err(invalid);
            }
            if state.writes.is_empty() {
                drop(state);
                self.release();
                return Ok(());
            }
            if let Some(doomed) = state.doomed.clone() {
                drop(state);
                self.release();
                return Err(doomed);
            }
            MapCommand::Commit {
                read_version: self.read_version(),
                reads: std::mem::take(&mut state.reads),
                writes: std::mem::take(&mut state.writes)
                    .into_iter()
                    .map(|((map, key), value)| TxnWrite { map, key, value })
                    .collect(),
            }
        };
        let result = self.client.execute(command).await;
        self.release();
        match result? {
            MapReply::Done => Ok(()),
            MapReply::Failed(error) => Err(Error::from_map_error(&error)),
            other => Err(unexpected(other)),
        }
    }

    /// Gives the transaction up: nothing is written.
    pub fn abandon(&self) {
        self.state.lock().expect("transaction lock").finished = true;
        self.release();
    }

    /// Gives the read version back (once).
    fn release(&self) {
        let mut state = self.state.lock().expect("transaction lock");
        if state.released {
            return;
        }
        state.released = true;
        if let Some(Ok(held)) = self.read_version.get() {
            self.client.read_versions().release(held);
        }
    }
}

fn in_range(range: &KeyRange, key: &[u8]) -> bool {
    let (from, to) = range.bounds();
    let above = match from {
        Bound::Unbounded => true,
        Bound::Included(f) => key >= &f[..],
        Bound::Excluded(f) => key > &f[..],
    };
    let below = match to {
        Bound::Unbounded => true,
        Bound::Included(t) => key <= &t[..],
        Bound::Excluded(t) => key < &t[..],
    };
    above && below
}

/// The error a read that could not be served in time ends with.
fn give_up(outcome: Outcome<MapReply>) -> Error {
    match outcome {
        Outcome::Refused(e) => e,
        Outcome::StaleMap(why)
        | Outcome::NotAReplica(why)
        | Outcome::Behind(why)
        | Outcome::Retryable(why)
        | Outcome::NoAnswer(why)
        | Outcome::SessionExpired(why)
        | Outcome::StaleSequence(why)
        | Outcome::ReplyLost(why) => Error::Unavailable(why),
        Outcome::Done(_) | Outcome::SessionOk => {
            Error::Protocol("a read that succeeded was given up".into())
        }
    }
}
