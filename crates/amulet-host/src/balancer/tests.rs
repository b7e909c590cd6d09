use super::*;
use amulet_dmap::{ExecContext, MapCommand, MapLimits, MapName, MapReply, PartitionState};
use amulet_smr::PartitionInfo;
use amulet_types::StreamId;

fn map() -> PartitionMap {
    let info = PartitionInfo {
        stream: StreamId(2),
        replicas: vec![NodeId(1), NodeId(2), NodeId(3)],
    };
    let mut map = PartitionMap::uniform(StreamId(1), vec![(PartitionId(1), info)]);
    map.create_keyspace("m", Layout::Range(vec![(Bytes::new(), PartitionId(1))]))
        .expect("a new keyspace");
    map
}

/// A partition holding map "m" with these keys and value sizes.
fn state(entries: &[(&str, usize)]) -> PartitionState {
    let mut state = PartitionState::new(MapLimits::default());
    let owns = |_: &[u8]| true;
    let ctx = ExecContext {
        now_micros: 1_000,
        snapshot_id: 1,
        global_position: 1,
        owns_key: &owns,
        owns: &|_, _| true,
        user: None,
    };
    let name = MapName::new("m").expect("a valid name");
    let create = MapCommand::CreateMap {
        map: name.clone(),
        layout: Layout::Range(vec![(Bytes::new(), PartitionId(1))]),
    };
    assert_eq!(state.execute(&create, &ctx), MapReply::Done);
    for (key, value_bytes) in entries {
        let put = MapCommand::Put {
            map: name.clone(),
            key: Bytes::copy_from_slice(key.as_bytes()),
            value: Bytes::from(vec![b'v'; *value_bytes]),
        };
        state.execute(&put, &ctx);
    }
    state
}

/// `map()` with the keys from "zz" on in a second partition: the
/// first no longer holds the map's tail.
fn map_with_tail_elsewhere() -> PartitionMap {
    let info = |stream| PartitionInfo {
        stream: StreamId(stream),
        replicas: vec![NodeId(1), NodeId(2), NodeId(3)],
    };
    let mut map = PartitionMap::uniform(
        StreamId(1),
        vec![(PartitionId(1), info(2)), (PartitionId(2), info(3))],
    );
    let ranges = vec![
        (Bytes::new(), PartitionId(1)),
        (Bytes::from_static(b"zz"), PartitionId(2)),
    ];
    map.create_keyspace("m", Layout::Range(ranges))
        .expect("a new keyspace");
    map
}

fn cut(state: &PartitionState, split_entries: u64, split_bytes: u64) -> Option<Bytes> {
    cut_with_load(state, split_entries, split_bytes, None).map(|(at, _)| at)
}

/// The cut the balancer proposes, and why, given the last load
/// window: (ops/s over it, bound, sampled keys).
fn cut_with_load(
    state: &PartitionState,
    split_entries: u64,
    split_bytes: u64,
    load: Option<(u64, u64, &[&str])>,
) -> Option<(Bytes, SplitBy)> {
    cut_in(&map(), state, split_entries, split_bytes, load)
}

fn cut_in(
    map: &PartitionMap,
    state: &PartitionState,
    split_entries: u64,
    split_bytes: u64,
    load: Option<(u64, u64, &[&str])>,
) -> Option<(Bytes, SplitBy)> {
    let config = BalancerConfig {
        split_entries,
        split_bytes,
        split_ops_per_second: load.map_or(0, |(_, bound, _)| bound),
        ..BalancerConfig::default()
    };
    let measured = load.map(|(ops_per_second, _, keys)| {
        let mut keys: Vec<Bytes> = keys
            .iter()
            .map(|k| Bytes::copy_from_slice(k.as_bytes()))
            .collect();
        keys.sort();
        MeasuredLoad {
            ops_per_second,
            keys: [("m".to_owned(), keys)].into_iter().collect(),
        }
    });
    let (_, change, split_by) = split_of(
        map,
        PartitionId(1),
        state,
        measured.as_ref(),
        &config,
        &[],
        StorageMode::AsyncDurable,
    )?;
    let Reconfiguration::Split { at_keys, .. } = change else {
        panic!("the balancer proposed {change:?} for a split");
    };
    assert_eq!(at_keys.len(), 1);
    assert_eq!(at_keys[0].0, "m");
    Some((at_keys[0].1.clone(), split_by))
}

/// DynaTree's oracle splits "past a load threshold": a small range
/// whose commands fall mostly on "a" and "b" splits where the load
/// halves ("b"), not at its middle key; under the bound, or with one
/// hot key, it does not split; past the size bound, size decides.
#[test]
fn dynatree_oracle_splits_a_hot_range_at_the_median_key_of_its_load() {
    let s = state(&[("a", 1), ("b", 1), ("c", 1), ("d", 1), ("e", 1), ("f", 1)]);
    let hot: &[&str] = &["a", "a", "a", "b", "b", "b", "c", "f"];
    let b = Bytes::from_static(b"b");
    assert_eq!(
        cut_with_load(&s, 1_000, 0, Some((100, 50, hot))),
        Some((b, SplitBy::Load))
    );
    assert_eq!(cut_with_load(&s, 1_000, 0, Some((50, 50, hot))), None);
    let one_key: &[&str] = &["c", "c", "c", "c", "c", "c", "c", "a"];
    assert_eq!(cut_with_load(&s, 1_000, 0, Some((100, 50, one_key))), None);
    let few: &[&str] = &["a", "f"];
    assert_eq!(cut_with_load(&s, 1_000, 0, Some((100, 50, few))), None);
    assert_eq!(
        cut_with_load(&s, 5, 0, Some((100, 50, hot))),
        Some((Bytes::from_static(b"d"), SplitBy::Size))
    );
}

/// Sequential inserts: the map's last range, past the bound of 18,
/// whose last window wrote only keys above its median (k15..k19 of
/// k00..k19), keeps nine tenths of the bound (k00..k15) and hands
/// the rest to the new partition, instead of a cut at its middle (a
/// left half at half the bound that is never written again). Writes
/// spread over the range, a range that is not the map's last, or a
/// tail never measured are cut at the middle; a partition far past
/// the bound keeps at least half.
#[test]
fn dynatree_growth_sequential_inserts_split_the_tail_where_the_writes_start() {
    let keys: Vec<String> = (0..20).map(|i| format!("k{i:02}")).collect();
    let s = state(&keys.iter().map(|k| (k.as_str(), 1)).collect::<Vec<_>>());
    let appended: &[&str] = &["k15", "k16", "k17", "k18", "k19"];
    let spread: &[&str] = &["k02", "k08", "k15", "k17", "k19"];
    let (k10, k16) = (Bytes::from_static(b"k10"), Bytes::from_static(b"k16"));
    assert_eq!(
        cut_with_load(&s, 18, 0, Some((5, 0, appended))),
        Some((k16, SplitBy::Tail))
    );
    assert_eq!(
        cut_with_load(&s, 18, 0, Some((5, 0, spread))),
        Some((k10.clone(), SplitBy::Size))
    );
    let elsewhere = map_with_tail_elsewhere();
    assert_eq!(
        cut_in(&elsewhere, &s, 18, 0, Some((5, 0, appended))),
        Some((k10.clone(), SplitBy::Size))
    );
    assert_eq!(cut(&s, 18, 0), Some(k10.clone()));
    assert_eq!(
        cut_with_load(&s, 4, 0, Some((5, 0, appended))),
        Some((k10, SplitBy::Tail)),
        "far past the bound: half"
    );
    assert_eq!(
        cut_with_load(&s, 100, 0, Some((5, 0, appended))),
        None,
        "under the bound"
    );
}

/// DynaTree's oracle splits "past a size threshold (bytes and
/// entries)": 4 entries of 134 bytes, one value of 100. By entries the
/// cut is the middle key; by bytes it is the key that halves the
/// bytes, past the large value.
#[test]
fn dynatree_oracle_splits_by_entries_at_the_middle_key_and_by_bytes_where_they_halve() {
    let s = state(&[("a", 10), ("b", 10), ("c", 100), ("d", 10)]);
    assert_eq!(cut(&s, 1_000, 1_000), None, "under both bounds");
    assert_eq!(cut(&s, 3, 0), Some(Bytes::from_static(b"c")));
    assert_eq!(cut(&s, 1_000, 100), Some(Bytes::from_static(b"d")));
    // Over both: the byte cut.
    assert_eq!(cut(&s, 3, 100), Some(Bytes::from_static(b"d")));
}

/// One entry larger than the byte bound cannot be cut: no split (and
/// so no split proposed again and again).
#[test]
fn dynatree_oracle_does_not_split_one_entry_past_the_byte_bound() {
    let s = state(&[("a", 1_000)]);
    assert_eq!(cut(&s, 1_000, 100), None);
}
