//! One named log (DLog, thesis §3.5.2, Table 3.2): append, read by
//! position, trim, bounds, and a tail that follows new entries.

use crate::{Client, Error};
use amulet_api::pb;
use amulet_api::{error_kind, ErrorKind};
use amulet_dmap::{LogRead, MapCommand, MapName, MapReply};
use bytes::Bytes;
use std::collections::VecDeque;
use std::time::Duration;
use tonic::{Code, Status};

/// Entries of one read: at positions `from`, `from + 1`, ...
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogEntries {
    /// Position of the first entry.
    pub from: u64,
    /// The entries.
    pub entries: Vec<Bytes>,
    /// The log's first position when read (below it: trimmed).
    pub first: u64,
    /// The log's end when read (the position of its next append).
    pub end: u64,
}

/// A log's first position still held and its end.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LogBounds {
    /// The first position held; everything below was trimmed.
    pub first: u64,
    /// The position the next append gets.
    pub end: u64,
}

/// A handle on one log of the cluster; cheap to clone.
#[derive(Clone, Debug)]
pub struct DLog {
    client: Client,
    name: MapName,
}

fn unexpected(reply: MapReply) -> Error {
    Error::Protocol(format!("unexpected reply {reply:?}"))
}

impl DLog {
    pub(crate) fn new(client: Client, name: MapName) -> DLog {
        DLog { client, name }
    }

    /// The log's name.
    pub fn name(&self) -> &MapName {
        &self.name
    }

    /// Appends `value`; returns its position. Resent by the client under
    /// its session after a lost answer, it lands once.
    pub async fn append(&self, value: impl Into<Bytes>) -> Result<u64, Error> {
        let command = MapCommand::Append {
            log: self.name.clone(),
            value: value.into(),
        };
        match self.client.execute(command).await? {
            MapReply::Position(position) => Ok(position),
            other => Err(unexpected(other)),
        }
    }

    /// Up to `max_entries` entries from position `from` (fewer when the
    /// node's byte limit per read is reached; at least one when one
    /// exists). `from` equal to the end reads nothing; below the first
    /// position or past the end is [`Error::OutOfRange`].
    pub async fn read(&self, from: u64, max_entries: u32) -> Result<LogEntries, Error> {
        let command = MapCommand::ReadLog {
            log: self.name.clone(),
            from,
            max_entries,
        };
        match self.client.execute(command).await? {
            MapReply::LogEntries(LogRead {
                from,
                entries,
                first,
                end,
            }) => Ok(LogEntries {
                from,
                entries,
                first,
                end,
            }),
            other => Err(unexpected(other)),
        }
    }

    /// Drops the entries below `below` (at most the end); returns the
    /// bounds after.
    pub async fn trim(&self, below: u64) -> Result<LogBounds, Error> {
        self.bounds_of(MapCommand::TrimLog {
            log: self.name.clone(),
            below,
        })
        .await
    }

    /// The log's first position and end.
    pub async fn bounds(&self) -> Result<LogBounds, Error> {
        self.bounds_of(MapCommand::LogBounds {
            log: self.name.clone(),
        })
        .await
    }

    async fn bounds_of(&self, command: MapCommand) -> Result<LogBounds, Error> {
        match self.client.execute(command).await? {
            MapReply::LogBounds { first, end } => Ok(LogBounds { first, end }),
            other => Err(unexpected(other)),
        }
    }

    /// Follows the log from position `from`: [`Tail::next`] returns every
    /// entry from there in order, waiting for new ones. The entries come
    /// on a server stream (`TailLog`) from one replica of the log's
    /// partition as it executes them; when the stream breaks (the node
    /// stopped, the log moved, no heartbeat for [`TAIL_IDLE`]) the tail
    /// reopens it at another replica from the position after the last
    /// entry it got: no gap, no duplicate. The first `next` checks `from`
    /// against the log's bounds with an ordered read, so a tail below a
    /// trim or past the end fails at once even if the replica it reads is
    /// behind (later, a replica behind may serve entries a trim dropped
    /// elsewhere: a tail is a late reader). Against a node without
    /// `TailLog` it polls with linearizable reads instead, the pause
    /// growing from 1 ms to `max_poll`. A tail that falls below a trim
    /// gets [`Error::OutOfRange`]; a dropped log [`Error::NotFound`].
    pub fn tail(&self, from: u64, max_poll: Duration) -> Tail {
        Tail {
            log: self.clone(),
            next: from,
            buffered: VecDeque::new(),
            max_poll: max_poll.max(Duration::from_millis(1)),
            stream: None,
            polling: false,
            reconnects: 0,
            checked: false,
        }
    }
}

/// A follower of one log (see [`DLog::tail`]).
#[derive(Debug)]
pub struct Tail {
    log: DLog,
    /// Position of the entry after the buffered ones.
    next: u64,
    buffered: VecDeque<Bytes>,
    max_poll: Duration,
    /// The open `TailLog` stream, if any.
    stream: Option<tonic::Streaming<pb::LogEntries>>,
    /// The node has no `TailLog`: poll with reads.
    polling: bool,
    /// Streams reopened after breaking.
    reconnects: u64,
    /// The start was checked against the log's bounds.
    checked: bool,
}

/// Entries one polling read asks for.
const TAIL_READ_ENTRIES: u32 = 1024;

/// A stream silent this long (the node sends a heartbeat about every
/// second) is taken as broken and reopened elsewhere.
pub const TAIL_IDLE: Duration = Duration::from_secs(5);

impl Tail {
    /// The next entry and its position, waiting until one is appended.
    pub async fn next(&mut self) -> Result<(u64, Bytes), Error> {
        if !self.checked {
            let bounds = self.log.bounds().await?;
            if self.next < bounds.first || self.next > bounds.end {
                return Err(Error::OutOfRange(format!(
                    "a tail of {} from {} outside its positions {}..{}",
                    self.log.name, self.next, bounds.first, bounds.end
                )));
            }
            self.checked = true;
        }
        let mut backoff = None;
        loop {
            let buffered_from = self.next - self.buffered.len() as u64;
            if let Some(entry) = self.buffered.pop_front() {
                return Ok((buffered_from, entry));
            }
            if self.polling {
                return self.poll().await;
            }
            let failure = match self.stream.as_mut() {
                None => match self.log.client.tail_log(&self.log.name, self.next).await {
                    Ok(stream) => {
                        self.stream = Some(stream);
                        continue;
                    }
                    Err(status) if status.code() == Code::Unimplemented => {
                        self.polling = true;
                        continue;
                    }
                    Err(status) => status,
                },
                Some(stream) => match tokio::time::timeout(TAIL_IDLE, stream.message()).await {
                    Ok(Ok(Some(message))) => {
                        if message.from != self.next {
                            return Err(Error::Protocol(format!(
                                "a tail at position {} got entries from {}",
                                self.next, message.from
                            )));
                        }
                        backoff = None;
                        self.next += message.entries.len() as u64;
                        self.buffered.extend(message.entries);
                        continue;
                    }
                    Ok(Ok(None)) => Status::unavailable("the tail stream ended"),
                    Ok(Err(status)) => status,
                    Err(_) => Status::unavailable(format!("no message in {TAIL_IDLE:?}")),
                },
            };
            self.stream = None;
            let last_word = if failure.code() == Code::NotFound {
                // A replica behind the client (it has not executed the
                // log's creation) says "no such log": an ordered read tells.
                matches!(self.log.bounds().await, Err(Error::NotFound(_)))
            } else {
                is_final(&failure)
            };
            if last_word {
                return Err(Error::from_status(&failure));
            }
            // Somewhere else, after a pause: the replica stopped, is
            // catching up, or no longer holds the log (a newer map says
            // who does).
            self.reconnects += 1;
            if error_kind(&failure) == Some(ErrorKind::NotAReplica) {
                self.log.client.refresh_map().await;
            }
            let backoff = backoff.get_or_insert_with(|| self.log.client.backoff());
            let Some(until) = backoff.pause(self.log.client.now()) else {
                return Err(Error::Unavailable(format!(
                    "tail of {} at position {}: {}",
                    self.log.name,
                    self.next,
                    failure.message()
                )));
            };
            self.log.client.sleep_until(until).await;
        }
    }

    /// One entry by polling reads (a node without `TailLog`).
    async fn poll(&mut self) -> Result<(u64, Bytes), Error> {
        let mut pause = Duration::from_millis(1);
        loop {
            let read = self.log.read(self.next, TAIL_READ_ENTRIES).await?;
            if read.from != self.next {
                return Err(Error::Protocol(format!(
                    "asked for position {}, got entries from {}",
                    self.next, read.from
                )));
            }
            if let Some((first, rest)) = read.entries.split_first() {
                let position = self.next;
                self.next += read.entries.len() as u64;
                self.buffered.extend(rest.iter().cloned());
                return Ok((position, first.clone()));
            }
            tokio::time::sleep(pause).await;
            pause = (pause * 2).min(self.max_poll);
        }
    }

    /// The position of the entry `next` returns next.
    pub fn position(&self) -> u64 {
        self.next - self.buffered.len() as u64
    }

    /// How many times the tail's stream broke and was reopened.
    pub fn reconnects(&self) -> u64 {
        self.reconnects
    }
}

/// Whether a tail's failure is the tail's own (trimmed past, bad request,
/// a precondition other than where the log lives) rather than the
/// replica's. NOT_FOUND is judged apart (see `Tail::next`).
fn is_final(status: &Status) -> bool {
    // A revoked permission or token ends the tail (docs/security.md).
    matches!(
        status.code(),
        Code::OutOfRange | Code::InvalidArgument | Code::PermissionDenied | Code::Unauthenticated
    ) || (status.code() == Code::FailedPrecondition
        && error_kind(status) != Some(ErrorKind::NotAReplica))
}

impl Client {
    /// Opens a tail of `log` from position `from` at a random replica of
    /// the partition holding it (by the cached map).
    pub(crate) async fn tail_log(
        &self,
        log: &MapName,
        from: u64,
    ) -> Result<tonic::Streaming<pb::LogEntries>, Status> {
        let command = MapCommand::LogBounds { log: log.clone() };
        let address = match self.partitions_for(&command).first() {
            Some(partition) => self.replica_of(*partition),
            // A log the cached map does not know (yet): any node can say
            // whether it exists, and sends its newer map if it does.
            None => self.any_node().map(|(_, address)| address),
        }
        .map_err(|e| Status::unavailable(e.to_string()))?;
        let mut channel = self
            .channel(&address)
            .map_err(|e| Status::unavailable(e.to_string()))?;
        let request = pb::TailLogRequest {
            log: log.to_string(),
            from,
            max_bytes: 0,
            map_version: self.map_version(),
        };
        tokio::time::timeout(self.config().attempt_timeout, channel.tail_log(request))
            .await
            .map_err(|_| Status::deadline_exceeded(format!("{address} did not answer in time")))?
            .map(|r| r.into_inner())
    }
}
