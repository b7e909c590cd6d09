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

use amulet_types::NodeId;
use bytes::Bytes;
use common::Net;

#[test]
fn ring_section_a2_a_bridge_partition_at_the_coordinator_keeps_deciding() {
    let mut net = Net::started(1_000);
    assert_eq!(net.coordinator(), Some(NodeId(1)));
    // 2 and 3 lose each other, both keep node 1.
    net.cut_between(&[(2, 3)]);
    net.run_ms(2_000);
    let mut values = Vec::new();
    for i in 0..20 {
        let value = Bytes::from(format!("during the bridge {i}"));
        net.multicast(NodeId(1), value.clone());
        values.push(value.clone());
        // Two seconds at most for each.
        net.run_until(2_000, |net| net.delivered[&NodeId(2)].contains(&value));
    }
    // Node 3 hears of the decisions from node 1 (heartbeats, gap repair).
    net.run_ms(3_000);
    net.assert_all_delivered(&values, "during the bridge partition");
}

#[test]
fn ring_section_a2_a_bridge_cutting_the_coordinator_from_one_acceptor_keeps_one_coordinator() {
    let mut net = Net::started(1_000);
    assert_eq!(net.coordinator(), Some(NodeId(1)));
    // 1 and 2 lose each other, both keep node 3.
    net.cut_between(&[(1, 2)]);
    net.run_ms(2_000);
    let mut values = Vec::new();
    let mut coordinated_by_2 = 0;
    for i in 0..40 {
        // Half the values from each side of the cut.
        let proposer = if i % 2 == 0 { NodeId(1) } else { NodeId(2) };
        let value = Bytes::from(format!("during the bridge {i}"));
        net.multicast(proposer, value.clone());
        values.push(value.clone());
        // Two seconds at most for each.
        net.run_until(2_000, |net| {
            coordinated_by_2 += usize::from(net.nodes[&NodeId(2)].coordinates_any());
            net.delivered[&NodeId(3)].contains(&value)
        });
    }
    net.run_ms(3_000);
    assert_eq!(
        coordinated_by_2, 0,
        "node 2 took over while a majority heard the coordinator"
    );
    assert_eq!(net.coordinator(), Some(NodeId(1)));
    net.assert_all_delivered(&values, "during the bridge partition");
}
