//! DLog's commands (thesis §3.5.2, Table 3.2; docs/logs.md) on partition
//! states: appends take dense positions, a multi-append over two
//! partitions appends each entry in the partition owning its log and is
//! refused everywhere when one log is missing, reads and trims refuse
//! positions outside the log and change nothing, a log moves whole in a
//! split and comes back in a merge with its positions, checkpoints keep
//! positions, and maps and logs share one namespace.

use amulet_dmap::{
    combine, ExecContext, MapCommand, MapError, MapLimits, MapName, MapReply, PartitionState,
};
use amulet_smr::StateMachine;
use bytes::Bytes;

fn name(s: &str) -> MapName {
    MapName::new(s).unwrap()
}

fn b(s: &str) -> Bytes {
    Bytes::copy_from_slice(s.as_bytes())
}

/// Two partitions: the first owns the log `a`, the second every other.
struct Cluster {
    parts: [PartitionState; 2],
    position: u64,
}

fn owner(log: &str) -> usize {
    usize::from(log != "a")
}

impl Cluster {
    fn new() -> Cluster {
        let mut c = Cluster {
            parts: [
                PartitionState::new(MapLimits::default()),
                PartitionState::new(MapLimits::default()),
            ],
            position: 0,
        };
        for log in ["a", "b"] {
            assert_eq!(
                c.run(&MapCommand::CreateLog { log: name(log) }),
                MapReply::Done
            );
        }
        c
    }

    /// Runs `command` in the partitions its logs live in (every partition
    /// for create and drop) and combines the partials, as the replication
    /// layer does.
    fn run(&mut self, command: &MapCommand) -> MapReply {
        self.position += 1;
        let involved: Vec<usize> = match command {
            MapCommand::CreateLog { .. } | MapCommand::DropLog { .. } => vec![0, 1],
            MapCommand::MultiAppend { appends } => {
                let mut v: Vec<usize> = appends.iter().map(|(l, _)| owner(l.as_str())).collect();
                v.sort();
                v.dedup();
                v
            }
            other => vec![owner(other.log().unwrap().as_str())],
        };
        let partials: Vec<MapReply> = involved
            .iter()
            .map(|&p| {
                let owns_key = |_: &[u8]| true;
                let owns = |log: &str, _: &[u8]| owner(log) == p;
                let ctx = ExecContext {
                    now_micros: self.position,
                    snapshot_id: self.position,
                    global_position: self.position,
                    owns_key: &owns_key,
                    owns: &owns,
                    user: None,
                };
                let reply = self.parts[p].execute(command, &ctx);
                self.parts[p].check_invariants();
                reply
            })
            .collect();
        combine(command, &partials)
    }

    fn append(&mut self, log: &str, value: &str) -> MapReply {
        self.run(&MapCommand::Append {
            log: name(log),
            value: b(value),
        })
    }

    fn read(&mut self, log: &str, from: u64, max: u32) -> MapReply {
        self.run(&MapCommand::ReadLog {
            log: name(log),
            from,
            max_entries: max,
        })
    }

    fn bounds(&mut self, log: &str) -> MapReply {
        self.run(&MapCommand::LogBounds { log: name(log) })
    }
}

#[test]
fn thesis_3_5_2_appends_take_dense_positions_from_zero() {
    let mut c = Cluster::new();
    for i in 0..5 {
        assert_eq!(c.append("a", &format!("v{i}")), MapReply::Position(i));
    }
    assert_eq!(c.append("b", "w"), MapReply::Position(0));
    match c.read("a", 1, 3) {
        MapReply::LogEntries(read) => {
            assert_eq!((read.from, read.first, read.end), (1, 0, 5));
            assert_eq!(read.entries, vec![b("v1"), b("v2"), b("v3")]);
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(c.bounds("a"), MapReply::LogBounds { first: 0, end: 5 });
}

#[test]
fn thesis_3_5_2_a_multi_append_over_two_partitions_appends_each_entry_where_its_log_lives() {
    let mut c = Cluster::new();
    c.append("b", "x");
    let multi = MapCommand::MultiAppend {
        appends: vec![
            (name("a"), b("1")),
            (name("b"), b("2")),
            (name("a"), b("3")),
        ],
    };
    assert_eq!(
        c.run(&multi),
        MapReply::Positions(vec![Some(0), Some(1), Some(1)])
    );
    assert_eq!(c.bounds("a"), MapReply::LogBounds { first: 0, end: 2 });
    assert_eq!(c.bounds("b"), MapReply::LogBounds { first: 0, end: 2 });
    // The placeholder of `a` in the other partition stays empty.
    assert_eq!(c.parts[1].log(&name("a")).unwrap().end(), 0);
}

#[test]
fn thesis_3_5_2_a_multi_append_naming_a_missing_log_is_refused_in_every_partition() {
    let mut c = Cluster::new();
    let multi = MapCommand::MultiAppend {
        appends: vec![
            (name("a"), b("1")),
            (name("b"), b("2")),
            (name("c"), b("3")),
        ],
    };
    assert_eq!(
        c.run(&multi),
        MapReply::Failed(MapError::UnknownLog("c".into()))
    );
    assert_eq!(c.bounds("a"), MapReply::LogBounds { first: 0, end: 0 });
    assert_eq!(c.bounds("b"), MapReply::LogBounds { first: 0, end: 0 });
    let empty = MapCommand::MultiAppend { appends: vec![] };
    assert!(matches!(
        c.run(&MapCommand::Append {
            log: name("a"),
            value: b("")
        }),
        MapReply::Position(0)
    ));
    assert!(matches!(
        empty.validate(&MapLimits::default()),
        Err(MapError::BadLogRequest(_))
    ));
}

#[test]
fn thesis_3_5_2_trimmed_entries_are_never_served_and_positions_are_never_reused() {
    let mut c = Cluster::new();
    for i in 0..6 {
        c.append("a", &i.to_string());
    }
    let trim = |below| MapCommand::TrimLog {
        log: name("a"),
        below,
    };
    assert_eq!(c.run(&trim(4)), MapReply::LogBounds { first: 4, end: 6 });
    assert_eq!(
        c.read("a", 3, 5),
        MapReply::Failed(MapError::LogTrimmed {
            log: "a".into(),
            first: 4
        })
    );
    assert_eq!(
        c.read("a", 7, 1),
        MapReply::Failed(MapError::PastLogEnd {
            log: "a".into(),
            position: 7,
            end: 6
        })
    );
    // Past the end: refused, nothing changed.
    assert!(matches!(
        c.run(&trim(9)),
        MapReply::Failed(MapError::PastLogEnd { .. })
    ));
    assert_eq!(c.run(&trim(2)), MapReply::LogBounds { first: 4, end: 6 });
    assert_eq!(c.run(&trim(6)), MapReply::LogBounds { first: 6, end: 6 });
    assert_eq!(c.append("a", "next"), MapReply::Position(6));
    match c.read("a", 6, 10) {
        MapReply::LogEntries(read) => assert_eq!(read.entries, vec![b("next")]),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_read_asking_for_no_entries_or_too_many_is_refused() {
    let mut c = Cluster::new();
    assert!(matches!(
        c.read("a", 0, 0),
        MapReply::Failed(MapError::BadLogRequest(_))
    ));
    let over = MapLimits::default().range_entries_max + 1;
    assert!(matches!(
        c.read("a", 0, over),
        MapReply::Failed(MapError::BadLogRequest(_))
    ));
    assert!(matches!(c.read("a", 0, 1), MapReply::LogEntries(_)));
}

#[test]
fn maps_and_logs_share_one_namespace() {
    let mut c = Cluster::new();
    let create_map = MapCommand::CreateMap {
        map: name("a"),
        layout: amulet_smr::Layout::Hash,
    };
    let ctx_owns = |_: &[u8]| true;
    let ctx = ExecContext {
        now_micros: 1,
        snapshot_id: 1,
        global_position: 100,
        owns_key: &ctx_owns,
        owns: &|_, _| true,
        user: None,
    };
    assert_eq!(
        c.parts[0].execute(&create_map, &ctx),
        MapReply::Failed(MapError::MapExists("a".into()))
    );
    assert_eq!(
        c.run(&MapCommand::CreateLog { log: name("a") }),
        MapReply::Failed(MapError::LogExists("a".into()))
    );
    // A map command on a log's name finds no map; a log command on a
    // map's name finds no log.
    let get = MapCommand::Get {
        map: name("a"),
        key: b("k"),
    };
    assert_eq!(
        c.parts[0].execute(&get, &ctx),
        MapReply::Failed(MapError::UnknownMap("a".into()))
    );
    assert_eq!(
        c.run(&MapCommand::DropLog { log: name("a") }),
        MapReply::Done
    );
    assert_eq!(
        c.append("a", "x"),
        MapReply::Failed(MapError::UnknownLog("a".into()))
    );
}

#[test]
fn a_log_moves_whole_in_a_split_and_keeps_its_positions_through_a_merge_and_a_checkpoint() {
    let mut c = Cluster::new();
    for i in 0..3 {
        c.append("a", &i.to_string());
    }
    c.run(&MapCommand::TrimLog {
        log: name("a"),
        below: 1,
    });
    let moved = c.parts[0].split_off(&|space, key| space == "a" && key == b"a");
    assert_eq!(
        c.parts[0].log(&name("a")).unwrap().end(),
        0,
        "left a placeholder"
    );
    let mut new_partition = PartitionState::new(MapLimits::default());
    StateMachine::restore(&mut new_partition, moved);
    let log = new_partition.log(&name("a")).unwrap();
    assert_eq!((log.first(), log.end()), (1, 3));
    // Merged back: the log is the one that went further, not the
    // placeholder.
    let back = new_partition.to_checkpoint();
    c.parts[0].absorb_checkpoint(back);
    let log = c.parts[0].log(&name("a")).unwrap();
    assert_eq!((log.first(), log.end()), (1, 3));
    // A restored replica continues at the same end.
    let checkpoint = c.parts[0].to_checkpoint();
    let mut restored = PartitionState::new(MapLimits::default());
    restored.restore_checkpoint(checkpoint);
    c.parts[0] = restored;
    assert_eq!(c.append("a", "3"), MapReply::Position(3));
}
