//! Ring Paxos under a "bridge" partition (found by the real-process fault
//! suite, tests/fault, scenario partition-bridge): nodes 2 and 3 cannot
//! reach each other, both reach node 1, the coordinator. Every node still
//! hears the coordinator, so the coordinator's ring stays 1 → 2 → 3, but
//! the link 2 → 3 is cut. {1, 2} is a connected majority: the stream must
//! keep deciding and delivering there.
//!
//! And the other bridge (also found by the fault suite): nodes 1 (the
//! coordinator) and 2 cannot reach each other, both reach node 3. Node 2
//! must not take over while 1 and 3 still hear 1 (their ballots would
//! preempt each other through node 3 forever); its proposals reach 1
//! through 3.

use amulet_multicast::MulticastNode;
use amulet_storage::{AcceptorLog, MemoryRing};
use amulet_types::{NodeId, StorageMode, StreamConfig, StreamId, StreamLimits, TimeMicros};
use amulet_wire::Envelope;
use bytes::Bytes;
use std::collections::{BTreeMap, VecDeque};

const STREAM: StreamId = StreamId(1);

struct Net {
    nodes: BTreeMap<NodeId, MulticastNode>,
    queue: VecDeque<(NodeId, NodeId, Envelope)>,
    cut: Vec<(NodeId, NodeId)>,
    delivered: BTreeMap<NodeId, Vec<Bytes>>,
}

impl Net {
    fn new(now: TimeMicros) -> Net {
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
    fn pump(&mut self, now: TimeMicros) {
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

    fn tick(&mut self, now: TimeMicros) {
        for node in self.nodes.values_mut() {
            node.tick(now);
        }
        self.pump(now);
    }

    fn coordinator(&self) -> Option<NodeId> {
        self.nodes
            .iter()
            .find(|(_, n)| n.coordinates_any())
            .map(|(id, _)| *id)
    }
}

#[test]
fn ring_section_a2_a_bridge_partition_at_the_coordinator_keeps_deciding() {
    let mut now = TimeMicros(0);
    let mut net = Net::new(now);
    for _ in 0..1_000 {
        now = now.plus(1_000);
        net.tick(now);
    }
    assert_eq!(net.coordinator(), Some(NodeId(1)));
    // 2 and 3 lose each other, both keep node 1.
    net.cut = vec![(NodeId(2), NodeId(3)), (NodeId(3), NodeId(2))];
    for _ in 0..2_000 {
        now = now.plus(1_000);
        net.tick(now);
    }
    let mut values = Vec::new();
    for i in 0..20 {
        let value = Bytes::from(format!("during the bridge {i}"));
        net.nodes
            .get_mut(&NodeId(1))
            .unwrap()
            .multicast(now, STREAM, value.clone())
            .unwrap();
        values.push(value);
        // Two seconds at most for each, in 1 ms ticks.
        for _ in 0..2_000 {
            now = now.plus(1_000);
            net.tick(now);
            if net.delivered[&NodeId(2)].contains(values.last().unwrap()) {
                break;
            }
        }
    }
    // Node 3 hears of the decisions from node 1 (heartbeats, gap repair).
    for _ in 0..3_000 {
        now = now.plus(1_000);
        net.tick(now);
    }
    for node in [NodeId(1), NodeId(2), NodeId(3)] {
        let got: Vec<&Bytes> = net.delivered[&node]
            .iter()
            .filter(|v| values.contains(v))
            .collect();
        assert_eq!(
            got.len(),
            values.len(),
            "{node} delivered {} of {} values during the bridge partition",
            got.len(),
            values.len()
        );
    }
}

#[test]
fn ring_section_a2_a_bridge_cutting_the_coordinator_from_one_acceptor_keeps_one_coordinator() {
    let mut now = TimeMicros(0);
    let mut net = Net::new(now);
    for _ in 0..1_000 {
        now = now.plus(1_000);
        net.tick(now);
    }
    assert_eq!(net.coordinator(), Some(NodeId(1)));
    // 1 and 2 lose each other, both keep node 3.
    net.cut = vec![(NodeId(1), NodeId(2)), (NodeId(2), NodeId(1))];
    for _ in 0..2_000 {
        now = now.plus(1_000);
        net.tick(now);
    }
    let mut values = Vec::new();
    let mut coordinated_by_2 = 0;
    for i in 0..40 {
        // Half the values from each side of the cut.
        let proposer = if i % 2 == 0 { NodeId(1) } else { NodeId(2) };
        let value = Bytes::from(format!("during the bridge {i}"));
        net.nodes
            .get_mut(&proposer)
            .unwrap()
            .multicast(now, STREAM, value.clone())
            .unwrap();
        values.push(value);
        // Two seconds at most for each, in 1 ms ticks.
        for _ in 0..2_000 {
            now = now.plus(1_000);
            net.tick(now);
            coordinated_by_2 += usize::from(net.nodes[&NodeId(2)].coordinates_any());
            if net.delivered[&NodeId(3)].contains(values.last().unwrap()) {
                break;
            }
        }
    }
    for _ in 0..3_000 {
        now = now.plus(1_000);
        net.tick(now);
    }
    assert_eq!(
        coordinated_by_2, 0,
        "node 2 took over while a majority heard the coordinator"
    );
    assert_eq!(net.coordinator(), Some(NodeId(1)));
    for node in [NodeId(1), NodeId(2), NodeId(3)] {
        let got: Vec<&Bytes> = net.delivered[&node]
            .iter()
            .filter(|v| values.contains(v))
            .collect();
        assert_eq!(
            got.len(),
            values.len(),
            "{node} delivered {} of {} values during the bridge partition",
            got.len(),
            values.len()
        );
    }
}
