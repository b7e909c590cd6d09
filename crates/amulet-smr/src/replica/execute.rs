//! Execution: the commands the merge delivers, in merge order (thesis
//! §2.7). Session requests change the session table; a service command is
//! judged by the map version it was routed by and its session, executed on
//! this partition's state, and completed at once or, when it spans
//! partitions, after the signal exchange (`signals`).

use super::edge::is_global;
use super::{ClientReply, Replica};
use crate::{
    AccessChange, Body, CommandEnvelope, ExecContext, Keys, KeyspaceChange, Need, Origin,
    Placement, Refusal, SessionCheck, StateMachine,
};
use amulet_types::{MapVersion, NodeId, PartitionId, StreamId};

impl<S: StateMachine> Replica<S> {
    /// A value delivered by the merge of this replica's streams, in merge
    /// order. Values of other streams are not this replica's and ignored.
    pub fn on_deliver(&mut self, stream: StreamId, value: &[u8]) {
        self.deliver(stream, value);
        self.debug_check_invariants();
    }

    fn deliver(&mut self, stream: StreamId, value: &[u8]) {
        let global = stream == self.map.global_stream;
        if !global && stream != self.stream() {
            return;
        }
        match CommandEnvelope::decode(value) {
            Ok(envelope) => self.queue.push_back((global, envelope)),
            Err(_) => {
                // Still a position of the order: count it so the global
                // position agrees with other partitions.
                self.undecodable += 1;
                if global {
                    self.queue.push_back((true, undecodable_marker()));
                }
            }
        }
        self.run();
    }

    /// Executes queued commands until one waits for signals.
    pub(super) fn run(&mut self) {
        while self.waiting.is_none() {
            let Some((global, envelope)) = self.queue.pop_front() else {
                break;
            };
            self.execute(global, envelope);
        }
    }

    fn execute(&mut self, global: bool, envelope: CommandEnvelope<S::Command>) {
        if global {
            self.global_position += 1;
            self.global_clock_micros = self.global_clock_micros.max(envelope.timestamp_micros);
            self.sessions.expire(self.global_clock_micros);
        }
        self.local_clock_micros = self.local_clock_micros.max(envelope.timestamp_micros);
        match envelope.body.clone() {
            Body::App(command) => self.execute_app(global, envelope, command),
            Body::Reconfigure(change) => {
                if global {
                    if let Some(refusal) = self.denied_cluster(&envelope) {
                        return self.answer(&envelope.origin, ClientReply::Refused(refusal));
                    }
                }
                self.execute_reconfigure(global, &envelope, change)
            }
            Body::Access(change) => self.execute_access(global, &envelope, &change),
            Body::Membership(command) => self.execute_membership(global, &envelope, &command),
            Body::HandedOff {
                partition,
                node,
                stream,
            } => self.execute_handed_off(global, &envelope, partition, node, stream),
            body => self.execute_session(global, &envelope, body),
        }
    }

    /// Why the sender of `envelope` may not do what `needs` lists, at this
    /// point of the order (docs/security.md); `None`: allowed. The same
    /// verdict at every replica that executes the command: the access
    /// configuration changes only on the global stream.
    fn denied(
        &self,
        envelope: &CommandEnvelope<S::Command>,
        needs: impl FnOnce(&mut dyn FnMut(Need<'_>)),
    ) -> Option<Refusal> {
        // No principal: a node without TLS (nobody is checked), or a
        // value ordered before access control existed.
        let principal = envelope.principal.as_ref()?;
        self.access.check(principal, needs).err()
    }

    /// [`Replica::denied`] for a command that needs the cluster admin role.
    fn denied_cluster(&self, envelope: &CommandEnvelope<S::Command>) -> Option<Refusal> {
        self.denied(envelope, |need| need(Need::Cluster))
    }

    /// An access change: global stream only, by a cluster admin; applied
    /// here at this position, as at every other replica.
    fn execute_access(
        &mut self,
        global: bool,
        envelope: &CommandEnvelope<S::Command>,
        change: &AccessChange,
    ) {
        if !global {
            return; // refused at the edge; a forged one does nothing
        }
        if let Some(refusal) = self.denied_cluster(envelope) {
            return self.answer(&envelope.origin, ClientReply::Refused(refusal));
        }
        if *change == AccessChange::Read {
            return self.answer(&envelope.origin, ClientReply::Accepted);
        }
        let mut access = (*self.access).clone();
        let reply = match access.apply(change) {
            Ok(()) => {
                self.access = std::sync::Arc::new(access);
                ClientReply::Accepted
            }
            Err(e) => ClientReply::Refused(Refusal::AccessChange(e)),
        };
        self.answer(&envelope.origin, reply);
    }

    /// A membership command (docs/membership.md): global stream only;
    /// applied here at this position, as at every other replica, so every
    /// replica installs the same views. Alerts and cuts come from nodes'
    /// monitors and nobody waits for them; a join or a leave is an
    /// operator's, answered, and needs the cluster admin role.
    fn execute_membership(
        &mut self,
        global: bool,
        envelope: &CommandEnvelope<S::Command>,
        command: &amulet_membership::Command,
    ) {
        use amulet_membership::{Applied, Command};
        if !global {
            return; // refused at the edge; a forged one does nothing
        }
        let from_operator = matches!(command, Command::Join { .. } | Command::Leave { .. });
        if !from_operator && envelope.principal.is_some() {
            return; // a client's alert: refused at the edge, ignored here
        }
        if from_operator {
            if let Some(refusal) = self.denied_cluster(envelope) {
                return self.answer(&envelope.origin, ClientReply::Refused(refusal));
            }
        }
        let Some(membership) = self.membership.as_mut() else {
            if from_operator {
                let refusal = Refusal::MembershipChange("membership is not configured".into());
                self.answer(&envelope.origin, ClientReply::Refused(refusal));
            }
            return;
        };
        let applied =
            std::sync::Arc::make_mut(membership).apply_proposed(envelope.origin.node, command);
        if from_operator {
            let reply = match applied {
                Applied::Ignored(why) => {
                    ClientReply::Refused(Refusal::MembershipChange(why.into()))
                }
                Applied::Joining(node) => ClientReply::Joined(node),
                _ => ClientReply::Accepted,
            };
            self.answer(&envelope.origin, reply);
        }
    }

    /// `node` holds nothing of `partition` any more: it leaves the
    /// partition's hand-off set, and the map takes a new version (the set
    /// decides the learners of the partition's next stream, so every
    /// replica and client must tell the two maps apart). Global stream
    /// only, from nodes only; nobody waits for an answer. Counts when
    /// `node` reports itself, or when the view (as executed here, at this
    /// point of the order) removed it: a removed node never reports, and
    /// would hold the partition's splits and merges back for good.
    /// Idempotent: nodes propose again while their map still lists it,
    /// and a repeat changes nothing.
    fn execute_handed_off(
        &mut self,
        global: bool,
        envelope: &CommandEnvelope<S::Command>,
        partition: PartitionId,
        node: NodeId,
        stream: StreamId,
    ) {
        if !global || envelope.principal.is_some() {
            return; // refused at the edge; a forged one does nothing
        }
        if self.map.partitions.get(&partition).map(|p| p.stream) != Some(stream) {
            return; // reported before a later move: stale
        }
        let removed = self
            .membership
            .as_ref()
            .is_some_and(|m| m.view().removed().contains(&node));
        if node != envelope.origin.node && !removed {
            return; // only the node itself knows it holds nothing
        }
        let Some(from) = self.map.handing_off.get_mut(&partition) else {
            return;
        };
        if !from.remove(&node) {
            return;
        }
        if from.is_empty() {
            self.map.handing_off.remove(&partition);
        }
        self.map.version = MapVersion(self.map.version.0 + 1);
    }

    fn execute_session(
        &mut self,
        global: bool,
        envelope: &CommandEnvelope<S::Command>,
        body: Body<S::Command>,
    ) {
        let Some((session, _)) = envelope.session else {
            return; // refused at the edge; a forged one does nothing
        };
        if !global {
            return; // sessions change only through the global stream
        }
        if let Some(refusal) = self.denied(envelope, |_| {}) {
            return self.answer(&envelope.origin, ClientReply::Refused(refusal));
        }
        let lease_max = self.config.session_lease_micros_max;
        let until = |lease: u64| {
            self.global_clock_micros
                .saturating_add(lease.min(lease_max))
        };
        let reply = match body {
            Body::OpenSession { lease_micros } => {
                self.sessions.open(session, until(lease_micros));
                ClientReply::SessionOk
            }
            Body::KeepAlive { lease_micros } => {
                if self.sessions.renew(session, until(lease_micros)) {
                    ClientReply::SessionOk
                } else {
                    ClientReply::SessionExpired
                }
            }
            Body::CloseSession => {
                self.sessions.close(session);
                ClientReply::SessionOk
            }
            Body::App(_)
            | Body::Reconfigure(_)
            | Body::Access(_)
            | Body::Membership(_)
            | Body::HandedOff { .. } => {
                unreachable!("handled by execute")
            }
        };
        self.answer(&envelope.origin, reply);
    }

    fn execute_app(
        &mut self,
        global: bool,
        envelope: CommandEnvelope<S::Command>,
        command: S::Command,
    ) {
        let origin = envelope.origin;
        // Routed by an older map, a command on this partition's stream
        // that the current map still places here alone runs (fence keys,
        // `fence_keys.rs`); the same verdict at every replica.
        let stale = envelope.map_version < self.map.version;
        let fenced_in = stale && !global && self.fence_keys_admit(&command);
        if envelope.map_version != self.map.version && !fenced_in {
            // A retry of a command this partition executed under the old
            // map (its reply was lost) gets that reply: resent under the
            // new map it could run again elsewhere, on another stream whose
            // session record does not know it. The verdict is the same at
            // every replica of the partition (sessions are replicated).
            if let Some((session, sequence)) =
                envelope.session.filter(|_| !S::is_read_only(&command))
            {
                if let Some(reply) = self.sessions.executed(session, sequence) {
                    let reply = reply.unwrap_or(ClientReply::Lost);
                    return self.answer(&origin, reply);
                }
            }
            // Otherwise the same verdict in every partition: map changes
            // are ordered by the global stream.
            return self.answer(&origin, ClientReply::StaleMap(Box::new(self.map.clone())));
        }
        // The session first: a resend of a command this session already
        // executed gets that command's reply, whatever access says now (the
        // first attempt took effect before a revocation).
        let tracked = envelope.session.filter(|_| !S::is_read_only(&command));
        if let Some((session, sequence)) = tracked {
            let check = if global {
                self.sessions.check_global(session, sequence)
            } else {
                self.sessions.check_local(session, sequence)
            };
            match check {
                SessionCheck::Fresh => {}
                SessionCheck::Duplicate(reply) => {
                    return self.answer(&origin, reply.unwrap_or(ClientReply::Lost));
                }
                SessionCheck::Stale => return self.answer(&origin, ClientReply::StaleSequence),
                SessionCheck::Unknown => return self.answer(&origin, ClientReply::SessionExpired),
            }
        }
        // Then access, before the map's verdicts: a user learns nothing of
        // a map it may not use, not even whether it exists. A denial is
        // the command's reply and recorded as one: an earlier attempt of
        // it delivered later (after a grant) must not take effect once the
        // client was told it did not (the access swarm's seed 5000074).
        if let Some(refusal) = self.denied(&envelope, |need| S::needs(&command, need)) {
            let reply = ClientReply::Refused(refusal);
            return self.complete(global, &envelope, None, reply);
        }
        let placement = S::placement(&command);
        let involved = match self.involved(&placement) {
            Ok(involved) => involved,
            Err(reply) => return self.answer(&origin, reply),
        };
        if !global && (is_global(&placement, &involved) || S::needs_global_order(&command)) {
            // Only the edge proposes; a command that spans partitions on a
            // partition stream would run in one partition alone.
            return self.answer(&origin, ClientReply::Refused(Refusal::NeedsGlobalStream));
        }
        let in_me = involved.contains(&self.config.partition)
            || (!global && self.fence_keys_trust_client(stale));
        if !global && !in_me {
            return self.answer(
                &origin,
                ClientReply::NotAReplica(Box::new(self.map.clone())),
            );
        }
        if let Err(reply) = self.state.validate(&command) {
            return self.answer(&origin, ClientReply::Done(reply));
        }
        if let Err(reply) = self.check_keyspace_request(&command) {
            return self.answer(&origin, reply);
        }
        if !in_me {
            // Not involved, but every partition keeps the same global record.
            if let Some((session, sequence)) = tracked {
                self.sessions.record_global(session, sequence, None);
            }
            return;
        }
        let user = envelope.principal.as_ref().map(|p| p.user.as_str());
        let partial = self.execute_here(&command, &placement, user);
        let skip_signals = self.complete_without_signals
            || (self.begin_without_signals && S::needs_global_order(&command));
        if !global || involved.len() == 1 || skip_signals {
            let partial = if S::is_voted(&command) {
                // Alone (or, broken on purpose, deciding on its own vote).
                self.finish_here(&command, &placement, &[partial], user)
            } else {
                partial
            };
            let change = S::keyspace_change(&command, &partial);
            let reply = ClientReply::Done(partial);
            return self.complete(global, &envelope, change, reply);
        }
        if S::orders_only(&command) && envelope.session.is_none() {
            // Outside sessions: a resent one is a new command, so it
            // needs no record of this one made before its signals come.
            return self.start_ordering_only(envelope, command, involved, partial);
        }
        self.start_waiting(envelope, command, involved, partial);
    }

    /// Executes `command` on this partition's state: its part of the reply
    /// (its vote, for a voted command).
    pub(super) fn execute_here(
        &mut self,
        command: &S::Command,
        placement: &Placement,
        user: Option<&str>,
    ) -> S::Reply {
        let keyed = match (&placement.keyspace, &placement.keys) {
            (Some(keyspace), Keys::One(key)) => Some((keyspace.as_str(), key)),
            (Some(keyspace), Keys::Many(keys)) => keys.first().map(|k| (keyspace.as_str(), k)),
            _ => None,
        };
        self.load.record(keyed);
        let (map, me) = (&self.map, self.config.partition);
        let owns = |keyspace: &str, key: &[u8]| map.partition_of(keyspace, key) == Ok(me);
        let owns_key = |key: &[u8]| match &placement.keyspace {
            Some(keyspace) => owns(keyspace, key),
            None => true,
        };
        let ctx = ExecContext {
            now_micros: self.local_clock_micros,
            global_position: self.global_position,
            owns_key: &owns_key,
            owns: &owns,
            user,
        };
        self.state.execute(command, &ctx)
    }

    /// Applies a voted command given every involved partition's vote.
    pub(super) fn finish_here(
        &mut self,
        command: &S::Command,
        placement: &Placement,
        votes: &[S::Reply],
        user: Option<&str>,
    ) -> S::Reply {
        let (map, me) = (&self.map, self.config.partition);
        let owns = |keyspace: &str, key: &[u8]| map.partition_of(keyspace, key) == Ok(me);
        let owns_key = |key: &[u8]| match &placement.keyspace {
            Some(keyspace) => owns(keyspace, key),
            None => true,
        };
        let ctx = ExecContext {
            now_micros: self.local_clock_micros,
            global_position: self.global_position,
            owns_key: &owns_key,
            owns: &owns,
            user,
        };
        self.state.finish(command, votes, &ctx)
    }

    /// Finishes a command: applies the keyspace change it made, records
    /// the reply in its session and answers its client.
    pub(super) fn complete(
        &mut self,
        global: bool,
        envelope: &CommandEnvelope<S::Command>,
        change: Option<KeyspaceChange>,
        reply: ClientReply<S::Reply>,
    ) {
        let behind = self.unsignalled.last_key_value().map(|(p, _)| *p);
        self.complete_behind(global, envelope, change, reply, behind);
    }

    /// [`Replica::complete`], the answer held until every unsignalled command at or
    /// before `behind` has its signals.
    pub(super) fn complete_behind(
        &mut self,
        global: bool,
        envelope: &CommandEnvelope<S::Command>,
        change: Option<KeyspaceChange>,
        reply: ClientReply<S::Reply>,
        behind: Option<u64>,
    ) {
        if let Some(change) = change {
            let applied = match change {
                KeyspaceChange::Create(name, layout) => self.map.create_keyspace(&name, layout),
                KeyspaceChange::Drop(name) => self.map.drop_keyspace(&name),
                KeyspaceChange::EventualStore { node, incarnation } => {
                    self.map.register_eventual_store(node, incarnation);
                    Ok(())
                }
            };
            // Keyspaces mirror the service's catalog, which every partition
            // holds identically; a refused change means they diverged.
            applied.expect("keyspace change agrees with the service catalog");
        }
        let tracked = envelope.session.filter(|_| match &envelope.body {
            Body::App(command) => !S::is_read_only(command),
            _ => false,
        });
        if let Some((session, sequence)) = tracked {
            if global {
                self.sessions
                    .record_global(session, sequence, Some(reply.clone()));
            } else {
                self.sessions.record_local(session, sequence, reply.clone());
            }
        }
        self.answer_behind(&envelope.origin, reply, behind);
    }
}

/// Stands for an undecodable global value: counts as a position, does
/// nothing.
fn undecodable_marker<C>() -> CommandEnvelope<C> {
    CommandEnvelope {
        origin: Origin {
            node: NodeId(u32::MAX),
            incarnation: u32::MAX,
            request: 0,
        },
        timestamp_micros: 0,
        map_version: MapVersion(0),
        session: None,
        body: Body::CloseSession,
        principal: None,
    }
}
