//! The state side of online repartitioning (DMap §III-C "partitions can
//! be split and merged"): a split hands exactly the moved keys to the new
//! partition and keeps the rest; a merge takes the merged partition's keys
//! in; open snapshots never come out torn.

use amulet_dmap::{ExecContext, MapCommand, MapLimits, MapName, MapReply, PartitionState};
use amulet_smr::{Layout, StateMachine};
use bytes::Bytes;

fn name() -> MapName {
    MapName::new("m").expect("a valid name")
}

fn run(state: &mut PartitionState, command: MapCommand, at: u64) -> MapReply {
    let owns = |_: &[u8]| true;
    let ctx = ExecContext {
        now_micros: 1_000,
        snapshot_id: at,
        global_position: at,
        owns_key: &owns,
        owns: &|_, _| true,
        user: None,
    };
    state.execute(&command, &ctx)
}

fn filled(keys: &[&str]) -> PartitionState {
    let mut state = PartitionState::new(MapLimits::default());
    let create = MapCommand::CreateMap {
        map: name(),
        layout: Layout::Hash,
    };
    assert_eq!(run(&mut state, create, 1), MapReply::Done);
    for key in keys {
        let put = MapCommand::Put {
            map: name(),
            key: Bytes::copy_from_slice(key.as_bytes()),
            value: Bytes::from_static(b"v"),
        };
        run(&mut state, put, 1);
    }
    state
}

fn size(state: &mut PartitionState) -> MapReply {
    run(state, MapCommand::Size { map: name() }, 2)
}

#[test]
fn dmap_iii_c_a_split_moves_exactly_the_moved_keys() {
    let mut source = filled(&["a", "b", "c", "d", "e"]);
    let moved = source.split_off(&|map, key| map == "m" && key >= b"c".as_slice());
    assert_eq!(size(&mut source), MapReply::Count(2));
    let mut new = PartitionState::new(MapLimits::default());
    StateMachine::restore(&mut new, moved);
    assert_eq!(size(&mut new), MapReply::Count(3));
    let first = run(&mut new, MapCommand::FirstEntry { map: name() }, 3);
    assert!(
        format!("{first:?}").contains("b\"c\""),
        "first moved key is c: {first:?}"
    );
}

#[test]
fn dmap_iii_c_a_merge_takes_the_merged_keys_in() {
    let mut into = filled(&["a", "b"]);
    let source = filled(&["x", "y", "z"]);
    into.absorb_checkpoint(source.to_checkpoint());
    assert_eq!(size(&mut into), MapReply::Count(5));
}

#[test]
fn dmap_iii_c_a_snapshot_open_across_a_split_is_read_from_the_source() {
    let mut source = filled(&["a", "b", "c", "d"]);
    let open = MapCommand::OpenSnapshot {
        map: name(),
        lease_micros: 60_000_000,
    };
    assert_eq!(run(&mut source, open, 7), MapReply::Snapshot(7));
    let moved = source.split_off(&|_, key| key >= b"c".as_slice());
    // The source still holds the whole snapshot (as of before the split).
    let page = source.snapshot_page(7, None, 10).expect("held whole");
    assert_eq!(page.entries.len(), 4);
    // The new partition knows the snapshot but holds no pages of it.
    let mut new = PartitionState::new(MapLimits::default());
    StateMachine::restore(&mut new, moved);
    assert!(new.snapshot_held_elsewhere(7));
}

#[test]
fn dmap_iii_c_a_snapshot_of_a_merged_partition_is_refused_not_torn() {
    let open = MapCommand::OpenSnapshot {
        map: name(),
        lease_micros: 60_000_000,
    };
    let mut into = filled(&["a", "b"]);
    let mut source = filled(&["x", "y"]);
    run(&mut into, open.clone(), 7);
    run(&mut source, open, 7);
    into.absorb_checkpoint(source.to_checkpoint());
    // Half of snapshot 7 went with the merged partition: no replica of
    // `into` may serve `into`'s half as if it were all of it.
    assert!(into.snapshot_held_elsewhere(7));
    assert!(matches!(
        into.snapshot_page(7, None, 10),
        Err(amulet_dmap::MapError::UnknownSnapshot(7))
    ));
}
