//! What holds of a replica after every step (submit, delivery, message,
//! tick, fence, absorb, restore). Checked after each one in debug builds;
//! the simulator calls [`Replica::check_invariants`] itself after every
//! step in release builds. Its cost is linear in the bounded caches (the
//! signal cache, early signals) and the session table, never in the
//! service state.

use super::signals::EARLY_SIGNAL_COMMANDS_MAX;
use super::{Replica, PROPOSED_MAX};
use crate::{Reconfiguration, StateMachine};
use bytes::Bytes;
use std::sync::atomic::Ordering;

impl<S: StateMachine> Replica<S> {
    /// Asserts the replica's invariants; a violation panics with the
    /// invariant's name and the values that break it.
    pub fn check_invariants(&self) {
        let me = self.config.partition;
        self.check_signal_invariants();
        // Execution stops only at a command waiting for signals; anything
        // else delivered is executed at once.
        assert!(
            self.waiting.is_some() || self.queue.is_empty(),
            "{me}: invariant 'only a command waiting for signals holds the queue' broken: \
             {} commands queued, none waiting",
            self.queue.len()
        );
        assert!(
            self.votes.len() <= self.config.votes_retained_max,
            "{me}: invariant 'votes kept are bounded' broken: {} > {}",
            self.votes.len(),
            self.config.votes_retained_max
        );
        assert!(
            self.votes
                .last_key_value()
                .is_none_or(|(position, _)| *position <= self.global_position),
            "{me}: invariant 'no vote is kept for a command not executed' broken"
        );
        let checked = self
            .global_position_checked
            .fetch_max(self.global_position, Ordering::Relaxed);
        assert!(
            checked <= self.global_position,
            "{me}: invariant 'the global position is monotone' broken: {} after {checked}",
            self.global_position
        );
        // Every command's timestamp moves the local clock, only global
        // commands move the global one.
        assert!(
            self.local_clock_micros >= self.global_clock_micros,
            "{me}: invariant 'the local clock is at or past the global clock' broken: \
             local {} µs, global {} µs",
            self.local_clock_micros,
            self.global_clock_micros
        );
        // Leases end by the global clock; every global command drops the
        // sessions whose lease ended.
        if let Some((session, expires_at_micros)) = self.sessions.first_to_expire() {
            assert!(
                expires_at_micros >= self.global_clock_micros,
                "{me}: invariant 'no open session has expired' broken: session {session} \
                 expired at {expires_at_micros} µs, global clock {} µs",
                self.global_clock_micros
            );
        }
        assert!(
            self.proposed.len() <= PROPOSED_MAX,
            "{me}: invariant 'proposals remembered within their bound' broken: {} > {PROPOSED_MAX}",
            self.proposed.len()
        );
        if let Some((request, _)) = self.proposed.last_key_value() {
            assert!(
                *request < self.next_request,
                "{me}: invariant 'proposed requests have numbers already given out' broken: \
                 request {request}, next number {}",
                self.next_request
            );
        }
        self.check_pending_reconfiguration();
    }

    /// The signal exchange's state: the cache's byte count and bound, the
    /// early signals' bound, the waiting command.
    fn check_signal_invariants(&self) {
        let me = self.config.partition;
        let cached_bytes: usize = self.signal_cache.values().map(Bytes::len).sum();
        assert!(
            self.signal_cache_bytes == cached_bytes,
            "{me}: invariant 'the signal cache's byte count is the sum of its partials' broken: \
             counted {}, holds {cached_bytes}",
            self.signal_cache_bytes
        );
        // The newest partial stays even if it alone is over the bound.
        assert!(
            self.signal_cache_bytes <= self.config.signal_cache_bytes_max
                || self.signal_cache.len() <= 1,
            "{me}: invariant 'the signal cache stays within its bound' broken: {} bytes in {} \
             partials, bound {}",
            self.signal_cache_bytes,
            self.signal_cache.len(),
            self.config.signal_cache_bytes_max
        );
        if let Some((position, _)) = self.signal_cache.last_key_value() {
            assert!(
                *position <= self.global_position,
                "{me}: invariant 'the signal cache holds executed commands only' broken: \
                 partial of {position}, global position {}",
                self.global_position
            );
        }
        for (partition, (until, _)) in &self.absorbed_signals {
            assert!(
                *until <= self.global_position,
                "{me}: invariant 'a merge was absorbed at an executed position' broken: \
                 {partition} absorbed at {until}, global position {}",
                self.global_position
            );
        }
        assert!(
            self.early_signals.len() <= EARLY_SIGNAL_COMMANDS_MAX,
            "{me}: invariant 'early signals within their bound' broken: {} commands > {}",
            self.early_signals.len(),
            EARLY_SIGNAL_COMMANDS_MAX
        );
        self.check_unsignalled_invariants();
        let Some(waiting) = &self.waiting else {
            return;
        };
        // Nothing of the global stream is executed past a waiting command.
        assert!(
            waiting.global_position == self.global_position,
            "{me}: invariant 'the waiting command is the last one executed' broken: waiting at \
             {}, global position {}",
            waiting.global_position,
            self.global_position
        );
        assert!(
            waiting.involved.len() > 1 && waiting.involved.contains(&me),
            "{me}: invariant 'a waiting command involves this and other partitions' broken: \
             involves {:?}",
            waiting.involved
        );
        assert!(
            matches!(waiting.partials.get(&me), Some(Some(_)))
                && waiting
                    .partials
                    .keys()
                    .all(|p| waiting.involved.contains(p)),
            "{me}: invariant 'a waiting command holds its own partial and only involved ones' \
             broken: partials of {:?}, involves {:?}",
            waiting.partials.keys().collect::<Vec<_>>(),
            waiting.involved
        );
    }

    /// Unsignalled commands are executed commands of this and other partitions, each
    /// holding its own partial; a held reply waits on an outstanding one.
    fn check_unsignalled_invariants(&self) {
        let me = self.config.partition;
        for (position, command) in &self.unsignalled {
            assert!(
                *position == command.global_position && *position <= self.global_position,
                "{me}: invariant 'an unsignalled command is executed' broken: at \
                 {position} ({}), global position {}",
                command.global_position,
                self.global_position
            );
            assert!(
                command.involved.len() > 1
                    && command.involved.contains(&me)
                    && matches!(command.partials.get(&me), Some(Some(_))),
                "{me}: invariant 'an unsignalled command involves this and other partitions and holds its own \
                 partial' broken at {position}: involves {:?}, partials of {:?}",
                command.involved,
                command.partials.keys().collect::<Vec<_>>()
            );
            assert!(
                command.involved.iter().any(|p| !command.partials.contains_key(p)),
                "{me}: invariant 'an unsignalled command with every partial is completed' broken at {position}"
            );
        }
        if let (Some(waiting), Some((last, _))) = (&self.waiting, self.unsignalled.last_key_value())
        {
            assert!(
                waiting.global_position > *last,
                "{me}: invariant 'a waiting command comes after every unsignalled one' broken: waiting \
                 at {}, unsignalled one at {last}",
                waiting.global_position
            );
        }
        if let Some((held, _)) = self.held.first_key_value() {
            let first = self.unsignalled.first_key_value().map(|(p, _)| *p);
            assert!(
                first.is_some_and(|first| first <= *held),
                "{me}: invariant 'a held reply waits on an unsignalled command' broken: held \
                 behind {held}, first unsignalled {first:?}"
            );
        }
    }

    /// A reconfiguration pending here has not taken effect yet: what it
    /// removes or replaces is still in the map, what it creates is not.
    fn check_pending_reconfiguration(&self) {
        let Some(change) = &self.pending_reconfiguration else {
            return;
        };
        let me = self.config.partition;
        let map = &self.map;
        let partitions_ok = match change {
            Reconfiguration::Split { source, new, .. } => {
                map.partitions.contains_key(source) && !map.partitions.contains_key(new)
            }
            Reconfiguration::Merge { source, into } => {
                map.partitions.contains_key(source) && map.partitions.contains_key(into)
            }
            Reconfiguration::ReplaceStream { partition, .. }
            | Reconfiguration::Move { partition, .. } => map.partitions.contains_key(partition),
            Reconfiguration::ReplaceGlobalStream { .. } => true,
        };
        let stream_unused = change.new_stream().is_none_or(|spec| {
            spec.stream != map.global_stream
                && !map.streams.contains_key(&spec.stream)
                && !map.retired_streams.contains(&spec.stream)
                && map.partitions.values().all(|p| p.stream != spec.stream)
        });
        assert!(
            partitions_ok && stream_unused,
            "{me}: invariant 'the pending reconfiguration has not taken effect' broken at map \
             version {}: {change:?}",
            map.version.0
        );
    }

    /// [`Replica::check_invariants`] in debug builds, after every step.
    pub(super) fn debug_check_invariants(&self) {
        if cfg!(debug_assertions) {
            self.check_invariants();
        }
    }
}

#[cfg(test)]
mod tests {
    //! Each test breaks one invariant by hand and shows the check panics.

    use crate::{
        Body, CommandEnvelope, ExecContext, Keys, KeyspaceChange, Layout, Origin, PartitionInfo,
        PartitionMap, Placement, Reconfiguration, Replica, ReplicaConfig, ReplicaMessage,
        StateMachine, StreamSpec,
    };
    use amulet_types::{NodeId, PartitionId, SessionId, StorageMode, StreamId};
    use bytes::Bytes;

    /// Counts the keys of each command this partition holds.
    struct KeyCount(u64);

    impl StateMachine for KeyCount {
        type Command = Vec<Bytes>;
        type Reply = u64;
        type Checkpoint = u64;

        fn checkpoint(&self) -> u64 {
            self.0
        }
        fn restore(&mut self, checkpoint: u64) {
            self.0 = checkpoint;
        }
        fn split_off(&mut self, _: &dyn Fn(&str, &[u8]) -> bool) -> u64 {
            0
        }
        fn absorb(&mut self, other: u64) {
            self.0 += other;
        }
        fn placement(command: &Vec<Bytes>) -> Placement {
            Placement {
                keyspace: Some("k".into()),
                keys: Keys::Many(command.clone()),
            }
        }
        fn needs(_: &Vec<Bytes>, need: &mut dyn FnMut(crate::Need<'_>)) {
            need(crate::Need::Map("k", crate::Permission::Write));
        }
        fn validate(&self, _: &Vec<Bytes>) -> Result<(), u64> {
            Ok(())
        }
        fn execute(&mut self, command: &Vec<Bytes>, ctx: &ExecContext<'_>) -> u64 {
            let mine = command.iter().filter(|k| (ctx.owns_key)(k)).count() as u64;
            self.0 += mine;
            mine
        }
        fn combine(_: &Vec<Bytes>, partials: &[u64]) -> u64 {
            partials.iter().sum()
        }
        fn is_read_only(_: &Vec<Bytes>) -> bool {
            false
        }
        fn keyspace_request(_: &Vec<Bytes>) -> Option<KeyspaceChange> {
            None
        }
        fn keyspace_change(_: &Vec<Bytes>, _: &u64) -> Option<KeyspaceChange> {
            None
        }
    }

    const GLOBAL: StreamId = StreamId(0);

    fn map() -> PartitionMap {
        let info = |n| PartitionInfo {
            stream: StreamId(n),
            replicas: vec![NodeId(n)],
        };
        let mut map = PartitionMap::uniform(
            GLOBAL,
            vec![(PartitionId(1), info(1)), (PartitionId(2), info(2))],
        );
        map.create_keyspace("k", Layout::Hash).unwrap();
        map
    }

    fn replica() -> Replica<KeyCount> {
        Replica::new(
            ReplicaConfig::new(NodeId(1), 1, PartitionId(1)),
            map(),
            KeyCount(0),
        )
    }

    fn key_of(partition: u32) -> Bytes {
        let map = map();
        (0u32..)
            .map(|i| Bytes::from(i.to_be_bytes().to_vec()))
            .find(|k| map.partition_of("k", k) == Ok(PartitionId(partition)))
            .expect("some key of every partition")
    }

    fn envelope(timestamp_micros: u64, body: Body<Vec<Bytes>>) -> Bytes {
        CommandEnvelope {
            origin: Origin {
                node: NodeId(2),
                incarnation: 1,
                request: timestamp_micros,
            },
            timestamp_micros,
            map_version: map().version,
            session: Some((SessionId(9), 1)),
            body,
            principal: None,
        }
        .encode()
    }

    /// A replica waiting for partition 2's signal of a command on both.
    fn waiting() -> Replica<KeyCount> {
        let mut replica = replica();
        replica.on_deliver(
            GLOBAL,
            &envelope(
                10,
                Body::OpenSession {
                    lease_micros: 1_000,
                },
            ),
        );
        replica.on_deliver(GLOBAL, &envelope(20, Body::App(vec![key_of(1), key_of(2)])));
        assert!(replica.is_waiting());
        replica.check_invariants();
        replica
    }

    #[test]
    fn a_replica_through_a_signal_exchange_keeps_its_invariants() {
        let mut replica = waiting();
        replica.on_deliver(StreamId(1), &envelope(30, Body::App(vec![key_of(1)])));
        assert_eq!(replica.queued(), 1);
        replica.on_message(ReplicaMessage::Signal {
            global_position: 2,
            partition: PartitionId(2),
            partial: Some(Bytes::from(postcard::to_allocvec(&1u64).unwrap())),
        });
        assert!(!replica.is_waiting());
        assert_eq!(replica.queued(), 0);
        replica.tick(1_000_000);
        replica.check_invariants();
    }

    #[test]
    #[should_panic(expected = "the signal cache's byte count is the sum of its partials")]
    fn a_miscounted_signal_cache_panics() {
        let mut replica = waiting();
        replica.signal_cache_bytes += 1;
        replica.check_invariants();
    }

    #[test]
    #[should_panic(expected = "the signal cache stays within its bound")]
    fn a_signal_cache_over_its_bound_panics() {
        let mut replica = waiting();
        replica.config.signal_cache_bytes_max = 0;
        replica.signal_cache.insert(1, Bytes::from_static(b"x"));
        replica.signal_cache_bytes += 1;
        replica.check_invariants();
    }

    #[test]
    #[should_panic(expected = "early signals within their bound")]
    fn too_many_early_signals_panic() {
        let mut replica = replica();
        for position in 0..=super::EARLY_SIGNAL_COMMANDS_MAX as u64 {
            replica
                .early_signals
                .insert(position + 10, Default::default());
        }
        replica.check_invariants();
    }

    #[test]
    #[should_panic(expected = "only a command waiting for signals holds the queue")]
    fn a_queue_without_a_waiting_command_panics() {
        let mut replica = waiting();
        let stuck = replica.waiting.take().expect("waiting").envelope;
        replica.queue.push_back((true, stuck));
        replica.check_invariants();
    }

    #[test]
    #[should_panic(expected = "the waiting command is the last one executed")]
    fn a_command_waiting_at_another_position_panics() {
        let mut replica = waiting();
        replica.waiting.as_mut().expect("waiting").global_position += 1;
        replica.check_invariants();
    }

    #[test]
    #[should_panic(expected = "a waiting command holds its own partial")]
    fn a_waiting_command_without_its_own_partial_panics() {
        let mut replica = waiting();
        let waiting = replica.waiting.as_mut().expect("waiting");
        waiting.partials.insert(PartitionId(1), None);
        replica.check_invariants();
    }

    #[test]
    #[should_panic(expected = "the global position is monotone")]
    fn a_global_position_going_back_panics() {
        let mut replica = waiting();
        replica.waiting = None;
        replica.signal_cache.clear();
        replica.signal_cache_bytes = 0;
        replica.global_position -= 1;
        replica.check_invariants();
    }

    #[test]
    #[should_panic(expected = "no open session has expired")]
    fn an_expired_session_still_open_panics() {
        let mut replica = waiting();
        replica.global_clock_micros += 1_000_000;
        replica.local_clock_micros += 1_000_000;
        replica.check_invariants();
    }

    #[test]
    #[should_panic(expected = "the pending reconfiguration has not taken effect")]
    fn a_pending_reconfiguration_already_applied_panics() {
        let mut replica = replica();
        replica.pending_reconfiguration = Some(Reconfiguration::ReplaceStream {
            partition: PartitionId(1),
            // Partition 2's stream: as if the change had been applied.
            stream: StreamSpec {
                stream: StreamId(2),
                acceptors: vec![NodeId(1)],
                learners: vec![],
                storage: StorageMode::Memory,
                base_position: 0,
            },
        });
        replica.check_invariants();
    }
}
