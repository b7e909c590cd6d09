//! The proposer role (thesis A.1.1): numbers values, sends them to the
//! coordinator, and re-sends those not delivered in time (the learner's
//! de-duplication makes a value decided twice harmless).

use crate::output::Output;
use crate::stream_node::{ProposeError, StreamNode};
use amulet_types::{NodeId, TimeMicros, ValueId};
use amulet_wire::{Message, Value, ValueKind};
use bytes::Bytes;
use std::collections::BTreeMap;

/// Most bytes of undelivered values a proposer holds before refusing more.
const PENDING_BYTES_MAX: usize = 256 * 1024 * 1024;
/// Most undelivered values a proposer holds before refusing more.
const PENDING_VALUES_MAX: usize = 1 << 20;
/// Most values re-sent per tick, so a long outage does not burst.
const RESEND_PER_TICK_MAX: usize = 8192;
/// Largest `Propose` message, in payload bytes.
pub(crate) const PROPOSE_BYTES_MAX: usize = 1024 * 1024;

#[derive(Debug)]
struct Pending {
    kind: ValueKind,
    bytes: Bytes,
    sent: Option<TimeMicros>,
}

#[derive(Debug)]
pub(crate) struct Proposer {
    me: NodeId,
    incarnation: u32,
    next_sequence: u64,
    pending: BTreeMap<u64, Pending>,
    pending_bytes: usize,
    /// Sequences to send at the end of this step.
    outbox: Vec<u64>,
}

impl Proposer {
    pub(crate) fn new(me: NodeId, incarnation: u32) -> Proposer {
        Proposer {
            me,
            incarnation,
            next_sequence: 1,
            pending: BTreeMap::new(),
            pending_bytes: 0,
            outbox: Vec::new(),
        }
    }

    pub(crate) fn in_flight(&self) -> usize {
        self.pending.len()
    }

    pub(crate) fn propose(
        &mut self,
        kind: ValueKind,
        bytes: Bytes,
    ) -> Result<ValueId, ProposeError> {
        if self.pending_bytes + bytes.len() > PENDING_BYTES_MAX
            || self.pending.len() >= PENDING_VALUES_MAX
        {
            return Err(ProposeError::Backpressure);
        }
        let sequence = self.next_sequence;
        self.next_sequence += 1;
        self.pending_bytes += bytes.len();
        self.pending.insert(
            sequence,
            Pending {
                kind,
                bytes,
                sent: None,
            },
        );
        self.outbox.push(sequence);
        Ok(self.id(sequence))
    }

    fn id(&self, sequence: u64) -> ValueId {
        ValueId {
            proposer: self.me,
            incarnation: self.incarnation,
            sequence,
        }
    }

    pub(crate) fn delivered(&mut self, id: ValueId) {
        if id.proposer == self.me && id.incarnation == self.incarnation {
            if let Some(pending) = self.pending.remove(&id.sequence) {
                self.pending_bytes -= pending.bytes.len();
            }
        }
    }
}

impl StreamNode {
    /// Sends this step's new or re-sent values to the coordinator.
    pub(crate) fn proposer_flush(&mut self, out: &mut Output) {
        if self.proposer.outbox.is_empty() {
            return;
        }
        let Some(coordinator) = self.coordinator_node() else {
            return;
        };
        // Through a peer when this node does not hear the coordinator.
        let target = self.ring.route(coordinator);
        let now = self.now;
        let outbox = std::mem::take(&mut self.proposer.outbox);
        let mut values = Vec::with_capacity(outbox.len());
        for sequence in outbox {
            let id = self.proposer.id(sequence);
            if let Some(pending) = self.proposer.pending.get_mut(&sequence) {
                pending.sent = Some(now);
                values.push(Value {
                    id,
                    kind: pending.kind,
                    bytes: pending.bytes.clone(),
                });
            }
        }
        if target == self.me {
            if let Some(coordinator) = self.coordinator.as_mut() {
                coordinator.queue.extend(values);
                self.coordinator_pump(out);
            }
            return;
        }
        let mut chunk = Vec::new();
        let mut chunk_bytes = 0;
        for value in values {
            chunk_bytes += value.bytes.len();
            chunk.push(value);
            if chunk_bytes >= PROPOSE_BYTES_MAX {
                let values = std::mem::take(&mut chunk);
                self.send(target, Message::Propose { values, hops: 0 }, out);
                chunk_bytes = 0;
            }
        }
        if !chunk.is_empty() {
            self.send(
                target,
                Message::Propose {
                    values: chunk,
                    hops: 0,
                },
                out,
            );
        }
    }

    /// Re-sends values not delivered within `retry_after_micros`.
    pub(crate) fn proposer_tick(&mut self, out: &mut Output) {
        let retry = self.config.limits.retry_after_micros;
        let now = self.now;
        let late: Vec<u64> = self
            .proposer
            .pending
            .iter()
            .filter(|(_, p)| p.sent.is_none_or(|t| now.since(t) >= retry))
            .map(|(s, _)| *s)
            .take(RESEND_PER_TICK_MAX)
            .collect();
        self.proposer.outbox.extend(late);
        self.proposer_flush(out);
    }
}
