//! The writer of one outbound peer connection.

use amulet_tls::{node_server_name, TlsContext};
use amulet_types::NodeId;
use amulet_wire::{encode_frame, Frame, Hello};
use bytes::BytesMut;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::mpsc;

/// Reconnect backoff bounds: quick enough to notice a peer that restarts,
/// slow enough not to spin on one that is down.
const BACKOFF_MIN: Duration = Duration::from_millis(10);
const BACKOFF_MAX: Duration = Duration::from_millis(500);
/// Bytes gathered into one write before it is issued even if more is
/// queued, so one write never holds an unbounded buffer.
const WRITE_BYTES_MAX: usize = 4 * 1024 * 1024;
/// Bound on a TCP connect and on a TLS handshake.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);

/// One peer to write to.
pub struct OutboundSpec {
    /// The peer.
    pub peer: NodeId,
    /// Its address.
    pub addr: SocketAddr,
    /// Sent first on every connection.
    pub hello: Hello,
    /// Messages in the queue; decremented as they are taken.
    pub queued: Arc<AtomicUsize>,
    /// With TLS, the peer must prove with its certificate that it is
    /// `peer`, and we present ours.
    pub tls: Option<Arc<TlsContext>>,
}

/// A connection to a peer, plain or TLS.
type PeerStream = Box<dyn AsyncWrite + Send + Unpin>;

/// Connects (with backoff), says Hello, then writes every queued message,
/// coalescing whatever has queued up since the last write into one
/// `write_all`: under load this turns thousands of small messages into a
/// few large writes. Ends when the queue is closed and drained.
pub async fn peer_writer(spec: OutboundSpec, mut queue: mpsc::UnboundedReceiver<Frame>) {
    let mut backoff = BACKOFF_MIN;
    let mut buffer = BytesMut::with_capacity(64 * 1024);
    loop {
        let mut stream = match connect(&spec).await {
            Ok(stream) => {
                backoff = BACKOFF_MIN;
                stream
            }
            Err(error) => {
                tracing::debug!(peer = %spec.peer, %error, "connect failed");
                // Messages for a peer that is down are dropped, not kept:
                // they would be stale by the time it is back.
                loop {
                    match queue.try_recv() {
                        Ok(_) => {
                            spec.queued.fetch_sub(1, Ordering::Relaxed);
                        }
                        Err(mpsc::error::TryRecvError::Empty) => break,
                        Err(mpsc::error::TryRecvError::Disconnected) => return,
                    }
                }
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(BACKOFF_MAX);
                continue;
            }
        };
        tracing::debug!(peer = %spec.peer, "connected");
        loop {
            let Some(first) = queue.recv().await else {
                let _ = stream.shutdown().await;
                return;
            };
            buffer.clear();
            encode_frame(&first, &mut buffer);
            let mut taken = 1;
            while buffer.len() < WRITE_BYTES_MAX {
                match queue.try_recv() {
                    Ok(frame) => {
                        encode_frame(&frame, &mut buffer);
                        taken += 1;
                    }
                    Err(_) => break,
                }
            }
            spec.queued.fetch_sub(taken, Ordering::Relaxed);
            // TLS holds written records until flushed (a no-op on TCP).
            let written = match stream.write_all(&buffer).await {
                Ok(()) => stream.flush().await,
                Err(error) => Err(error),
            };
            if let Err(error) = written {
                tracing::warn!(peer = %spec.peer, %error, "write failed; reconnecting");
                break;
            }
        }
    }
}

async fn connect(spec: &OutboundSpec) -> std::io::Result<PeerStream> {
    let timed_out = |what| std::io::Error::new(std::io::ErrorKind::TimedOut, what);
    let tcp = tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(spec.addr))
        .await
        .map_err(|_| timed_out("connect timed out"))??;
    tcp.set_nodelay(true)?;
    let mut stream: PeerStream = match &spec.tls {
        None => Box::new(tcp),
        Some(tls) => {
            // The peer's certificate must name `node-<id>.amulet`: only
            // node `peer` holds one from the CA.
            let name =
                amulet_tls::rustls::pki_types::ServerName::try_from(node_server_name(spec.peer))
                    .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))?;
            let connector = amulet_tls::tokio_rustls::TlsConnector::from(tls.client());
            let tls_stream = tokio::time::timeout(CONNECT_TIMEOUT, connector.connect(name, tcp))
                .await
                .map_err(|_| timed_out("TLS handshake timed out"))??;
            Box::new(tls_stream)
        }
    };
    let mut hello = BytesMut::new();
    encode_frame(&Frame::Hello(spec.hello), &mut hello);
    stream.write_all(&hello).await?;
    stream.flush().await?;
    Ok(stream)
}
