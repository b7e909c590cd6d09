//! Merge groups (thesis §2.6, §3.4.2): a node merges each subscriber's
//! streams on its own. The merge of a subset of streams must deliver
//! exactly the projection of the merge of all of them, so two replicas on
//! one node, and replicas on nodes with other subscriptions, agree on the
//! relative order of what they share.

use amulet_multicast::{GroupId, MulticastNode};
use amulet_storage::{AcceptorLog, MemoryRing};
use amulet_types::{NodeId, StorageMode, StreamConfig, StreamId, StreamLimits, TimeMicros};
use amulet_wire::Envelope;
use bytes::Bytes;
use std::collections::{BTreeMap, VecDeque};

const GLOBAL: StreamId = StreamId(1);
const P1: StreamId = StreamId(2);
const P2: StreamId = StreamId(3);
const NODES: [NodeId; 3] = [NodeId(1), NodeId(2), NodeId(3)];

type Delivered = BTreeMap<(NodeId, GroupId), Vec<(StreamId, Bytes)>>;

fn node(me: NodeId, groups: Vec<(GroupId, Vec<StreamId>)>, now: TimeMicros) -> MulticastNode {
    let streams = [GLOBAL, P1, P2]
        .iter()
        .map(|&stream| {
            let config = StreamConfig {
                stream,
                acceptors: NODES.to_vec(),
                learners: vec![],
                storage: StorageMode::Memory,
                limits: StreamLimits::default(),
                base_position: 0,
            };
            let log: Box<dyn AcceptorLog> = Box::new(MemoryRing::new(4096));
            (config, log)
        })
        .collect();
    MulticastNode::with_groups(me, streams, groups, 1, now)
}

fn pump(nodes: &mut BTreeMap<NodeId, MulticastNode>, delivered: &mut Delivered, now: TimeMicros) {
    let mut queue = VecDeque::new();
    for _ in 0..100_000 {
        for (&id, node) in nodes.iter_mut() {
            // Every step of every node leaves it in a state a correct one can be in.
            node.check_invariants();
            let effects = node.drain();
            for (group, m) in effects.delivered {
                delivered
                    .entry((id, group))
                    .or_default()
                    .push((m.stream, m.value.bytes));
            }
            for (to, envelope) in effects.sends.into_iter().chain(effects.sends_after_sync) {
                queue.push_back((id, to, envelope));
            }
        }
        let Some((from, to, envelope)): Option<(NodeId, NodeId, Envelope)> = queue.pop_front()
        else {
            return;
        };
        nodes
            .get_mut(&to)
            .expect("known node")
            .on_message(now, from, envelope);
    }
    panic!("the network never went quiet");
}

#[test]
fn thesis_2_6_a_groups_merge_is_the_projection_of_the_merge_of_all_streams() {
    let mut now = TimeMicros(0);
    let mut nodes = BTreeMap::new();
    // Node 1 hosts two replicas, node 2 one merge of everything, node 3
    // one replica of partition 2 and a stream (P1) it only votes in.
    nodes.insert(
        NodeId(1),
        node(
            NodeId(1),
            vec![
                (GroupId(1), vec![GLOBAL, P1]),
                (GroupId(2), vec![GLOBAL, P2]),
            ],
            now,
        ),
    );
    nodes.insert(
        NodeId(2),
        node(NodeId(2), vec![(GroupId(0), vec![GLOBAL, P1, P2])], now),
    );
    nodes.insert(
        NodeId(3),
        node(NodeId(3), vec![(GroupId(2), vec![P2, GLOBAL])], now),
    );
    let mut delivered = Delivered::new();
    let streams = [GLOBAL, P1, P2];
    let mut sent = 0;
    for step in 0..3_000u64 {
        now = now.plus(1_000);
        // A few values a step, on varying streams from varying nodes.
        for k in 0..(step % 4) {
            let stream = streams[((step * 7 + k) % 3) as usize];
            let from = NODES[((step + k) % 3) as usize];
            let value = Bytes::from(format!("{stream:?}/{step}/{k}"));
            if nodes
                .get_mut(&from)
                .unwrap()
                .multicast(now, stream, value)
                .is_ok()
            {
                sent += 1;
            }
        }
        for node in nodes.values_mut() {
            node.tick(now);
        }
        pump(&mut nodes, &mut delivered, now);
    }
    for _ in 0..2_000 {
        now = now.plus(1_000);
        for node in nodes.values_mut() {
            node.tick(now);
        }
        pump(&mut nodes, &mut delivered, now);
    }
    assert!(sent > 1_000, "only {sent} values multicast");
    let all = &delivered[&(NodeId(2), GroupId(0))];
    assert_eq!(all.len(), sent, "node 2 delivered every value once");
    let project = |keep: [StreamId; 2]| -> Vec<(StreamId, Bytes)> {
        all.iter()
            .filter(|(s, _)| keep.contains(s))
            .cloned()
            .collect()
    };
    assert_eq!(delivered[&(NodeId(1), GroupId(1))], project([GLOBAL, P1]));
    assert_eq!(delivered[&(NodeId(1), GroupId(2))], project([GLOBAL, P2]));
    assert_eq!(delivered[&(NodeId(3), GroupId(2))], project([GLOBAL, P2]));
    assert!(
        delivered.keys().all(|(_, g)| [0, 1, 2].contains(&g.0)),
        "no delivery outside the groups"
    );
}
