//! One named log (DLog, thesis §3.5.2, Table 3.2): append, read by
//! position, trim, bounds, and a tail that follows new entries.

use crate::{Client, Error};
use amulet_dmap::{LogRead, MapCommand, MapName, MapReply};
use bytes::Bytes;
use std::collections::VecDeque;
use std::time::Duration;

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
    /// entry from there in order, waiting for new ones. Each read is a
    /// linearizable read of the log; when it is caught up it polls, the
    /// pause growing from 1 ms to `max_poll`. Resume after a disconnect
    /// with the position after the last entry seen: no gap, no
    /// duplicate. A tail that falls below a trim gets
    /// [`Error::OutOfRange`].
    pub fn tail(&self, from: u64, max_poll: Duration) -> Tail {
        Tail {
            log: self.clone(),
            next: from,
            buffered: VecDeque::new(),
            max_poll: max_poll.max(Duration::from_millis(1)),
        }
    }
}

/// A follower of one log (see [`DLog::tail`]).
#[derive(Debug)]
pub struct Tail {
    log: DLog,
    /// Position of the next entry `next` returns.
    next: u64,
    buffered: VecDeque<Bytes>,
    max_poll: Duration,
}

/// Entries one tail read asks for.
const TAIL_READ_ENTRIES: u32 = 1024;

impl Tail {
    /// The next entry and its position, waiting until one is appended.
    pub async fn next(&mut self) -> Result<(u64, Bytes), Error> {
        let mut pause = Duration::from_millis(1);
        loop {
            let buffered_from = self.next - self.buffered.len() as u64;
            if let Some(entry) = self.buffered.pop_front() {
                return Ok((buffered_from, entry));
            }
            let read = self.log.read(self.next, TAIL_READ_ENTRIES).await?;
            if read.from != self.next {
                return Err(Error::Protocol(format!(
                    "asked for position {}, got entries from {}",
                    self.next, read.from
                )));
            }
            if read.entries.is_empty() {
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(self.max_poll);
                continue;
            }
            self.next += read.entries.len() as u64;
            self.buffered.extend(read.entries);
        }
    }

    /// The position of the entry `next` returns next.
    pub fn position(&self) -> u64 {
        self.next - self.buffered.len() as u64
    }
}
