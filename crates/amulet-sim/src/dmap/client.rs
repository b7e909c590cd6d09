//! A simulated DMap client: one session, one operation at a time. Its
//! routing, resends and session handling are the real client's rules
//! ([`amulet_client::rules`]), driven with virtual time and the seed's
//! generator; what is the simulator's own is the workload (including
//! map churn), the history the linearizability checker reads, and the
//! reading of snapshot pages.

use crate::checker::linearizability::Call;
use crate::dmap::workload;
use crate::dmap::{MapOp, Observed};
use crate::rng::Rng;
use amulet_client::rules::resend::{BACKOFF_MAX_MICROS, BACKOFF_MIN_MICROS};
use amulet_client::rules::{Next, Outcome, Request, Resend, Session, Suspects, Timing};
use amulet_client::Error;
use amulet_dmap::{MapCommand, MapReply, PartitionState};
use amulet_smr::{Body, ClientReply, ClientRequest, Keys, PartitionMap, Placement, StateMachine};
use amulet_types::{NodeId, PartitionId, SessionId, TimeMicros};
use std::sync::Arc;

/// Chance that an operation of a map-churning client creates or drops
/// another map instead.
const MAP_CHURN_PROBABILITY: f64 = 0.03;
/// Time without a reply before the request counts as lost and is sent
/// again, µs.
pub const RETRY_MICROS: u64 = 300_000;
/// How long a node that left an attempt unanswered is avoided: two
/// attempt timeouts, as the gRPC client does.
pub(crate) const SUSPECT_MICROS: u64 = 2 * RETRY_MICROS;
/// Snapshot lease: the whole run.
const SNAPSHOT_LEASE_MICROS: u64 = 600_000_000;
/// Session lease: the whole run (expiry is covered by unit tests).
const SESSION_LEASE_MICROS: u64 = 600_000_000;

/// The rules' times for a simulated client. An operation never gives up:
/// the run's liveness phase checks that every operation ends, and an
/// operation given up would only leave the checker another pending call.
fn timing() -> Timing {
    Timing {
        attempt_timeout_micros: RETRY_MICROS,
        operation_timeout_micros: u64::MAX,
        session_lease_micros: SESSION_LEASE_MICROS,
        backoff_min_micros: BACKOFF_MIN_MICROS,
        backoff_max_micros: BACKOFF_MAX_MICROS,
    }
}

/// The placement the session's first opening is asked for with: the
/// session is not open, so the rules answer with an opening and never
/// route by it.
fn opening_only() -> Placement {
    Placement {
        keyspace: None,
        keys: Keys::All,
    }
}

/// What the client is doing.
#[derive(Clone, Debug)]
pub enum Phase {
    /// Opening its session.
    Opening {
        /// Last send.
        sent_at: u64,
    },
    /// Idle until `until`.
    Thinking {
        /// When to start the next operation.
        until: u64,
    },
    /// Waiting for the reply to `call`.
    Waiting {
        /// Index of the call in the history; `None` for a command on
        /// another map (creating and dropping maps changes the partition
        /// map's version under the other clients' feet).
        call: Option<usize>,
        /// The command sent.
        command: MapCommand,
        /// Last send.
        sent_at: u64,
    },
    /// Reading the pages of snapshot `snapshot` for `call`.
    Reading {
        /// Index of the call in the history.
        call: usize,
        /// The snapshot (its global position).
        snapshot: u64,
        /// When the open was answered.
        opened_at: u64,
        /// The partitions at the snapshot's opening (whose pages make it).
        partitions: Vec<PartitionId>,
    },
}

/// A request the cluster must carry from the client to `to`.
pub struct Send {
    /// The node.
    pub to: NodeId,
    /// The partition whose replica at `to` takes it (`None`: any).
    pub partition: Option<PartitionId>,
    /// Tag matching replies to the attempt.
    pub tag: u64,
    /// The request.
    pub request: ClientRequest<MapCommand>,
}

impl Send {
    /// What the client's rules chose for an attempt, as the replica at
    /// `to` receives it: opening `session`, or `command` under its
    /// sequence. Session requests are not deduplicated (opening is
    /// idempotent), so they carry sequence 0.
    pub fn of(request: Request, session: SessionId, tag: u64, command: Option<MapCommand>) -> Send {
        Send::of_principal(request, session, tag, command, None)
    }

    /// [`Send::of`], sent as `principal` (docs/security.md).
    pub fn of_principal(
        request: Request,
        session: SessionId,
        tag: u64,
        command: Option<MapCommand>,
        principal: Option<amulet_smr::Principal>,
    ) -> Send {
        match request {
            Request::OpenSession { to, map_version } => Send {
                to,
                partition: None,
                tag,
                request: ClientRequest {
                    map_version,
                    session: Some((session, 0)),
                    body: Body::OpenSession {
                        lease_micros: SESSION_LEASE_MICROS,
                    },
                    principal,
                },
            },
            Request::Command {
                to,
                partition,
                map_version,
                sequence,
            } => Send {
                to,
                partition: Some(partition),
                tag,
                request: ClientRequest {
                    map_version,
                    session: Some((session, sequence)),
                    body: Body::App(command.expect("a command to send")),
                    principal,
                },
            },
        }
    }
}

/// One simulated client.
pub struct SimClient {
    /// Its network address.
    pub endpoint: NodeId,
    session: Session,
    /// Its cached partition map.
    pub map: Arc<PartitionMap>,
    /// Tag of the last request sent (one per attempt).
    tag: u64,
    /// Tag of the current operation's first attempt: a reply with a lower
    /// tag answers an operation that ended.
    first_tag: u64,
    /// What it is doing.
    pub phase: Phase,
    /// Operations it completed after the network healed.
    pub completed_after_heal: u64,
    /// Requests refused as routed by a stale map: single-key commands
    /// (what fence keys judge), then the others.
    pub stale_refusals: [u64; 2],
    /// Broken on purpose (`DmapBug::ClientKeepsStaleRanges`): a refusal's
    /// map is ignored.
    pub keeps_stale_ranges: bool,
    /// Whether it sometimes creates or drops another map.
    pub churns_maps: bool,
    /// Draws field-record operations too (`ClientKind::Fields`).
    pub merges_fields: bool,
    /// Draws log commands too (`ClientKind::Logs`).
    pub appends_logs: bool,
    /// Who it is (`ClientKind::Access`): its commands may be denied.
    pub principal: Option<amulet_smr::Principal>,
    /// The attempts of the current operation (or of the first opening).
    attempts: Option<Resend>,
    /// The map each command attempt of the current operation was routed
    /// by, by tag: a snapshot's partitions are those of the map its
    /// opening executed under.
    routed_by: Vec<(u64, Arc<PartitionMap>)>,
    /// After a failed attempt, when to send the next one.
    resume_at: Option<u64>,
    /// The seed of the replica it prefers (`Resend::preferring`, the
    /// gRPC client's default), for the clients with an odd session id;
    /// the others send to a random replica each attempt.
    prefer: Option<u64>,
    /// Nodes that left an attempt unanswered or said they are behind,
    /// avoided for two attempt timeouts, as the gRPC client does
    /// (`amulet_client::rules::Suspects`).
    suspects: Suspects,
    /// Off only in seeds pinned as before suspects (`Draws::KillsAndJoins`).
    avoids_suspects: bool,
}

impl SimClient {
    /// A client about to open session `session`.
    pub fn new(endpoint: NodeId, session: SessionId, map: PartitionMap) -> SimClient {
        SimClient {
            endpoint,
            session: Session::with_id(session),
            map: Arc::new(map),
            tag: 0,
            first_tag: 1,
            phase: Phase::Opening { sent_at: 0 },
            completed_after_heal: 0,
            stale_refusals: [0; 2],
            keeps_stale_ranges: false,
            churns_maps: false,
            merges_fields: false,
            appends_logs: false,
            principal: None,
            attempts: None,
            suspects: Suspects::default(),
            avoids_suspects: crate::dmap::cluster::new_draws(),
            routed_by: Vec::new(),
            resume_at: None,
            prefer: (session.0 % 2 == 1).then(|| session.0.wrapping_mul(0x9E37_79B9_7F4A_7C15)),
        }
    }

    /// The session's first request.
    pub fn start(&mut self, now: u64, rng: &mut Rng) -> Send {
        // Opening changes nothing: read-only attempts.
        self.begin(now, true);
        self.phase = Phase::Opening { sent_at: now };
        self.send(now, rng)
    }

    /// Starts an operation's attempts at `now`.
    fn begin(&mut self, now: u64, read_only: bool) {
        let attempts = Resend::new(TimeMicros(now), &timing(), read_only);
        self.attempts = Some(match self.prefer {
            Some(seed) => attempts.preferring(seed),
            None => attempts,
        });
        self.first_tag = self.tag + 1;
        self.routed_by.clear();
        self.resume_at = None;
    }

    /// The request the rules ask for now.
    fn send(&mut self, now: u64, rng: &mut Rng) -> Send {
        let (command, placement) = match &mut self.phase {
            Phase::Opening { sent_at } => {
                *sent_at = now;
                (None, opening_only())
            }
            Phase::Waiting {
                command, sent_at, ..
            } => {
                *sent_at = now;
                let placement = PartitionState::placement(command);
                (Some(command.clone()), placement)
            }
            other => unreachable!("nothing to send while {other:?}"),
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
        let tag = self.tag;
        if matches!(request, Request::Command { .. }) {
            let pinned = attempts.pinned().expect("a command is routed by a map");
            self.routed_by.push((tag, pinned.clone()));
        }
        Send::of_principal(
            request,
            self.session.id(),
            tag,
            command,
            self.principal.clone(),
        )
    }

    /// Time passes: start an operation, count an unanswered attempt as
    /// lost, or resend after a pause. `issue` is false once the run stops
    /// starting operations.
    pub fn tick(
        &mut self,
        now: u64,
        issue: bool,
        rng: &mut Rng,
        calls: &mut Vec<Call<MapOp, Observed>>,
    ) -> Option<Send> {
        match self.phase {
            Phase::Thinking { until } if now >= until && issue => {
                let (call, command) = if self.churns_maps && rng.chance(MAP_CHURN_PROBABILITY) {
                    (None, workload::draw_map_churn(rng))
                } else {
                    let op = if self.merges_fields {
                        workload::draw_with_fields(rng)
                    } else if self.appends_logs {
                        workload::draw_with_logs(rng)
                    } else {
                        workload::draw(rng)
                    };
                    let command = match &op {
                        MapOp::Command(command) => command.clone(),
                        MapOp::Scan => MapCommand::OpenSnapshot {
                            map: workload::map_name(),
                            lease_micros: SNAPSHOT_LEASE_MICROS,
                        },
                        MapOp::Denied(_) => unreachable!("drawn operations are never denied yet"),
                    };
                    calls.push(Call {
                        invoke: now,
                        complete: None,
                        op,
                        result: None,
                    });
                    (Some(calls.len() - 1), command)
                };
                self.begin(now, command.is_read_only());
                self.phase = Phase::Waiting {
                    call,
                    command,
                    sent_at: now,
                };
                Some(self.send(now, rng))
            }
            Phase::Opening { .. } | Phase::Waiting { .. } => {
                let attempts = self.attempts.as_mut()?;
                if attempts.unanswered(TimeMicros(now)) {
                    let lost = Outcome::NoAnswer(format!("no answer in {RETRY_MICROS} µs"));
                    if let Some(request) = attempts.in_flight() {
                        self.suspects
                            .judge(request.to(), &lost, TimeMicros(now), SUSPECT_MICROS);
                    }
                    match attempts.on_outcome::<MapReply>(lost, &mut self.session, TimeMicros(now))
                    {
                        Next::Retry { .. } => self.pause(now, rng),
                        // An opening lost after a late answer to an
                        // earlier one opened the session.
                        Next::Continue => return self.session_open(now, rng),
                        other => unreachable!("a lost attempt is resent, not {other:?}"),
                    }
                    return None;
                }
                match self.resume_at {
                    Some(at) if now >= at => {
                        self.resume_at = None;
                        Some(self.send(now, rng))
                    }
                    _ => None,
                }
            }
            _ => None,
        }
    }

    /// The session is open: an opening operation ends; an operation that
    /// had to open it again resends its command now.
    fn session_open(&mut self, now: u64, rng: &mut Rng) -> Option<Send> {
        match self.phase {
            Phase::Opening { .. } => {
                self.end(now, rng);
                None
            }
            _ => Some(self.send(now, rng)),
        }
    }

    /// After a failed attempt: wait as the rules say, or give up (the
    /// call stays pending: its outcome is unknown, never wrong).
    fn pause(&mut self, now: u64, rng: &mut Rng) {
        let attempts = self.attempts.as_mut().expect("an operation in progress");
        match attempts.pause(TimeMicros(now)) {
            Ok(until) => self.resume_at = Some(until.0),
            Err(_) => self.end(now, rng),
        }
    }

    /// The current operation ended: think.
    fn end(&mut self, now: u64, rng: &mut Rng) {
        if matches!(self.phase, Phase::Waiting { .. }) {
            self.session.end_operation();
        }
        self.attempts = None;
        self.resume_at = None;
        self.phase = Phase::Thinking {
            until: now + rng.range(0, 20_000),
        };
    }

    /// A reply for this client. Returns a request to send at once, if any.
    pub fn on_reply(
        &mut self,
        now: u64,
        tag: u64,
        reply: ClientReply<MapReply>,
        healed: bool,
        rng: &mut Rng,
        calls: &mut [Call<MapOp, Observed>],
    ) -> Result<Option<Send>, String> {
        if tag < self.first_tag {
            return Ok(None); // a late reply to an earlier operation
        }
        let Some(attempts) = self.attempts.as_mut() else {
            return Ok(None);
        };
        // A replica saying the map is stale hands over its own: the
        // simulated client's refresh.
        let carried = match &reply {
            ClientReply::StaleMap(map) | ClientReply::NotAReplica(map) => Some(map.clone()),
            _ => None,
        };
        if matches!(reply, ClientReply::StaleMap(_)) {
            // Single-key commands are what fence keys judge; the others
            // (spanning partitions, snapshots) stay judged by version.
            let single_key = matches!(&self.phase, Phase::Waiting { command, .. }
                if matches!(PartitionState::placement(command).keys, amulet_smr::Keys::One(_)));
            self.stale_refusals[usize::from(!single_key)] += 1;
        }
        let carried = carried.filter(|_| !self.keeps_stale_ranges);
        let outcome = Outcome::from(reply);
        let next = if let Some(request) = attempts.in_flight().filter(|_| tag == self.tag) {
            self.suspects
                .judge(request.to(), &outcome, TimeMicros(now), SUSPECT_MICROS);
            attempts.on_outcome(outcome, &mut self.session, TimeMicros(now))
        } else {
            // An attempt given up as lost, answered after all.
            match attempts.on_late_outcome(outcome, &mut self.session, TimeMicros(now)) {
                Some(next) => {
                    // No pause to end: the operation goes on now.
                    self.resume_at = None;
                    next
                }
                None => return Ok(None),
            }
        };
        match next {
            Next::Continue => Ok(self.session_open(now, rng)),
            Next::Retry { refresh_map } => {
                if let Some(map) = carried.filter(|m| refresh_map && m.version > self.map.version) {
                    self.map = Arc::new(*map);
                }
                self.pause(now, rng);
                Ok(None)
            }
            Next::Done(reply) => self.done(now, reply, healed, rng, calls),
            Next::Fail(error) => self.failed(now, error, rng, calls, healed),
        }
    }

    /// The operation's reply came.
    fn done(
        &mut self,
        now: u64,
        reply: MapReply,
        healed: bool,
        rng: &mut Rng,
        calls: &mut [Call<MapOp, Observed>],
    ) -> Result<Option<Send>, String> {
        let Phase::Waiting { call, command, .. } = self.phase.clone() else {
            return Err(format!("a reply {reply:?} to no command"));
        };
        // The newest map any attempt of this operation was routed by, not
        // the answered attempt's: a retry carrying an older map version is
        // answered from the session table with the reply of the attempt
        // that executed (under a newer map), so the answered tag's map can
        // be older than the one the command ran under (seed 4002138 of
        // `--logs`: an opening resent under the split map ran in two
        // partitions, its reply came back to the first attempt, routed
        // before the split, and the scan read one of them). The newest is
        // at least the executing one; a partition it adds since holds no
        // pages and fails the read, which leaves the call pending.
        let routed_by = self
            .routed_by
            .iter()
            .max_by_key(|(_, map)| map.version)
            .map(|(_, map)| map.clone());
        self.end(now, rng);
        let Some(call) = call else {
            let expected = matches!(
                reply,
                MapReply::Done | MapReply::Failed(amulet_dmap::MapError::MapExists(_))
            ) || matches!(
                (&command, &reply),
                (
                    MapCommand::DropMap { .. },
                    MapReply::Failed(amulet_dmap::MapError::UnknownMap(_))
                )
            );
            if !expected {
                return Err(format!("unexpected reply {reply:?} to {command:?}"));
            }
            return Ok(None);
        };
        if calls[call].op == MapOp::Scan {
            let MapReply::Snapshot(snapshot) = reply else {
                return Err(format!("opening a snapshot failed: {reply:?}"));
            };
            // The partitions the opening involved by the newest map its
            // attempts were routed by (above): a partition holding none of
            // the map's keys (a range map whose split moved no range) took
            // no snapshot.
            let map = routed_by.ok_or("a snapshot opened by no attempt")?;
            let partitions = map
                .partitions_for(&PartitionState::placement(&command))
                .map_err(|e| format!("the snapshot's map is unknown: {e}"))?;
            self.phase = Phase::Reading {
                call,
                snapshot,
                opened_at: now,
                partitions,
            };
            return Ok(None);
        }
        calls[call].complete = Some(now);
        calls[call].result = Some(Observed::Reply(reply));
        self.completed_after_heal += u64::from(healed);
        Ok(None)
    }

    /// The operation failed for good.
    fn failed(
        &mut self,
        now: u64,
        error: Error,
        rng: &mut Rng,
        calls: &mut [Call<MapOp, Observed>],
        healed: bool,
    ) -> Result<Option<Send>, String> {
        let phase = self.phase.clone();
        self.end(now, rng);
        match (&phase, &error) {
            // Took effect (or may have), reply unknown: the call stays
            // pending.
            (_, Error::OutcomeUnknown(_) | Error::Unavailable(_)) => Ok(None),
            // Denied at its point of the order: checked as taking no
            // effect (a replica that applied it shows in later reads).
            (Phase::Waiting { call, .. }, Error::PermissionDenied(_))
                if self.principal.is_some() =>
            {
                if let Some(call) = *call {
                    let asked = format!("{:?}", calls[call].op);
                    calls[call].op = MapOp::Denied(asked);
                    calls[call].complete = Some(now);
                    calls[call].result = Some(Observed::Denied);
                }
                // An answer: the cluster made progress for this client.
                self.completed_after_heal += u64::from(healed);
                Ok(None)
            }
            // Creating a map that exists, dropping one that does not.
            (
                Phase::Waiting {
                    call: None,
                    command: MapCommand::CreateMap { .. },
                    ..
                },
                Error::AlreadyExists(_),
            )
            | (
                Phase::Waiting {
                    call: None,
                    command: MapCommand::DropMap { .. },
                    ..
                },
                Error::NotFound(_),
            ) => Ok(None),
            (Phase::Waiting { command, .. }, _) => {
                Err(format!("unexpected failure of {command:?}: {error}"))
            }
            (_, _) => Err(format!("opening the session failed: {error}")),
        }
    }

    /// Gives up reading a snapshot that no replica holds any more (every
    /// replica of a partition was restored from a checkpoint taken after
    /// the snapshot opened; checkpoints keep no copy of open snapshots).
    /// The call stays pending: its result is unknown, never wrong.
    pub fn abandon_scan(&mut self, now: u64, rng: &mut Rng) {
        self.phase = Phase::Thinking {
            until: now + rng.range(0, 20_000),
        };
    }

    /// The scan of `call` read its pages: it completes now.
    pub fn scanned(
        &mut self,
        now: u64,
        healed: bool,
        rng: &mut Rng,
        call: &mut Call<MapOp, Observed>,
        entries: Vec<amulet_dmap::Entry>,
        opened_at: u64,
    ) {
        // The snapshot's instant lies between the open's call and reply;
        // the pages are read later but never change.
        call.complete = Some(opened_at);
        call.result = Some(Observed::Entries(entries));
        self.completed_after_heal += u64::from(healed);
        self.phase = Phase::Thinking {
            until: now + rng.range(0, 20_000),
        };
    }
}
