//! Opening, late, a retired stream this node is an acceptor of and never
//! opened (thesis §3.4.1: a stream lives while a majority of its acceptors
//! vote).
//!
//! A node opens a stream created at run time when one of its replicas
//! executes the reconfiguration that creates it (a split's or a move's
//! fence), or installs a checkpoint past it. A replica far behind (cut off
//! by a partition, then waiting for a peer's checkpoint) may not get there
//! before a later map retires the stream; such a stream is never opened
//! by [`amulet_smr::open_streams`], yet its replicas may still need it to
//! reach the fence that retired it. With one other acceptor's vote lost
//! (an in-memory acceptor that restarted), the stream then has one voter
//! left and stops for good (`amulet-sim --dmap --seed 9008438`: node 8
//! never opened p5's stream 6; node 7 restarted without its votes there;
//! node 9 prepared stream 6 alone for good, so p5 never reached the fence
//! of the move that self-healing ordered to replace it).
//!
//! So a message of a peer for a stream this node lacks is noted, and at
//! the next flush the node opens the stream if the newest map it heard of
//! retired it and names this node an acceptor. Whether the opened log may
//! vote is the log's to say, as for every other stream: a durable log
//! from its files, an in-memory one only in the first run of the node's
//! data (no earlier run can have voted in it).
//!
//! A node that runs no replica opens the same way the global stream of
//! the newest map it heard of when it is a member: it executes nothing,
//! so no fence opens a replaced global stream for it, yet it proposes its
//! membership alerts there, and may be one of its acceptors.

use crate::host::{Host, HostError};
use crate::storage::{with_fence_host, LogOpener};
use amulet_smr::{StateMachine, StreamSpec};
use amulet_types::{StreamId, TimeMicros};

/// Streams noted at most between two flushes: a message names one stream,
/// and a peer that sends for many unknown ones must not grow this.
const LATE_STREAMS_NOTED_MAX: usize = 64;

impl<S: StateMachine> Host<S> {
    /// A peer sent a message for `stream`, which this node has not opened.
    pub(crate) fn note_late_stream(&mut self, stream: StreamId) {
        if self.asked_streams.len() < LATE_STREAMS_NOTED_MAX {
            self.asked_streams.insert(stream);
        }
    }

    /// Opens the noted streams that the newest map this node heard of
    /// retired and names this node an acceptor of.
    pub(crate) fn open_late_streams(
        &mut self,
        now: TimeMicros,
        storage: &mut dyn LogOpener,
    ) -> Result<(), HostError> {
        let asked = std::mem::take(&mut self.asked_streams);
        let me = self.config.me;
        let Some(newest) = self.newest_heard_map() else {
            return Ok(());
        };
        let global = newest
            .streams
            .get(&newest.global_stream)
            .filter(|spec| self.replicas.is_empty() && spec.members().contains(&me));
        let specs: Vec<StreamSpec> = asked
            .iter()
            .filter(|stream| newest.retired_streams.contains(stream))
            .filter_map(|stream| newest.streams.get(stream))
            .filter(|spec| spec.acceptors.contains(&me))
            .chain(global)
            .filter(|spec| !self.node.streams().contains_key(&spec.stream))
            .cloned()
            .collect();
        if specs.is_empty() {
            return Ok(());
        }
        let limits = self.runtime_stream_limits();
        // Only the first run of the node's data can vouch that no earlier
        // run voted in the stream (an in-memory log asks this).
        let first_run = self.config.incarnation <= 1;
        let node = &mut self.node;
        let opened = with_fence_host(
            me,
            self.config.incarnation,
            &*self.config.new_state,
            &limits,
            storage,
            first_run,
            now,
            |host| {
                specs
                    .iter()
                    .filter(|spec| amulet_smr::open_stream(node, spec, host))
                    .map(|spec| spec.stream)
                    .collect::<Vec<StreamId>>()
            },
        )?;
        for stream in opened {
            let voting = self.node.streams()[&stream].is_voting();
            tracing::info!(%stream, voting, "opened late a stream peers run");
        }
        Ok(())
    }
}
