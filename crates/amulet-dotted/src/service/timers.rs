//! The service's timers: requests past their deadline fail, held
//! messages are given up, and each replica runs anti-entropy with one
//! peer (clock exchange for DottedDB, a Merkle-tree exchange for the
//! baseline) and strip passes on its own schedule.

use super::durable::Record;
use super::message::{Failed, Message, To};
use super::peer::back_to;
use super::pending::Pending;
use super::replica::Replica;
use super::{next_u64, Output, Refusal, Service};
use crate::dot::ReplicaId;
use crate::journal::Input;

/// A replacement asks again for a transfer page unanswered this long.
const TRANSFER_RETRY_MICROS: u64 = 200_000;

/// A replica's anti-entropy round's (or transfer's) next message.
enum Ask {
    Sync(crate::anti_entropy::SyncRequest),
    Exchange(crate::merkle::ExchangeRequest),
    /// A replacement's next full-transfer page.
    Transfer(crate::replacement::TransferRequest),
}

impl Service {
    /// Timers: requests past their deadline fail; replicas due for
    /// anti-entropy ask a peer; replicas due for a strip pass run one.
    pub fn tick(&mut self, now: u64) {
        let expired: Vec<u64> = self
            .pending
            .iter()
            .filter(|(_, p)| p.deadline() <= now)
            .map(|(op, _)| *op)
            .collect();
        for op in expired {
            match self.pending.remove(&op).expect("listed") {
                Pending::Get {
                    token, needed, got, ..
                } => {
                    let answered = got.len() as u32;
                    let result = Err(Refusal::QuorumNotReached { answered, needed });
                    self.out.push(Output::Reply { token, result });
                }
                Pending::Forward { token, needed, .. } => {
                    let answered = 0;
                    let result = Err(Refusal::QuorumNotReached { answered, needed });
                    self.out.push(Output::Reply { token, result });
                }
                Pending::Write {
                    node,
                    op,
                    acks,
                    needed,
                    ..
                } => {
                    let failed = Failed::QuorumNotReached {
                        answered: acks + 1,
                        needed: needed + 1,
                    };
                    self.send(
                        node,
                        Message::Coordinated {
                            op,
                            result: Err(failed),
                        },
                    );
                }
            }
        }
        // Held messages whose configuration never came: a forwarded write
        // is told there is no replica here; the rest are dropped (their
        // senders time out or ask again).
        let (expired, held): (Vec<_>, Vec<_>) = std::mem::take(&mut self.held)
            .into_iter()
            .partition(|(deadline, _, _)| *deadline <= now);
        self.held = held;
        for (_, from, message) in expired {
            if let Message::Coordinate { op, .. } = message {
                let result = Err(Failed::NoReplica);
                self.send(from, Message::Coordinated { op, result });
            }
        }
        let mut asks = Vec::new();
        for (map, (created_at, states)) in &mut self.local {
            for (id, local) in states.iter_mut() {
                local.remember_horizon(now, self.config.sync_horizon_micros);
                if local.next_sync == 0 {
                    let (sync, strip) = (
                        self.config.sync_interval_micros.max(1),
                        self.config.strip_interval_micros.max(1),
                    );
                    local.next_sync = now + next_u64(&mut self.seed) % sync;
                    local.next_strip = now + next_u64(&mut self.seed) % strip;
                }
                if now >= local.next_sync {
                    local.next_sync = now + self.config.sync_interval_micros;
                    let peers: Vec<ReplicaId> = local
                        .replica
                        .ring()
                        .peers(*id)
                        .into_iter()
                        .filter(|p| p != id)
                        .collect();
                    if !peers.is_empty() {
                        let peer = peers[local.peer_cursor % peers.len()];
                        local.peer_cursor = local.peer_cursor.wrapping_add(1);
                        let ask = match &mut local.replica {
                            Replica::Dotted(state) => Some(Ask::Sync(state.sync_request(peer))),
                            Replica::Merkle(node) => node.start_exchange(peer).map(Ask::Exchange),
                        };
                        if let Some(ask) = ask {
                            asks.push((map.clone(), *created_at, *id, peer, ask));
                        }
                    }
                }
                if now >= local.next_transfer {
                    if let Some((peer, request)) = local
                        .replica
                        .dotted()
                        .and_then(|state| state.transfer_request())
                    {
                        local.next_transfer = now + TRANSFER_RETRY_MICROS;
                        asks.push((map.clone(), *created_at, *id, peer, Ask::Transfer(request)));
                    }
                }
                if now >= local.next_strip {
                    local.next_strip = now + self.config.strip_interval_micros;
                    let due = local
                        .replica
                        .dotted()
                        .is_some_and(|state| state.non_stripped_len() > 0);
                    if due {
                        let input = Input::Strip {
                            max_keys: self.config.strip_keys,
                        };
                        local.replica.apply(&input);
                        self.out.push(Output::Journal(Record::Input {
                            map: map.clone(),
                            replica: *id,
                            input,
                        }));
                    }
                }
            }
        }
        for (map, created_at, asker, peer, ask) in asks {
            let Some(node) = self.placements.get(&map).and_then(|p| p.node_of(peer)) else {
                continue;
            };
            let to = To {
                map,
                created_at,
                replica: peer,
            };
            let from = back_to(&to, asker);
            let message = match ask {
                Ask::Sync(request) => Message::SyncAsk { to, request },
                Ask::Exchange(request) => Message::ExchangeAsk { to, request },
                Ask::Transfer(request) => Message::TransferAsk { to, request },
            };
            self.send_anti_entropy(node, &from, message);
        }
        self.run_loopback(now);
    }
}
