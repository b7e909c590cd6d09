//! A node that was cut off (or restarted) learns how far behind it is from
//! its peers' heartbeats (thesis A.1: decided_below), before it has caught
//! up: `MulticastNode::group_lag`. The node runtime uses it to send clients
//! to another replica instead of making them wait while it replays (found
//! by the fault suite, scenario kill-replica: a final snapshot read gave
//! up on a restarted node).

mod common;

use amulet_multicast::GroupId;
use amulet_types::{NodeId, TimeMicros};
use bytes::Bytes;
use common::{Net, STREAM};

#[test]
fn section_a1_a_node_knows_its_lag_from_heartbeats_before_catching_up() {
    let mut now = TimeMicros(0);
    let mut net = Net::new(now);
    for _ in 0..500 {
        now = now.plus(1_000);
        net.tick(now);
    }
    // Node 3 is cut off while the others decide 3,000 instances.
    net.cut = vec![
        (NodeId(1), NodeId(3)),
        (NodeId(3), NodeId(1)),
        (NodeId(2), NodeId(3)),
        (NodeId(3), NodeId(2)),
    ];
    for i in 0..3_000 {
        now = now.plus(1_000);
        let value = Bytes::from(format!("v{i}"));
        net.nodes
            .get_mut(&NodeId(1))
            .unwrap()
            .multicast(now, STREAM, value)
            .unwrap();
        net.tick(now);
    }
    assert_eq!(
        net.nodes[&NodeId(3)].group_lag(GroupId(0)),
        0,
        "cut off, node 3 has heard of nothing it lacks"
    );
    assert!(net.nodes[&NodeId(1)].group_lag(GroupId(0)) < 64);
    // Heal, but only let heartbeats through at first: node 3 learns
    // the others' decided_below and reports a large lag.
    net.cut.clear();
    let mut seen_lag = 0;
    for _ in 0..5_000 {
        now = now.plus(1_000);
        net.tick(now);
        seen_lag = seen_lag.max(net.nodes[&NodeId(3)].group_lag(GroupId(0)));
        if seen_lag > 0 && net.nodes[&NodeId(3)].group_lag(GroupId(0)) == 0 {
            break;
        }
    }
    assert!(
        seen_lag > 2_048,
        "node 3 saw a lag of {seen_lag} instances, expected about 3,000"
    );
    assert_eq!(
        net.nodes[&NodeId(3)].group_lag(GroupId(0)),
        0,
        "node 3 caught up"
    );
    assert!(net.delivered[&NodeId(3)].len() >= 3_000);
    assert_eq!(
        net.nodes[&NodeId(3)].group_lag(GroupId(7)),
        0,
        "no such group"
    );
}
