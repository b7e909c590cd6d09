//! Field records and `MergeFields` (docs/field-records.md) on one
//! partition's state: a merge keeps the other fields, leaves a missing key
//! missing, refuses a value that is not a record or a merge too large and
//! then changes nothing, and stamps the key like any write (a transaction
//! that read it conflicts).

use amulet_dmap::field_record::{decode, encode, Fields};
use amulet_dmap::{
    ExecContext, KeyRange, MapCommand, MapError, MapLimits, MapName, MapReply, PartitionState,
    ReadConflict,
};
use bytes::Bytes;

fn b(s: &str) -> Bytes {
    Bytes::copy_from_slice(s.as_bytes())
}

fn record(fields: &[(&str, &str)]) -> Bytes {
    let fields: Fields = fields.iter().map(|(n, v)| (b(n), b(v))).collect();
    Bytes::from(encode(&fields))
}

struct Partition {
    state: PartitionState,
    position: u64,
    map: MapName,
}

impl Partition {
    fn new(limits: MapLimits) -> Partition {
        let mut p = Partition {
            state: PartitionState::new(limits),
            position: 0,
            map: MapName::new("m").unwrap(),
        };
        let create = MapCommand::CreateMap {
            map: p.map.clone(),
            layout: amulet_smr::Layout::Hash,
        };
        assert_eq!(p.run(&create), MapReply::Done);
        p
    }

    fn run(&mut self, command: &MapCommand) -> MapReply {
        self.position += 1;
        let owns = |_: &[u8]| true;
        let owns_in = |_: &str, _: &[u8]| true;
        let ctx = ExecContext {
            now_micros: self.position,
            snapshot_id: self.position,
            global_position: self.position,
            owns_key: &owns,
            owns: &owns_in,
            user: None,
        };
        let reply = self.state.execute(command, &ctx);
        self.state.check_invariants();
        reply
    }

    fn put(&mut self, key: &str, value: Bytes) {
        self.run(&MapCommand::Put {
            map: self.map.clone(),
            key: b(key),
            value,
        });
    }

    fn get(&mut self, key: &str) -> Option<Bytes> {
        match self.run(&MapCommand::Get {
            map: self.map.clone(),
            key: b(key),
        }) {
            MapReply::Value(value) => value,
            other => panic!("get replied {other:?}"),
        }
    }

    fn merge(&mut self, key: &str, fields: &[(&str, Option<&str>)]) -> MapReply {
        self.run(&MapCommand::MergeFields {
            map: self.map.clone(),
            key: b(key),
            fields: fields.iter().map(|(n, v)| (b(n), v.map(b))).collect(),
        })
    }
}

#[test]
fn field_records_a_merge_sets_and_removes_fields_and_keeps_the_others() {
    let mut p = Partition::new(MapLimits::default());
    p.put("r", record(&[("a", "1"), ("b", "2"), ("keep", "k")]));
    let reply = p.merge("r", &[("c", Some("3")), ("a", None), ("b", Some("two"))]);
    assert_eq!(reply, MapReply::Flag(true));
    let fields = decode(&p.get("r").unwrap()).unwrap();
    assert_eq!(
        fields.into_iter().collect::<Vec<_>>(),
        [(b("b"), b("two")), (b("c"), b("3")), (b("keep"), b("k"))]
    );
}

#[test]
fn field_records_a_missing_key_stays_missing() {
    let mut p = Partition::new(MapLimits::default());
    assert_eq!(
        p.merge("absent", &[("a", Some("1"))]),
        MapReply::Flag(false)
    );
    assert_eq!(p.get("absent"), None);
}

#[test]
fn field_records_what_is_refused_changes_nothing() {
    let limits = MapLimits {
        value_bytes_max: 64,
        ..MapLimits::default()
    };
    let mut p = Partition::new(limits);
    p.put("raw", b("not a record"));
    assert!(matches!(
        p.merge("raw", &[("a", Some("1"))]),
        MapReply::Failed(MapError::NotARecord(_))
    ));
    assert_eq!(p.get("raw"), Some(b("not a record")));

    // Each field fits, the record they make does not.
    let before = record(&[("a", &"x".repeat(40))]);
    p.put("r", before.clone());
    assert!(matches!(
        p.merge("r", &[("b", Some(&"y".repeat(40)))]),
        MapReply::Failed(MapError::ValueTooLarge { .. })
    ));
    assert_eq!(p.get("r"), Some(before.clone()));

    for bad in [
        vec![],
        vec![("a", Some("1")), ("a", None)],
        vec![("big", Some(&*"z".repeat(65)))],
    ] {
        let reply = p.merge("r", &bad);
        assert!(
            matches!(
                reply,
                MapReply::Failed(MapError::BadFields(_) | MapError::ValueTooLarge { .. })
            ),
            "{bad:?}: {reply:?}"
        );
        assert_eq!(p.get("r"), Some(before.clone()));
    }
}

#[test]
fn field_records_a_merge_is_a_write_that_transactions_conflict_with() {
    let mut p = Partition::new(MapLimits::default());
    p.put("r", record(&[("a", "1")]));
    let MapReply::ReadVersion(version) = p.run(&MapCommand::BeginTransaction {
        lease_micros: 1_000_000,
        end: Vec::new(),
    }) else {
        panic!("no read version")
    };
    assert_eq!(p.merge("r", &[("a", Some("2"))]), MapReply::Flag(true));
    let commit = MapCommand::Commit {
        read_version: Some(version),
        reads: vec![ReadConflict {
            map: p.map.clone(),
            range: KeyRange::single(b("r")),
        }],
        writes: Vec::new(),
    };
    assert!(matches!(
        p.run(&commit),
        MapReply::Failed(MapError::Conflict { .. })
    ));
}
