//! The client edge: a request received at this replica is checked (sizes,
//! session fields, map version, keyspace) and proposed on the stream that
//! orders it, the partition's own stream or the global stream (DMap
//! §III-B), or refused at once without being ordered.

use super::{ClientReply, ClientRequest, Output, Replica, RequestId, PROPOSED_MAX};
use crate::{
    Body, CommandEnvelope, Keys, KeyspaceChange, Origin, PartitionMapError, Placement, Refusal,
    StateMachine,
};
use amulet_types::{PartitionId, StreamId};

impl<S: StateMachine> Replica<S> {
    /// A client request received at this replica: checked at the edge, then
    /// proposed on the stream that orders it. The reply comes later as an
    /// [`Output::Reply`] with the returned id (or at once for a refusal).
    pub fn submit(&mut self, now_micros: u64, request: ClientRequest<S::Command>) -> RequestId {
        let id = self.take_request(now_micros, request);
        self.debug_check_invariants();
        id
    }

    fn take_request(&mut self, now_micros: u64, request: ClientRequest<S::Command>) -> RequestId {
        self.now_micros = self.now_micros.max(now_micros);
        let id = self.next_request;
        self.next_request += 1;
        let routed = self.route_request(&request);
        if request.map_version < self.map.version && matches!(request.body, Body::App(_)) {
            let refused = matches!(routed, Err(ClientReply::StaleMap(_)));
            self.fence_key_verdicts[usize::from(refused)] += 1;
        }
        match routed {
            Ok(stream) if self.answer_reads_locally && stream == self.stream() => {
                if let Body::App(command) = &request.body {
                    if S::is_read_only(command) {
                        let placement = S::placement(command);
                        let reply = ClientReply::Done(self.execute_here(command, &placement, None));
                        self.outputs.push(Output::Reply { request: id, reply });
                        return id;
                    }
                }
                self.propose(id, stream, now_micros, request);
            }
            Ok(stream) => self.propose(id, stream, now_micros, request),
            Err(reply) => self.outputs.push(Output::Reply { request: id, reply }),
        }
        id
    }

    /// Proposes a request on the stream that orders it.
    fn propose(
        &mut self,
        id: RequestId,
        stream: StreamId,
        now_micros: u64,
        request: ClientRequest<S::Command>,
    ) {
        let barrier = matches!(request.body, Body::Reconfigure(_));
        if let (true, Body::Access(change)) = (self.access_at_edge, &request.body) {
            // Broken on purpose (the simulator's checker must catch it):
            // the change takes effect here before it is ordered.
            let mut access = (*self.access).clone();
            if access.apply(change).is_ok() {
                self.access = std::sync::Arc::new(access);
            }
        }
        let envelope = CommandEnvelope {
            origin: Origin {
                node: self.config.node,
                incarnation: self.config.incarnation,
                request: id,
            },
            timestamp_micros: now_micros,
            map_version: request.map_version,
            session: request.session,
            body: request.body,
            principal: request.principal,
        };
        self.outputs.push(Output::Propose {
            stream,
            value: envelope.encode(),
            barrier,
        });
        self.proposed.insert(id, stream);
        while self.proposed.len() > PROPOSED_MAX {
            self.proposed.pop_first();
        }
    }

    /// The stream a request goes on, or the refusal.
    fn route_request(
        &self,
        request: &ClientRequest<S::Command>,
    ) -> Result<StreamId, ClientReply<S::Reply>> {
        let command = match &request.body {
            Body::App(command) => command,
            Body::OpenSession { lease_micros } | Body::KeepAlive { lease_micros } => {
                if request.session.is_none() {
                    return Err(ClientReply::Refused(Refusal::SessionIdMissing));
                }
                if *lease_micros == 0 || *lease_micros > self.config.session_lease_micros_max {
                    return Err(ClientReply::Refused(Refusal::SessionLeaseOutOfBounds {
                        lease_micros: *lease_micros,
                        max_micros: self.config.session_lease_micros_max,
                    }));
                }
                return Ok(self.map.global_stream);
            }
            Body::CloseSession => {
                if request.session.is_none() {
                    return Err(ClientReply::Refused(Refusal::CloseWithoutSession));
                }
                return Ok(self.map.global_stream);
            }
            Body::Reconfigure(change) => {
                if request.map_version > self.map.version {
                    return Err(ClientReply::Behind);
                }
                if request.map_version < self.map.version {
                    return Err(ClientReply::StaleMap(Box::new(self.map.clone())));
                }
                change.apply(&self.map, 0).map_err(refusal_of)?;
                return Ok(self.map.global_stream);
            }
            Body::Access(change) => {
                change
                    .validate()
                    .map_err(|e| ClientReply::Refused(Refusal::AccessChange(e)))?;
                return Ok(self.map.global_stream);
            }
            Body::HandedOff { .. } => {
                // Only a node knows it holds nothing of a partition.
                return Err(ClientReply::Refused(Refusal::MembershipChange(
                    "hand-offs are reported by the nodes only".into(),
                )));
            }
            Body::Membership(command) => {
                use amulet_membership::Command;
                return match command {
                    Command::Join { .. } | Command::Leave { .. } => Ok(self.map.global_stream),
                    // A client's alert could remove a healthy node: only
                    // nodes' monitors propose them, straight to the stream.
                    Command::Alert { .. } | Command::Cut { .. } => {
                        Err(ClientReply::Refused(Refusal::MembershipChange(
                            "alerts and cuts are proposed by the nodes' monitors only".into(),
                        )))
                    }
                };
            }
        };
        self.state.validate(command).map_err(ClientReply::Done)?;
        // Judging a newer client's request by an older map would refuse a
        // map the client saw created, or route by partitions since moved.
        if request.map_version > self.map.version {
            return Err(ClientReply::Behind);
        }
        if request.map_version < self.map.version {
            // Past the fence that changed the map, this partition's record
            // of the session is final for the old map: a retry of a
            // command it executed gets the reply (see `execute_app`).
            let executed = request
                .session
                .filter(|_| !S::is_read_only(command))
                .and_then(|(session, sequence)| self.sessions.executed(session, sequence));
            if let Some(reply) = executed {
                return Err(reply.unwrap_or(ClientReply::Lost));
            }
            // Still this partition's under the current map (its fence
            // keys hold the command's keys): no refresh needed.
            if !self.fence_keys_admit(command) {
                return Err(ClientReply::StaleMap(Box::new(self.map.clone())));
            }
            if self.fence_keys_trust_client(true) {
                return Ok(self.stream());
            }
        }
        // "No such map" and "the map exists" are verdicts on the partition
        // map, which this replica may hold in an older version than others
        // have executed: refused here, a map created a moment ago could be
        // denied to a client that saw it created elsewhere. Such commands
        // are ordered on the global stream instead, and every replica
        // judges them at the same point of the order (`execute_app`).
        match self.check_keyspace_request(command) {
            Err(ClientReply::UnknownKeyspace(_) | ClientReply::KeyspaceExists(_)) => {
                return Ok(self.map.global_stream)
            }
            other => other?,
        }
        let placement = S::placement(command);
        let involved = match self.involved(&placement) {
            Err(ClientReply::UnknownKeyspace(_)) => return Ok(self.map.global_stream),
            other => other?,
        };
        if !involved.contains(&self.config.partition) {
            return Err(ClientReply::NotAReplica(Box::new(self.map.clone())));
        }
        Ok(
            if is_global(&placement, &involved) || S::needs_global_order(command) {
                self.map.global_stream
            } else {
                self.stream()
            },
        )
    }

    /// Refuses a keyspace change the current map cannot take.
    pub(super) fn check_keyspace_request(
        &self,
        command: &S::Command,
    ) -> Result<(), ClientReply<S::Reply>> {
        let Some(change) = S::keyspace_request(command) else {
            return Ok(());
        };
        let mut next = self.map.clone();
        let result = match change {
            KeyspaceChange::Create(name, layout) => next.create_keyspace(&name, layout),
            KeyspaceChange::Drop(name) => next.drop_keyspace(&name),
            KeyspaceChange::EventualStore { node, incarnation } => {
                next.register_eventual_store(node, incarnation);
                Ok(())
            }
        };
        result.map_err(refusal_of)
    }

    /// The partitions a command placed at `placement` involves, or the
    /// refusal.
    pub(super) fn involved(
        &self,
        placement: &Placement,
    ) -> Result<Vec<PartitionId>, ClientReply<S::Reply>> {
        self.map.partitions_for(placement).map_err(refusal_of)
    }
}

/// The answer to a request the partition map refuses.
pub(super) fn refusal_of<R>(error: PartitionMapError) -> ClientReply<R> {
    match error {
        PartitionMapError::UnknownKeyspace(name) => ClientReply::UnknownKeyspace(name),
        PartitionMapError::KeyspaceExists(name) => ClientReply::KeyspaceExists(name),
        PartitionMapError::Invalid(why) => ClientReply::Refused(Refusal::InvalidMap(why)),
        PartitionMapError::Eventual(name) => ClientReply::Refused(Refusal::EventualMap(name)),
    }
}

/// Whether a command goes on the global stream.
pub(super) fn is_global(placement: &Placement, involved: &[PartitionId]) -> bool {
    let everywhere = placement.keyspace.is_none() && !matches!(placement.keys, Keys::Across(_));
    everywhere || involved.len() > 1
}
