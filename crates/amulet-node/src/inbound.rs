//! Connections peers open to us: accept, prove who the peer is (with TLS:
//! a node certificate from the cluster CA, whose node id the Hello must
//! claim), check the Hello, decode frames. Anything a peer sends that does
//! not decode closes that connection with a warning; it never stops the
//! node.

use amulet_tls::{identity_of, Identity, TlsContext};
use amulet_types::NodeId;
use amulet_wire::{DecodeError, Frame, FrameDecoder, Hello};
use bytes::BytesMut;
use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;

/// A connection that does not say Hello this fast is closed.
const HELLO_TIMEOUT: Duration = Duration::from_secs(5);

/// What an inbound connection is checked against.
pub struct InboundSpec {
    /// Our cluster id.
    pub cluster: u64,
    /// This node.
    pub me: NodeId,
    /// Nodes allowed to connect: the configured peers, and the members
    /// the view added since ([`crate::transport::Transport::add_peer`]).
    pub peers: std::sync::RwLock<BTreeSet<NodeId>>,
    /// Largest frame accepted.
    pub frame_bytes_max: usize,
    /// With TLS, peers must present a node certificate from the CA.
    pub tls: Option<Arc<TlsContext>>,
}

/// Why an inbound connection was closed.
#[derive(Debug, thiserror::Error)]
enum Closed {
    #[error("i/o: {0}")]
    Io(#[from] std::io::Error),
    #[error("undecodable bytes: {0}")]
    Decode(#[from] DecodeError),
    #[error("{0}")]
    Refused(String),
    #[error("peer closed the connection")]
    Eof,
}

/// Accepts connections until the task is aborted.
pub async fn accept_loop(
    listener: TcpListener,
    spec: Arc<InboundSpec>,
    inbound: mpsc::Sender<(NodeId, Frame)>,
) {
    loop {
        match listener.accept().await {
            Ok((stream, addr)) => {
                let spec = spec.clone();
                let inbound = inbound.clone();
                tokio::spawn(async move {
                    let _ = stream.set_nodelay(true);
                    let read = match &spec.tls {
                        None => read_connection(stream, None, &spec, inbound).await,
                        Some(tls) => match handshake(stream, tls).await {
                            Ok((stream, node)) => {
                                read_connection(stream, Some(node), &spec, inbound).await
                            }
                            Err(error) => Err(error),
                        },
                    };
                    match read {
                        Ok(()) | Err(Closed::Eof) => {
                            tracing::debug!(%addr, "inbound connection closed")
                        }
                        Err(error) => {
                            tracing::warn!(%addr, %error, "inbound connection closed")
                        }
                    }
                });
            }
            Err(error) => {
                // Typically out of file descriptors: wait rather than spin.
                tracing::warn!(%error, "accept failed");
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    }
}

/// The TLS handshake (the peer's certificate chain verified against the
/// CA by rustls) and the node id its certificate names.
async fn handshake(
    stream: TcpStream,
    tls: &TlsContext,
) -> Result<
    (
        amulet_tls::tokio_rustls::server::TlsStream<TcpStream>,
        NodeId,
    ),
    Closed,
> {
    let acceptor = amulet_tls::tokio_rustls::TlsAcceptor::from(tls.server());
    let stream = tokio::time::timeout(HELLO_TIMEOUT, acceptor.accept(stream))
        .await
        .map_err(|_| Closed::Refused("no TLS handshake in time".into()))?
        .map_err(|e| Closed::Refused(format!("TLS handshake refused: {e}")))?;
    let leaf = stream
        .get_ref()
        .1
        .peer_certificates()
        .and_then(|chain| chain.first())
        .ok_or_else(|| Closed::Refused("no peer certificate".into()))?;
    match identity_of(leaf) {
        Ok(Identity::Node(node)) => Ok((stream, node)),
        Ok(other) => Err(Closed::Refused(format!(
            "{other}'s certificate on the peer port: only nodes may connect here"
        ))),
        Err(error) => Err(Closed::Refused(error.to_string())),
    }
}

/// Reads a peer's frames; `proven` is the node its certificate names.
async fn read_connection<S: AsyncRead + Unpin>(
    mut stream: S,
    proven: Option<NodeId>,
    spec: &InboundSpec,
    inbound: mpsc::Sender<(NodeId, Frame)>,
) -> Result<(), Closed> {
    let mut decoder = FrameDecoder::new(spec.frame_bytes_max);
    let mut buffer = BytesMut::with_capacity(256 * 1024);
    let hello = tokio::time::timeout(
        HELLO_TIMEOUT,
        read_hello(&mut stream, &mut decoder, &mut buffer),
    )
    .await
    .map_err(|_| Closed::Refused("no Hello in time".into()))??;
    check_hello(&hello, spec)?;
    if let Some(node) = proven.filter(|node| *node != hello.node) {
        return Err(Closed::Refused(format!(
            "the Hello claims {} but the certificate is {node}'s",
            hello.node
        )));
    }
    let peer = hello.node;
    tracing::debug!(%peer, incarnation = hello.incarnation, "peer connected");
    loop {
        while let Some(frame) = decoder
            .decode(&mut buffer)
            .map_err(|e| peer_error(peer, e))?
        {
            if let Frame::Hello(_) = frame {
                return Err(Closed::Refused(format!("{peer} sent a second Hello")));
            }
            if inbound.send((peer, frame)).await.is_err() {
                return Ok(()); // the node is stopping
            }
        }
        if stream.read_buf(&mut buffer).await? == 0 {
            return Err(Closed::Eof);
        }
    }
}

/// Tags a decode error with the peer, for the warning.
fn peer_error(peer: NodeId, error: DecodeError) -> Closed {
    Closed::Refused(format!("{peer} sent undecodable bytes: {error}"))
}

async fn read_hello<S: AsyncRead + Unpin>(
    stream: &mut S,
    decoder: &mut FrameDecoder,
    buffer: &mut BytesMut,
) -> Result<Hello, Closed> {
    loop {
        match decoder.decode(buffer)? {
            Some(Frame::Hello(hello)) => return Ok(hello),
            Some(Frame::Envelope(_) | Frame::Replica(_) | Frame::Eventual(_)) => {
                return Err(Closed::Refused("first frame is not a Hello".into()))
            }
            None => {
                if stream.read_buf(buffer).await? == 0 {
                    return Err(Closed::Eof);
                }
            }
        }
    }
}

fn check_hello(hello: &Hello, spec: &InboundSpec) -> Result<(), Closed> {
    if hello.cluster != spec.cluster {
        return Err(Closed::Refused(format!(
            "{} belongs to cluster {}, not {}",
            hello.node, hello.cluster, spec.cluster
        )));
    }
    let known = spec.peers.read().expect("peers lock").contains(&hello.node);
    if hello.node == spec.me || !known {
        return Err(Closed::Refused(format!(
            "{} is neither a configured peer nor in the view",
            hello.node
        )));
    }
    Ok(())
}
