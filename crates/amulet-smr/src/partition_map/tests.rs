use super::*;

fn map(n: u32) -> PartitionMap {
    PartitionMap::uniform(
        StreamId(0),
        (1..=n)
            .map(|p| {
                (
                    PartitionId(p),
                    PartitionInfo {
                        stream: StreamId(p),
                        replicas: vec![NodeId(p)],
                    },
                )
            })
            .collect(),
    )
}

#[test]
fn the_token_ring_spreads_keys_over_every_partition() {
    let mut m = map(3);
    m.create_keyspace("h", Layout::Hash).unwrap();
    assert_eq!(m.version, MapVersion(2));
    let mut counts = BTreeMap::new();
    for i in 0..3000u32 {
        *counts
            .entry(m.partition_of("h", &i.to_be_bytes()).unwrap())
            .or_insert(0) += 1;
    }
    assert_eq!(counts.len(), 3);
    assert!(counts.values().all(|&c| c > 800), "{counts:?}");
}

/// DottedDB (issue 23, no replica id reused): a node's first eventual
/// store is recorded; the same one again changes nothing; another one
/// (the first lost) gives every eventual replica id the node held a
/// fresh id at its position and retires the old one, on every map.
#[test]
fn dotteddb_a_lost_eventual_store_gets_its_replica_ids_replaced() {
    let mut m = map(3);
    let eventual = |merkle| {
        Layout::Eventual(EventualLayout {
            replicas: 3,
            vnodes: 6,
            placement: None,
            merkle,
        })
    };
    m.create_keyspace("carts", eventual(false)).unwrap();
    m.create_keyspace("baseline", eventual(true)).unwrap();
    let placement = |m: &PartitionMap, name: &str| match &m.keyspaces[name] {
        Layout::Eventual(EventualLayout {
            placement: Some(p), ..
        }) => p.clone(),
        other => panic!("{other:?}"),
    };
    let before = placement(&m, "carts");
    let held = before.held_by(2);
    assert_eq!(held.len(), 2);
    assert!(
        m.register_eventual_store(NodeId(2), 7),
        "a first store is recorded"
    );
    assert_eq!(placement(&m, "carts"), before, "and replaces nothing");
    let version = m.version;
    assert!(
        !m.register_eventual_store(NodeId(2), 7),
        "the same store again"
    );
    assert_eq!(m.version, version);
    assert!(m.register_eventual_store(NodeId(2), 8), "another store");
    assert!(m.version > version);
    for name in ["carts", "baseline"] {
        let after = placement(&m, name);
        let now = after.held_by(2);
        assert_eq!(now.len(), held.len(), "{name}: as many replicas on node 2");
        for id in &held {
            assert!(!now.contains(id), "{name}: {id} was reused");
            assert!(after.ring.is_retired(*id), "{name}: {id} is retired");
            assert_eq!(after.node_of(*id), Some(2));
        }
        assert!(now.iter().all(|id| after.ring.is_replacement(*id)));
        for node in [1, 3] {
            assert_eq!(
                after.held_by(node),
                before.held_by(node),
                "{name}: node {node}"
            );
        }
    }
    assert_eq!(m.eventual_stores[&NodeId(2)], 8);
}

/// DynaTree (range scans, bulk load, the balancer's cuts): where
/// ranges start and which starts next.
#[test]
fn dynatree_range_starts_and_the_next_one() {
    let b = |k: &str| Bytes::copy_from_slice(k.as_bytes());
    let ranges = vec![
        (b(""), PartitionId(1)),
        (b("h"), PartitionId(2)),
        (b("p"), PartitionId(3)),
    ];
    assert!(starts_range(&ranges, b""));
    assert!(starts_range(&ranges, b"h"));
    assert!(!starts_range(&ranges, b"ha"));
    assert_eq!(next_range_start(&ranges, None), Some(&b("h")));
    assert_eq!(next_range_start(&ranges, Some(b"")), Some(&b("h")));
    assert_eq!(next_range_start(&ranges, Some(b"a")), Some(&b("h")));
    assert_eq!(next_range_start(&ranges, Some(b"h")), Some(&b("p")));
    assert_eq!(next_range_start(&ranges, Some(b"p")), None);
    assert_eq!(next_range_start(&ranges, Some(b"z")), None);
    let one = vec![(b(""), PartitionId(1))];
    assert_eq!(next_range_start(&one, None), None);
}

/// DMap §III-C, a move: a replica left behind learns from a newer
/// map that its partition lives elsewhere now, and only from a newer
/// one; a partition merged away follows the one it went into.
#[test]
fn dmap_iii_c_a_newer_map_naming_others_obsoletes_a_replica() {
    let old = map(3);
    let mut new = old.clone();
    new.version = MapVersion(old.version.0 + 1);
    new.partitions.get_mut(&PartitionId(1)).unwrap().replicas = vec![NodeId(2)];
    assert!(new.moved_off(PartitionId(1), NodeId(1)));
    assert!(!new.moved_off(PartitionId(1), NodeId(2)));
    assert!(new.obsoletes(&old, PartitionId(1), NodeId(1)));
    assert!(!old.obsoletes(&new, PartitionId(1), NodeId(1)), "older");
    assert!(
        !new.obsoletes(&old, PartitionId(2), NodeId(2)),
        "still named"
    );
    new.merged.insert(PartitionId(3), PartitionId(1));
    assert_eq!(new.merged_into(PartitionId(3)), PartitionId(1));
    assert!(new.obsoletes(&old, PartitionId(3), NodeId(3)));
    assert!(!new.obsoletes(&old, PartitionId(3), NodeId(2)));
}

#[test]
fn thesis_3_4_2_recovery_asks_the_replicas_first_then_every_hosting_node() {
    let mut m = map(3);
    m.partitions.get_mut(&PartitionId(1)).unwrap().replicas = vec![NodeId(3), NodeId(1)];
    assert_eq!(
        m.recovery_sources(PartitionId(1), NodeId(1)),
        vec![NodeId(3), NodeId(2)]
    );
}

#[test]
fn token_is_crc32c() {
    // The standard CRC-32C check value.
    assert_eq!(token(b"123456789"), 0xE306_9283);
}

#[test]
fn a_range_read_inside_one_range_touches_one_partition() {
    let mut m = map(3);
    let ranges = vec![
        (Bytes::new(), PartitionId(1)),
        (Bytes::from_static(b"g"), PartitionId(2)),
        (Bytes::from_static(b"p"), PartitionId(3)),
    ];
    m.create_keyspace("r", Layout::Range(ranges)).unwrap();
    let place = |from: Bound<Bytes>, to: Bound<Bytes>| Placement {
        keyspace: Some("r".into()),
        keys: Keys::Range(from, to),
    };
    let b = |s: &'static str| Bytes::from_static(s.as_bytes());
    assert_eq!(m.partition_of("r", b"a").unwrap(), PartitionId(1));
    assert_eq!(m.partition_of("r", b"g").unwrap(), PartitionId(2));
    assert_eq!(m.partition_of("r", b"zz").unwrap(), PartitionId(3));
    assert_eq!(
        m.partitions_for(&place(Bound::Included(b("h")), Bound::Excluded(b("p"))))
            .unwrap(),
        vec![PartitionId(2)]
    );
    assert_eq!(
        m.partitions_for(&place(Bound::Included(b("a")), Bound::Included(b("g"))))
            .unwrap(),
        vec![PartitionId(1), PartitionId(2)]
    );
    assert_eq!(
        m.partitions_for(&place(Bound::Excluded(b("f")), Bound::Excluded(b("g"))))
            .unwrap(),
        vec![PartitionId(1)]
    );
    assert_eq!(
        m.partitions_for(&place(Bound::Unbounded, Bound::Unbounded))
            .unwrap()
            .len(),
        3
    );
}

#[test]
fn bad_maps_are_refused() {
    let mut m = map(2);
    assert_eq!(
        m.create_keyspace(
            "r",
            Layout::Range(vec![(Bytes::from_static(b"a"), PartitionId(1))])
        ),
        Err(InvalidMap::BadRanges("r".into()).into())
    );
    assert_eq!(
        m.create_keyspace("r", Layout::Range(vec![(Bytes::new(), PartitionId(9))])),
        Err(InvalidMap::BadRanges("r".into()).into())
    );
    assert_eq!(m.version, MapVersion(1), "a refused change changes nothing");
    m.create_keyspace("h", Layout::Hash).unwrap();
    assert_eq!(
        m.create_keyspace("h", Layout::Hash),
        Err(PartitionMapError::KeyspaceExists("h".into()))
    );
    assert_eq!(
        m.partition_of("nope", b"k"),
        Err(PartitionMapError::UnknownKeyspace("nope".into()))
    );
    let mut shared = map(2);
    shared.partitions.get_mut(&PartitionId(2)).unwrap().stream = StreamId(1);
    assert_eq!(shared.validate(), Err(InvalidMap::SharedStream.into()));
    let mut lonely = map(2);
    lonely.partitions.get_mut(&PartitionId(2)).unwrap().replicas = vec![];
    assert_eq!(
        lonely.validate(),
        Err(InvalidMap::NoReplicas(PartitionId(2)).into())
    );
    let mut ring = map(2);
    ring.token_ring.reverse();
    assert_eq!(ring.validate(), Err(InvalidMap::BadTokenRing.into()));
    let mut empty = map(1);
    empty.partitions.clear();
    assert_eq!(empty.validate(), Err(InvalidMap::NoPartitions.into()));
}

/// Refusals keep the wording clients saw when they were strings.
#[test]
fn refusals_keep_their_wording() {
    assert_eq!(
            PartitionMapError::from(InvalidMap::BadRanges("r".into())).to_string(),
            "invalid partition map: ranges of \"r\" must start at the empty key, increase, and name known partitions"
        );
    assert_eq!(
        InvalidMap::StreamInUse {
            stream: StreamId(4)
        }
        .to_string(),
        "stream 4 is or was in use"
    );
    assert_eq!(
        InvalidMap::EvenAcceptors {
            stream: StreamId(5),
            acceptors: 2
        }
        .to_string(),
        "stream 5 needs an odd number of acceptors, not 2"
    );
}
