//! DMap served by three real nodes in one process (TCP on 127.0.0.1),
//! driven through `NodeHandle::submit` the way the gRPC service will:
//! sessions, map creation through the global stream, writes at one node
//! read at another, exactly-once retries, stale maps.

use amulet_dmap::{MapCommand, MapName, MapReply};
use amulet_node::{local_cluster_toml, Node, NodeConfig, NodeHandle};
use amulet_smr::{Body, ClientReply, ClientRequest, Layout};
use amulet_types::{MapVersion, PartitionId, SessionId};
use bytes::Bytes;
use std::time::Duration;

const SMR: &str =
    "\n[smr]\nglobal_stream = 1\n\n[[smr.partitions]]\nid = 1\nstream = 2\nreplicas = [1, 2, 3]\n";

/// Sends `request` until it gets an answer other than "session not open
/// here yet" (a command may overtake its session's opening in the merge
/// of another stream) or "no such map" (the node has not executed the
/// map's creation yet), each attempt bounded by a timeout.
async fn ask(handle: &NodeHandle, request: ClientRequest<MapCommand>) -> ClientReply<MapReply> {
    for _ in 0..50 {
        let attempt = handle.submit(Some(PartitionId(1)), request.clone());
        match tokio::time::timeout(Duration::from_secs(2), attempt).await {
            Ok(Ok(ClientReply::SessionExpired | ClientReply::UnknownKeyspace(_))) | Err(_) => {
                tokio::time::sleep(Duration::from_millis(20)).await
            }
            Ok(Ok(reply)) => return reply,
            Ok(Err(error)) => panic!("node stopped: {error}"),
        }
    }
    panic!("no answer to {request:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn three_nodes_serve_a_linearizable_map() {
    let dir = std::env::temp_dir().join(format!("amulet-dmap-in-process-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let ports = amulet_node::free_local_ports(3).unwrap();
    let mut nodes = Vec::new();
    for node in 1..=3u32 {
        let data_dir = dir.join(format!("node-{node}"));
        let text = local_cluster_toml(1, &ports, node, &data_dir, 2, "sync") + SMR;
        let config = NodeConfig::parse(&text).unwrap();
        nodes.push(Node::start(config, None, None).await.unwrap());
    }
    let handles: Vec<NodeHandle> = nodes.iter().map(|n| n.handle()).collect();
    // Each node registers its eventual store through the global stream at
    // start (a new map version each): wait for the three, then start from
    // the version they leave.
    let mut v1 = 0;
    for _ in 0..500 {
        let current = handles[0].partition_map().await.unwrap().unwrap();
        if current.eventual_stores.len() == 3 {
            v1 = current.version.0;
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(v1 > 0, "the nodes registered their eventual stores");
    let v2 = v1 + 1;
    let session = SessionId(77);
    let map = MapName::new("users").unwrap();
    let req = |version: u64, sequence: u64, body: Body<MapCommand>| ClientRequest {
        map_version: MapVersion(version),
        session: Some((session, sequence)),
        body,
        principal: None,
    };
    let app = |version, sequence, command| req(version, sequence, Body::App(command));

    let opened = ask(
        &handles[0],
        req(
            v1,
            0,
            Body::OpenSession {
                lease_micros: 60_000_000,
            },
        ),
    )
    .await;
    assert_eq!(opened, ClientReply::SessionOk);
    let create = MapCommand::CreateMap {
        map: map.clone(),
        layout: Layout::Hash,
    };
    assert_eq!(
        ask(&handles[0], app(v1, 1, create)).await,
        ClientReply::Done(MapReply::Done)
    );

    // The map version moved on: a request whose meaning is the map's (a
    // keyspace change) still on the old one is told so. (A key request
    // the partition still holds runs: fence keys, docs/dynatree.md.)
    let get = |key: &'static [u8]| MapCommand::Get {
        map: map.clone(),
        key: Bytes::from_static(key),
    };
    let create_other = MapCommand::CreateMap {
        map: MapName::new("other").unwrap(),
        layout: Layout::Hash,
    };
    match ask(&handles[1], app(v1, 2, create_other)).await {
        ClientReply::StaleMap(current) => assert_eq!(current.version, MapVersion(v2)),
        other => panic!("expected a stale map, got {other:?}"),
    }

    let put = MapCommand::Put {
        map: map.clone(),
        key: Bytes::from_static(b"k"),
        value: Bytes::from_static(b"v1"),
    };
    assert_eq!(
        ask(&handles[1], app(v2, 3, put)).await,
        ClientReply::Done(MapReply::Value(None))
    );
    // Written through node 2, read through node 3.
    assert_eq!(
        ask(&handles[2], app(v2, 4, get(b"k"))).await,
        ClientReply::Done(MapReply::Value(Some(Bytes::from_static(b"v1"))))
    );

    // A putIfAbsent retried with the same sequence (its reply was lost)
    // takes effect once: the retry gets the first reply again.
    let put_if_absent = MapCommand::PutIfAbsent {
        map: map.clone(),
        key: Bytes::from_static(b"new"),
        value: Bytes::from_static(b"first"),
    };
    let first = ask(&handles[0], app(v2, 5, put_if_absent.clone())).await;
    assert_eq!(first, ClientReply::Done(MapReply::Value(None)));
    let retried = ask(&handles[2], app(v2, 5, put_if_absent)).await;
    assert_eq!(retried, first, "the retry replays the recorded reply");
    assert_eq!(
        ask(
            &handles[1],
            app(v2, 6, MapCommand::Size { map: map.clone() })
        )
        .await,
        ClientReply::Done(MapReply::Count(2))
    );

    for node in nodes {
        node.stop().await.unwrap();
    }
    let _ = std::fs::remove_dir_all(&dir);
}
