//! Safe instances and trimming (thesis §3.4.2).
//!
//! A node's *safe instance* of a stream is the least first-unreflected
//! instance over the durable checkpoints of the replicas it runs that
//! subscribe to the stream (0 while one has none). It travels in the
//! stream's heartbeats, so every member knows every subscriber's. Every
//! [`crate::TRIM_INTERVAL_MICROS`] each node computes the stream's trim
//! point ([`amulet_smr::trim_point`]: per subscribing partition, the
//! largest instance a trim quorum of its replicas holds; the minimum over
//! partitions) and trims its acceptor log below it, never above its own
//! learner nor past where its own merges stand
//! ([`amulet_multicast::MulticastNode::trim_stream`]: below that point its
//! map is current).
use crate::command::Command;
use crate::host::Host;
use amulet_smr::{safe_to_report, trim_point, StateMachine};
use amulet_types::{Instance, SafeReport, StreamId, TimeMicros};

impl<S: StateMachine> Host<S> {
    /// Adopts and hands off moved partitions, retries stalled transfers,
    /// fetches checkpoints for learners trimmed past, publishes this
    /// node's safe instances and trims its acceptor logs.
    pub(crate) fn trim_logs(&mut self, now: TimeMicros) {
        let Some(map) = self.current_map().cloned() else {
            return;
        };
        self.adopt_and_hand_off(&map, now);
        self.write_for_waiters(now);
        for (to, message) in self.transfer.tick(now) {
            self.out.push(Command::SendReplica {
                to,
                message: Box::new(message),
            });
        }
        let behind: Vec<(StreamId, Instance)> = self
            .node
            .streams()
            .iter()
            .filter_map(|(id, s)| Some((*id, s.learner_trimmed()?)))
            .collect();
        for (stream, below) in behind {
            self.need_transfer(stream, below, now);
        }
        self.fetch_past_stranded_merges(now);
        let streams: Vec<StreamId> = self.node.streams().keys().copied().collect();
        for stream in streams {
            let merged_by_all = stream == map.global_stream;
            let checkpointed = self.checkpointer.safe_instance(stream, merged_by_all);
            let safe = safe_to_report(checkpointed, &map, stream);
            let Some(node) = self.node.stream_mut(stream) else {
                continue;
            };
            if let Some(below) = safe {
                node.set_safe_instance(SafeReport {
                    below,
                    map_version: map.version,
                });
            }
            let before = node.trimmed_below();
            let point = if self.config.bugs.trim_without_quorum {
                // Injected: below this node's own checkpoints alone.
                safe
            } else {
                trim_point(
                    &map,
                    stream,
                    &node.safe_instances(),
                    self.config.trim_quorum,
                )
            };
            if let Some(point) = point {
                self.node.trim_stream(stream, point);
                let after = self.node.streams()[&stream].trimmed_below();
                if after > before {
                    tracing::debug!(%stream, below = after.0, "acceptor log trimmed");
                }
            }
        }
    }
}
