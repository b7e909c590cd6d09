//! A replica's checkpoint (thesis §3.4.2): its replicated state at a point
//! between two deliveries, identified (outside this type) by the merge
//! position of its streams. Taken cheaply on the event loop (the service
//! state is copy-on-write), restored at recovery and state transfer.

use super::{ClientReply, Replica, ReplicaConfig};
use crate::{PartitionMap, Reconfiguration, SessionTable, StateMachine};
use amulet_types::PartitionId;
use bytes::Bytes;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A replica's replicated state at a point between two deliveries (thesis
/// §3.4.2): what it needs to continue from the next delivery exactly as
/// the original would have. Identified, outside this type, by the merge
/// position of its streams. `C` is the state machine's checkpoint, `R`
/// its reply.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ReplicaCheckpoint<C, R> {
    /// The partition replicated.
    pub partition: PartitionId,
    /// The partition map executed so far.
    pub map: PartitionMap,
    /// The service state.
    pub state: C,
    /// Open sessions and their last replies (exactly-once survives).
    pub sessions: SessionTable<ClientReply<R>>,
    /// Greatest timestamp of any executed command.
    pub local_clock_micros: u64,
    /// Greatest timestamp of a global-stream command.
    pub global_clock_micros: u64,
    /// Global-stream commands delivered so far.
    pub global_position: u64,
    /// Signals that arrived before their command was delivered here.
    pub early_signals: BTreeMap<u64, BTreeMap<PartitionId, Option<Bytes>>>,
    /// Partial replies kept for late signal requests.
    pub signal_cache: BTreeMap<u64, Bytes>,
    /// Delivered values that did not decode.
    pub undecodable: u64,
    /// A reconfiguration executed whose fence is not reached yet.
    #[serde(default)]
    pub pending_reconfiguration: Option<Reconfiguration>,
    /// See [`Replica::absorb`]: partitions merged into this one, the
    /// global position of the merge, and their cached partials.
    #[serde(default)]
    pub absorbed_signals: BTreeMap<PartitionId, (u64, BTreeMap<u64, Bytes>)>,
    /// This partition's votes on voted commands kept for late askers.
    #[serde(default)]
    pub votes: BTreeMap<u64, Bytes>,
    /// Users, roles, grants and tokens. Files of checkpoint format 4 and
    /// older predate access control: they decode with a new cluster's
    /// (the bootstrap admin alone).
    #[serde(default, deserialize_with = "access_since_format_5")]
    pub access: std::sync::Arc<crate::AccessControl>,
    /// The cluster's membership. Files of checkpoint format 6 and older
    /// predate it: they decode with none, and the host starts the replica
    /// from the configured first view.
    #[serde(default, deserialize_with = "membership_since_format_7")]
    pub membership: Option<std::sync::Arc<amulet_membership::Membership>>,
}

/// Decodes the membership of a checkpoint file of format 7 or later; an
/// older file has none (postcard is positional: nothing is read).
fn membership_since_format_7<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<std::sync::Arc<amulet_membership::Membership>>, D::Error> {
    if crate::checkpoint_format::decoding_format() <= 6 {
        return Ok(None);
    }
    Option::<std::sync::Arc<amulet_membership::Membership>>::deserialize(deserializer)
}

/// Decodes the access configuration of a checkpoint file of format 5 or
/// later; an older file has none (postcard is positional: nothing is read).
fn access_since_format_5<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<std::sync::Arc<crate::AccessControl>, D::Error> {
    if crate::checkpoint_format::decoding_format() <= 4 {
        return Ok(Default::default());
    }
    std::sync::Arc::<crate::AccessControl>::deserialize(deserializer)
}

/// Why a checkpoint cannot be restored.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RestoreError {
    /// The checkpoint is of another partition.
    #[error("checkpoint of partition {found} restored as partition {expected}")]
    Partition {
        /// The partition of the replica being restored.
        expected: PartitionId,
        /// The partition of the checkpoint.
        found: PartitionId,
    },
    /// The checkpoint's partition map no longer has the partition.
    #[error("the checkpoint's partition map has no partition {0}")]
    NotInMap(PartitionId),
}

impl<S: StateMachine> Replica<S> {
    /// A replica continuing from `checkpoint` (taken by
    /// [`Replica::checkpoint`]), with `state` (fresh, configured) taking the
    /// checkpoint's service state. Feed it the deliveries after the
    /// checkpoint's merge position.
    pub fn restore(
        config: ReplicaConfig,
        checkpoint: ReplicaCheckpoint<S::Checkpoint, S::Reply>,
        mut state: S,
    ) -> Result<Replica<S>, RestoreError> {
        if checkpoint.partition != config.partition {
            return Err(RestoreError::Partition {
                expected: config.partition,
                found: checkpoint.partition,
            });
        }
        if !checkpoint.map.partitions.contains_key(&config.partition) {
            return Err(RestoreError::NotInMap(config.partition));
        }
        state.restore(checkpoint.state);
        let mut replica = Replica::new(config, checkpoint.map, state);
        replica.sessions = checkpoint.sessions;
        replica.local_clock_micros = checkpoint.local_clock_micros;
        replica.global_clock_micros = checkpoint.global_clock_micros;
        replica.global_position = checkpoint.global_position;
        replica.early_signals = checkpoint.early_signals;
        replica.signal_cache_bytes = checkpoint.signal_cache.values().map(Bytes::len).sum();
        replica.signal_cache = checkpoint.signal_cache;
        replica.undecodable = checkpoint.undecodable;
        replica.pending_reconfiguration = checkpoint.pending_reconfiguration;
        replica.absorbed_signals = checkpoint.absorbed_signals;
        replica.votes = checkpoint.votes;
        replica.access = checkpoint.access;
        replica.membership = checkpoint.membership;
        replica.debug_check_invariants();
        Ok(replica)
    }

    /// Numbers new requests after those of `previous`, the replica this one
    /// replaces at run time (a peer's checkpoint installed by state
    /// transfer). Commands `previous` proposed may still be decided, and
    /// this replica answers them by number as their origin; fresh numbers
    /// keep those answers from reaching new requests.
    pub fn continue_requests_of(&mut self, previous: &Replica<S>) {
        self.next_request = self.next_request.max(previous.next_request);
    }

    /// The replicated state as a checkpoint, if this is a point between
    /// deliveries where one can be taken: nothing queued and no
    /// multi-partition command waiting for signals, unsignalled commands included
    /// (their progress, and the replies they hold, are not part of the
    /// checkpoint). Cheap: the service state is cloned
    /// copy-on-write, the rest is small.
    pub fn checkpoint(&self) -> Option<ReplicaCheckpoint<S::Checkpoint, S::Reply>> {
        if self.waiting.is_some() || !self.unsignalled.is_empty() || !self.queue.is_empty() {
            return None;
        }
        Some(ReplicaCheckpoint {
            partition: self.config.partition,
            map: self.map.clone(),
            state: self.state.checkpoint(),
            sessions: self.sessions.clone(),
            local_clock_micros: self.local_clock_micros,
            global_clock_micros: self.global_clock_micros,
            global_position: self.global_position,
            early_signals: self.early_signals.clone(),
            signal_cache: self.signal_cache.clone(),
            undecodable: self.undecodable,
            pending_reconfiguration: self.pending_reconfiguration.clone(),
            absorbed_signals: self.absorbed_signals.clone(),
            votes: self.votes.clone(),
            access: self.access.clone(),
            membership: self.membership.clone(),
        })
    }
}
