//! An operation's attempts (DMap §III-B) as a state machine: the client
//! sends a command with its session and sequence, and resends it, with
//! the same sequence, until a replica answers or the deadline passes; a
//! replica executes a sequence once and answers a resend with the reply
//! it recorded, so an operation applies once however often it is sent.
//!
//! The driver (the gRPC client, the simulator) asks for the
//! [`Request`] to send, feeds back the [`Outcome`] it got, and does what
//! [`Next`] says. Time is an input (`now`), and so is randomness (the
//! generator passed to [`Resend::next_request`]).

use crate::rules::outcome::Outcome;
use crate::rules::routing::{any_node, partition_for, replica};
use crate::rules::session::Session;
use crate::Error;
use amulet_smr::{PartitionMap, Placement};
use amulet_types::{MapVersion, NodeId, PartitionId, TimeMicros};
use rand::RngCore;
use std::sync::Arc;
use std::time::Duration;

/// First pause between attempts, µs; doubled after each failed attempt.
pub const BACKOFF_MIN_MICROS: u64 = 10_000;
/// Longest pause between attempts, µs.
pub const BACKOFF_MAX_MICROS: u64 = 500_000;
/// Stale-map answers in a row an operation retries at once, with the map
/// the answer made it fetch, before it pauses like after any failure.
pub const STALE_MAP_RETRIES_AT_ONCE: u32 = 4;

/// How long attempts and operations may take.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Timing {
    /// Time without an answer after which an attempt counts as lost.
    pub attempt_timeout_micros: u64,
    /// Time an operation may take in all, retries included.
    pub operation_timeout_micros: u64,
    /// The session lease asked for; renewed when half of it elapsed.
    pub session_lease_micros: u64,
    /// First pause between attempts.
    pub backoff_min_micros: u64,
    /// Longest pause between attempts.
    pub backoff_max_micros: u64,
}

impl From<&crate::ClientConfig> for Timing {
    fn from(config: &crate::ClientConfig) -> Timing {
        let micros = |d: Duration| u64::try_from(d.as_micros()).unwrap_or(u64::MAX);
        Timing {
            attempt_timeout_micros: micros(config.attempt_timeout),
            operation_timeout_micros: micros(config.operation_timeout),
            session_lease_micros: micros(config.session_lease),
            backoff_min_micros: BACKOFF_MIN_MICROS,
            backoff_max_micros: BACKOFF_MAX_MICROS,
        }
    }
}

/// Pauses between attempts, doubling up to a limit, and the deadline
/// past which there is no further attempt.
#[derive(Clone, Debug)]
pub struct Backoff {
    deadline: TimeMicros,
    next_micros: u64,
    max_micros: u64,
}

impl Backoff {
    /// Attempts starting at `now` that may go on for `timeout_micros`.
    pub fn new(now: TimeMicros, timeout_micros: u64, timing: &Timing) -> Backoff {
        assert!(
            timing.backoff_min_micros <= timing.backoff_max_micros,
            "the first pause is at most the longest"
        );
        Backoff {
            deadline: TimeMicros(now.0.saturating_add(timeout_micros)),
            next_micros: timing.backoff_min_micros,
            max_micros: timing.backoff_max_micros,
        }
    }

    /// An attempt failed at `now`: when to try again, or `None` when the
    /// pause would reach the deadline (give up now rather than sleep
    /// through it).
    pub fn pause(&mut self, now: TimeMicros) -> Option<TimeMicros> {
        let until = now.0.saturating_add(self.next_micros);
        if until >= self.deadline.0 {
            return None;
        }
        self.next_micros = self.next_micros.saturating_mul(2).min(self.max_micros);
        Some(TimeMicros(until))
    }

    /// When the attempts must have ended.
    pub fn deadline(&self) -> TimeMicros {
        self.deadline
    }
}

/// What to send.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Request {
    /// Open (or renew) the session at `to`, carrying the client's map
    /// version.
    OpenSession {
        /// Any node.
        to: NodeId,
        /// The version of the client's cached map.
        map_version: MapVersion,
    },
    /// The command, for `partition`, with the session's current sequence.
    Command {
        /// A replica of `partition` (or, after "behind", maybe any node,
        /// which answers with its map if it is not one).
        to: NodeId,
        /// The partition the command is sent for.
        partition: PartitionId,
        /// The version of the map the command was routed by.
        map_version: MapVersion,
        /// The session's sequence for this operation.
        sequence: u64,
    },
}

impl Request {
    /// The node it goes to.
    pub fn to(&self) -> NodeId {
        match self {
            Request::OpenSession { to, .. } | Request::Command { to, .. } => *to,
        }
    }

    /// The map version it carries.
    pub fn map_version(&self) -> MapVersion {
        match self {
            Request::OpenSession { map_version, .. } | Request::Command { map_version, .. } => {
                *map_version
            }
        }
    }
}

/// What the driver does after an outcome.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Next<R> {
    /// The operation is done: the replica's reply.
    Done(R),
    /// The session is open: send the next request ([`Resend::next_request`])
    /// now.
    Continue,
    /// Try again: first get the freshest partition map there is if
    /// `refresh_map` (the cluster's map changed), then ask
    /// [`Resend::pause`] how long to wait (or whether to give up).
    Retry {
        /// Refresh the cached partition map before the next attempt.
        refresh_map: bool,
    },
    /// The operation failed.
    Fail(Error),
}

/// One operation's attempts.
#[derive(Clone, Debug)]
pub struct Resend {
    timing: Timing,
    /// A read changes nothing, so it never ends with an unknown outcome.
    read_only: bool,
    backoff: Backoff,
    /// Some attempt may have reached a replica and taken effect.
    maybe_applied: bool,
    /// The map the sequence was first routed by. Attempts keep it until a
    /// replica says it is stale: under a newer map (another task
    /// refreshed the cache) the command may belong to another stream (a
    /// partition split or merged in between), whose session record does
    /// not know an execution under the old one. A replica answers a
    /// stale-map resend it executed with its recorded reply.
    pinned: Option<Arc<PartitionMap>>,
    /// The request in flight and when it was sent.
    sent: Option<(Request, TimeMicros)>,
    /// Why the last attempt failed, for the error at the deadline.
    last: String,
    /// The client's seed for its own replica of a partition
    /// (`routing::preferred`); `None`: a random replica each attempt.
    prefer: Option<u64>,
    /// Stale-map answers in a row so far. A stale map is news, not a
    /// fault: the retry under the new map needs no pause. Pausing there
    /// starved whole-map commands (snapshot openings) while a balancer
    /// changed the map every half second: each retry came after the
    /// 500 ms backoff, by when the map had changed again (simulator seed
    /// 2002378 of `--dmap`: one client's opening refused 11 times in a
    /// row for 6 s). Bounded, so a replica that keeps answering stale
    /// cannot make the client spin.
    stale_in_a_row: u32,
    /// The next pause is none (the last answer was a stale map).
    retry_at_once: bool,
    /// When this operation first asked to open its session: a late
    /// `SessionOk` opens it, its lease counted from then (no later than
    /// whichever attempt it answers).
    opening_since: Option<TimeMicros>,
}

impl Resend {
    /// The attempts of an operation starting at `now`.
    pub fn new(now: TimeMicros, timing: &Timing, read_only: bool) -> Resend {
        Resend {
            timing: *timing,
            read_only,
            backoff: Backoff::new(now, timing.operation_timeout_micros, timing),
            maybe_applied: false,
            pinned: None,
            sent: None,
            last: String::from("no attempt yet"),
            prefer: None,
            stale_in_a_row: 0,
            retry_at_once: false,
            opening_since: None,
        }
    }

    /// The same attempts, each command sent to the replica `seed` prefers
    /// among those not left out (`routing::preferred`).
    pub fn preferring(mut self, seed: u64) -> Resend {
        self.prefer = Some(seed);
        self
    }

    /// The request to send now for a command placed at `placement`:
    /// opening the session if `session` needs it, else the command. `map`
    /// is the client's cached map (pinned at the first command attempt),
    /// `reachable` the nodes the client can address (ascending),
    /// `suspects` the nodes it suspects now (no answer lately, or behind),
    /// left out wherever another candidate remains: when opening a
    /// session, any other node; for a command, another replica of its
    /// partition. The suspects are an input of every attempt, not of the
    /// operation: read once at its start, nodes 1 and 2 of
    /// `dmap_repartitioning.rs` answered "behind" (adopting a partition)
    /// just before node 3 was killed, and every resend of both writers
    /// went to node 3, their one unsuspected replica, until the
    /// operation's 60 s deadline. At most one request is in flight: the
    /// previous one must have had its outcome.
    #[allow(clippy::too_many_arguments)] // the inputs of one attempt, each separate
    pub fn next_request(
        &mut self,
        session: &Session,
        now: TimeMicros,
        map: &Arc<PartitionMap>,
        placement: &Placement,
        reachable: &[NodeId],
        suspects: &[NodeId],
        rng: &mut (impl RngCore + ?Sized),
    ) -> Result<Request, Error> {
        assert!(
            self.sent.is_none(),
            "one request in flight at a time: feed the last one's outcome first"
        );
        let request = if session.needs_opening(now, self.timing.session_lease_micros) {
            let trusted: Vec<NodeId> = reachable
                .iter()
                .copied()
                .filter(|n| !suspects.contains(n))
                .collect();
            let nodes = if trusted.is_empty() {
                reachable
            } else {
                &trusted
            };
            let to = any_node(nodes, rng)
                .ok_or_else(|| Error::Unavailable("no node address known".into()))?;
            self.opening_since.get_or_insert(now);
            Request::OpenSession {
                to,
                map_version: map.version,
            }
        } else {
            let pinned = self.pinned.get_or_insert_with(|| map.clone());
            let partition = partition_for(pinned, placement)
                .ok_or_else(|| Error::Protocol("the partition map has no partitions".into()))?;
            // A replica of the partition, not the one that just failed
            // (one down or catching up should not get the resend too). A
            // node whose replicas all moved away answers "not a replica"
            // with the newest map it executed, so the client follows
            // the partition by refreshing its map.
            // The preferred replica for a first attempt; after a failure,
            // a random other one, as without a preference: a resend that
            // only avoided the last failure would alternate between two
            // replicas and never try a third (`amulet-sim --dmap --seed
            // 75`: a preferring client that resent that way completed
            // nothing after the heal).
            let avoid = session.failed_at();
            let prefer = self.prefer.filter(|_| avoid.is_none());
            let to = replica(pinned, partition, avoid, reachable, suspects, prefer, rng)
                .ok_or_else(|| {
                    Error::Protocol(format!("no address for a replica of {partition}"))
                })?;
            Request::Command {
                to,
                partition,
                map_version: pinned.version,
                sequence: session.sequence(),
            }
        };
        self.sent = Some((request.clone(), now));
        Ok(request)
    }

    /// The map the operation's command attempts are routed by now (`None`
    /// before the first one, and after a stale-map answer until the next).
    pub fn pinned(&self) -> Option<&Arc<PartitionMap>> {
        self.pinned.as_ref()
    }

    /// The request in flight, if any.
    pub fn in_flight(&self) -> Option<&Request> {
        self.sent.as_ref().map(|(request, _)| request)
    }

    /// Whether the request in flight went unanswered for the attempt
    /// timeout by `now` (a driver without timers of its own feeds
    /// [`Outcome::NoAnswer`] then).
    pub fn unanswered(&self, now: TimeMicros) -> bool {
        self.sent
            .as_ref()
            .is_some_and(|(_, at)| now.since(*at) >= self.timing.attempt_timeout_micros)
    }

    /// The outcome of the request in flight, at `now`.
    pub fn on_outcome<R>(
        &mut self,
        outcome: Outcome<R>,
        session: &mut Session,
        now: TimeMicros,
    ) -> Next<R> {
        let (request, sent_at) = self
            .sent
            .take()
            .expect("an outcome answers the request in flight");
        debug_assert!(now >= sent_at, "answers come after their requests");
        let command = matches!(request, Request::Command { .. });
        if command {
            let failed = !matches!(outcome, Outcome::Done(_));
            session.set_failed_at(failed.then_some(request.to()));
        }
        let stale = matches!(outcome, Outcome::StaleMap(_));
        self.stale_in_a_row = if stale { self.stale_in_a_row + 1 } else { 0 };
        self.retry_at_once = stale && self.stale_in_a_row <= STALE_MAP_RETRIES_AT_ONCE;
        // An opening that failed after a late answer to an earlier one
        // opened the session (`on_late_outcome`) is no news.
        let opened_late = !command
            && !matches!(outcome, Outcome::Refused(_))
            && !session.needs_opening(now, self.timing.session_lease_micros);
        if opened_late {
            return Next::Continue;
        }
        match outcome {
            Outcome::Done(reply) if command => Next::Done(reply),
            Outcome::SessionOk if !command => {
                session.opened(sent_at);
                Next::Continue
            }
            Outcome::Done(_) | Outcome::SessionOk => Next::Fail(Error::Protocol(
                "a command answered as a session opening, or the reverse".into(),
            )),
            Outcome::StaleMap(why) | Outcome::NotAReplica(why) => {
                // Only a command's answer ends the pin: an opening carries
                // the cached map's version, not the pinned one.
                if command {
                    self.pinned = None;
                }
                self.retry(why, true)
            }
            Outcome::Behind(why) | Outcome::Retryable(why) => self.retry(why, false),
            Outcome::SessionExpired(why) => {
                session.expired();
                self.retry(why, false)
            }
            Outcome::StaleSequence(_) => Next::Fail(Error::Protocol(
                "the session ran ahead of this client".into(),
            )),
            Outcome::ReplyLost(why) => Next::Fail(Error::OutcomeUnknown(why)),
            Outcome::NoAnswer(why) => {
                // An unanswered opening carried no command.
                self.maybe_applied |= command;
                self.retry(why, false)
            }
            Outcome::Refused(error) => Next::Fail(error),
        }
    }

    /// An answer to an earlier attempt of this operation, which was given
    /// up as unanswered.
    /// - The command's reply counts (it carries this operation's sequence,
    ///   executed once): `Some(Next::Done(reply))`, and the operation is
    ///   done.
    /// - A `SessionOk` while the session needs opening opens it, its lease
    ///   counted from this operation's first opening. With no request in
    ///   flight (the operation pausing before its next attempt):
    ///   `Some(Next::Continue)`, go on at once; with an opening in flight,
    ///   its own outcome still comes. Without this, openings ordered more
    ///   slowly than an attempt's timeout never open the session:
    ///   `amulet-sim --dmap --seed 9001528`, where after the heal each
    ///   opening was answered 0.3-0.6 s after it was sent and a client
    ///   sent openings for 3 s.
    /// - Anything else is stale news and ignored: `None`.
    pub fn on_late_outcome<R>(
        &mut self,
        outcome: Outcome<R>,
        session: &mut Session,
        now: TimeMicros,
    ) -> Option<Next<R>> {
        match outcome {
            Outcome::Done(reply) => {
                self.sent = None;
                Some(Next::Done(reply))
            }
            Outcome::SessionOk => {
                let since = self.opening_since?;
                if !session.needs_opening(now, self.timing.session_lease_micros) {
                    return None;
                }
                session.opened(since);
                debug_assert!(!session.needs_opening(since, self.timing.session_lease_micros));
                self.sent.is_none().then_some(Next::Continue)
            }
            _ => None,
        }
    }

    /// After a [`Next::Retry`] (and the map refresh it asked for), at
    /// `now`: when to send the next attempt, or the error to end with when
    /// that would pass the deadline: the outcome is unknown if a write may
    /// have applied, else the cluster was unavailable.
    pub fn pause(&mut self, now: TimeMicros) -> Result<TimeMicros, Error> {
        assert!(self.sent.is_none(), "no pause with a request in flight");
        if std::mem::take(&mut self.retry_at_once) && now < self.backoff.deadline() {
            return Ok(now);
        }
        self.backoff.pause(now).ok_or_else(|| {
            let why = format!(
                "gave up after {:?}: {}",
                Duration::from_micros(self.timing.operation_timeout_micros),
                self.last
            );
            if self.maybe_applied && !self.read_only {
                Error::OutcomeUnknown(why)
            } else {
                Error::Unavailable(why)
            }
        })
    }

    fn retry<R>(&mut self, why: String, refresh_map: bool) -> Next<R> {
        self.last = why;
        Next::Retry { refresh_map }
    }
}
