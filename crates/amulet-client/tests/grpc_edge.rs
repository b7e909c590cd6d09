//! The bad-input table at the gRPC edge (issue 3, "every malformed or
//! invalid request gets its documented error and changes nothing"):
//! three real nodes in this process serve the client API on 127.0.0.1;
//! raw requests, each wrong in one way, get the status code and
//! `amulet-error` kind that `proto/amulet/v1/amulet.proto` documents, and
//! the map is the same afterwards.

mod common;

use amulet_api::pb::{self, amulet_client::AmuletClient, map_request::Op};
use amulet_api::{error_kind, outcome_to_result, refusal_reason, ErrorKind, BATCH_REQUESTS_MAX};
use amulet_client::{Bytes, Client};
use std::time::Duration;
use tonic::transport::Channel;
use tonic::Code;

fn map(name: &str) -> String {
    name.to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn bad_requests_get_their_documented_status_and_change_nothing() {
    let cluster = common::start("grpc-edge", 5).await;
    let address = cluster.addresses[0].clone();
    let client = Client::connect([address.clone()]).await.unwrap();
    let m = client.create_map("m").await.unwrap();
    m.put_all((0..20u32).map(|i| (format!("k{i:02}"), format!("v{i}"))))
        .await
        .unwrap();
    let before = all_entries(&m).await;
    assert_eq!(before.len(), 20);

    let mut raw = AmuletClient::connect(format!("http://{address}"))
        .await
        .unwrap();
    let version = client.partition_map().version.0;
    let session = 4242u64;
    raw.open_session(pb::OpenSessionRequest {
        session,
        lease_micros: 60_000_000,
        map_version: version,
    })
    .await
    .unwrap();
    let key_of_partition_1 = (0..)
        .map(|i| Bytes::from(format!("probe{i}")))
        .find(|k| {
            client
                .partition_map()
                .partition_of("m", k)
                .is_ok_and(|p| p.0 == 1)
        })
        .unwrap();
    let big = |n: usize| Bytes::from(vec![b'x'; n]);
    let header = |partition: u32, session: u64, sequence: u64, version: u64| {
        Some(pb::RequestHeader {
            map_version: version,
            partition,
            session,
            sequence,
        })
    };
    let put = |key: Bytes, value: Bytes| {
        Some(Op::Put(pb::Put {
            map: map("m"),
            key,
            value,
        }))
    };
    let k = key_of_partition_1.clone();
    let range = |from: &str, to: &str, limit: u32| {
        Some(Op::Range(pb::Range {
            map: map("m"),
            from: Some(pb::KeyBound {
                key: Bytes::from(from.to_string()),
                inclusive: true,
            }),
            to: Some(pb::KeyBound {
                key: Bytes::from(to.to_string()),
                inclusive: true,
            }),
            limit,
            reverse: false,
        }))
    };
    type Case = (&'static str, pb::MapRequest, Code, Option<ErrorKind>);
    let mut sequence = 0u64;
    let mut next = || {
        sequence += 1;
        sequence
    };
    let cases: Vec<Case> = vec![
        (
            "key above key_bytes_max (16 KiB)",
            pb::MapRequest {
                header: header(1, session, next(), version),
                op: put(big(16 * 1024 + 1), Bytes::new()),
            },
            Code::InvalidArgument,
            None,
        ),
        (
            "value above value_bytes_max (1 MiB)",
            pb::MapRequest {
                header: header(1, session, next(), version),
                op: put(k.clone(), big(1024 * 1024 + 1)),
            },
            Code::InvalidArgument,
            None,
        ),
        (
            "unknown map",
            pb::MapRequest {
                header: header(1, session, next(), version),
                op: Some(Op::Put(pb::Put {
                    map: map("nope"),
                    key: k.clone(),
                    value: Bytes::new(),
                })),
            },
            Code::NotFound,
            None,
        ),
        (
            "bad map name",
            pb::MapRequest {
                header: header(1, session, next(), version),
                op: Some(Op::Get(pb::Get {
                    map: map("no spaces allowed"),
                    key: k.clone(),
                })),
            },
            Code::InvalidArgument,
            None,
        ),
        (
            "range start above its end",
            pb::MapRequest {
                header: header(1, session, next(), version),
                op: range("z", "a", 10),
            },
            Code::InvalidArgument,
            None,
        ),
        (
            "range limit 0",
            pb::MapRequest {
                header: header(1, session, next(), version),
                op: range("a", "z", 0),
            },
            Code::InvalidArgument,
            None,
        ),
        (
            "range limit above range_entries_max",
            pb::MapRequest {
                header: header(1, session, next(), version),
                op: range("a", "z", 10_001),
            },
            Code::InvalidArgument,
            None,
        ),
        (
            "no operation",
            pb::MapRequest {
                header: header(1, session, next(), version),
                op: None,
            },
            Code::InvalidArgument,
            None,
        ),
        (
            "no header",
            pb::MapRequest {
                header: None,
                op: put(k.clone(), Bytes::new()),
            },
            Code::InvalidArgument,
            None,
        ),
        (
            "nearest unspecified",
            pb::MapRequest {
                header: header(1, session, next(), version),
                op: Some(Op::NearestEntry(pb::NearestEntry {
                    map: map("m"),
                    key: k.clone(),
                    nearest: 0,
                })),
            },
            Code::InvalidArgument,
            None,
        ),
        (
            "sequence 0 in a session",
            pb::MapRequest {
                header: header(1, session, 0, version),
                op: put(k.clone(), Bytes::new()),
            },
            Code::InvalidArgument,
            None,
        ),
        (
            // (A key the partition still holds runs: fence keys.)
            "stale partition map version, command spanning partitions",
            pb::MapRequest {
                header: header(1, session, next(), version - 1),
                op: Some(Op::Size(pb::Size { map: map("m") })),
            },
            Code::FailedPrecondition,
            Some(ErrorKind::StaleMap),
        ),
        (
            "partition this node does not replicate",
            pb::MapRequest {
                header: header(99, session, next(), version),
                op: put(k.clone(), Bytes::new()),
            },
            Code::FailedPrecondition,
            Some(ErrorKind::NotAReplica),
        ),
        (
            "key sent to the wrong partition",
            pb::MapRequest {
                header: header(2, session, next(), version),
                op: put(k.clone(), Bytes::new()),
            },
            Code::FailedPrecondition,
            Some(ErrorKind::NotAReplica),
        ),
        (
            "stale session (never opened)",
            pb::MapRequest {
                header: header(1, 777_777, 1, version),
                op: put(k.clone(), Bytes::new()),
            },
            Code::FailedPrecondition,
            Some(ErrorKind::SessionExpired),
        ),
        (
            "snapshot lease 0",
            pb::MapRequest {
                header: header(1, session, next(), version),
                op: Some(Op::OpenSnapshot(pb::OpenSnapshot {
                    map: map("m"),
                    lease_micros: 0,
                })),
            },
            Code::InvalidArgument,
            None,
        ),
        (
            "putAll above put_all_entries_max",
            pb::MapRequest {
                header: header(1, session, next(), version),
                op: Some(Op::PutAll(pb::PutAll {
                    map: map("m"),
                    entries: (0..10_001u32)
                        .map(|i| pb::Entry {
                            key: Bytes::from(i.to_be_bytes().to_vec()),
                            value: Bytes::new(),
                        })
                        .collect(),
                })),
            },
            Code::InvalidArgument,
            None,
        ),
        (
            "creating a map that exists",
            pb::MapRequest {
                header: header(1, session, next(), version),
                op: Some(Op::CreateMap(pb::CreateMap {
                    map: map("m"),
                    layout: None,
                })),
            },
            Code::AlreadyExists,
            None,
        ),
        (
            "range layout without splits",
            pb::MapRequest {
                header: header(1, session, next(), version),
                op: Some(Op::CreateMap(pb::CreateMap {
                    map: map("r"),
                    layout: Some(pb::Layout {
                        kind: Some(pb::layout::Kind::Range(pb::RangeLayout { splits: vec![] })),
                    }),
                })),
            },
            Code::InvalidArgument,
            None,
        ),
        (
            "range layout naming an unknown partition",
            pb::MapRequest {
                header: header(1, session, next(), version),
                op: Some(Op::CreateMap(pb::CreateMap {
                    map: map("r"),
                    layout: Some(pb::Layout {
                        kind: Some(pb::layout::Kind::Range(pb::RangeLayout {
                            splits: vec![pb::RangeSplit {
                                start_key: Bytes::new(),
                                partition: 99,
                            }],
                        })),
                    }),
                })),
            },
            Code::InvalidArgument,
            None,
        ),
    ];
    // The cases the cluster refuses by a verdict of its own (not a
    // decoding error or a map operation's failure) name the reason.
    let reason_of = |name: &str| match name {
        "range layout naming an unknown partition" => Some("bad-ranges"),
        _ => None,
    };
    let count = cases.len();
    // The same table as one ExecuteBatch, a good read in the middle: each
    // request gets its own outcome, the bad ones exactly their documented
    // status, and the good one its answer.
    let good = pb::MapRequest {
        header: header(1, 0, 0, version),
        op: Some(Op::Get(pb::Get {
            map: map("m"),
            key: k.clone(),
        })),
    };
    let middle = count / 2;
    let mut batch: Vec<pb::MapRequest> = cases.iter().map(|c| c.1.clone()).collect();
    batch.insert(middle, good.clone());
    let outcomes = tokio::time::timeout(
        Duration::from_secs(10),
        raw.execute_batch(pb::MapRequestBatch { requests: batch }),
    )
    .await
    .expect("the batch is answered in time")
    .expect("a batch of bad requests is still a batch")
    .into_inner()
    .outcomes;
    assert_eq!(outcomes.len(), count + 1);
    let mut outcomes: Vec<_> = outcomes.into_iter().map(outcome_to_result).collect();
    let answer = outcomes.remove(middle);
    assert!(answer.is_ok(), "the good read in the batch: {answer:?}");
    for ((name, _, code, kind), outcome) in cases.iter().zip(outcomes) {
        let status = outcome.expect_err(name);
        assert_eq!(status.code(), *code, "{name} (batched): {status:?}");
        assert_eq!(error_kind(&status), *kind, "{name} (batched): {status:?}");
        assert_eq!(
            refusal_reason(&status),
            reason_of(name),
            "{name} (batched): {status:?}"
        );
    }
    let status = raw
        .execute_batch(pb::MapRequestBatch {
            requests: vec![good; BATCH_REQUESTS_MAX + 1],
        })
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::InvalidArgument, "batch over its limit");
    for (name, request, code, kind) in cases {
        let status = tokio::time::timeout(Duration::from_secs(10), raw.execute(request))
            .await
            .unwrap_or_else(|_| panic!("{name}: no answer"))
            .expect_err(name);
        assert_eq!(status.code(), code, "{name}: {status:?}");
        assert_eq!(error_kind(&status), kind, "{name}: {status:?}");
        assert_eq!(
            refusal_reason(&status),
            reason_of(name),
            "{name}: {status:?}"
        );
        assert!(!status.message().is_empty(), "{name}: a status says why");
    }
    // Session requests and snapshot reads are checked too.
    let status = raw
        .open_session(pb::OpenSessionRequest {
            session: 0,
            lease_micros: 1,
            map_version: version,
        })
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::InvalidArgument, "session id 0");
    let status = raw
        .open_session(pb::OpenSessionRequest {
            session: 9,
            lease_micros: u64::MAX,
            map_version: version,
        })
        .await
        .unwrap_err();
    assert_eq!(
        status.code(),
        Code::InvalidArgument,
        "session lease too long"
    );
    assert_eq!(
        refusal_reason(&status),
        Some("session-lease-out-of-bounds"),
        "session lease too long"
    );
    let status = raw
        .read_snapshot(pb::ReadSnapshotRequest {
            partition: 1,
            snapshot: 1,
            after: None,
            page_size: 10,
        })
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::NotFound, "unknown snapshot");
    let status = raw
        .read_snapshot(pb::ReadSnapshotRequest {
            partition: 99,
            snapshot: 1,
            after: None,
            page_size: 10,
        })
        .await
        .unwrap_err();
    assert_eq!(
        status.code(),
        Code::FailedPrecondition,
        "snapshot of a partition not replicated here"
    );
    // Garbage bytes where a message should be: a decoding error, not a crash.
    let status = raw
        .execute(pb::MapRequest {
            header: header(1, session, 1_000, version),
            op: Some(Op::Get(pb::Get {
                map: map("m"),
                key: k.clone(),
            })),
        })
        .await;
    assert!(
        status.is_ok(),
        "the node still serves after the table: {status:?}"
    );

    let after = all_entries(&m).await;
    assert_eq!(after, before, "the bad requests changed nothing");
    assert_eq!(client.partition_map().keyspaces.len(), 1);
    eprintln!("{count} bad map requests and 4 bad session/snapshot requests refused");

    // The node counted them: GET /metrics on the client port.
    let metrics = http_get(&address, "/metrics").await;
    for expected in [
        "amulet_requests_total{op=\"put\",outcome=\"InvalidArgument\"}",
        "amulet_requests_total{op=\"put\",outcome=\"FailedPrecondition\"}",
        "amulet_request_duration_seconds_bucket",
        "amulet_stream_decided_below{stream=\"1\"}",
        "amulet_replica_global_position{partition=\"1\"}",
        "amulet_partition_map_version",
    ] {
        assert!(
            metrics.contains(expected),
            "/metrics lacks {expected}:\n{metrics}"
        );
    }
    client.close().await;
    cluster.stop().await;
}

/// Thesis §4.5 at the gRPC edge: a reconfiguration ordered while an
/// earlier one waits for its fence is refused with ABORTED, the
/// `retryable` kind clients resend on and the reason
/// `reconfiguration-pending`; the earlier one is accepted. With M = 1 the
/// fence follows the barrier's own instance, so only changes ordered in
/// the same batch as the first come before its fence; the others are
/// called stale. To batch them, the global stream keeps one instance in
/// flight at a time (`pipeline_instances_max = 1`) and clients keep it
/// busy with map sizes (global commands) while several changes are sent
/// at once: they queue at the coordinator and go in one batch.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn thesis_4_5_a_reconfiguration_before_the_fence_is_refused_as_retryable() {
    let cluster = common::start_with("grpc-retryable", 6, |text| {
        let global = "[[streams]]\nid = 1\nacceptors = [1, 2, 3]\nstorage = \"memory\"\n";
        assert!(text.contains(global), "{text}");
        text.replace(
            global,
            &format!("{global}[streams.limits]\npipeline_instances_max = 1\n"),
        )
    })
    .await;
    let addresses = cluster.addresses.clone();
    let client = Client::connect(addresses.clone()).await.unwrap();
    let mut raws = Vec::new();
    for address in &addresses {
        raws.push(
            AmuletClient::connect(format!("http://{address}"))
                .await
                .unwrap(),
        );
    }
    let m = client.create_map("busy").await.unwrap();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let busy: Vec<_> = (0..4)
        .map(|_| {
            let m = m.clone();
            let stop = stop.clone();
            tokio::spawn(async move {
                for _ in 0..100_000 {
                    if stop.load(std::sync::atomic::Ordering::Relaxed) {
                        break;
                    }
                    let _ = m.size().await;
                }
            })
        })
        .collect();
    const AT_ONCE: u32 = 16;
    let mut refused_retryably = 0;
    for round in 0..20u32 {
        let raw = global_coordinator(&mut raws).await;
        let map = client.partition_map();
        let replicas = map.partitions[&amulet_types::PartitionId(1)]
            .replicas
            .clone();
        let calls: Vec<_> = (0..AT_ONCE)
            .map(|i| {
                let change = amulet_smr::Reconfiguration::ReplaceStream {
                    partition: amulet_types::PartitionId(1),
                    stream: amulet_smr::StreamSpec {
                        stream: amulet_types::StreamId(100 + round * AT_ONCE + i),
                        acceptors: replicas.clone(),
                        learners: vec![],
                        storage: amulet_types::StorageMode::Memory,
                        base_position: 0,
                    },
                };
                let request = amulet_api::reconfiguration_to_pb(map.version.0, &change);
                let mut raw = raw.clone();
                tokio::spawn(async move {
                    tokio::time::timeout(Duration::from_secs(10), raw.reconfigure(request))
                        .await
                        .expect("a reconfiguration is answered in time")
                })
            })
            .collect();
        let mut answers = Vec::new();
        for call in calls {
            answers.push(call.await.unwrap());
        }
        let accepted = answers.iter().filter(|a| a.is_ok()).count();
        assert!(accepted <= 1, "one change per map version: {answers:?}");
        if accepted == 0 {
            // The map moved on before these were ordered (the nodes
            // register their eventual stores once, at their first start,
            // each a new version): every one is stale. Refresh and retry.
            assert!(
                answers
                    .iter()
                    .all(|a| matches!(a, Err(s) if error_kind(s) == Some(ErrorKind::StaleMap))),
                "none accepted, so all stale: {answers:?}"
            );
            assert!(
                client
                    .wait_for_map_version(map.version.0 + 1, Duration::from_secs(10), |_| {})
                    .await
            );
            continue;
        }
        for status in answers.iter().filter_map(|a| a.as_ref().err()) {
            match error_kind(status) {
                Some(ErrorKind::Retryable) => {
                    assert_eq!(status.code(), Code::Aborted, "{status:?}");
                    assert_eq!(
                        refusal_reason(status),
                        Some("reconfiguration-pending"),
                        "{status:?}"
                    );
                    assert_eq!(
                        status.message(),
                        "another reconfiguration is taking effect; retry"
                    );
                    refused_retryably += 1;
                }
                Some(ErrorKind::StaleMap) => {
                    assert_eq!(status.code(), Code::FailedPrecondition, "{status:?}")
                }
                _ => panic!("neither retryable nor stale: {status:?}"),
            }
        }
        eprintln!("round {round}: {refused_retryably} refused retryably");
        if refused_retryably > 0 {
            break;
        }
        // The accepted change takes effect everywhere before the next round.
        assert!(
            client
                .wait_for_map_version(map.version.0 + 1, Duration::from_secs(10), |_| {})
                .await
        );
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    for task in busy {
        task.await.unwrap();
    }
    assert!(
        refused_retryably > 0,
        "no reconfiguration came before another's fence in 20 rounds"
    );
    client.close().await;
    cluster.stop().await;
}

/// The client of the node coordinating the global stream (stream 1), as
/// the nodes report it (waiting out an election, bounded).
async fn global_coordinator(raws: &mut [AmuletClient<Channel>]) -> AmuletClient<Channel> {
    for _ in 0..100 {
        for raw in raws.iter_mut() {
            let status = raw.status(pb::StatusRequest {}).await.unwrap().into_inner();
            if status
                .streams
                .iter()
                .any(|s| s.stream == 1 && s.coordinator)
            {
                return raw.clone();
            }
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("no node coordinates the global stream");
}

async fn all_entries(m: &amulet_client::DMap) -> Vec<(Bytes, Bytes)> {
    let mut snapshot = m.snapshot().await.unwrap();
    let mut out = Vec::new();
    while let Some(entry) = snapshot.next().await.unwrap() {
        out.push(entry);
    }
    snapshot.close().await.unwrap();
    out
}

/// A plain HTTP/1.1 GET, as a Prometheus scraper sends it.
async fn http_get(address: &str, path: &str) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(address).await.unwrap();
    let request = format!("GET {path} HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut response = Vec::new();
    tokio::time::timeout(Duration::from_secs(10), stream.read_to_end(&mut response))
        .await
        .expect("the metrics answer in time")
        .unwrap();
    let text = String::from_utf8_lossy(&response).into_owned();
    assert!(text.starts_with("HTTP/1.1 200"), "{text}");
    text
}

/// `TailLog` (docs/logs.md, the status table on the rpc): a bad name, an
/// unknown log, a map's name and a trimmed start end the call with their
/// documented status; a good tail streams entries from its position, then
/// heartbeats; nothing changes the log; `/metrics` shows the log's bounds
/// and the open tail.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn thesis_3_5_2_tail_requests_get_their_documented_status() {
    let cluster = common::start("grpc-tail", 5).await;
    let addresses = cluster.addresses.clone();
    let client = Client::connect(addresses.clone()).await.unwrap();
    client.create_map("m").await.unwrap();
    let log = client.create_log("l").await.unwrap();
    for value in ["a", "b", "c", "d"] {
        log.append(value).await.unwrap();
    }
    log.trim(1).await.unwrap();
    let version = client.partition_map().version.0;
    let tail = |log: &str, from: u64| pb::TailLogRequest {
        log: log.to_string(),
        from,
        max_bytes: 0,
        map_version: version,
    };
    // Every node: each serves what its replicas hold (here every node
    // replicates both partitions). Each round appends one entry.
    let mut held: Vec<Bytes> = ["a", "b", "c", "d"].into_iter().map(Bytes::from).collect();
    for address in &addresses {
        let end = held.len() as u64;
        let mut raw = AmuletClient::connect(format!("http://{address}"))
            .await
            .unwrap();
        // This node's replica answers from its own state, which may not
        // yet hold the trim and the appends another replica acknowledged
        // (a clean-clone CI run saw a stream open for a start below the
        // first position): wait until its metrics show both, within 10 s.
        let bounds = [
            "amulet_log_first_position{log=\"l\"} 1\n".to_string(),
            format!("amulet_log_end_position{{log=\"l\"}} {end}\n"),
        ];
        let mut caught_up = false;
        for _ in 0..200 {
            let metrics = http_get(address, "/metrics").await;
            if bounds.iter().all(|b| metrics.contains(b.as_str())) {
                caught_up = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        assert!(
            caught_up,
            "{address}: its replica of l did not catch up in 10 s"
        );
        let refused: [(&str, pb::TailLogRequest, Code); 4] = [
            ("a bad log name", tail("bad name", 0), Code::InvalidArgument),
            ("an unknown log", tail("nope", 0), Code::NotFound),
            ("a map's name", tail("m", 0), Code::NotFound),
            (
                "a start below the first position",
                tail("l", 0),
                Code::OutOfRange,
            ),
        ];
        for (what, request, code) in refused {
            let status = tokio::time::timeout(Duration::from_secs(10), raw.tail_log(request))
                .await
                .unwrap_or_else(|_| panic!("{what}: no answer in 10 s"))
                .err()
                .unwrap_or_else(|| panic!("{what}: a stream opened"));
            assert_eq!(status.code(), code, "{what} at {address}: {status:?}");
        }
        let mut stream = raw.tail_log(tail("l", 2)).await.unwrap().into_inner();
        let first = tokio::time::timeout(Duration::from_secs(5), stream.message())
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        assert_eq!((first.from, first.first, first.end), (2, 1, end));
        assert_eq!(first.entries, held[2..].to_vec());
        // Nothing new: a heartbeat at the next position within about 1 s.
        let heartbeat = tokio::time::timeout(Duration::from_secs(5), stream.message())
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        assert!(heartbeat.entries.is_empty(), "{heartbeat:?}");
        assert_eq!((heartbeat.from, heartbeat.end), (end, end));
        // A new entry comes on the open stream.
        log.append("e").await.unwrap();
        held.push(Bytes::from("e"));
        let next = tokio::time::timeout(Duration::from_secs(5), async {
            loop {
                let m = stream.message().await.unwrap().unwrap();
                if !m.entries.is_empty() {
                    return m;
                }
            }
        })
        .await
        .unwrap();
        assert_eq!((next.from, next.entries.len()), (end, 1));
        let metrics = http_get(address, "/metrics").await;
        for expected in [
            "amulet_log_end_position{log=\"l\"}",
            "amulet_log_first_position{log=\"l\"} 1",
            "amulet_log_tails_open 1",
            "amulet_log_segments{name=\"files\"}",
            "amulet_log_tail_entries_sent_total{log=\"l\"}",
        ] {
            assert!(
                metrics.contains(expected),
                "/metrics lacks {expected}:\n{metrics}"
            );
        }
        drop(stream);
    }
    let bounds = log.bounds().await.unwrap();
    assert_eq!((bounds.first, bounds.end), (1, 4 + addresses.len() as u64));
    cluster.stop().await;
}
