//! A node that was cut off (or restarted) learns how far behind it is from
//! its peers' heartbeats (thesis A.1: decided_below), before it has caught
//! up: `MulticastNode::group_lag`. The node runtime uses it to send clients
//! to another replica instead of making them wait while it replays (found
//! by the fault suite, scenario kill-replica: a final snapshot read gave
//! up on a restarted node).

mod common;

use amulet_multicast::GroupId;
use amulet_types::NodeId;
use bytes::Bytes;
use common::Net;

#[test]
fn thesis_a_1_a_node_knows_its_lag_from_heartbeats_before_catching_up() {
    let mut net = Net::started(500);
    // Node 3 is cut off while the others decide 3,000 instances.
    net.cut_between(&[(1, 3), (2, 3)]);
    for i in 0..3_000 {
        net.multicast(NodeId(1), Bytes::from(format!("v{i}")));
        net.step();
    }
    let lag = |net: &Net| net.nodes[&NodeId(3)].group_lag(GroupId(0));
    assert_eq!(
        lag(&net),
        0,
        "cut off, node 3 has heard of nothing it lacks"
    );
    assert!(net.nodes[&NodeId(1)].group_lag(GroupId(0)) < 64);
    // Heal: node 3 learns the others' decided_below from their heartbeats
    // and reports a large lag until retransmission has caught it up.
    net.cut.clear();
    let mut seen_lag = 0;
    net.run_until(5_000, |net| {
        seen_lag = seen_lag.max(lag(net));
        seen_lag > 0 && lag(net) == 0
    });
    assert!(
        seen_lag > 2_048,
        "node 3 saw a lag of {seen_lag} instances, expected about 3,000"
    );
    assert_eq!(lag(&net), 0, "node 3 caught up");
    assert!(net.delivered[&NodeId(3)].len() >= 3_000);
    assert_eq!(
        net.nodes[&NodeId(3)].group_lag(GroupId(7)),
        0,
        "no such group"
    );
}
