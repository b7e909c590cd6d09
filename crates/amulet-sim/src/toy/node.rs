//! HARNESS SELF-TEST ONLY. The toy protocol's two roles: a fixed
//! sequencer, and a client that proposes values and learns the sequence.
//!
//! A single sequencer numbering values in arrival order is a correct (if
//! unavailable-under-crash) atomic multicast: every learner delivers the
//! projection of one total order onto its subscriptions. Clients retransmit
//! proposals until acknowledged and pull the log, so loss, duplication and
//! reordering only slow them down.

use amulet_types::{NodeId, StreamId, TimeMicros, ValueId};
use std::collections::{BTreeMap, BTreeSet};

/// The sequencer's node.
pub const SEQUENCER: NodeId = NodeId(0);
/// A client re-sends an unacknowledged proposal after this long.
pub const RETRY_MICROS: u64 = 20_000;
/// A client asks for the log this often.
pub const FETCH_INTERVAL_MICROS: u64 = 10_000;
/// Log entries per `Entries` reply.
pub const FETCH_BATCH_MAX: usize = 32;

/// Messages of the toy protocol.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum ToyMessage {
    /// Client to sequencer: order this value on `stream`.
    Propose {
        /// The value.
        value: ValueId,
        /// Its stream.
        stream: StreamId,
    },
    /// Sequencer to client: `value` is in the log.
    Ack {
        /// The value.
        value: ValueId,
    },
    /// Client to sequencer: send the log from position `from`.
    Fetch {
        /// First log position wanted.
        from: u64,
    },
    /// Sequencer to client: log entries starting at `start`.
    Entries {
        /// Log position of the first entry.
        start: u64,
        /// The entries.
        entries: Vec<(StreamId, ValueId)>,
    },
}

/// Deliberately broken variants, to prove the checkers catch real bugs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ToyBug {
    /// The correct protocol.
    None,
    /// The sequencer comes back from a crash with an empty log (a
    /// "durable" log that was not): positions are reused, learners
    /// disagree.
    SequencerForgetsLog,
    /// A learner delivers the whole of a reply that overlaps what it has
    /// already delivered (a duplicated or retried fetch), not just the new
    /// part.
    LearnerRedeliversOverlap,
    /// A learner delivers each reply's entries sorted by stream: per-stream
    /// order holds, the merged order differs between learners.
    MergeByStreamWithinBatch,
}

/// Messages a role wants sent: (to, message).
pub type Sends = Vec<(NodeId, ToyMessage)>;

/// The fixed sequencer. Its log is durable: it survives crashes (unless
/// the bug says otherwise).
#[derive(Clone, Debug, Default)]
pub struct Sequencer {
    /// The total order: (stream, value) per position.
    pub log: Vec<(StreamId, ValueId)>,
    ordered: BTreeSet<ValueId>,
}

impl Sequencer {
    /// A sequencer restarted from `log`.
    pub fn recover(log: Vec<(StreamId, ValueId)>) -> Sequencer {
        let ordered = log.iter().map(|(_, value)| *value).collect();
        Sequencer { log, ordered }
    }

    /// Handles one message from `from`.
    pub fn receive(&mut self, from: NodeId, message: ToyMessage, sends: &mut Sends) {
        match message {
            ToyMessage::Propose { value, stream } => {
                if self.ordered.insert(value) {
                    self.log.push((stream, value));
                }
                sends.push((from, ToyMessage::Ack { value }));
            }
            ToyMessage::Fetch { from: start } => {
                let start_index = usize::try_from(start).unwrap_or(usize::MAX);
                if start_index < self.log.len() {
                    let end = (start_index + FETCH_BATCH_MAX).min(self.log.len());
                    let entries = self.log[start_index..end].to_vec();
                    sends.push((from, ToyMessage::Entries { start, entries }));
                }
            }
            ToyMessage::Ack { .. } | ToyMessage::Entries { .. } => {}
        }
    }
}

/// A client incarnation: proposer and learner on one node.
#[derive(Clone, Debug)]
pub struct Client {
    /// The node.
    pub node: NodeId,
    /// This run's incarnation.
    pub incarnation: u32,
    /// Streams this learner delivers.
    pub subscriptions: BTreeSet<StreamId>,
    next_sequence: u64,
    pending: BTreeMap<ValueId, (StreamId, TimeMicros)>,
    next_position: u64,
    last_fetch: Option<TimeMicros>,
}

impl Client {
    /// A fresh incarnation with empty state.
    pub fn new(node: NodeId, incarnation: u32, subscriptions: BTreeSet<StreamId>) -> Client {
        Client {
            node,
            incarnation,
            subscriptions,
            next_sequence: 1,
            pending: BTreeMap::new(),
            next_position: 0,
            last_fetch: None,
        }
    }

    /// Multicasts a new value to `stream`; returns its id.
    pub fn propose(&mut self, now: TimeMicros, stream: StreamId, sends: &mut Sends) -> ValueId {
        let value = ValueId {
            proposer: self.node,
            incarnation: self.incarnation,
            sequence: self.next_sequence,
        };
        self.next_sequence += 1;
        self.pending.insert(value, (stream, now));
        sends.push((SEQUENCER, ToyMessage::Propose { value, stream }));
        value
    }

    /// Retransmits stale proposals and polls the log when due.
    pub fn tick(&mut self, now: TimeMicros, sends: &mut Sends) {
        for (value, (stream, sent)) in self.pending.iter_mut() {
            if now.since(*sent) >= RETRY_MICROS {
                *sent = now;
                let (value, stream) = (*value, *stream);
                sends.push((SEQUENCER, ToyMessage::Propose { value, stream }));
            }
        }
        let fetch_due = self
            .last_fetch
            .is_none_or(|last| now.since(last) >= FETCH_INTERVAL_MICROS);
        if fetch_due {
            self.fetch(now, sends);
        }
    }

    /// Handles one message; returns the values to deliver, in order.
    pub fn receive(
        &mut self,
        now: TimeMicros,
        message: ToyMessage,
        bug: ToyBug,
        sends: &mut Sends,
    ) -> Vec<(StreamId, ValueId)> {
        match message {
            ToyMessage::Ack { value } => {
                self.pending.remove(&value);
                Vec::new()
            }
            ToyMessage::Entries { start, entries } => {
                let delivered = self.accept(start, entries, bug);
                if !delivered.1 {
                    return delivered.0;
                }
                self.fetch(now, sends); // A full batch: more may follow.
                delivered.0
            }
            ToyMessage::Propose { .. } | ToyMessage::Fetch { .. } => Vec::new(),
        }
    }

    /// Takes the new part of a reply; returns what to deliver and whether
    /// the reply was a full batch.
    fn accept(
        &mut self,
        start: u64,
        entries: Vec<(StreamId, ValueId)>,
        bug: ToyBug,
    ) -> (Vec<(StreamId, ValueId)>, bool) {
        let full = entries.len() == FETCH_BATCH_MAX;
        let end = start + entries.len() as u64;
        if start > self.next_position || end <= self.next_position {
            return (Vec::new(), false);
        }
        let fresh = if bug == ToyBug::LearnerRedeliversOverlap {
            &entries[..]
        } else {
            &entries[(self.next_position - start) as usize..]
        };
        self.next_position = end;
        let mut delivered: Vec<(StreamId, ValueId)> = fresh
            .iter()
            .filter(|(stream, _)| self.subscriptions.contains(stream))
            .copied()
            .collect();
        if bug == ToyBug::MergeByStreamWithinBatch {
            delivered.sort_by_key(|(stream, _)| *stream); // Stable: per-stream order kept.
        }
        (delivered, full)
    }

    fn fetch(&mut self, now: TimeMicros, sends: &mut Sends) {
        self.last_fetch = Some(now);
        let from = self.next_position;
        sends.push((SEQUENCER, ToyMessage::Fetch { from }));
    }
}
