//! Durable log recovery (thesis §3.4.1, A.4): whatever happens to the files
//! (a crash tearing the tail, arbitrary truncation, a flipped byte), opening
//! the log either recovers exactly the state after some prefix of the
//! writes, never less than what was synced, or reports `Corrupt`. It never
//! panics and never invents or reorders anything.

mod common;

use amulet_storage::{AcceptorLog, Disk, Durability, DurableLog, FsDisk, SimDisk, StorageError};
use amulet_types::Instance;
use common::{
    apply, apply_buffered, damage_byte, observe, op, steady_vote, Model, Op, INSTANCES,
    SEGMENT_BYTES,
};
use proptest::prelude::*;
use std::collections::BTreeMap;

/// Runs `ops` on a fresh log; returns the disk, the model after each op
/// (index 0: before any), and the number of ops that were surely durable.
fn write(ops: &[Op], durability: Durability) -> (SimDisk, Vec<Model>, usize) {
    let disk = SimDisk::new();
    let mut log = DurableLog::open(disk.clone(), durability, SEGMENT_BYTES).unwrap();
    let mut model = Model::default();
    let mut states = vec![model.clone()];
    let mut durable = 0;
    for (k, op) in ops.iter().enumerate() {
        apply(&mut log, &mut model, op);
        states.push(model.clone());
        // The log's contract: nothing dirty means everything is durable.
        if !log.dirty() {
            durable = k + 1;
        }
    }
    (disk, states, durable)
}

fn prefix_index(states: &[Model], found: &Model) -> Option<usize> {
    states.iter().rposition(|s| s == found)
}

fn newest_segment(image: &BTreeMap<String, Vec<u8>>) -> String {
    image.keys().max().cloned().expect("a segment exists")
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn a4_reopen_after_a_process_crash_keeps_every_write(
        ops in prop::collection::vec(op(), 0..80),
    ) {
        let (disk, states, _) = write(&ops, Durability::Async);
        let log = DurableLog::open(disk, Durability::Async, SEGMENT_BYTES).unwrap();
        prop_assert_eq!(&observe(&log), states.last().unwrap());
        prop_assert!(log.recovered().intact, "same boot: the OS kept everything");
    }

    #[test]
    fn a4_machine_crash_keeps_a_prefix_at_least_as_long_as_the_synced_one(
        ops in prop::collection::vec(op(), 0..80),
        seed in any::<u64>(),
        sync_mode in any::<bool>(),
    ) {
        let durability = if sync_mode { Durability::Sync } else { Durability::Async };
        let (disk, states, durable) = write(&ops, durability);
        disk.crash_machine(seed);
        let log = DurableLog::open(disk.clone(), durability, SEGMENT_BYTES).unwrap();
        let found = observe(&log);
        let k = prefix_index(&states, &found);
        prop_assert!(k.is_some(), "not a prefix: {:?}", found);
        prop_assert!(k.unwrap() >= durable || states[durable] == found,
            "lost synced writes: recovered prefix {:?} < synced {}", k, durable);
        // Sync mode acted only on synced writes; async may have lost votes.
        prop_assert_eq!(log.recovered().intact, sync_mode);
        drop(log);
        // Not intact stays not intact, even without another machine crash.
        let again = DurableLog::open(disk, durability, SEGMENT_BYTES).unwrap();
        prop_assert_eq!(again.recovered().intact, sync_mode);
        prop_assert_eq!(&observe(&again), &found);
    }

    /// Records wait in the log's buffer until written out (the host does
    /// it before any message leaves): reads see them at once, and a
    /// process crash keeps exactly what was written out or synced.
    #[test]
    fn a4_buffered_writes_read_back_and_a_process_crash_keeps_what_was_written_out(
        ops in prop::collection::vec((op(), any::<bool>()), 0..80),
    ) {
        let disk = SimDisk::new();
        let mut log = DurableLog::open(disk.clone(), Durability::Async, SEGMENT_BYTES).unwrap();
        let mut model = Model::default();
        let mut states = vec![model.clone()];
        let mut written_out = 0;
        for (k, (op, write_out)) in ops.iter().enumerate() {
            apply_buffered(&mut log, &mut model, op);
            states.push(model.clone());
            let now = observe(&log);
            prop_assert_eq!(&now.records, &model.records, "reads see buffered records");
            prop_assert_eq!(log.trimmed_below(), model.trimmed_below);
            if *write_out {
                log.write_out().unwrap();
            }
            if *write_out || matches!(op, Op::Sync) {
                written_out = k + 1;
            }
        }
        drop(log); // a process crash: the buffer is gone
        let log = DurableLog::open(disk, Durability::Async, SEGMENT_BYTES).unwrap();
        let found = observe(&log);
        // At least what was written out; a segment rolling over writes out
        // too, so possibly more, but always the state after some op.
        let at = prefix_index(&states, &found);
        prop_assert!(at.is_some(), "not a prefix: {:?}", found);
        prop_assert!(
            at.unwrap() >= written_out || states[written_out] == found,
            "lost written-out records: recovered prefix {:?} < {}", at, written_out
        );
    }

    #[test]
    fn a4_arbitrary_truncation_of_the_newest_segment_recovers_a_prefix(
        ops in prop::collection::vec(op(), 1..80),
        cut in any::<prop::sample::Index>(),
    ) {
        let (disk, states, _) = write(&ops, Durability::Sync);
        let mut image = disk.image();
        let newest = newest_segment(&image);
        let data = image.get_mut(&newest).unwrap();
        let len = cut.index(data.len() + 1);
        data.truncate(len);
        let log = DurableLog::open(SimDisk::from_image(image), Durability::Sync, SEGMENT_BYTES)
            .unwrap();
        let found = observe(&log);
        prop_assert!(prefix_index(&states, &found).is_some(), "not a prefix: {:?}", found);
    }

    #[test]
    fn a4_a_damaged_byte_anywhere_recovers_a_prefix_or_reports_corrupt(
        ops in prop::collection::vec(op(), 1..80),
        file in any::<prop::sample::Index>(),
        at in any::<prop::sample::Index>(),
        mask in 1..=255u8,
    ) {
        let (disk, states, _) = write(&ops, Durability::Sync);
        let mut image = disk.image();
        damage_byte(&mut image, file, at, mask);
        match DurableLog::open(SimDisk::from_image(image), Durability::Sync, SEGMENT_BYTES) {
            Ok(log) => {
                let found = observe(&log);
                prop_assert!(prefix_index(&states, &found).is_some(), "not a prefix: {:?}", found);
            }
            Err(StorageError::Corrupt(_)) => {}
            Err(other) => prop_assert!(false, "unexpected error {other}"),
        }
    }

    #[test]
    fn a4_arbitrary_bytes_as_a_segment_never_panic(
        junk in prop::collection::vec(any::<u8>(), 0..600),
    ) {
        let mut image = BTreeMap::new();
        image.insert("0000000000000001.log".to_string(), junk);
        match DurableLog::open(SimDisk::from_image(image), Durability::Async, SEGMENT_BYTES) {
            Ok(_) | Err(StorageError::Corrupt(_)) => {}
            Err(other) => prop_assert!(false, "unexpected error {other}"),
        }
    }
}

#[test]
fn a4_recovered_log_keeps_accepting_writes() {
    let ops: Vec<Op> = (0..20).map(|i| Op::Vote(i, 1, 50)).collect();
    let (disk, _, _) = write(&ops, Durability::Sync);
    let mut image = disk.image();
    let newest = newest_segment(&image);
    let data = image.get_mut(&newest).unwrap();
    data.truncate(data.len() - 3); // Tear the last record.
    let disk = SimDisk::from_image(image);
    let mut log = DurableLog::open(disk.clone(), Durability::Sync, SEGMENT_BYTES).unwrap();
    assert!(log.torn_bytes() > 0);
    assert_eq!(
        log.read(Instance(19)).unwrap(),
        None,
        "the torn vote is gone"
    );
    assert!(log.read(Instance(18)).unwrap().is_some());
    let mut model = Model::default();
    apply(&mut log, &mut model, &Op::Vote(19, 2, 10));
    log.sync().unwrap();
    drop(log);
    let log = DurableLog::open(disk, Durability::Sync, SEGMENT_BYTES).unwrap();
    assert_eq!(log.torn_bytes(), 0);
    assert_eq!(
        log.read(Instance(19)).unwrap(),
        model.records.get(&Instance(19)).cloned()
    );
}

#[test]
fn a4_async_log_closed_cleanly_survives_a_machine_restart_intact() {
    let disk = SimDisk::new();
    let mut log = DurableLog::open(disk.clone(), Durability::Async, SEGMENT_BYTES).unwrap();
    let mut model = Model::default();
    apply(&mut log, &mut model, &Op::Promise(3));
    apply(&mut log, &mut model, &Op::Vote(0, 3, 10));
    log.close().unwrap();
    drop(log);
    disk.crash_machine(7);
    let log = DurableLog::open(disk, Durability::Async, SEGMENT_BYTES).unwrap();
    assert!(log.recovered().intact);
    assert_eq!(observe(&log), model);
}

#[test]
fn a4_trimming_bounds_the_files() {
    let disk = SimDisk::new();
    let mut log = DurableLog::open(disk.clone(), Durability::Async, SEGMENT_BYTES).unwrap();
    let mut peak = 0;
    for i in 0..5_000u64 {
        steady_vote(&mut log, i);
        peak = peak.max(disk.bytes());
    }
    // 50..150 live instances of ~150 bytes plus one partly used segment.
    assert!(peak < 40_000, "peak {peak} bytes");
    assert!(log.segment_count() < 60, "{} segments", log.segment_count());
    assert_eq!(log.read(Instance(4_900)).unwrap(), None);
    assert!(log.read(Instance(4_999)).unwrap().is_some());
}

#[test]
fn a4_file_system_log_recovers_a_torn_tail() {
    let dir = std::env::temp_dir().join(format!("amulet-durable-log-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let mut model = Model::default();
    {
        let mut log =
            DurableLog::open(FsDisk::open(&dir).unwrap(), Durability::Sync, 4096).unwrap();
        for i in 0..INSTANCES {
            apply(&mut log, &mut model, &Op::Vote(i, 1, 120));
            apply(&mut log, &mut model, &Op::Sync);
        }
        apply(&mut log, &mut model, &Op::Trim(3));
    }
    let names = FsDisk::open(&dir).unwrap().list().unwrap();
    let newest = names.iter().max().unwrap();
    let path = dir.join(newest);
    let mut bytes = std::fs::read(&path).unwrap();
    // The segment is preallocated: its data ends before the file does.
    let end = bytes.iter().rposition(|b| *b != 0).unwrap() + 1;
    assert!(
        bytes.len() as u64 >= 4096,
        "preallocated to the segment size"
    );
    // A torn group commit: a lost sector of zeros where the next record
    // starts (the last record may end in zero bytes: a little past the
    // last nonzero one), then the segment's first record up to half its
    // body, then the zeros the crash left.
    let body = u32::from_le_bytes(bytes[..4].try_into().unwrap()) as usize;
    let cut = 12 + body / 2;
    let at = end + 64;
    let torn: Vec<u8> = bytes[..cut].to_vec();
    bytes[at..at + cut].copy_from_slice(&torn);
    std::fs::write(&path, &bytes).unwrap();
    let log = DurableLog::open(FsDisk::open(&dir).unwrap(), Durability::Sync, 4096).unwrap();
    assert!(log.torn_bytes() >= cut as u64, "{}", log.torn_bytes());
    assert_eq!(observe(&log), model);
    drop(log);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A group commit spans many sectors of a preallocated segment; a machine
/// crash before its sync loses any of them (`SimDisk::crash_machine`),
/// leaving zeros in the middle of records and whole records after them.
/// The log recovers a prefix at least as long as the synced one, every
/// time: such damage is a torn tail, never `Corrupt`.
#[test]
fn a4_lost_sectors_of_an_unsynced_group_commit_cut_the_log_there() {
    const BIG_SEGMENT_BYTES: u64 = 64 << 10;
    for seed in 0..400u64 {
        let disk = SimDisk::new();
        let mut log = DurableLog::open(disk.clone(), Durability::Sync, BIG_SEGMENT_BYTES).unwrap();
        let mut model = Model::default();
        let mut states = vec![model.clone()];
        let mut durable = 0;
        let mut k = 0;
        for i in 0..INSTANCES {
            // Values of 100-340 bytes; a sync every few votes.
            let bytes = 100 + ((seed * 31 + i * 17) % 240) as usize;
            apply(&mut log, &mut model, &Op::Vote(i, 1, bytes));
            states.push(model.clone());
            k += 1;
            if (seed + i) % 5 == 4 {
                apply(&mut log, &mut model, &Op::Sync);
                states.push(model.clone());
                k += 1;
                durable = k;
            }
        }
        drop(log);
        disk.crash_machine(seed);
        let log = DurableLog::open(disk, Durability::Sync, BIG_SEGMENT_BYTES)
            .unwrap_or_else(|e| panic!("seed {seed}: {e}"));
        let found = observe(&log);
        let at = prefix_index(&states, &found);
        assert!(at.is_some(), "seed {seed}: not a prefix: {found:?}");
        assert!(
            at.unwrap() >= durable || states[durable] == found,
            "seed {seed}: lost synced writes: recovered prefix {at:?} < synced {durable}"
        );
    }
}

/// An async log on the file system syncs in the background (the caller
/// does not wait for the fsync), and its close still waits: reopened, it
/// holds every write and is intact.
#[test]
fn a4_async_file_system_log_syncs_in_the_background_and_closes_durably() {
    let dir = std::env::temp_dir().join(format!("amulet-async-log-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let mut model = Model::default();
    {
        let mut log =
            DurableLog::open(FsDisk::open(&dir).unwrap(), Durability::Async, 4096).unwrap();
        for i in 0..INSTANCES {
            apply(&mut log, &mut model, &Op::Vote(i, 1, 120));
            apply(&mut log, &mut model, &Op::Sync);
            assert!(!log.dirty(), "a background sync leaves the log clean");
        }
        log.close().unwrap();
    }
    let log = DurableLog::open(FsDisk::open(&dir).unwrap(), Durability::Async, 4096).unwrap();
    assert!(log.recovered().intact);
    assert_eq!(observe(&log), model);
    drop(log);
    std::fs::remove_dir_all(&dir).unwrap();
}
