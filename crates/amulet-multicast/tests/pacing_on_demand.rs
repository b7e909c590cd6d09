//! Rate leveling on demand (thesis §3.3, ours: see `multicast_node/
//! pacing.rs`): an idle cluster decides nothing, and a value that waits in
//! a merge on a stream coordinated elsewhere is delivered after one need
//! message and one decision, without any tick.

use amulet_multicast::{GroupId, MulticastNode};
use amulet_storage::{AcceptorLog, MemoryRing};
use amulet_types::{NodeId, StorageMode, StreamConfig, StreamId, StreamLimits, TimeMicros};
use amulet_wire::Envelope;
use bytes::Bytes;
use std::collections::{BTreeMap, VecDeque};

const A: StreamId = StreamId(1);
const B: StreamId = StreamId(2);

fn config(stream: StreamId, acceptors: Vec<NodeId>, learners: Vec<NodeId>) -> StreamConfig {
    StreamConfig {
        stream,
        acceptors,
        learners,
        storage: StorageMode::Memory,
        limits: StreamLimits::default(),
        base_position: 0,
    }
}

fn log() -> Box<dyn AcceptorLog> {
    Box::new(MemoryRing::new(4096))
}

/// Node 1 accepts stream A, learns B and merges both; node 2 accepts B
/// and merges it alone. Node 1's merge waits on B, which node 2
/// coordinates and which no merge at node 2 waits on.
fn two_nodes(now: TimeMicros) -> BTreeMap<NodeId, MulticastNode> {
    let (n1, n2) = (NodeId(1), NodeId(2));
    let a = config(A, vec![n1], vec![]);
    let b = config(B, vec![n2], vec![n1]);
    let node1 = MulticastNode::with_groups(
        n1,
        vec![(a, log()), (b.clone(), log())],
        vec![(GroupId(0), vec![A, B])],
        1,
        now,
    );
    let node2 =
        MulticastNode::with_groups(n2, vec![(b, log())], vec![(GroupId(0), vec![B])], 1, now);
    BTreeMap::from([(n1, node1), (n2, node2)])
}

/// Delivers every message (zero latency) until quiet; returns what each
/// node delivered meanwhile.
fn pump(
    nodes: &mut BTreeMap<NodeId, MulticastNode>,
    now: TimeMicros,
) -> BTreeMap<NodeId, Vec<Bytes>> {
    let mut delivered: BTreeMap<NodeId, Vec<Bytes>> = BTreeMap::new();
    let mut queue: VecDeque<(NodeId, NodeId, Envelope)> = VecDeque::new();
    for _ in 0..100_000 {
        for (&id, node) in nodes.iter_mut() {
            node.check_invariants();
            let effects = node.drain();
            delivered
                .entry(id)
                .or_default()
                .extend(effects.delivered.into_iter().map(|(_, m)| m.value.bytes));
            for (to, envelope) in effects.sends.into_iter().chain(effects.sends_after_sync) {
                queue.push_back((id, to, envelope));
            }
        }
        let Some((from, to, envelope)) = queue.pop_front() else {
            return delivered;
        };
        if let Some(node) = nodes.get_mut(&to) {
            node.on_message(now, from, envelope);
        }
    }
    panic!("messages never stopped");
}

fn instances_proposed(nodes: &BTreeMap<NodeId, MulticastNode>) -> u64 {
    nodes
        .values()
        .flat_map(|n| n.streams().values())
        .map(|s| s.stats().instances_proposed)
        .sum()
}

/// Ticks every millisecond for `ms`, delivering messages after each tick.
fn run_ms(nodes: &mut BTreeMap<NodeId, MulticastNode>, now: &mut TimeMicros, ms: u64) {
    for _ in 0..ms {
        *now = now.plus(1_000);
        for node in nodes.values_mut() {
            node.tick(*now);
        }
        pump(nodes, *now);
    }
}

/// Values on A at node 1 now and then for half a second: node 1's merges
/// wait on B each time.
fn values_on_a_for_half_a_second(
    nodes: &mut BTreeMap<NodeId, MulticastNode>,
    now: &mut TimeMicros,
) {
    for i in 0..50u32 {
        *now = now.plus(1);
        let value = Bytes::from(format!("value {i}"));
        nodes
            .get_mut(&NodeId(1))
            .expect("node 1")
            .multicast(*now, A, value)
            .expect("multicast");
        run_ms(nodes, now, 10);
    }
}

#[test]
fn thesis_3_3_an_idle_cluster_proposes_no_skips() {
    let mut now = TimeMicros(0);
    let mut nodes = two_nodes(now);
    run_ms(&mut nodes, &mut now, 1_000);
    assert!(nodes.values().all(|n| n.coordinates_any()));
    let before = instances_proposed(&nodes);
    run_ms(&mut nodes, &mut now, 2_000);
    assert_eq!(
        instances_proposed(&nodes),
        before,
        "an idle cluster kept deciding instances (pacing with no merge waiting)"
    );
    assert!(nodes.values().all(|n| !n.pacing_active()));
}

#[test]
fn thesis_3_3_a_value_waiting_on_an_unpaced_stream_elsewhere_asks_for_it_at_once() {
    let mut now = TimeMicros(0);
    let mut nodes = two_nodes(now);
    run_ms(&mut nodes, &mut now, 3_000);
    for round in 0..20u32 {
        // Idle long enough for every pacer to sleep and every stream to be
        // quiet.
        run_ms(&mut nodes, &mut now, 1_200);
        assert!(
            nodes.values().all(|n| !n.pacing_active()),
            "round {round}: pacing still on"
        );
        // A value on A at node 1, whose merge then waits on B, coordinated
        // by node 2, which paces nothing. No tick follows: the messages
        // alone must deliver it.
        now = now.plus(1);
        let value = Bytes::from(format!("value {round}"));
        nodes
            .get_mut(&NodeId(1))
            .expect("node 1")
            .multicast(now, A, value.clone())
            .expect("multicast");
        let delivered = pump(&mut nodes, now);
        assert!(
            delivered
                .get(&NodeId(1))
                .is_some_and(|d| d.contains(&value)),
            "round {round}: the value waited for a tick"
        );
    }
}

#[test]
fn thesis_3_3_a_stream_a_merge_waited_on_is_paced_for_a_while_then_sleeps() {
    let mut now = TimeMicros(0);
    let mut nodes = two_nodes(now);
    run_ms(&mut nodes, &mut now, 3_000);
    values_on_a_for_half_a_second(&mut nodes, &mut now);
    // Node 1's merges waited on B: node 2 paces it.
    assert!(
        nodes[&NodeId(2)].pacing_active(),
        "B is not paced while merges wait on it"
    );
    let skips_then = nodes[&NodeId(2)].streams()[&B].stats().skips_proposed;
    run_ms(&mut nodes, &mut now, 1_500);
    assert!(
        nodes[&NodeId(2)].streams()[&B].stats().skips_proposed > skips_then,
        "a woken pacer skipped nothing"
    );
    // No merge waited for longer than the hold: it sleeps, and B decides
    // nothing more.
    assert!(
        nodes.values().all(|n| !n.pacing_active()),
        "pacing never went back to sleep"
    );
    let instances = nodes[&NodeId(2)].streams()[&B].stats().instances_proposed;
    run_ms(&mut nodes, &mut now, 1_000);
    assert_eq!(
        nodes[&NodeId(2)].streams()[&B].stats().instances_proposed,
        instances
    );
}

#[test]
fn thesis_3_3_a_retired_stream_is_paced_while_a_merge_still_waits_on_it() {
    // Node 2 marks B retired (a replica there holds a map that retires
    // it) while node 1's merge still takes B up to its fence. Its
    // coordinator must pace B on demand as for any stream: it once paced
    // retired streams never, and replicas short of their fence on a node
    // whose coordinator could not catch up by projection (its learner
    // trimmed past) waited for good (dmap swarm seed 1000163, with
    // catch-up chaining).
    let mut now = TimeMicros(0);
    let mut nodes = two_nodes(now);
    run_ms(&mut nodes, &mut now, 3_000);
    nodes.get_mut(&NodeId(2)).expect("node 2").retire_stream(B);
    values_on_a_for_half_a_second(&mut nodes, &mut now);
    assert!(
        nodes[&NodeId(2)].pacing_active(),
        "a retired stream is not paced while a merge waits on it"
    );
    // Nobody waits any more (past the fence): it sleeps, as any stream.
    run_ms(&mut nodes, &mut now, 1_500);
    assert!(nodes.values().all(|n| !n.pacing_active()));
}
