//! Per-user shares of a partition's open snapshots and read versions
//! (docs/security.md, resource limits): each is held by the user whose
//! command opened it, at most `*_per_user_max` per user, so one user (or
//! one leaking client) cannot take every slot from the others. Holders
//! are replicated state: a replica restored from a checkpoint, or a
//! partition that took in another's state, judges the next open the same.

use amulet_dmap::{
    ExecContext, MapCommand, MapError, MapLimits, MapName, MapReply, PartitionState,
};
use amulet_smr::Layout;

/// Small limits, so a test reaches them in a few commands.
fn limits() -> MapLimits {
    MapLimits {
        snapshots_max: 5,
        snapshots_per_user_max: 2,
        read_versions_max: 5,
        read_versions_per_user_max: 2,
        ..MapLimits::default()
    }
}

fn map() -> MapName {
    MapName::new("m").unwrap()
}

/// Runs commands as the global stream would: position and replicated
/// time advance by one per command.
struct Order {
    position: u64,
}

impl Order {
    fn new() -> Order {
        Order { position: 0 }
    }

    fn run(
        &mut self,
        state: &mut PartitionState,
        user: Option<&str>,
        command: MapCommand,
    ) -> MapReply {
        self.position += 1;
        let all = |_: &[u8]| true;
        let ctx = ExecContext {
            now_micros: self.position,
            snapshot_id: self.position,
            global_position: self.position,
            owns_key: &all,
            owns: &|_, _| true,
            user,
        };
        let reply = state.execute(&command, &ctx);
        state.check_invariants();
        reply
    }
}

fn state_with_map(order: &mut Order) -> PartitionState {
    let mut state = PartitionState::new(limits());
    let created = order.run(
        &mut state,
        None,
        MapCommand::CreateMap {
            map: map(),
            layout: Layout::Hash,
        },
    );
    assert_eq!(created, MapReply::Done);
    state
}

fn open_snapshot() -> MapCommand {
    MapCommand::OpenSnapshot {
        map: map(),
        lease_micros: 1_000_000,
    }
}

fn begin() -> MapCommand {
    MapCommand::BeginTransaction {
        lease_micros: 1_000_000,
        end: vec![],
    }
}

#[test]
fn security_limits_a_user_holds_at_most_its_share_of_snapshots_and_others_still_open() {
    let mut order = Order::new();
    let mut state = state_with_map(&mut order);
    let mut alices = vec![];
    for _ in 0..2 {
        match order.run(&mut state, Some("alice"), open_snapshot()) {
            MapReply::Snapshot(id) => alices.push(id),
            other => panic!("alice's snapshot refused: {other:?}"),
        }
    }
    assert_eq!(
        order.run(&mut state, Some("alice"), open_snapshot()),
        MapReply::Failed(MapError::TooManyUserSnapshots(2))
    );
    assert_eq!(state.snapshot_count(), 2, "a refused open holds nothing");
    // Bob's share is his own.
    assert!(matches!(
        order.run(&mut state, Some("bob"), open_snapshot()),
        MapReply::Snapshot(_)
    ));
    // A release gives alice her slot back.
    order.run(
        &mut state,
        Some("alice"),
        MapCommand::ReleaseSnapshot {
            snapshot: alices[0],
        },
    );
    assert!(matches!(
        order.run(&mut state, Some("alice"), open_snapshot()),
        MapReply::Snapshot(_)
    ));
}

#[test]
fn security_limits_the_partition_total_still_bounds_every_user_together() {
    let mut order = Order::new();
    let mut state = state_with_map(&mut order);
    for user in ["a", "a", "b", "b", "c"] {
        assert!(matches!(
            order.run(&mut state, Some(user), open_snapshot()),
            MapReply::Snapshot(_)
        ));
    }
    assert_eq!(
        order.run(&mut state, Some("d"), open_snapshot()),
        MapReply::Failed(MapError::TooManySnapshots(5))
    );
}

#[test]
fn security_limits_without_a_checked_user_only_the_partition_total_applies() {
    // An --insecure node: nobody is checked, so there is nobody to share
    // between.
    let mut order = Order::new();
    let mut state = state_with_map(&mut order);
    for _ in 0..5 {
        assert!(matches!(
            order.run(&mut state, None, open_snapshot()),
            MapReply::Snapshot(_)
        ));
    }
    assert_eq!(
        order.run(&mut state, None, open_snapshot()),
        MapReply::Failed(MapError::TooManySnapshots(5))
    );
}

#[test]
fn security_limits_a_user_holds_at_most_its_share_of_read_versions() {
    let mut order = Order::new();
    let mut state = state_with_map(&mut order);
    let mut versions = vec![];
    for _ in 0..2 {
        match order.run(&mut state, Some("alice"), begin()) {
            MapReply::ReadVersion(v) => versions.push(v),
            other => panic!("alice's begin refused: {other:?}"),
        }
    }
    assert_eq!(
        order.run(&mut state, Some("alice"), begin()),
        MapReply::Failed(MapError::TooManyUserReadVersions(2))
    );
    assert_eq!(
        state.read_version_count(),
        2,
        "a refused begin holds nothing"
    );
    assert!(matches!(
        order.run(&mut state, Some("bob"), begin()),
        MapReply::ReadVersion(_)
    ));
    // A begin that ends alice's older version frees its slot first.
    let renewing = MapCommand::BeginTransaction {
        lease_micros: 1_000_000,
        end: vec![versions[0]],
    };
    assert!(matches!(
        order.run(&mut state, Some("alice"), renewing),
        MapReply::ReadVersion(_)
    ));
    // So does an end.
    let ended = MapCommand::EndTransaction {
        read_version: versions[1],
    };
    order.run(&mut state, Some("alice"), ended);
    assert!(matches!(
        order.run(&mut state, Some("alice"), begin()),
        MapReply::ReadVersion(_)
    ));
}

#[test]
fn security_limits_holders_survive_a_checkpoint_so_a_restored_replica_judges_alike() {
    let mut order = Order::new();
    let mut state = state_with_map(&mut order);
    for _ in 0..2 {
        order.run(&mut state, Some("alice"), open_snapshot());
        order.run(&mut state, Some("alice"), begin());
    }
    let checkpoint = state.to_checkpoint();
    assert_eq!(checkpoint.holders.snapshots.len(), 2);
    assert_eq!(checkpoint.holders.read_versions.len(), 2);
    let mut restored = PartitionState::new(limits());
    restored.restore_checkpoint(checkpoint);
    restored.check_invariants();
    for (replica, name) in [(&mut state, "live"), (&mut restored, "restored")] {
        let mut order = Order {
            position: order.position,
        };
        assert_eq!(
            order.run(replica, Some("alice"), open_snapshot()),
            MapReply::Failed(MapError::TooManyUserSnapshots(2)),
            "{name}"
        );
        assert_eq!(
            order.run(replica, Some("alice"), begin()),
            MapReply::Failed(MapError::TooManyUserReadVersions(2)),
            "{name}"
        );
    }
}

#[test]
fn security_limits_holders_move_with_a_split_and_come_back_with_a_merge() {
    let mut order = Order::new();
    let mut state = state_with_map(&mut order);
    for _ in 0..2 {
        order.run(&mut state, Some("alice"), open_snapshot());
    }
    let moved = state.split_off(&|_, key: &[u8]| key >= b"n".as_slice());
    assert_eq!(moved.holders.snapshots.len(), 2, "every lease moves, held");
    let mut right = PartitionState::new(limits());
    right.restore_checkpoint(moved);
    assert_eq!(
        order.run(&mut right, Some("alice"), open_snapshot()),
        MapReply::Failed(MapError::TooManyUserSnapshots(2))
    );
    let mut merged = PartitionState::new(limits());
    order.run(
        &mut merged,
        None,
        MapCommand::CreateMap {
            map: map(),
            layout: Layout::Hash,
        },
    );
    merged.absorb_checkpoint(right.to_checkpoint());
    merged.check_invariants();
    assert_eq!(
        order.run(&mut merged, Some("alice"), open_snapshot()),
        MapReply::Failed(MapError::TooManyUserSnapshots(2))
    );
}
