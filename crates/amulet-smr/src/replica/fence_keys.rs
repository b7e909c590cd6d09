//! Fence keys (DynaTree §III-A): a request routed by a client's older
//! partition map is still this partition's to execute when every key it
//! names lies inside the partition's *current* range, so a split or move
//! of one partition no longer sends every client's requests to all the
//! others back for a refresh. The partition validates at execution (Alg.
//! 1–3, "check fence keys"), where the verdict is the same at every
//! replica: the map changes only through the global stream, so all
//! replicas of the partition judge a command against the same map.
//!
//! Only commands that a map change cannot make mean something else are
//! judged this way: single-partition key commands on the partition's own
//! stream. Commands whose meaning is a map version's (keyspace changes,
//! commands ordered on the global stream for their position, voted
//! transaction commits whose reads were served under the client's map)
//! stay refused as stale.

use super::Replica;
use crate::StateMachine;

impl<S: StateMachine> Replica<S> {
    /// Whether `command`, routed by a map older than this replica's, is
    /// still this partition's alone under the current map (its fence keys
    /// hold every key it names), so it may run here without a refresh.
    pub(super) fn fence_keys_admit(&self, command: &S::Command) -> bool {
        if !self.fence_keys
            || S::is_voted(command)
            || S::needs_global_order(command)
            || S::keyspace_request(command).is_some()
        {
            return false;
        }
        let placement = S::placement(command);
        match self.involved(&placement) {
            Ok(involved) => {
                let alone = involved.len() == 1 && !super::edge::is_global(&placement, &involved);
                // Broken on purpose: the client's cached range is trusted
                // for a command that one partition, maybe another, holds.
                alone && (involved[0] == self.config.partition || self.fence_keys_unchecked)
            }
            Err(_) => false,
        }
    }

    /// Whether the broken variant takes `command` here although the
    /// current map places it elsewhere (see
    /// [`Replica::set_bug_fence_keys_unchecked`]).
    pub(super) fn fence_keys_trust_client(&self, stale: bool) -> bool {
        stale && self.fence_keys_unchecked
    }
}
