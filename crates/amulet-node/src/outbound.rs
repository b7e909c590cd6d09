//! The writer of one outbound peer connection.

use amulet_types::NodeId;
use amulet_wire::{encode_frame, Frame, Hello};
use bytes::BytesMut;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;
use tokio::sync::mpsc;

/// Reconnect backoff bounds: quick enough to notice a peer that restarts,
/// slow enough not to spin on one that is down.
const BACKOFF_MIN: Duration = Duration::from_millis(10);
const BACKOFF_MAX: Duration = Duration::from_millis(500);
/// Bytes gathered into one write before it is issued even if more is
/// queued, so one write never holds an unbounded buffer.
const WRITE_BYTES_MAX: usize = 4 * 1024 * 1024;

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
}

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
            if let Err(error) = stream.write_all(&buffer).await {
                tracing::warn!(peer = %spec.peer, %error, "write failed; reconnecting");
                break;
            }
        }
    }
}

async fn connect(spec: &OutboundSpec) -> std::io::Result<TcpStream> {
    let mut stream = tokio::time::timeout(Duration::from_secs(2), TcpStream::connect(spec.addr))
        .await
        .map_err(|_| std::io::Error::new(std::io::ErrorKind::TimedOut, "connect timed out"))??;
    stream.set_nodelay(true)?;
    let mut hello = BytesMut::new();
    encode_frame(&Frame::Hello(spec.hello), &mut hello);
    stream.write_all(&hello).await?;
    Ok(stream)
}
