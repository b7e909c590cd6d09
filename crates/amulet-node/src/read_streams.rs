//! The client API's streaming reads, served by this node's replica
//! without ordering: snapshot pages (`ReadSnapshot`) and log tails
//! (`TailLog`), each judged again by the node's access configuration at
//! every page and every message (a revocation ends the stream).

use crate::client_api::{refusal, stopped, TailStream, PAGE_BEHIND_POLL, PAGE_BEHIND_WAIT};
use crate::metrics::Metrics;
use crate::node_handle::{NodeHandle, PageAnswer, TailAnswer};
use amulet_api::pb;
use amulet_dmap::{MapError, MapName, MapReply};
use amulet_smr::{ClientReply, Need, Principal};
use amulet_types::{MapVersion, PartitionId};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::Status;

/// How long a tail waits, without anything new, before it sends a
/// heartbeat (an empty message with the log's bounds): the client learns
/// the stream is alive, and a tail whose client left is noticed.
const TAIL_HEARTBEAT: Duration = Duration::from_secs(1);
/// How long a tail at a position past the log's end here waits for this
/// replica to get there before it ends with OUT_OF_RANGE.
const TAIL_PAST_END_WAIT: Duration = Duration::from_secs(10);

/// One page, waiting (bounded) for a replica that has not yet executed the
/// snapshot's opening.
pub(crate) async fn read_page(
    handle: &NodeHandle,
    principal: Option<&Principal>,
    partition: PartitionId,
    snapshot: u64,
    after: Option<bytes::Bytes>,
    limit: u32,
) -> Result<pb::SnapshotPage, Status> {
    let deadline = tokio::time::Instant::now() + PAGE_BEHIND_WAIT;
    loop {
        let answer = handle
            .snapshot_page(partition, snapshot, after.clone(), limit)
            .await
            .map_err(stopped)?;
        match answer {
            PageAnswer::Page(page) => {
                crate::access_api::allowed_by(&handle.access(), principal, |need| {
                    need(Need::Map(page.map.as_str(), amulet_smr::Permission::Read))
                })?;
                return Ok(pb::SnapshotPage {
                    entries: page
                        .entries
                        .into_iter()
                        .map(|(key, value)| pb::Entry { key, value })
                        .collect(),
                    last: !page.more,
                })
            }
            PageAnswer::NotAReplica => {
                return Err(Status::failed_precondition(format!(
                    "this node does not replicate partition {}",
                    partition.0
                )))
            }
            PageAnswer::Failed(error) => {
                return Err(match error {
                    MapError::UnknownSnapshot(_) => Status::not_found(error.to_string()),
                    other => Status::invalid_argument(other.to_string()),
                })
            }
            PageAnswer::Behind if tokio::time::Instant::now() >= deadline => {
                return Err(Status::unavailable(
                    "this replica is behind the snapshot; try another replica",
                ))
            }
            PageAnswer::Behind => tokio::time::sleep(PAGE_BEHIND_POLL).await,
            PageAnswer::CatchingUp => {
                return Err(Status::unavailable(
                    "this replica is catching up with its streams; try another replica",
                ))
            }
            PageAnswer::HeldElsewhere => {
                return Err(Status::unavailable(
                    "this replica restarted from a checkpoint after the snapshot opened and holds no copy of it; try another replica",
                ))
            }
        }
    }
}

/// One open tail: reads the log from the local replica, sends what is
/// there, and waits for the next change (or a heartbeat's time).
pub(crate) struct Tail {
    /// Judged again at every read: a revocation ends the stream.
    pub(crate) principal: Option<Principal>,
    pub(crate) handle: NodeHandle,
    pub(crate) metrics: Arc<Metrics>,
    pub(crate) changes: tokio::sync::watch::Receiver<u64>,
    pub(crate) log: MapName,
    /// The position of the next entry to deliver.
    pub(crate) next: u64,
    pub(crate) max_bytes: usize,
    /// The client's map version (replicas with older maps wait).
    pub(crate) map_version: MapVersion,
    /// Since when the tail waits for this replica to reach its position
    /// or the client's map (kept across heartbeats).
    pub(crate) waiting_since: Option<tokio::time::Instant>,
}

impl Tail {
    /// Streams `first` and everything after it from a task of its own.
    pub(crate) fn serve(mut self, first: pb::LogEntries) -> TailStream {
        // One message in flight: the client's reading paces the server,
        // and a tail holds at most a message or two of memory.
        let (messages, rx) = mpsc::channel(1);
        tokio::spawn(async move {
            self.metrics.tail_opened(1);
            let mut message = Ok(first);
            loop {
                let failed = message.is_err();
                if let Ok(m) = &message {
                    self.metrics.tail_sent(self.log.as_str(), m.entries.len());
                }
                if messages.send(message).await.is_err() || failed {
                    break;
                }
                message = self.next_message().await;
            }
            self.metrics.tail_opened(-1);
        });
        Box::pin(ReceiverStream::new(rx))
    }

    /// The next message: entries from `next` as soon as this replica has
    /// any, or a heartbeat after [`TAIL_HEARTBEAT`] without any.
    pub(crate) async fn next_message(&mut self) -> Result<pb::LogEntries, Status> {
        let heartbeat = tokio::time::Instant::now() + TAIL_HEARTBEAT;
        loop {
            // Marked seen before the read: a change after it wakes the
            // wait below, so no append slips between read and wait.
            self.changes.borrow_and_update();
            crate::access_api::allowed_by(
                &self.handle.access(),
                self.principal.as_ref(),
                |need| need(Need::Map(self.log.as_str(), amulet_smr::Permission::Read)),
            )?;
            let answer = self
                .handle
                .tail_read(
                    self.log.clone(),
                    self.next,
                    self.max_bytes,
                    self.map_version,
                )
                .await
                .map_err(stopped)?;
            let now = tokio::time::Instant::now();
            let (first, end) = match answer {
                TailAnswer::Read(read) if !read.entries.is_empty() => {
                    debug_assert_eq!(read.from, self.next);
                    self.waiting_since = None;
                    self.next += read.entries.len() as u64;
                    return Ok(pb::LogEntries {
                        from: read.from,
                        entries: read.entries,
                        first: read.first,
                        end: read.end,
                    });
                }
                TailAnswer::Read(read) => {
                    self.waiting_since = None;
                    (read.first, read.end)
                }
                TailAnswer::Behind { first, end } => {
                    let since = *self.waiting_since.get_or_insert(now);
                    if now.duration_since(since) >= TAIL_PAST_END_WAIT {
                        return Err(refusal(ClientReply::Done(MapReply::Failed(
                            MapError::PastLogEnd {
                                log: self.log.to_string(),
                                position: self.next,
                                end,
                            },
                        ))));
                    }
                    (first, end)
                }
                TailAnswer::MapBehind => {
                    let since = *self.waiting_since.get_or_insert(now);
                    if now.duration_since(since) >= PAGE_BEHIND_WAIT {
                        return Err(refusal(ClientReply::Behind));
                    }
                    // The map moves with the global stream, not with a
                    // log change: look again soon.
                    tokio::time::sleep(PAGE_BEHIND_POLL).await;
                    continue;
                }
                TailAnswer::CatchingUp => return Err(refusal(ClientReply::Behind)),
                TailAnswer::NotHeld(Some(map)) => {
                    return Err(refusal(ClientReply::NotAReplica(map)))
                }
                TailAnswer::NotHeld(None) => {
                    return Err(Status::failed_precondition("this cluster serves no DMap"))
                }
                TailAnswer::Failed(error) => {
                    return Err(refusal(ClientReply::Done(MapReply::Failed(error))))
                }
            };
            let woken = tokio::time::timeout_at(heartbeat, self.changes.changed()).await;
            match woken {
                Ok(Ok(())) => continue,
                // The node is stopping.
                Ok(Err(_)) => return Err(Status::unavailable("the node is stopping")),
                Err(_) => {
                    return Ok(pb::LogEntries {
                        from: self.next,
                        entries: Vec::new(),
                        first,
                        end,
                    })
                }
            }
        }
    }
}
