//! A three-node, one-stream network with zero latency and cuttable links,
//! shared by the integration tests.
#![allow(dead_code)] // each test file uses part of it

use amulet_multicast::MulticastNode;
use amulet_storage::{AcceptorLog, MemoryRing};
use amulet_types::{NodeId, StorageMode, StreamConfig, StreamId, StreamLimits, TimeMicros};
use amulet_wire::Envelope;
use bytes::Bytes;
use std::collections::{BTreeMap, VecDeque};

pub const STREAM: StreamId = StreamId(1);

pub struct Net {
    pub nodes: BTreeMap<NodeId, MulticastNode>,
    pub queue: VecDeque<(NodeId, NodeId, Envelope)>,
    pub cut: Vec<(NodeId, NodeId)>,
    pub delivered: BTreeMap<NodeId, Vec<Bytes>>,
}

impl Net {
    pub fn new(now: TimeMicros) -> Net {
        let ids = [NodeId(1), NodeId(2), NodeId(3)];
        let nodes = ids
            .iter()
            .map(|&me| {
                let config = StreamConfig {
                    stream: STREAM,
                    acceptors: ids.to_vec(),
                    learners: vec![],
                    storage: StorageMode::Memory,
                    limits: StreamLimits::default(),
                };
                let log: Box<dyn AcceptorLog> = Box::new(MemoryRing::new(4096));
                (me, MulticastNode::new(me, vec![(config, log)], 1, now))
            })
            .collect();
        Net {
            nodes,
            queue: VecDeque::new(),
            cut: Vec::new(),
            delivered: BTreeMap::new(),
        }
    }

    /// Moves every node's effects into the network and its deliveries
    /// into `delivered`, then delivers messages (zero latency) until quiet.
    pub fn pump(&mut self, now: TimeMicros) {
        for _ in 0..100_000 {
            for (&id, node) in self.nodes.iter_mut() {
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
                    .on_message(now, from, envelope);
            }
        }
        panic!("the network never went quiet");
    }

    pub fn tick(&mut self, now: TimeMicros) {
        for node in self.nodes.values_mut() {
            node.tick(now);
        }
        self.pump(now);
    }

    pub fn coordinator(&self) -> Option<NodeId> {
        self.nodes
            .iter()
            .find(|(_, n)| n.coordinates_any())
            .map(|(id, _)| *id)
    }
}
