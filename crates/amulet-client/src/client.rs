//! The client: partition-map cache, routing, sessions and retries.

use crate::batcher::Batcher;
use crate::env::{ClientEnv, Clock};
use crate::node_channel::{fetch_map, new_client};
use crate::read_versions::ReadVersions;
use crate::rules::{routing, Backoff, Next, Outcome, Request, Resend, Session, Suspects, Timing};
use crate::session_pool::SessionPool;
use crate::{ClientConfig, DLog, DMap, Error};
use amulet_api::pb;
use amulet_api::{command_to_op, reply_from_response};
use amulet_dmap::{MapCommand, MapName, MapReply, PartitionState};
use amulet_smr::{Layout, PartitionMap, StateMachine};
use amulet_types::{NodeId, PartitionId, TimeMicros};
use bytes::Bytes;
use rand::RngCore;
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;
use tonic::transport::ClientTlsConfig;
use tonic::Status;

/// The partition map and where the nodes are.
#[derive(Clone, Debug)]
pub(crate) struct Routing {
    /// Shared, so a request can keep the map it was routed by (cheaply).
    pub(crate) map: Arc<PartitionMap>,
    pub(crate) addresses: BTreeMap<NodeId, String>,
}

impl Routing {
    /// The nodes with a known address, ascending.
    fn reachable(&self) -> Vec<NodeId> {
        self.addresses.keys().copied().collect()
    }
}

struct Inner {
    config: ClientConfig,
    /// `config`'s times, as the rules take them.
    timing: Timing,
    clock: Arc<dyn Clock>,
    rng: Mutex<Box<dyn RngCore + Send>>,
    seeds: Vec<String>,
    routing: RwLock<Routing>,
    /// `config.tls`'s files, read once; `None`: plain TCP.
    tls: Option<ClientTlsConfig>,
    channels: Mutex<HashMap<String, crate::node_channel::NodeClient>>,
    batchers: Mutex<HashMap<String, Batcher>>,
    sessions: SessionPool,
    read_versions: ReadVersions,
    /// This client's seed for its own replica of each partition
    /// (`routing::preferred`), when `config.one_replica_per_partition`.
    prefer: Option<u64>,
    /// Nodes that did not answer an attempt (or were catching up), and
    /// until when commands go elsewhere: a client that prefers one replica
    /// must not send every operation to a dead one first.
    suspects: Mutex<Suspects>,
    /// Partition map fetches a refusal sent this client to (see
    /// [`Client::map_refreshes`]).
    map_refreshes: std::sync::atomic::AtomicU64,
}

/// A connection to an Amulet cluster; cheap to clone, shared by tasks.
#[derive(Clone)]
pub struct Client {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("seeds", &self.inner.seeds)
            .finish()
    }
}

impl Client {
    /// Connects through any of `seeds` (client API addresses, host:port)
    /// with the default settings.
    pub async fn connect<I, S>(seeds: I) -> Result<Client, Error>
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Client::connect_with(seeds, ClientConfig::default()).await
    }

    /// Connects through any of `seeds` with `config`.
    pub async fn connect_with<I, S>(seeds: I, config: ClientConfig) -> Result<Client, Error>
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Client::connect_with_env(seeds, config, ClientEnv::real()).await
    }

    /// Connects through any of `seeds` with `config`, measuring time by
    /// `env`'s clock and drawing session ids and replicas from its
    /// generator.
    pub async fn connect_with_env<I, S>(
        seeds: I,
        config: ClientConfig,
        env: ClientEnv,
    ) -> Result<Client, Error>
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let seeds: Vec<String> = seeds.into_iter().map(Into::into).collect();
        if seeds.is_empty() {
            return Err(Error::InvalidArgument("no seed address given".into()));
        }
        let tls = config
            .tls
            .as_ref()
            .map(crate::node_channel::client_tls)
            .transpose()?;
        let timing = Timing::from(&config);
        let mut backoff = Backoff::new(env.clock.now(), timing.operation_timeout_micros, &timing);
        let mut last = String::new();
        loop {
            for seed in &seeds {
                match fetch_map(&config, tls.as_ref(), seed).await {
                    Ok(routing) => {
                        let mut rng = env.rng;
                        let prefer = config.one_replica_per_partition.then(|| rng.next_u64());
                        let inner = Inner {
                            prefer,
                            suspects: Mutex::new(Suspects::default()),
                            map_refreshes: Default::default(),
                            config,
                            timing,
                            clock: env.clock,
                            rng: Mutex::new(rng),
                            seeds,
                            routing: RwLock::new(routing),
                            tls,
                            channels: Mutex::new(HashMap::new()),
                            batchers: Mutex::new(HashMap::new()),
                            sessions: SessionPool::default(),
                            read_versions: ReadVersions::default(),
                        };
                        return Ok(Client {
                            inner: Arc::new(inner),
                        });
                    }
                    // Credentials do not get better by retrying.
                    Err(e @ (Error::Unauthenticated(_) | Error::PermissionDenied(_))) => {
                        return Err(e)
                    }
                    Err(e) => last = format!("{seed}: {e}"),
                }
            }
            let Some(until) = backoff.pause(env.clock.now()) else {
                let how = match &config.tls {
                    Some(files) => format!(
                        "over TLS, trusting {} and presenting {}; nodes must present a \
                         certificate from that CA naming amulet-node",
                        files.ca.display(),
                        files.cert.display()
                    ),
                    None => "over plain TCP; if the cluster requires TLS, give the client its \
                             files (ClientConfig::tls, or AMULET_TLS_DIR)"
                        .to_string(),
                };
                return Err(Error::Unavailable(format!(
                    "no seed answered with a partition map ({last}; {how})"
                )));
            };
            sleep_until(env.clock.as_ref(), until).await;
        }
    }

    /// The settings.
    pub fn config(&self) -> &ClientConfig {
        &self.inner.config
    }

    /// The cached partition map.
    pub fn partition_map(&self) -> PartitionMap {
        PartitionMap::clone(&self.inner.routing.read().expect("routing lock").map)
    }

    /// Client API addresses of the nodes, by node id.
    pub fn node_addresses(&self) -> BTreeMap<NodeId, String> {
        self.inner
            .routing
            .read()
            .expect("routing lock")
            .addresses
            .clone()
    }

    /// A handle on the map `name` (which need not exist yet).
    pub fn map(&self, name: &str) -> Result<DMap, Error> {
        let name = MapName::new(name).map_err(|e| Error::InvalidArgument(e.to_string()))?;
        Ok(DMap::new(self.clone(), name))
    }

    /// Creates a hash-partitioned map.
    pub async fn create_map(&self, name: &str) -> Result<DMap, Error> {
        self.create_map_with(name, Layout::Hash).await
    }

    /// Creates a map with `layout` (hash, or key ranges per partition).
    pub async fn create_map_with(&self, name: &str, layout: Layout) -> Result<DMap, Error> {
        let map = self.map(name)?;
        self.execute(MapCommand::CreateMap {
            map: map.name().clone(),
            layout,
        })
        .await?;
        Ok(map)
    }

    /// The map `name`, created (hash-partitioned) if it does not exist.
    pub async fn create_map_if_absent(&self, name: &str) -> Result<DMap, Error> {
        match self.create_map(name).await {
            Ok(map) => Ok(map),
            Err(Error::AlreadyExists(_)) => self.map(name),
            Err(e) => Err(e),
        }
    }

    /// Drops the map `name` and its entries.
    pub async fn drop_map(&self, name: &str) -> Result<(), Error> {
        let map = self.map(name)?;
        self.execute(MapCommand::DropMap {
            map: map.name().clone(),
        })
        .await
        .map(|_| ())
    }

    /// A handle on the log `name` (which need not exist yet).
    pub fn log(&self, name: &str) -> Result<DLog, Error> {
        let name = MapName::new(name).map_err(|e| Error::InvalidArgument(e.to_string()))?;
        Ok(DLog::new(self.clone(), name))
    }

    /// Creates an empty log (docs/logs.md). Maps and logs share one
    /// namespace: a name a map has is `AlreadyExists` too.
    pub async fn create_log(&self, name: &str) -> Result<DLog, Error> {
        let log = self.log(name)?;
        self.execute(MapCommand::CreateLog {
            log: log.name().clone(),
        })
        .await?;
        Ok(log)
    }

    /// The log `name`, created if it does not exist.
    pub async fn create_log_if_absent(&self, name: &str) -> Result<DLog, Error> {
        match self.create_log(name).await {
            Ok(log) => Ok(log),
            Err(Error::AlreadyExists(_)) => self.log(name),
            Err(e) => Err(e),
        }
    }

    /// Drops the log `name` and its entries.
    pub async fn drop_log(&self, name: &str) -> Result<(), Error> {
        let log = self.log(name)?;
        self.execute(MapCommand::DropLog {
            log: log.name().clone(),
        })
        .await
        .map(|_| ())
    }

    /// Appends each value to its log, all or none, in one step of the
    /// order (thesis §3.5.2's multi-append): every reader of these logs
    /// sees the entries of one multi-append in the same order relative to
    /// every other append. Returns the positions, in the order given; a
    /// log named twice gets consecutive positions.
    pub async fn multi_append<N, V>(
        &self,
        entries: impl IntoIterator<Item = (N, V)>,
    ) -> Result<Vec<u64>, Error>
    where
        N: AsRef<str>,
        V: Into<Bytes>,
    {
        let appends = entries
            .into_iter()
            .map(|(log, value)| {
                let log = MapName::new(log.as_ref())
                    .map_err(|e| Error::InvalidArgument(e.to_string()))?;
                Ok((log, value.into()))
            })
            .collect::<Result<Vec<_>, Error>>()?;
        let count = appends.len();
        match self.execute(MapCommand::MultiAppend { appends }).await? {
            MapReply::Positions(positions) if positions.len() == count => positions
                .into_iter()
                .collect::<Option<Vec<u64>>>()
                .ok_or_else(|| Error::Protocol("a multi-append's position is missing".into())),
            other => Err(Error::Protocol(format!("unexpected reply {other:?}"))),
        }
    }

    /// The status of the node at `address`.
    pub async fn status(&self, address: &str) -> Result<pb::StatusResponse, Error> {
        let mut channel = self.channel(address)?;
        let reply = tokio::time::timeout(
            self.inner.config.attempt_timeout,
            channel.status(pb::StatusRequest {}),
        )
        .await
        .map_err(|_| Error::Unavailable(format!("{address} did not answer in time")))?
        .map_err(|s| Error::from_status(&s))?;
        Ok(reply.into_inner())
    }

    /// Pauses (`false`) or resumes the balancer of the node at `address`
    /// (docs/dynatree.md, "Pause and decisions"); its state after the
    /// change. Needs the cluster admin role. Each node proposes for the
    /// partitions it leads: see [`Client::set_balancer_everywhere`].
    pub async fn set_balancer(
        &self,
        address: &str,
        enabled: bool,
    ) -> Result<pb::BalancerStatus, Error> {
        let mut channel = self.channel(address)?;
        let reply = tokio::time::timeout(
            self.inner.config.attempt_timeout,
            channel.set_balancer(pb::SetBalancerRequest { enabled }),
        )
        .await
        .map_err(|_| Error::Unavailable(format!("{address} did not answer in time")))?
        .map_err(|s| Error::from_status(&s))?;
        Ok(reply.into_inner())
    }

    /// Pauses or resumes the balancer of every node the map names; per
    /// node, its state or why it failed (a node down keeps its switch
    /// and must be set again once back).
    pub async fn set_balancer_everywhere(
        &self,
        enabled: bool,
    ) -> Vec<(NodeId, Result<pb::BalancerStatus, Error>)> {
        let mut answers = Vec::new();
        for (node, address) in self.node_addresses() {
            answers.push((node, self.set_balancer(&address, enabled).await));
        }
        answers
    }

    /// Closes the idle sessions (best effort; they would expire anyway).
    pub async fn close(&self) {
        for session in self.inner.sessions.drain() {
            if !session.is_open() {
                continue;
            }
            let Ok((mut channel, _)) = self.any_node() else {
                return;
            };
            let request = pb::CloseSessionRequest {
                session: session.id().0,
                map_version: self.map_version(),
            };
            let _ = tokio::time::timeout(
                self.inner.config.attempt_timeout,
                channel.close_session(request),
            )
            .await;
        }
    }

    /// Now, by the client's clock.
    pub(crate) fn now(&self) -> TimeMicros {
        self.inner.clock.now()
    }

    /// Pauses between the attempts of something starting now that may
    /// take the operation timeout.
    pub(crate) fn backoff(&self) -> Backoff {
        let timing = &self.inner.timing;
        Backoff::new(self.now(), timing.operation_timeout_micros, timing)
    }

    /// Sleeps until `until` by the client's clock.
    pub(crate) async fn sleep_until(&self, until: TimeMicros) {
        sleep_until(self.inner.clock.as_ref(), until).await
    }

    /// Runs `f` with the client's random generator.
    pub(crate) fn with_rng<T>(&self, f: impl FnOnce(&mut dyn RngCore) -> T) -> T {
        let mut rng = self.inner.rng.lock().expect("rng lock");
        f(rng.as_mut())
    }

    /// How many times this client fetched the partition map because a
    /// node said its copy was stale or named the wrong replicas. With
    /// fence keys (docs/dynatree.md) a split or move elsewhere does not
    /// send single-key requests back for one.
    pub fn map_refreshes(&self) -> u64 {
        self.inner
            .map_refreshes
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    pub(crate) fn map_version(&self) -> u64 {
        self.inner
            .routing
            .read()
            .expect("routing lock")
            .map
            .version
            .0
    }

    /// A gRPC client for `address`, connected lazily and reused.
    pub(crate) fn channel(&self, address: &str) -> Result<crate::node_channel::NodeClient, Error> {
        let mut channels = self.inner.channels.lock().expect("channel lock");
        if let Some(client) = channels.get(address) {
            return Ok(client.clone());
        }
        let client = new_client(&self.inner.config, self.inner.tls.as_ref(), address)?;
        channels.insert(address.to_string(), client.clone());
        Ok(client)
    }

    /// The batcher of `address`, started on first use.
    fn batcher(&self, address: &str) -> Result<Batcher, Error> {
        let channel = self.channel(address)?;
        let mut batchers = self.inner.batchers.lock().expect("batcher lock");
        Ok(batchers
            .entry(address.to_string())
            .or_insert_with(|| {
                Batcher::start(
                    channel,
                    self.inner.config.batches_in_flight,
                    self.inner.config.attempt_timeout,
                )
            })
            .clone())
    }

    pub(crate) fn any_node(&self) -> Result<(crate::node_channel::NodeClient, String), Error> {
        let address = {
            let routing = self.inner.routing.read().expect("routing lock");
            let node = self.with_rng(|rng| routing::any_node(&routing.reachable(), rng));
            node.and_then(|n| routing.addresses.get(&n).cloned())
                .or_else(|| self.inner.seeds.first().cloned())
                .ok_or_else(|| Error::Unavailable("no node address known".into()))?
        };
        Ok((self.channel(&address)?, address))
    }

    /// A node that orders and executes the global stream by the cached
    /// map (a random replica of its first partition), else any node: a
    /// member that replicates nothing (a spare, or one whose partitions
    /// moved away) answers a reconfiguration "not a replica".
    pub(crate) fn global_node(&self) -> Result<(crate::node_channel::NodeClient, String), Error> {
        let first = {
            let routing = self.inner.routing.read().expect("routing lock");
            routing.map.partitions.keys().next().copied()
        };
        match first.and_then(|p| self.replica_of(p).ok()) {
            Some(address) => Ok((self.channel(&address)?, address)),
            None => self.any_node(),
        }
    }

    /// A random replica's address for `partition`.
    pub(crate) fn replica_of(&self, partition: PartitionId) -> Result<String, Error> {
        let routing = self.inner.routing.read().expect("routing lock");
        let reachable = routing.reachable();
        self.with_rng(|rng| {
            routing::replica(&routing.map, partition, None, &reachable, &[], None, rng)
        })
        .and_then(|node| routing.addresses.get(&node).cloned())
        .ok_or_else(|| Error::Protocol(format!("no address for a replica of {partition}")))
    }

    /// The partitions a command touches, by the cached map.
    pub(crate) fn partitions_for(&self, command: &MapCommand) -> Vec<PartitionId> {
        let routing = self.inner.routing.read().expect("routing lock");
        routing
            .map
            .partitions_for(&PartitionState::placement(command))
            .unwrap_or_default()
    }

    /// Fetches the map from some node and keeps it if it is newer. The
    /// client does so by itself when a replica calls its map stale; a
    /// caller may to see a change sooner (or, as DynaTree's experiment
    /// without a client cache, before every operation).
    pub async fn refresh_map(&self) {
        let Ok((_, address)) = self.any_node() else {
            return;
        };
        self.refresh_map_from(&address).await
    }

    /// Fetches the map from the node at `address`; keeps it if newer.
    async fn refresh_map_from(&self, address: &str) {
        if let Ok(routing) = fetch_map(&self.inner.config, self.inner.tls.as_ref(), address).await {
            let mut current = self.inner.routing.write().expect("routing lock");
            if routing.map.version >= current.map.version {
                *current = routing;
            }
        }
    }

    /// Opens (or renews) `session` at `address`.
    async fn open_session(&self, session: &Session, address: &str) -> Outcome<MapReply> {
        let mut channel = match self.channel(address) {
            Ok(c) => c,
            Err(e) => return Outcome::Refused(e),
        };
        let request = pb::OpenSessionRequest {
            session: session.id().0,
            lease_micros: self.inner.timing.session_lease_micros,
            map_version: self.map_version(),
        };
        match tokio::time::timeout(
            self.inner.config.attempt_timeout,
            channel.open_session(request),
        )
        .await
        {
            Ok(Ok(_)) => Outcome::SessionOk,
            Ok(Err(status)) => Outcome::from_status(&status),
            Err(_) => Outcome::NoAnswer("opening the session timed out".into()),
        }
    }

    /// Runs `command` once, in a session, retrying as the protocol allows.
    pub(crate) async fn execute(&self, command: MapCommand) -> Result<MapReply, Error> {
        let mut session = self.with_rng(|rng| self.inner.sessions.take(rng));
        let result = self.execute_in(&mut session, &command).await;
        session.end_operation();
        self.inner.sessions.give_back(session);
        if matches!(
            command,
            MapCommand::CreateMap { .. }
                | MapCommand::DropMap { .. }
                | MapCommand::CreateLog { .. }
                | MapCommand::DropLog { .. }
        ) {
            // The map version moved. The node that answered has executed
            // the change: its map is at least as new, so this client's
            // next requests carry the new version, and replicas not there
            // yet answer "behind" rather than "no such map".
            match &result {
                Ok((_, address)) => self.refresh_map_from(address).await,
                Err(_) => self.refresh_map().await,
            }
        }
        result.map(|(reply, _)| reply)
    }

    /// Drives the rules of [`Resend`] for one operation: returns the
    /// reply and the address of the node that gave it.
    async fn execute_in(
        &self,
        session: &mut Session,
        command: &MapCommand,
    ) -> Result<(MapReply, String), Error> {
        let op = command_to_op(command)
            .ok_or_else(|| Error::InvalidArgument(format!("{command:?} is sent by nodes only")))?;
        let placement = PartitionState::placement(command);
        let mut resend = Resend::new(self.now(), &self.inner.timing, command.is_read_only());
        if let Some(seed) = self.inner.prefer {
            resend = resend.preferring(seed);
        }
        loop {
            // The suspects of this attempt (see `Resend::next_request`).
            let suspects = self
                .inner
                .suspects
                .lock()
                .expect("suspects lock")
                .at(self.now());
            let (request, address) = {
                let routing = self.inner.routing.read().expect("routing lock");
                let reachable = routing.reachable();
                let request = self.with_rng(|rng| {
                    resend.next_request(
                        session,
                        self.now(),
                        &routing.map,
                        &placement,
                        &reachable,
                        &suspects,
                        rng,
                    )
                })?;
                let address = routing.addresses[&request.to()].clone();
                (request, address)
            };
            let outcome = match &request {
                Request::OpenSession { .. } => self.open_session(session, &address).await,
                Request::Command {
                    partition,
                    map_version,
                    sequence,
                    ..
                } => {
                    let request = pb::MapRequest {
                        header: Some(pb::RequestHeader {
                            map_version: map_version.0,
                            partition: partition.0,
                            session: session.id().0,
                            sequence: *sequence,
                        }),
                        op: Some(op.clone()),
                    };
                    self.attempt(request, &address).await
                }
            };
            {
                // Two attempt timeouts: long enough that a dead node costs
                // one timeout per client, short enough to come back soon.
                // Session openings count too: a client opening its session
                // while a node is dead for good drew it again and again
                // (simulator seed 109 of `--dmap`, a node killed for good).
                let span = self.inner.timing.attempt_timeout_micros.saturating_mul(2);
                let mut suspects = self.inner.suspects.lock().expect("suspects lock");
                suspects.judge(request.to(), &outcome, self.now(), span);
            }
            match resend.on_outcome(outcome, session, self.now()) {
                Next::Done(reply) => return Ok((reply, address)),
                Next::Continue => {}
                Next::Fail(error) => return Err(error),
                Next::Retry { refresh_map } => {
                    if refresh_map {
                        self.inner
                            .map_refreshes
                            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        self.refresh_map().await;
                    }
                    let until = resend.pause(self.now())?;
                    sleep_until(self.inner.clock.as_ref(), until).await;
                }
            }
        }
    }

    /// Sends one attempt of a command to `address`.
    async fn attempt(&self, request: pb::MapRequest, address: &str) -> Outcome<MapReply> {
        let sent = if self.inner.config.batches_in_flight == 0 {
            self.channel(address).map(Sender::Direct)
        } else {
            self.batcher(address).map(Sender::Batched)
        };
        let sender = match sent {
            Ok(sender) => sender,
            Err(e) => return Outcome::Refused(e),
        };
        let call = async move {
            match sender {
                Sender::Direct(mut channel) => {
                    channel.execute(request).await.map(|r| r.into_inner())
                }
                Sender::Batched(batcher) => batcher.execute(request).await,
            }
        };
        match tokio::time::timeout(self.inner.config.attempt_timeout, call).await {
            Ok(Ok(response)) => match reply_from_response(response) {
                Ok(reply) => Outcome::Done(reply),
                Err(status) => Outcome::Refused(Error::Protocol(status.message().to_string())),
            },
            Ok(Err(status)) => Outcome::from_status(&status),
            Err(_) => Outcome::NoAnswer(format!("{address} did not answer in time")),
        }
    }

    /// One attempt of a transaction's read `command` at `read_version`,
    /// at a random replica of `partition` (routed by the cached map).
    pub(crate) async fn read_at_attempt(
        &self,
        partition: PartitionId,
        read_version: u64,
        command: &MapCommand,
    ) -> Outcome<(MapReply, bool)> {
        let address = match self.replica_of(partition) {
            Ok(address) => address,
            Err(e) => return Outcome::Refused(e),
        };
        let mut channel = match self.channel(&address) {
            Ok(channel) => channel,
            Err(e) => return Outcome::Refused(e),
        };
        let request = pb::ReadAtRequest {
            read_version,
            request: Some(pb::MapRequest {
                header: Some(pb::RequestHeader {
                    map_version: self.map_version(),
                    partition: partition.0,
                    session: 0,
                    sequence: 0,
                }),
                op: command_to_op(command),
            }),
        };
        match tokio::time::timeout(self.inner.config.attempt_timeout, channel.read_at(request))
            .await
        {
            Ok(Ok(response)) => {
                let response = response.into_inner();
                let reply = response
                    .response
                    .ok_or_else(|| Status::internal("ReadAt answered no response"))
                    .and_then(reply_from_response);
                match reply {
                    Ok(reply) => Outcome::Done((reply, response.written_since)),
                    Err(status) => Outcome::Refused(Error::Protocol(status.message().to_string())),
                }
            }
            Ok(Err(status)) => Outcome::from_status(&status),
            Err(_) => Outcome::NoAnswer(format!("{address} did not answer in time")),
        }
    }

    /// The read versions this client's transactions share.
    pub(crate) fn read_versions(&self) -> &ReadVersions {
        &self.inner.read_versions
    }

    /// Opens the stream of one partition's pages of a snapshot, after
    /// `after`, at a random replica.
    pub(crate) async fn read_snapshot(
        &self,
        partition: PartitionId,
        snapshot: u64,
        after: Option<bytes::Bytes>,
    ) -> Result<tonic::Streaming<pb::SnapshotPage>, Status> {
        let address = self
            .replica_of(partition)
            .map_err(|e| Status::unavailable(e.to_string()))?;
        let mut channel = self
            .channel(&address)
            .map_err(|e| Status::unavailable(e.to_string()))?;
        let request = pb::ReadSnapshotRequest {
            partition: partition.0,
            snapshot,
            after,
            page_size: self.inner.config.page_entries,
        };
        tokio::time::timeout(
            self.inner.config.operation_timeout,
            channel.read_snapshot(request),
        )
        .await
        .map_err(|_| Status::deadline_exceeded(format!("{address} did not answer in time")))?
        .map(|r| r.into_inner())
    }
}

/// How an attempt reaches its node.
enum Sender {
    /// One Execute call.
    Direct(crate::node_channel::NodeClient),
    /// In the node's next ExecuteBatch call.
    Batched(Batcher),
}

/// Sleeps (on tokio's timer) until `until` by `clock`.
async fn sleep_until(clock: &dyn Clock, until: TimeMicros) {
    let wait_micros = until.since(clock.now());
    if wait_micros > 0 {
        tokio::time::sleep(Duration::from_micros(wait_micros)).await;
    }
}
