//! The event loop's eventual maps: the sans-IO service
//! (`amulet_dotted::Service`) fed with the configuration's placements,
//! client requests, `Eventual` frames and ticks, and its outputs carried
//! out with the rule it states: journal records synced (one group commit)
//! before any message or reply that follows them goes out.

use crate::eventual_store::EventualStore;
use crate::transport::Transport;
use amulet_dmap::{MapCommand, MapReply};
use amulet_dotted::service::batch::Batch;
use amulet_dotted::service::message::Versioned;
use amulet_dotted::service::{Operation, Output, ReplicaStatus, Service};
use amulet_smr::{Body, ClientReply, ClientRequest, Layout, PartitionMap};
use amulet_types::{NodeId, TimeMicros};
use bytes::Bytes;
use std::collections::BTreeMap;
use tokio::sync::oneshot;

/// A registration of this node's store unanswered this long is sent again.
const REGISTER_RETRY_MICROS: u64 = 1_000_000;
/// Unsynced journal bytes that are synced even with nothing to send.
const PENDING_BYTES_SYNC: usize = 1 << 20;
/// How long a request for a map this node does not know yet waits for
/// its configuration to catch up (a map created a moment ago elsewhere).
const UNKNOWN_MAP_WAIT_MICROS: u64 = 1_000_000;

/// How an eventual request ended, as the client API sees it.
#[derive(Debug)]
pub enum EventualAnswer {
    /// Siblings and context.
    Done(Versioned),
    /// No map of that name.
    NotFound(String),
    /// The map is ordered (a DMap map or a log).
    NotEventual(String),
    /// The service refused it or it failed.
    Refused(amulet_dotted::Refusal),
}

/// A client's eventual request.
pub(crate) struct EventualRequest {
    pub map: String,
    pub key: Bytes,
    pub operation: Operation,
    pub reply: oneshot::Sender<EventualAnswer>,
}

pub(crate) struct Eventual {
    service: Service,
    store: EventualStore,
    me: NodeId,
    /// Whether the partition map names this node's store (only then does
    /// the service make replicas here).
    hosting: bool,
    /// The registration in flight: when it was sent, and its answer.
    registering: Option<(TimeMicros, oneshot::Receiver<ClientReply<MapReply>>)>,
    waiters: BTreeMap<u64, oneshot::Sender<EventualAnswer>>,
    next_token: u64,
    /// Requests for maps not in this node's configuration yet.
    deferred: Vec<(TimeMicros, EventualRequest)>,
    /// The configuration version whose placements the service has.
    placements_version: u64,
    /// Journal bytes that start a checkpoint (`[eventual]`).
    checkpoint_journal_bytes: u64,
}

impl Eventual {
    pub(crate) fn new(
        me: NodeId,
        mut service: Service,
        store: EventualStore,
        checkpoint_journal_bytes: u64,
    ) -> Eventual {
        service.set_hosting(false);
        Eventual {
            service,
            store,
            me,
            hosting: false,
            registering: None,
            waiters: BTreeMap::new(),
            next_token: 0,
            deferred: Vec::new(),
            placements_version: 0,
            checkpoint_journal_bytes,
        }
    }

    /// A client request: answered at once when the map is unknown or not
    /// eventual, else handed to the service.
    pub(crate) fn submit(
        &mut self,
        now: TimeMicros,
        map: Option<&PartitionMap>,
        request: EventualRequest,
    ) {
        match map.and_then(|m| m.keyspaces.get(&request.map)) {
            None => self
                .deferred
                .push((TimeMicros(now.0 + UNKNOWN_MAP_WAIT_MICROS), request)),
            Some(Layout::Eventual(_)) => {
                let token = self.next_token;
                self.next_token += 1;
                self.waiters.insert(token, request.reply);
                self.service
                    .submit(now.0, token, &request.map, request.key, request.operation);
            }
            Some(_) => {
                let _ = request.reply.send(EventualAnswer::NotEventual(request.map));
            }
        }
    }

    /// A peer's `Eventual` frame.
    pub(crate) fn on_frame(&mut self, now: TimeMicros, from: NodeId, bytes: &[u8]) {
        if let Err(error) = self.service.on_message(now.0, from.0, bytes) {
            tracing::warn!(peer = %from, %error, "undecodable eventual message dropped");
        }
    }

    /// Timers; deferred requests whose wait ended are not found.
    pub(crate) fn tick(&mut self, now: TimeMicros) {
        self.service.tick(now.0);
        let (expired, waiting): (Vec<_>, Vec<_>) = std::mem::take(&mut self.deferred)
            .into_iter()
            .partition(|(deadline, _)| *deadline <= now);
        self.deferred = waiting;
        for (_, request) in expired {
            let _ = request.reply.send(EventualAnswer::NotFound(request.map));
        }
        // Clients that gave up: their answers have nowhere to go.
        self.waiters.retain(|_, w| !w.is_closed());
    }

    /// After the host's flush: a new configuration's placements, and the
    /// deferred requests retried against it. Returns the registration of
    /// this node's store to send through the global stream, while the map
    /// does not name it (again after `REGISTER_RETRY_MICROS` unanswered).
    pub(crate) fn after_flush(
        &mut self,
        now: TimeMicros,
        map: Option<&PartitionMap>,
    ) -> Option<ClientRequest<MapCommand>> {
        let map = map?;
        let incarnation = self.store.incarnation();
        let recorded = map.eventual_stores.get(&self.me).copied();
        let hosting = recorded == Some(incarnation);
        if map.version.0 != self.placements_version || hosting != self.hosting {
            if hosting != self.hosting {
                tracing::info!(
                    incarnation,
                    ?recorded,
                    hosting,
                    "eventual store registration"
                );
            }
            self.hosting = hosting;
            self.service.set_hosting(hosting);
            self.placements_version = map.version.0;
            self.service
                .set_placements(now.0, map.version.0, map.eventual_placements());
            let deferred = std::mem::take(&mut self.deferred);
            for (deadline, request) in deferred {
                if map.keyspaces.contains_key(&request.map) {
                    self.submit(now, Some(map), request);
                } else {
                    self.deferred.push((deadline, request));
                }
            }
        }
        if hosting {
            self.registering = None;
            return None;
        }
        if let Some((sent, answer)) = &mut self.registering {
            let answered = !matches!(answer.try_recv(), Err(oneshot::error::TryRecvError::Empty));
            if !answered && now.since(*sent) < REGISTER_RETRY_MICROS {
                return None;
            }
        }
        if recorded.is_some() {
            tracing::warn!(
                incarnation,
                ?recorded,
                "this node's eventual store is not the one the cluster knows (lost or replaced): \
                 registering it, which gives its eventual replicas new ids"
            );
        }
        Some(ClientRequest {
            map_version: map.version,
            session: None,
            body: Body::App(MapCommand::RegisterEventualStore {
                node: self.me.0,
                incarnation,
            }),
            // The node's own request: not a client's, judged by nobody.
            principal: None,
        })
    }

    /// The registration `after_flush` asked for was submitted.
    pub(crate) fn registering(
        &mut self,
        now: TimeMicros,
        answer: oneshot::Receiver<ClientReply<MapReply>>,
    ) {
        self.registering = Some((now, answer));
    }

    /// Carries out the service's outputs: records appended and synced
    /// once, then messages and replies in order.
    ///
    /// A batch with no message or reply (a strip pass, an anti-entropy
    /// answer merged) is appended but not synced: nothing outside this
    /// node has seen its effect, and whatever later makes it visible goes
    /// out behind the next group commit, which syncs these records first.
    /// A crash loses at most such an invisible suffix. This keeps
    /// background work off the fsync path the writes wait on.
    pub(crate) fn carry_out(&mut self, transport: Option<&mut Transport>) -> anyhow::Result<()> {
        let batch = Batch::split(self.service.drain());
        if batch.is_empty() {
            return Ok(());
        }
        for record in &batch.records {
            self.store.append(record);
        }
        if self.store.dirty()
            && (batch.must_sync() || self.store.pending_bytes() >= PENDING_BYTES_SYNC)
        {
            self.store.sync()?;
        }
        let mut transport = transport;
        for output in batch.visible {
            match output {
                Output::Journal(_) => unreachable!("records are split off"),
                Output::Send { to, bytes } => {
                    if let Some(t) = transport.as_deref_mut() {
                        t.send_eventual(NodeId(to), Bytes::from(bytes));
                    }
                }
                Output::Reply { token, result } => {
                    if let Some(waiter) = self.waiters.remove(&token) {
                        let answer = match result {
                            Ok(versioned) => EventualAnswer::Done(versioned),
                            Err(refusal) => EventualAnswer::Refused(refusal),
                        };
                        let _ = waiter.send(answer);
                    }
                }
            }
        }
        self.store.poll_checkpoint()?;
        if self.store.journal_bytes() >= self.checkpoint_journal_bytes
            && !self.store.checkpoint_in_flight()
        {
            // The copy is taken here, between batches; encoding, writing
            // and syncing it run on the store's thread.
            #[allow(clippy::disallowed_methods)] // measures the write, not protocol time
            let started = std::time::Instant::now();
            let replicas = self.service.replicas();
            let copy_micros = started.elapsed().as_micros() as u64;
            self.store.checkpoint_in_background(replicas)?;
            tracing::debug!(
                copy_micros,
                loop_micros = started.elapsed().as_micros() as u64,
                "eventual checkpoint started"
            );
        }
        Ok(())
    }

    /// Folds the journal into a checkpoint on this thread, after any
    /// background one (a clean stop, so a restart replays nothing).
    pub(crate) fn checkpoint(&mut self) -> anyhow::Result<()> {
        let replicas = self.service.replicas();
        self.store.checkpoint(&replicas)
    }

    /// Every local replica's figures.
    pub(crate) fn status(&self) -> Vec<ReplicaStatus> {
        self.service.status()
    }
}
