//! A simulated DMap client: one session, one operation at a time, retries
//! on timeout (same sequence number, another replica) and on a stale map.

use crate::checker::linearizability::Call;
use crate::dmap::workload;
use crate::dmap::{MapOp, Observed};
use crate::rng::Rng;
use amulet_dmap::{MapCommand, MapReply};
use amulet_smr::{Body, ClientReply, ClientRequest, PartitionMap, StateMachine};
use amulet_types::{NodeId, PartitionId, SessionId};

/// Chance that an operation of a map-churning client creates or drops
/// another map instead.
const MAP_CHURN_PROBABILITY: f64 = 0.03;
/// Time without a reply before the request is sent again, µs.
pub const RETRY_MICROS: u64 = 300_000;
/// Pause before resending a request answered "behind" (or with no newer
/// map).
const BEHIND_PAUSE_MICROS: u64 = 5_000;
/// Snapshot lease: the whole run.
const SNAPSHOT_LEASE_MICROS: u64 = 600_000_000;
/// Session lease: the whole run (expiry is covered by unit tests).
const SESSION_LEASE_MICROS: u64 = 600_000_000;

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
        /// Re-open the session before resending (a command overtook the
        /// session's opening at some partition).
        reopen: bool,
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
    /// Tag matching replies to the operation.
    pub tag: u64,
    /// The request.
    pub request: ClientRequest<MapCommand>,
}

/// One simulated client.
pub struct SimClient {
    /// Its network address.
    pub endpoint: NodeId,
    session: SessionId,
    sequence: u64,
    /// Its cached partition map.
    pub map: PartitionMap,
    tag: u64,
    /// What it is doing.
    pub phase: Phase,
    /// Operations it completed after the network healed.
    pub completed_after_heal: u64,
    /// Whether it sometimes creates or drops another map.
    pub churns_maps: bool,
    /// The last reply said "behind" without a newer map: the replicas its
    /// map names may all have moved away (a node hosting nothing knows no
    /// map), so the resend may go to any node, which answers with its map
    /// (as the real client refreshes its map from any node on a retry).
    asked_elsewhere: bool,
}

impl SimClient {
    /// A client about to open session `session`.
    pub fn new(endpoint: NodeId, session: SessionId, map: PartitionMap) -> SimClient {
        SimClient {
            endpoint,
            session,
            sequence: 0,
            map,
            tag: 0,
            phase: Phase::Opening { sent_at: 0 },
            completed_after_heal: 0,
            churns_maps: false,
            asked_elsewhere: false,
        }
    }

    fn any_node(&self, rng: &mut Rng) -> NodeId {
        *rng.pick(&self.map.hosting_nodes())
            .expect("partitions have replicas")
    }

    /// Session requests are not deduplicated (opening is idempotent), so
    /// they carry sequence 0.
    fn open_request(&mut self, rng: &mut Rng) -> Send {
        Send {
            to: self.any_node(rng),
            partition: None,
            tag: self.tag,
            request: ClientRequest {
                map_version: self.map.version,
                session: Some((self.session, 0)),
                body: Body::OpenSession {
                    lease_micros: SESSION_LEASE_MICROS,
                },
            },
        }
    }

    /// The session's first request.
    pub fn start(&mut self, now: u64, rng: &mut Rng) -> Send {
        self.phase = Phase::Opening { sent_at: now };
        self.open_request(rng)
    }

    /// The partition a command is sent to: the first it involves.
    fn target(&self, command: &MapCommand) -> PartitionId {
        let placement = amulet_dmap::PartitionState::placement(command);
        self.map
            .partitions_for(&placement)
            .ok()
            .and_then(|p| p.first().copied())
            .unwrap_or_else(|| *self.map.partitions.keys().next().expect("a partition"))
    }

    fn command_request(&mut self, command: &MapCommand, rng: &mut Rng) -> Send {
        let partition = self.target(command);
        let to = if std::mem::take(&mut self.asked_elsewhere) && rng.chance(0.5) {
            self.any_node(rng)
        } else {
            *rng.pick(&self.map.partitions[&partition].replicas)
                .expect("replicas")
        };
        Send {
            to,
            partition: Some(partition),
            tag: self.tag,
            request: ClientRequest {
                map_version: self.map.version,
                session: Some((self.session, self.sequence)),
                body: Body::App(command.clone()),
            },
        }
    }

    /// Time passes: start an operation or resend. `issue` is false once
    /// the run stops starting operations.
    pub fn tick(
        &mut self,
        now: u64,
        issue: bool,
        rng: &mut Rng,
        calls: &mut Vec<Call<MapOp, Observed>>,
    ) -> Option<Send> {
        match self.phase.clone() {
            Phase::Opening { sent_at } if now - sent_at >= RETRY_MICROS => {
                self.phase = Phase::Opening { sent_at: now };
                Some(self.open_request(rng))
            }
            Phase::Thinking { until } if now >= until && issue => {
                self.tag += 1;
                self.sequence += 1;
                if self.churns_maps && rng.chance(MAP_CHURN_PROBABILITY) {
                    let command = workload::draw_map_churn(rng);
                    self.phase = Phase::Waiting {
                        call: None,
                        command: command.clone(),
                        sent_at: now,
                        reopen: false,
                    };
                    return Some(self.command_request(&command, rng));
                }
                let op = workload::draw(rng);
                let command = match &op {
                    MapOp::Command(command) => command.clone(),
                    MapOp::Scan => MapCommand::OpenSnapshot {
                        map: workload::map_name(),
                        lease_micros: SNAPSHOT_LEASE_MICROS,
                    },
                };
                calls.push(Call {
                    invoke: now,
                    complete: None,
                    op,
                    result: None,
                });
                self.phase = Phase::Waiting {
                    call: Some(calls.len() - 1),
                    command: command.clone(),
                    sent_at: now,
                    reopen: false,
                };
                Some(self.command_request(&command, rng))
            }
            Phase::Waiting {
                call,
                command,
                sent_at,
                reopen,
            } if now - sent_at >= RETRY_MICROS => {
                self.phase = Phase::Waiting {
                    call,
                    command: command.clone(),
                    sent_at: now,
                    reopen,
                };
                if reopen {
                    return Some(self.open_request(rng));
                }
                Some(self.command_request(&command, rng))
            }
            _ => None,
        }
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
        if tag != self.tag {
            return Ok(None); // a late reply to an earlier operation
        }
        let think = |rng: &mut Rng| Phase::Thinking {
            until: now + rng.range(0, 20_000),
        };
        match (self.phase.clone(), reply) {
            (Phase::Opening { .. }, ClientReply::SessionOk) => {
                self.phase = think(rng);
                Ok(None)
            }
            (Phase::Waiting { call, command, .. }, ClientReply::SessionOk) => {
                // The session is open again: resend the command now.
                self.phase = Phase::Waiting {
                    call,
                    command: command.clone(),
                    sent_at: now,
                    reopen: false,
                };
                Ok(Some(self.command_request(&command, rng)))
            }
            (
                Phase::Waiting {
                    call: None,
                    command,
                    ..
                },
                ClientReply::Done(reply),
            ) => {
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
                self.phase = think(rng);
                Ok(None)
            }
            (
                Phase::Waiting {
                    call: None,
                    command: MapCommand::DropMap { .. },
                    ..
                },
                ClientReply::UnknownKeyspace(_),
            )
            | (
                Phase::Waiting {
                    call: None,
                    command: MapCommand::CreateMap { .. },
                    ..
                },
                ClientReply::KeyspaceExists(_),
            ) => {
                self.phase = think(rng);
                Ok(None)
            }
            (Phase::Waiting { call, command, .. }, reply) => match reply {
                ClientReply::Done(MapReply::Snapshot(snapshot))
                    if call.is_some_and(|c| calls[c].op == MapOp::Scan) =>
                {
                    let call = call.expect("checked");
                    // The partitions the opening involved (the map did not
                    // change in between: the command carried its version):
                    // a partition holding none of the map's keys (a range
                    // map whose split moved no range) took no snapshot.
                    let placement =
                        <amulet_dmap::PartitionState as amulet_smr::StateMachine>::placement(
                            &command,
                        );
                    let partitions = self
                        .map
                        .partitions_for(&placement)
                        .map_err(|e| format!("the snapshot's map is unknown: {e}"))?;
                    self.phase = Phase::Reading {
                        call,
                        snapshot,
                        opened_at: now,
                        partitions,
                    };
                    Ok(None)
                }
                ClientReply::Done(reply) => {
                    let call = call.expect("admin replies are handled above");
                    if calls[call].op == MapOp::Scan {
                        return Err(format!("opening a snapshot failed: {reply:?}"));
                    }
                    calls[call].complete = Some(now);
                    calls[call].result = Some(Observed::Reply(reply));
                    self.completed_after_heal += u64::from(healed);
                    self.phase = think(rng);
                    Ok(None)
                }
                reply @ (ClientReply::Behind
                | ClientReply::StaleMap(_)
                | ClientReply::NotAReplica(_)) => {
                    // Nothing was ordered: adopt a newer map if given, and
                    // resend (maybe elsewhere): at once with a newer map,
                    // after a short pause otherwise (the replica is behind
                    // or has not forked a new partition yet; resending at
                    // once, every duplicated reply would double the
                    // requests in flight).
                    let mut newer = false;
                    if let ClientReply::StaleMap(map) | ClientReply::NotAReplica(map) = reply {
                        if map.version > self.map.version {
                            self.map = *map;
                            newer = true;
                        }
                    }
                    if !newer {
                        self.asked_elsewhere = true;
                        self.phase = Phase::Waiting {
                            call,
                            command,
                            sent_at: now.saturating_sub(RETRY_MICROS - BEHIND_PAUSE_MICROS),
                            reopen: false,
                        };
                        return Ok(None);
                    }
                    self.phase = Phase::Waiting {
                        call,
                        command: command.clone(),
                        sent_at: now,
                        reopen: false,
                    };
                    Ok(Some(self.command_request(&command, rng)))
                }
                ClientReply::SessionExpired => {
                    // The command overtook the session's opening in this
                    // partition's merge (streams are ordered among
                    // themselves, not in real time): open again, then
                    // resend. Nothing was executed.
                    self.phase = Phase::Waiting {
                        call,
                        command,
                        sent_at: now.saturating_sub(RETRY_MICROS),
                        reopen: true,
                    };
                    Ok(None)
                }
                ClientReply::Lost => {
                    // Took effect, reply unknown: it stays a pending call.
                    self.phase = think(rng);
                    Ok(None)
                }
                other => Err(format!("unexpected reply {other:?} to {command:?}")),
            },
            _ => Ok(None),
        }
    }

    /// The scan of `call` read its pages: it completes now.
    /// Gives up reading a snapshot that no replica holds any more (every
    /// replica of a partition was restored from a checkpoint taken after
    /// the snapshot opened; checkpoints keep no copy of open snapshots).
    /// The call stays pending: its result is unknown, never wrong.
    pub fn abandon_scan(&mut self, now: u64, rng: &mut Rng) {
        self.phase = Phase::Thinking {
            until: now + rng.range(0, 20_000),
        };
    }

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
