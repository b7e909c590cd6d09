//! The node's event loop: one task owns the node's [`MulticastNode`] and
//! feeds it peer messages, ticks and local proposals. After each batch of
//! inputs it loops messages to itself back in, sends, syncs acceptor logs
//! once if a message must wait for durability (group commit), sends those,
//! and hands deliveries to the application and the load generator.

mod handoff;
mod recovery;

use crate::checkpoint_store::{CheckpointBody, CheckpointStore};
use crate::checkpointer::{lanes_of, Checkpointer};
use crate::client_api::ClientApi;
use crate::config::NodeConfig;
use crate::digest::{DeliveryDigest, DigestPoint};
use crate::load::{LoadGenerator, LoadReport, LoadSpec};
use crate::node_handle::{Command, NodeHandle, NodeStats, PageAnswer, ReplicaStatus, StreamStatus};
use crate::state_transfer::{ChunkOutcome, StateTransfer};
use crate::storage_setup::{open_logs, LogOpener, OpenedLogs};
use crate::transport::{Transport, TransportSpec};
use amulet_dmap::{MapLimits, MapReply, PartitionState};
use amulet_multicast::{GroupId, MergePosition, Merged, MulticastNode};
use amulet_smr::{
    trim_point, work_fences, Body, ClientReply, FenceHost, Output, PartitionMap, Reconfiguration,
    Replica, ReplicaConfig, ReplicaMessage, RequestId, StreamSpec, TrimQuorum,
};
use amulet_storage::AcceptorLog;
use amulet_types::{
    Instance, NodeId, PartitionId, StorageMode, StreamConfig, StreamId, TimeMicros,
};
use amulet_wire::{Envelope, Frame, Hello, ValueKind};
use bytes::Bytes;
use serde::Serialize;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::{Duration, Instant};
use tokio::sync::mpsc;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// Peer messages handled before effects are flushed, so one busy link
/// cannot hold back sends (and fsyncs) for long.
/// A replica whose streams have this many more instances decided elsewhere
/// than it has delivered refuses new requests with "behind" (the client
/// resends to another replica) and answers snapshot pages it cannot serve
/// yet with UNAVAILABLE at once. Well above what a live replica lags by
/// between two heartbeats under load (tens of instances), well below the
/// backlog of a node restarted after minutes (a fault-suite run found
/// clients waiting seconds on one, and a final snapshot read giving up).
const CATCHING_UP_LAG: u64 = 2_048;

const INPUTS_PER_FLUSH_MAX: usize = 1024;
/// Rounds of looping self-addressed messages back within one flush; the
/// rest waits for the next flush rather than starving other inputs.
const LOOPBACK_ROUNDS_MAX: usize = 64;
/// How often the protocol is ticked (timeouts, heartbeats, skips).
const TICK_INTERVAL: Duration = Duration::from_millis(1);
/// How often async-durable logs are synced in the background.
const ASYNC_SYNC_INTERVAL: Duration = Duration::from_millis(5);
/// How often safe instances are updated and acceptor logs trimmed.
const TRIM_INTERVAL: Duration = Duration::from_millis(100);
/// How long shutdown waits for queued messages to reach peers.
const SHUTDOWN_FLUSH_TIMEOUT: Duration = Duration::from_millis(500);

/// What a node did, written at shutdown.
#[derive(Clone, Debug, Serialize)]
pub struct NodeReport {
    /// This node.
    pub node: u32,
    /// This run's incarnation.
    pub incarnation: u32,
    /// Load generator figures (zeros when no load ran).
    #[serde(flatten)]
    pub load: LoadReport,
    /// Count and digest of every value delivered.
    pub delivered: DigestPoint,
    /// Digests of the delivery order every 1024 values, to compare a
    /// common prefix with other nodes.
    pub digest_checkpoints: Vec<DigestPoint>,
    /// Per-stream state at shutdown.
    pub streams: Vec<StreamStatus>,
}

/// A running node.
pub struct Node {
    handle: NodeHandle,
    task: JoinHandle<anyhow::Result<NodeReport>>,
    local_addr: SocketAddr,
    /// The gRPC client API, when the node serves DMap.
    api: Option<ClientApi>,
}

impl Node {
    /// Starts a node: opens its logs, binds its listener, connects to its
    /// peers and starts its event loop. With `load`, the node also runs a
    /// closed-loop load generator. Delivered values in merged order go to
    /// `deliveries` if given.
    pub async fn start(
        config: NodeConfig,
        load: Option<LoadSpec>,
        deliveries: Option<mpsc::UnboundedSender<Merged>>,
    ) -> anyhow::Result<Node> {
        config.validate()?;
        let me = config.me();
        if let Some(spec) = &load {
            check_load(&config, spec)?;
        }
        let OpenedLogs {
            mut logs,
            incarnation,
            mut opener,
        } = open_logs(&config)?;
        let partition_map = config.partition_map()?;
        let store = CheckpointStore::new(&config.data_dir);
        store.remove_temporaries();
        let (replicas, restored) = start_replicas(me, incarnation, partition_map.as_ref(), &store)?;
        // Streams created at run time by reconfigurations (in the newest
        // map a replica here restored) are not in the configuration: open
        // their logs too, with the global stream's limits.
        if let Some(map) = replicas.values().map(|r| r.map()).max_by_key(|m| m.version) {
            let template = logs
                .iter()
                .find(|(c, _)| c.stream == map.global_stream)
                .map(|(c, _)| c.limits.clone())
                .unwrap_or_default();
            for spec in map.streams.values() {
                let open = logs.iter().any(|(c, _)| c.stream == spec.stream);
                if open || !spec.members().contains(&me) {
                    continue;
                }
                let stream = runtime_stream_config(spec, &template);
                let log = opener.open(&stream, false)?;
                logs.push((stream, log));
            }
        }
        let storage: Vec<(StreamId, StorageMode)> =
            logs.iter().map(|(c, _)| (c.stream, c.storage)).collect();
        let spec = TransportSpec {
            hello: Hello {
                cluster: config.cluster,
                node: me,
                incarnation,
            },
            listen: config.listen,
            peers: config.peer_addrs()?,
            frame_bytes_max: config.frame_bytes_max(),
        };
        let (transport, inbound) = Transport::start(spec).await?;
        let local_addr = transport.local_addr();
        #[allow(clippy::disallowed_methods)] // the runtime is the clock of the sans-IO core
        let epoch = Instant::now();
        let groups = merge_groups(&logs, partition_map.as_ref(), &replicas)?;
        let mut node = MulticastNode::with_groups(me, logs, groups, incarnation, TimeMicros(0));
        for (partition, position) in &restored {
            node.restore_group(GroupId(partition.0), position)
                .map_err(|e| {
                    anyhow::anyhow!(
                        "checkpoint {} does not fit this node's streams ({e:?}); move it away to replay the partition's streams",
                        store.path(*partition).display()
                    )
                })?;
        }
        let chunk_bytes = (config.frame_bytes_max() / 2).clamp(32 * 1024, 4 * 1024 * 1024);
        let transfer = StateTransfer::new(me, store.clone(), chunk_bytes);
        let checkpointer = Checkpointer::new(
            store.clone(),
            config.checkpoint_interval_micros(),
            replicas.iter().map(|(p, r)| {
                let durable = restored
                    .iter()
                    .find(|(q, _)| q == p)
                    .map(|(_, position)| lanes_of(position));
                (*p, r.global_position(), durable)
            }),
            TimeMicros(0),
        );
        let (commands, command_rx) = mpsc::unbounded_channel();
        let event_loop = EventLoop {
            me,
            incarnation,
            node,
            transport: Some(transport),
            inbound,
            commands: command_rx,
            deliveries,
            epoch,
            storage,
            digest: DeliveryDigest::default(),
            load: load.map(|spec| LoadGenerator::new(me, spec)),
            partition_map,
            replicas,
            pending: BTreeMap::new(),
            checkpointer,
            store,
            transfer,
            installs: Vec::new(),
            log_opener: opener,
        };
        tracing::info!(node = %me, incarnation, %local_addr, "node started");
        let task = tokio::spawn(event_loop.run());
        let handle = NodeHandle::new(commands);
        let api = match config.client_listen()? {
            Some(listen) => {
                let api =
                    ClientApi::start(listen, me, config.client_addresses()?, handle.clone()).await;
                match api {
                    Ok(api) => Some(api),
                    Err(error) => {
                        handle.shutdown();
                        let _ = task.await;
                        return Err(error);
                    }
                }
            }
            None => None,
        };
        Ok(Node {
            handle,
            task,
            local_addr,
            api,
        })
    }

    /// A handle for multicasting, stats and shutdown.
    pub fn handle(&self) -> NodeHandle {
        self.handle.clone()
    }

    /// The address the node listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// The address the client API listens on, if it serves one.
    pub fn client_addr(&self) -> Option<SocketAddr> {
        self.api.as_ref().map(|a| a.local_addr())
    }

    /// Stops the node cleanly (client API first, then logs synced) and
    /// returns its report.
    pub async fn stop(self) -> anyhow::Result<NodeReport> {
        if let Some(api) = self.api {
            api.stop().await;
        }
        self.handle.shutdown();
        self.task.await?
    }

    /// Waits until the node stops by itself (an error) or is stopped
    /// through a handle.
    pub async fn join(self) -> anyhow::Result<NodeReport> {
        let report = self.task.await;
        if let Some(api) = self.api {
            api.stop().await;
        }
        report?
    }
}

fn check_load(config: &NodeConfig, spec: &LoadSpec) -> anyhow::Result<()> {
    anyhow::ensure!(!spec.streams.is_empty(), "load: no streams given");
    anyhow::ensure!(spec.window > 0, "load: window must be at least 1");
    let mine = config.my_streams();
    for stream in &spec.streams {
        let Some(config) = mine.iter().find(|c| c.stream == *stream) else {
            anyhow::bail!("load: node is not a member of stream {}", stream.0);
        };
        anyhow::ensure!(
            spec.value_bytes <= config.limits.value_bytes_max,
            "load: values of {} bytes exceed value_bytes_max of stream {}",
            spec.value_bytes,
            stream.0
        );
    }
    Ok(())
}

struct EventLoop {
    me: NodeId,
    incarnation: u32,
    node: MulticastNode,
    /// `None` once shut down.
    transport: Option<Transport>,
    inbound: mpsc::Receiver<(NodeId, Frame)>,
    commands: mpsc::UnboundedReceiver<Command>,
    deliveries: Option<mpsc::UnboundedSender<Merged>>,
    epoch: Instant,
    storage: Vec<(StreamId, StorageMode)>,
    digest: DeliveryDigest,
    load: Option<LoadGenerator>,
    /// The initial partition map, when the node serves DMap.
    partition_map: Option<PartitionMap>,
    /// DMap replicas of the partitions this node replicates. A restarted
    /// node's replicas continue from their checkpoints (or start empty)
    /// and get their streams from there on.
    replicas: BTreeMap<PartitionId, Replica<PartitionState>>,
    /// Client requests waiting for their reply.
    pending: BTreeMap<(PartitionId, RequestId), oneshot::Sender<ClientReply<MapReply>>>,
    checkpointer: Checkpointer,
    store: CheckpointStore,
    transfer: StateTransfer,
    /// Peers' checkpoints fetched and waiting to be installed after the
    /// current flush (never in the middle of one: undrained deliveries
    /// belong to the replica being replaced).
    installs: Vec<(PartitionId, Box<CheckpointBody>, Bytes)>,
    /// Opens the logs of streams created at run time.
    log_opener: LogOpener,
}

/// A node's replicas, and the merge positions of those restored from a
/// checkpoint.
type StartedReplicas = (
    BTreeMap<PartitionId, Replica<PartitionState>>,
    Vec<(PartitionId, MergePosition)>,
);

/// The replicas `me` runs, from the initial partition map: each continues
/// from its checkpoint if it has one. A damaged checkpoint stops the node
/// with a clear error rather than silently replaying (the streams' early
/// instances may be trimmed).
fn start_replicas(
    me: NodeId,
    incarnation: u32,
    map: Option<&PartitionMap>,
    store: &CheckpointStore,
) -> anyhow::Result<StartedReplicas> {
    let Some(initial) = map else {
        return Ok((BTreeMap::new(), Vec::new()));
    };
    // Reconfigurations change the partitions: the newest map among this
    // node's checkpoints says which this node replicates now. A partition
    // merged away (or a checkpoint file a write finished after its merge)
    // is dropped; a partition split off here but without a checkpoint yet
    // is forked again when its source replays the split's fence.
    let mut bodies = BTreeMap::new();
    for partition in store.partitions() {
        if let Some(body) = store.read(partition)? {
            bodies.insert(partition, body);
        }
    }
    let newest = bodies
        .values()
        .map(|b| &b.replica.map)
        .filter(|m| m.version >= initial.version)
        .max_by_key(|m| m.version)
        .cloned();
    let map = newest.as_ref().unwrap_or(initial);
    let mut replicas = BTreeMap::new();
    let mut restored = Vec::new();
    // A replica moved away from here (`Reconfiguration::Move`) keeps its
    // checkpoint until a majority of the new group holds the state.
    let leaving = map.leaving(me);
    let stale: Vec<PartitionId> = bodies
        .keys()
        .copied()
        .filter(|p| !map.partitions_of(me).contains(p) && !leaving.contains(p))
        .collect();
    for partition in stale {
        tracing::info!(
            partition = partition.0,
            "checkpoint of a partition no longer here removed"
        );
        bodies.remove(&partition);
        store.remove(partition)?;
    }
    let mut here = map.partitions_of(me);
    here.extend(leaving.iter().filter(|p| bodies.contains_key(p)));
    for partition in here {
        let config = ReplicaConfig::new(me, incarnation, partition);
        let state = PartitionState::new(MapLimits::default());
        let mut replica = match bodies.remove(&partition) {
            // Split off or moved here since the initial map, without a
            // checkpoint yet: forked again at the split's fence, or
            // fetched from a peer (`adopt_partitions`).
            None if !initial.partitions_of(me).contains(&partition) => continue,
            None => Replica::new(config, initial.clone(), state),
            Some(body) => {
                let replica = Replica::restore(config, body.replica, state).map_err(|e| {
                    anyhow::anyhow!("checkpoint {}: {e}", store.path(partition).display())
                })?;
                tracing::info!(
                    partition = partition.0,
                    global_position = replica.global_position(),
                    lanes = ?body.position.lanes.iter().map(|l| (l.stream.0, l.next.0)).collect::<Vec<_>>(),
                    "replica restored from its checkpoint"
                );
                restored.push((partition, body.position));
                replica
            }
        };
        crate::injected_bug::apply(&mut replica);
        replicas.insert(partition, replica);
    }
    Ok((replicas, restored))
}

/// One merge group per replica (its partition stream and the global
/// stream, numbered by partition), so each replica's merge state is its
/// own; a node without replicas merges every stream it is a member of.
fn merge_groups(
    logs: &[(StreamConfig, Box<dyn AcceptorLog>)],
    map: Option<&PartitionMap>,
    replicas: &BTreeMap<PartitionId, Replica<PartitionState>>,
) -> anyhow::Result<Vec<(GroupId, Vec<StreamId>)>> {
    let member = |stream: StreamId| logs.iter().any(|(c, _)| c.stream == stream);
    let Some(map) = map.filter(|_| !replicas.is_empty()) else {
        return Ok(vec![(
            GroupId(0),
            logs.iter().map(|(c, _)| c.stream).collect(),
        )]);
    };
    let mut groups = Vec::new();
    for (partition, replica) in replicas {
        let own = replica
            .map()
            .partitions
            .get(partition)
            .map_or_else(|| map.partitions[partition].stream, |info| info.stream);
        let streams = vec![map.global_stream, own];
        if let Some(missing) = streams.iter().find(|s| !member(**s)) {
            anyhow::bail!(
                "this node replicates partition {} but is not a member of stream {}",
                partition.0,
                missing.0
            );
        }
        groups.push((GroupId(partition.0), streams));
    }
    Ok(groups)
}

impl EventLoop {
    fn now(&self) -> TimeMicros {
        TimeMicros(u64::try_from(self.epoch.elapsed().as_micros()).unwrap_or(u64::MAX))
    }

    async fn run(mut self) -> anyhow::Result<NodeReport> {
        let result = self.serve().await;
        // Whatever ended the loop, make what was written durable before
        // the process goes, and let queued messages out.
        let synced = self.sync_logs(|_| true);
        if let Some(transport) = self.transport.take() {
            transport.shutdown(SHUTDOWN_FLUSH_TIMEOUT).await;
        }
        result?;
        synced?;
        // A clean stop leaves a checkpoint of every replica at the point
        // it stopped, so the restart replays nothing and never needs a
        // peer's checkpoint.
        self.checkpoint_now();
        // A clean stop: the logs record it, so an async log knows at its
        // next open that it lost nothing even if the machine restarts.
        let streams: Vec<StreamId> = self.node.streams().keys().copied().collect();
        for stream in streams {
            if let Some(node) = self.node.stream_mut(stream) {
                node.log_mut()
                    .close()
                    .map_err(|e| anyhow::anyhow!("stream {}: log close failed: {e}", stream.0))?;
            }
        }
        let now = self.now();
        let report = NodeReport {
            node: self.me.0,
            incarnation: self.incarnation,
            load: self
                .load
                .as_ref()
                .map(|l| l.report(now))
                .unwrap_or_default(),
            delivered: self.digest.current(),
            digest_checkpoints: self.digest.checkpoints().to_vec(),
            streams: self.stream_status(),
        };
        tracing::info!(
            node = %self.me,
            delivered = report.delivered.count,
            digest = %format!("{:016x}", report.delivered.digest),
            "node stopped"
        );
        Ok(report)
    }

    async fn serve(&mut self) -> anyhow::Result<()> {
        let mut tick = tokio::time::interval(TICK_INTERVAL);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        let tick_micros = TICK_INTERVAL.as_micros() as u64;
        let async_sync_micros = ASYNC_SYNC_INTERVAL.as_micros() as u64;
        let mut last_tick = TimeMicros(0);
        let mut last_async_sync = TimeMicros(0);
        let trim_micros = TRIM_INTERVAL.as_micros() as u64;
        let mut last_trim = TimeMicros(0);
        loop {
            // The timer only wakes the loop; ticks and background syncs
            // are due by elapsed time, checked after every input, so a
            // saturated inbound queue cannot starve timeouts, heartbeats
            // and skips.
            tokio::select! {
                command = self.commands.recv() => {
                    // Every request already queued joins this flush, so
                    // concurrent clients share one proposal batch and one
                    // group commit instead of one each.
                    let mut next = command;
                    let mut handled = 0;
                    loop {
                        match next {
                            None | Some(Command::Shutdown) => return self.flush(),
                            Some(command) => self.on_command(command),
                        }
                        handled += 1;
                        if handled == INPUTS_PER_FLUSH_MAX {
                            break;
                        }
                        next = match self.commands.try_recv() {
                            Ok(command) => Some(command),
                            Err(_) => break,
                        };
                    }
                }
                Some((from, frame)) = self.inbound.recv() => {
                    let now = self.now();
                    self.on_frame(now, from, frame);
                    for _ in 1..INPUTS_PER_FLUSH_MAX {
                        match self.inbound.try_recv() {
                            Ok((from, frame)) => self.on_frame(now, from, frame),
                            Err(_) => break,
                        }
                    }
                }
                Some(done) = self.checkpointer.done.recv() => {
                    let partition = done.0;
                    self.checkpointer.finished(done);
                    self.serve_waiting(partition);
                }
                _ = tick.tick() => {}
            }
            let now = self.now();
            if now.since(last_tick) >= tick_micros {
                last_tick = now;
                self.node.tick(now);
                for replica in self.replicas.values_mut() {
                    replica.tick(now.0);
                }
                // A request whose client gave up (its proposal may have
                // been lost) is never answered: drop its waiter.
                self.pending.retain(|_, waiter| !waiter.is_closed());
            }
            if now.since(last_trim) >= trim_micros {
                last_trim = now;
                self.trim_logs();
            }
            if now.since(last_async_sync) >= async_sync_micros {
                last_async_sync = now;
                self.sync_logs(|mode| mode == StorageMode::AsyncDurable)?;
            }
            self.flush()?;
            if let Some(load) = self.load.as_mut() {
                load.offer(now, &mut self.node)?;
                self.flush()?;
            }
            if !self.installs.is_empty() {
                self.install_checkpoints();
                self.flush()?;
            }
            self.checkpointer.poll(now, &self.replicas, &self.node);
        }
    }

    fn on_command(&mut self, command: Command) {
        match command {
            Command::Multicast {
                stream,
                bytes,
                reply,
            } => {
                let now = self.now();
                let _ = reply.send(self.node.multicast(now, stream, bytes));
            }
            Command::Stats(reply) => {
                let _ = reply.send(NodeStats {
                    delivered: self.digest.current(),
                    streams: self.stream_status(),
                    map_version: self.current_map().map_or(0, |m| m.version.0),
                    replicas: self.replica_status(),
                });
            }
            Command::Submit {
                partition,
                request,
                reply,
            } => {
                let now = self.now();
                let partition = partition.or_else(|| self.replicas.keys().next().copied());
                let catching_up = partition.is_some_and(|p| self.catching_up(p));
                // A move's state travels as a checkpoint, and the old group
                // hands off once the new one holds a durable one: without
                // checkpoints it would wait forever. Refused at the edge.
                let move_without_checkpoints = self.checkpointer.every_micros() == 0
                    && matches!(
                        &request.body,
                        Body::Reconfigure(Reconfiguration::Move { .. })
                    );
                if move_without_checkpoints {
                    let _ = reply.send(ClientReply::Invalid(
                        "a move needs checkpoints: set [smr] checkpoint_interval_ms > 0".into(),
                    ));
                    return;
                }
                match partition.and_then(|p| self.replicas.get_mut(&p).map(|r| (p, r))) {
                    // Not proposed: the client resends it, with the same
                    // sequence, to another replica at once instead of
                    // waiting for this one to replay its streams.
                    Some(_) if catching_up => {
                        let _ = reply.send(ClientReply::Behind);
                    }
                    Some((partition, replica)) => {
                        let id = replica.submit(now.0, request);
                        self.pending.insert((partition, id), reply);
                    }
                    None => {
                        let answer = match self.current_map() {
                            // Moved here, its state still on the way:
                            // another replica of the new group, or this
                            // one shortly.
                            _ if partition.is_some_and(|p| self.adopting(p)) => ClientReply::Behind,
                            Some(map) => ClientReply::NotAReplica(Box::new(map.clone())),
                            None => ClientReply::Invalid(
                                "this cluster serves no DMap ([smr] is not configured)".into(),
                            ),
                        };
                        let _ = reply.send(answer);
                    }
                }
            }
            Command::PartitionMap(reply) => {
                let _ = reply.send(self.current_map().cloned());
            }
            Command::SnapshotPage {
                partition,
                snapshot,
                after,
                limit,
                reply,
            } => {
                let answer = match self.replicas.get(&partition) {
                    None => PageAnswer::NotAReplica,
                    // The snapshot's id is the global position of its
                    // opening: a replica that has not got there yet will.
                    Some(replica) if replica.global_position() < snapshot => {
                        if self.catching_up(partition) {
                            PageAnswer::CatchingUp
                        } else {
                            PageAnswer::Behind
                        }
                    }
                    Some(replica) if replica.state().snapshot_held_elsewhere(snapshot) => {
                        PageAnswer::HeldElsewhere
                    }
                    Some(replica) => {
                        match replica
                            .state()
                            .snapshot_page(snapshot, after.as_deref(), limit)
                        {
                            Ok(page) => PageAnswer::Page(page),
                            Err(error) => PageAnswer::Failed(error),
                        }
                    }
                };
                let _ = reply.send(answer);
            }
            Command::Shutdown => {}
        }
    }

    fn on_frame(&mut self, now: TimeMicros, from: NodeId, frame: Frame) {
        match frame {
            Frame::Envelope(envelope) => self.node.on_message(now, from, envelope),
            Frame::Replica(bytes) => match ReplicaMessage::decode(&bytes) {
                Ok(message) if !message.is_signal() => self.on_transfer_message(now, message),
                Ok(message) => {
                    for replica in self.replicas.values_mut() {
                        replica.on_message(message.clone());
                    }
                }
                Err(error) => {
                    tracing::warn!(peer = %from, %error, "undecodable replica message dropped")
                }
            },
            Frame::Hello(_) => {}
        }
    }

    /// Carries out what the replicas asked for: proposals become new
    /// multicast effects, flushed by the caller.
    fn drain_replicas(&mut self, now: TimeMicros) {
        let partitions: Vec<PartitionId> = self.replicas.keys().copied().collect();
        for partition in partitions {
            let outputs = self.replicas.get_mut(&partition).expect("listed").drain();
            for output in outputs {
                match output {
                    Output::Propose {
                        stream,
                        value,
                        barrier,
                    } => {
                        let kind = if barrier {
                            ValueKind::Barrier
                        } else {
                            ValueKind::Application
                        };
                        // A refusal (proposer queue full) surfaces as the
                        // client's timeout; it retries.
                        if let Err(error) = self.node.multicast_kind(now, stream, kind, value) {
                            tracing::debug!(?error, "replica proposal refused");
                        }
                    }
                    Output::Send { to, message } => {
                        if to == self.me {
                            for replica in self.replicas.values_mut() {
                                replica.on_message(message.clone());
                            }
                        } else if let Some(transport) = self.transport.as_mut() {
                            transport.send_replica(to, message.encode());
                        }
                    }
                    Output::Reply { request, reply } => {
                        if let Some(waiter) = self.pending.remove(&(partition, request)) {
                            let _ = waiter.send(reply);
                        }
                    }
                }
            }
        }
    }

    /// The newest partition map a local replica has executed, or the
    /// configured one.
    fn current_map(&self) -> Option<&PartitionMap> {
        self.replicas
            .values()
            .map(|r| r.map())
            .max_by_key(|m| m.version)
            .or(self.partition_map.as_ref())
    }

    /// Whether the replica of `partition` is so far behind its streams
    /// (a restarted node replaying them) that clients should go elsewhere.
    fn catching_up(&self, partition: PartitionId) -> bool {
        self.replicas.contains_key(&partition)
            && (self.node.group_lag(GroupId(partition.0)) > CATCHING_UP_LAG
                || self.transfer.fetching(partition))
    }

    fn send_replica_message(&mut self, to: NodeId, message: ReplicaMessage) {
        if let Some(transport) = self.transport.as_mut() {
            transport.send_replica(to, message.encode());
        }
    }

    /// Writes every replica's checkpoint now, on this thread (shutdown).
    fn checkpoint_now(&mut self) {
        if self.checkpointer.every_micros() == 0 {
            return;
        }
        for (partition, replica) in &self.replicas {
            let (Some(state), Some(position)) = (
                replica.checkpoint(),
                self.node.group_position(GroupId(partition.0)),
            ) else {
                continue;
            };
            let body = CheckpointBody {
                replica: state,
                position,
            };
            match self.store.write(*partition, &body) {
                Ok(bytes) => tracing::info!(
                    partition = partition.0,
                    global_position = body.replica.global_position,
                    bytes,
                    "checkpoint written at shutdown"
                ),
                Err(error) => tracing::error!(%error, "checkpoint at shutdown failed"),
            }
        }
    }

    fn replica_status(&self) -> Vec<ReplicaStatus> {
        self.replicas
            .iter()
            .map(|(partition, r)| ReplicaStatus {
                checkpoint: self.checkpointer.stats(*partition).into(),
                partition: partition.0,
                stream: r.stream().0,
                global_position: r.global_position(),
                queued: r.queued() as u64,
                sessions: r.sessions() as u64,
                maps: r
                    .state()
                    .map_names()
                    .map(|m| m.as_str().to_string())
                    .collect(),
            })
            .collect()
    }

    fn stream_status(&self) -> Vec<StreamStatus> {
        self.node
            .streams()
            .values()
            .map(|s| StreamStatus {
                stream: s.stream().0,
                decided_below: s.decided_below().0,
                learner_lag: s.learner_lag(),
                coordinator: s.is_coordinator(),
                voting: s.is_voting(),
                instances_proposed: s.stats().instances_proposed,
                skips_proposed: s.stats().skips_proposed,
                values_delivered: s.stats().values_delivered,
                trimmed_below: s.trimmed_below().0,
            })
            .collect()
    }

    /// Syncs the dirty logs of streams whose storage mode `select`s.
    /// A failed sync stops the node: it can no longer keep its promises.
    fn sync_logs(&mut self, select: impl Fn(StorageMode) -> bool) -> anyhow::Result<()> {
        for (stream, mode) in &self.storage {
            if mode == &StorageMode::Memory || !select(*mode) {
                continue;
            }
            if let Some(node) = self.node.stream_mut(*stream) {
                let log = node.log_mut();
                if log.dirty() {
                    log.sync().map_err(|e| {
                        anyhow::anyhow!("stream {}: log sync failed: {e}", stream.0)
                    })?;
                }
            }
        }
        Ok(())
    }

    /// Carries out everything the node asked for since the last flush.
    fn flush(&mut self) -> anyhow::Result<()> {
        for _ in 0..LOOPBACK_ROUNDS_MAX {
            if !self.replicas.is_empty() {
                let now = self.now();
                self.drain_replicas(now);
            }
            let effects = self.node.drain();
            if effects.is_empty() {
                return Ok(());
            }
            let mut local = Vec::new();
            self.route(effects.sends, &mut local);
            if !effects.sends_after_sync.is_empty() {
                // Group commit: one sync per log covers every vote and
                // promise of this batch of inputs.
                self.sync_logs(|_| true)?;
                self.route(effects.sends_after_sync, &mut local);
            }
            for (stream, below) in effects.trimmed {
                tracing::warn!(%stream, %below, "learner fell behind the acceptors' trim point");
                self.need_transfer(stream, below);
            }
            let now = self.now();
            for (group, merged) in effects.delivered {
                self.digest.push(&merged);
                if let Some(load) = self.load.as_mut() {
                    load.delivered(now, &merged);
                }
                if let Some(replica) = self.replicas.get_mut(&PartitionId(group.0)) {
                    replica.on_deliver(merged.stream, &merged.value.bytes);
                }
                if let Some(deliveries) = &self.deliveries {
                    let _ = deliveries.send(merged);
                }
            }

            for envelope in local {
                self.node.on_message(now, self.me, envelope);
            }
            if !self.replicas.is_empty() {
                self.work_fences(now)?;
            }
        }
        Ok(())
    }

    /// Opens a stream created at run time (its log under the data
    /// directory), with the global stream's limits.
    fn open_runtime_stream(&mut self, spec: &StreamSpec) -> anyhow::Result<()> {
        if !spec.members().contains(&self.me) {
            return Ok(());
        }
        let template = self
            .current_map()
            .and_then(|m| self.node.streams().get(&m.global_stream))
            .map(|s| s.config().limits.clone())
            .unwrap_or_default();
        let config = runtime_stream_config(spec, &template);
        let log = self.log_opener.open(&config, false)?;
        let storage = config.storage;
        self.node
            .add_stream(config, log, self.now())
            .map_err(|e| anyhow::anyhow!("stream {}: {e:?}", spec.stream.0))?;
        self.storage.push((spec.stream, storage));
        Ok(())
    }

    /// Does the work of every merge stopped at a barrier's fence whose
    /// replica executed everything before it (see [`amulet_smr::work_fences`]):
    /// opens the streams a reconfiguration created, forks a split-off
    /// partition (whose first checkpoint is written here and now, so a
    /// restart finds it), retires a merged one, releases the fences.
    fn work_fences(&mut self, now: TimeMicros) -> anyhow::Result<()> {
        let me = self.me;
        let template = self
            .current_map()
            .and_then(|m| self.node.streams().get(&m.global_stream))
            .map(|s| s.config().limits.clone())
            .unwrap_or_default();
        let opener = &mut self.log_opener;
        let mut failed: Option<anyhow::Error> = None;
        let done = {
            let new_state = || PartitionState::new(MapLimits::default());
            let stream_config = |spec: &StreamSpec| runtime_stream_config(spec, &template);
            let mut open_log = |config: &StreamConfig| -> Box<dyn AcceptorLog> {
                match opener.open(config, true) {
                    Ok(log) => log,
                    Err(error) => {
                        // The node cannot take part in the new stream: it
                        // stops (below) rather than run a partition
                        // without its log.
                        failed.get_or_insert(error);
                        Box::new(amulet_storage::MemoryRing::after_restart(1))
                    }
                }
            };
            let mut host = FenceHost {
                me,
                incarnation: self.incarnation,
                new_state: &new_state,
                stream_config: &stream_config,
                open_log: &mut open_log,
                now,
            };
            work_fences(&mut self.node, &mut self.replicas, &mut host)
        };
        if let Some(error) = failed {
            return Err(error.context("opening a stream created by a reconfiguration"));
        }
        if done.released == 0 {
            return Ok(());
        }
        for stream in &done.created {
            if let Some(node) = self.node.streams().get(stream) {
                self.storage.push((*stream, node.config().storage));
            }
        }
        for (partition, position) in done.added {
            let replica = &self.replicas[&partition];
            let body = CheckpointBody {
                replica: replica
                    .checkpoint()
                    .expect("a replica forked at a fence is idle"),
                position,
            };
            let global = body.replica.global_position;
            let lanes = lanes_of(&body.position);
            self.store.write(partition, &body).map_err(|e| {
                anyhow::anyhow!("partition {}: first checkpoint failed: {e}", partition.0)
            })?;
            self.checkpointer.added(partition, global, lanes, now);
            tracing::info!(
                partition = partition.0,
                global_position = global,
                "partition split off here"
            );
        }
        for (partition, position) in done.absorbed {
            // Durable before the merged partition's checkpoint goes: a
            // restart from an older one would wait at the merge's fence
            // for a partition no longer here.
            let body = CheckpointBody {
                replica: self.replicas[&partition]
                    .checkpoint()
                    .expect("a replica at its fence is idle"),
                position,
            };
            let global = body.replica.global_position;
            let lanes = lanes_of(&body.position);
            self.store.write(partition, &body).map_err(|e| {
                anyhow::anyhow!(
                    "partition {}: checkpoint after a merge failed: {e}",
                    partition.0
                )
            })?;
            self.checkpointer.installed(partition, global, lanes);
        }
        for partition in done.removed {
            self.checkpointer.removed(partition);
            self.store
                .remove(partition)
                .map_err(|e| anyhow::anyhow!("{e}"))?;
            // Requests still waiting there were answered `Behind` by the
            // replica when it retired; drop what is left.
            self.pending.retain(|(p, _), _| *p != partition);
            tracing::info!(
                partition = partition.0,
                "replica removed at a fence (merged away or moved again)"
            );
        }
        let version = self.current_map().map(|m| m.version.0);
        tracing::info!(fences = done.released, map_version = ?version, "reconfigured at a fence");
        Ok(())
    }

    /// Sends to peers; keeps messages to ourselves for looping back.
    fn route(&mut self, sends: Vec<(NodeId, Envelope)>, local: &mut Vec<Envelope>) {
        for (to, envelope) in sends {
            if to == self.me {
                local.push(envelope);
            } else if let Some(transport) = self.transport.as_mut() {
                transport.send(to, envelope);
            }
        }
    }
}

/// The configuration of a stream created at run time by a reconfiguration:
/// its spec, with `limits` (the global stream's).
fn runtime_stream_config(spec: &StreamSpec, limits: &amulet_types::StreamLimits) -> StreamConfig {
    StreamConfig {
        stream: spec.stream,
        acceptors: spec.acceptors.clone(),
        learners: spec.learners.clone(),
        storage: spec.storage,
        limits: limits.clone(),
        base_position: spec.base_position,
    }
}
