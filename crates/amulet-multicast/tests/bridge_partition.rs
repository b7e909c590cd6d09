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

mod common;

use amulet_types::{NodeId, TimeMicros};
use bytes::Bytes;
use common::{Net, STREAM};

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
