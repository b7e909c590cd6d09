//! Reconfigurations at a replica (thesis §4.5, §4.7.4-4.7.5; DMap §III-C):
//! one is judged when the global stream delivers it and, if valid, kept
//! pending; it takes effect at its barrier's fence, where every replica of
//! every partition has executed exactly the same commands: the map
//! changes, and this replica says what its runtime must do (fork a split's
//! new partition, switch streams, absorb or retire a merged partition).

use super::{ClientReply, Output, Replica, ReplicaCheckpoint, RequestId};
use crate::{CommandEnvelope, Reconfiguration, Refusal, StateMachine, StreamSpec};
use amulet_types::{PartitionId, StreamId};
use std::collections::BTreeMap;

/// What the runtime does at a barrier's fence for one replica, after
/// [`Replica::at_fence`] applied the pending reconfiguration's map change.
#[derive(Clone, Debug)]
pub enum FenceWork<C, R> {
    /// No reconfiguration was pending (an invalid one): release the fence.
    Nothing,
    /// The map changed, this partition is not otherwise involved.
    MapChanged,
    /// This partition was split: create partition `new`'s replica from
    /// `checkpoint` and its merge group as a fork of this one that drops
    /// this partition's stream and merges `stream` from its instance 0.
    Split {
        /// The new partition.
        new: PartitionId,
        /// The new partition's replica state at the fence.
        checkpoint: Box<ReplicaCheckpoint<C, R>>,
        /// The new partition's stream (its base position set).
        stream: StreamSpec,
    },
    /// This partition's stream, or the global stream, is replaced: its
    /// merge group drops `old` and merges `new` from its instance 0;
    /// requests proposed on `old` not executed were answered `Behind`
    /// (clients resend them).
    ReplaceStream {
        /// The retired stream.
        old: StreamId,
        /// The new stream (its base position set).
        new: StreamSpec,
    },
    /// Partition `source` merges into this one: hand this replica the
    /// source replica's state ([`Replica::absorb`]).
    Absorb {
        /// The partition that disappears.
        source: PartitionId,
    },
    /// This partition merges into `into`: its state goes there, then its
    /// replica and merge group are removed and its stream retired.
    Retire {
        /// The partition taking the keys.
        into: PartitionId,
        /// This partition's state at the fence.
        checkpoint: Box<ReplicaCheckpoint<C, R>>,
    },
}

impl<S: StateMachine> Replica<S> {
    /// A reconfiguration is only judged here (the same verdict in every
    /// partition: it depends on the map and on what is pending, both
    /// replicated); it takes effect at its fence ([`Replica::at_fence`]).
    pub(super) fn execute_reconfigure(
        &mut self,
        global: bool,
        envelope: &CommandEnvelope<S::Command>,
        change: Reconfiguration,
    ) {
        if !global {
            return; // refused at the edge; a forged one does nothing
        }
        let reply = if envelope.map_version != self.map.version {
            ClientReply::StaleMap(Box::new(self.map.clone()))
        } else if self.pending_reconfiguration.is_some() {
            ClientReply::Refused(Refusal::ReconfigurationPending)
        } else if let Err(e) = change.apply(&self.map, 0) {
            super::edge::refusal_of(e)
        } else {
            self.pending_reconfiguration = Some(change);
            ClientReply::Accepted
        };
        self.answer(&envelope.origin, reply);
    }

    /// The reconfiguration pending here, if any.
    pub fn pending_reconfiguration(&self) -> Option<&Reconfiguration> {
        self.pending_reconfiguration.as_ref()
    }

    /// Whether the replica has executed everything delivered to it (no
    /// command queued or waiting for signals): the point where a fence's
    /// work can be done.
    pub fn is_idle(&self) -> bool {
        self.waiting.is_none() && self.unsignalled.is_empty() && self.queue.is_empty()
    }

    /// At the fence of a barrier, once [`Replica::is_idle`]: applies the
    /// pending reconfiguration (if any), with the new stream starting at
    /// merge position `base_position` (the fence's round times M), and
    /// says what the runtime must do for this replica. Every replica of
    /// every partition calls it at the same point of the order.
    pub fn at_fence(&mut self, base_position: u64) -> FenceWork<S::Checkpoint, S::Reply> {
        let work = self.take_effect(base_position);
        self.debug_check_invariants();
        work
    }

    fn take_effect(&mut self, base_position: u64) -> FenceWork<S::Checkpoint, S::Reply> {
        assert!(self.is_idle(), "at_fence with commands still to execute");
        let Some(change) = self.pending_reconfiguration.take() else {
            return FenceWork::Nothing;
        };
        let next = change
            .apply(&self.map, base_position)
            .expect("validated when executed, on the same map");
        let me = self.config.partition;
        let old_map = std::mem::replace(&mut self.map, next);
        match change {
            Reconfiguration::Split { source, new, .. } if source == me => {
                let map = self.map.clone();
                let moves = |keyspace: &str, key: &[u8]| map.partition_of(keyspace, key) == Ok(new);
                let moved = self.state.split_off(&moves);
                let mut checkpoint = self
                    .checkpoint()
                    .expect("an idle replica can take a checkpoint");
                checkpoint.partition = new;
                checkpoint.state = moved;
                checkpoint.signal_cache = BTreeMap::new();
                checkpoint.absorbed_signals = BTreeMap::new();
                checkpoint.votes = BTreeMap::new();
                let stream = self.map.streams[&self.map.partitions[&new].stream].clone();
                FenceWork::Split {
                    new,
                    checkpoint: Box::new(checkpoint),
                    stream,
                }
            }
            Reconfiguration::ReplaceStream { partition, .. }
            | Reconfiguration::Move { partition, .. }
                if partition == me =>
            {
                let old = old_map.partitions[&me].stream;
                self.abandon_stream(old);
                let new = self.map.streams[&self.map.partitions[&me].stream].clone();
                FenceWork::ReplaceStream { old, new }
            }
            Reconfiguration::ReplaceGlobalStream { .. } => {
                let old = old_map.global_stream;
                self.abandon_stream(old);
                let new = self.map.streams[&self.map.global_stream].clone();
                FenceWork::ReplaceStream { old, new }
            }
            Reconfiguration::Merge { source, into } if into == me => FenceWork::Absorb { source },
            Reconfiguration::Merge { source, into } if source == me => {
                // Still this partition's map entry in the checkpoint: the
                // state, sessions and clocks move, the map is `into`'s.
                self.map = old_map;
                let checkpoint = self
                    .checkpoint()
                    .expect("an idle replica can take a checkpoint");
                let streams: Vec<StreamId> = self.proposed.values().copied().collect();
                for stream in streams {
                    self.abandon_stream(stream);
                }
                FenceWork::Retire {
                    into,
                    checkpoint: Box::new(checkpoint),
                }
            }
            _ => FenceWork::MapChanged,
        }
    }

    /// Takes in partition `source`'s state at the fence of the merge that
    /// retires it: its keys, and for each session the later of the two
    /// partitions' records.
    pub fn absorb(&mut self, source: ReplicaCheckpoint<S::Checkpoint, S::Reply>) {
        self.state.absorb(source.state);
        self.sessions.absorb(source.sessions);
        self.local_clock_micros = self.local_clock_micros.max(source.local_clock_micros);
        // A replica still executing commands from before the merge (a
        // restarted one, catching up) may wait for the merged partition's
        // signals, and its replicas are gone: this partition answers for
        // it, from its cache (or "executed long ago").
        // Its votes too: no replica of it is left to answer for them.
        let mut kept = source.signal_cache;
        kept.extend(source.votes);
        self.absorbed_signals
            .insert(source.partition, (self.global_position, kept));
        self.absorbed_signals.extend(source.absorbed_signals);
        self.debug_check_invariants();
    }

    /// Answers `Behind` to every request proposed here on `stream` and not
    /// executed: the stream is retired at this fence, so nothing decided
    /// on it from now on is executed, and the client resends the request
    /// (with the same session sequence) to the new stream.
    fn abandon_stream(&mut self, stream: StreamId) {
        let abandoned: Vec<RequestId> = self
            .proposed
            .iter()
            .filter(|(_, s)| **s == stream)
            .map(|(r, _)| *r)
            .collect();
        for request in abandoned {
            self.proposed.remove(&request);
            self.outputs.push(Output::Reply {
                request,
                reply: ClientReply::Behind,
            });
        }
    }
}
