//! DMap §III-B c: a command that spans partitions, executed in each and
//! combined, answers what one unpartitioned sorted map would. Random
//! command sequences run against 1 to 3 partitions and the sequential
//! model the linearizability checker uses.

use amulet_dmap::{
    combine, ExecContext, KeyBound, MapCommand, MapLimits, MapName, MapReply, Nearest,
    PartitionState, RangeQuery,
};
use amulet_sim::checker::linearizability::Model;
use amulet_sim::dmap::{MapOp, Observed, SortedMapModel};
use bytes::Bytes;
use proptest::prelude::*;

fn name() -> MapName {
    MapName::new("m").unwrap()
}

fn owner(key: &[u8], partitions: usize) -> usize {
    crc32c_like(key) as usize % partitions
}

// A stand-in for the token hash: any deterministic spread works here.
fn crc32c_like(key: &[u8]) -> u32 {
    key.iter()
        .fold(2166136261u32, |h, b| (h ^ *b as u32).wrapping_mul(16777619))
}

fn key() -> impl Strategy<Value = Bytes> {
    (0u8..12).prop_map(|k| Bytes::from(vec![b'k', k]))
}

fn value() -> impl Strategy<Value = Bytes> {
    (0u8..4).prop_map(|v| Bytes::from(vec![b'v', v]))
}

fn bound() -> impl Strategy<Value = Option<KeyBound>> {
    proptest::option::of(
        (key(), any::<bool>()).prop_map(|(key, inclusive)| KeyBound { key, inclusive }),
    )
}

fn command() -> impl Strategy<Value = MapCommand> {
    let m = name;
    prop_oneof![
        key().prop_map(move |key| MapCommand::Get { map: m(), key }),
        key().prop_map(move |key| MapCommand::ContainsKey { map: m(), key }),
        (key(), value()).prop_map(move |(key, value)| MapCommand::Put {
            map: m(),
            key,
            value
        }),
        key().prop_map(move |key| MapCommand::Remove { map: m(), key }),
        (key(), value()).prop_map(move |(key, value)| MapCommand::PutIfAbsent {
            map: m(),
            key,
            value
        }),
        (key(), value()).prop_map(move |(key, value)| MapCommand::Replace {
            map: m(),
            key,
            value
        }),
        (key(), value(), value()).prop_map(move |(key, expected, value)| {
            MapCommand::ReplaceIfEquals {
                map: m(),
                key,
                expected,
                value,
            }
        }),
        (key(), value()).prop_map(move |(key, expected)| MapCommand::RemoveIfEquals {
            map: m(),
            key,
            expected
        }),
        proptest::collection::vec((key(), value()), 0..5)
            .prop_map(move |entries| MapCommand::PutAll { map: m(), entries }),
        value().prop_map(move |value| MapCommand::ContainsValue { map: m(), value }),
        Just(MapCommand::Size { map: m() }),
        Just(MapCommand::IsEmpty { map: m() }),
        Just(MapCommand::Clear { map: m() }).prop_map(|c| c),
        Just(MapCommand::FirstEntry { map: m() }),
        Just(MapCommand::LastEntry { map: m() }),
        (
            key(),
            prop_oneof![
                Just(Nearest::Floor),
                Just(Nearest::Ceiling),
                Just(Nearest::Higher),
                Just(Nearest::Lower)
            ]
        )
            .prop_map(move |(key, nearest)| MapCommand::NearestEntry {
                map: m(),
                key,
                nearest
            }),
        (bound(), bound(), 1u32..6, any::<bool>()).prop_map(move |(from, to, limit, reverse)| {
            // Order the ends so the range is valid.
            let (from, to) = match (from, to) {
                (Some(a), Some(b)) if a.key > b.key => (Some(b), Some(a)),
                other => other,
            };
            MapCommand::Range {
                map: m(),
                range: RangeQuery {
                    from,
                    to,
                    limit,
                    reverse,
                },
            }
        }),
    ]
}

/// What one sorted map answers (the simulator's sequential model).
fn model(state: &mut SortedMapModel, command: &MapCommand) -> MapReply {
    let (next, observed) = state.step(&MapOp::Command(command.clone()));
    *state = next;
    match observed {
        Observed::Reply(reply) => reply,
        Observed::Entries(_) | Observed::Denied => unreachable!("a command gives a reply"),
    }
}

fn run_partitioned(parts: &mut [PartitionState], command: &MapCommand, position: u64) -> MapReply {
    let n = parts.len();
    let involved: Vec<usize> = match command.single_key() {
        Some(key) => vec![owner(key, n)],
        None => (0..n).collect(),
    };
    let partials: Vec<MapReply> = involved
        .iter()
        .map(|&p| {
            let owns = move |k: &[u8]| owner(k, n) == p;
            let owns_in = move |_: &str, k: &[u8]| owner(k, n) == p;
            let ctx = ExecContext {
                now_micros: position,
                snapshot_id: position,
                global_position: position,
                owns_key: &owns,
                owns: &owns_in,
                user: None,
            };
            parts[p].execute(command, &ctx)
        })
        .collect();
    combine(command, &partials)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn partitions_answer_like_one_sorted_map(
        commands in proptest::collection::vec(command(), 1..60),
        partitions in 1usize..4,
    ) {
        let mut parts: Vec<PartitionState> =
            (0..partitions).map(|_| PartitionState::new(MapLimits::default())).collect();
        let create = MapCommand::CreateMap { map: name(), layout: amulet_smr::Layout::Hash };
        prop_assert_eq!(run_partitioned(&mut parts, &create, 0), MapReply::Done);
        let mut oracle = SortedMapModel::default();
        for (i, command) in commands.iter().enumerate() {
            let got = run_partitioned(&mut parts, command, i as u64 + 1);
            let want = model(&mut oracle, command);
            prop_assert_eq!(got, want, "command {} {:?}", i, command);
        }
    }
}

#[test]
fn a_snapshot_keeps_its_version_while_writers_continue() {
    let mut state = PartitionState::new(MapLimits::default());
    let owns = |_: &[u8]| true;
    let ctx = |t: u64| ExecContext {
        now_micros: t,
        snapshot_id: t,
        global_position: t,
        owns_key: &owns,
        owns: &|_, _| true,
        user: None,
    };
    state.execute(
        &MapCommand::CreateMap {
            map: name(),
            layout: amulet_smr::Layout::Hash,
        },
        &ctx(0),
    );
    for i in 0..100u8 {
        state.execute(
            &MapCommand::Put {
                map: name(),
                key: Bytes::from(vec![i]),
                value: Bytes::from_static(b"old"),
            },
            &ctx(1),
        );
    }
    let opened = state.execute(
        &MapCommand::OpenSnapshot {
            map: name(),
            lease_micros: 1_000,
        },
        &ctx(7),
    );
    assert_eq!(opened, MapReply::Snapshot(7));
    for i in 0..100u8 {
        state.execute(
            &MapCommand::Put {
                map: name(),
                key: Bytes::from(vec![i]),
                value: Bytes::from_static(b"new"),
            },
            &ctx(8),
        );
    }
    state.execute(&MapCommand::Clear { map: name() }, &ctx(9));
    let mut seen = Vec::new();
    let mut after: Option<Bytes> = None;
    loop {
        let page = state.snapshot_page(7, after.as_deref(), 30).unwrap();
        assert!(page.entries.len() <= 30);
        seen.extend(page.entries.iter().cloned());
        after = page.entries.last().map(|(k, _)| k.clone());
        if !page.more {
            break;
        }
    }
    assert_eq!(seen.len(), 100);
    assert!(seen.iter().all(|(_, v)| v == "old"));
    assert!(seen.windows(2).all(|w| w[0].0 < w[1].0));
    // The lease ends by replicated time, not by a local clock.
    state.execute(&MapCommand::Size { map: name() }, &ctx(1_006));
    assert!(state.snapshot_page(7, None, 10).is_ok());
    state.execute(&MapCommand::Size { map: name() }, &ctx(1_007));
    assert_eq!(
        state.snapshot_page(7, None, 10),
        Err(amulet_dmap::MapError::UnknownSnapshot(7))
    );
}

#[test]
fn invalid_commands_fail_and_change_nothing() {
    let limits = MapLimits {
        key_bytes_max: 4,
        value_bytes_max: 4,
        ..MapLimits::default()
    };
    let mut state = PartitionState::new(limits);
    let owns = |_: &[u8]| true;
    let ctx = ExecContext {
        now_micros: 0,
        snapshot_id: 0,
        global_position: 0,
        owns_key: &owns,
        owns: &|_, _| true,
        user: None,
    };
    state.execute(
        &MapCommand::CreateMap {
            map: name(),
            layout: amulet_smr::Layout::Hash,
        },
        &ctx,
    );
    let bad = [
        MapCommand::Put {
            map: name(),
            key: Bytes::from_static(b"toolong"),
            value: Bytes::new(),
        },
        MapCommand::Put {
            map: name(),
            key: Bytes::new(),
            value: Bytes::from_static(b"toolong"),
        },
        MapCommand::PutAll {
            map: name(),
            entries: vec![
                (Bytes::from_static(b"a"), Bytes::new()),
                (Bytes::from_static(b"b"), Bytes::from_static(b"toolong")),
            ],
        },
        MapCommand::Put {
            map: MapName::new("other").unwrap(),
            key: Bytes::new(),
            value: Bytes::new(),
        },
        MapCommand::CreateMap {
            map: name(),
            layout: amulet_smr::Layout::Hash,
        },
        MapCommand::Range {
            map: name(),
            range: RangeQuery {
                from: Some(KeyBound {
                    key: Bytes::from_static(b"b"),
                    inclusive: true,
                }),
                to: Some(KeyBound {
                    key: Bytes::from_static(b"a"),
                    inclusive: true,
                }),
                limit: 1,
                reverse: false,
            },
        },
        MapCommand::Range {
            map: name(),
            range: RangeQuery {
                from: None,
                to: None,
                limit: 0,
                reverse: false,
            },
        },
        MapCommand::OpenSnapshot {
            map: name(),
            lease_micros: 0,
        },
    ];
    for command in &bad {
        let reply = state.execute(command, &ctx);
        assert!(
            matches!(reply, MapReply::Failed(_)),
            "{command:?} gave {reply:?}"
        );
    }
    assert_eq!(
        state.execute(&MapCommand::Size { map: name() }, &ctx),
        MapReply::Count(0)
    );
    assert_eq!(state.snapshot_count(), 0);
}
