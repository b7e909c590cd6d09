//! A replica that lost its state, replaced by hand: the replacement
//! bootstraps by full transfers, survivors pass the retired id's versions
//! on, every replica closes and then forgets the retired id.

use amulet_dotted::{DottedBug, NodeState, ReplicaId, Ring, SyncBudget, VersionVector};
use bytes::Bytes;

fn b(s: &str) -> Bytes {
    Bytes::copy_from_slice(s.as_bytes())
}

fn sync(nodes: &mut [NodeState], a: usize, p: usize) {
    let reply = nodes[p].answer_sync(&nodes[a].sync_request(nodes[p].id()), SyncBudget::default());
    nodes[a].apply_sync(&reply);
    nodes[a].check_invariants();
}

/// r1 writes `k`, only r2 gets it, r1's disk dies and r4 takes its place.
fn replaced(bug: DottedBug) -> Vec<NodeState> {
    let ring = Ring::new(vec![ReplicaId(1), ReplicaId(2), ReplicaId(3)], 3);
    let mut n: Vec<NodeState> = (1..=3)
        .map(|i| NodeState::new(ReplicaId(i), ring.clone()).with_bug(bug))
        .collect();
    let o = n[0]
        .coordinate(&b("k"), Some(b("A")), &VersionVector::new())
        .unwrap();
    n[1].update(&b("k"), &o);
    let ring = ring.replace(ReplicaId(1), ReplicaId(4));
    n[0] = NodeState::new_replacement(ReplicaId(4), ring.clone()).with_bug(bug);
    n[1].set_ring(ring.clone());
    n[2].set_ring(ring);
    n
}

#[test]
fn a_replacement_bootstraps_and_the_retired_id_is_closed_then_forgotten() {
    let mut n = replaced(DottedBug::None);
    // The replacement's full transfers.
    while let Some((peer, request)) = n[0].transfer_request() {
        let p = (1..3).find(|&i| n[i].id() == peer).unwrap();
        let page = n[p]
            .answer_transfer(&request, SyncBudget::default())
            .expect("the peer knows the replacement");
        n[0].apply_transfer(&page);
    }
    assert_eq!(n[0].fetch(b"k").values(), vec![b("A")]);
    for _ in 0..3 {
        for a in 0..3 {
            for p in 0..3 {
                if a != p {
                    sync(&mut n, a, p);
                }
            }
        }
        for node in &mut n {
            node.strip_some(100);
        }
    }
    for node in &n {
        assert_eq!(node.fetch(b"k").values(), vec![b("A")], "at {}", node.id());
        assert!(
            node.closed().contains(&ReplicaId(1)),
            "{} closed r1",
            node.id()
        );
        assert_eq!(node.retired_in_flight(), 0, "{} forgot r1", node.id());
        assert!(node.clock().ids().all(|id| id != ReplicaId(1)));
        assert_eq!(node.dot_keys_len(), 0);
        assert_eq!(node.non_stripped_len(), 0);
    }
    // A late copy of r1's version superseded since does not come back.
    let ctx = n[2].fetch(b"k").read_context();
    let newer = n[2].coordinate(&b("k"), Some(b("B")), &ctx).unwrap();
    n[0].update(&b("k"), &newer);
    n[1].update(&b("k"), &newer);
    let stale = NodeState::recover(&n[1].clone(), &[]);
    assert_eq!(stale.fetch(b"k").values(), vec![b("B")]);
}

/// A client reads `k` at r3 (which never got r1's write) and writes over
/// what it read; r2, which holds r1's write, gets the new version.
fn write_at_r3_after_retirement(bug: DottedBug) -> Vec<Bytes> {
    let mut n = replaced(bug);
    let ctx = n[2].fetch(b"k").read_context();
    let o = n[2].coordinate(&b("k"), Some(b("C")), &ctx).unwrap();
    n[1].update(&b("k"), &o);
    let mut values = n[1].fetch(b"k").values();
    values.sort();
    values
}

#[test]
fn a_write_that_never_saw_the_retired_replicas_version_keeps_it_as_a_sibling() {
    assert_eq!(
        write_at_r3_after_retirement(DottedBug::None),
        vec![b("A"), b("C")]
    );
}

#[test]
fn closing_a_retired_id_before_coverage_is_caught() {
    // r3 closed r1 at once: its context counts r1's write as seen, and the
    // write discards a version its client never read.
    assert_eq!(
        write_at_r3_after_retirement(DottedBug::CloseWithoutCoverage),
        vec![b("C")]
    );
}

#[test]
fn a_version_the_peers_saw_deleted_and_forgot_leaves_the_replacement_at_its_transfer() {
    let ring = Ring::new(vec![ReplicaId(1), ReplicaId(2), ReplicaId(3)], 3);
    let mut r1 = NodeState::new(ReplicaId(1), ring.clone());
    let mut r2 = NodeState::new(ReplicaId(2), ring.clone());
    let put = r1
        .coordinate(&b("k"), Some(b("V")), &VersionVector::new())
        .unwrap();
    r2.update(&b("k"), &put);
    let delete = r1
        .coordinate(&b("k"), None, &r1.fetch(b"k").read_context())
        .unwrap();
    r2.update(&b("k"), &delete);
    r1.strip_some(10);
    r2.strip_some(10);
    assert_eq!(
        (r1.stored_keys(), r2.stored_keys()),
        (0, 0),
        "deleted and forgotten"
    );
    // r3 is replaced by r4, which gets a stale copy of the put first.
    let ring = ring.replace(ReplicaId(3), ReplicaId(4));
    r1.set_ring(ring.clone());
    r2.set_ring(ring.clone());
    let mut r4 = NodeState::new_replacement(ReplicaId(4), ring);
    r4.update(&b("k"), &put);
    while let Some((peer, request)) = r4.transfer_request() {
        let from = if peer == ReplicaId(1) { &r1 } else { &r2 };
        let page = from
            .answer_transfer(&request, SyncBudget::default())
            .unwrap();
        r4.apply_transfer(&page);
        r4.check_invariants();
    }
    assert!(
        r4.fetch(b"k").values().is_empty(),
        "the deleted value came back"
    );
}

/// DottedDB §IV-G with replacement: a peer whose dot budget is smaller
/// than the retired id's dots the asker lacks (for keys the asker does not
/// hold, which it never gets) still says the retired id is complete, so
/// the asker can close it. Walking those dots one by one spent the budget
/// every time (the service swarm with lost stores, seeds 470 and 887).
#[test]
fn a_retired_ids_dots_of_keys_the_asker_does_not_hold_do_not_spend_a_small_dot_budget() {
    let ring = Ring::new((1..=4).map(ReplicaId).collect(), 3);
    let mut n: Vec<NodeState> = (1..=4)
        .map(|i| NodeState::new(ReplicaId(i), ring.clone()))
        .collect();
    // Keys of r1 and r2 that r3 does not hold.
    let keys: Vec<Bytes> = (0..200)
        .map(|i| b(&format!("k{i}")))
        .filter(|k| {
            let at = ring.replicas(k);
            at.contains(&ReplicaId(1)) && at.contains(&ReplicaId(2)) && !at.contains(&ReplicaId(3))
        })
        .take(10)
        .collect();
    assert_eq!(keys.len(), 10, "the ring spreads keys over every group");
    for k in &keys {
        let o = n[0]
            .coordinate(k, Some(b("v")), &VersionVector::new())
            .unwrap();
        n[1].update(k, &o);
    }
    let ring = ring.replace(ReplicaId(1), ReplicaId(5));
    for node in &mut n[1..] {
        node.set_ring(ring.clone());
    }
    let budget = SyncBudget {
        dots: 2,
        ..SyncBudget::default()
    };
    let reply = n[1].answer_sync(&n[2].sync_request(ReplicaId(2)), budget);
    assert!(reply.objects.is_empty(), "r3 holds none of those keys");
    assert_eq!(reply.complete, vec![ReplicaId(1)]);
}
