//! Ring Paxos behaviour checked against thesis §2.4 and A.1.
mod common;

use amulet_types::NodeId;
use common::{config, Cluster};

#[test]
fn values_proposed_anywhere_are_delivered_in_the_same_order_everywhere_section_2_4() {
    let mut cluster = Cluster::new(config(&[1, 2, 3], &[4]), 1);
    cluster.run(50_000);
    let mut ids = Vec::new();
    for i in 0..30 {
        let at = NodeId(1 + i % 4);
        ids.push(cluster.propose(at, b"value"));
        cluster.run(2_000);
    }
    cluster.run(200_000);
    let reference = cluster.values_delivered(NodeId(1));
    assert_eq!(reference.len(), ids.len(), "every value delivered once");
    for n in 2..=4 {
        assert_eq!(
            cluster.values_delivered(NodeId(n)),
            reference,
            "learner {n} agrees"
        );
    }
}

#[test]
fn coordinator_failover_keeps_delivering_appendix_a2() {
    let mut cluster = Cluster::new(config(&[1, 2, 3], &[4]), 2);
    cluster.run(50_000);
    for _ in 0..5 {
        cluster.propose(NodeId(4), b"before");
        cluster.run(2_000);
    }
    cluster.down.push(NodeId(1));
    cluster.run(1_000_000);
    for _ in 0..5 {
        cluster.propose(NodeId(4), b"after");
        cluster.run(2_000);
    }
    cluster.run(1_000_000);
    assert!(cluster.nodes[&NodeId(2)].is_coordinator());
    let reference = cluster.values_delivered(NodeId(2));
    assert_eq!(reference.len(), 10);
    assert_eq!(cluster.values_delivered(NodeId(4)), reference);
}

#[test]
fn lossy_network_still_delivers_everything_once_section_2_4() {
    for seed in 0..20 {
        let mut cluster = Cluster::new(config(&[1, 2, 3], &[4, 5]), seed);
        cluster.loss = 0.1;
        cluster.run(100_000);
        for i in 0..20 {
            cluster.propose(NodeId(1 + i % 5), b"v");
            cluster.run(3_000);
        }
        cluster.loss = 0.0;
        cluster.run(3_000_000);
        let reference = cluster.values_delivered(NodeId(1));
        assert_eq!(reference.len(), 20, "seed {seed}");
        for n in 2..=5 {
            assert_eq!(
                cluster.values_delivered(NodeId(n)),
                reference,
                "seed {seed} learner {n}"
            );
        }
    }
}
