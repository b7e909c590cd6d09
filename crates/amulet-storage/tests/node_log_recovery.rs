//! The node-wide acceptor log (thesis §3.4.1, A.4, with every stream of a
//! node in one file set): each stream recovers exactly as its own
//! `DurableLog` would, the streams together recover a prefix of the
//! interleaved writes (they share one file), never less than what was
//! synced, one sync makes every stream durable, and trimming bounds the
//! files.

mod common;

use amulet_storage::{
    AcceptorLog, Durability, DurableLog, NodeLog, SimDisk, StorageError, StreamLog,
};
use amulet_types::{Instance, StreamId};
use common::{apply, damage_byte, observe, op, steady_vote, Model, Op, SEGMENT_BYTES};
use proptest::prelude::*;
use std::collections::BTreeMap;

const STREAMS: u32 = 3;

/// The models of every stream after each operation.
type States = Vec<Vec<Model>>;

fn open(disk: &SimDisk, durability: Durability) -> (NodeLog<SimDisk>, Vec<StreamLog<SimDisk>>) {
    let log = NodeLog::open(disk.clone(), durability, SEGMENT_BYTES).unwrap();
    let streams = (0..STREAMS)
        .map(|s| log.stream(StreamId(s + 1)).unwrap())
        .collect();
    (log, streams)
}

/// Runs `ops` (each on one stream) on a fresh node log; returns the disk,
/// the models after each op, and the number of ops surely durable.
fn write(ops: &[(u32, Op)], durability: Durability) -> (SimDisk, States, usize) {
    let disk = SimDisk::new();
    let (log, mut streams) = open(&disk, durability);
    let mut models = vec![Model::default(); STREAMS as usize];
    let mut states = vec![models.clone()];
    let mut durable = 0;
    for (k, (stream, op)) in ops.iter().enumerate() {
        let s = *stream as usize;
        apply(&mut streams[s], &mut models[s], op);
        states.push(models.clone());
        if !log.dirty() {
            durable = k + 1;
        }
    }
    (disk, states, durable)
}

fn observe_all(streams: &[StreamLog<SimDisk>]) -> Vec<Model> {
    streams.iter().map(|s| observe(s)).collect()
}

fn tagged_op() -> impl Strategy<Value = (u32, Op)> {
    (0..STREAMS, op())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn a4_node_log_reopen_after_a_process_crash_keeps_every_stream_write(
        ops in prop::collection::vec(tagged_op(), 0..120),
    ) {
        let (disk, states, _) = write(&ops, Durability::Async);
        let (_log, streams) = open(&disk, Durability::Async);
        prop_assert_eq!(&observe_all(&streams), states.last().unwrap());
        prop_assert!(streams.iter().all(|s| s.recovered().intact));
    }

    #[test]
    fn a4_node_log_machine_crash_keeps_one_prefix_of_all_streams_at_least_the_synced_one(
        ops in prop::collection::vec(tagged_op(), 0..120),
        seed in any::<u64>(),
        sync_mode in any::<bool>(),
    ) {
        let durability = if sync_mode { Durability::Sync } else { Durability::Async };
        let (disk, states, durable) = write(&ops, durability);
        disk.crash_machine(seed);
        let (log, streams) = open(&disk, durability);
        let found = observe_all(&streams);
        // One file: the streams are cut at the same point of the writes.
        let k = states.iter().rposition(|s| *s == found);
        prop_assert!(k.is_some(), "not one prefix of the writes: {:?}", found);
        prop_assert!(k.unwrap() >= durable || states[durable] == found,
            "lost synced writes: recovered prefix {:?} < synced {}", k, durable);
        // Every stream was added with a synced record, so even one whose
        // writes were all lost is known and, in async mode, not intact.
        for s in &streams {
            prop_assert_eq!(s.recovered().intact, sync_mode);
        }
        drop((log, streams));
        let (_again, streams) = open(&disk, durability);
        prop_assert_eq!(&observe_all(&streams), &found);
        for s in &streams {
            prop_assert_eq!(s.recovered().intact, sync_mode);
        }
    }

    #[test]
    fn a4_node_log_a_damaged_byte_anywhere_recovers_a_prefix_or_reports_corrupt(
        ops in prop::collection::vec(tagged_op(), 1..120),
        file in any::<prop::sample::Index>(),
        at in any::<prop::sample::Index>(),
        mask in 1..=255u8,
    ) {
        let (disk, states, _) = write(&ops, Durability::Sync);
        let mut image = disk.image();
        damage_byte(&mut image, file, at, mask);
        let disk = SimDisk::from_image(image);
        match NodeLog::open(disk, Durability::Sync, SEGMENT_BYTES) {
            Ok(log) => {
                // A flipped tag may name a stream that never existed: the
                // three real ones must still be a prefix.
                let streams: Vec<_> =
                    (0..STREAMS).map(|s| log.stream(StreamId(s + 1)).unwrap()).collect();
                let found = observe_all(&streams);
                prop_assert!(states.contains(&found), "not a prefix: {:?}", found);
            }
            Err(StorageError::Corrupt(_)) => {}
            Err(other) => prop_assert!(false, "unexpected error {other}"),
        }
    }
}

#[test]
fn a4_node_log_one_sync_makes_every_stream_durable() {
    let disk = SimDisk::new();
    let (log, mut streams) = open(&disk, Durability::Sync);
    let mut models = vec![Model::default(); STREAMS as usize];
    for (s, stream) in streams.iter_mut().enumerate() {
        apply(stream, &mut models[s], &Op::Vote(0, 1, 30));
    }
    assert!(streams.iter().all(|s| s.dirty()));
    let before = disk.syncs();
    streams[1].sync().unwrap();
    assert_eq!(disk.syncs(), before + 1, "one fsync for the group commit");
    assert!(streams.iter().all(|s| !s.dirty()) && !log.dirty());
    // Durable: a machine crash now loses none of the three votes.
    disk.crash_machine(3);
    let (_log, streams) = open(&disk, Durability::Sync);
    assert_eq!(observe_all(&streams), models);
}

#[test]
fn a4_node_log_trimming_every_stream_bounds_the_files() {
    let disk = SimDisk::new();
    let (log, mut streams) = open(&disk, Durability::Async);
    let mut peak = 0;
    for i in 0..3_000u64 {
        for stream in streams.iter_mut() {
            steady_vote(stream, i);
        }
        peak = peak.max(disk.bytes());
    }
    // Written: 3 streams x 3,000 votes of ~150 bytes (1.35 MB). Live: per
    // stream 50..150 instances, plus the segments the deletion rule keeps
    // and every 512-byte segment's header (a restatement per stream).
    assert!(peak < 200_000, "peak {peak} bytes");
    assert!(
        log.segment_count() < 400,
        "{} segments",
        log.segment_count()
    );
    for stream in &streams {
        assert_eq!(stream.read(Instance(2_900)).unwrap(), None);
        assert!(stream.read(Instance(2_999)).unwrap().is_some());
    }
}

#[test]
fn a4_node_log_a_stream_never_trimmed_keeps_only_its_own_votes_alive() {
    // Stream 1 votes early and is never trimmed (a retired stream); the
    // other two run on. Segments past stream 1's last vote still go.
    let disk = SimDisk::new();
    let (log, mut streams) = open(&disk, Durability::Async);
    let mut models = vec![Model::default(); STREAMS as usize];
    for i in 0..5 {
        apply(&mut streams[0], &mut models[0], &Op::Vote(i, 1, 20));
    }
    for i in 0..2_000u64 {
        for stream in streams.iter_mut().skip(1) {
            steady_vote(stream, i);
        }
    }
    assert!(disk.bytes() < 120_000, "{} bytes", disk.bytes());
    assert_eq!(observe(&streams[0]), models[0]);
    drop((log, streams));
    let (_log, streams) = open(&disk, Durability::Async);
    assert_eq!(observe(&streams[0]), models[0]);
}

#[test]
fn a4_node_log_streams_added_later_survive_reopening() {
    let disk = SimDisk::new();
    let log = NodeLog::open(disk.clone(), Durability::Sync, SEGMENT_BYTES).unwrap();
    let mut first = log.stream(StreamId(1)).unwrap();
    let mut model = Model::default();
    for i in 0..40 {
        apply(&mut first, &mut model, &Op::Vote(i % 24, 1, 40));
    }
    // A stream created at run time (a split) joins the same files.
    let mut late = log.stream(StreamId(9)).unwrap();
    let mut late_model = Model::default();
    apply(&mut late, &mut late_model, &Op::Promise(4));
    apply(&mut late, &mut late_model, &Op::Vote(0, 4, 10));
    late.sync().unwrap();
    drop((log, first, late));
    let log = NodeLog::open(disk.clone(), Durability::Sync, SEGMENT_BYTES).unwrap();
    assert_eq!(log.streams(), vec![StreamId(1), StreamId(9)]);
    assert_eq!(observe(&log.stream(StreamId(1)).unwrap()), model);
    assert_eq!(observe(&log.stream(StreamId(9)).unwrap()), late_model);
    // A per-stream log refuses the node log's files.
    assert!(matches!(
        DurableLog::open(disk, Durability::Sync, SEGMENT_BYTES),
        Err(StorageError::Corrupt(_))
    ));
}

#[test]
fn a4_node_log_arbitrary_bytes_never_panic() {
    let mut rng = 0x9e37_79b9_7f4a_7c15u64;
    for len in 0..400usize {
        let junk: Vec<u8> = (0..len)
            .map(|_| {
                rng ^= rng << 13;
                rng ^= rng >> 7;
                rng ^= rng << 17;
                rng as u8
            })
            .collect();
        let mut image = BTreeMap::new();
        image.insert("0000000000000001.log".to_string(), junk);
        match NodeLog::open(SimDisk::from_image(image), Durability::Async, SEGMENT_BYTES) {
            Ok(_) | Err(StorageError::Corrupt(_)) => {}
            Err(other) => panic!("unexpected error {other}"),
        }
    }
}
