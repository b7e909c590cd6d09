//! The client: partition-map cache, routing, sessions and retries.

use crate::batcher::Batcher;
use crate::session_pool::{SessionPool, SessionSlot};
use crate::{ClientConfig, DMap, Error};
use amulet_api::pb::{self, amulet_client::AmuletClient};
use amulet_api::{command_to_op, error_kind, map_from_pb, reply_from_response, ErrorKind};
use amulet_dmap::{MapCommand, MapName, MapReply, PartitionState};
use amulet_smr::{Layout, PartitionMap, StateMachine};
use amulet_types::{NodeId, PartitionId};
use rand::seq::IndexedRandom;
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;
use tokio::time::Instant;
use tonic::transport::{Channel, Endpoint};
use tonic::{Code, Status};

/// Largest reply accepted (a range read of many large values).
const REPLY_BYTES_MAX: usize = 256 * 1024 * 1024;
/// Pause between attempts, doubled up to `BACKOFF_MAX`.
const BACKOFF_MIN: Duration = Duration::from_millis(10);
const BACKOFF_MAX: Duration = Duration::from_millis(500);

/// The partition map and where the nodes are.
#[derive(Clone, Debug)]
struct Routing {
    /// Shared, so a request can keep the map it was routed by (cheaply).
    map: Arc<PartitionMap>,
    addresses: BTreeMap<NodeId, String>,
}

struct Inner {
    config: ClientConfig,
    seeds: Vec<String>,
    routing: RwLock<Routing>,
    channels: Mutex<HashMap<String, AmuletClient<Channel>>>,
    batchers: Mutex<HashMap<String, Batcher>>,
    sessions: SessionPool,
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

/// What one attempt came to.
enum Attempt<T> {
    Done(T),
    /// Try again (after refreshing the map, reopening the session, or at
    /// another replica); `maybe_applied` when the attempt may have taken
    /// effect.
    Retry {
        maybe_applied: bool,
        why: String,
    },
    Fail(Error),
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
        let seeds: Vec<String> = seeds.into_iter().map(Into::into).collect();
        if seeds.is_empty() {
            return Err(Error::InvalidArgument("no seed address given".into()));
        }
        let deadline = Instant::now() + config.operation_timeout;
        let mut last = String::new();
        let mut backoff = BACKOFF_MIN;
        loop {
            for seed in &seeds {
                match fetch_map(&config, seed).await {
                    Ok(routing) => {
                        let inner = Inner {
                            config,
                            seeds,
                            routing: RwLock::new(routing),
                            channels: Mutex::new(HashMap::new()),
                            batchers: Mutex::new(HashMap::new()),
                            sessions: SessionPool::default(),
                        };
                        return Ok(Client {
                            inner: Arc::new(inner),
                        });
                    }
                    Err(e) => last = format!("{seed}: {e}"),
                }
            }
            if Instant::now() + backoff >= deadline {
                return Err(Error::Unavailable(format!(
                    "no seed answered with a partition map ({last})"
                )));
            }
            tokio::time::sleep(backoff).await;
            backoff = (backoff * 2).min(BACKOFF_MAX);
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

    /// Asks the cluster to change its partitioning (split, merge, new
    /// stream), computed from the freshest map this client can get. Returns
    /// the map version the change was made from once the cluster ordered
    /// and accepted it; every replica applies it at a fence soon after
    /// (watch for a map version above the one returned: see
    /// [`Client::wait_for_map_version`]). Not retried on an unknown
    /// outcome: a resend would be refused as stale or as overlapping.
    pub async fn reconfigure(&self, change: &amulet_smr::Reconfiguration) -> Result<u64, Error> {
        for _ in 0..3 {
            self.refresh_map().await;
            let version = self.map_version();
            let (mut channel, _) = self.any_node()?;
            let request = amulet_api::reconfiguration_to_pb(version, change);
            let answer = tokio::time::timeout(
                self.inner.config.operation_timeout,
                channel.reconfigure(request),
            )
            .await
            .map_err(|_| Error::OutcomeUnknown("reconfigure: no answer in time".into()))?;
            match answer {
                Ok(_) => return Ok(version),
                Err(status)
                    if amulet_api::error_kind(&status) == Some(amulet_api::ErrorKind::StaleMap) =>
                {
                    continue
                }
                Err(status) => return Err(Error::from_status(&status)),
            }
        }
        Err(Error::Unavailable(
            "reconfigure: the map kept changing".into(),
        ))
    }

    /// Waits until every node in the map reports a map version of at
    /// least `version` (or `timeout` passes); `progress` hears each
    /// node's version on every poll. Returns whether all got there; if
    /// so, the cached partition map is at `version` or later too.
    pub async fn wait_for_map_version(
        &self,
        version: u64,
        timeout: Duration,
        mut progress: impl FnMut(&[(NodeId, Option<u64>)]),
    ) -> bool {
        let deadline = Instant::now() + timeout;
        loop {
            self.refresh_map().await;
            let mut seen = Vec::new();
            for (node, address) in self.node_addresses() {
                let at = self.status(&address).await.ok().map(|s| s.map_version);
                seen.push((node, at));
            }
            progress(&seen);
            if !seen.is_empty() && seen.iter().all(|(_, v)| v.is_some_and(|v| v >= version)) {
                // The map was fetched before the nodes were asked: fetch it
                // again, so that on return the cached map is at `version`
                // too (a repartitioning test once read the old stream of a
                // partition from the cache right after this said yes).
                self.refresh_map().await;
                if self.map_version() >= version {
                    return true;
                }
            }
            if Instant::now() >= deadline {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// Closes the idle sessions (best effort; they would expire anyway).
    pub async fn close(&self) {
        for slot in self.inner.sessions.drain() {
            if !slot.open {
                continue;
            }
            let Ok((mut channel, _)) = self.any_node() else {
                return;
            };
            let request = pb::CloseSessionRequest {
                session: slot.id,
                map_version: self.map_version(),
            };
            let _ = tokio::time::timeout(
                self.inner.config.attempt_timeout,
                channel.close_session(request),
            )
            .await;
        }
    }

    fn map_version(&self) -> u64 {
        self.inner
            .routing
            .read()
            .expect("routing lock")
            .map
            .version
            .0
    }

    /// A gRPC client for `address`, connected lazily and reused.
    fn channel(&self, address: &str) -> Result<AmuletClient<Channel>, Error> {
        let mut channels = self.inner.channels.lock().expect("channel lock");
        if let Some(client) = channels.get(address) {
            return Ok(client.clone());
        }
        let client = new_client(&self.inner.config, address)?;
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

    fn any_node(&self) -> Result<(AmuletClient<Channel>, String), Error> {
        let address = {
            let routing = self.inner.routing.read().expect("routing lock");
            let all: Vec<&String> = routing.addresses.values().collect();
            all.choose(&mut rand::rng())
                .map(|a| (*a).clone())
                .or_else(|| self.inner.seeds.first().cloned())
                .ok_or_else(|| Error::Unavailable("no node address known".into()))?
        };
        Ok((self.channel(&address)?, address))
    }

    /// The partition a command is sent for by `map` and a random replica
    /// of it.
    fn route_by(
        &self,
        map: &PartitionMap,
        command: &MapCommand,
        avoid: Option<&str>,
    ) -> Result<(PartitionId, String, u64), Error> {
        let placement = PartitionState::placement(command);
        // A map unknown to this (maybe stale) map goes to the lowest
        // partition, whose replica answers "stale" or "unknown map".
        let partition = map
            .partitions_for(&placement)
            .ok()
            .and_then(|p| p.first().copied())
            .or_else(|| map.partitions.keys().next().copied())
            .ok_or_else(|| Error::Protocol("the partition map has no partitions".into()))?;
        let routing = self.inner.routing.read().expect("routing lock");
        let address = self.replica_address(map, &routing.addresses, partition, avoid)?;
        Ok((partition, address, map.version.0))
    }

    /// A random replica's address for `partition`, other than `avoid`
    /// when there is another.
    fn replica_address(
        &self,
        map: &PartitionMap,
        addresses: &BTreeMap<NodeId, String>,
        partition: PartitionId,
        avoid: Option<&str>,
    ) -> Result<String, Error> {
        let mut replicas: Vec<&String> = map
            .partitions
            .get(&partition)
            .map(|p| p.replicas.iter().filter_map(|n| addresses.get(n)).collect())
            .unwrap_or_default();
        if replicas.len() > 1 {
            replicas.retain(|a| Some(a.as_str()) != avoid);
        }
        replicas
            .choose(&mut rand::rng())
            .map(|a| (*a).clone())
            .ok_or_else(|| Error::Protocol(format!("no address for a replica of {partition}")))
    }

    /// A random replica's address for `partition`.
    pub(crate) fn replica_of(&self, partition: PartitionId) -> Result<String, Error> {
        let routing = self.inner.routing.read().expect("routing lock");
        self.replica_address(&routing.map, &routing.addresses, partition, None)
    }

    /// The partitions a command touches, by the cached map.
    pub(crate) fn partitions_for(&self, command: &MapCommand) -> Vec<PartitionId> {
        let routing = self.inner.routing.read().expect("routing lock");
        routing
            .map
            .partitions_for(&PartitionState::placement(command))
            .unwrap_or_default()
    }

    /// Fetches the map from some node and keeps it if it is newer.
    pub(crate) async fn refresh_map(&self) {
        let Ok((_, address)) = self.any_node() else {
            return;
        };
        self.refresh_map_from(&address).await
    }

    /// Fetches the map from the node at `address`; keeps it if newer.
    async fn refresh_map_from(&self, address: &str) {
        if let Ok(routing) = fetch_map(&self.inner.config, address).await {
            let mut current = self.inner.routing.write().expect("routing lock");
            if routing.map.version >= current.map.version {
                *current = routing;
            }
        }
    }

    /// Opens (or renews) `slot`'s session.
    async fn open_session(&self, slot: &mut SessionSlot) -> Attempt<()> {
        let (mut channel, _) = match self.any_node() {
            Ok(c) => c,
            Err(e) => return Attempt::Fail(e),
        };
        let request = pb::OpenSessionRequest {
            session: slot.id,
            lease_micros: self.inner.config.session_lease.as_micros() as u64,
            map_version: self.map_version(),
        };
        let sent = Instant::now();
        match tokio::time::timeout(
            self.inner.config.attempt_timeout,
            channel.open_session(request),
        )
        .await
        {
            Ok(Ok(_)) => {
                slot.open = true;
                slot.renewed = sent.into_std();
                Attempt::Done(())
            }
            Ok(Err(status)) => self.on_status(status),
            Err(_) => Attempt::Retry {
                maybe_applied: false,
                why: "opening the session timed out".into(),
            },
        }
    }

    /// What to do after a failed attempt.
    fn on_status<T>(&self, status: Status) -> Attempt<T> {
        match error_kind(&status) {
            Some(
                ErrorKind::StaleMap
                | ErrorKind::NotAReplica
                | ErrorKind::SessionExpired
                | ErrorKind::Behind,
            ) => Attempt::Retry {
                maybe_applied: false,
                why: status.message().to_string(),
            },
            Some(ErrorKind::StaleSequence) => Attempt::Fail(Error::Protocol(
                "the session ran ahead of this client".into(),
            )),
            Some(ErrorKind::ReplyLost) => {
                Attempt::Fail(Error::OutcomeUnknown(status.message().to_string()))
            }
            None => match status.code() {
                Code::DeadlineExceeded | Code::Unavailable | Code::Cancelled | Code::Unknown => {
                    Attempt::Retry {
                        maybe_applied: true,
                        why: status.message().to_string(),
                    }
                }
                _ => Attempt::Fail(Error::from_status(&status)),
            },
        }
    }

    /// Runs `command` once, in a session, retrying as the protocol allows.
    pub(crate) async fn execute(&self, command: MapCommand) -> Result<MapReply, Error> {
        let mut slot = self.inner.sessions.take();
        let result = self.execute_in(&mut slot, &command).await;
        // The sequence is used up whatever happened: a later operation
        // must not be mistaken for a resend of this one.
        slot.next_sequence += 1;
        self.inner.sessions.give_back(slot);
        if matches!(
            command,
            MapCommand::CreateMap { .. } | MapCommand::DropMap { .. }
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

    async fn execute_in(
        &self,
        slot: &mut SessionSlot,
        command: &MapCommand,
    ) -> Result<(MapReply, String), Error> {
        let config = &self.inner.config;
        let deadline = Instant::now() + config.operation_timeout;
        let op = command_to_op(command);
        let mut backoff = BACKOFF_MIN;
        let mut maybe_applied = false;
        let mut last: String;
        // Retries of one sequence keep the map they were first routed by
        // until a replica says it is stale: under a newer map (another
        // task refreshed the cache) the command may belong to another
        // stream (a partition split or merged in between), whose session
        // record does not know an execution under the old one. The replica
        // answers a stale-map retry it executed with its reply.
        let mut pinned: Option<Arc<PartitionMap>> = None;
        loop {
            let opened = if !slot.open || slot.renewed.elapsed() > config.session_lease / 2 {
                self.open_session(slot).await
            } else {
                Attempt::Done(())
            };
            let attempt = match opened {
                Attempt::Done(()) => self.attempt(slot, command, &op, &mut pinned).await,
                Attempt::Retry { maybe_applied, why } => Attempt::Retry { maybe_applied, why },
                Attempt::Fail(error) => Attempt::Fail(error),
            };
            match attempt {
                Attempt::Done(reply) => return Ok(reply),
                Attempt::Fail(error) => return Err(error),
                Attempt::Retry {
                    maybe_applied: m,
                    why,
                } => {
                    maybe_applied |= m;
                    last = why;
                }
            }
            if Instant::now() + backoff >= deadline {
                let why = format!("gave up after {:?}: {last}", config.operation_timeout);
                return Err(if maybe_applied && !command.is_read_only() {
                    Error::OutcomeUnknown(why)
                } else {
                    Error::Unavailable(why)
                });
            }
            tokio::time::sleep(backoff).await;
            backoff = (backoff * 2).min(BACKOFF_MAX);
        }
    }

    async fn attempt(
        &self,
        slot: &mut SessionSlot,
        command: &MapCommand,
        op: &pb::map_request::Op,
        pinned: &mut Option<Arc<PartitionMap>>,
    ) -> Attempt<(MapReply, String)> {
        let map = pinned
            .get_or_insert_with(|| self.inner.routing.read().expect("routing lock").map.clone())
            .clone();
        let (partition, address, map_version) =
            match self.route_by(&map, command, slot.failed_at.as_deref()) {
                Ok(r) => r,
                Err(e) => return Attempt::Fail(e),
            };
        let request = pb::MapRequest {
            header: Some(pb::RequestHeader {
                map_version,
                partition: partition.0,
                session: slot.id,
                sequence: slot.next_sequence,
            }),
            op: Some(op.clone()),
        };
        let sent = if self.inner.config.batches_in_flight == 0 {
            self.channel(&address).map(Sender::Direct)
        } else {
            self.batcher(&address).map(Sender::Batched)
        };
        let sender = match sent {
            Ok(sender) => sender,
            Err(e) => return Attempt::Fail(e),
        };
        let call = async move {
            match sender {
                Sender::Direct(mut channel) => {
                    channel.execute(request).await.map(|r| r.into_inner())
                }
                Sender::Batched(batcher) => batcher.execute(request).await,
            }
        };
        let outcome = tokio::time::timeout(self.inner.config.attempt_timeout, call).await;
        slot.failed_at = match &outcome {
            Ok(Ok(_)) => None,
            _ => Some(address.clone()),
        };
        match outcome {
            Ok(Ok(response)) => match reply_from_response(response) {
                Ok(reply) => Attempt::Done((reply, address)),
                Err(status) => Attempt::Fail(Error::Protocol(status.message().to_string())),
            },
            Ok(Err(status)) => {
                match error_kind(&status) {
                    Some(ErrorKind::StaleMap | ErrorKind::NotAReplica) => {
                        self.refresh_map().await;
                        *pinned = None;
                    }
                    Some(ErrorKind::SessionExpired) => slot.open = false,
                    _ => {}
                }
                self.on_status(status)
            }
            Err(_) => Attempt::Retry {
                maybe_applied: true,
                why: format!("{address} did not answer in time"),
            },
        }
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
    Direct(AmuletClient<Channel>),
    /// In the node's next ExecuteBatch call.
    Batched(Batcher),
}

fn new_client(config: &ClientConfig, address: &str) -> Result<AmuletClient<Channel>, Error> {
    let endpoint = Endpoint::from_shared(format!("http://{address}"))
        .map_err(|e| Error::InvalidArgument(format!("bad address {address:?}: {e}")))?
        .connect_timeout(config.attempt_timeout)
        .tcp_nodelay(true);
    Ok(AmuletClient::new(endpoint.connect_lazy()).max_decoding_message_size(REPLY_BYTES_MAX))
}

async fn fetch_map(config: &ClientConfig, address: &str) -> Result<Routing, Error> {
    let mut client = new_client(config, address)?;
    let reply = tokio::time::timeout(
        config.attempt_timeout,
        client.get_partition_map(pb::GetPartitionMapRequest {}),
    )
    .await
    .map_err(|_| Error::Unavailable(format!("{address} did not answer in time")))?
    .map_err(|s| Error::from_status(&s))?;
    let (map, addresses) =
        map_from_pb(reply.into_inner()).map_err(|s| Error::Protocol(s.message().to_string()))?;
    Ok(Routing {
        map: Arc::new(map),
        addresses,
    })
}
