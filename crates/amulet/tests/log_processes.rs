//! DLog on real processes (docs/logs.md): three `amulet node` processes on
//! 127.0.0.1, each a replica of every partition, sync-durable acceptors.
//! A tailer follows a log through `TailLog` streams while a writer appends
//! and every node in turn is killed with SIGKILL and restarted: the tail
//! delivers exactly the acknowledged appends at their positions, without
//! a gap or a duplicate across its reconnects. A trimmed log's
//! checkpoints shrink: the disk the replicas use for it falls. Every child
//! is killed on every path and every wait is bounded.

mod common;

use amulet_client::{Bytes, Client, Error};
use common::{client_config, Cluster, NODES};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

fn runtime() -> tokio::runtime::Runtime {
    common::runtime()
}

#[test]
fn thesis_3_5_2_a_tail_resumes_without_gaps_while_its_replicas_are_killed() {
    // Checkpoints every 500 ms with segments of 4 KiB: restarted replicas
    // map their log's segment files again.
    let mut cluster =
        Cluster::start_with_sections("tail", Some(500), "", "[logs]\nsegment_bytes = 4096\n");
    let runtime = runtime();
    let client = Arc::new(
        runtime
            .block_on(Client::connect_with(cluster.addresses(), client_config()))
            .unwrap(),
    );
    let log = runtime.block_on(client.create_log("events")).unwrap();

    // The writer appends until told to stop, recording what was
    // acknowledged (an append whose outcome is unknown may or may not be
    // in the log: its resend under the same session lands once).
    let stop = Arc::new(AtomicBool::new(false));
    let acked = Arc::new(Mutex::new(BTreeMap::<u64, Bytes>::new()));
    let writer = {
        let (log, stop, acked) = (log.clone(), stop.clone(), acked.clone());
        runtime.spawn(async move {
            let mut n = 0u64;
            while !stop.load(Ordering::Relaxed) && n < 100_000 {
                let value = Bytes::from(format!("entry-{n}"));
                match log.append(value.clone()).await {
                    Ok(position) => {
                        acked.lock().unwrap().insert(position, value);
                    }
                    Err(Error::Unavailable(_) | Error::OutcomeUnknown(_)) => {}
                    Err(e) => panic!("append refused: {e}"),
                }
                n += 1;
            }
        })
    };
    let tail_stop = Arc::new(AtomicBool::new(false));
    let tailed = Arc::new(Mutex::new(Vec::<(u64, Bytes)>::new()));
    let tailer = {
        let (log, tail_stop, tailed) = (log.clone(), tail_stop.clone(), tailed.clone());
        runtime.spawn(async move {
            let mut tail = log.tail(0, Duration::from_millis(50));
            while !tail_stop.load(Ordering::Relaxed) {
                match tokio::time::timeout(Duration::from_millis(200), tail.next()).await {
                    Ok(Ok(entry)) => tailed.lock().unwrap().push(entry),
                    Ok(Err(e)) => panic!("the tail failed at {}: {e}", tail.position()),
                    Err(_) => {}
                }
            }
            tail.reconnects()
        })
    };
    let tailed_now = || tailed.lock().unwrap().len();
    let wait_for_more = |at_least: usize| {
        for _ in 0..600 {
            if tailed_now() >= at_least {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!(
            "the tail delivered {} entries in 30 s, wanted {at_least}",
            tailed_now()
        );
    };
    wait_for_more(200);
    for node in 1..=NODES {
        cluster.kill(node);
        let before = tailed_now();
        // The tail goes on through the two live replicas.
        wait_for_more(before + 200);
        cluster.spawn(node);
        std::thread::sleep(Duration::from_millis(500));
    }
    stop.store(true, Ordering::Relaxed);
    runtime.block_on(writer).unwrap();
    // Everything acknowledged is delivered.
    let last_acked = *acked.lock().unwrap().keys().next_back().unwrap();
    wait_for_more(last_acked as usize + 1);
    tail_stop.store(true, Ordering::Relaxed);
    let reconnects = runtime.block_on(tailer).unwrap();

    let tailed = tailed.lock().unwrap().clone();
    for (i, (position, _)) in tailed.iter().enumerate() {
        assert_eq!(*position, i as u64, "a gap or a duplicate at entry {i}");
    }
    let acked = acked.lock().unwrap().clone();
    for (position, value) in &acked {
        assert_eq!(
            tailed.get(*position as usize).map(|(_, v)| v),
            Some(value),
            "acknowledged append at {position}"
        );
    }
    // A value appended once appears once (resends land once).
    let mut values: Vec<&Bytes> = tailed.iter().map(|(_, v)| v).collect();
    values.sort();
    values.dedup();
    assert_eq!(values.len(), tailed.len(), "a value delivered twice");
    assert!(
        reconnects >= 1,
        "every node was killed in turn, yet the tail never reconnected"
    );
    let in_segments = bytes_in(&cluster.dir, "segments");
    assert!(in_segments > 0, "the replicas' checkpoints made no segment");
    println!(
        "tailed {} entries ({} acknowledged), {reconnects} reconnects, {in_segments} bytes in segments",
        tailed.len(),
        acked.len()
    );
    cluster.stop();
}

/// Bytes of the files in directories named `name` (`<data>/<name>/*`)
/// under `dir`.
fn bytes_in(dir: &Path, name: &str) -> u64 {
    let mut total = 0;
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            total += bytes_in(&path, name);
        } else if dir.file_name().is_some_and(|n| n == name) {
            total += entry.metadata().map(|m| m.len()).unwrap_or(0);
        }
    }
    total
}

/// Bytes of the checkpoint files and the log segments they refer to.
fn checkpoint_bytes(dir: &Path) -> u64 {
    bytes_in(dir, "checkpoints") + bytes_in(dir, "segments")
}

#[test]
fn thesis_3_4_2_a_trimmed_log_leaves_the_checkpoints_and_its_segments() {
    // Segments of 1 MiB: the 8 MiB log goes to segment files at the
    // first checkpoints, and the checkpoints refer to them.
    let cluster = Cluster::start_with_sections(
        "trim-disk",
        Some(300),
        "",
        "[logs]\nsegment_bytes = 1048576\n",
    );
    let runtime = runtime();
    let client = runtime
        .block_on(Client::connect_with(cluster.addresses(), client_config()))
        .unwrap();
    let log = runtime.block_on(client.create_log("big")).unwrap();
    // 8 MiB of entries, in multi-appends of 1 MiB (1 KiB each).
    let entry = Bytes::from(vec![b'x'; 1024]);
    runtime.block_on(async {
        for _ in 0..8 {
            client
                .multi_append((0..1024).map(|_| ("big", entry.clone())))
                .await
                .unwrap();
        }
    });
    let checkpoints = || checkpoint_bytes(&cluster.dir);
    let wait_for = |what: &str, done: &dyn Fn(u64) -> bool| -> u64 {
        for _ in 0..300 {
            let bytes = checkpoints();
            if done(bytes) {
                return bytes;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        panic!(
            "{what}: checkpoints hold {} bytes after 30 s",
            checkpoints()
        );
    };
    // Every replica's checkpoint holds the log, in segments but its
    // last run below 1 MiB.
    let full = wait_for("the log in every replica's checkpoint", &|b| {
        b >= u64::from(NODES) * 8 * 1024 * 1024
    });
    let in_segments = bytes_in(&cluster.dir, "segments");
    assert!(
        in_segments >= u64::from(NODES) * 7 * 1024 * 1024,
        "segments hold {in_segments} bytes"
    );
    let bounds = runtime.block_on(log.bounds()).unwrap();
    assert_eq!(bounds.end, 8 * 1024);
    runtime.block_on(log.trim(bounds.end)).unwrap();
    // The next checkpoints replace the old ones.
    let trimmed = wait_for("checkpoints after the trim", &|b| b < 1024 * 1024);
    println!(
        "checkpoint and segment files: {full} bytes with the log ({in_segments} in segments), {trimmed} after the trim"
    );
    assert_eq!(runtime.block_on(log.bounds()).unwrap().first, 8 * 1024);
    cluster.stop();
}
