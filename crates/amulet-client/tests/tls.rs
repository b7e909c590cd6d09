//! Security (issue 26, part 1): the client API over TLS. A node with TLS
//! requires a user certificate from the cluster CA on every connection
//! and every request; each attack below is refused with its documented
//! status (docs/security.md) and nothing changes.

mod common;

use amulet_client::{Client, ClientConfig, Error, TlsFiles};
use amulet_tls::create::{create_dev, create_user, Validity};
use amulet_types::NodeId;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Certificates of cluster `name` (a CA, nodes 1-3, user admin).
fn certificates(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("amulet-certs-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    create_dev(&dir, &[NodeId(1), NodeId(2), NodeId(3)]).unwrap();
    dir
}

fn config(tls: Option<TlsFiles>) -> ClientConfig {
    ClientConfig {
        attempt_timeout: Duration::from_secs(1),
        operation_timeout: Duration::from_secs(3),
        tls,
        ..Default::default()
    }
}

async fn connect(addresses: &[String], tls: Option<TlsFiles>) -> Result<Client, Error> {
    Client::connect_with(addresses.to_vec(), config(tls)).await
}

/// A cluster whose nodes run with `tls`'s node certificates.
async fn tls_cluster(name: &str, cluster: u64, tls: &Path) -> common::InProcess {
    let tls = tls.to_path_buf();
    common::start_with(name, cluster, move |text| {
        format!("{text}\n[tls]\ndir = {:?}\n", tls.display().to_string())
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn security_client_api_refuses_every_connection_without_a_user_certificate_from_the_ca() {
    let tls = certificates("api");
    let other = certificates("api-other-ca");
    create_user(&tls, "expired", Validity::ended_days_ago(1)).unwrap();
    let cluster = tls_cluster("tls-api", 26_001, &tls).await;
    let admin = TlsFiles::user(&tls, "admin");

    // A user certificate from the CA: served, over TLS between the nodes
    // too (the map's creation and the put go through the streams).
    let client = connect(&cluster.addresses, Some(admin.clone()))
        .await
        .unwrap();
    let map = client.create_map_if_absent("secured").await.unwrap();
    map.put("k", "v").await.unwrap();
    assert_eq!(map.get("k").await.unwrap().as_deref(), Some(&b"v"[..]));

    // No certificate at all: plain TCP against a TLS port.
    let refused = connect(&cluster.addresses, None).await.err().unwrap();
    assert!(
        matches!(refused, Error::Unavailable(_)),
        "plain TCP: {refused}"
    );
    assert!(
        refused.to_string().contains("TLS"),
        "the error says what to do: {refused}"
    );

    // A certificate from another CA (trusting ours).
    let foreign = TlsFiles {
        cert: other.join("admin.pem"),
        key: other.join("admin.key"),
        ..admin.clone()
    };
    let refused = connect(&cluster.addresses, Some(foreign))
        .await
        .err()
        .unwrap();
    assert!(
        matches!(refused, Error::Unavailable(_)),
        "another CA: {refused}"
    );

    // Trusting another CA: the client refuses the nodes.
    let refused = connect(&cluster.addresses, Some(TlsFiles::user(&other, "admin")))
        .await
        .err()
        .unwrap();
    assert!(
        matches!(refused, Error::Unavailable(_)),
        "nodes of another CA: {refused}"
    );

    // An expired certificate from the CA.
    let refused = connect(&cluster.addresses, Some(TlsFiles::user(&tls, "expired")))
        .await
        .err()
        .unwrap();
    assert!(
        matches!(refused, Error::Unavailable(_)),
        "expired: {refused}"
    );

    // A node's certificate used by a client: UNAUTHENTICATED, at once.
    let node_as_client = TlsFiles {
        cert: tls.join("node-2.pem"),
        key: tls.join("node-2.key"),
        ..admin.clone()
    };
    let refused = connect(&cluster.addresses, Some(node_as_client))
        .await
        .err()
        .unwrap();
    assert!(
        matches!(&refused, Error::Unauthenticated(m) if m.contains("node 2")),
        "node certificate: {refused}"
    );

    // Missing files are named.
    let refused = connect(&cluster.addresses, Some(TlsFiles::user(&tls, "nobody")))
        .await
        .err()
        .unwrap();
    assert!(
        matches!(&refused, Error::InvalidArgument(m) if m.contains("nobody.pem")),
        "missing file: {refused}"
    );

    // Nothing any of them tried changed the map.
    assert_eq!(map.size().await.unwrap(), 1);
    client.close().await;
    cluster.stop().await;
    for dir in [tls, other] {
        let _ = std::fs::remove_dir_all(dir);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn security_a_node_with_tls_refuses_a_request_without_authentication_on_every_call() {
    // A raw gRPC channel with a node certificate gets through the TLS
    // handshake (the CA signed it) but every request, unary or streaming,
    // is refused.
    let tls = certificates("api-calls");
    let cluster = tls_cluster("tls-api-calls", 26_002, &tls).await;
    let read = |f: &str| std::fs::read(tls.join(f)).unwrap();
    let tls_config = tonic::transport::ClientTlsConfig::new()
        .ca_certificate(tonic::transport::Certificate::from_pem(read("ca.pem")))
        .identity(tonic::transport::Identity::from_pem(
            read("node-1.pem"),
            read("node-1.key"),
        ))
        .domain_name(amulet_tls::NODE_SERVER_NAME);
    let channel =
        tonic::transport::Endpoint::from_shared(format!("https://{}", cluster.addresses[0]))
            .unwrap()
            .tls_config(tls_config)
            .unwrap()
            .connect()
            .await
            .unwrap();
    let mut raw = amulet_api::pb::amulet_client::AmuletClient::new(channel);
    let unary = raw
        .get_partition_map(amulet_api::pb::GetPartitionMapRequest {})
        .await
        .err()
        .unwrap();
    assert_eq!(unary.code(), tonic::Code::Unauthenticated, "{unary:?}");
    let streaming = raw
        .tail_log(amulet_api::pb::TailLogRequest {
            log: "events".into(),
            ..Default::default()
        })
        .await
        .err()
        .unwrap();
    assert_eq!(
        streaming.code(),
        tonic::Code::Unauthenticated,
        "{streaming:?}"
    );
    cluster.stop().await;
    let _ = std::fs::remove_dir_all(tls);
}
