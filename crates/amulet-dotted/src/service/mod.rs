//! A node's eventual maps, sans-IO (issue 23, the node): the replicas the
//! placements put on this node, the client operations the node
//! coordinates (reads from R replicas merged, writes coordinated at a
//! replica and acknowledged by W), replication, anti-entropy and strip
//! passes on timers, and the journal records that make it all durable.
//!
//! The runtime (the node) feeds it placements after every configuration
//! change, client requests, peer messages and the time, and carries out
//! its [`Output`]s **in order with one rule**: every `Journal` record is
//! synced before any `Send` or `Reply` that follows it is carried out
//! (group commit: append them all, sync once, then send). That is the
//! journal's two rules (`journal.rs`): a write is durable before it is
//! acknowledged or replicated, and a sync reply describes only synced
//! state. Nothing here reads a clock or draws an unseeded number.

pub mod batch;
pub mod durable;
pub mod message;
mod peer;
mod pending;
pub mod replica;
mod timers;

use crate::anti_entropy::SyncBudget;
use crate::dot::ReplicaId;
use crate::journal::Input;
use crate::object::Object;
use crate::placement::Placement;
use crate::version_vector::VersionVector;
use bytes::Bytes;
use durable::{Record, Replicas};
use message::{Message, To, Versioned};
use pending::Pending;
use replica::Replica;
use std::collections::{BTreeMap, VecDeque};

/// Timers and limits.
#[derive(Clone, Copy, Debug)]
pub struct ServiceConfig {
    /// Each replica asks one peer for anti-entropy this often.
    pub sync_interval_micros: u64,
    /// An anti-entropy answer leaves out dots younger than this (they are
    /// on their way by replication).
    pub sync_horizon_micros: u64,
    /// Each replica runs a strip pass this often (when it has keys to).
    pub strip_interval_micros: u64,
    /// Keys a strip pass visits.
    pub strip_keys: usize,
    /// A client request unanswered by its quorum this long fails.
    pub request_timeout_micros: u64,
    /// A node heard from within this long is preferred to coordinate.
    pub alive_micros: u64,
    /// What one anti-entropy reply may carry.
    pub budget: SyncBudget,
    /// A deliberately broken variant for the simulator's checkers (never
    /// set in production).
    pub bug: crate::node_state::DottedBug,
}

impl Default for ServiceConfig {
    fn default() -> ServiceConfig {
        ServiceConfig {
            sync_interval_micros: 200_000,
            sync_horizon_micros: 100_000,
            strip_interval_micros: 100_000,
            strip_keys: 1024,
            request_timeout_micros: 2_000_000,
            alive_micros: 1_500_000,
            budget: SyncBudget {
                objects: 1024,
                bytes: 1 << 20,
                dots: 1 << 16,
            },
            bug: crate::node_state::DottedBug::None,
        }
    }
}

/// What the runtime carries out, in order (see the module's rule).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Output {
    /// Append to the journal; synced before anything after it goes out.
    Journal(Record),
    /// A message's bytes for another node.
    Send {
        /// The node.
        to: u32,
        /// `Message::encode`.
        bytes: Vec<u8>,
    },
    /// The answer to the client request the runtime numbered `token`.
    Reply {
        /// The runtime's token.
        token: u64,
        /// Siblings and context, or why not.
        result: Result<Versioned, Refusal>,
    },
}

/// Why a client request was refused or failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// No eventual map of that name here.
    UnknownMap(String),
    /// The context does not decode.
    BadContext(String),
    /// `r` or `w` above the map's replica count.
    QuorumOutOfBounds {
        /// Asked for.
        asked: u32,
        /// Replicas per key.
        replicas: u32,
    },
    /// Fewer replicas than the quorum answered in time (a write may have
    /// taken effect at some).
    QuorumNotReached {
        /// Replicas that answered.
        answered: u32,
        /// The quorum.
        needed: u32,
    },
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refusal::UnknownMap(map) => write!(f, "no eventual map {map:?}"),
            Refusal::BadContext(why) => write!(f, "{why}"),
            Refusal::QuorumOutOfBounds { asked, replicas } => write!(
                f,
                "a quorum of {asked} on a map with {replicas} replicas per key"
            ),
            Refusal::QuorumNotReached { answered, needed } => write!(
                f,
                "{answered} of the {needed} replicas needed answered in time"
            ),
        }
    }
}

/// A client operation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Operation {
    /// Read `r` replicas (0: a majority).
    Get {
        /// Replicas to hear from.
        r: u32,
    },
    /// Write `value` (`None`: delete) superseding what `context` saw,
    /// held by `w` replicas before the answer (0: a majority).
    Write {
        /// The value.
        value: Option<Bytes>,
        /// The client's opaque context (empty: none).
        context: Vec<u8>,
        /// Replicas to hold it.
        w: u32,
    },
}

/// One local replica and its timers.
#[derive(Debug)]
struct Local {
    replica: Replica,
    /// When the next anti-entropy round and strip pass run (0: not
    /// scheduled yet; the first tick spreads them at random so replicas,
    /// new or recovered, neither ask nor stall the event loop in step).
    next_sync: u64,
    next_strip: u64,
    /// When a replacement asks for its next transfer page (again, if the
    /// last ask or its answer was lost).
    next_transfer: u64,
    /// Which peer the next anti-entropy round asks.
    peer_cursor: usize,
    /// Writes coordinated here since the start.
    coordinated: u64,
    sync_bytes_sent: u64,
    sync_bytes_received: u64,
    /// The clock's largest counters as they were, oldest first: the first
    /// one at least a horizon old bounds what an anti-entropy answer sends.
    horizons: VecDeque<(u64, BTreeMap<crate::dot::ReplicaId, u64>)>,
}

/// One replica's figures for `amulet status` and metrics.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReplicaStatus {
    /// The map.
    pub map: String,
    /// The replica.
    pub replica: ReplicaId,
    /// Objects stored.
    pub keys: u64,
    /// Bits of the node clock's bitmaps (words × 64).
    pub clock_bitmap_bits: u64,
    /// Dot-key map entries.
    pub dot_keys: u64,
    /// Keys with a context not stripped yet.
    pub non_stripped: u64,
    /// This replica's dots the least caught-up peer has not acknowledged.
    pub watermark_lag: u64,
    /// Writes coordinated.
    pub coordinated: u64,
    /// Anti-entropy bytes sent (asks and answers).
    pub sync_bytes_sent: u64,
    /// Anti-entropy answer bytes received.
    pub sync_bytes_received: u64,
    /// Stored objects with no value (the baseline's tombstones; 0 for
    /// DottedDB once stripped).
    pub tombstones: u64,
    /// Bytes of causality and anti-entropy metadata.
    pub metadata_bytes: u64,
}

/// A node's eventual maps.
#[derive(Debug)]
pub struct Service {
    me: u32,
    config: ServiceConfig,
    /// Every eventual map's placement, as of the newest configuration.
    placements: BTreeMap<String, Placement>,
    /// That configuration's version.
    config_version: u64,
    /// Messages for a map made by a configuration this node has not
    /// applied yet (a peer executed the creation first), with when they
    /// are given up: handled once the configuration arrives.
    held: Vec<(u64, u32, Message)>,
    /// The replicas here, by map.
    local: BTreeMap<String, (u64, BTreeMap<ReplicaId, Local>)>,
    pending: BTreeMap<u64, Pending>,
    next_op: u64,
    /// When each node was last heard from.
    heard: BTreeMap<u32, u64>,
    /// Messages to this node itself, handled before an input returns.
    loopback: VecDeque<Message>,
    out: Vec<Output>,
    /// Spreads the replicas' timers (splitmix64).
    seed: u64,
    /// Whether the cluster's configuration names this node's store as the
    /// one it knows. While not, no replica is made here: a store made
    /// afresh where one was lost must not remake the lost replicas under
    /// their old ids (the cluster gives them new ones once the node has
    /// registered the new store). Replicas recovered from this store keep
    /// running: their state is here.
    hosting: bool,
}

/// Loopback messages one input may cause at most (a livelock is a bug).
const LOOPBACK_MAX: usize = 1 << 20;

impl Service {
    /// The service of node `me` with `replicas` recovered from its disk;
    /// `epoch` differs on every start (the node's incarnation), so a late
    /// answer to a request of an earlier run never matches a new one.
    pub fn new(me: u32, epoch: u32, config: ServiceConfig, replicas: Replicas) -> Service {
        let local = replicas
            .maps
            .into_iter()
            .map(|(map, (created_at, states))| {
                let states = states
                    .into_iter()
                    .map(|(id, state)| (id, Local::new(state)))
                    .collect();
                (map, (created_at, states))
            })
            .collect();
        Service {
            me,
            config,
            placements: BTreeMap::new(),
            config_version: 0,
            held: Vec::new(),
            local,
            pending: BTreeMap::new(),
            next_op: u64::from(epoch) << 40,
            heard: BTreeMap::new(),
            loopback: VecDeque::new(),
            out: Vec::new(),
            seed: u64::from(me).wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ u64::from(epoch),
            hosting: true,
        }
    }

    /// Whether this node may make replicas (see `hosting`); true unless
    /// told otherwise. Takes effect at the next `set_placements`.
    pub fn set_hosting(&mut self, hosting: bool) {
        self.hosting = hosting;
    }

    /// The outputs since the last drain, in the order to carry them out.
    pub fn drain(&mut self) -> Vec<Output> {
        std::mem::take(&mut self.out)
    }

    /// Every replica's state, for a checkpoint.
    pub fn replicas(&self) -> Replicas {
        Replicas {
            maps: self
                .local
                .iter()
                .map(|(map, (created_at, states))| {
                    let states = states
                        .iter()
                        .map(|(id, l)| (*id, l.replica.clone()))
                        .collect();
                    (map.clone(), (*created_at, states))
                })
                .collect(),
        }
    }

    /// The placement of `map`, if it is an eventual map.
    pub fn placement(&self, map: &str) -> Option<&Placement> {
        self.placements.get(map)
    }

    /// Installs the eventual maps of configuration `version`: replicas
    /// this node now holds are made (journaled), ring changes applied, the
    /// replicas of dropped maps (or of an older map of the same name)
    /// dropped, and messages held for this configuration handled.
    pub fn set_placements(
        &mut self,
        now: u64,
        version: u64,
        placements: BTreeMap<String, Placement>,
    ) {
        if version < self.config_version {
            // An older configuration than one already applied (never
            // expected: the host's map only moves forward).
            return;
        }
        self.install(version, placements);
        self.config_version = version;
        let (ready, waiting): (Vec<_>, Vec<_>) = std::mem::take(&mut self.held)
            .into_iter()
            .partition(|(_, _, m)| {
                m.to()
                    .is_some_and(|to| to.created_at <= self.config_version)
            });
        self.held = waiting;
        for (_, from, message) in ready {
            self.handle(now, from, message, 0);
        }
        self.run_loopback(now);
    }

    fn install(&mut self, version: u64, placements: BTreeMap<String, Placement>) {
        // A map this node holds replicas of, made by a configuration newer
        // than `version`, is not gone: the node restarted and its host
        // replays the global stream from an older checkpoint. Dropping it
        // would make its replicas afresh under their old ids once the
        // configuration catches up, issuing dots twice (the fault suite's
        // kill families found it).
        let gone: Vec<String> = self
            .local
            .iter()
            .filter(|(map, (created_at, _))| {
                *created_at <= version
                    && placements.get(*map).map(|p| p.created_at) != Some(*created_at)
            })
            .map(|(map, _)| map.clone())
            .collect();
        for map in gone {
            self.local.remove(&map);
            self.out.push(Output::Journal(Record::Dropped { map }));
        }
        for (map, placement) in &placements {
            // A replica whose id the placement replaced (this node's store
            // was declared lost while this copy of it was away) goes: its
            // position has a new id, which starts from full transfers.
            if let Some((created_at, states)) = self.local.get_mut(map) {
                let members = placement.ring.members();
                let replaced: Vec<ReplicaId> = states
                    .keys()
                    .copied()
                    .filter(|id| *created_at == placement.created_at && !members.contains(id))
                    .collect();
                for replica in replaced {
                    states.remove(&replica);
                    self.out.push(Output::Journal(Record::DroppedReplica {
                        map: map.clone(),
                        replica,
                    }));
                }
            }
            for id in placement.held_by(self.me) {
                if !self.hosting
                    && !self
                        .local
                        .get(map)
                        .is_some_and(|(_, states)| states.contains_key(&id))
                {
                    continue;
                }
                let (_, states) = self
                    .local
                    .entry(map.clone())
                    .or_insert_with(|| (placement.created_at, BTreeMap::new()));
                match states.get_mut(&id) {
                    Some(local) => {
                        if local.replica.ring() != &placement.ring {
                            let input = Input::SetRing(placement.ring.clone());
                            local.replica.apply(&input);
                            self.out.push(Output::Journal(Record::Input {
                                map: map.clone(),
                                replica: id,
                                input,
                            }));
                        }
                    }
                    None => {
                        let replica = Replica::new(id, placement.ring.clone(), placement.merkle)
                            .with_bug(self.config.bug);
                        let local = Local::new(replica);
                        states.insert(id, local);
                        self.out.push(Output::Journal(Record::Created {
                            map: map.clone(),
                            created_at: placement.created_at,
                            replica: id,
                            ring: placement.ring.clone(),
                            merkle: placement.merkle,
                        }));
                    }
                }
            }
        }
        self.placements = placements;
    }

    /// A client's operation on `key` of `map`, answered by a `Reply` with
    /// `token` (maybe at once, maybe after peers answer or the timeout).
    pub fn submit(&mut self, now: u64, token: u64, map: &str, key: Bytes, operation: Operation) {
        let result = self.start(now, token, map, key, operation);
        if let Err(refusal) = result {
            self.out.push(Output::Reply {
                token,
                result: Err(refusal),
            });
        }
        self.run_loopback(now);
    }

    fn start(
        &mut self,
        now: u64,
        token: u64,
        map: &str,
        key: Bytes,
        operation: Operation,
    ) -> Result<(), Refusal> {
        let op = self.op();
        let timeout = self.config.request_timeout_micros;
        let placement = self
            .placements
            .get(map)
            .ok_or_else(|| Refusal::UnknownMap(map.to_string()))?;
        let replicas = placement.ring.replication() as u32;
        let quorum = |asked: u32| {
            if asked > replicas {
                Err(Refusal::QuorumOutOfBounds { asked, replicas })
            } else if asked == 0 {
                Ok(replicas / 2 + 1)
            } else {
                Ok(asked)
            }
        };
        let ids = placement.ring.replicas(&key);
        let to = |replica: ReplicaId| To {
            map: map.to_string(),
            created_at: placement.created_at,
            replica,
        };
        let mut sends = Vec::new();
        let pending = match operation {
            Operation::Get { r } => {
                let needed = quorum(r)?;
                for &replica in &ids {
                    let key = key.clone();
                    let message = Message::Fetch {
                        op,
                        to: to(replica),
                        key,
                    };
                    sends.push((placement.nodes[&replica], message));
                }
                Pending::Get {
                    token,
                    needed,
                    got: Vec::new(),
                    deadline: now + timeout,
                }
            }
            Operation::Write { value, context, w } => {
                let needed = quorum(w)?;
                let context = VersionVector::decode(&context)
                    .map_err(|e| Refusal::BadContext(e.to_string()))?;
                // A replica here coordinates; else the first replica whose
                // node was heard from lately (a node that died does not
                // take every write of its keys with it).
                let alive = |id: &ReplicaId| {
                    let node = placement.nodes[id];
                    node == self.me
                        || self
                            .heard
                            .get(&node)
                            .is_some_and(|&t| now.saturating_sub(t) <= self.config.alive_micros)
                };
                let here = ids
                    .iter()
                    .copied()
                    .find(|id| placement.nodes[id] == self.me);
                let chosen = here
                    .or_else(|| ids.iter().copied().find(alive))
                    .unwrap_or(ids[0]);
                let message = Message::Coordinate {
                    op,
                    to: to(chosen),
                    key,
                    value,
                    context,
                    w: needed,
                };
                sends.push((placement.nodes[&chosen], message));
                Pending::Forward {
                    token,
                    needed,
                    deadline: now + timeout + timeout / 4,
                }
            }
        };
        self.pending.insert(op, pending);
        for (node, message) in sends {
            self.send(node, message);
        }
        Ok(())
    }

    /// A message's bytes from node `from`; bytes that do not decode are
    /// refused (and change nothing).
    pub fn on_message(&mut self, now: u64, from: u32, bytes: &[u8]) -> Result<(), String> {
        let message = Message::decode(bytes)?;
        self.heard.insert(from, now);
        self.handle(now, from, message, bytes.len() as u64);
        self.run_loopback(now);
        Ok(())
    }

    /// Every local replica's figures.
    pub fn status(&self) -> Vec<ReplicaStatus> {
        let mut all = Vec::new();
        for (map, (_, states)) in &self.local {
            for (id, local) in states {
                let replica = &local.replica;
                let mut status = ReplicaStatus {
                    map: map.clone(),
                    replica: *id,
                    keys: replica.stored_keys() as u64,
                    clock_bitmap_bits: 0,
                    dot_keys: 0,
                    non_stripped: 0,
                    watermark_lag: 0,
                    coordinated: local.coordinated,
                    sync_bytes_sent: local.sync_bytes_sent,
                    sync_bytes_received: local.sync_bytes_received,
                    tombstones: replica.tombstones() as u64,
                    metadata_bytes: replica.metadata_bytes() as u64,
                };
                if let Some(state) = replica.dotted() {
                    let peers = state.ring().peers(*id);
                    let own = state.clock().base(*id);
                    let acknowledged = state.acknowledged_by_peers(&peers);
                    status.clock_bitmap_bits = state.clock().bitmap_words() as u64 * 64;
                    status.dot_keys = state.dot_keys_len() as u64;
                    status.non_stripped = state.non_stripped_len() as u64;
                    status.watermark_lag = own.saturating_sub(acknowledged);
                }
                all.push(status);
            }
        }
        all
    }

    /// The local replica `id` of `map` (for tests and checkers).
    pub fn replica(&self, map: &str, id: ReplicaId) -> Option<&Replica> {
        self.local
            .get(map)
            .and_then(|(_, states)| states.get(&id))
            .map(|l| &l.replica)
    }

    fn op(&mut self) -> u64 {
        self.next_op += 1;
        self.next_op
    }

    fn send(&mut self, to: u32, message: Message) {
        if to == self.me {
            self.loopback.push_back(message);
        } else {
            self.out.push(Output::Send {
                to,
                bytes: message.encode(),
            });
        }
    }

    fn run_loopback(&mut self, now: u64) {
        let mut handled = 0;
        while let Some(message) = self.loopback.pop_front() {
            handled += 1;
            assert!(handled < LOOPBACK_MAX, "loopback livelock");
            self.handle(now, self.me, message, 0);
        }
    }

    /// The local replica a message is for, if this node holds it for the
    /// same map (not an older or newer one of the same name).
    fn local_mut(&mut self, to: &To) -> Option<&mut Local> {
        let (created_at, states) = self.local.get_mut(&to.map)?;
        if *created_at != to.created_at {
            return None;
        }
        states.get_mut(&to.replica)
    }

    fn journal(&mut self, to: &To, input: Input) {
        self.out.push(Output::Journal(Record::Input {
            map: to.map.clone(),
            replica: to.replica,
            input,
        }));
    }
}

impl Local {
    fn new(replica: Replica) -> Local {
        Local {
            replica,
            coordinated: 0,
            next_sync: 0,
            next_strip: 0,
            next_transfer: 0,
            peer_cursor: 0,
            sync_bytes_sent: 0,
            sync_bytes_received: 0,
            horizons: VecDeque::new(),
        }
    }

    /// Takes a snapshot of the clock's largest counters every quarter
    /// horizon and forgets those older than the newest one past it.
    fn remember_horizon(&mut self, now: u64, horizon: u64) {
        let Replica::Dotted(state) = &self.replica else {
            return;
        };
        let due = self
            .horizons
            .back()
            .is_none_or(|(at, _)| now >= at + (horizon / 4).max(1));
        if due {
            self.horizons.push_back((now, state.clock().maxes()));
        }
        while self.horizons.len() >= 2 && self.horizons[1].0 + horizon <= now {
            self.horizons.pop_front();
        }
    }

    /// What an answer may send now: the newest snapshot at least
    /// `horizon` old (none yet: nothing).
    fn horizon(&self, now: u64, horizon: u64) -> BTreeMap<crate::dot::ReplicaId, u64> {
        match self.horizons.front() {
            Some((at, maxes)) if at + horizon <= now => maxes.clone(),
            _ => BTreeMap::new(),
        }
    }
}

/// What a client gets for `object`: its values and the context covering
/// them.
fn versioned(object: &Object) -> Versioned {
    Versioned {
        values: object.values(),
        context: object.read_context().encode(),
    }
}

pub(super) fn next_u64(seed: &mut u64) -> u64 {
    *seed = seed.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *seed;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests;
