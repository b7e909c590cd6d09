//! Snapshot iterators (DMap §III-B): a snapshot is opened through the
//! global stream at one point of the order; every partition's part is
//! then streamed in pages, each partition from a random replica, and
//! merged here in key order. The client holds at most one page per
//! partition, whatever the size of the map.

use crate::{Client, Error};
use amulet_api::pb;
use amulet_dmap::MapCommand;
use amulet_types::PartitionId;
use bytes::Bytes;
use std::collections::VecDeque;
use tonic::Code;

/// One partition's part of the snapshot.
struct Source {
    partition: PartitionId,
    stream: Option<tonic::Streaming<pb::SnapshotPage>>,
    page: VecDeque<pb::Entry>,
    /// Last key taken from this partition: where a broken stream resumes.
    resume_after: Option<Bytes>,
    /// The partition's last page was received.
    finished: bool,
}

/// An open snapshot of a map, read in ascending key order.
pub struct Snapshot {
    client: Client,
    id: u64,
    sources: Vec<Source>,
    released: bool,
}

impl std::fmt::Debug for Snapshot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Snapshot").field("id", &self.id).finish()
    }
}

impl Snapshot {
    pub(crate) fn new(client: Client, id: u64, partitions: Vec<PartitionId>) -> Snapshot {
        Snapshot {
            client,
            id,
            sources: partitions
                .into_iter()
                .map(|partition| Source {
                    partition,
                    stream: None,
                    page: VecDeque::new(),
                    resume_after: None,
                    finished: false,
                })
                .collect(),
            released: false,
        }
    }

    /// The snapshot's id (its position in the global order).
    pub fn id(&self) -> u64 {
        self.id
    }

    /// Entries buffered in this iterator now (at most a page per
    /// partition).
    pub fn buffered(&self) -> usize {
        self.sources.iter().map(|s| s.page.len()).sum()
    }

    /// The next entry in key order, or `None` at the end.
    pub async fn next(&mut self) -> Result<Option<(Bytes, Bytes)>, Error> {
        for i in 0..self.sources.len() {
            if self.sources[i].page.is_empty() && !self.sources[i].finished {
                self.refill(i).await?;
            }
        }
        let least = self
            .sources
            .iter()
            .enumerate()
            .filter_map(|(i, s)| s.page.front().map(|e| (i, &e.key)))
            .min_by(|a, b| a.1.cmp(b.1))
            .map(|(i, _)| i);
        let Some(i) = least else {
            return Ok(None);
        };
        let source = &mut self.sources[i];
        let entry = source.page.pop_front().expect("has a front");
        source.resume_after = Some(entry.key.clone());
        Ok(Some((entry.key, entry.value)))
    }

    /// Reads the next page of source `i`, reopening its stream at another
    /// replica (after the last key taken) if it broke.
    async fn refill(&mut self, i: usize) -> Result<(), Error> {
        let mut backoff = self.client.backoff();
        loop {
            let source = &mut self.sources[i];
            if source.stream.is_none() {
                match self
                    .client
                    .read_snapshot(source.partition, self.id, source.resume_after.clone())
                    .await
                {
                    Ok(stream) => source.stream = Some(stream),
                    Err(status) if is_final(status.code()) => {
                        return Err(Error::from_status(&status))
                    }
                    Err(status) => {
                        let Some(until) = backoff.pause(self.client.now()) else {
                            return Err(Error::Unavailable(status.message().to_string()));
                        };
                        self.client.sleep_until(until).await;
                        continue;
                    }
                }
            }
            let stream = source.stream.as_mut().expect("opened above");
            match stream.message().await {
                Ok(Some(page)) => {
                    source.finished = page.last;
                    source.page = page.entries.into();
                    if source.finished {
                        source.stream = None;
                    }
                    if !source.page.is_empty() || source.finished {
                        return Ok(());
                    }
                }
                Ok(None) => {
                    // Ended without a last page: the replica went away.
                    source.stream = None;
                }
                Err(status) if is_final(status.code()) => return Err(Error::from_status(&status)),
                Err(_) => source.stream = None,
            }
        }
    }

    /// Releases the snapshot in the cluster.
    pub async fn close(mut self) -> Result<(), Error> {
        self.released = true;
        self.client
            .execute(MapCommand::ReleaseSnapshot { snapshot: self.id })
            .await
            .map(|_| ())
    }
}

/// Whether a stream error is the snapshot's (unknown, bad request) rather
/// than the replica's.
fn is_final(code: Code) -> bool {
    // A revoked permission or token ends the iteration (docs/security.md).
    matches!(
        code,
        Code::NotFound | Code::InvalidArgument | Code::PermissionDenied | Code::Unauthenticated
    )
}

impl Drop for Snapshot {
    fn drop(&mut self) {
        if self.released {
            return;
        }
        // Best effort: the lease frees it anyway.
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            let client = self.client.clone();
            let snapshot = self.id;
            runtime.spawn(async move {
                let _ = client
                    .execute(MapCommand::ReleaseSnapshot { snapshot })
                    .await;
            });
        }
    }
}
