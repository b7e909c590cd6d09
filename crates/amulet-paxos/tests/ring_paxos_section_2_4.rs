//! Ring Paxos behaviour checked against thesis §2.4 and A.1.
mod common;

use amulet_types::NodeId;
use amulet_wire::Message;
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

/// A coordinator that steps down hands its queue to the new one in
/// `Propose` messages of bounded size, and the new one's ring phase 1
/// collects the old one's votes in messages of bounded size. Its queue grows while no instance
/// can be decided (here: one acceptor of three alive); handed over whole,
/// 16 MiB of values made one frame over the transport's limit, which the
/// peer refused every time it was sent again, and the stream stopped
/// (found by `scripts/bench-dlog-tail` filling a log with 1 MiB
/// multi-appends). Phase 1 carried the votes of its whole range (4 x 64
/// instances): 16 MiB here.
#[test]
fn a_coordinator_change_under_large_values_sends_only_bounded_messages_appendix_a2() {
    let mut cluster = Cluster::new(config(&[1, 2, 3], &[4]), 3);
    cluster.run(50_000);
    // Node 2 coordinates once node 1 is gone; with node 3 gone as well no
    // instance is decided and proposals pile up in node 2's queue.
    cluster.down.push(NodeId(1));
    cluster.run(1_000_000);
    assert!(cluster.nodes[&NodeId(2)].is_coordinator());
    cluster.down.push(NodeId(3));
    let value: &'static [u8] = Box::leak(vec![b'v'; 256 * 1024].into_boxed_slice());
    // 64 fill the pipeline's instances, 64 more (16 MiB) wait in the queue.
    for _ in 0..128 {
        cluster.propose(NodeId(4), value);
        cluster.run(1_000);
    }
    // Node 1 returns: node 2 steps down and forwards its queue.
    cluster.down.retain(|n| *n != NodeId(1));
    let mut largest = 0;
    let mut largest_phase1 = 0;
    let scan = |cluster: &Cluster, largest: &mut usize, largest_phase1: &mut usize| {
        for (from, _, envelope) in &cluster.network {
            match &envelope.message {
                Message::Propose { values, .. } if *from == NodeId(2) => {
                    let bytes: usize = values.iter().map(|v| v.bytes.len()).sum();
                    *largest = (*largest).max(bytes);
                }
                Message::Phase1 { accepted, .. } => {
                    let bytes: usize = accepted.iter().map(|a| a.batch.payload_bytes()).sum();
                    *largest_phase1 = (*largest_phase1).max(bytes);
                }
                _ => {}
            }
        }
    };
    for _ in 0..2_000 {
        cluster.run(1_000);
        scan(&cluster, &mut largest, &mut largest_phase1);
        if !cluster.nodes[&NodeId(2)].is_coordinator() && largest > 0 {
            break;
        }
    }
    assert!(!cluster.nodes[&NodeId(2)].is_coordinator());
    assert!(largest > 0, "node 2 handed nothing over");
    assert!(
        largest <= 1024 * 1024 + 256 * 1024,
        "a Propose of {largest} bytes"
    );
    // Node 1's phase 1 collects node 2's votes (64 instances of 256 KiB)
    // in messages that fit a frame: one batch plus one largest value.
    for _ in 0..3_000 {
        cluster.run(1_000);
        scan(&cluster, &mut largest, &mut largest_phase1);
    }
    let limits = amulet_types::StreamLimits::default();
    assert!(largest_phase1 > 0, "no phase 1 carried node 2's votes");
    assert!(
        largest_phase1 <= limits.batch_bytes_max + limits.value_bytes_max,
        "a Phase1 carrying {largest_phase1} bytes of votes"
    );
    // Everything is delivered once node 3 is back.
    cluster.down.clear();
    cluster.run(3_000_000);
    assert_eq!(cluster.values_delivered(NodeId(4)).len(), 128);
    assert!(cluster.violations.is_empty(), "{:?}", cluster.violations);
}
