//! One replica set of an eventual map driven by hand through DottedDB's
//! algorithms: writes, siblings, deletes without tombstones, anti-entropy.

use amulet_dotted::{DottedBug, NodeState, Object, ReplicaId, Ring, SyncBudget, VersionVector};
use bytes::Bytes;

fn b(s: &str) -> Bytes {
    Bytes::copy_from_slice(s.as_bytes())
}

/// Three replicas of one key (a ring of three, three replicas each).
fn trio(bug: DottedBug) -> Vec<NodeState> {
    let ring = Ring::new(vec![ReplicaId(1), ReplicaId(2), ReplicaId(3)], 3);
    (1..=3)
        .map(|i| NodeState::new(ReplicaId(i), ring.clone()).with_bug(bug))
        .collect()
}

fn values(node: &NodeState, key: &str) -> Vec<Bytes> {
    let mut v = node.fetch(key.as_bytes()).values();
    v.sort();
    v
}

/// Every ordered pair syncs once (asker `a` gets `p`'s reply).
fn sync_all(nodes: &mut [NodeState], budget: SyncBudget) {
    for a in 0..nodes.len() {
        for p in 0..nodes.len() {
            if a != p {
                let reply = nodes[p].answer_sync(&nodes[a].sync_request(nodes[p].id()), budget);
                nodes[a].apply_sync(&reply);
                nodes[a].check_invariants();
            }
        }
    }
}

#[test]
fn dotteddb_iv_e_concurrent_writes_are_siblings_and_a_write_with_their_context_supersedes_both() {
    let mut n = trio(DottedBug::None);
    let k = b("cart");
    let o1 = n[0]
        .coordinate(&k, Some(b("book")), &VersionVector::new())
        .unwrap();
    let o2 = n[1]
        .coordinate(&k, Some(b("pen")), &VersionVector::new())
        .unwrap();
    // Replicate both everywhere.
    for (i, o) in [(0usize, &o1), (1, &o2)] {
        for (r, node) in n.iter_mut().enumerate() {
            if r != i {
                node.update(&k, o);
            }
        }
    }
    for node in &n {
        node.check_invariants();
        assert_eq!(
            values(node, "cart"),
            vec![b("book"), b("pen")],
            "siblings at {}",
            node.id()
        );
    }
    let read = n[2].fetch(&k);
    let merged = n[2]
        .coordinate(&k, Some(b("book+pen")), &read.read_context())
        .unwrap();
    for node in &mut n[..2] {
        node.update(&k, &merged);
    }
    for node in &n {
        assert_eq!(values(node, "cart"), vec![b("book+pen")]);
    }
}

#[test]
fn dotteddb_iv_f_a_delete_leaves_no_tombstone_once_stripped_and_the_clock_stands_in_for_it() {
    let mut n = trio(DottedBug::None);
    let k = b("session");
    let put = n[0]
        .coordinate(&k, Some(b("s1")), &VersionVector::new())
        .unwrap();
    n[1].update(&k, &put);
    n[2].update(&k, &put);
    let ctx = n[1].fetch(&k).read_context();
    let delete = n[1].coordinate(&k, None, &ctx).unwrap();
    n[0].update(&k, &delete);
    // n[2] misses the delete; anti-entropy brings it.
    sync_all(&mut n, SyncBudget::default());
    sync_all(&mut n, SyncBudget::default());
    for node in &mut n {
        node.strip_some(100);
        node.check_invariants();
        assert!(
            values(node, "session").is_empty(),
            "{} still has a value",
            node.id()
        );
        assert_eq!(node.stored_keys(), 0, "{} keeps a tombstone", node.id());
        assert_eq!(node.non_stripped_len(), 0);
    }
    // An old copy of the put arriving late does not bring the value back:
    // the node clock covers its dot.
    n[2].update(&k, &put);
    assert!(values(&n[2], "session").is_empty());
    sync_all(&mut n, SyncBudget::default());
    for node in &n {
        assert_eq!(
            node.dot_keys_len(),
            0,
            "{} keeps dot-key entries",
            node.id()
        );
    }
}

#[test]
fn dotteddb_iv_g_anti_entropy_sends_only_what_the_asker_lacks() {
    let mut n = trio(DottedBug::None);
    for i in 0..20 {
        n[0].coordinate(&b(&format!("k{i}")), Some(b("v")), &VersionVector::new())
            .unwrap();
    }
    let reply = n[0].answer_sync(&n[1].sync_request(n[0].id()), SyncBudget::default());
    assert_eq!(reply.objects.len(), 20);
    n[1].apply_sync(&reply);
    let again = n[0].answer_sync(&n[1].sync_request(n[0].id()), SyncBudget::default());
    assert!(
        again.objects.is_empty(),
        "nothing is missing: nothing is sent"
    );
    assert_eq!(n[1].clock().base(ReplicaId(1)), 20);
}

/// A reply cut at its budget closes the answerer's entry only as far as
/// it covered; merging the whole entry instead loses the versions past
/// the cut at the asker for good.
fn cut_reply_then_write(bug: DottedBug) -> Vec<Bytes> {
    let mut n = trio(bug);
    let keys: Vec<Bytes> = (0..10).map(|i| b(&format!("k{i}"))).collect();
    for k in &keys {
        n[0].coordinate(k, Some(b("old")), &VersionVector::new())
            .unwrap();
    }
    let budget = SyncBudget {
        objects: 3,
        ..SyncBudget::default()
    };
    let reply = n[0].answer_sync(&n[1].sync_request(n[0].id()), budget);
    assert_eq!(reply.objects.len(), 3);
    n[1].apply_sync(&reply);
    // A client reads the last key at n[1] and writes over what it saw.
    let last = keys.last().unwrap();
    let ctx = n[1].fetch(last).read_context();
    let write = n[1].coordinate(last, Some(b("new")), &ctx).unwrap();
    n[0].update(last, &write);
    sync_all(&mut n, SyncBudget::default());
    sync_all(&mut n, SyncBudget::default());
    values(&n[0], "k9")
}

#[test]
fn dotteddb_iv_g_a_cut_reply_closes_the_clock_only_over_what_it_covered() {
    // The client never saw "old" at k9: both are kept as siblings.
    assert_eq!(
        cut_reply_then_write(DottedBug::None),
        vec![b("new"), b("old")]
    );
}

#[test]
fn dotteddb_iv_g_a_cut_reply_that_closes_the_whole_entry_is_caught() {
    assert_eq!(
        cut_reply_then_write(DottedBug::SyncAdvancesWholeClock),
        vec![b("new")],
        "the broken variant discards a version its writer never saw"
    );
}

#[test]
fn a_read_of_a_missing_key_returns_a_context_a_write_supersedes_old_versions_with() {
    let n = trio(DottedBug::None);
    let o = n[0].fetch(b"never");
    assert!(o.values().is_empty());
    assert_eq!(Object::new().values(), Vec::<Bytes>::new());
}
