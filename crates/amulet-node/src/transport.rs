//! Peer links over TCP (TLS with mutual node authentication when the node
//! has TLS files): one outbound connection per peer (written by its
//! own task, see [`crate::outbound`]) and the connections peers open to us
//! (read by [`crate::inbound`]). Messages are fire-and-forget: a message
//! to a peer that is down is dropped, and Ring Paxos retries.

use crate::inbound::{accept_loop, InboundSpec};
use crate::outbound::{peer_writer, OutboundSpec};
use amulet_tls::TlsContext;
use amulet_types::NodeId;
use amulet_wire::{Envelope, Frame, Hello};
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use tokio::net::TcpListener;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

/// Peer messages queued for the event loop before readers stop reading
/// (and so TCP pushes back on the sender). A message holds at most one
/// batch, so this bounds the queue at a few hundred MiB.
const INBOUND_QUEUE_MAX: usize = 8192;
/// Messages queued for one peer before further ones are dropped: a peer
/// that stalls (stopped process, full socket) must not grow our memory
/// without bound. Ring Paxos retries what is lost.
const OUTBOUND_QUEUE_MAX: usize = 65_536;

/// Who we are and whom we talk to.
pub struct TransportSpec {
    /// Our Hello (cluster, node, incarnation).
    pub hello: Hello,
    /// Address to accept on (already validated).
    pub listen: SocketAddr,
    /// Other nodes and their addresses.
    pub peers: BTreeMap<NodeId, SocketAddr>,
    /// Largest frame accepted from a peer.
    pub frame_bytes_max: usize,
    /// TLS with mutual node authentication, or plain TCP.
    pub tls: Option<Arc<TlsContext>>,
}

/// The running links.
pub struct Transport {
    writers: BTreeMap<NodeId, PeerQueue>,
    writer_tasks: Vec<JoinHandle<()>>,
    accept_task: JoinHandle<()>,
    local_addr: SocketAddr,
    /// What inbound connections are checked against (its allow-list
    /// grows with [`Transport::add_peer`]).
    inbound: Arc<InboundSpec>,
    /// Said first on every outbound connection.
    hello: Hello,
    tls: Option<Arc<TlsContext>>,
}

impl Transport {
    /// Binds the listener and starts the link tasks. Returns the receiver
    /// of every peer message, tagged with the sender from its Hello.
    pub async fn start(
        spec: TransportSpec,
    ) -> anyhow::Result<(Transport, mpsc::Receiver<(NodeId, Frame)>)> {
        let listener = TcpListener::bind(spec.listen)
            .await
            .map_err(|e| anyhow::anyhow!("cannot listen on {}: {e}", spec.listen))?;
        let local_addr = listener.local_addr()?;
        let (inbound_tx, inbound_rx) = mpsc::channel(INBOUND_QUEUE_MAX);
        let inbound = Arc::new(InboundSpec {
            cluster: spec.hello.cluster,
            me: spec.hello.node,
            peers: std::sync::RwLock::new(spec.peers.keys().copied().collect()),
            frame_bytes_max: spec.frame_bytes_max,
            tls: spec.tls.clone(),
        });
        let accept_task = tokio::spawn(accept_loop(listener, inbound.clone(), inbound_tx));
        let mut transport = Transport {
            writers: BTreeMap::new(),
            writer_tasks: Vec::new(),
            accept_task,
            local_addr,
            inbound,
            hello: spec.hello,
            tls: spec.tls,
        };
        for (peer, addr) in &spec.peers {
            transport.add_peer(*peer, *addr);
        }
        Ok((transport, inbound_rx))
    }

    /// Links to `peer` at `addr` from now on: a writer of our messages to
    /// it, and its connections accepted. For a node the view added after
    /// this one started (a joiner, docs/membership.md), which no
    /// configuration file names. A peer already linked keeps its link (a
    /// node's peer address never changes: the view refuses a second node
    /// at an address, and ids are never reused).
    pub fn add_peer(&mut self, peer: NodeId, addr: SocketAddr) {
        if peer == self.hello.node || self.writers.contains_key(&peer) {
            return;
        }
        self.inbound.peers.write().expect("peers lock").insert(peer);
        let (tx, rx) = mpsc::unbounded_channel();
        let queued = Arc::new(AtomicUsize::new(0));
        let outbound = OutboundSpec {
            peer,
            addr,
            hello: self.hello,
            queued: queued.clone(),
            tls: self.tls.clone(),
        };
        self.writer_tasks
            .push(tokio::spawn(peer_writer(outbound, rx)));
        let queue = PeerQueue {
            sender: tx,
            queued,
            dropped: 0,
        };
        self.writers.insert(peer, queue);
    }

    /// Whether [`Transport::add_peer`] linked `peer` (or the
    /// configuration named it).
    pub fn has_peer(&self, peer: NodeId) -> bool {
        self.writers.contains_key(&peer)
    }

    /// The address actually listened on.
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// Queues `envelope` for `to`. Unknown peers are ignored (the protocol
    /// only addresses stream members, which configuration checks exist).
    pub fn send(&mut self, to: NodeId, envelope: Envelope) {
        self.send_frame(to, Frame::Envelope(envelope));
    }

    /// Queues an encoded replica message for `to`.
    pub fn send_replica(&mut self, to: NodeId, bytes: bytes::Bytes) {
        self.send_frame(to, Frame::Replica(bytes));
    }

    /// Queues an eventual-map message for `to`.
    pub fn send_eventual(&mut self, to: NodeId, bytes: bytes::Bytes) {
        self.send_frame(to, Frame::Eventual(bytes));
    }

    fn send_frame(&mut self, to: NodeId, frame: Frame) {
        let Some(queue) = self.writers.get_mut(&to) else {
            return;
        };
        if queue.queued.load(Ordering::Relaxed) >= OUTBOUND_QUEUE_MAX {
            queue.dropped += 1;
            if queue.dropped.is_power_of_two() {
                tracing::warn!(peer = %to, dropped = queue.dropped, "peer queue full; dropping messages");
            }
            return;
        }
        queue.queued.fetch_add(1, Ordering::Relaxed);
        let _ = queue.sender.send(frame);
    }

    /// Stops accepting, lets writers flush what is queued (bounded by
    /// `flush_timeout`), then stops them.
    pub async fn shutdown(mut self, flush_timeout: std::time::Duration) {
        self.accept_task.abort();
        // Closing the queues ends each writer once it has written the rest.
        self.writers.clear();
        let tasks = std::mem::take(&mut self.writer_tasks);
        let aborts: Vec<_> = tasks.iter().map(|t| t.abort_handle()).collect();
        let all = async {
            for task in tasks {
                let _ = task.await;
            }
        };
        if tokio::time::timeout(flush_timeout, all).await.is_err() {
            for abort in aborts {
                abort.abort();
            }
        }
    }
}

/// The queue of one peer's writer and how full it is.
struct PeerQueue {
    sender: mpsc::UnboundedSender<Frame>,
    /// Messages queued and not yet taken by the writer.
    queued: Arc<AtomicUsize>,
    /// Messages dropped because the queue was full.
    dropped: u64,
}

impl Drop for Transport {
    fn drop(&mut self) {
        self.accept_task.abort();
        for task in &self.writer_tasks {
            task.abort();
        }
    }
}
