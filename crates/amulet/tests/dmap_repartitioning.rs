//! Online repartitioning on real processes (issue 4, DMap §III-C and
//! thesis §4.7.4-4.7.5): three `amulet node` processes under two writers
//! split a partition, replace a stream, merge partitions back and move a
//! partition between replica groups (state transfer), with a SIGKILL and
//! restart in between; at the end every acknowledged write is present.

mod common;

use amulet_client::{Client, Error};
use amulet_smr::{Reconfiguration, StreamSpec};
use amulet_types::{NodeId, PartitionId, StorageMode, StreamId};
use bytes::Bytes;
use common::{
    check_acknowledged, client_config, reconfigure, stream_spec, wait_for_replica, Cluster,
    Writers, NODES,
};
use std::sync::Arc;
use std::time::Duration;

/// A cluster checkpointing every 200 ms, its client, and a map `name`.
fn start(name: &str) -> (Cluster, tokio::runtime::Runtime, Arc<Client>) {
    start_checkpointing(name, 200)
}

/// A cluster checkpointing every `checkpoint_ms` (0: never), its client,
/// and a map `name`.
fn start_checkpointing(
    name: &str,
    checkpoint_ms: u64,
) -> (Cluster, tokio::runtime::Runtime, Arc<Client>) {
    let cluster = Cluster::start_with(name, Some(checkpoint_ms));
    let runtime = common::runtime();
    let client = Arc::new(
        runtime
            .block_on(Client::connect_with(cluster.addresses(), client_config()))
            .unwrap(),
    );
    runtime.block_on(client.create_map(name)).unwrap();
    (cluster, runtime, client)
}

#[test]
fn dmap_iii_c_split_stream_replacement_restart_and_merge_under_load_lose_no_write() {
    let (mut cluster, runtime, client) = start("rp");
    let writers = Writers::start(&runtime, &client, "rp", 2);
    writers.more(200);

    // Split partition 1 at the middle of its token segment onto stream 5.
    let map = client.partition_map();
    let segment_end = map.token_ring[1].0;
    reconfigure(
        &runtime,
        &client,
        Reconfiguration::Split {
            source: PartitionId(1),
            new: PartitionId(4),
            stream: stream_spec(5),
            at_token: Some(segment_end / 2),
            at_keys: Vec::new(),
        },
    );
    let map = client.partition_map();
    assert!(map.partitions.contains_key(&PartitionId(4)), "{map:?}");
    writers.more(200);

    // Move partition 2 onto a new stream (acceptor replacement).
    reconfigure(
        &runtime,
        &client,
        Reconfiguration::ReplaceStream {
            partition: PartitionId(2),
            stream: stream_spec(6),
        },
    );
    assert_eq!(
        client.partition_map().partitions[&PartitionId(2)].stream,
        StreamId(6)
    );
    writers.more(200);

    // SIGKILL node 3 and restart it: it must reopen the streams created
    // at run time and the split-off partition from its checkpoints.
    cluster.kill(3);
    writers.more(100);
    cluster.spawn(3);
    wait_for_replica(&runtime, &client, &cluster, 3, 4, true);

    // Merge partition 4 back into 1.
    reconfigure(
        &runtime,
        &client,
        Reconfiguration::Merge {
            source: PartitionId(4),
            into: PartitionId(1),
        },
    );
    writers.more(200);
    let (acked, unknown) = writers.stop(&runtime);

    // Every acknowledged write is there, read by key and in a snapshot.
    check_acknowledged(&runtime, &client, "rp", &acked, "at the end");
    let map = client.map("rp").unwrap();
    runtime.block_on(async {
        let mut snapshot = map.snapshot().await.unwrap();
        let mut seen = 0usize;
        while let Some((key, value)) = snapshot.next().await.unwrap() {
            if let Some(expected) = acked.get(&key) {
                assert_eq!(&value, expected);
                seen += 1;
            }
        }
        snapshot.close().await.unwrap();
        assert_eq!(
            seen,
            acked.len(),
            "the snapshot holds every acknowledged write"
        );
        let size = map.size().await.unwrap();
        assert!(
            size >= acked.len() as u64 && size <= acked.len() as u64 + u64::from(unknown),
            "size {size}, {} acknowledged, {unknown} unknown",
            acked.len()
        );
    });
    let final_map = client.partition_map();
    let partitions: Vec<u32> = final_map.partitions.keys().map(|p| p.0).collect();
    assert_eq!(partitions, vec![1, 2, 3]);
    println!(
        "{} acknowledged writes across a split, a stream replacement, a restart and a merge; map version {}",
        acked.len(),
        final_map.version.0
    );
    runtime.block_on(client.close());
    drop(runtime);
    cluster.stop();
}

/// The global stream replaced twice under load (thesis §4.2; issue 22),
/// with a SIGKILL and restart between: the restarted node merges the
/// global stream its own checkpoints' map names (a stream created at run
/// time), and the second replacement, which every node must apply at its
/// fence, shows it kept executing the global order on the new stream.
#[test]
fn thesis_4_2_the_global_stream_replaced_under_load_and_a_restart_loses_no_write() {
    let (mut cluster, runtime, client) = start("gs");
    let writers = Writers::start(&runtime, &client, "gs", 2);
    writers.more(200);
    reconfigure(
        &runtime,
        &client,
        Reconfiguration::ReplaceGlobalStream {
            stream: stream_spec(5),
        },
    );
    assert_eq!(client.partition_map().global_stream, StreamId(5));
    writers.more(200);

    cluster.kill(2);
    writers.more(100);
    cluster.spawn(2);
    wait_for_replica(&runtime, &client, &cluster, 2, 1, true);

    reconfigure(
        &runtime,
        &client,
        Reconfiguration::ReplaceGlobalStream {
            stream: stream_spec(6),
        },
    );
    assert_eq!(client.partition_map().global_stream, StreamId(6));
    writers.more(200);
    let (acked, _) = writers.stop(&runtime);
    check_acknowledged(&runtime, &client, "gs", &acked, "at the end");
    println!(
        "{} acknowledged writes across two global stream replacements and a restart",
        acked.len()
    );
    runtime.block_on(client.close());
    drop(runtime);
    cluster.stop();
}

#[test]
fn dmap_iii_c_a_partition_moved_to_other_nodes_arrives_by_state_transfer_and_loses_no_write() {
    let (mut cluster, runtime, client) = start("mv");
    let writers = Writers::start(&runtime, &client, "mv", 2);
    let nodes = |ids: &[u32]| ids.iter().copied().map(NodeId).collect::<Vec<_>>();
    let move_to = |replicas: &[u32], stream: u32, acceptors: &[u32]| {
        let learners = (1..=NODES)
            .filter(|n| !acceptors.contains(n))
            .map(NodeId)
            .collect();
        Reconfiguration::Move {
            partition: PartitionId(2),
            replicas: nodes(replicas),
            stream: StreamSpec {
                stream: StreamId(stream),
                acceptors: nodes(acceptors),
                learners,
                storage: StorageMode::SyncDurable,
                base_position: 0,
            },
        }
    };
    writers.more(300);

    // Partition 2 leaves node 3: node 3 drops its replica once both new
    // replicas hold a checkpoint past the move.
    reconfigure(&runtime, &client, move_to(&[1, 2], 5, &[1, 2, 3]));
    writers.more(200);
    wait_for_replica(&runtime, &client, &cluster, 3, 2, false);

    // Partition 2 moves to node 3 alone: node 3 fetches its state from
    // node 1 or 2 (state transfer), they drop theirs once node 3 holds it,
    // and from then on every read of partition 2 is answered by node 3's
    // transferred state.
    reconfigure(&runtime, &client, move_to(&[3], 6, &[3]));
    writers.more(200);
    wait_for_replica(&runtime, &client, &cluster, 3, 2, true);
    wait_for_replica(&runtime, &client, &cluster, 1, 2, false);
    wait_for_replica(&runtime, &client, &cluster, 2, 2, false);
    writers.more(200);
    check_acknowledged(
        &runtime,
        &client,
        "mv",
        &writers.acked(),
        "with partition 2 on node 3 alone",
    );

    // Back to all three nodes (nodes 1 and 2 fetch it from node 3), then
    // a SIGKILL and restart of node 3 under load.
    reconfigure(&runtime, &client, move_to(&[1, 2, 3], 7, &[1, 2, 3]));
    wait_for_replica(&runtime, &client, &cluster, 1, 2, true);
    wait_for_replica(&runtime, &client, &cluster, 2, 2, true);
    writers.more(200);
    cluster.kill(3);
    writers.more(200);
    cluster.spawn(3);
    wait_for_replica(&runtime, &client, &cluster, 3, 2, true);
    writers.more(200);

    // Down through a move and its hand-off: partition 2 moves to nodes 1
    // and 2 while node 3 is down and the writers go on. Restarted with
    // the old map, node 3 learns the partition moved away (from its own
    // merge, or from a peer's newer map once its streams were trimmed
    // past it) and drops its replica instead of asking for it forever.
    cluster.kill(3);
    // Not `reconfigure`: that waits for every node, node 3 included; the
    // request may reach node 3 (down) and is sent again.
    let before = client.partition_map().version.0;
    let moved_off_3 = move_to(&[1, 2], 8, &[1, 2, 3]);
    let sent = (0..50).any(
        |_| match runtime.block_on(client.reconfigure(&moved_off_3)) {
            Ok(_) => true,
            Err(Error::Unavailable(_)) => false,
            Err(e) => panic!("{moved_off_3:?} refused: {e}"),
        },
    );
    assert!(sent, "no live node took the move");
    writers.more(300);
    cluster.spawn(3);
    wait_for_replica(&runtime, &client, &cluster, 3, 2, false);
    writers.more(100);
    // The writers' client need not have refreshed its map: with fence
    // keys its requests to nodes 1 and 2 still run (the move changed no
    // range). The map the nodes hold has moved on.
    let moved = client.wait_for_map_version(before + 1, Duration::from_secs(60), |_| {});
    assert!(runtime.block_on(moved), "the move off node 3 took effect");
    let (acked, unknown) = writers.stop(&runtime);
    check_acknowledged(&runtime, &client, "mv", &acked, "at the end");
    let size = runtime.block_on(client.map("mv").unwrap().size()).unwrap();
    assert!(
        size >= acked.len() as u64 && size <= acked.len() as u64 + u64::from(unknown),
        "size {size}, {} acknowledged, {unknown} unknown",
        acked.len()
    );
    let map = client.partition_map();
    assert_eq!(map.partitions[&PartitionId(2)].replicas, nodes(&[1, 2]));
    println!(
        "{} acknowledged writes across four moves of partition 2 and two restarts; map version {}",
        acked.len(),
        map.version.0
    );
    runtime.block_on(client.close());
    drop(runtime);
    cluster.stop();
}

/// A move's state travels as a checkpoint and the old group hands off once
/// the new one holds a durable one: a cluster that never checkpoints would
/// wait forever, so the request is refused with a reason.
#[test]
fn dmap_iii_c_a_move_without_checkpoints_is_refused() {
    let (cluster, runtime, client) = start_checkpointing("nocp", 0);
    let change = Reconfiguration::Move {
        partition: PartitionId(2),
        replicas: vec![NodeId(1), NodeId(2)],
        stream: StreamSpec {
            stream: StreamId(5),
            acceptors: vec![NodeId(1), NodeId(2), NodeId(3)],
            learners: Vec::new(),
            storage: StorageMode::SyncDurable,
            base_position: 0,
        },
    };
    let before = client.partition_map().partitions.clone();
    match runtime.block_on(client.reconfigure(&change)) {
        Err(Error::FailedPrecondition(why)) => assert!(why.contains("checkpoint"), "{why}"),
        Err(e) => panic!("refused as a request error instead of the cluster's: {e}"),
        Ok(at) => panic!("a move without checkpoints was accepted at map version {at}"),
    }
    // Nothing changed. (Not the map version: each node registers its
    // eventual store at its first start, one version each, racing the
    // test; a refusal refreshes the client's map past them.)
    assert_eq!(client.partition_map().partitions, before);
    runtime.block_on(client.close());
    drop(runtime);
    cluster.stop();
}

/// DynaTree §III-A on real processes: with fence keys, a split and a
/// merge of partition 1 and a stream replacement of partition 2 send no
/// request for a key of partitions 2 and 3 back for a map refresh; with
/// whole-map versions (`[smr] fence_keys = false`) every change sends
/// each writer's next request back. Writers use their own client (the
/// operator's refreshes its map as it reconfigures); both clusters run
/// the same changes in one test.
#[test]
fn dynatree_iii_a_fence_keys_send_fewer_requests_back_than_whole_map_versions() {
    let refreshes = |name: &str, fence_keys: bool| {
        let smr = format!("fence_keys = {fence_keys}\n");
        let cluster = Cluster::start_with_smr(name, Some(200), &smr);
        let runtime = common::runtime();
        let connect = || {
            let client = Client::connect_with(cluster.addresses(), client_config());
            Arc::new(runtime.block_on(client).unwrap())
        };
        let (operator, writer) = (connect(), connect());
        runtime.block_on(operator.create_map(name)).unwrap();
        // Keys partitions 2 and 3 hold, which none of the changes moves.
        let map = operator.partition_map();
        let keys: Vec<Bytes> = (0..2_000)
            .map(|i| Bytes::from(format!("k{i:05}")))
            .filter(|k| map.partition_of(name, k).is_ok_and(|p| p != PartitionId(1)))
            .collect();
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let tasks: Vec<_> = (0..2usize)
            .map(|w| {
                let (writer, stop) = (writer.clone(), stop.clone());
                let mine: Vec<Bytes> = keys.iter().skip(w).step_by(2).cloned().collect();
                let name = name.to_string();
                runtime.spawn(async move {
                    let map = writer.map(&name).unwrap();
                    // Each key's last write, if it was acknowledged (an
                    // unknown outcome leaves the key's value unknown).
                    let mut last = std::collections::BTreeMap::new();
                    for i in 0..1_000_000usize {
                        if stop.load(std::sync::atomic::Ordering::Relaxed) {
                            break;
                        }
                        let key = mine[i % mine.len()].clone();
                        let value = Bytes::from(format!("{w}-{i}"));
                        let acked = map.put(key.clone(), value.clone()).await.is_ok();
                        last.insert(key, acked.then_some(value));
                    }
                    last.into_iter()
                        .filter_map(|(k, v)| Some((k, v?)))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        let pause = || std::thread::sleep(std::time::Duration::from_millis(500));
        pause();
        let segment_end = map.token_ring[1].0;
        let changes = [
            Reconfiguration::Split {
                source: PartitionId(1),
                new: PartitionId(4),
                stream: stream_spec(5),
                at_token: Some(segment_end / 2),
                at_keys: Vec::new(),
            },
            Reconfiguration::ReplaceStream {
                partition: PartitionId(2),
                stream: stream_spec(6),
            },
            Reconfiguration::Merge {
                source: PartitionId(4),
                into: PartitionId(1),
            },
        ];
        for change in changes {
            reconfigure(&runtime, &operator, change);
            pause();
        }
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        let mut last = std::collections::BTreeMap::new();
        for task in tasks {
            last.extend(runtime.block_on(task).unwrap());
        }
        assert!(!last.is_empty(), "{name}: no write was acknowledged");
        // The writers' keys are disjoint: a key's last acknowledged
        // write (not followed by an unknown one) is its value.
        check_acknowledged(&runtime, &operator, name, &last, "at the end");
        let refreshes = writer.map_refreshes();
        runtime.block_on(operator.close());
        runtime.block_on(writer.close());
        drop(runtime);
        cluster.stop();
        refreshes
    };
    let fenced = refreshes("fk-on", true);
    let whole = refreshes("fk-off", false);
    println!("writer map refreshes: fence keys {fenced}, whole-map versions {whole}");
    assert!(
        whole > 0,
        "whole-map versions sent no request back: the test shows nothing"
    );
    assert!(
        fenced < whole,
        "fence keys {fenced} >= whole-map versions {whole}"
    );
}

/// A node whose last replica was moved away executes no map any more: it
/// learns the later ones from its peers, whose probes and probe replies
/// carry their map versions (docs/membership.md), so it answers clients
/// and status requests with the current map instead of the one its last
/// replica executed.
#[test]
fn membership_a_node_left_without_replicas_learns_later_maps_from_its_peers() {
    let (cluster, runtime, client) = start("nr");
    // Writes on every partition: a replica moved away hands off once the
    // new group checkpointed an instance of the new stream.
    let writers = Writers::start(&runtime, &client, "nr", 2);
    writers.more(100);
    // Every partition leaves node 3, which stays an acceptor of their
    // new streams.
    for (partition, stream) in [(1, 5), (2, 6), (3, 7)] {
        reconfigure(
            &runtime,
            &client,
            Reconfiguration::Move {
                partition: PartitionId(partition),
                replicas: vec![NodeId(1), NodeId(2)],
                stream: stream_spec(stream),
            },
        );
    }
    writers.more(100);
    for partition in 1..=3 {
        wait_for_replica(&runtime, &client, &cluster, 3, partition, false);
    }
    let (acked, _) = writers.stop(&runtime);
    // Two changes node 3 takes no part in (a map's creation and drop
    // change the partition map): every node, node 3 included, reports
    // the new version.
    runtime.block_on(client.create_map("other")).unwrap();
    runtime.block_on(client.drop_map("other")).unwrap();
    let version = client.partition_map().version.0;
    assert!(
        runtime.block_on(client.wait_for_map_version(version, Duration::from_secs(60), |_| {})),
        "node 3 learned map version {version} in 60 s"
    );
    let status = runtime
        .block_on(client.status(&cluster.address(3)))
        .unwrap();
    assert!(status.replicas.is_empty(), "{status:?}");
    assert_eq!(status.map_version, client.partition_map().version.0);
    check_acknowledged(&runtime, &client, "nr", &acked, "at the end");
    runtime.block_on(client.close());
    drop(runtime);
    cluster.stop();
}
