//! The gRPC client API (`proto/amulet/v1/amulet.proto`) served by a node:
//! each request is checked and handed to the local replica it names; the
//! replica that received it is the one that answers (DMap §III-B).

use crate::api_connection::principal_of;
use crate::metrics::{op_name, Metrics};
use crate::node_handle::{HandleError, NodeHandle, ReadAtAnswer};
use crate::read_streams::{read_page, Tail};
use amulet_api::pb::{self, amulet_server::AmuletServer};
use amulet_api::{
    client_reply_to_response, command_from_op, map_to_pb, outcome_from_result, BATCH_REQUESTS_MAX,
};
use amulet_dmap::{MapName, MapReply};
use amulet_smr::{Body, ClientReply, ClientRequest, Need, Principal, StateMachine};
use amulet_tls::TlsContext;
use amulet_types::{MapVersion, NodeId, PartitionId, SessionId};
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;
use tokio_stream::wrappers::ReceiverStream;
use tokio_stream::Stream;
use tonic::service::interceptor::InterceptedService;
use tonic::{Request, Response, Status};

/// How long a request may wait to be ordered and executed before the
/// client is told DEADLINE_EXCEEDED (it resends with the same sequence).
const EXECUTE_TIMEOUT: Duration = Duration::from_secs(5);
/// Largest request accepted: above the largest valid putAll (3 MiB) so
/// that oversized values and batches get the map's own clear error.
const REQUEST_BYTES_MAX: usize = 16 * 1024 * 1024;
/// Snapshot page size when the client asks for the default.
const PAGE_ENTRIES_DEFAULT: u32 = 1_000;
/// How long a page request waits for a lagging replica to execute the
/// snapshot's opening.
pub(crate) const PAGE_BEHIND_WAIT: Duration = Duration::from_secs(10);
pub(crate) const PAGE_BEHIND_POLL: Duration = Duration::from_millis(2);

/// The running server.
pub(crate) struct ClientApi {
    local_addr: SocketAddr,
    shutdown: oneshot::Sender<()>,
    task: JoinHandle<()>,
    accept_task: JoinHandle<()>,
}

impl ClientApi {
    /// Binds `listen` and serves the API for the node behind `handle`.
    pub(crate) async fn start(
        listen: SocketAddr,
        me: NodeId,
        addresses: crate::runtime::ClientAddresses,
        handle: NodeHandle,
        tls: Option<Arc<TlsContext>>,
    ) -> anyhow::Result<ClientApi> {
        let listener = tokio::net::TcpListener::bind(listen)
            .await
            .map_err(|e| anyhow::anyhow!("cannot bind the client API on {listen}: {e}"))?;
        let local_addr = listener.local_addr()?;
        let (incoming, accept_task) = crate::api_connection::accept(listener, tls);
        let metrics = Arc::new(Metrics::new());
        let service = Service {
            me,
            addresses,
            handle: handle.clone(),
            metrics: metrics.clone(),
            in_flight: Arc::default(),
        };
        // `GET /metrics` (Prometheus text format) on the same port, over
        // HTTP/1.1 as scrapers speak it.
        let routes = tonic::service::Routes::new(InterceptedService::new(
            AmuletServer::new(service).max_decoding_message_size(REQUEST_BYTES_MAX),
            crate::api_connection::Authenticate {
                handle: handle.clone(),
                metrics: metrics.clone(),
            },
        ))
        .into_axum_router()
        .route(
            "/metrics",
            axum::routing::get(move || {
                let handle = handle.clone();
                let metrics = metrics.clone();
                async move {
                    let stats = handle.stats().await;
                    metrics.set_access(&handle.access());
                    (
                        [(
                            "content-type",
                            "application/openmetrics-text; version=1.0.0; charset=utf-8",
                        )],
                        metrics.render(stats.as_ref()),
                    )
                }
            }),
        );
        let (shutdown, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(async move {
            let server = tonic::transport::Server::builder()
                .accept_http1(true)
                .add_routes(tonic::service::Routes::from(routes))
                .serve_with_incoming_shutdown(incoming, async {
                    let _ = stopped.await;
                });
            if let Err(error) = server.await {
                tracing::error!(%error, "client API stopped");
            }
        });
        tracing::info!(node = %me, %local_addr, "client API listening");
        Ok(ClientApi {
            local_addr,
            shutdown,
            task,
            accept_task,
        })
    }

    /// The bound address.
    pub(crate) fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// Stops accepting, lets running requests finish, and returns.
    pub(crate) async fn stop(self) {
        self.accept_task.abort();
        let _ = self.shutdown.send(());
        // Streams in flight end with the node; do not wait on them long.
        let _ = tokio::time::timeout(Duration::from_secs(2), self.task).await;
    }
}

pub(crate) struct Service {
    me: NodeId,
    /// Every node's client address (the view's joiners added as they come).
    addresses: crate::runtime::ClientAddresses,
    pub(crate) handle: NodeHandle,
    metrics: Arc<Metrics>,
    /// Requests in flight per user (`client_limits`).
    in_flight: Arc<crate::client_limits::Counts>,
}

pub(crate) fn stopped(error: HandleError) -> Status {
    match error {
        HandleError::Dropped => Status::unavailable(
            "the replica was replaced while the request waited (it may have taken effect): resend with the same session and sequence",
        ),
        _ => Status::unavailable("the node is stopping"),
    }
}

impl Service {
    /// A transaction's read at its read version (`ReadAt`): checked,
    /// then served by the local replica from the version's snapshot;
    /// a replica that has not executed the begin yet is waited for a
    /// little, as for snapshot pages.
    async fn read_at_version(
        &self,
        principal: Option<Principal>,
        r: pb::ReadAtRequest,
    ) -> Result<pb::ReadAtResponse, Status> {
        let request = r
            .request
            .ok_or_else(|| Status::invalid_argument("ReadAt names no request"))?;
        let header = request
            .header
            .ok_or_else(|| Status::invalid_argument("the request has no header"))?;
        let command = command_from_op(request.op)?;
        self.allowed_here(principal.as_ref(), |need| {
            amulet_dmap::PartitionState::needs(&command, need)
        })?;
        let partition = PartitionId(header.partition);
        let map_version = MapVersion(header.map_version);
        let deadline = tokio::time::Instant::now() + PAGE_BEHIND_WAIT;
        loop {
            let answer = self
                .handle
                .read_at(partition, map_version, r.read_version, command.clone())
                .await
                .map_err(stopped)?;
            let refused = |reply| match client_reply_to_response(reply) {
                Err(status) => status,
                Ok(_) => Status::internal("a refusal answered as a success"),
            };
            return match answer {
                ReadAtAnswer::Read {
                    reply,
                    written_since,
                } => {
                    let response = client_reply_to_response(ClientReply::Done(reply))?;
                    Ok(pb::ReadAtResponse {
                        response,
                        written_since,
                    })
                }
                ReadAtAnswer::Behind if tokio::time::Instant::now() < deadline => {
                    tokio::time::sleep(PAGE_BEHIND_POLL).await;
                    continue;
                }
                ReadAtAnswer::Behind | ReadAtAnswer::CatchingUp => {
                    Err(refused(ClientReply::Behind))
                }
                ReadAtAnswer::StaleMap(map) => Err(refused(ClientReply::StaleMap(map))),
                ReadAtAnswer::NotAReplica(Some(map)) => Err(refused(ClientReply::NotAReplica(map))),
                ReadAtAnswer::NotAReplica(None) => {
                    Err(Status::failed_precondition("this cluster serves no DMap"))
                }
                ReadAtAnswer::Failed(error) => {
                    Err(refused(ClientReply::Done(MapReply::Failed(error))))
                }
            };
        }
    }

    pub(crate) async fn submit(
        &self,
        partition: Option<PartitionId>,
        request: ClientRequest<amulet_dmap::MapCommand>,
    ) -> Result<Option<pb::MapResponse>, Status> {
        client_reply_to_response(self.submit_reply(partition, request).await?)
    }

    /// The replica's reply to `request` as it came ([`Service::submit`]
    /// turns it into a map response; a join's id is not one).
    pub(crate) async fn submit_reply(
        &self,
        partition: Option<PartitionId>,
        request: ClientRequest<amulet_dmap::MapCommand>,
    ) -> Result<amulet_smr::ClientReply<amulet_dmap::MapReply>, Status> {
        tokio::time::timeout(EXECUTE_TIMEOUT, self.handle.submit(partition, request))
            .await
            .map_err(|_| {
                Status::deadline_exceeded(
                    "not executed in time; resend with the same session and sequence",
                )
            })?
            .map_err(stopped)
    }

    /// Counts an answered request and its latency.
    pub(crate) fn record<T>(
        &self,
        op: &'static str,
        started: tokio::time::Instant,
        result: &Result<T, Status>,
    ) {
        let outcome = result.as_ref().map(|_| ()).map_err(|s| s.code());
        self.metrics.request(op, &outcome, started.elapsed());
    }

    async fn session_request(
        &self,
        principal: Option<Principal>,
        session: u64,
        map_version: u64,
        body: Body<amulet_dmap::MapCommand>,
    ) -> Result<Response<pb::SessionResponse>, Status> {
        let op = match body {
            Body::OpenSession { .. } => "open_session",
            Body::KeepAlive { .. } => "keep_alive",
            Body::CloseSession => "close_session",
            Body::App(_) => "app",
            Body::Reconfigure(_) => "reconfigure",
            Body::Access(_) => "change_access",
            Body::Membership(_) => "change_membership",
            Body::HandedOff { .. } => "handed_off",
        };
        let started = tokio::time::Instant::now();
        let result = self
            .session_request_inner(principal, session, map_version, body)
            .await;
        self.record(op, started, &result);
        result
    }

    async fn session_request_inner(
        &self,
        principal: Option<Principal>,
        session: u64,
        map_version: u64,
        body: Body<amulet_dmap::MapCommand>,
    ) -> Result<Response<pb::SessionResponse>, Status> {
        if session == 0 {
            return Err(Status::invalid_argument("session id 0 is reserved"));
        }
        let request = ClientRequest {
            map_version: MapVersion(map_version),
            session: Some((SessionId(session), 0)),
            body,
            principal,
        };
        self.submit(None, request).await?;
        Ok(Response::new(pb::SessionResponse {}))
    }

    /// One map request, counted in the metrics by operation and outcome
    /// (Execute and each request of ExecuteBatch alike).
    async fn execute_recorded(
        &self,
        principal: Option<Principal>,
        r: pb::MapRequest,
    ) -> Result<pb::MapResponse, Status> {
        let started = tokio::time::Instant::now();
        let op = op_name(&r.op);
        // Held until answered: one user's requests in flight are bounded.
        let _slot = match &principal {
            Some(p) => match self
                .in_flight
                .acquire(&p.user, crate::client_limits::IN_FLIGHT_PER_USER_MAX)
            {
                Some(slot) => Some(slot),
                None => {
                    self.metrics.limited("in-flight");
                    let status = Status::resource_exhausted(format!(
                        "user {:?} has {} requests in flight at this node (the most one user \
                         may): wait for answers before sending more",
                        p.user,
                        crate::client_limits::IN_FLIGHT_PER_USER_MAX
                    ));
                    self.record(op, started, &Err::<(), _>(status.clone()));
                    return Err(status);
                }
            },
            None => None,
        };
        let result = self
            .execute_inner(principal, r)
            .await
            .map(Response::into_inner);
        self.record(op, started, &result);
        result
    }

    async fn execute_inner(
        &self,
        principal: Option<Principal>,
        r: pb::MapRequest,
    ) -> Result<Response<pb::MapResponse>, Status> {
        let header = r
            .header
            .ok_or_else(|| Status::invalid_argument("the request has no header"))?;
        let command = command_from_op(r.op)?;
        let session = match (header.session, header.sequence) {
            (0, _) => None,
            (_, 0) => {
                return Err(Status::invalid_argument(
                    "a request in a session needs a sequence number of 1 or more",
                ))
            }
            (session, sequence) => Some((SessionId(session), sequence)),
        };
        let request = ClientRequest {
            map_version: MapVersion(header.map_version),
            session,
            body: Body::App(command),
            principal,
        };
        match self
            .submit(Some(PartitionId(header.partition)), request)
            .await?
        {
            Some(response) => Ok(Response::new(response)),
            None => Err(Status::internal("a map command got a session reply")),
        }
    }
}

type PageStream = Pin<Box<dyn Stream<Item = Result<pb::SnapshotPage, Status>> + Send>>;
pub(crate) type TailStream = Pin<Box<dyn Stream<Item = Result<pb::LogEntries, Status>> + Send>>;

#[tonic::async_trait]
impl pb::amulet_server::Amulet for Service {
    async fn get_partition_map(
        &self,
        _: Request<pb::GetPartitionMapRequest>,
    ) -> Result<Response<pb::PartitionMap>, Status> {
        let map = self
            .handle
            .partition_map()
            .await
            .map_err(stopped)?
            .ok_or_else(|| Status::failed_precondition("this cluster serves no DMap"))?;
        let addresses = self.addresses.read().expect("addresses lock").clone();
        Ok(Response::new(map_to_pb(&map, &addresses)))
    }

    async fn open_session(
        &self,
        request: Request<pb::OpenSessionRequest>,
    ) -> Result<Response<pb::SessionResponse>, Status> {
        let principal = principal_of(&request);
        let r = request.into_inner();
        self.session_request(
            principal,
            r.session,
            r.map_version,
            Body::OpenSession {
                lease_micros: r.lease_micros,
            },
        )
        .await
    }

    async fn keep_alive(
        &self,
        request: Request<pb::OpenSessionRequest>,
    ) -> Result<Response<pb::SessionResponse>, Status> {
        let principal = principal_of(&request);
        let r = request.into_inner();
        self.session_request(
            principal,
            r.session,
            r.map_version,
            Body::KeepAlive {
                lease_micros: r.lease_micros,
            },
        )
        .await
    }

    async fn close_session(
        &self,
        request: Request<pb::CloseSessionRequest>,
    ) -> Result<Response<pb::SessionResponse>, Status> {
        let principal = principal_of(&request);
        let r = request.into_inner();
        self.session_request(principal, r.session, r.map_version, Body::CloseSession)
            .await
    }

    async fn execute(
        &self,
        request: Request<pb::MapRequest>,
    ) -> Result<Response<pb::MapResponse>, Status> {
        let principal = principal_of(&request);
        self.execute_recorded(principal, request.into_inner())
            .await
            .map(Response::new)
    }

    async fn execute_batch(
        &self,
        request: Request<pb::MapRequestBatch>,
    ) -> Result<Response<pb::MapResponseBatch>, Status> {
        let principal = principal_of(&request);
        let requests = request.into_inner().requests;
        if requests.len() > BATCH_REQUESTS_MAX {
            return Err(Status::invalid_argument(format!(
                "a batch holds at most {BATCH_REQUESTS_MAX} requests, not {}",
                requests.len()
            )));
        }
        // All submitted in the same poll, so the node's loop takes them in
        // one pass: one proposal batch, one group commit.
        let outcomes = futures::future::join_all(requests.into_iter().map(|r| {
            let principal = principal.clone();
            async move { outcome_from_result(self.execute_recorded(principal, r).await) }
        }))
        .await;
        Ok(Response::new(pb::MapResponseBatch { outcomes }))
    }

    async fn read_at(
        &self,
        request: Request<pb::ReadAtRequest>,
    ) -> Result<Response<pb::ReadAtResponse>, Status> {
        let started = tokio::time::Instant::now();
        let principal = principal_of(&request);
        let result = self.read_at_version(principal, request.into_inner()).await;
        self.record("read_at", started, &result);
        result.map(Response::new)
    }

    type ReadSnapshotStream = PageStream;

    async fn read_snapshot(
        &self,
        request: Request<pb::ReadSnapshotRequest>,
    ) -> Result<Response<PageStream>, Status> {
        let principal = principal_of(&request);
        let r = request.into_inner();
        let limit = if r.page_size == 0 {
            PAGE_ENTRIES_DEFAULT
        } else {
            r.page_size
        };
        let partition = PartitionId(r.partition);
        // The first page is read here, so a bad request fails the call
        // itself rather than its stream.
        let first = read_page(
            &self.handle,
            principal.as_ref(),
            partition,
            r.snapshot,
            r.after,
            limit,
        )
        .await?;
        // One page in flight: the client's reading paces the server, and
        // memory on both sides stays within a page or two.
        let (pages, rx) = mpsc::channel(1);
        let handle = self.handle.clone();
        let snapshot = r.snapshot;
        tokio::spawn(async move {
            let mut page = first;
            loop {
                let last = page.last;
                let after = page.entries.last().map(|e| e.key.clone());
                if pages.send(Ok(page)).await.is_err() || last {
                    return;
                }
                // Judged again at every page: a revocation ends the stream.
                let page_read = read_page(
                    &handle,
                    principal.as_ref(),
                    partition,
                    snapshot,
                    after,
                    limit,
                );
                page = match page_read.await {
                    Ok(page) => page,
                    Err(status) => {
                        let _ = pages.send(Err(status)).await;
                        return;
                    }
                };
            }
        });
        Ok(Response::new(Box::pin(ReceiverStream::new(rx))))
    }

    type TailLogStream = TailStream;

    async fn tail_log(
        &self,
        request: Request<pb::TailLogRequest>,
    ) -> Result<Response<TailStream>, Status> {
        let started = tokio::time::Instant::now();
        let principal = principal_of(&request);
        let r = request.into_inner();
        let log = MapName::new(r.log).map_err(|e| Status::invalid_argument(e.to_string()));
        let result = match log {
            Ok(log) => {
                let max_bytes = match r.max_bytes {
                    0 => usize::MAX,
                    n => n as usize,
                };
                let mut tail = Tail {
                    principal,
                    handle: self.handle.clone(),
                    metrics: self.metrics.clone(),
                    changes: self.handle.log_changes(),
                    log,
                    next: r.from,
                    max_bytes,
                    map_version: MapVersion(r.map_version),
                    waiting_since: None,
                };
                // The first read is made here, so a bad request fails the
                // call itself rather than its stream.
                tail.next_message().await.map(|first| tail.serve(first))
            }
            Err(status) => Err(status),
        };
        self.record("tail_log", started, &result);
        result.map(Response::new)
    }

    async fn reconfigure(
        &self,
        request: Request<pb::ReconfigureRequest>,
    ) -> Result<Response<pb::ReconfigureResponse>, Status> {
        let started = tokio::time::Instant::now();
        let principal = principal_of(&request);
        let result = async {
            let (map_version, change) = amulet_api::reconfiguration_from_pb(request.into_inner())?;
            tracing::info!(?change, map_version, "reconfiguration requested");
            let request = ClientRequest {
                map_version: MapVersion(map_version),
                session: None,
                body: Body::Reconfigure(change),
                principal,
            };
            self.submit(None, request).await?;
            Ok(Response::new(pb::ReconfigureResponse {}))
        }
        .await;
        self.record("reconfigure", started, &result);
        result
    }

    async fn set_balancer(
        &self,
        request: Request<pb::SetBalancerRequest>,
    ) -> Result<Response<pb::BalancerStatus>, Status> {
        let started = tokio::time::Instant::now();
        let principal = principal_of(&request);
        let result = match self.allowed_here(principal.as_ref(), |need| need(Need::Cluster)) {
            Ok(()) => {
                let enabled = request.into_inner().enabled;
                tracing::info!(enabled, "balancer switch requested");
                match self.handle.set_balancer(enabled).await {
                    Ok(stats) => Ok(Response::new(crate::balancer_status::to_pb(&stats))),
                    Err(HandleError::Io(e)) => Err(Status::internal(format!(
                        "the balancer switch could not be kept: {e}; nothing changed"
                    ))),
                    Err(_) => Err(Status::unavailable("the node is stopping")),
                }
            }
            Err(status) => Err(status),
        };
        self.record("set_balancer", started, &result);
        result
    }

    async fn status(
        &self,
        _: Request<pb::StatusRequest>,
    ) -> Result<Response<pb::StatusResponse>, Status> {
        let stats = self
            .handle
            .stats()
            .await
            .ok_or_else(|| Status::unavailable("the node is stopping"))?;
        let balancer = Some(crate::balancer_status::to_pb(&stats));
        Ok(Response::new(pb::StatusResponse {
            balancer,
            node: self.me.0,
            map_version: stats.map_version,
            replicas: stats
                .replicas
                .into_iter()
                .map(|r| pb::ReplicaStatus {
                    entries: r.gauge("entries"),
                    payload_bytes: r.gauge("payload_bytes"),
                    ops_per_second: r.gauge("ops_per_second"),
                    partition: r.partition,
                    stream: r.stream,
                    global_position: r.global_position,
                    queued: r.queued,
                    sessions: r.sessions,
                    maps: r.maps,
                    checkpoint_global_position: r.checkpoint.global_position,
                    checkpoints_written: r.checkpoint.written,
                })
                .collect(),
            streams: stats
                .streams
                .into_iter()
                .map(|s| pb::StreamStatus {
                    stream: s.stream,
                    decided_below: s.decided_below,
                    coordinator: s.coordinator,
                    voting: s.voting,
                    values_delivered: s.values_delivered,
                    trimmed_below: s.trimmed_below,
                })
                .collect(),
            eventual: crate::eventual_api::status_pb(stats.eventual),
            membership: stats
                .membership
                .as_deref()
                .map(crate::membership_api::status_pb),
        }))
    }

    async fn change_access(
        &self,
        request: Request<pb::ChangeAccessRequest>,
    ) -> Result<Response<pb::ChangeAccessResponse>, Status> {
        self.change_access_rpc(request).await
    }

    async fn create_token(
        &self,
        request: Request<pb::CreateTokenRequest>,
    ) -> Result<Response<pb::CreateTokenResponse>, Status> {
        self.create_token_rpc(request).await
    }

    async fn get_access(
        &self,
        request: Request<pb::GetAccessRequest>,
    ) -> Result<Response<pb::AccessConfiguration>, Status> {
        self.get_access_rpc(request).await
    }

    async fn who_am_i(
        &self,
        request: Request<pb::WhoAmIRequest>,
    ) -> Result<Response<pb::WhoAmIResponse>, Status> {
        self.who_am_i_rpc(request)
    }

    async fn change_membership(
        &self,
        request: Request<pb::ChangeMembershipRequest>,
    ) -> Result<Response<pb::ChangeMembershipResponse>, Status> {
        self.change_membership_rpc(request).await
    }

    async fn eventual_get(
        &self,
        r: Request<pb::EventualGetRequest>,
    ) -> Result<Response<pb::Versioned>, Status> {
        let started = tokio::time::Instant::now();
        let principal = principal_of(&r);
        let r = r.into_inner();
        let result = match self.allowed_here(principal.as_ref(), |need| {
            need(Need::Map(&r.map, amulet_smr::Permission::Read))
        }) {
            Ok(()) => crate::eventual_api::get(&self.handle, r).await,
            Err(status) => Err(status),
        };
        self.record("eventual_get", started, &result);
        result.map(Response::new)
    }

    async fn eventual_put(
        &self,
        r: Request<pb::EventualPutRequest>,
    ) -> Result<Response<pb::Versioned>, Status> {
        let started = tokio::time::Instant::now();
        let principal = principal_of(&r);
        let r = r.into_inner();
        let result = match self.allowed_here(principal.as_ref(), |need| {
            need(Need::Map(&r.map, amulet_smr::Permission::Write))
        }) {
            Ok(()) => crate::eventual_api::put(&self.handle, r).await,
            Err(status) => Err(status),
        };
        self.record("eventual_put", started, &result);
        result.map(Response::new)
    }

    async fn eventual_delete(
        &self,
        r: Request<pb::EventualDeleteRequest>,
    ) -> Result<Response<pb::Versioned>, Status> {
        let started = tokio::time::Instant::now();
        let principal = principal_of(&r);
        let r = r.into_inner();
        let result = match self.allowed_here(principal.as_ref(), |need| {
            need(Need::Map(&r.map, amulet_smr::Permission::Write))
        }) {
            Ok(()) => crate::eventual_api::delete(&self.handle, r).await,
            Err(status) => Err(status),
        };
        self.record("eventual_delete", started, &result);
        result.map(Response::new)
    }
}

/// The status of a refusal, as Execute answers it.
pub(crate) fn refusal(reply: ClientReply<MapReply>) -> Status {
    match client_reply_to_response(reply) {
        Err(status) => status,
        Ok(_) => Status::internal("a refusal answered as a success"),
    }
}
