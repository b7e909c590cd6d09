//! A simulated transactional client (docs/transactions.md): one session,
//! one list-append transaction at a time. Begin and commit are commands
//! sent with the real client's rules ([`amulet_client::rules`]); the reads
//! at the read version are served by a live replica's host
//! ([`amulet_host::Host::read_at`], what the node's `ReadAt` serves),
//! read directly like snapshot pages. The history goes to the
//! transactional checker ([`crate::checker::transactions`]).
//!
//! Lists are values of the map: elements as decimal numbers joined by
//! commas. An append reads its list at the read version and writes the
//! list with the element added; every key read (appended ones too) is a
//! read conflict of the commit.

use crate::checker::transactions::{TxnEnd, TxnHistory, TxnMop};
use crate::dmap::client::{Send, RETRY_MICROS, SUSPECT_MICROS};
use crate::dmap::workload;
use crate::rng::Rng;
use amulet_client::rules::resend::{BACKOFF_MAX_MICROS, BACKOFF_MIN_MICROS};
use amulet_client::rules::{Next, Outcome, Resend, Session, Suspects, Timing};
use amulet_client::Error;
use amulet_dmap::{
    KeyRange, MapCommand, MapError, MapReply, PartitionState, ReadConflict, TxnWrite,
};
use amulet_smr::{ClientReply, Keys, PartitionMap, Placement, StateMachine};
use amulet_types::{NodeId, SessionId, TimeMicros};
use bytes::Bytes;
use std::sync::Arc;

/// Lists: keys `0..TXN_KEYS`.
const TXN_KEYS: u64 = 6;
/// Read version lease: long enough for any transaction of a run that is
/// not stuck behind a partition.
const READ_VERSION_LEASE_MICROS: u64 = 3_000_000;
/// A transaction whose reads cannot be served this long gives up (it
/// changed nothing).
const READ_GIVE_UP_MICROS: u64 = 2_000_000;
/// Session lease: the whole run.
const SESSION_LEASE_MICROS: u64 = 600_000_000;

fn timing() -> Timing {
    Timing {
        attempt_timeout_micros: RETRY_MICROS,
        operation_timeout_micros: u64::MAX,
        session_lease_micros: SESSION_LEASE_MICROS,
        backoff_min_micros: BACKOFF_MIN_MICROS,
        backoff_max_micros: BACKOFF_MAX_MICROS,
    }
}

/// The key of list `key`.
pub fn list_key(key: u64) -> Bytes {
    Bytes::from(format!("list{key}"))
}

fn decode_list(value: Option<&Bytes>) -> Result<Vec<u64>, String> {
    let Some(value) = value else {
        return Ok(Vec::new());
    };
    std::str::from_utf8(value)
        .map_err(|e| e.to_string())?
        .split(',')
        .map(|n| n.parse::<u64>().map_err(|e| format!("{n:?}: {e}")))
        .collect()
}

fn encode_list(list: &[u64]) -> Bytes {
    let text: Vec<String> = list.iter().map(u64::to_string).collect();
    Bytes::from(text.join(","))
}

/// What the client is doing.
#[derive(Clone, Debug)]
pub enum TxnPhase {
    /// Opening its session.
    Opening,
    /// Idle until `until`.
    Thinking {
        /// When to start the next transaction.
        until: u64,
    },
    /// Waiting for a read version.
    Beginning {
        /// The transaction.
        mops: Vec<TxnMop>,
        /// It reads every list with one range read.
        scan: bool,
    },
    /// Reading at `version`.
    Reading {
        /// The transaction, reads filled in as they are served.
        mops: Vec<TxnMop>,
        /// The read version.
        version: u64,
        /// The lists read so far, by key.
        lists: Vec<(u64, Vec<u64>)>,
        /// When reading started.
        since: u64,
        /// It reads every list with one range read.
        scan: bool,
    },
    /// Waiting for the commit's answer.
    Committing {
        /// The transaction, reads filled in.
        mops: Vec<TxnMop>,
        /// The commit sent.
        command: MapCommand,
    },
}

/// One simulated transactional client.
pub struct TxnClient {
    /// Its network address.
    pub endpoint: NodeId,
    session: Session,
    /// Its cached partition map.
    pub map: Arc<PartitionMap>,
    tag: u64,
    first_tag: u64,
    /// What it is doing.
    pub phase: TxnPhase,
    attempts: Option<Resend>,
    resume_at: Option<u64>,
    /// Transactions it ended after the network healed.
    pub completed_after_heal: u64,
    /// Its process in the history (a new one after an unknown outcome).
    process: i64,
    /// Broken on purpose: a transaction reuses the client's last read
    /// version (taken before it started) instead of beginning anew, as a
    /// client caching read versions would: serializable, not strict.
    pub reuse_read_versions: bool,
    /// The last read version and when it was taken.
    last_version: Option<(u64, u64)>,
    /// Nodes it leaves out for a while, as the map clients and the Rust
    /// client do (a dead node is not drawn for every opening and begin).
    suspects: Suspects,
    /// Off only in seeds pinned as before suspects (`Draws::KillsAndJoins`).
    avoids_suspects: bool,
}

impl TxnClient {
    /// A client about to open session `session`, as history process
    /// `process`.
    pub fn new(endpoint: NodeId, session: SessionId, map: PartitionMap, process: i64) -> TxnClient {
        TxnClient {
            endpoint,
            session: Session::with_id(session),
            map: Arc::new(map),
            tag: 0,
            first_tag: 1,
            phase: TxnPhase::Opening,
            attempts: None,
            resume_at: None,
            completed_after_heal: 0,
            process,
            reuse_read_versions: false,
            last_version: None,
            suspects: Suspects::default(),
            avoids_suspects: crate::dmap::cluster::new_draws(),
        }
    }

    /// The session's first request.
    pub fn start(&mut self, now: u64, rng: &mut Rng) -> Send {
        self.attempts = Some(Resend::new(TimeMicros(now), &timing(), true));
        self.first_tag = self.tag + 1;
        self.send(now, rng, None)
    }

    /// The request the rules ask for now.
    fn send(&mut self, now: u64, rng: &mut Rng, command: Option<MapCommand>) -> Send {
        let placement = match &command {
            Some(command) => PartitionState::placement(command),
            None => Placement {
                keyspace: None,
                keys: Keys::All,
            },
        };
        let attempts = self.attempts.as_mut().expect("an operation in progress");
        let reachable = self.map.hosting_nodes();
        let suspects = if self.avoids_suspects {
            self.suspects.at(TimeMicros(now))
        } else {
            Vec::new()
        };
        let request = attempts
            .next_request(
                &self.session,
                TimeMicros(now),
                &self.map,
                &placement,
                &reachable,
                &suspects,
                rng,
            )
            .expect("the map names replicas");
        self.tag += 1;
        Send::of(request, self.session.id(), self.tag, command)
    }

    /// The command the current phase sends.
    fn command(&self) -> Option<MapCommand> {
        match &self.phase {
            TxnPhase::Beginning { .. } => Some(MapCommand::BeginTransaction {
                lease_micros: READ_VERSION_LEASE_MICROS,
                end: Vec::new(),
            }),
            TxnPhase::Committing { command, .. } => Some(command.clone()),
            _ => None,
        }
    }

    /// Time passes: start a transaction, count an unanswered attempt as
    /// lost, or resend after a pause.
    pub fn tick(
        &mut self,
        now: u64,
        issue: bool,
        rng: &mut Rng,
        history: &mut TxnHistory,
        next_value: &mut u64,
    ) -> Option<Send> {
        match self.phase {
            TxnPhase::Thinking { until } if now >= until && issue => {
                let (mops, scan) = draw(rng, next_value);
                history.invoke(self.process, mops.clone());
                if let Some((version, _)) = self
                    .last_version
                    .filter(|(_, at)| self.reuse_read_versions && now - at < 1_000_000)
                {
                    self.phase = TxnPhase::Reading {
                        mops,
                        version,
                        lists: Vec::new(),
                        since: now,
                        scan,
                    };
                    return None;
                }
                self.phase = TxnPhase::Beginning { mops, scan };
                self.attempts = Some(Resend::new(TimeMicros(now), &timing(), false));
                self.first_tag = self.tag + 1;
                self.resume_at = None;
                let command = self.command();
                Some(self.send(now, rng, command))
            }
            TxnPhase::Opening | TxnPhase::Beginning { .. } | TxnPhase::Committing { .. } => {
                let attempts = self.attempts.as_mut()?;
                if attempts.unanswered(TimeMicros(now)) {
                    let lost = Outcome::NoAnswer(format!("no answer in {RETRY_MICROS} µs"));
                    if let Some(request) = attempts.in_flight() {
                        self.suspects
                            .judge(request.to(), &lost, TimeMicros(now), SUSPECT_MICROS);
                    }
                    match attempts.on_outcome::<MapReply>(lost, &mut self.session, TimeMicros(now))
                    {
                        Next::Retry { .. } => self.pause(now),
                        // An opening lost after a late answer to an
                        // earlier one opened the session.
                        Next::Continue => return self.session_open(now, rng, false),
                        other => unreachable!("a lost attempt is resent, not {other:?}"),
                    }
                    return None;
                }
                match self.resume_at {
                    Some(at) if now >= at => {
                        self.resume_at = None;
                        let command = self.command();
                        Some(self.send(now, rng, command))
                    }
                    _ => None,
                }
            }
            _ => None,
        }
    }

    /// The session is open: an opening operation ends (`healed` counts
    /// only transactions); a transaction that had to open it again resends
    /// its command now.
    fn session_open(&mut self, now: u64, rng: &mut Rng, healed: bool) -> Option<Send> {
        if matches!(self.phase, TxnPhase::Opening) {
            self.end(now, rng, healed);
            return None;
        }
        let command = self.command();
        Some(self.send(now, rng, command))
    }

    fn pause(&mut self, now: u64) {
        let attempts = self.attempts.as_mut().expect("an operation in progress");
        if let Ok(until) = attempts.pause(TimeMicros(now)) {
            self.resume_at = Some(until.0);
        }
    }

    /// The transaction ended.
    fn end(&mut self, now: u64, rng: &mut Rng, healed: bool) {
        if !matches!(self.phase, TxnPhase::Opening) {
            self.session.end_operation();
            self.completed_after_heal += u64::from(healed);
        }
        self.attempts = None;
        self.resume_at = None;
        self.phase = TxnPhase::Thinking {
            until: now + rng.range(0, 20_000),
        };
    }

    /// A reply for this client. Returns a request to send at once.
    #[allow(clippy::too_many_arguments)]
    pub fn on_reply(
        &mut self,
        now: u64,
        tag: u64,
        reply: ClientReply<MapReply>,
        healed: bool,
        rng: &mut Rng,
        history: &mut TxnHistory,
        new_process: &mut i64,
    ) -> Result<Option<Send>, String> {
        if tag < self.first_tag {
            return Ok(None);
        }
        let Some(attempts) = self.attempts.as_mut() else {
            return Ok(None);
        };
        let carried = match &reply {
            ClientReply::StaleMap(map) | ClientReply::NotAReplica(map) => Some(map.clone()),
            _ => None,
        };
        let outcome = Outcome::from(reply);
        let next = if let Some(request) = attempts.in_flight().filter(|_| tag == self.tag) {
            self.suspects
                .judge(request.to(), &outcome, TimeMicros(now), SUSPECT_MICROS);
            attempts.on_outcome(outcome, &mut self.session, TimeMicros(now))
        } else {
            // A late answer to an opening given up as unanswered opens
            // the session (`Resend::on_late_outcome`).
            match attempts.on_late_outcome(outcome, &mut self.session, TimeMicros(now)) {
                Some(next) => {
                    self.resume_at = None;
                    next
                }
                None => return Ok(None),
            }
        };
        match next {
            Next::Continue => Ok(self.session_open(now, rng, healed)),
            Next::Retry { refresh_map } => {
                if let Some(map) = carried.filter(|m| refresh_map && m.version > self.map.version) {
                    self.map = Arc::new(*map);
                }
                self.pause(now);
                Ok(None)
            }
            Next::Done(reply) => self.done(now, reply, healed, rng, history),
            Next::Fail(error) => self.failed(now, error, healed, rng, history, new_process),
        }
    }

    fn done(
        &mut self,
        now: u64,
        reply: MapReply,
        healed: bool,
        rng: &mut Rng,
        history: &mut TxnHistory,
    ) -> Result<Option<Send>, String> {
        match (self.phase.clone(), reply) {
            (TxnPhase::Beginning { mops, scan }, MapReply::ReadVersion(version)) => {
                // The commit is the session's next operation (a new
                // sequence: the same one would be answered as the begin).
                self.session.end_operation();
                self.attempts = None;
                self.last_version = Some((version, now));
                self.phase = TxnPhase::Reading {
                    mops,
                    version,
                    lists: Vec::new(),
                    since: now,
                    scan,
                };
                Ok(None)
            }
            (
                TxnPhase::Beginning { mops, .. },
                MapReply::Failed(
                    MapError::TooManyReadVersions(_) | MapError::TooManyUserReadVersions(_),
                ),
            ) => {
                history.complete(self.process, TxnEnd::Fail, mops);
                self.end(now, rng, healed);
                Ok(None)
            }
            (TxnPhase::Committing { mops, .. }, MapReply::Done) => {
                history.complete(self.process, TxnEnd::Ok, mops);
                self.end(now, rng, healed);
                Ok(None)
            }
            (
                TxnPhase::Committing { mops, .. },
                MapReply::Failed(MapError::Conflict { .. } | MapError::ReadVersionTooOld(_)),
            ) => {
                history.complete(self.process, TxnEnd::Fail, mops);
                self.end(now, rng, healed);
                Ok(None)
            }
            (phase, reply) => Err(format!("unexpected reply {reply:?} while {phase:?}")),
        }
    }

    fn failed(
        &mut self,
        now: u64,
        error: Error,
        healed: bool,
        rng: &mut Rng,
        history: &mut TxnHistory,
        new_process: &mut i64,
    ) -> Result<Option<Send>, String> {
        match (self.phase.clone(), &error) {
            (
                TxnPhase::Beginning { mops, .. },
                Error::OutcomeUnknown(_) | Error::Unavailable(_),
            ) => {
                // No read version: nothing of the transaction happened.
                history.complete(self.process, TxnEnd::Fail, mops);
            }
            (
                TxnPhase::Committing { mops, .. },
                Error::OutcomeUnknown(_) | Error::Unavailable(_),
            ) => {
                // The reads belong to a transaction that may not have
                // committed: as invoked.
                history.complete(self.process, TxnEnd::Info, unread(mops));
                self.process = *new_process;
                *new_process += 1;
            }
            (
                TxnPhase::Committing { mops, .. },
                Error::Conflict { .. } | Error::ReadVersionTooOld(_),
            ) => {
                history.complete(self.process, TxnEnd::Fail, mops);
            }
            (phase, _) => return Err(format!("unexpected failure while {phase:?}: {error}")),
        }
        self.end(now, rng, healed);
        Ok(None)
    }

    /// The reads of the transaction, served (`lists` complete): the commit
    /// to send, or `None` for a read-only transaction, which ends now.
    pub fn read_all(
        &mut self,
        now: u64,
        healed: bool,
        rng: &mut Rng,
        history: &mut TxnHistory,
    ) -> Option<Send> {
        let TxnPhase::Reading {
            mops,
            version,
            lists,
            scan,
            ..
        } = self.phase.clone()
        else {
            return None;
        };
        let list_of = |key: u64| {
            lists
                .iter()
                .find(|(k, _)| *k == key)
                .map(|(_, l)| l.clone())
                .expect("every key was read")
        };
        let mut reads = Vec::new();
        let mut writes: Vec<TxnWrite> = Vec::new();
        let mut lists_now: Vec<(u64, Vec<u64>)> = Vec::new();
        let mut done = Vec::with_capacity(mops.len());
        for mop in mops {
            match mop {
                TxnMop::Read { key, .. } => {
                    // Reads see the transaction's own appends.
                    let list = lists_now
                        .iter()
                        .find(|(k, _)| *k == key)
                        .map_or_else(|| list_of(key), |(_, l)| l.clone());
                    done.push(TxnMop::Read {
                        key,
                        value: Some(list),
                    });
                }
                TxnMop::Append { key, value } => {
                    let mut list = lists_now
                        .iter()
                        .find(|(k, _)| *k == key)
                        .map_or_else(|| list_of(key), |(_, l)| l.clone());
                    list.push(value);
                    lists_now.retain(|(k, _)| *k != key);
                    lists_now.push((key, list));
                    done.push(TxnMop::Append { key, value });
                }
            }
        }
        if scan {
            reads.push(ReadConflict {
                map: workload::map_name(),
                range: scan_range(),
            });
        } else {
            for (key, _) in &lists {
                reads.push(ReadConflict {
                    map: workload::map_name(),
                    range: KeyRange::single(list_key(*key)),
                });
            }
        }
        for (key, list) in &lists_now {
            writes.push(TxnWrite {
                map: workload::map_name(),
                key: list_key(*key),
                value: Some(encode_list(list)),
            });
        }
        if writes.is_empty() {
            history.complete(self.process, TxnEnd::Ok, done);
            self.end(now, rng, healed);
            return None;
        }
        let command = MapCommand::Commit {
            read_version: Some(version),
            reads,
            writes,
        };
        self.phase = TxnPhase::Committing {
            mops: done,
            command: command.clone(),
        };
        self.attempts = Some(Resend::new(TimeMicros(now), &timing(), false));
        self.first_tag = self.tag + 1;
        self.resume_at = None;
        Some(self.send(now, rng, Some(command)))
    }

    /// What is still to read: the read version, the keys, and whether
    /// they are read together by one range read; `None` unless reading.
    pub fn to_read(&self) -> Option<(u64, Vec<u64>, bool)> {
        let TxnPhase::Reading {
            mops,
            version,
            lists,
            scan,
            ..
        } = &self.phase
        else {
            return None;
        };
        let mut keys: Vec<u64> = mops
            .iter()
            .map(|m| match m {
                TxnMop::Read { key, .. } | TxnMop::Append { key, .. } => *key,
            })
            .filter(|k| !lists.iter().any(|(read, _)| read == k))
            .collect();
        keys.sort();
        keys.dedup();
        Some((*version, keys, *scan))
    }

    /// List `key` was read at the read version.
    pub fn read_one(&mut self, key: u64, value: Option<&Bytes>) -> Result<(), String> {
        let list = decode_list(value)?;
        if let TxnPhase::Reading { lists, .. } = &mut self.phase {
            lists.push((key, list));
        }
        Ok(())
    }

    /// The reads could not be served (the read version ended, or no
    /// replica holds it): the transaction changed nothing.
    pub fn give_up_reading(
        &mut self,
        now: u64,
        healed: bool,
        rng: &mut Rng,
        history: &mut TxnHistory,
    ) {
        if let TxnPhase::Reading { mops, .. } = self.phase.clone() {
            history.complete(self.process, TxnEnd::Fail, mops);
            self.end(now, rng, healed);
        }
    }

    /// Whether reading has gone on too long.
    pub fn reading_too_long(&self, now: u64) -> bool {
        matches!(self.phase, TxnPhase::Reading { since, .. } if now.saturating_sub(since) > READ_GIVE_UP_MICROS)
    }
}

/// `mops` with the reads unknown (a transaction that did not commit, or
/// may not have).
fn unread(mops: Vec<TxnMop>) -> Vec<TxnMop> {
    mops.into_iter()
        .map(|m| match m {
            TxnMop::Read { key, .. } => TxnMop::Read { key, value: None },
            append => append,
        })
        .collect()
}

/// The range read of every list.
pub fn scan_range() -> KeyRange {
    KeyRange {
        from: Some(amulet_dmap::KeyBound {
            key: list_key(0),
            inclusive: true,
        }),
        to: Some(amulet_dmap::KeyBound {
            key: list_key(TXN_KEYS - 1),
            inclusive: true,
        }),
    }
}

/// Every list key.
pub fn all_keys() -> impl Iterator<Item = u64> {
    0..TXN_KEYS
}

/// Draws a transaction, and whether it reads every list with one range
/// read. Two in five are read-only and read 2–4 lists (at one read
/// version: across partitions, the snapshot a strict read version must
/// give); the others append fresh elements to 1–2 lists (mostly
/// single-partition commits, on their partition's own stream), after
/// reading another one half of the time. One in five reads every list
/// with a range read instead (its conflict is the whole range: an append
/// anywhere in it since the read version conflicts).
fn draw(rng: &mut Rng, next_value: &mut u64) -> (Vec<TxnMop>, bool) {
    let mut mops = Vec::new();
    let scan = rng.chance(0.2);
    if scan {
        mops.extend(all_keys().map(|key| TxnMop::Read { key, value: None }));
        if rng.chance(0.5) {
            return (mops, true);
        }
    } else if rng.chance(0.4) {
        let n = rng.range(2, 4);
        for _ in 0..n {
            mops.push(TxnMop::Read {
                key: rng.below(TXN_KEYS),
                value: None,
            });
        }
        return (mops, false);
    } else if rng.chance(0.5) {
        mops.push(TxnMop::Read {
            key: rng.below(TXN_KEYS),
            value: None,
        });
    }
    for _ in 0..rng.range(1, 2) {
        *next_value += 1;
        mops.push(TxnMop::Append {
            key: rng.below(TXN_KEYS),
            value: *next_value,
        });
    }
    (mops, scan)
}
