//! Connections to the client API: accepted, TLS handshaken when the node
//! has TLS (a client certificate from the cluster CA, or none: a
//! certificate from anywhere else fails the handshake), and tagged with
//! the identity the certificate names. [`Authenticate`] then lets every
//! request (unary and streaming) through only from a user, named by the
//! connection's certificate or, without one, by a valid bearer token in
//! the request's `authorization` metadata; anything else (a node's
//! certificate, one naming nobody, no credential, a malformed, unknown,
//! forged, revoked or expired token) is refused with UNAUTHENTICATED. The
//! user goes into the request's extensions as its [`Principal`], which
//! is ordered with the request and judged by the replicas.

use crate::client_limits::CONNECTIONS_PER_CLIENT_MAX;
use amulet_smr::Principal;
use amulet_tls::tokio_rustls::server::TlsStream;
use amulet_tls::{identity_of, Identity, TlsContext};
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_stream::wrappers::ReceiverStream;
use tonic::{Request, Status};

/// A TLS handshake that does not finish this fast is dropped, so
/// half-open connections do not pile up.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// Connections handshaken and not yet taken by the server.
const ACCEPTED_QUEUE_MAX: usize = 256;

/// Who is on the other end of a client connection (in every request's
/// extensions).
#[derive(Clone, Debug)]
pub(crate) struct ApiPeer {
    /// The client's address.
    pub remote: Option<SocketAddr>,
    /// `None` on a plain connection; with TLS, the identity the client's
    /// certificate names, or why it names none (`Ok(None)`: the client
    /// presented no certificate).
    pub identity: Option<Result<Option<Identity>, String>>,
    /// The client over its connection limit: every request is refused
    /// (RESOURCE_EXHAUSTED) and the connection closes with the client.
    pub over_limit: Option<String>,
}

/// Who a request is from, as [`Authenticate`] found: `None` on a node
/// without TLS (nobody is checked).
#[derive(Clone, Debug)]
pub(crate) struct Authenticated(pub Option<Principal>);

/// The principal of a request that passed [`Authenticate`].
pub(crate) fn principal_of<T>(request: &Request<T>) -> Option<Principal> {
    request
        .extensions()
        .get::<Authenticated>()
        .and_then(|a| a.0.clone())
}

/// A client connection, plain or TLS.
pub(crate) struct ApiStream {
    io: Io,
    peer: ApiPeer,
    /// This connection's unit of its client's connection count.
    _slot: Option<crate::client_limits::Slot>,
}

enum Io {
    Plain(TcpStream),
    Tls(Box<TlsStream<TcpStream>>),
}

impl tonic::transport::server::Connected for ApiStream {
    type ConnectInfo = ApiPeer;

    fn connect_info(&self) -> ApiPeer {
        self.peer.clone()
    }
}

impl AsyncRead for ApiStream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        match &mut self.get_mut().io {
            Io::Plain(s) => Pin::new(s).poll_read(cx, buf),
            Io::Tls(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for ApiStream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        match &mut self.get_mut().io {
            Io::Plain(s) => Pin::new(s).poll_write(cx, buf),
            Io::Tls(s) => Pin::new(s.as_mut()).poll_write(cx, buf),
        }
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        match &mut self.get_mut().io {
            Io::Plain(s) => Pin::new(s).poll_write_vectored(cx, bufs),
            Io::Tls(s) => Pin::new(s.as_mut()).poll_write_vectored(cx, bufs),
        }
    }

    fn is_write_vectored(&self) -> bool {
        match &self.io {
            Io::Plain(s) => s.is_write_vectored(),
            Io::Tls(s) => s.is_write_vectored(),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        match &mut self.get_mut().io {
            Io::Plain(s) => Pin::new(s).poll_flush(cx),
            Io::Tls(s) => Pin::new(s.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        match &mut self.get_mut().io {
            Io::Plain(s) => Pin::new(s).poll_shutdown(cx),
            Io::Tls(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
        }
    }
}

/// Accepts on `listener` until the returned task is aborted; connections
/// come out of the stream ready for gRPC. Handshakes run in tasks of their
/// own, so a slow client never holds up the others.
pub(crate) fn accept(
    listener: TcpListener,
    tls: Option<Arc<TlsContext>>,
) -> (ReceiverStream<std::io::Result<ApiStream>>, JoinHandle<()>) {
    let (tx, rx) = mpsc::channel(ACCEPTED_QUEUE_MAX);
    let connections = Arc::new(crate::client_limits::Counts::default());
    let task = tokio::spawn(async move {
        loop {
            let (tcp, remote) = match listener.accept().await {
                Ok(accepted) => accepted,
                Err(error) => {
                    // Typically out of file descriptors: wait, do not spin.
                    tracing::warn!(%error, "client API accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            };
            // Small requests and replies: Nagle would hold each for an ACK.
            let _ = tcp.set_nodelay(true);
            let Some(tls) = tls.clone() else {
                let key = format!("address {}", remote.ip());
                let slot = connections.acquire(&key, CONNECTIONS_PER_CLIENT_MAX);
                let peer = ApiPeer {
                    remote: Some(remote),
                    identity: None,
                    over_limit: slot.is_none().then_some(key),
                };
                let stream = ApiStream {
                    io: Io::Plain(tcp),
                    peer,
                    _slot: slot,
                };
                if tx.send(Ok(stream)).await.is_err() {
                    return;
                }
                continue;
            };
            let tx = tx.clone();
            let connections = connections.clone();
            tokio::spawn(async move {
                match handshake(tcp, remote, &tls, &connections).await {
                    Ok(stream) => {
                        let _ = tx.send(Ok(stream)).await;
                    }
                    // Not the node's problem: a client without a valid
                    // certificate learns it from the handshake's alert.
                    Err(error) => tracing::debug!(%remote, %error, "client TLS handshake refused"),
                }
            });
        }
    });
    (ReceiverStream::new(rx), task)
}

async fn handshake(
    tcp: TcpStream,
    remote: SocketAddr,
    tls: &TlsContext,
    connections: &Arc<crate::client_limits::Counts>,
) -> Result<ApiStream, String> {
    let acceptor = amulet_tls::tokio_rustls::TlsAcceptor::from(tls.api_server());
    let stream = tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(tcp))
        .await
        .map_err(|_| "no TLS handshake in time".to_string())?
        .map_err(|e| e.to_string())?;
    let identity = match stream
        .get_ref()
        .1
        .peer_certificates()
        .and_then(|c| c.first())
    {
        Some(leaf) => identity_of(leaf).map(Some).map_err(|e| e.to_string()),
        None => Ok(None),
    };
    // A user's connections count together wherever they come from; a
    // connection without a certificate (a token's) counts by address.
    let key = match &identity {
        Ok(Some(Identity::User(user))) => format!("user {user:?}"),
        _ => format!("address {}", remote.ip()),
    };
    let slot = connections.acquire(&key, CONNECTIONS_PER_CLIENT_MAX);
    Ok(ApiStream {
        io: Io::Tls(Box::new(stream)),
        peer: ApiPeer {
            remote: Some(remote),
            identity: Some(identity),
            over_limit: slot.is_none().then_some(key),
        },
        _slot: slot,
    })
}

/// Lets a request through only from a user when the connection is TLS
/// (plain connections, a node without TLS, pass as nobody in particular);
/// tags it with its [`Authenticated`] principal.
#[derive(Clone)]
pub(crate) struct Authenticate {
    /// Tokens are judged by the access configuration this node's replicas
    /// executed last.
    pub handle: crate::node_handle::NodeHandle,
    /// Refusals are counted by reason.
    pub metrics: Arc<crate::metrics::Metrics>,
}

impl tonic::service::Interceptor for Authenticate {
    fn call(&mut self, mut request: Request<()>) -> Result<Request<()>, Status> {
        let Some(peer) = request.extensions().get::<ApiPeer>().cloned() else {
            request.extensions_mut().insert(Authenticated(None));
            return Ok(request);
        };
        if let Some(client) = &peer.over_limit {
            self.metrics.limited("connections");
            return Err(Status::resource_exhausted(format!(
                "{client} holds {CONNECTIONS_PER_CLIENT_MAX} connections to this node already \
                 (the most one client may): close some, or share one"
            )));
        }
        let principal = match &peer.identity {
            None => Ok(None),
            Some(Ok(Some(Identity::User(user)))) => Ok(Some(Principal::user(user.clone()))),
            Some(Ok(Some(Identity::Node(node)))) => Err((
                "node-certificate",
                format!(
                    "the client presented node {}'s certificate; clients authenticate with a \
                     user certificate (amulet cert create-client) or a bearer token",
                    node.0
                ),
            )),
            Some(Err(why)) => Err((
                "no-identity",
                format!("the client certificate names no Amulet user: {why}"),
            )),
            Some(Ok(None)) => self.token_principal(&request).map(Some),
        };
        match principal {
            Ok(principal) => {
                request.extensions_mut().insert(Authenticated(principal));
                Ok(request)
            }
            Err((reason, refusal)) => {
                self.metrics.auth_refused(reason);
                tracing::info!(remote = ?peer.remote, %refusal, "client request refused");
                Err(Status::unauthenticated(refusal))
            }
        }
    }
}

impl Authenticate {
    /// The user a request without a certificate names by its bearer
    /// token. One message for every bad token, so a guesser learns nothing
    /// from which check failed; the token itself is never logged.
    fn token_principal(&self, request: &Request<()>) -> Result<Principal, (&'static str, String)> {
        let Some(header) = request.metadata().get("authorization") else {
            return Err((
                "no-credential",
                "no client certificate and no bearer token: present a user \
                 certificate or send `authorization: Bearer TOKEN`"
                    .to_string(),
            ));
        };
        let invalid = || {
            (
                "bad-token",
                "the bearer token is not valid (malformed, unknown, revoked or expired)"
                    .to_string(),
            )
        };
        let token = header
            .to_str()
            .ok()
            .and_then(|h| amulet_tls::bearer(h).ok())
            .ok_or_else(invalid)?;
        let access = self.handle.access();
        let record = access
            .token(&token.id, &token.digest())
            .ok_or_else(invalid)?;
        if record.expires_unix_micros <= unix_micros_now() {
            return Err(invalid());
        }
        Ok(Principal {
            user: record.user.clone(),
            token: Some(token.id),
        })
    }
}

/// Wall-clock µs since the Unix epoch (token expiry is wall-clock time).
#[allow(clippy::disallowed_methods)] // I/O edge: the wall clock tokens expire by
pub(crate) fn unix_micros_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_micros()).unwrap_or(u64::MAX))
}
