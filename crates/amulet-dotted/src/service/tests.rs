//! The service driven through a small deterministic cluster: nodes, a
//! network that can drop messages, journals synced as the runtime syncs
//! them (every record before the sends and replies after it), crashes
//! that recover by replay.

use super::*;
use std::collections::BTreeSet;

struct Disk {
    checkpoint: Replicas,
    journal: Vec<Record>,
}

struct Cluster {
    nodes: Vec<Option<Service>>,
    disks: Vec<Disk>,
    net: VecDeque<(u32, u32, Vec<u8>)>,
    replies: BTreeMap<u64, Result<Versioned, Refusal>>,
    placements: BTreeMap<String, Placement>,
    now: u64,
    next_token: u64,
    /// Nodes whose outgoing `Replicate` messages are dropped.
    drop_replication: BTreeSet<u32>,
    down: BTreeSet<u32>,
    epochs: Vec<u32>,
}

fn b(s: &str) -> Bytes {
    Bytes::copy_from_slice(s.as_bytes())
}

impl Cluster {
    fn new(nodes: u32, replication: u32, vnodes: u32) -> Cluster {
        Cluster::with_store(nodes, replication, vnodes, false)
    }

    fn with_store(nodes: u32, replication: u32, vnodes: u32, merkle: bool) -> Cluster {
        let ids: Vec<u32> = (1..=nodes).collect();
        let mut placement = Placement::new(replication, vnodes, &ids, 5).unwrap();
        placement.merkle = merkle;
        let mut placements = BTreeMap::new();
        placements.insert("carts".to_string(), placement);
        let mut cluster = Cluster {
            nodes: Vec::new(),
            disks: Vec::new(),
            net: VecDeque::new(),
            replies: BTreeMap::new(),
            placements,
            now: 1,
            next_token: 0,
            drop_replication: BTreeSet::new(),
            down: BTreeSet::new(),
            epochs: vec![1; nodes as usize],
        };
        for me in 1..=nodes {
            let mut service = Service::new(me, 1, ServiceConfig::default(), Replicas::default());
            service.set_placements(1, 5, cluster.placements.clone());
            cluster.nodes.push(Some(service));
            cluster.disks.push(Disk {
                checkpoint: Replicas::default(),
                journal: Vec::new(),
            });
            cluster.carry_out(me);
        }
        cluster
    }

    fn service(&mut self, node: u32) -> &mut Service {
        self.nodes[node as usize - 1].as_mut().expect("node up")
    }

    /// The runtime's rule: records first (synced), then sends and replies.
    fn carry_out(&mut self, node: u32) {
        let outputs = self.service(node).drain();
        for output in outputs {
            match output {
                Output::Journal(record) => self.disks[node as usize - 1].journal.push(record),
                Output::Send { to, bytes } => {
                    let is_replicate =
                        matches!(Message::decode(&bytes).unwrap(), Message::Replicate { .. });
                    if is_replicate && self.drop_replication.contains(&node) {
                        continue;
                    }
                    self.net.push_back((node, to, bytes));
                }
                Output::Reply { token, result } => {
                    assert!(
                        self.replies.insert(token, result).is_none(),
                        "answered twice"
                    );
                }
            }
        }
    }

    /// Delivers queued messages until none is left (bounded).
    fn settle(&mut self) {
        for _ in 0..100_000 {
            let Some((from, to, bytes)) = self.net.pop_front() else {
                return;
            };
            if self.down.contains(&to) || self.down.contains(&from) {
                continue;
            }
            let now = self.now;
            self.service(to).on_message(now, from, &bytes).unwrap();
            self.carry_out(to);
        }
        panic!("the network did not settle");
    }

    fn advance(&mut self, micros: u64, steps: u64) {
        for _ in 0..steps {
            self.now += micros / steps;
            for node in 1..=self.nodes.len() as u32 {
                if self.down.contains(&node) {
                    continue;
                }
                let now = self.now;
                self.service(node).tick(now);
                self.carry_out(node);
            }
            self.settle();
        }
    }

    fn submit(&mut self, node: u32, key: &str, operation: Operation) -> Result<Versioned, Refusal> {
        let token = self.next_token;
        self.next_token += 1;
        let now = self.now;
        self.service(node)
            .submit(now, token, "carts", b(key), operation);
        self.carry_out(node);
        self.settle();
        if !self.replies.contains_key(&token) {
            self.advance(3_000_000, 30);
        }
        self.replies
            .remove(&token)
            .expect("every request is answered")
    }

    fn get(&mut self, node: u32, key: &str, r: u32) -> Result<Versioned, Refusal> {
        self.submit(node, key, Operation::Get { r })
    }

    fn put(&mut self, node: u32, key: &str, value: &str, context: &[u8], w: u32) -> Versioned {
        self.submit(
            node,
            key,
            Operation::Write {
                value: Some(b(value)),
                context: context.to_vec(),
                w,
            },
        )
        .expect("the write reached its quorum")
    }

    fn crash_and_recover(&mut self, node: u32) {
        let disk = &self.disks[node as usize - 1];
        let mut replicas = disk.checkpoint.clone();
        for record in &disk.journal {
            replicas.apply(record).unwrap();
        }
        let before = self.service(node).replicas();
        let same = replicas.maps.len() == before.maps.len()
            && replicas.maps.iter().zip(&before.maps).all(|(a, b)| {
                a.0 == b.0
                    && a.1 .0 == b.1 .0
                    && a.1 .1.len() == b.1 .1.len()
                    && a.1
                         .1
                        .values()
                        .zip(b.1 .1.values())
                        .all(|(x, y)| x.same_data(y))
            });
        assert!(same, "replay rebuilds every replica exactly");
        self.epochs[node as usize - 1] += 1;
        let epoch = self.epochs[node as usize - 1];
        let mut service = Service::new(node, epoch, ServiceConfig::default(), replicas);
        service.set_placements(self.now, 5, self.placements.clone());
        self.nodes[node as usize - 1] = Some(service);
        self.carry_out(node);
    }

    fn values(&mut self, node: u32, key: &str, r: u32) -> Vec<String> {
        let mut values: Vec<String> = self
            .get(node, key, r)
            .unwrap()
            .values
            .iter()
            .map(|v| String::from_utf8(v.to_vec()).unwrap())
            .collect();
        values.sort();
        values
    }
}

#[test]
fn dotteddb_service_put_then_read_every_replica() {
    let mut c = Cluster::new(3, 3, 3);
    assert!(c.values(1, "alice", 3).is_empty());
    let written = c.put(2, "alice", "book", &[], 3);
    assert_eq!(written.values, vec![b("book")]);
    for node in 1..=3 {
        assert_eq!(c.values(node, "alice", 3), vec!["book"]);
    }
}

#[test]
fn dotteddb_service_concurrent_writes_are_siblings_and_a_context_supersedes_them() {
    let mut c = Cluster::new(3, 3, 3);
    c.put(1, "k", "a", &[], 3);
    let second = c.put(2, "k", "b", &[], 3);
    assert_eq!(
        second.values.len(),
        2,
        "a blind write keeps the other as a sibling"
    );
    let read = c.get(3, "k", 3).unwrap();
    let merged = c.put(1, "k", "ab", &read.context, 3);
    assert_eq!(merged.values, vec![b("ab")]);
    assert_eq!(c.values(2, "k", 3), vec!["ab"]);
}

#[test]
fn dotteddb_service_a_write_forwarded_from_a_node_without_a_replica() {
    // 4 nodes, 2 replicas per key: some node holds none of a key's.
    let mut c = Cluster::new(4, 2, 4);
    let placement = c.placements["carts"].clone();
    let key = (0..100)
        .map(|i| format!("k{i}"))
        .find(|k| {
            !placement
                .ring
                .replicas(k.as_bytes())
                .iter()
                .any(|r| placement.nodes[r] == 1)
        })
        .expect("some key is not on node 1");
    let written = c.put(1, &key, "v", &[], 2);
    assert_eq!(written.values, vec![b("v")]);
    assert_eq!(c.values(1, &key, 2), vec!["v"]);
}

#[test]
fn dotteddb_service_anti_entropy_repairs_when_every_replication_message_is_lost() {
    let mut c = Cluster::new(3, 3, 6);
    c.drop_replication = (1..=3).collect();
    for i in 0..20 {
        c.put(1 + i % 3, &format!("k{i}"), &format!("v{i}"), &[], 1);
    }
    c.drop_replication.clear();
    c.advance(5_000_000, 50);
    for i in 0..20 {
        for node in 1..=3 {
            assert_eq!(c.values(node, &format!("k{i}"), 1), vec![format!("v{i}")]);
        }
    }
    // Quiet: every replica stripped and pruned.
    c.advance(5_000_000, 50);
    for node in 1..=3 {
        for status in c.service(node).status() {
            assert_eq!(status.dot_keys, 0, "{status:?}");
            assert_eq!(status.non_stripped, 0, "{status:?}");
            assert_eq!(status.watermark_lag, 0, "{status:?}");
        }
    }
}

#[test]
fn dotteddb_service_quorums_refusals_and_a_node_down() {
    let mut c = Cluster::new(3, 3, 3);
    let refused = c.get(1, "k", 4);
    assert_eq!(
        refused,
        Err(Refusal::QuorumOutOfBounds {
            asked: 4,
            replicas: 3
        })
    );
    let bad = c.submit(
        1,
        "k",
        Operation::Write {
            value: Some(b("v")),
            context: vec![9, 9],
            w: 0,
        },
    );
    assert!(matches!(bad, Err(Refusal::BadContext(_))), "{bad:?}");
    let token = 99;
    c.service(1)
        .submit(1, token, "nope", b("k"), Operation::Get { r: 0 });
    c.carry_out(1);
    assert_eq!(
        c.replies.remove(&token),
        Some(Err(Refusal::UnknownMap("nope".into())))
    );
    c.down.insert(3);
    let failed = c.submit(
        1,
        "k",
        Operation::Write {
            value: Some(b("v")),
            context: Vec::new(),
            w: 3,
        },
    );
    assert_eq!(
        failed,
        Err(Refusal::QuorumNotReached {
            answered: 2,
            needed: 3
        })
    );
    // A majority still writes and reads; the write that timed out is not
    // undone (it stays as a sibling of the later blind write).
    let written = c.put(2, "k", "w", &[], 0);
    assert_eq!(written.values.len(), 2);
    assert_eq!(c.values(1, "k", 2), vec!["v", "w"]);
}

#[test]
fn dotteddb_service_a_crash_recovers_every_replica_from_its_journal() {
    let mut c = Cluster::new(3, 3, 3);
    for i in 0..10 {
        c.put(1 + i % 3, &format!("k{i}"), "v", &[], 2);
    }
    c.advance(1_000_000, 10);
    // A checkpoint in the middle, then more writes.
    let replicas = c.service(2).replicas();
    c.disks[1].checkpoint = replicas;
    c.disks[1].journal.clear();
    for i in 0..10 {
        c.put(2, &format!("k{i}"), "w", &[], 1);
    }
    c.crash_and_recover(2);
    // The recovered node issues new dots, never one it issued before.
    let read = c.get(2, "k0", 3).unwrap();
    let written = c.put(2, "k0", "x", &read.context, 3);
    assert_eq!(written.values, vec![b("x")]);
    c.advance(2_000_000, 20);
    assert_eq!(c.values(3, "k0", 3), vec!["x"]);
}

#[test]
fn dotteddb_service_a_dropped_map_drops_its_replicas() {
    let mut c = Cluster::new(3, 3, 3);
    c.put(1, "k", "v", &[], 3);
    for node in 1..=3 {
        let now = c.now;
        c.service(node).set_placements(now, 6, BTreeMap::new());
        c.carry_out(node);
        assert!(c.service(node).status().is_empty());
        assert!(matches!(
            c.disks[node as usize - 1].journal.last(),
            Some(Record::Dropped { .. })
        ));
    }
    assert_eq!(c.get(1, "k", 0), Err(Refusal::UnknownMap("carts".into())));
}

#[test]
fn dotteddb_service_a_node_behind_on_the_configuration_holds_messages_until_it_catches_up() {
    let mut c = Cluster::new(3, 3, 3);
    // Node 3 has not executed the map's creation yet.
    let mut fresh = Service::new(3, 2, ServiceConfig::default(), Replicas::default());
    fresh.set_placements(c.now, 4, BTreeMap::new());
    c.nodes[2] = Some(fresh);
    let token = 7;
    let now = c.now;
    let write = Operation::Write {
        value: Some(b("v")),
        context: Vec::new(),
        w: 3,
    };
    c.service(1).submit(now, token, "carts", b("k"), write);
    c.carry_out(1);
    c.settle();
    assert!(!c.replies.contains_key(&token), "waits for node 3");
    let placements = c.placements.clone();
    c.service(3).set_placements(now + 1_000, 5, placements);
    c.carry_out(3);
    c.settle();
    let written = c
        .replies
        .remove(&token)
        .expect("answered once node 3 caught up");
    assert_eq!(written.unwrap().values, vec![b("v")]);
    assert_eq!(c.values(3, "k", 3), vec!["v"]);
}

#[test]
fn dotteddb_v_b_the_merkle_baseline_serves_the_same_api_repairs_by_tree_exchange_and_keeps_tombstones(
) {
    let mut c = Cluster::with_store(3, 3, 3, true);
    c.drop_replication = (1..=3).collect();
    for i in 0..20 {
        c.put(1 + i % 3, &format!("k{i}"), &format!("v{i}"), &[], 1);
    }
    c.drop_replication.clear();
    c.advance(10_000_000, 100);
    for i in 0..20 {
        for node in 1..=3 {
            assert_eq!(c.values(node, &format!("k{i}"), 1), vec![format!("v{i}")]);
        }
    }
    let read = c.get(1, "k0", 3).unwrap();
    let merged = c.put(2, "k0", "w", &read.context, 3);
    assert_eq!(merged.values, vec![b("w")]);
    let read = c.get(1, "k1", 3).unwrap();
    let left = c
        .submit(
            1,
            "k1",
            Operation::Write {
                value: None,
                context: read.context,
                w: 3,
            },
        )
        .unwrap();
    assert!(left.values.is_empty());
    c.advance(2_000_000, 20);
    let tombstones: u64 = (1..=3)
        .flat_map(|n| c.service(n).status())
        .map(|s| s.tombstones)
        .sum();
    assert_eq!(
        tombstones, 3,
        "the delete stays as a tombstone on each replica"
    );
    // The journal rebuilds the baseline's replicas too.
    c.crash_and_recover(2);
}

#[test]
fn dotteddb_durability_a_restart_behind_the_maps_creation_keeps_its_replicas_and_their_clocks() {
    let mut c = Cluster::new(3, 3, 3);
    for i in 0..5 {
        c.put(2, &format!("k{i}"), "v", &[], 3);
    }
    // Node 2 restarts; its host first replays a configuration from before
    // the map existed, then catches up.
    let disk = &c.disks[1];
    let mut replicas = disk.checkpoint.clone();
    for record in &disk.journal {
        replicas.apply(record).unwrap();
    }
    let journaled = c.disks[1].journal.len();
    let mut service = Service::new(2, 9, ServiceConfig::default(), replicas);
    service.set_placements(c.now, 2, BTreeMap::new());
    service.set_placements(c.now, 5, c.placements.clone());
    c.nodes[1] = Some(service);
    c.carry_out(2);
    assert!(
        c.disks[1].journal[journaled..]
            .iter()
            .all(|r| !matches!(r, Record::Dropped { .. } | Record::Created { .. })),
        "nothing dropped or made again"
    );
    // Its next write takes a new dot: everyone keeps every value.
    c.put(2, "k0", "w", &[], 3);
    c.advance(2_000_000, 20);
    assert_eq!(c.values(1, "k0", 3), vec!["v", "w"]);
}
