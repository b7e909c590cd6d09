//! A three-node, one-stream network with zero latency, cuttable links and
//! its own virtual clock (1 ms steps), shared by the integration tests.
#![allow(dead_code)] // each test file uses part of it

use amulet_multicast::MulticastNode;
use amulet_storage::{AcceptorLog, MemoryRing};
use amulet_types::{NodeId, StorageMode, StreamConfig, StreamId, StreamLimits, TimeMicros};
use amulet_wire::Envelope;
use bytes::Bytes;
use std::collections::{BTreeMap, VecDeque};

pub const STREAM: StreamId = StreamId(1);
pub const NODES: [NodeId; 3] = [NodeId(1), NodeId(2), NodeId(3)];

pub struct Net {
    pub now: TimeMicros,
    pub nodes: BTreeMap<NodeId, MulticastNode>,
    pub queue: VecDeque<(NodeId, NodeId, Envelope)>,
    /// Directed links that drop everything.
    pub cut: Vec<(NodeId, NodeId)>,
    pub delivered: BTreeMap<NodeId, Vec<Bytes>>,
}

impl Net {
    /// Three acceptors of `STREAM`, memory storage, after `warm_up_ms` of
    /// ticks (elections, first heartbeats).
    pub fn started(warm_up_ms: u64) -> Net {
        let now = TimeMicros(0);
        let nodes = NODES
            .iter()
            .map(|&me| {
                let config = StreamConfig {
                    stream: STREAM,
                    acceptors: NODES.to_vec(),
                    learners: vec![],
                    storage: StorageMode::Memory,
                    limits: StreamLimits::default(),
                    base_position: 0,
                };
                let log: Box<dyn AcceptorLog> = Box::new(MemoryRing::new(4096));
                (me, MulticastNode::new(me, vec![(config, log)], 1, now))
            })
            .collect();
        let mut net = Net {
            now,
            nodes,
            queue: VecDeque::new(),
            cut: Vec::new(),
            delivered: BTreeMap::new(),
        };
        net.run_ms(warm_up_ms);
        net
    }

    /// Cuts both directions of each pair (and heals every other link).
    pub fn cut_between(&mut self, pairs: &[(u32, u32)]) {
        self.cut = pairs
            .iter()
            .flat_map(|&(a, b)| [(NodeId(a), NodeId(b)), (NodeId(b), NodeId(a))])
            .collect();
    }

    /// Moves every node's effects into the network and its deliveries
    /// into `delivered`, then delivers messages (zero latency) until quiet.
    pub fn pump(&mut self) {
        for _ in 0..100_000 {
            for (&id, node) in self.nodes.iter_mut() {
                // Every step of every node leaves it in a state a correct one can be in.
                node.check_invariants();
                let effects = node.drain();
                self.delivered
                    .entry(id)
                    .or_default()
                    .extend(effects.delivered.into_iter().map(|(_, m)| m.value.bytes));
                for (to, envelope) in effects.sends.into_iter().chain(effects.sends_after_sync) {
                    self.queue.push_back((id, to, envelope));
                }
            }
            let Some((from, to, envelope)) = self.queue.pop_front() else {
                return;
            };
            if !self.cut.contains(&(from, to)) {
                self.nodes
                    .get_mut(&to)
                    .expect("known node")
                    .on_message(self.now, from, envelope);
            }
        }
        panic!("the network never went quiet");
    }

    /// One millisecond passes: every node ticks, the network goes quiet.
    pub fn step(&mut self) {
        self.now = self.now.plus(1_000);
        for node in self.nodes.values_mut() {
            node.tick(self.now);
        }
        self.pump();
    }

    pub fn run_ms(&mut self, ms: u64) {
        for _ in 0..ms {
            self.step();
        }
    }

    /// Steps until `done` holds, for at most `max_ms`; whether it held.
    pub fn run_until(&mut self, max_ms: u64, mut done: impl FnMut(&Net) -> bool) -> bool {
        for _ in 0..max_ms {
            self.step();
            if done(self) {
                return true;
            }
        }
        false
    }

    /// Multicasts `value` from `from` now.
    pub fn multicast(&mut self, from: NodeId, value: Bytes) {
        let now = self.now;
        self.nodes
            .get_mut(&from)
            .expect("known node")
            .multicast(now, STREAM, value)
            .expect("the stream takes the value");
    }

    /// Asserts that every node delivered every one of `values`.
    pub fn assert_all_delivered(&self, values: &[Bytes], during: &str) {
        for node in NODES {
            let got = self.delivered[&node]
                .iter()
                .filter(|v| values.contains(v))
                .count();
            assert_eq!(
                got,
                values.len(),
                "{node} delivered {got} of {} values {during}",
                values.len()
            );
        }
    }

    pub fn coordinator(&self) -> Option<NodeId> {
        self.nodes
            .iter()
            .find(|(_, n)| n.coordinates_any())
            .map(|(id, _)| *id)
    }
}
