//! What a node does with another node's message: fetches, forwarded
//! writes coordinated at a local replica, replication, and anti-entropy
//! (clock exchange for DottedDB, a Merkle-tree exchange for the
//! baseline).

use super::message::{Failed, Message, To};
use super::pending::Pending;
use super::replica::Replica;
use super::{versioned, Output, Refusal, Service};
use crate::dot::ReplicaId;
use crate::journal::Input;
use crate::merkle::ExchangeReply;
use crate::object::Object;
use crate::version_vector::VersionVector;
use bytes::Bytes;

impl Service {
    pub(super) fn handle(&mut self, now: u64, from: u32, message: Message, size: u64) {
        // Held: a message for a map made by a configuration not applied
        // here yet, or for a replica placed here that this node may not
        // make until the configuration names its store.
        let held = message.to().is_some_and(|to| {
            to.created_at > self.config_version || (!self.hosting && self.awaits_hosting(to))
        });
        if held {
            let deadline = now + self.config.request_timeout_micros;
            self.held.push((deadline, from, message));
            return;
        }
        match message {
            Message::Fetch { op, to, key } => {
                let object = self
                    .local_mut(&to)
                    .filter(|l| l.replica.replicates(&key))
                    .map(|l| l.replica.fetch(&key));
                self.send(from, Message::Fetched { op, object });
            }
            Message::Fetched { op, object } => {
                if let Some(Pending::Get { got, needed, .. }) = self.pending.get_mut(&op) {
                    let Some(object) = object else { return };
                    got.push(object);
                    if got.len() as u32 >= *needed {
                        let Some(Pending::Get { token, got, .. }) = self.pending.remove(&op) else {
                            unreachable!("matched above")
                        };
                        let merged = got.iter().fold(Object::new(), |acc, o| acc.merge(o));
                        self.out.push(Output::Reply {
                            token,
                            result: Ok(versioned(&merged)),
                        });
                    }
                }
            }
            Message::Coordinate {
                op,
                to,
                key,
                value,
                context,
                w,
            } => self.coordinate(now, from, op, to, key, value, context, w),
            Message::Coordinated { op, result } => {
                if let Some(Pending::Forward { token, needed, .. }) = self.pending.get(&op) {
                    let (token, needed) = (*token, *needed);
                    self.pending.remove(&op);
                    let result = result.map_err(|failed| match failed {
                        Failed::QuorumNotReached { answered, needed } => {
                            Refusal::QuorumNotReached { answered, needed }
                        }
                        Failed::NoReplica => Refusal::QuorumNotReached {
                            answered: 0,
                            needed,
                        },
                    });
                    self.out.push(Output::Reply { token, result });
                }
            }
            Message::Replicate {
                op,
                to,
                key,
                object,
                skips,
            } => {
                let Some(local) = self.local_mut(&to) else {
                    return;
                };
                if !local.replica.replicates(&key) {
                    return;
                }
                let input = Input::Update { key, object };
                local.replica.apply(&input);
                local.replica.check();
                self.journal(&to, input);
                if let Some(skips) = skips {
                    let input = Input::Skips(skips);
                    if let Some(local) = self.local_mut(&to) {
                        local.replica.apply(&input);
                        local.replica.check();
                    }
                    self.journal(&to, input);
                }
                self.send(from, Message::Replicated { op });
            }
            Message::Replicated { op } => {
                if let Some(Pending::Write { acks, needed, .. }) = self.pending.get_mut(&op) {
                    *acks += 1;
                    if *acks >= *needed {
                        let Some(Pending::Write {
                            node,
                            op,
                            versioned,
                            ..
                        }) = self.pending.remove(&op)
                        else {
                            unreachable!("matched above")
                        };
                        let result = Ok(versioned);
                        self.send(node, Message::Coordinated { op, result });
                    }
                }
            }
            Message::SyncAsk { to, request } => {
                let (budget, horizon) = (self.config.budget, self.config.sync_horizon_micros);
                let Some(local) = self.local_mut(&to) else {
                    return;
                };
                let horizon = local.horizon(now, horizon);
                let Replica::Dotted(state) = &local.replica else {
                    return;
                };
                let reply = state.answer_sync_below(&request, budget, Some(&horizon));
                let back = back_to(&to, request.from);
                self.send_anti_entropy(from, &to, Message::SyncAnswer { to: back, reply });
                let input = Input::PeerBases {
                    peer: request.from,
                    bases: request.bases(),
                };
                if let Some(local) = self.local_mut(&to) {
                    local.replica.apply(&input);
                    self.journal(&to, input);
                }
            }
            Message::SyncAnswer { to, reply } => {
                let Some(local) = self.local_mut(&to) else {
                    return;
                };
                if !matches!(local.replica, Replica::Dotted(_)) {
                    return;
                }
                local.sync_bytes_received += size;
                let input = Input::ApplySync(reply);
                local.replica.apply(&input);
                local.replica.check();
                self.journal(&to, input);
            }
            Message::ExchangeAsk { to, request } => {
                let Some(Replica::Merkle(node)) = self.local_mut(&to).map(|l| &mut l.replica)
                else {
                    return;
                };
                let reply = node.answer_exchange(&request);
                let back = back_to(&to, request.from());
                let responder = to.replica;
                let message = Message::ExchangeAnswer {
                    to: back,
                    from: responder,
                    reply,
                };
                self.send_anti_entropy(from, &to, message);
            }
            Message::ExchangeAnswer {
                to,
                from: peer,
                reply,
            } => self.on_exchange_answer(from, to, peer, reply, size),
            Message::TransferAsk { to, request } => {
                let budget = self.config.budget;
                let Some(Replica::Dotted(state)) = self.local_mut(&to).map(|l| &l.replica) else {
                    return;
                };
                // None while the asker is not on this replica's ring yet:
                // it asks again.
                let Some(page) = state.answer_transfer(&request, budget) else {
                    return;
                };
                let back = back_to(&to, request.from);
                self.send_anti_entropy(from, &to, Message::TransferAnswer { to: back, page });
            }
            Message::TransferAnswer { to, page } => {
                let Some(local) = self.local_mut(&to) else {
                    return;
                };
                if !matches!(local.replica, Replica::Dotted(_)) {
                    return;
                }
                local.sync_bytes_received += size;
                let input = Input::ApplyTransfer(page);
                local.replica.apply(&input);
                local.replica.check();
                // The next page at the next tick.
                local.next_transfer = 0;
                self.journal(&to, input);
            }
        }
    }

    /// Whether `to` is a replica placed on this node and not made yet.
    fn awaits_hosting(&self, to: &To) -> bool {
        self.placements.get(&to.map).is_some_and(|p| {
            p.created_at == to.created_at && p.held_by(self.me).contains(&to.replica)
        }) && !self
            .local
            .get(&to.map)
            .is_some_and(|(_, states)| states.contains_key(&to.replica))
    }

    /// Sends an anti-entropy message (an ask or an answer) on behalf of
    /// the local replica `to`, counting its bytes: both directions count,
    /// for DottedDB's clocks as for the baseline's hashes.
    pub(super) fn send_anti_entropy(&mut self, node: u32, to: &To, message: Message) {
        let bytes = message.encode();
        if let Some(local) = self.local_mut(to) {
            local.sync_bytes_sent += bytes.len() as u64;
        }
        if node == self.me {
            self.loopback.push_back(message);
        } else {
            self.out.push(Output::Send { to: node, bytes });
        }
    }

    /// A step of a Merkle exchange this node's replica drives: objects
    /// are merged (each journaled as an update, as replication's are), and
    /// the next step, if any, goes to the peer.
    fn on_exchange_answer(
        &mut self,
        node: u32,
        to: To,
        peer: ReplicaId,
        reply: ExchangeReply,
        size: u64,
    ) {
        let Some(local) = self.local_mut(&to) else {
            return;
        };
        local.sync_bytes_received += size;
        if !matches!(local.replica, Replica::Merkle(_)) {
            return;
        }
        let next = match reply {
            ExchangeReply::Objects { objects } => {
                let mut inputs = Vec::new();
                for (key, object) in objects {
                    if local.replica.replicates(&key) {
                        let input = Input::Update { key, object };
                        local.replica.apply(&input);
                        inputs.push(input);
                    }
                }
                if let Replica::Merkle(merkle) = &mut local.replica {
                    let done = ExchangeReply::Objects {
                        objects: Vec::new(),
                    };
                    let _ = merkle.on_exchange_reply(&done);
                }
                for input in inputs {
                    self.journal(&to, input);
                }
                None
            }
            other => match &mut local.replica {
                Replica::Merkle(merkle) => merkle.on_exchange_reply(&other),
                Replica::Dotted(_) => None,
            },
        };
        if let Some(request) = next {
            let ask = Message::ExchangeAsk {
                to: back_to(&to, peer),
                request,
            };
            self.send_anti_entropy(node, &to, ask);
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn coordinate(
        &mut self,
        now: u64,
        from: u32,
        op: u64,
        to: To,
        key: Bytes,
        value: Option<Bytes>,
        context: VersionVector,
        w: u32,
    ) {
        let Some(local) = self.local_mut(&to) else {
            self.send(
                from,
                Message::Coordinated {
                    op,
                    result: Err(Failed::NoReplica),
                },
            );
            return;
        };
        let object = match local.replica.coordinate(&key, value.clone(), &context) {
            Ok(object) => object,
            Err(_) => {
                // The placement moved the key away since the forwarder
                // chose this replica.
                let result = Err(Failed::NoReplica);
                self.send(from, Message::Coordinated { op, result });
                return;
            }
        };
        local.replica.check();
        local.coordinated += 1;
        let ring = local.replica.ring().clone();
        // The dot just issued (the baseline sends no hints).
        let own_dot = local
            .replica
            .dotted()
            .map(|s| crate::dot::Dot::new(to.replica, s.clock().base(to.replica)));
        let hints: Vec<(ReplicaId, Option<crate::skips::Skips>)> = ring
            .replicas(&key)
            .into_iter()
            .filter(|r| *r != to.replica)
            .map(|r| (r, own_dot.and_then(|d| local.replica.skips_for(r, d))))
            .collect();
        let input = Input::Coordinate {
            key: key.clone(),
            value,
            context,
        };
        self.journal(&to, input);
        let reply = versioned(&object);
        let needed = w.saturating_sub(1);
        let replicate_op = self.op();
        if needed == 0 {
            let result = Ok(reply);
            self.send(from, Message::Coordinated { op, result });
        } else {
            self.pending.insert(
                replicate_op,
                Pending::Write {
                    node: from,
                    op,
                    acks: 0,
                    needed,
                    versioned: reply,
                    deadline: now + self.config.request_timeout_micros,
                },
            );
        }
        let nodes = self
            .placements
            .get(&to.map)
            .map(|p| p.nodes.clone())
            .unwrap_or_default();
        for (replica, skips) in hints {
            let Some(&node) = nodes.get(&replica) else {
                continue;
            };
            let message = Message::Replicate {
                op: replicate_op,
                to: To {
                    map: to.map.clone(),
                    created_at: to.created_at,
                    replica,
                },
                key: key.clone(),
                object: object.clone(),
                skips,
            };
            self.send(node, message);
        }
    }
}

/// The same map's replica `replica` (answers go to the asker's replica).
pub(super) fn back_to(to: &To, replica: ReplicaId) -> To {
    To {
        map: to.map.clone(),
        created_at: to.created_at,
        replica,
    }
}
