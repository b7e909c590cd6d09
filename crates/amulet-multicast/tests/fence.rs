//! Reconfiguration at a barrier (thesis §4.5, §4.7.4-4.7.5: a partition
//! split off by a new replica group on a new stream, and a partition's
//! stream replaced by one with other acceptors). A barrier value stops
//! every group that merges it at the start of the next round; there each
//! node forks or reconfigures its group, so every replica makes the same
//! change at the same point of the order, whatever its timing.

use amulet_multicast::{GroupId, MulticastNode};
use amulet_storage::{AcceptorLog, MemoryRing};
use amulet_types::{NodeId, StorageMode, StreamConfig, StreamId, StreamLimits, TimeMicros};
use amulet_wire::{Envelope, ValueKind};
use bytes::Bytes;
use std::collections::{BTreeMap, VecDeque};

const GLOBAL: StreamId = StreamId(1);
const P1: StreamId = StreamId(2);
const SPLIT: StreamId = StreamId(3);
const REPLACEMENT: StreamId = StreamId(4);
const NODES: [NodeId; 3] = [NodeId(1), NodeId(2), NodeId(3)];
const G1: GroupId = GroupId(1);
const G2: GroupId = GroupId(2);

type Delivered = BTreeMap<(NodeId, GroupId), Vec<(StreamId, Bytes)>>;

/// A stream's configuration; one created at a fence starts at the
/// fence's round (M = 1), so its first values merge at once.
fn config_at(stream: StreamId, base_position: u64) -> (StreamConfig, Box<dyn AcceptorLog>) {
    let config = StreamConfig {
        stream,
        acceptors: NODES.to_vec(),
        learners: vec![],
        storage: StorageMode::Memory,
        limits: StreamLimits::default(),
        base_position,
    };
    (config, Box::new(MemoryRing::new(1 << 16)))
}

struct Cluster {
    now: TimeMicros,
    nodes: BTreeMap<NodeId, MulticastNode>,
    delivered: Delivered,
    /// What each node did at each fence so far.
    done: BTreeMap<NodeId, usize>,
    /// The fences, in order: (round, what happened).
    changes: BTreeMap<NodeId, Vec<u64>>,
}

impl Cluster {
    fn new() -> Cluster {
        let now = TimeMicros(0);
        let nodes = NODES
            .iter()
            .map(|&me| {
                let streams = vec![config_at(GLOBAL, 0), config_at(P1, 0)];
                let node =
                    MulticastNode::with_groups(me, streams, vec![(G1, vec![GLOBAL, P1])], 1, now);
                (me, node)
            })
            .collect();
        Cluster {
            now,
            nodes,
            delivered: Delivered::new(),
            done: BTreeMap::new(),
            changes: BTreeMap::new(),
        }
    }

    /// Carries messages until quiet; at each fence of G1 a node makes the
    /// next change: first a split (G2 forked on a new stream), then G1's
    /// stream replaced.
    fn pump(&mut self) {
        let mut queue = VecDeque::new();
        for _ in 0..100_000 {
            for (&id, node) in self.nodes.iter_mut() {
                // Every step of every node leaves it in a state a correct one can be in.
                node.check_invariants();
                let effects = node.drain();
                for (group, m) in effects.delivered {
                    self.delivered
                        .entry((id, group))
                        .or_default()
                        .push((m.stream, m.value.bytes));
                }
                for (to, envelope) in effects.sends.into_iter().chain(effects.sends_after_sync) {
                    queue.push_back((id, to, envelope));
                }
                if let Some(round) = node.fenced(G1) {
                    let done = self.done.entry(id).or_default();
                    match *done {
                        0 => {
                            let (c, log) = config_at(SPLIT, round);
                            node.add_stream(c, log, self.now).expect("new stream");
                            node.fork_at_fence(G1, G2, &[P1], &[(SPLIT, None)])
                                .expect("fork at the fence");
                        }
                        1 => {
                            let (c, log) = config_at(REPLACEMENT, round);
                            node.add_stream(c, log, self.now).expect("new stream");
                            node.reconfigure_at_fence(G1, &[P1], &[(REPLACEMENT, None)])
                                .expect("replace at the fence");
                        }
                        _ => panic!("{id}: an unexpected fence at round {round}"),
                    }
                    *done += 1;
                    self.changes.entry(id).or_default().push(round);
                    node.release_fence(G1);
                }
                // Every group that merges a barrier stops at it; G2 has
                // nothing to change.
                if node.fenced(G2).is_some() {
                    node.release_fence(G2);
                }
            }
            let Some((from, to, envelope)): Option<(NodeId, NodeId, Envelope)> = queue.pop_front()
            else {
                return;
            };
            self.nodes
                .get_mut(&to)
                .expect("known node")
                .on_message(self.now, from, envelope);
        }
        panic!("the network never went quiet");
    }

    fn step(&mut self) {
        self.now = self.now.plus(1_000);
        for node in self.nodes.values_mut() {
            node.tick(self.now);
        }
        self.pump();
    }
}

#[test]
fn thesis_4_7_a_split_and_a_stream_replacement_at_barriers_agree_everywhere() {
    let mut c = Cluster::new();
    let mut sent: Vec<(StreamId, Bytes)> = Vec::new();
    for step in 0..4_000u64 {
        let now = c.now;
        if step == 1_000 || step == 2_500 {
            let barrier = Bytes::from(format!("barrier/{step}"));
            c.nodes
                .get_mut(&NodeId(1))
                .unwrap()
                .multicast_kind(now, GLOBAL, ValueKind::Barrier, barrier.clone())
                .expect("barrier multicast");
            sent.push((GLOBAL, barrier));
        }
        for k in 0..(step % 3) {
            let streams: Vec<StreamId> = match c.done.get(&NodeId(1)).copied().unwrap_or(0) {
                0 => vec![GLOBAL, P1],
                1 => vec![GLOBAL, P1, SPLIT],
                _ => vec![GLOBAL, REPLACEMENT, SPLIT],
            };
            let stream = streams[((step + k) % streams.len() as u64) as usize];
            let from = NODES[((step * 5 + k) % 3) as usize];
            if !c.nodes[&from].streams().contains_key(&stream) {
                continue;
            }
            let value = Bytes::from(format!("{stream:?}/{step}/{k}"));
            if c.nodes
                .get_mut(&from)
                .unwrap()
                .multicast(now, stream, value.clone())
                .is_ok()
            {
                sent.push((stream, value));
            }
        }
        c.step();
    }
    for _ in 0..3_000 {
        c.step();
    }
    // Every node changed at the same rounds.
    let rounds = &c.changes[&NodeId(1)];
    assert_eq!(rounds.len(), 2, "two fences: {rounds:?}");
    for node in NODES {
        assert_eq!(&c.changes[&node], rounds, "{node} changed elsewhere");
    }
    // Every replica of a group delivered the same sequence.
    for group in [G1, G2] {
        let first = &c.delivered[&(NodeId(1), group)];
        for node in NODES {
            assert!(
                &c.delivered[&(node, group)] == first,
                "{node} {group} disagrees"
            );
        }
    }
    let g1 = &c.delivered[&(NodeId(1), G1)];
    let g2 = &c.delivered[&(NodeId(1), G2)];
    // G2 shares G1's global values from the split on, in the same order,
    // and merges the split stream; G1 never merges it.
    let g2_global: Vec<&Bytes> = g2
        .iter()
        .filter(|(s, _)| *s == GLOBAL)
        .map(|(_, v)| v)
        .collect();
    let g1_global: Vec<&Bytes> = g1
        .iter()
        .filter(|(s, _)| *s == GLOBAL)
        .map(|(_, v)| v)
        .collect();
    let at = g1_global
        .iter()
        .position(|v| *v == g2_global[0])
        .expect("G2's first global value is G1's too");
    assert!(
        g1_global[at..] == g2_global[..],
        "global values after the split: G1 has {}, G2 {}",
        g1_global.len() - at,
        g2_global.len()
    );
    assert!(g1_global[..at]
        .iter()
        .any(|v| v.starts_with(b"barrier/1000")));
    assert!(g2.iter().all(|(s, _)| *s == GLOBAL || *s == SPLIT));
    assert!(g1.iter().all(|(s, _)| *s != SPLIT));
    // Nothing multicast was lost: every split-stream value reached G2,
    // every replacement-stream value G1, every global value G1.
    for (stream, value) in &sent {
        let group = if *stream == SPLIT { g2 } else { g1 };
        if *stream == P1 {
            continue; // P1 values decided after G1 left it are not delivered.
        }
        assert!(
            group.iter().any(|(s, v)| s == stream && v == value),
            "{stream:?} value {value:?} not delivered"
        );
    }
    assert!(g1.iter().any(|(s, _)| *s == REPLACEMENT));
    assert!(g2.iter().any(|(s, _)| *s == SPLIT));
}
