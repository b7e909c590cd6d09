//! A replica of one partition: executes the merged delivery of its
//! partition stream and the global stream (thesis §2.7; DMap §III-B).

use crate::{
    Body, CommandEnvelope, ExecContext, KeyspaceChange, Origin, PartitionMap, Placement,
    Reconfiguration, ReplicaMessage, SessionCheck, SessionTable, StateMachine, StreamSpec,
};
use amulet_types::{MapVersion, NodeId, PartitionId, SessionId, StreamId};
use bytes::Bytes;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, VecDeque};

/// A client request's number at the replica that received it.
pub type RequestId = u64;

/// Limits and identity of a replica.
#[derive(Clone, Debug)]
pub struct ReplicaConfig {
    /// This node.
    pub node: NodeId,
    /// This node's run (increases at every restart).
    pub incarnation: u32,
    /// The partition replicated.
    pub partition: PartitionId,
    /// How long a replica waits for a missing signal before asking again,
    /// µs. Signals are single messages that may be lost.
    pub signal_retry_micros: u64,
    /// Bytes of partial replies kept to answer late signal requests. A
    /// replica that lags more than this behind another partition gets
    /// "partial gone" and answers its client `Lost` (the command did take
    /// effect).
    pub signal_cache_bytes_max: usize,
    /// Longest session lease a client may ask for, µs.
    pub session_lease_micros_max: u64,
}

impl ReplicaConfig {
    /// Defaults for `node`'s replica of `partition`.
    pub fn new(node: NodeId, incarnation: u32, partition: PartitionId) -> ReplicaConfig {
        ReplicaConfig {
            node,
            incarnation,
            partition,
            signal_retry_micros: 50_000,
            signal_cache_bytes_max: 64 * 1024 * 1024,
            session_lease_micros_max: 10 * 60 * 1_000_000,
        }
    }
}

/// A client's request as the receiving replica sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClientRequest<C> {
    /// The partition map version the client routed by.
    pub map_version: MapVersion,
    /// Session and sequence, if any.
    pub session: Option<(SessionId, u64)>,
    /// The command.
    pub body: Body<C>,
}

/// The answer to a client.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ClientReply<R> {
    /// The service's reply (which may itself report a failure).
    Done(R),
    /// The session request succeeded.
    SessionOk,
    /// The client's partition map is out of date: here is the current one;
    /// the command was not executed.
    StaleMap(Box<PartitionMap>),
    /// This node does not replicate the partition the command belongs to.
    NotAReplica(Box<PartitionMap>),
    /// The command names a keyspace the map does not have.
    UnknownKeyspace(String),
    /// The command creates a keyspace the map has already.
    KeyspaceExists(String),
    /// The client routed by a newer partition map than this replica has
    /// executed: it cannot judge the request yet. Nothing was ordered;
    /// resend (here later, or at another replica).
    Behind,
    /// The session is unknown (expired or closed); open a new one.
    SessionExpired,
    /// The session already executed a later sequence.
    StaleSequence,
    /// A request field is out of bounds; nothing was ordered.
    Invalid(String),
    /// A multi-partition command took effect but another partition's part
    /// of the reply is no longer available.
    Lost,
    /// The reconfiguration was ordered and is valid: it takes effect at
    /// its barrier's fence, a moment later, everywhere.
    Accepted,
}

/// What the caller must do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Output<R> {
    /// Multicast `value` on `stream`.
    Propose {
        /// The stream.
        stream: StreamId,
        /// An encoded [`CommandEnvelope`].
        value: Bytes,
        /// Multicast as a barrier (a reconfiguration): every merge that
        /// delivers it stops at the next round until the runtime has
        /// called [`Replica::at_fence`] and released it.
        barrier: bool,
    },
    /// Send a message to another replica.
    Send {
        /// Destination node.
        to: NodeId,
        /// The message.
        message: ReplicaMessage,
    },
    /// Answer a client request received here.
    Reply {
        /// The request.
        request: RequestId,
        /// The answer.
        reply: ClientReply<R>,
    },
}

/// A multi-partition command executed here and waiting for the signals of
/// the other involved partitions; execution of later commands waits too.
struct Waiting<C> {
    global_position: u64,
    envelope: CommandEnvelope<C>,
    command: C,
    involved: Vec<PartitionId>,
    /// Encoded partial replies by partition; `None`: the partition executed
    /// the command but no longer holds its partial.
    partials: BTreeMap<PartitionId, Option<Bytes>>,
    asked_at_micros: u64,
}

/// A replica's replicated state at a point between two deliveries (thesis
/// §3.4.2): what it needs to continue from the next delivery exactly as
/// the original would have. Identified, outside this type, by the merge
/// position of its streams. `C` is the state machine's checkpoint, `R`
/// its reply.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ReplicaCheckpoint<C, R> {
    /// The partition replicated.
    pub partition: PartitionId,
    /// The partition map executed so far.
    pub map: PartitionMap,
    /// The service state.
    pub state: C,
    /// Open sessions and their last replies (exactly-once survives).
    pub sessions: SessionTable<ClientReply<R>>,
    /// Greatest timestamp of any executed command.
    pub local_clock_micros: u64,
    /// Greatest timestamp of a global-stream command.
    pub global_clock_micros: u64,
    /// Global-stream commands delivered so far.
    pub global_position: u64,
    /// Signals that arrived before their command was delivered here.
    pub early_signals: BTreeMap<u64, BTreeMap<PartitionId, Option<Bytes>>>,
    /// Partial replies kept for late signal requests.
    pub signal_cache: BTreeMap<u64, Bytes>,
    /// Delivered values that did not decode.
    pub undecodable: u64,
    /// A reconfiguration executed whose fence is not reached yet.
    #[serde(default)]
    pub pending_reconfiguration: Option<Reconfiguration>,
    /// See [`Replica::absorb`]: partitions merged into this one, the
    /// global position of the merge, and their cached partials.
    #[serde(default)]
    pub absorbed_signals: BTreeMap<PartitionId, (u64, BTreeMap<u64, Bytes>)>,
}

/// What the runtime does at a barrier's fence for one replica, after
/// [`Replica::at_fence`] applied the pending reconfiguration's map change.
#[derive(Clone, Debug)]
pub enum FenceWork<C, R> {
    /// No reconfiguration was pending (an invalid one): release the fence.
    Nothing,
    /// The map changed, this partition is not otherwise involved.
    MapChanged,
    /// This partition was split: create partition `new`'s replica from
    /// `checkpoint` and its merge group as a fork of this one that drops
    /// this partition's stream and merges `stream` from its instance 0.
    Split {
        /// The new partition.
        new: PartitionId,
        /// The new partition's replica state at the fence.
        checkpoint: Box<ReplicaCheckpoint<C, R>>,
        /// The new partition's stream (its base position set).
        stream: StreamSpec,
    },
    /// This partition's stream is replaced: its merge group drops `old`
    /// and merges `new` from its instance 0; requests proposed on `old`
    /// not executed were answered `Behind` (clients resend them).
    ReplaceStream {
        /// The retired stream.
        old: StreamId,
        /// The new stream (its base position set).
        new: StreamSpec,
    },
    /// Partition `source` merges into this one: hand this replica the
    /// source replica's state ([`Replica::absorb`]).
    Absorb {
        /// The partition that disappears.
        source: PartitionId,
    },
    /// This partition merges into `into`: its state goes there, then its
    /// replica and merge group are removed and its stream retired.
    Retire {
        /// The partition taking the keys.
        into: PartitionId,
        /// This partition's state at the fence.
        checkpoint: Box<ReplicaCheckpoint<C, R>>,
    },
}

/// Why a checkpoint cannot be restored.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RestoreError {
    /// The checkpoint is of another partition.
    #[error("checkpoint of partition {found} restored as partition {expected}")]
    Partition {
        /// The partition of the replica being restored.
        expected: PartitionId,
        /// The partition of the checkpoint.
        found: PartitionId,
    },
    /// The checkpoint's partition map no longer has the partition.
    #[error("the checkpoint's partition map has no partition {0}")]
    NotInMap(PartitionId),
}

/// Early signals are kept for at most this many future commands.
const EARLY_SIGNAL_COMMANDS_MAX: usize = 4096;

/// A replica of one partition.
pub struct Replica<S: StateMachine> {
    config: ReplicaConfig,
    map: PartitionMap,
    state: S,
    sessions: SessionTable<ClientReply<S::Reply>>,
    /// Greatest timestamp of any executed command.
    local_clock_micros: u64,
    /// Greatest timestamp of a global-stream command: sessions expire by
    /// it, identically in every partition.
    global_clock_micros: u64,
    /// Global-stream commands delivered so far.
    global_position: u64,
    /// Delivered, not yet executed (waiting behind `waiting`).
    queue: VecDeque<(bool, CommandEnvelope<S::Command>)>,
    waiting: Option<Waiting<S::Command>>,
    early_signals: BTreeMap<u64, BTreeMap<PartitionId, Option<Bytes>>>,
    signal_cache: BTreeMap<u64, Bytes>,
    signal_cache_bytes: usize,
    absorbed_signals: BTreeMap<PartitionId, (u64, BTreeMap<u64, Bytes>)>,
    next_request: RequestId,
    now_micros: u64,
    undecodable: u64,
    outputs: Vec<Output<S::Reply>>,
    complete_without_signals: bool,
    answer_reads_locally: bool,
    /// See [`ReplicaCheckpoint::pending_reconfiguration`].
    pending_reconfiguration: Option<Reconfiguration>,
    /// Requests received here and proposed, not answered yet, with the
    /// stream they went on (answered `Behind` if it is retired).
    proposed: BTreeMap<RequestId, StreamId>,
}

/// Unanswered proposals a replica remembers the stream of (the oldest
/// are forgotten first: their clients have long given up).
const PROPOSED_MAX: usize = 1 << 20;

impl<S: StateMachine> Replica<S> {
    /// A replica starting from `map` and `state` (the initial
    /// configuration, or a checkpoint).
    pub fn new(config: ReplicaConfig, map: PartitionMap, state: S) -> Replica<S> {
        let partition_bits = config.partition.0;
        assert!(
            map.partitions.contains_key(&config.partition),
            "{} is not in the partition map",
            config.partition
        );
        Replica {
            config,
            map,
            state,
            sessions: SessionTable::default(),
            local_clock_micros: 0,
            global_clock_micros: 0,
            global_position: 0,
            queue: VecDeque::new(),
            waiting: None,
            early_signals: BTreeMap::new(),
            signal_cache: BTreeMap::new(),
            signal_cache_bytes: 0,
            absorbed_signals: BTreeMap::new(),
            // Disjoint per partition: every replica of a node answers the
            // global commands that node originated, so a node hosting
            // several partitions must be able to tell which replica's
            // request a reply is for.
            next_request: (u64::from(partition_bits) << 40) + 1,
            now_micros: 0,
            undecodable: 0,
            outputs: Vec::new(),
            complete_without_signals: false,
            answer_reads_locally: false,
            pending_reconfiguration: None,
            proposed: BTreeMap::new(),
        }
    }

    /// A replica continuing from `checkpoint` (taken by
    /// [`Replica::checkpoint`]), with `state` (fresh, configured) taking the
    /// checkpoint's service state. Feed it the deliveries after the
    /// checkpoint's merge position.
    pub fn restore(
        config: ReplicaConfig,
        checkpoint: ReplicaCheckpoint<S::Checkpoint, S::Reply>,
        mut state: S,
    ) -> Result<Replica<S>, RestoreError> {
        if checkpoint.partition != config.partition {
            return Err(RestoreError::Partition {
                expected: config.partition,
                found: checkpoint.partition,
            });
        }
        if !checkpoint.map.partitions.contains_key(&config.partition) {
            return Err(RestoreError::NotInMap(config.partition));
        }
        state.restore(checkpoint.state);
        let mut replica = Replica::new(config, checkpoint.map, state);
        replica.sessions = checkpoint.sessions;
        replica.local_clock_micros = checkpoint.local_clock_micros;
        replica.global_clock_micros = checkpoint.global_clock_micros;
        replica.global_position = checkpoint.global_position;
        replica.early_signals = checkpoint.early_signals;
        replica.signal_cache_bytes = checkpoint.signal_cache.values().map(Bytes::len).sum();
        replica.signal_cache = checkpoint.signal_cache;
        replica.undecodable = checkpoint.undecodable;
        replica.pending_reconfiguration = checkpoint.pending_reconfiguration;
        replica.absorbed_signals = checkpoint.absorbed_signals;
        Ok(replica)
    }

    /// Numbers new requests after those of `previous`, the replica this one
    /// replaces at run time (a peer's checkpoint installed by state
    /// transfer). Commands `previous` proposed may still be decided, and
    /// this replica answers them by number as their origin; fresh numbers
    /// keep those answers from reaching new requests.
    pub fn continue_requests_of(&mut self, previous: &Replica<S>) {
        self.next_request = self.next_request.max(previous.next_request);
    }

    /// The replicated state as a checkpoint, if this is a point between
    /// deliveries where one can be taken: nothing queued and no
    /// multi-partition command waiting for signals (whose progress is not
    /// part of the checkpoint). Cheap: the service state is cloned
    /// copy-on-write, the rest is small.
    pub fn checkpoint(&self) -> Option<ReplicaCheckpoint<S::Checkpoint, S::Reply>> {
        if self.waiting.is_some() || !self.queue.is_empty() {
            return None;
        }
        Some(ReplicaCheckpoint {
            partition: self.config.partition,
            map: self.map.clone(),
            state: self.state.checkpoint(),
            sessions: self.sessions.clone(),
            local_clock_micros: self.local_clock_micros,
            global_clock_micros: self.global_clock_micros,
            global_position: self.global_position,
            early_signals: self.early_signals.clone(),
            signal_cache: self.signal_cache.clone(),
            undecodable: self.undecodable,
            pending_reconfiguration: self.pending_reconfiguration.clone(),
            absorbed_signals: self.absorbed_signals.clone(),
        })
    }

    /// A deliberately broken variant, for the simulator to show that its
    /// checkers catch it: multi-partition commands complete on this
    /// partition's partial alone, without the signal exchange.
    pub fn set_bug_complete_without_signals(&mut self, on: bool) {
        self.complete_without_signals = on;
    }

    /// A deliberately broken variant, for the real-process fault suite and
    /// the simulator to show that their checkers catch it: a read-only
    /// command of this partition alone is answered at once from this
    /// replica's state, without being ordered (a replica behind the others,
    /// or cut off from them, answers from the past).
    pub fn set_bug_answer_reads_locally(&mut self, on: bool) {
        self.answer_reads_locally = on;
    }

    /// The service state.
    pub fn state(&self) -> &S {
        &self.state
    }

    /// Whether a move took this partition away from this node (the map
    /// names other replicas): the replica runs on only until the new
    /// group holds its state (`handed_off`).
    pub fn moved_away(&self) -> bool {
        self.map
            .partitions
            .get(&self.config.partition)
            .is_some_and(|info| !info.replicas.contains(&self.config.node))
    }

    /// The current partition map.
    pub fn map(&self) -> &PartitionMap {
        &self.map
    }

    /// Global-stream commands executed (or being executed).
    pub fn global_position(&self) -> u64 {
        self.global_position
    }

    /// Whether execution waits for signals.
    pub fn is_waiting(&self) -> bool {
        self.waiting.is_some()
    }

    /// Delivered commands not executed yet.
    pub fn queued(&self) -> usize {
        self.queue.len()
    }

    /// Delivered values that did not decode (a bug or corruption upstream).
    pub fn undecodable(&self) -> u64 {
        self.undecodable
    }

    /// Open sessions.
    pub fn sessions(&self) -> usize {
        self.sessions.len()
    }

    /// The stream of this replica's partition.
    pub fn stream(&self) -> StreamId {
        self.map.partitions[&self.config.partition].stream
    }

    /// Outputs produced since the last drain.
    pub fn drain(&mut self) -> Vec<Output<S::Reply>> {
        std::mem::take(&mut self.outputs)
    }

    /// A client request received at this replica: checked at the edge, then
    /// proposed on the stream that orders it. The reply comes later as an
    /// [`Output::Reply`] with the returned id (or at once for a refusal).
    pub fn submit(&mut self, now_micros: u64, request: ClientRequest<S::Command>) -> RequestId {
        self.now_micros = self.now_micros.max(now_micros);
        let id = self.next_request;
        self.next_request += 1;
        match self.route_request(&request) {
            Ok(stream) if self.answer_reads_locally && stream == self.stream() => {
                if let Body::App(command) = &request.body {
                    if S::is_read_only(command) {
                        let placement = S::placement(command);
                        let reply = ClientReply::Done(self.execute_here(command, &placement));
                        self.outputs.push(Output::Reply { request: id, reply });
                        return id;
                    }
                }
                self.propose(id, stream, now_micros, request);
            }
            Ok(stream) => self.propose(id, stream, now_micros, request),
            Err(reply) => self.outputs.push(Output::Reply { request: id, reply }),
        }
        id
    }

    /// Proposes a request on the stream that orders it.
    fn propose(
        &mut self,
        id: RequestId,
        stream: StreamId,
        now_micros: u64,
        request: ClientRequest<S::Command>,
    ) {
        let barrier = matches!(request.body, Body::Reconfigure(_));
        let envelope = CommandEnvelope {
            origin: Origin {
                node: self.config.node,
                incarnation: self.config.incarnation,
                request: id,
            },
            timestamp_micros: now_micros,
            map_version: request.map_version,
            session: request.session,
            body: request.body,
        };
        self.outputs.push(Output::Propose {
            stream,
            value: envelope.encode(),
            barrier,
        });
        self.proposed.insert(id, stream);
        while self.proposed.len() > PROPOSED_MAX {
            self.proposed.pop_first();
        }
    }

    /// The stream a request goes on, or the refusal.
    fn route_request(
        &self,
        request: &ClientRequest<S::Command>,
    ) -> Result<StreamId, ClientReply<S::Reply>> {
        let command = match &request.body {
            Body::App(command) => command,
            Body::OpenSession { lease_micros } | Body::KeepAlive { lease_micros } => {
                if request.session.is_none() {
                    return Err(ClientReply::Invalid(
                        "a session request needs a session id".into(),
                    ));
                }
                if *lease_micros == 0 || *lease_micros > self.config.session_lease_micros_max {
                    return Err(ClientReply::Invalid(format!(
                        "session lease {lease_micros} µs outside 1..={}",
                        self.config.session_lease_micros_max
                    )));
                }
                return Ok(self.map.global_stream);
            }
            Body::CloseSession => {
                if request.session.is_none() {
                    return Err(ClientReply::Invalid("closing needs a session id".into()));
                }
                return Ok(self.map.global_stream);
            }
            Body::Reconfigure(change) => {
                if request.map_version > self.map.version {
                    return Err(ClientReply::Behind);
                }
                if request.map_version < self.map.version {
                    return Err(ClientReply::StaleMap(Box::new(self.map.clone())));
                }
                change
                    .apply(&self.map, 0)
                    .map_err(|e| ClientReply::Invalid(e.to_string()))?;
                return Ok(self.map.global_stream);
            }
        };
        self.state.validate(command).map_err(ClientReply::Done)?;
        // Judging a newer client's request by an older map would refuse a
        // map the client saw created, or route by partitions since moved.
        if request.map_version > self.map.version {
            return Err(ClientReply::Behind);
        }
        if request.map_version < self.map.version {
            // Past the fence that changed the map, this partition's record
            // of the session is final for the old map: a retry of a
            // command it executed gets the reply (see `execute_app`).
            let executed = request
                .session
                .filter(|_| !S::is_read_only(command))
                .and_then(|(session, sequence)| self.sessions.executed(session, sequence));
            if let Some(reply) = executed {
                return Err(reply.unwrap_or(ClientReply::Lost));
            }
            return Err(ClientReply::StaleMap(Box::new(self.map.clone())));
        }
        // "No such map" and "the map exists" are verdicts on the partition
        // map, which this replica may hold in an older version than others
        // have executed: refused here, a map created a moment ago could be
        // denied to a client that saw it created elsewhere. Such commands
        // are ordered on the global stream instead, and every replica
        // judges them at the same point of the order (`execute_app`).
        match self.check_keyspace_request(command) {
            Err(ClientReply::UnknownKeyspace(_) | ClientReply::KeyspaceExists(_)) => {
                return Ok(self.map.global_stream)
            }
            other => other?,
        }
        let placement = S::placement(command);
        let involved = match self.involved(&placement) {
            Err(ClientReply::UnknownKeyspace(_)) => return Ok(self.map.global_stream),
            other => other?,
        };
        if !involved.contains(&self.config.partition) {
            return Err(ClientReply::NotAReplica(Box::new(self.map.clone())));
        }
        Ok(
            if is_global(&placement, &involved) || S::needs_global_order(command) {
                self.map.global_stream
            } else {
                self.stream()
            },
        )
    }

    /// Refuses a keyspace change the current map cannot take.
    fn check_keyspace_request(&self, command: &S::Command) -> Result<(), ClientReply<S::Reply>> {
        let Some(change) = S::keyspace_request(command) else {
            return Ok(());
        };
        let mut next = self.map.clone();
        let result = match change {
            KeyspaceChange::Create(name, layout) => next.create_keyspace(&name, layout),
            KeyspaceChange::Drop(name) => next.drop_keyspace(&name),
        };
        result.map_err(|e| match e {
            crate::PartitionMapError::UnknownKeyspace(name) => ClientReply::UnknownKeyspace(name),
            crate::PartitionMapError::KeyspaceExists(name) => ClientReply::KeyspaceExists(name),
            other => ClientReply::Invalid(other.to_string()),
        })
    }

    fn involved(&self, placement: &Placement) -> Result<Vec<PartitionId>, ClientReply<S::Reply>> {
        self.map.partitions_for(placement).map_err(|e| match e {
            crate::PartitionMapError::UnknownKeyspace(name) => ClientReply::UnknownKeyspace(name),
            other => ClientReply::Invalid(other.to_string()),
        })
    }

    /// A value delivered by the merge of this replica's streams, in merge
    /// order. Values of other streams are not this replica's and ignored.
    pub fn on_deliver(&mut self, stream: StreamId, value: &[u8]) {
        let global = stream == self.map.global_stream;
        if !global && stream != self.stream() {
            return;
        }
        match CommandEnvelope::decode(value) {
            Ok(envelope) => self.queue.push_back((global, envelope)),
            Err(_) => {
                // Still a position of the order: count it so the global
                // position agrees with other partitions.
                self.undecodable += 1;
                if global {
                    self.queue.push_back((true, undecodable_marker()));
                }
            }
        }
        self.run();
    }

    /// A message from another replica.
    pub fn on_message(&mut self, message: ReplicaMessage) {
        match message {
            ReplicaMessage::Signal {
                global_position,
                partition,
                partial,
            } => self.on_signal(global_position, partition, partial),
            ReplicaMessage::SignalRequest {
                global_position,
                from,
            } => self.on_signal_request(global_position, from),
            // State transfer is the node's business, not the replica's.
            ReplicaMessage::CheckpointRequest { .. }
            | ReplicaMessage::CheckpointChunk { .. }
            | ReplicaMessage::NotHeld { .. } => {}
        }
    }

    /// Time passes: ask again for signals that have not come.
    pub fn tick(&mut self, now_micros: u64) {
        self.now_micros = self.now_micros.max(now_micros);
        let Some(waiting) = &mut self.waiting else {
            return;
        };
        if self.now_micros.saturating_sub(waiting.asked_at_micros) < self.config.signal_retry_micros
        {
            return;
        }
        waiting.asked_at_micros = self.now_micros;
        let position = waiting.global_position;
        let missing: Vec<PartitionId> = waiting
            .involved
            .iter()
            .filter(|p| !waiting.partials.contains_key(p))
            .copied()
            .collect();
        for partition in missing {
            for to in self.map.runners(partition) {
                self.outputs.push(Output::Send {
                    to,
                    message: ReplicaMessage::SignalRequest {
                        global_position: position,
                        from: self.config.node,
                    },
                });
            }
        }
    }

    fn run(&mut self) {
        while self.waiting.is_none() {
            let Some((global, envelope)) = self.queue.pop_front() else {
                break;
            };
            self.execute(global, envelope);
        }
    }

    fn execute(&mut self, global: bool, envelope: CommandEnvelope<S::Command>) {
        if global {
            self.global_position += 1;
            self.global_clock_micros = self.global_clock_micros.max(envelope.timestamp_micros);
            self.sessions.expire(self.global_clock_micros);
        }
        self.local_clock_micros = self.local_clock_micros.max(envelope.timestamp_micros);
        match envelope.body.clone() {
            Body::App(command) => self.execute_app(global, envelope, command),
            Body::Reconfigure(change) => self.execute_reconfigure(global, &envelope, change),
            body => self.execute_session(global, &envelope, body),
        }
    }

    /// A reconfiguration is only judged here (the same verdict in every
    /// partition: it depends on the map and on what is pending, both
    /// replicated); it takes effect at its fence ([`Replica::at_fence`]).
    fn execute_reconfigure(
        &mut self,
        global: bool,
        envelope: &CommandEnvelope<S::Command>,
        change: Reconfiguration,
    ) {
        if !global {
            return; // refused at the edge; a forged one does nothing
        }
        let reply = if envelope.map_version != self.map.version {
            ClientReply::StaleMap(Box::new(self.map.clone()))
        } else if self.pending_reconfiguration.is_some() {
            ClientReply::Invalid("another reconfiguration is taking effect; retry".into())
        } else if let Err(e) = change.apply(&self.map, 0) {
            ClientReply::Invalid(e.to_string())
        } else {
            self.pending_reconfiguration = Some(change);
            ClientReply::Accepted
        };
        self.answer(&envelope.origin, reply);
    }

    /// The reconfiguration pending here, if any.
    pub fn pending_reconfiguration(&self) -> Option<&Reconfiguration> {
        self.pending_reconfiguration.as_ref()
    }

    /// Whether the replica has executed everything delivered to it (no
    /// command queued or waiting for signals): the point where a fence's
    /// work can be done.
    pub fn is_idle(&self) -> bool {
        self.waiting.is_none() && self.queue.is_empty()
    }

    /// At the fence of a barrier, once [`Replica::is_idle`]: applies the
    /// pending reconfiguration (if any), with the new stream starting at
    /// merge position `base_position` (the fence's round times M), and
    /// says what the runtime must do for this replica. Every replica of
    /// every partition calls it at the same point of the order.
    pub fn at_fence(&mut self, base_position: u64) -> FenceWork<S::Checkpoint, S::Reply> {
        assert!(self.is_idle(), "at_fence with commands still to execute");
        let Some(change) = self.pending_reconfiguration.take() else {
            return FenceWork::Nothing;
        };
        let next = change
            .apply(&self.map, base_position)
            .expect("validated when executed, on the same map");
        let me = self.config.partition;
        let old_map = std::mem::replace(&mut self.map, next);
        match change {
            Reconfiguration::Split { source, new, .. } if source == me => {
                let map = self.map.clone();
                let moves = |keyspace: &str, key: &[u8]| map.partition_of(keyspace, key) == Ok(new);
                let moved = self.state.split_off(&moves);
                let mut checkpoint = self
                    .checkpoint()
                    .expect("an idle replica can take a checkpoint");
                checkpoint.partition = new;
                checkpoint.state = moved;
                checkpoint.signal_cache = BTreeMap::new();
                checkpoint.absorbed_signals = BTreeMap::new();
                let stream = self.map.streams[&self.map.partitions[&new].stream].clone();
                FenceWork::Split {
                    new,
                    checkpoint: Box::new(checkpoint),
                    stream,
                }
            }
            Reconfiguration::ReplaceStream { partition, .. }
            | Reconfiguration::Move { partition, .. }
                if partition == me =>
            {
                let old = old_map.partitions[&me].stream;
                self.abandon_stream(old);
                let new = self.map.streams[&self.map.partitions[&me].stream].clone();
                FenceWork::ReplaceStream { old, new }
            }
            Reconfiguration::Merge { source, into } if into == me => FenceWork::Absorb { source },
            Reconfiguration::Merge { source, into } if source == me => {
                // Still this partition's map entry in the checkpoint: the
                // state, sessions and clocks move, the map is `into`'s.
                self.map = old_map;
                let checkpoint = self
                    .checkpoint()
                    .expect("an idle replica can take a checkpoint");
                let streams: Vec<StreamId> = self.proposed.values().copied().collect();
                for stream in streams {
                    self.abandon_stream(stream);
                }
                FenceWork::Retire {
                    into,
                    checkpoint: Box::new(checkpoint),
                }
            }
            _ => FenceWork::MapChanged,
        }
    }

    /// Takes in partition `source`'s state at the fence of the merge that
    /// retires it: its keys, and for each session the later of the two
    /// partitions' records.
    pub fn absorb(&mut self, source: ReplicaCheckpoint<S::Checkpoint, S::Reply>) {
        self.state.absorb(source.state);
        self.sessions.absorb(source.sessions);
        self.local_clock_micros = self.local_clock_micros.max(source.local_clock_micros);
        // A replica still executing commands from before the merge (a
        // restarted one, catching up) may wait for the merged partition's
        // signals, and its replicas are gone: this partition answers for
        // it, from its cache (or "executed long ago").
        self.absorbed_signals.insert(
            source.partition,
            (self.global_position, source.signal_cache),
        );
        self.absorbed_signals.extend(source.absorbed_signals);
    }

    /// Answers `Behind` to every request proposed here on `stream` and not
    /// executed: the stream is retired at this fence, so nothing decided
    /// on it from now on is executed, and the client resends the request
    /// (with the same session sequence) to the new stream.
    fn abandon_stream(&mut self, stream: StreamId) {
        let abandoned: Vec<RequestId> = self
            .proposed
            .iter()
            .filter(|(_, s)| **s == stream)
            .map(|(r, _)| *r)
            .collect();
        for request in abandoned {
            self.proposed.remove(&request);
            self.outputs.push(Output::Reply {
                request,
                reply: ClientReply::Behind,
            });
        }
    }

    fn is_mine(&self, origin: &Origin) -> bool {
        origin.node == self.config.node && origin.incarnation == self.config.incarnation
    }

    fn answer(&mut self, origin: &Origin, reply: ClientReply<S::Reply>) {
        if self.is_mine(origin) {
            self.proposed.remove(&origin.request);
            self.outputs.push(Output::Reply {
                request: origin.request,
                reply,
            });
        }
    }

    fn execute_session(
        &mut self,
        global: bool,
        envelope: &CommandEnvelope<S::Command>,
        body: Body<S::Command>,
    ) {
        let Some((session, _)) = envelope.session else {
            return; // refused at the edge; a forged one does nothing
        };
        if !global {
            return; // sessions change only through the global stream
        }
        let lease_max = self.config.session_lease_micros_max;
        let until = |lease: u64| {
            self.global_clock_micros
                .saturating_add(lease.min(lease_max))
        };
        let reply = match body {
            Body::OpenSession { lease_micros } => {
                self.sessions.open(session, until(lease_micros));
                ClientReply::SessionOk
            }
            Body::KeepAlive { lease_micros } => {
                if self.sessions.renew(session, until(lease_micros)) {
                    ClientReply::SessionOk
                } else {
                    ClientReply::SessionExpired
                }
            }
            Body::CloseSession => {
                self.sessions.close(session);
                ClientReply::SessionOk
            }
            Body::App(_) | Body::Reconfigure(_) => unreachable!("handled by execute"),
        };
        self.answer(&envelope.origin, reply);
    }

    fn execute_app(
        &mut self,
        global: bool,
        envelope: CommandEnvelope<S::Command>,
        command: S::Command,
    ) {
        let origin = envelope.origin;
        if envelope.map_version != self.map.version {
            // A retry of a command this partition executed under the old
            // map (its reply was lost) gets that reply: resent under the
            // new map it could run again elsewhere, on another stream whose
            // session record does not know it. The verdict is the same at
            // every replica of the partition (sessions are replicated).
            if let Some((session, sequence)) =
                envelope.session.filter(|_| !S::is_read_only(&command))
            {
                if let Some(reply) = self.sessions.executed(session, sequence) {
                    let reply = reply.unwrap_or(ClientReply::Lost);
                    return self.answer(&origin, reply);
                }
            }
            // Otherwise the same verdict in every partition: map changes
            // are ordered by the global stream.
            return self.answer(&origin, ClientReply::StaleMap(Box::new(self.map.clone())));
        }
        let placement = S::placement(&command);
        let involved = match self.involved(&placement) {
            Ok(involved) => involved,
            Err(reply) => return self.answer(&origin, reply),
        };
        if !global && (is_global(&placement, &involved) || S::needs_global_order(&command)) {
            // Only the edge proposes; a command that spans partitions on a
            // partition stream would run in one partition alone.
            return self.answer(
                &origin,
                ClientReply::Invalid("command needs the global stream".into()),
            );
        }
        let in_me = involved.contains(&self.config.partition);
        if !global && !in_me {
            return self.answer(
                &origin,
                ClientReply::NotAReplica(Box::new(self.map.clone())),
            );
        }
        if let Err(reply) = self.state.validate(&command) {
            return self.answer(&origin, ClientReply::Done(reply));
        }
        let tracked = envelope.session.filter(|_| !S::is_read_only(&command));
        if let Some((session, sequence)) = tracked {
            let check = if global {
                self.sessions.check_global(session, sequence)
            } else {
                self.sessions.check_local(session, sequence)
            };
            match check {
                SessionCheck::Fresh => {}
                SessionCheck::Duplicate(reply) => {
                    return self.answer(&origin, reply.unwrap_or(ClientReply::Lost));
                }
                SessionCheck::Stale => return self.answer(&origin, ClientReply::StaleSequence),
                SessionCheck::Unknown => return self.answer(&origin, ClientReply::SessionExpired),
            }
        }
        if let Err(reply) = self.check_keyspace_request(&command) {
            return self.answer(&origin, reply);
        }
        if !in_me {
            // Not involved, but every partition keeps the same global record.
            if let Some((session, sequence)) = tracked {
                self.sessions.record_global(session, sequence, None);
            }
            return;
        }
        let partial = self.execute_here(&command, &placement);
        if !global || involved.len() == 1 || self.complete_without_signals {
            let change = S::keyspace_change(&command, &partial);
            let reply = ClientReply::Done(partial);
            return self.complete(global, &envelope, change, reply);
        }
        self.start_waiting(envelope, command, involved, partial);
    }

    fn execute_here(&mut self, command: &S::Command, placement: &Placement) -> S::Reply {
        let map = &self.map;
        let me = self.config.partition;
        let owns = |key: &[u8]| match &placement.keyspace {
            Some(keyspace) => map.partition_of(keyspace, key) == Ok(me),
            None => true,
        };
        let ctx = ExecContext {
            now_micros: self.local_clock_micros,
            global_position: self.global_position,
            owns_key: &owns,
        };
        self.state.execute(command, &ctx)
    }

    fn complete(
        &mut self,
        global: bool,
        envelope: &CommandEnvelope<S::Command>,
        change: Option<KeyspaceChange>,
        reply: ClientReply<S::Reply>,
    ) {
        if let Some(change) = change {
            let applied = match change {
                KeyspaceChange::Create(name, layout) => self.map.create_keyspace(&name, layout),
                KeyspaceChange::Drop(name) => self.map.drop_keyspace(&name),
            };
            // Keyspaces mirror the service's catalog, which every partition
            // holds identically; a refused change means they diverged.
            applied.expect("keyspace change agrees with the service catalog");
        }
        let tracked = envelope.session.filter(|_| match &envelope.body {
            Body::App(command) => !S::is_read_only(command),
            _ => false,
        });
        if let Some((session, sequence)) = tracked {
            if global {
                self.sessions
                    .record_global(session, sequence, Some(reply.clone()));
            } else {
                self.sessions.record_local(session, sequence, reply.clone());
            }
        }
        self.answer(&envelope.origin, reply);
    }

    fn start_waiting(
        &mut self,
        envelope: CommandEnvelope<S::Command>,
        command: S::Command,
        involved: Vec<PartitionId>,
        partial: S::Reply,
    ) {
        let position = self.global_position;
        let encoded =
            Bytes::from(postcard::to_allocvec(&partial).expect("encoding to memory cannot fail"));
        self.cache_signal(position, encoded.clone());
        for partition in involved.iter().filter(|p| **p != self.config.partition) {
            for to in self.map.runners(*partition) {
                self.outputs.push(Output::Send {
                    to,
                    message: ReplicaMessage::Signal {
                        global_position: position,
                        partition: self.config.partition,
                        partial: Some(encoded.clone()),
                    },
                });
            }
        }
        let mut partials = self.early_signals.remove(&position).unwrap_or_default();
        partials.retain(|p, _| involved.contains(p));
        partials.insert(self.config.partition, Some(encoded));
        // Forget early signals of commands now behind us.
        self.early_signals = self.early_signals.split_off(&position);
        self.waiting = Some(Waiting {
            global_position: position,
            envelope,
            command,
            involved,
            partials,
            asked_at_micros: self.now_micros,
        });
        self.try_complete();
    }

    fn cache_signal(&mut self, position: u64, partial: Bytes) {
        self.signal_cache_bytes += partial.len();
        self.signal_cache.insert(position, partial);
        while self.signal_cache_bytes > self.config.signal_cache_bytes_max
            && self.signal_cache.len() > 1
        {
            let (_, evicted) = self.signal_cache.pop_first().expect("not empty");
            self.signal_cache_bytes -= evicted.len();
        }
    }

    fn on_signal(&mut self, position: u64, partition: PartitionId, partial: Option<Bytes>) {
        if let Some(waiting) = &mut self.waiting {
            if waiting.global_position == position {
                if waiting.involved.contains(&partition) {
                    let slot = waiting.partials.entry(partition).or_insert(None);
                    if slot.is_none() {
                        *slot = partial;
                    }
                }
                if self.try_complete() {
                    self.run();
                }
                return;
            }
        }
        if position > self.global_position {
            let entry = self.early_signals.entry(position).or_default();
            let slot = entry.entry(partition).or_insert(None);
            if slot.is_none() {
                *slot = partial;
            }
            while self.early_signals.len() > EARLY_SIGNAL_COMMANDS_MAX {
                self.early_signals.pop_last();
            }
        }
    }

    fn on_signal_request(&mut self, position: u64, from: NodeId) {
        for (partition, (until, cache)) in &self.absorbed_signals {
            if position <= *until {
                self.outputs.push(Output::Send {
                    to: from,
                    message: ReplicaMessage::Signal {
                        global_position: position,
                        partition: *partition,
                        partial: cache.get(&position).cloned(),
                    },
                });
            }
        }
        let partial = match self.signal_cache.get(&position) {
            Some(partial) => Some(partial.clone()),
            // Executed long ago: say so, without the partial.
            None if position < self.global_position => None,
            // Not executed yet: our signal goes out when it is.
            None => return,
        };
        self.outputs.push(Output::Send {
            to: from,
            message: ReplicaMessage::Signal {
                global_position: position,
                partition: self.config.partition,
                partial,
            },
        });
    }

    /// Completes the waiting multi-partition command if every involved
    /// partition's partial is here; returns whether it did. It never runs
    /// the queue itself: called from `execute` (through `start_waiting`)
    /// inside `run`'s loop, running from here recursed once per queued
    /// command whose signals had all come early, and a replica replaying
    /// thousands of them after a restart overflowed its stack (found by
    /// the fault suite: nodes aborted with "stack overflow" during
    /// catch-up, stalling the cluster when the other replica was killed).
    fn try_complete(&mut self) -> bool {
        let done = self
            .waiting
            .as_ref()
            .is_some_and(|w| w.involved.iter().all(|p| w.partials.contains_key(p)));
        if !done {
            return false;
        }
        let waiting = self.waiting.take().expect("checked above");
        let mine = waiting.partials[&self.config.partition]
            .as_ref()
            .and_then(|b| postcard::from_bytes::<S::Reply>(b).ok())
            .expect("our own partial decodes");
        let change = S::keyspace_change(&waiting.command, &mine);
        let decoded: Option<Vec<S::Reply>> = waiting
            .partials
            .values()
            .map(|p| p.as_ref().and_then(|b| postcard::from_bytes(b).ok()))
            .collect();
        let reply = match decoded {
            Some(partials) => ClientReply::Done(S::combine(&waiting.command, &partials)),
            None => ClientReply::Lost,
        };
        self.complete(true, &waiting.envelope, change, reply);
        true
    }
}

/// Whether a command goes on the global stream.
fn is_global(placement: &Placement, involved: &[PartitionId]) -> bool {
    placement.keyspace.is_none() || involved.len() > 1
}

/// Stands for an undecodable global value: counts as a position, does
/// nothing.
fn undecodable_marker<C>() -> CommandEnvelope<C> {
    CommandEnvelope {
        origin: Origin {
            node: NodeId(u32::MAX),
            incarnation: u32::MAX,
            request: 0,
        },
        timestamp_micros: 0,
        map_version: MapVersion(0),
        session: None,
        body: Body::CloseSession,
    }
}
