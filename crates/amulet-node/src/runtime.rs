//! The node's event loop: the thin runtime around the host core
//! ([`amulet_host::Host`]). One task owns the host; it feeds it peer
//! frames, client requests, ticks with the time and the completions of
//! checkpoint file work, flushes it, and carries out the commands it
//! drains with tokio, TCP and files (`runtime/commands.rs`). Every rule of
//! what a node does lives in the host, which the simulator runs too.

mod commands;
mod eventual;
mod view_peers;

pub use eventual::EventualAnswer;
pub(crate) use eventual::EventualRequest;
pub(crate) use view_peers::ClientAddresses;

use crate::checkpoint_store::CheckpointStore;
use crate::client_api::ClientApi;
use crate::config::NodeConfig;
use crate::digest::{DeliveryDigest, DigestPoint};
use crate::load::{LoadGenerator, LoadReport, LoadSpec};
use crate::node_handle::{Command, NodeHandle, NodeStats, StreamStatus};
use crate::storage_setup::{open_logs, LogOpener, OpenedLogs};
use crate::transport::{Transport, TransportSpec};
use amulet_dmap::{MapLimits, MapReply, PartitionState};
use amulet_host::{Flushed, Host, HostConfig, Token, WriteId, WriteOutcome};
use amulet_multicast::Merged;
use amulet_smr::{ClientReply, ReplicaMessage};
use amulet_types::{NodeId, PartitionId, TimeMicros};
use amulet_wire::{Frame, Hello};
use bytes::Bytes;
use serde::Serialize;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::mpsc;
use tokio::sync::oneshot;
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// Inputs handled before the host is flushed, so one busy link cannot
/// hold back sends (and fsyncs) for long.
const INPUTS_PER_FLUSH_MAX: usize = 1024;
/// How often the host is ticked while it works (timeouts, heartbeats,
/// skips, and the host's own timers, which it runs by the time it is
/// given): after work arrived within [`BUSY_HOLD`], while it paces a
/// stream, or while clients wait for replies.
const TICK_INTERVAL: Duration = Duration::from_millis(1);
/// Log entries re-pointed at segment files per turn of the loop (about
/// 1 ms of work): a checkpoint that moved a whole long log does not stall
/// the loop for the tens of milliseconds re-pointing all of it takes.
const ADOPT_ENTRIES_PER_TURN: usize = 16_384;
/// How often an idle host is ticked. Its timers are coarser (heartbeats
/// every 50 ms, membership probes every 100 ms, retries and suspicion
/// after 200 ms and more), and each wakeup of a process costs: ticking an
/// idle three-node cluster every millisecond took about 0.17 of a core
/// (measured with pacing off, 2026-12-02).
const IDLE_TICK_INTERVAL: Duration = Duration::from_millis(10);
/// A node ticks fast for this long after an input that is work (a client
/// command, a protocol message other than a heartbeat, a replica message
/// other than a membership probe).
const BUSY_HOLD: Duration = Duration::from_millis(100);
/// How long shutdown waits for queued messages to reach peers.
const SHUTDOWN_FLUSH_TIMEOUT: Duration = Duration::from_millis(500);

/// What draining the command queue met.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Taken {
    /// Commands (or none), and the queue stays open.
    Some,
    /// A shutdown, or the queue closed: the loop ends.
    Shutdown,
}

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
    /// Its certificates, when TLS is on.
    tls: Option<Arc<amulet_tls::TlsContext>>,
}

impl Node {
    /// Starts a node: opens its logs and checkpoints, starts its host,
    /// binds its listener, connects to its peers and starts its event
    /// loop. With `load`, the node also runs a closed-loop load generator.
    /// Delivered values in merged order go to `deliveries` if given.
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
            logs,
            incarnation,
            mut opener,
        } = open_logs(&config)?;
        let partition_map = config.partition_map()?;
        let segments = crate::log_segment_store::LogSegmentStore::open(
            &config.data_dir,
            config.logs.segment_bytes,
        )?;
        let store = CheckpointStore::new(&config.data_dir).with_segments(segments);
        store.remove_temporaries();
        // A damaged checkpoint stops the node with its path rather than
        // silently replaying (the streams' early instances may be trimmed).
        let mut checkpoints = BTreeMap::new();
        let mut pins = Vec::new();
        if partition_map.is_some() {
            for partition in store.partitions() {
                if let Some((body, pin)) = store.read(partition)? {
                    checkpoints.insert(partition, body);
                    pins.extend(pin.map(|pin| (partition, pin)));
                }
            }
            store.loaded(pins);
        }
        let mut host_config = HostConfig::new(
            me,
            incarnation,
            Arc::new(|| PartitionState::new(MapLimits::default())),
        );
        host_config.checkpoint_every_micros = config.checkpoint_interval_micros();
        host_config.transfer_chunk_bytes =
            (config.frame_bytes_max() / 2).clamp(32 * 1024, 4 * 1024 * 1024);
        host_config.replica_bugs = crate::injected_bug::replica_bugs();
        host_config.bugs = crate::injected_bug::host_bugs();
        host_config.membership = config.first_view()?;
        let membership = config.membership_settings();
        host_config.monitor = membership.monitor();
        host_config.self_healing = membership.self_healing;
        host_config.fence_keys = config.smr.as_ref().is_none_or(|smr| smr.fence_keys);
        // The operator's switch, kept across restarts, over the file's.
        let balancer_enabled =
            crate::balancer_switch::read(&config.data_dir)?.unwrap_or(config.balancer.enabled);
        host_config.balancer = amulet_host::BalancerConfig {
            enabled: balancer_enabled,
            split_entries: config.balancer.split_entries,
            split_bytes: config.balancer.split_bytes,
            merge_entries: config.balancer.merge_entries,
            split_ops_per_second: config.balancer.split_ops_per_second,
            load_window_micros: config.balancer.load_window_ms.saturating_mul(1_000),
            moves: config.balancer.moves,
            weigh_bytes_from: config.balancer.weigh_bytes_from,
            weigh_ops_per_second_from: config.balancer.weigh_ops_per_second_from,
        };
        let host = Host::start(
            host_config,
            logs,
            partition_map,
            checkpoints,
            &mut opener,
            TimeMicros(0),
        )
        .map_err(|e| anyhow::anyhow!("{e} (checkpoints in {})", store.dir().display()))?;
        let durable = config
            .my_streams()
            .iter()
            .any(|s| s.storage != amulet_types::StorageMode::Memory);
        let (eventual_store, eventual_replicas) =
            crate::eventual_store::EventualStore::open(&config.data_dir, durable)?;
        let mut eventual_config = amulet_dotted::ServiceConfig::default();
        eventual_config.budget.bytes = (config.frame_bytes_max() / 4).clamp(64 << 10, 4 << 20);
        let eventual = eventual::Eventual::new(
            me,
            amulet_dotted::Service::new(me.0, incarnation, eventual_config, eventual_replicas),
            eventual_store,
            config.eventual.checkpoint_journal_bytes,
        );
        let tls = match config.tls_files()? {
            Some(files) => {
                let context = amulet_tls::TlsContext::load(files)
                    .map_err(|e| anyhow::anyhow!("node {me}: {e}"))?;
                tracing::info!(node = %me, cert = %context.files().cert.display(), "TLS on: peers and clients authenticate with certificates from the cluster CA");
                Some(Arc::new(context))
            }
            None => {
                tracing::warn!(node = %me, "TLS is off (no [tls] in the configuration): any process that reaches the peer or client port is trusted");
                None
            }
        };
        let spec = TransportSpec {
            tls: tls.clone(),
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
        let client_addresses: view_peers::ClientAddresses =
            Arc::new(std::sync::RwLock::new(config.client_addresses()?));
        let local_addr = transport.local_addr();
        #[allow(clippy::disallowed_methods)] // the runtime is the clock of the sans-IO core
        let epoch = Instant::now();
        let (commands, command_rx) = mpsc::unbounded_channel();
        let (written_tx, written) = mpsc::unbounded_channel();
        let (read_tx, read) = mpsc::unbounded_channel();
        let (log_changes, log_changes_rx) = watch::channel(0u64);
        let (access, access_rx) = watch::channel(host.access());
        let event_loop = EventLoop {
            me,
            data_dir: config.data_dir.clone(),
            incarnation,
            host,
            transport: Some(transport),
            inbound,
            commands: command_rx,
            deliveries,
            epoch,
            digest: DeliveryDigest::default(),
            load: load.map(|spec| LoadGenerator::new(me, spec)),
            store,
            opener,
            waiters: BTreeMap::new(),
            next_token: 0,
            written_tx,
            written,
            read_tx,
            read,
            drained: Vec::new(),
            adopting: std::collections::VecDeque::new(),
            log_changes,
            access,
            eventual,
            view_peers: view_peers::ViewPeers::new(client_addresses.clone()),
        };
        tracing::info!(node = %me, incarnation, %local_addr, "node started");
        let task = tokio::spawn(event_loop.run());
        let handle = NodeHandle::new(commands, log_changes_rx, access_rx);
        let api = match config.client_listen()? {
            Some(listen) => {
                let api =
                    ClientApi::start(listen, me, client_addresses, handle.clone(), tls.clone())
                        .await;
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
            tls,
        })
    }

    /// Its certificates, when TLS is on ([`amulet_tls::TlsContext::reload`]
    /// on SIGHUP).
    pub fn tls(&self) -> Option<Arc<amulet_tls::TlsContext>> {
        self.tls.clone()
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

/// A finished checkpoint write: partition, write, outcome, seconds, and
/// the log entries it moved into segment files.
type Written = (
    PartitionId,
    WriteId,
    WriteOutcome,
    f64,
    Vec<crate::log_segment_store::Spilled>,
);
/// A finished checkpoint read: partition, the file (if any).
type Read = (PartitionId, Result<Option<Bytes>, String>);

pub(crate) struct EventLoop {
    me: NodeId,
    /// The node's data directory (the balancer switch's file).
    data_dir: std::path::PathBuf,
    incarnation: u32,
    host: Host<PartitionState>,
    /// `None` once shut down.
    transport: Option<Transport>,
    inbound: mpsc::Receiver<(NodeId, Frame)>,
    commands: mpsc::UnboundedReceiver<Command>,
    deliveries: Option<mpsc::UnboundedSender<Merged>>,
    epoch: Instant,
    digest: DeliveryDigest,
    load: Option<LoadGenerator>,
    store: CheckpointStore,
    /// Opens the logs of streams created at run time.
    opener: LogOpener,
    /// Client requests waiting for their reply.
    waiters: BTreeMap<Token, oneshot::Sender<ClientReply<MapReply>>>,
    next_token: Token,
    written_tx: mpsc::UnboundedSender<Written>,
    written: mpsc::UnboundedReceiver<Written>,
    read_tx: mpsc::UnboundedSender<Read>,
    read: mpsc::UnboundedReceiver<Read>,
    /// The host's commands being carried out (kept to reuse its buffer).
    drained: Vec<amulet_host::Command<PartitionState>>,
    /// Log entries checkpoints moved into segment files, the live logs
    /// re-point at them a slice per turn (`adopt_some`): the next entry
    /// of each run to adopt.
    adopting: std::collections::VecDeque<(PartitionId, crate::log_segment_store::Spilled, usize)>,
    /// The host's count of log changes, published after each flush for
    /// the tails this node serves.
    log_changes: watch::Sender<u64>,
    /// The access configuration the node judges tokens and unordered
    /// reads by (`Host::access`), published when it changes.
    access: watch::Sender<Arc<amulet_smr::AccessControl>>,
    /// The eventual maps' replicas here and the requests they serve.
    eventual: eventual::Eventual,
    /// Peers and client addresses taken from the view.
    view_peers: view_peers::ViewPeers,
}

impl EventLoop {
    /// What `Status` and the metrics report.
    fn stats(&self, now: TimeMicros) -> NodeStats {
        NodeStats {
            delivered: self.digest.current(),
            streams: self.host.stream_status(),
            map_version: self.host.current_map().map_or(0, |m| m.version.0),
            replicas: self.host.replica_status(),
            logs: self.host.log_status(),
            log_segments: self.store.segments().map(|s| s.stats()).unwrap_or_default(),
            eventual: self.eventual.status(),
            membership: self.host.membership(),
            membership_counters: self.host.membership_counters(),
            rehoming: self.host.rehoming_partitions(),
            splits_proposed: self.host.counters().splits_proposed,
            load_splits_proposed: self.host.counters().load_splits_proposed,
            tail_splits_proposed: self.host.counters().tail_splits_proposed,
            merges_proposed: self.host.counters().merges_proposed,
            moves_proposed: self.host.counters().moves_proposed,
            weight_moves_proposed: self.host.counters().weight_moves_proposed,
            partitions: self
                .host
                .current_map()
                .map_or(0, |m| m.partitions.len() as u64),
            balancer_enabled: self.host.balancer_enabled(),
            balancer_decisions: self
                .host
                .balancer_decisions()
                .into_iter()
                .map(|d| (now.since(d.at), d))
                .collect(),
        }
    }

    fn now(&self) -> TimeMicros {
        TimeMicros(u64::try_from(self.epoch.elapsed().as_micros()).unwrap_or(u64::MAX))
    }

    async fn run(mut self) -> anyhow::Result<NodeReport> {
        let result = self.serve().await;
        // Whatever ended the loop, make what was written durable before
        // the process goes, and let queued messages out.
        let synced = self.host.sync_all_logs();
        if let Some(transport) = self.transport.take() {
            transport.shutdown(SHUTDOWN_FLUSH_TIMEOUT).await;
        }
        result?;
        synced?;
        // The eventual replicas' state at the stop, so the restart replays
        // nothing.
        self.eventual.checkpoint()?;
        // A clean stop leaves a checkpoint of every replica at the point
        // it stopped, so the restart replays nothing and never needs a
        // peer's checkpoint.
        let now = self.now();
        self.host.checkpoint_all_now(now);
        self.carry_out()?;
        self.host.close_logs()?;
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
            streams: self.host.stream_status(),
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
        let tick_micros = TICK_INTERVAL.as_micros() as u64;
        let idle_tick_micros = IDLE_TICK_INTERVAL.as_micros() as u64;
        let busy_hold_micros = BUSY_HOLD.as_micros() as u64;
        let mut last_tick = TimeMicros(0);
        let mut busy_until = TimeMicros(0);
        let mut unsettled = false;
        let timer = tokio::time::sleep(TICK_INTERVAL);
        tokio::pin!(timer);
        loop {
            // The timer only wakes the loop; ticks are due by elapsed
            // time, checked after every input, so a saturated inbound
            // queue cannot starve timeouts, heartbeats and skips. A host
            // with rounds left is flushed again at once.
            let interval = self.tick_interval(busy_until, tick_micros, idle_tick_micros);
            let due = self.epoch + Duration::from_micros(last_tick.0.saturating_add(interval));
            if timer.deadline() != tokio::time::Instant::from_std(due) {
                timer.as_mut().reset(tokio::time::Instant::from_std(due));
            }
            let mut work = false;
            tokio::select! {
                command = self.commands.recv() => {
                    // Every request already queued joins this flush, so
                    // concurrent clients share one proposal batch and one
                    // group commit instead of one each; so do the frames
                    // peers sent meanwhile (one fsync for both, where
                    // flushing after each kind took two).
                    work = true;
                    if self.take_commands(command) == Taken::Shutdown {
                        return self.flush().map(|_| ());
                    }
                    self.take_frames(None);
                }
                Some(frame) = self.inbound.recv() => {
                    work = self.take_frames(Some(frame));
                    if let Ok(command) = self.commands.try_recv() {
                        work = true;
                        if self.take_commands(Some(command)) == Taken::Shutdown {
                            return self.flush().map(|_| ());
                        }
                    }
                }
                Some((partition, write, outcome, seconds, spilled)) = self.written.recv() => {
                    tracing::debug!(partition = partition.0, seconds, "checkpoint write finished");
                    self.adopt_spilled(partition, spilled);
                    let now = self.now();
                    self.host.checkpoint_written(partition, write, outcome, now)?;
                    work = true;
                }
                Some((partition, file)) = self.read.recv() => {
                    let now = self.now();
                    self.host.checkpoint_read(partition, file, now);
                    work = true;
                }
                _ = &mut timer => {}
                _ = std::future::ready(()), if unsettled => {}
            }
            if !self.adopting.is_empty() {
                self.adopt_some(ADOPT_ENTRIES_PER_TURN);
            }
            let now = self.now();
            if work {
                busy_until = now.plus(busy_hold_micros);
            }
            let interval = self.tick_interval(busy_until, tick_micros, idle_tick_micros);
            if now.since(last_tick) >= interval {
                last_tick = now;
                self.host.tick(now)?;
                self.eventual.tick(now);
                // A request whose client gave up (its proposal may have
                // been lost) is never answered: drop its waiter.
                let gone: Vec<Token> = self
                    .waiters
                    .iter()
                    .filter(|(_, w)| w.is_closed())
                    .map(|(t, _)| *t)
                    .collect();
                for token in gone {
                    self.waiters.remove(&token);
                    self.host.cancel(token);
                }
                self.follow_view();
                // A node the view removed (it left, or failed and came
                // back) that has handed off every replica and votes in no
                // stream in use has nothing left to do: it stops cleanly.
                if let Some(view) = self.host.left_cluster() {
                    tracing::warn!(
                        node = %self.me,
                        view = view.0,
                        "this node is no longer a member (removed in view {}) and holds no replica or vote: stopping",
                        view.0
                    );
                    return self.flush().map(|_| ());
                }
            }
            unsettled = self.flush()? == Flushed::Unsettled;
            if let Some(load) = self.load.as_mut() {
                load.offer(now, self.host.multicast_node_mut())?;
                unsettled = self.flush()? == Flushed::Unsettled;
            }
        }
    }

    /// The tick interval now: fast while the node works (see
    /// [`TICK_INTERVAL`]), slow when idle.
    fn tick_interval(&self, busy_until: TimeMicros, fast: u64, idle: u64) -> u64 {
        let busy = self.now() < busy_until
            || !self.waiters.is_empty()
            || self.load.is_some()
            || self.host.multicast_node().pacing_active();
        if busy {
            fast
        } else {
            idle
        }
    }

    /// Handles `first` and the commands queued behind it (at most
    /// [`INPUTS_PER_FLUSH_MAX`]); `None` first is a closed queue.
    fn take_commands(&mut self, first: Option<Command>) -> Taken {
        let mut next = first;
        for _ in 0..INPUTS_PER_FLUSH_MAX {
            match next {
                None | Some(Command::Shutdown) => return Taken::Shutdown,
                Some(command) => self.on_command(command),
            }
            next = match self.commands.try_recv() {
                Ok(command) => Some(command),
                Err(_) => break,
            };
        }
        Taken::Some
    }

    /// Handles `first` (if any) and the frames queued behind it (at most
    /// [`INPUTS_PER_FLUSH_MAX`] in all); returns whether any was work (see
    /// [`BUSY_HOLD`]).
    fn take_frames(&mut self, first: Option<(NodeId, Frame)>) -> bool {
        let now = self.now();
        let mut handled = 0;
        let mut work = false;
        if let Some((from, frame)) = first {
            work |= self.on_frame(now, from, frame);
            handled = 1;
        }
        while handled < INPUTS_PER_FLUSH_MAX {
            match self.inbound.try_recv() {
                Ok((from, frame)) => work |= self.on_frame(now, from, frame),
                Err(_) => break,
            }
            handled += 1;
        }
        work
    }

    fn on_command(&mut self, command: Command) {
        let now = self.now();
        match command {
            Command::Multicast {
                stream,
                bytes,
                reply,
            } => {
                let _ = reply.send(self.host.multicast(now, stream, bytes));
            }
            Command::Stats(reply) => {
                let _ = reply.send(self.stats(now));
            }
            Command::SetBalancer { enabled, reply } => {
                // Durable before it is acknowledged (and before it takes
                // effect: a crash in between leaves both as they were).
                let written = crate::balancer_switch::write(&self.data_dir, enabled);
                if written.is_ok() {
                    self.host.set_balancer_enabled(enabled);
                }
                let _ = reply.send(written.map(|()| self.stats(now)));
            }
            Command::Submit {
                partition,
                request,
                reply,
            } => {
                let token = self.next_token;
                self.next_token += 1;
                self.waiters.insert(token, reply);
                self.host.submit(now, partition, request, token);
            }
            Command::PartitionMap(reply) => {
                let _ = reply.send(self.host.current_map().cloned());
            }
            Command::SnapshotPage {
                partition,
                snapshot,
                after,
                limit,
                reply,
            } => {
                let answer = self
                    .host
                    .snapshot_page(partition, snapshot, after.as_deref(), limit);
                let _ = reply.send(answer);
            }
            Command::TailRead {
                log,
                from,
                max_bytes,
                map_version,
                reply,
            } => {
                let answer = self.host.tail_read(&log, from, max_bytes, map_version);
                let _ = reply.send(answer);
            }
            Command::ReadAt {
                partition,
                map_version,
                read_version,
                command,
                reply,
            } => {
                let answer = self
                    .host
                    .read_at(partition, map_version, read_version, &command);
                let _ = reply.send(answer);
            }
            Command::Eventual(request) => {
                self.eventual.submit(now, self.host.current_map(), request);
            }
            Command::Shutdown => {}
        }
    }

    /// Feeds one frame; returns whether it was work: anything but the
    /// heartbeats and membership probes an idle cluster exchanges.
    fn on_frame(&mut self, now: TimeMicros, from: NodeId, frame: Frame) -> bool {
        match frame {
            Frame::Envelope(envelope) => {
                let work = !matches!(envelope.message, amulet_wire::Message::Heartbeat { .. });
                self.host.on_envelope(now, from, envelope);
                work
            }
            Frame::Replica(bytes) => match ReplicaMessage::decode(&bytes) {
                Ok(message) => {
                    let work = !message.is_probe() && !message.is_report();
                    self.host.on_replica_message(now, message);
                    work
                }
                Err(error) => {
                    tracing::warn!(peer = %from, %error, "undecodable replica message dropped");
                    false
                }
            },
            Frame::Eventual(bytes) => {
                self.eventual.on_frame(now, from, &bytes);
                true
            }
            Frame::Hello(_) => false,
        }
    }

    /// Flushes the host and carries out what it asked for.
    fn flush(&mut self) -> anyhow::Result<Flushed> {
        let now = self.now();
        let flushed = self.host.flush(now, &mut self.opener)?;
        // Published before the replies go out: a client answered for an
        // access change (or an ordered GetAccess read) then finds this
        // node's configuration at least as new.
        let access = self.host.access();
        self.access.send_if_modified(|seen| {
            let changed = !Arc::ptr_eq(seen, &access);
            *seen = access;
            changed
        });
        self.carry_out()?;
        if let Some(request) = self.eventual.after_flush(now, self.host.current_map()) {
            let (reply, answer) = oneshot::channel();
            let token = self.next_token;
            self.next_token += 1;
            self.waiters.insert(token, reply);
            self.host.submit(now, None, request, token);
            self.eventual.registering(now, answer);
        }
        self.eventual.carry_out(self.transport.as_mut())?;
        // Tails wake only when a log changed (the count walks the local
        // replicas, a handful; a watch with nothing new wakes nobody).
        let changes = self.host.log_changes();
        self.log_changes.send_if_modified(|seen| {
            let moved = *seen != changes;
            *seen = changes;
            moved
        });
        Ok(flushed)
    }
}
