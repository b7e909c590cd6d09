//! How fast a durable acceptor that restarted catches up with a stream
//! (thesis §3.4.1: it recovers its log and rejoins). Times are the
//! harness's virtual time, so the bounds are deterministic, not
//! wall-clock.
mod common;

use amulet_paxos::Bugs;
use amulet_types::NodeId;
use common::{config, Cluster};

/// Instances decided while the node was away: about twelve retransmission
/// chunks (256 instances each).
const DECIDED_AWAY: usize = 3_000;

/// Proposes one value a millisecond at node 1 until `DECIDED_AWAY` values
/// were delivered there.
fn decide_while_away(cluster: &mut Cluster) {
    for _ in 0..DECIDED_AWAY {
        cluster.propose(NodeId(1), b"v");
        cluster.run(1_000);
    }
    cluster.run(50_000);
    assert_eq!(cluster.values_delivered(NodeId(1)).len(), DECIDED_AWAY);
}

/// Virtual microseconds until `node` delivered everything node 1 did
/// (at most `limit`).
fn micros_to_catch_up(cluster: &mut Cluster, node: NodeId, limit: u64) -> u64 {
    let reference = cluster.values_delivered(NodeId(1));
    let start = cluster.now;
    while cluster.now.since(start) < limit {
        cluster.run(1_000);
        if cluster.values_delivered(node) == reference {
            return cluster.now.since(start);
        }
    }
    panic!(
        "{node} delivered {} of {} values in {limit} us",
        cluster.values_delivered(node).len(),
        reference.len()
    );
}

#[test]
fn a_restarted_acceptor_reads_its_own_log_back_at_once_section_3_4_1() {
    // Node 3 voted in (and learned) every instance, then restarts on its
    // log. Reading one chunk of its own log per repair interval (100 ms)
    // took 1.2 s of virtual time for 3,000 instances, slower than a busy
    // stream decides; it now reads on at every tick (0.10 s, most of it
    // the repair interval before the first read).
    let mut cluster = Cluster::new(config(&[1, 2, 3], &[]), 7);
    cluster.run(50_000);
    decide_while_away(&mut cluster);
    cluster.restart(NodeId(3), Bugs::default());
    let took = micros_to_catch_up(&mut cluster, NodeId(3), 2_000_000);
    assert!(cluster.violations.is_empty(), "{:?}", cluster.violations);
    assert!(
        took <= 300_000,
        "restarted acceptor took {took} us to read back {DECIDED_AWAY} instances"
    );
}
