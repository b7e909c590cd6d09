//! The one simulator harness: every node is the real host core
//! ([`amulet_host::Host`], what the node process runs), stepped in virtual
//! time over the faulty [`Network`], crashed and restarted by the
//! [`Nemesis`], its commands carried out against simulated disks. The
//! order, Elastic Paxos and DMap swarms are [`Workload`]s on it: they say
//! how a node's host is built and what happens between the nodes (values
//! multicast, subscriptions changed, clients and an operator), and check
//! what the run promised.
//!
//! Nothing else is random and nothing reads the clock, so a seed replays
//! exactly.

mod message;
mod pause;
mod slot;

pub use message::{
    envelope_digest, message_digest, SimMessage, TRACE_DELIVER, TRACE_FAULT, TRACE_MESSAGE,
    TRACE_PROPOSE, TRACE_SUBSCRIBE,
};
pub use pause::{Pause, Paused};
pub use slot::{NodeSlot, SimFiles, SimStorage};

use crate::nemesis::{next_instant, CrashGroup, FaultEvent, Nemesis, NemesisConfig};
use crate::network::Network;
use crate::rng::Rng;
use crate::trace::TraceHash;
use amulet_dmap::{MapCommand, MapReply, PartitionCheckpoint, PartitionState};
use amulet_host::{
    decode_checkpoint, encode_checkpoint, CheckpointBody, CheckpointFile, Command, Durability,
    Flushed, Host, HostConfig,
};
use amulet_multicast::{GroupId, Merged, SubscriptionEvent};
use amulet_smr::ClientReply;
use amulet_types::{NodeId, PartitionId, StorageMode, StreamConfig, StreamId, TimeMicros, ValueId};
use bytes::Bytes;
use std::collections::BTreeMap;

/// Virtual micros between two ticks of every node (the node's tick).
pub const TICK_MICROS: u64 = 1_000;

/// The slots of `nodes`, never run yet. Odd seeds keep every durable
/// stream of a node in one node-wide log, as the real node does; even seeds
/// a log per stream (drawn from the seed, not a generator, so the rest of a
/// seed's scenario is the same either way).
pub fn slots(nodes: &[NodeId], storage: StorageMode, seed: u64) -> BTreeMap<NodeId, NodeSlot> {
    nodes
        .iter()
        .map(|node| {
            (
                *node,
                NodeSlot::new(SimStorage::new(storage, seed % 2 == 1)),
            )
        })
        .collect()
}

/// The nemesis' budgets for `configs` on `nodes`: per stream at most a
/// minority of acceptors down at once and ever losing state, at most half
/// the nodes down; the nodes whose storage can lose state are
/// `storage_nodes` (in `storage` mode).
pub fn nemesis_config(
    nodes: &[NodeId],
    storage_nodes: impl IntoIterator<Item = NodeId>,
    configs: &[StreamConfig],
    storage: StorageMode,
) -> NemesisConfig {
    NemesisConfig {
        storage: storage_nodes.into_iter().map(|n| (n, storage)).collect(),
        groups: configs
            .iter()
            .map(|c| CrashGroup::minority(c.acceptors.clone()))
            .collect(),
        down_max: nodes.len() / 2,
        nodes: nodes.to_vec(),
    }
}

/// The streams of `configs` that `node` is a member of.
pub fn member_configs(configs: &[StreamConfig], node: NodeId) -> Vec<StreamConfig> {
    configs
        .iter()
        .filter(|c| c.members().contains(&node))
        .cloned()
        .collect()
}

/// What every swarm's hosts run with beyond the production settings:
/// invariants checked after every step, and every sync reported (the
/// harness checks that an acceptor never goes back on a promise).
pub fn host_config(
    node: NodeId,
    incarnation: u32,
    new_state: std::sync::Arc<dyn Fn() -> PartitionState + Send + Sync>,
) -> HostConfig<PartitionState> {
    let mut config = HostConfig::new(node, incarnation, new_state);
    config.report_syncs = true;
    config.check_invariants = true;
    config
}

/// What a swarm adds to the harness.
pub trait Workload {
    /// Builds the host of `node`'s new process (its incarnation is
    /// `harness.slots[&node].incarnation`): its configured streams opened
    /// from the slot's storage, its checkpoints read from the slot's files.
    fn start(&mut self, harness: &mut Harness, node: NodeId) -> Host<PartitionState>;

    /// Once per tick, before the nodes tick: the workload's own moves.
    fn tick(&mut self, harness: &mut Harness);

    /// A message for an endpoint that is not a node (a client).
    fn at_endpoint(
        &mut self,
        harness: &mut Harness,
        from: NodeId,
        to: NodeId,
        message: SimMessage,
    ) {
        let _ = (harness, from, to, message);
    }

    /// `node` (in `incarnation`) delivered `merged` in `group`'s merge.
    fn delivered(
        &mut self,
        now: TimeMicros,
        node: NodeId,
        incarnation: u32,
        group: GroupId,
        merged: &Merged,
    ) {
        let _ = (now, node, incarnation, group, merged);
    }

    /// `node`'s merge `group` changed its subscriptions (Elastic Paxos).
    fn subscription(
        &mut self,
        now: TimeMicros,
        node: NodeId,
        group: GroupId,
        event: SubscriptionEvent,
    ) {
        let _ = (now, node, group, event);
    }

    /// `node`'s process (in `incarnation`) is about to go.
    fn crashing(&mut self, node: NodeId, incarnation: u32, host: &Host<PartitionState>) {
        let _ = (node, incarnation, host);
    }

    /// The nemesis applied `event`.
    fn fault(&mut self, now: TimeMicros, event: &FaultEvent) {
        let _ = (now, event);
    }
}

/// The nodes, the network, the nemesis and the trace of one seed.
pub struct Harness {
    /// Print what happens.
    pub verbose: bool,
    /// Virtual now.
    pub now: TimeMicros,
    /// The faulty network.
    pub network: Network<SimMessage>,
    /// The fault injector.
    pub nemesis: Nemesis,
    /// The nodes.
    pub slots: BTreeMap<NodeId, NodeSlot>,
    /// Every event of the run.
    pub trace: TraceHash,
    /// Draws which unsynced writes a machine crash keeps.
    pub disk_rng: Rng,
    /// Draws how long background checkpoint writes take.
    pub write_rng: Rng,
    /// Longest time a background checkpoint write takes.
    pub write_micros_max: u64,
    /// Pauses not started yet, by start time ([`Harness::pause_at`]).
    pauses: Vec<Pause>,
    /// Pauses started.
    pauses_started: u64,
}

impl Harness {
    /// A harness over `slots`.
    pub fn new(
        verbose: bool,
        network: Network<SimMessage>,
        nemesis: Nemesis,
        slots: BTreeMap<NodeId, NodeSlot>,
        disk_rng: Rng,
        write_rng: Rng,
        write_micros_max: u64,
    ) -> Harness {
        Harness {
            verbose,
            now: TimeMicros(0),
            network,
            nemesis,
            slots,
            trace: TraceHash::new(),
            disk_rng,
            write_rng,
            write_micros_max,
            pauses: Vec::new(),
            pauses_started: 0,
        }
    }

    /// Starts every node, then runs until `end`.
    pub fn run<W: Workload>(&mut self, workload: &mut W, end: TimeMicros) {
        let nodes: Vec<NodeId> = self.slots.keys().copied().collect();
        for node in nodes {
            self.start(workload, node);
        }
        let mut next_tick = TimeMicros(0);
        loop {
            let next = next_instant(&self.network, &self.nemesis, next_tick);
            if next > end {
                break;
            }
            self.now = next;
            let coordinators = self.coordinators();
            for event in self.nemesis.poll(next, || coordinators.clone()) {
                self.apply(workload, event);
            }
            for (from, to, message) in self.network.deliver_due(next) {
                self.trace
                    .event(next, TRACE_MESSAGE, from, to, message_digest(&message));
                self.deliver(workload, from, to, message);
            }
            if next_tick <= next {
                self.pause_and_resume(workload);
                workload.tick(self);
                self.tick_nodes(workload);
                next_tick = next_tick.plus(TICK_MICROS);
            }
        }
        self.now = end;
    }

    /// `node` multicasts a fresh random value on `stream` (traced):
    /// its id and the node's incarnation, unless the stream refused it.
    pub fn multicast_random(
        &mut self,
        node: NodeId,
        stream: StreamId,
        rng: &mut Rng,
    ) -> Option<(ValueId, u32)> {
        let now = self.now;
        let payload = Bytes::from(rng.next_u64().to_le_bytes().to_vec());
        let slot = self.slots.get_mut(&node).filter(|s| s.paused.is_none())?;
        let id = slot.host.as_mut()?.multicast(now, stream, payload).ok()?;
        self.trace.event(
            now,
            TRACE_PROPOSE,
            node,
            node,
            TraceHash::digest(&(id.sequence, stream.0)),
        );
        Some((id, slot.incarnation))
    }

    /// The live host of `node`.
    pub fn host(&self, node: NodeId) -> Option<&Host<PartitionState>> {
        self.slots.get(&node).and_then(|s| s.host.as_ref())
    }

    /// The live host of `node`, to drive (call [`Harness::step`] after);
    /// `None` while its process is paused.
    pub fn host_mut(&mut self, node: NodeId) -> Option<&mut Host<PartitionState>> {
        self.slots
            .get_mut(&node)
            .filter(|s| s.paused.is_none())
            .and_then(|s| s.host.as_mut())
    }

    /// The live hosts.
    pub fn hosts(&self) -> impl Iterator<Item = (NodeId, &Host<PartitionState>)> {
        self.slots
            .iter()
            .filter_map(|(n, s)| Some((*n, s.host.as_ref()?)))
    }

    /// The nodes up now.
    pub fn live_nodes(&self) -> Vec<NodeId> {
        self.hosts().map(|(n, _)| n).collect()
    }

    fn coordinators(&self) -> Vec<NodeId> {
        self.hosts()
            .filter(|(_, h)| h.multicast_node().coordinates_any())
            .map(|(n, _)| n)
            .collect()
    }

    /// The checkpoints of `node` on its disk, decoded (the simulator
    /// writes only good ones: one that does not decode is a bug).
    pub fn checkpoints(
        &self,
        node: NodeId,
    ) -> BTreeMap<PartitionId, CheckpointBody<PartitionCheckpoint, MapReply>> {
        self.slots[&node]
            .files
            .files
            .iter()
            .map(|(p, bytes)| {
                let body = decode_checkpoint(bytes).unwrap_or_else(|e| {
                    panic!("node {node}: checkpoint of {p} written damaged: {e}")
                });
                (*p, body)
            })
            .collect()
    }

    fn apply<W: Workload>(&mut self, workload: &mut W, event: FaultEvent) {
        if self.verbose {
            println!("t={}us fault {event:?}", self.now.0);
        }
        self.trace.event(
            self.now,
            TRACE_FAULT,
            NodeId(0),
            NodeId(0),
            TraceHash::digest_debug(&event),
        );
        match &event {
            FaultEvent::PartitionStart { blocked, .. } => self.network.block_links(blocked),
            FaultEvent::PartitionEnd => self.network.unblock_all(),
            FaultEvent::CrashProcess { node, .. } => self.crash(workload, *node, false),
            FaultEvent::CrashMachine { node } => self.crash(workload, *node, true),
            FaultEvent::RestartProcess { node } | FaultEvent::RestartMachine { node } => {
                self.start(workload, *node)
            }
            FaultEvent::Heal => self.network.heal(),
        }
        workload.fault(self.now, &event);
    }

    fn crash<W: Workload>(&mut self, workload: &mut W, node: NodeId, machine: bool) {
        self.network.drop_to(node);
        let slot = self.slots.get_mut(&node).expect("known node");
        if let Some(host) = &slot.host {
            workload.crashing(node, slot.incarnation, host);
        }
        slot.crash(machine.then_some(&mut self.disk_rng));
    }

    /// Starts `node` as a new incarnation and checks that each of its
    /// voting acceptors promises at least what its logs vouched for.
    fn start<W: Workload>(&mut self, workload: &mut W, node: NodeId) {
        let _span = tracing::info_span!("node", id = node.0, t = self.now.0).entered();
        self.slots.get_mut(&node).expect("known node").incarnation += 1;
        let host = workload.start(self, node);
        let slot = self.slots.get_mut(&node).expect("known node");
        for (stream, s) in host.multicast_node().streams() {
            let vouched = slot
                .vouched
                .get(stream)
                .copied()
                .unwrap_or(amulet_types::Ballot::ZERO);
            if let Some(promised) = s.promised() {
                assert!(
                    promised >= vouched,
                    "{node} restarted as a voting acceptor of {stream} promising {promised}, \
                     below the {vouched} its log made durable: it went back on a promise"
                );
            }
        }
        slot.host = Some(host);
        self.step(workload, node);
    }

    fn deliver<W: Workload>(
        &mut self,
        workload: &mut W,
        from: NodeId,
        to: NodeId,
        message: SimMessage,
    ) {
        let now = self.now;
        let _span = tracing::info_span!("node", id = to.0, t = now.0).entered();
        let Some(slot) = self.slots.get_mut(&to) else {
            workload.at_endpoint(self, from, to, message);
            return;
        };
        if let Some(paused) = slot.paused.as_mut() {
            if slot.host.is_some() {
                paused.held.push((from, message));
            }
            return;
        }
        let Some(host) = slot.host.as_mut() else {
            return;
        };
        match message {
            SimMessage::Paxos(envelope) => host.on_envelope(now, from, envelope),
            SimMessage::Replica(message) => host.on_replica_message(now, message),
            SimMessage::Request {
                tag,
                partition,
                request,
            } => {
                let token = slot.next_token;
                slot.next_token += 1;
                slot.requests.insert(token, (from, tag));
                host.submit(now, partition, request, token);
            }
            SimMessage::Reply { .. } => {}
        }
        self.step(workload, to);
    }

    /// Every live node ticks: its host's timers, its background
    /// checkpoint writes that are done, then a step.
    fn tick_nodes<W: Workload>(&mut self, workload: &mut W) {
        let now = self.now;
        let nodes = self.live_nodes();
        for node in nodes {
            let _span = tracing::info_span!("node", id = node.0, t = now.0).entered();
            let slot = self.slots.get_mut(&node).expect("live");
            if slot.paused.is_some() {
                continue;
            }
            let host = slot.host.as_mut().expect("live");
            host.tick(now).expect("simulated storage does not fail");
            let (done, writing): (Vec<_>, Vec<_>) = std::mem::take(&mut slot.files.writing)
                .into_iter()
                .partition(|(at, ..)| *at <= now);
            slot.files.writing = writing;
            for (_, partition, write, bytes) in done {
                let outcome = slot.files.write(partition, write, bytes);
                host.checkpoint_written(partition, write, outcome, now)
                    .expect("a background checkpoint write failing does not stop a node");
            }
            self.step(workload, node);
            self.stop_if_left(workload, node);
        }
    }

    /// Stops `node` if the view removed it and it has nothing left to do,
    /// as the node's runtime does after a tick (`Host::left_cluster`): a
    /// removed node that stopped while a stream in use still needed its
    /// vote would show here as a stream that never decides again.
    fn stop_if_left<W: Workload>(&mut self, workload: &mut W, node: NodeId) {
        let slot = self.slots.get_mut(&node).expect("known node");
        let Some(view) = slot.host.as_ref().and_then(|h| h.left_cluster()) else {
            return;
        };
        if self.verbose {
            println!(
                "t={}us node {node} stops: removed in view {}, no replica or vote left",
                self.now.0, view.0
            );
        }
        self.network.drop_to(node);
        if let Some(host) = &slot.host {
            workload.crashing(node, slot.incarnation, host);
        }
        slot.crash(None);
        self.nemesis.stopped_by_itself(node);
    }

    /// Flushes `node`'s host until it settles, carrying out its commands.
    pub fn step<W: Workload>(&mut self, workload: &mut W, node: NodeId) {
        let now = self.now;
        let mut commands = Vec::new();
        loop {
            let Some(slot) = self.slots.get_mut(&node) else {
                return;
            };
            if slot.paused.is_some() {
                return;
            }
            let incarnation = slot.incarnation;
            let Some(host) = slot.host.as_mut() else {
                return;
            };
            let flushed = host
                .flush(now, &mut slot.storage)
                .unwrap_or_else(|e| panic!("node {node} stops: {e}"));
            host.drain_commands(&mut commands);
            if commands.is_empty() && flushed == Flushed::Settled {
                return;
            }
            for command in commands.drain(..) {
                self.carry_out(workload, node, incarnation, command);
            }
        }
    }

    fn carry_out<W: Workload>(
        &mut self,
        workload: &mut W,
        node: NodeId,
        incarnation: u32,
        command: Command<PartitionState>,
    ) {
        let now = self.now;
        let slot = self.slots.get_mut(&node).expect("known node");
        match command {
            Command::Send { to, envelope } => {
                self.network
                    .send(now, node, to, SimMessage::Paxos(envelope));
            }
            Command::SendReplica { to, message } => {
                self.network
                    .send(now, node, to, SimMessage::Replica(*message));
            }
            Command::Reply { token, reply } => {
                if let Some((client, tag)) = slot.requests.remove(&token) {
                    self.reply(node, client, tag, reply);
                }
            }
            Command::Abandon { token } => {
                // Not answered: the client times out and resends.
                slot.requests.remove(&token);
            }
            Command::Deliver { group, merged } => {
                self.trace.event(
                    now,
                    TRACE_DELIVER,
                    node,
                    node,
                    TraceHash::digest(&(merged.stream.0, merged.value.id.sequence)),
                );
                workload.delivered(now, node, incarnation, group, &merged);
            }
            Command::Subscription { group, event } => {
                workload.subscription(now, node, group, event);
            }
            Command::Synced { promises } => {
                for (stream, promised) in promises {
                    let entry = slot.vouched.entry(stream).or_insert(promised);
                    *entry = (*entry).max(promised);
                }
            }
            Command::WriteCheckpoint {
                partition,
                write,
                file,
                durability,
            } => {
                let bytes = match file {
                    CheckpointFile::Body(body) => Bytes::from(encode_checkpoint(&body)),
                    CheckpointFile::Bytes(bytes) => bytes,
                };
                match durability {
                    Durability::Now => {
                        let outcome = slot.files.write(partition, write, bytes);
                        let host = slot.host.as_mut().expect("live");
                        host.checkpoint_written(partition, write, outcome, now)
                            .unwrap_or_else(|e| panic!("node {node} stops: {e}"));
                    }
                    Durability::Background => {
                        let took = self.write_rng.range(0, self.write_micros_max + 1);
                        slot.files
                            .writing
                            .push((now.plus(took), partition, write, bytes));
                    }
                }
            }
            Command::RemoveCheckpoint { partition, write } => {
                slot.files.remove(partition, write);
            }
            Command::ReadCheckpoint { partition } => {
                let file = slot.files.files.get(&partition).cloned();
                let host = slot.host.as_mut().expect("live");
                host.checkpoint_read(partition, Ok(file), now);
            }
        }
    }

    fn reply(&mut self, node: NodeId, client: NodeId, tag: u64, reply: ClientReply<MapReply>) {
        self.network
            .send(self.now, node, client, SimMessage::Reply { tag, reply });
    }

    /// Sends a client request from `from` to `to` (a node).
    pub fn request(
        &mut self,
        from: NodeId,
        to: NodeId,
        tag: u64,
        partition: Option<PartitionId>,
        request: amulet_smr::ClientRequest<MapCommand>,
    ) {
        let message = SimMessage::Request {
            tag,
            partition,
            request,
        };
        self.network.send(self.now, from, to, message);
    }

    /// Checks every live host's invariants (its merges' and replicas'
    /// included).
    pub fn check_invariants(&self) {
        for (_, host) in self.hosts() {
            host.check_invariants();
        }
    }
}
