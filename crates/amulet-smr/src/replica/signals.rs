//! S-SMR's signal exchange, the heart of DMap §III-B: a command of the
//! global stream that involves several partitions is executed by each of
//! them on its own keys; each sends its partial reply (its *signal*) to
//! every runner of the other involved partitions, and none completes the
//! command, or executes anything after it, until it holds a partial from
//! every involved partition. The reply combines them.
//!
//! Signals are single messages and may be lost or come early:
//!
//! - a replica still waiting after `signal_retry_micros` asks again
//!   (`SignalRequest`), and the others answer from their *signal cache*
//!   of partials (bounded by `signal_cache_bytes_max`, oldest evicted
//!   first), or with "executed long ago, partial gone", which completes
//!   the command as `Lost` (it did take effect);
//! - a signal for a command this replica has not executed yet is kept as
//!   an *early signal*, for at most [`EARLY_SIGNAL_COMMANDS_MAX`] future
//!   commands;
//! - after a merge, the partition merged into answers for the one merged
//!   away (`absorbed_signals`), whose replicas are gone.

use super::{ClientReply, Output, Replica};
use crate::{CommandEnvelope, ReplicaMessage, StateMachine};
use amulet_types::{NodeId, PartitionId};
use bytes::Bytes;
use std::collections::BTreeMap;

/// Early signals are kept for at most this many future commands.
pub(super) const EARLY_SIGNAL_COMMANDS_MAX: usize = 4096;

/// A replica asking for the signal of a command this one executed long
/// ago is replaying (after a restart or a state transfer): the answer
/// carries this many of the cached partials that follow too, so that the
/// replay does not wait one `signal_retry_micros` per multi-partition
/// command (found by the simulator: a restarted replica of a partition
/// whose peers had moved on replayed 95 begins at one per 50 ms, and every
/// other partition waited on its signals meanwhile).
pub(super) const SIGNALS_AHEAD_MAX: usize = 64;

/// ... and at most this many bytes of them.
pub(super) const SIGNALS_AHEAD_BYTES_MAX: usize = 256 * 1024;

/// A multi-partition command executed here and waiting for the signals of
/// the other involved partitions; execution of later commands waits too,
/// or, for a command that orders only (kept among the *unsignalled*), only
/// their replies.
pub(super) struct Waiting<C> {
    pub(super) global_position: u64,
    pub(super) envelope: CommandEnvelope<C>,
    pub(super) command: C,
    pub(super) involved: Vec<PartitionId>,
    /// Encoded partial replies by partition; `None`: the partition executed
    /// the command but no longer holds its partial.
    pub(super) partials: BTreeMap<PartitionId, Option<Bytes>>,
    pub(super) asked_at_micros: u64,
}

/// The involved partitions whose partial `waiting` still lacks, with its
/// position. A voted command needs every vote itself; others take
/// "executed long ago" for an answer.
fn missing_of<S: StateMachine>(
    waiting: &Waiting<S::Command>,
) -> impl Iterator<Item = (u64, PartitionId)> + '_ {
    let voted = S::is_voted(&waiting.command);
    waiting
        .involved
        .iter()
        .filter(move |p| match waiting.partials.get(p) {
            None => true,
            Some(partial) => voted && partial.is_none(),
        })
        .map(|p| (waiting.global_position, *p))
}

impl<S: StateMachine> Replica<S> {
    /// A message from another replica.
    pub fn on_message(&mut self, message: ReplicaMessage) {
        match message {
            ReplicaMessage::Signal {
                global_position,
                partition,
                partial,
            } => self.on_signal(global_position, partition, partial),
            ReplicaMessage::SignalRequest {
                global_position,
                from,
            } => self.on_signal_request(global_position, from),
            // State transfer and edge monitoring are the node's business,
            // not the replica's.
            ReplicaMessage::CheckpointRequest { .. }
            | ReplicaMessage::CheckpointChunk { .. }
            | ReplicaMessage::NotHeld { .. }
            | ReplicaMessage::Probe { .. }
            | ReplicaMessage::ProbeReply { .. }
            | ReplicaMessage::Map { .. }
            | ReplicaMessage::View { .. }
            | ReplicaMessage::Weights { .. } => {}
        }
        self.debug_check_invariants();
    }

    /// Time passes: ask again for signals that have not come.
    pub fn tick(&mut self, now_micros: u64) {
        self.ask_again(now_micros);
        self.debug_check_invariants();
    }

    /// The signals the replica still waits for: each command's global
    /// position and the involved partitions whose partial has not come
    /// (for the node to ask their runners by a newer map than the
    /// replica's).
    pub fn missing_signals(&self) -> Vec<(u64, PartitionId)> {
        self.waiting
            .iter()
            .chain(self.unsignalled.values())
            .flat_map(|w| missing_of::<S>(w))
            .collect()
    }

    fn ask_again(&mut self, now_micros: u64) {
        self.now_micros = self.now_micros.max(now_micros);
        let (now, retry) = (self.now_micros, self.config.signal_retry_micros);
        let mut asks: Vec<(u64, PartitionId)> = Vec::new();
        for waiting in self.waiting.iter_mut().chain(self.unsignalled.values_mut()) {
            if now.saturating_sub(waiting.asked_at_micros) < retry {
                continue;
            }
            waiting.asked_at_micros = now;
            asks.extend(missing_of::<S>(waiting));
        }
        for (position, partition) in asks {
            for to in self.map.runners(partition) {
                self.outputs.push(Output::Send {
                    to,
                    message: ReplicaMessage::SignalRequest {
                        global_position: position,
                        from: self.config.node,
                    },
                });
            }
        }
    }

    /// This partition executed a multi-partition command: signal its
    /// partial to the other involved partitions and wait for theirs.
    pub(super) fn start_waiting(
        &mut self,
        envelope: CommandEnvelope<S::Command>,
        command: S::Command,
        involved: Vec<PartitionId>,
        partial: S::Reply,
    ) {
        let waiting = self.signal_partial(envelope, command, involved, partial);
        self.waiting = Some(waiting);
        self.try_complete();
    }

    /// This partition executed a command that orders only: signal its
    /// partial and go on; replies wait until the others' come.
    pub(super) fn start_ordering_only(
        &mut self,
        envelope: CommandEnvelope<S::Command>,
        command: S::Command,
        involved: Vec<PartitionId>,
        partial: S::Reply,
    ) {
        let waiting = self.signal_partial(envelope, command, involved, partial);
        let position = waiting.global_position;
        self.unsignalled.insert(position, waiting);
        self.try_complete_ordering_only(position);
    }

    /// Sends this partition's partial of the command just executed to the
    /// other involved partitions (and caches it): what it waits with.
    fn signal_partial(
        &mut self,
        envelope: CommandEnvelope<S::Command>,
        command: S::Command,
        involved: Vec<PartitionId>,
        partial: S::Reply,
    ) -> Waiting<S::Command> {
        let position = self.global_position;
        let encoded =
            Bytes::from(postcard::to_allocvec(&partial).expect("encoding to memory cannot fail"));
        if S::is_voted(&command) {
            self.keep_vote(position, encoded.clone());
        }
        self.cache_signal(position, encoded.clone());
        for partition in involved.iter().filter(|p| **p != self.config.partition) {
            for to in self.map.runners(*partition) {
                self.outputs.push(Output::Send {
                    to,
                    message: ReplicaMessage::Signal {
                        global_position: position,
                        partition: self.config.partition,
                        partial: Some(encoded.clone()),
                    },
                });
            }
        }
        let mut partials = self.early_signals.remove(&position).unwrap_or_default();
        partials.retain(|p, _| involved.contains(p));
        partials.insert(self.config.partition, Some(encoded));
        // Forget early signals of commands now behind us.
        self.early_signals = self.early_signals.split_off(&position);
        Waiting {
            global_position: position,
            envelope,
            command,
            involved,
            partials,
            asked_at_micros: self.now_micros,
        }
    }

    fn cache_signal(&mut self, position: u64, partial: Bytes) {
        self.signal_cache_bytes += partial.len();
        self.signal_cache.insert(position, partial);
        while self.signal_cache_bytes > self.config.signal_cache_bytes_max
            && self.signal_cache.len() > 1
        {
            let (_, evicted) = self.signal_cache.pop_first().expect("not empty");
            self.signal_cache_bytes -= evicted.len();
        }
    }

    /// Keeps this partition's vote on the voted command at `position`
    /// apart from the signal cache: a partition cannot apply a voted
    /// command without every vote, so a late asker must still find it
    /// after large partials have pushed it out of the cache. Bounded by
    /// count (`votes_retained_max`, oldest forgotten first); kept in
    /// checkpoints.
    fn keep_vote(&mut self, position: u64, vote: Bytes) {
        self.votes.insert(position, vote);
        while self.votes.len() > self.config.votes_retained_max {
            self.votes.pop_first();
        }
    }

    fn on_signal(&mut self, position: u64, partition: PartitionId, partial: Option<Bytes>) {
        if let Some(command) = self.unsignalled.get_mut(&position) {
            if command.involved.contains(&partition) {
                let slot = command.partials.entry(partition).or_insert(None);
                if slot.is_none() {
                    *slot = partial;
                }
            }
            self.try_complete_ordering_only(position);
            return;
        }
        if let Some(waiting) = &mut self.waiting {
            if waiting.global_position == position {
                if waiting.involved.contains(&partition) {
                    let slot = waiting.partials.entry(partition).or_insert(None);
                    if slot.is_none() {
                        *slot = partial;
                    }
                }
                if self.try_complete() {
                    self.run();
                }
                return;
            }
        }
        if position > self.global_position {
            let entry = self.early_signals.entry(position).or_default();
            let slot = entry.entry(partition).or_insert(None);
            if slot.is_none() {
                *slot = partial;
            }
            while self.early_signals.len() > EARLY_SIGNAL_COMMANDS_MAX {
                self.early_signals.pop_last();
            }
        }
    }

    fn on_signal_request(&mut self, position: u64, from: NodeId) {
        for (partition, (until, cache)) in &self.absorbed_signals {
            if position <= *until {
                self.outputs.push(Output::Send {
                    to: from,
                    message: ReplicaMessage::Signal {
                        global_position: position,
                        partition: *partition,
                        partial: cache.get(&position).cloned(),
                    },
                });
            }
        }
        let kept = self
            .signal_cache
            .get(&position)
            .or_else(|| self.votes.get(&position));
        let partial = match kept {
            Some(partial) => Some(partial.clone()),
            // Executed long ago: say so, without the partial.
            None if position < self.global_position => None,
            // Not executed yet: our signal goes out when it is.
            None => return,
        };
        self.outputs.push(Output::Send {
            to: from,
            message: ReplicaMessage::Signal {
                global_position: position,
                partition: self.config.partition,
                partial,
            },
        });
        if position < self.global_position {
            self.send_signals_ahead(position, from);
        }
    }

    /// The partials this partition still holds for the commands after
    /// `position` that it has executed, to a replica replaying them; it
    /// keeps them as early signals.
    fn send_signals_ahead(&mut self, position: u64, to: NodeId) {
        let mut ahead: BTreeMap<u64, &Bytes> = BTreeMap::new();
        let after = (
            std::ops::Bound::Excluded(position),
            std::ops::Bound::Unbounded,
        );
        for (p, partial) in self.signal_cache.range(after).take(SIGNALS_AHEAD_MAX) {
            ahead.insert(*p, partial);
        }
        for (p, vote) in self.votes.range(after).take(SIGNALS_AHEAD_MAX) {
            ahead.entry(*p).or_insert(vote);
        }
        let mut bytes = 0;
        for (global_position, partial) in ahead.into_iter().take(SIGNALS_AHEAD_MAX) {
            bytes += partial.len();
            if bytes > SIGNALS_AHEAD_BYTES_MAX {
                break;
            }
            self.outputs.push(Output::Send {
                to,
                message: ReplicaMessage::Signal {
                    global_position,
                    partition: self.config.partition,
                    partial: Some(partial.clone()),
                },
            });
        }
    }

    /// Completes the unsignalled command at `position` if every involved partition's
    /// partial is here, and sends the replies it no longer holds.
    fn try_complete_ordering_only(&mut self, position: u64) {
        let done = self
            .unsignalled
            .get(&position)
            .is_some_and(|b| b.involved.iter().all(|p| b.partials.contains_key(p)));
        if !done {
            return;
        }
        let done = self.unsignalled.remove(&position).expect("checked above");
        let decoded: Option<Vec<S::Reply>> = done
            .partials
            .values()
            .map(|p| p.as_ref().and_then(|b| postcard::from_bytes(b).ok()))
            .collect();
        let reply = match decoded {
            Some(partials) => ClientReply::Done(S::combine(&done.command, &partials)),
            None => ClientReply::Lost,
        };
        // Every partition executed it, so everything before it: its own
        // answer waits only for earlier unsignalled commands.
        let behind = self
            .unsignalled
            .range(..position)
            .next_back()
            .map(|(p, _)| *p);
        self.complete_behind(true, &done.envelope, None, reply, behind);
        self.release_held();
    }

    /// Completes the waiting multi-partition command if every involved
    /// partition's partial is here; returns whether it did. It never runs
    /// the queue itself: called from `execute` (through `start_waiting`)
    /// inside `run`'s loop, running from here recursed once per queued
    /// command whose signals had all come early, and a replica replaying
    /// thousands of them after a restart overflowed its stack (found by
    /// the fault suite: nodes aborted with "stack overflow" during
    /// catch-up, stalling the cluster when the other replica was killed).
    fn try_complete(&mut self) -> bool {
        let done = self.waiting.as_ref().is_some_and(|w| {
            if S::is_voted(&w.command) {
                // Every vote itself, not "executed long ago": this
                // partition cannot apply the command without knowing all
                // (asked again until a replica that kept it answers).
                w.involved
                    .iter()
                    .all(|p| w.partials.get(p).is_some_and(Option::is_some))
            } else {
                w.involved.iter().all(|p| w.partials.contains_key(p))
            }
        });
        if !done {
            return false;
        }
        let waiting = self.waiting.take().expect("checked above");
        if S::is_voted(&waiting.command) {
            let mut votes = Vec::with_capacity(waiting.partials.len());
            let mut undecodable = Vec::new();
            for (partition, vote) in &waiting.partials {
                match vote.as_ref().and_then(|b| postcard::from_bytes(b).ok()) {
                    Some(vote) => votes.push(vote),
                    None => undecodable.push(*partition),
                }
            }
            if !undecodable.is_empty() {
                // Bytes that are no vote (corruption, or a peer of another
                // build): as if they never came; asked again.
                let mut waiting = waiting;
                for partition in undecodable {
                    waiting.partials.insert(partition, None);
                }
                self.waiting = Some(waiting);
                return false;
            }
            let placement = S::placement(&waiting.command);
            let user = waiting.envelope.principal.as_ref().map(|p| p.user.as_str());
            let reply = self.finish_here(&waiting.command, &placement, &votes, user);
            let change = S::keyspace_change(&waiting.command, &reply);
            self.complete(true, &waiting.envelope, change, ClientReply::Done(reply));
            return true;
        }
        let mine = waiting.partials[&self.config.partition]
            .as_ref()
            .and_then(|b| postcard::from_bytes::<S::Reply>(b).ok())
            .expect("our own partial decodes");
        let change = S::keyspace_change(&waiting.command, &mine);
        let decoded: Option<Vec<S::Reply>> = waiting
            .partials
            .values()
            .map(|p| p.as_ref().and_then(|b| postcard::from_bytes(b).ok()))
            .collect();
        let reply = match decoded {
            Some(partials) => ClientReply::Done(S::combine(&waiting.command, &partials)),
            None => ClientReply::Lost,
        };
        self.complete(true, &waiting.envelope, change, reply);
        true
    }
}
