//! Security (issue 26, part 1): the peer transport over TLS. Only a node
//! with a certificate from the cluster CA may connect to a peer port, and
//! only as the node its certificate names: everything else is closed
//! before a frame past the Hello is read.

use amulet_node::{free_local_ports, local_dmap_cluster_toml, Node, NodeConfig};
use amulet_tls::create::{create_dev, create_node, Validity};
use amulet_tls::rustls::pki_types::pem::PemObject;
use amulet_tls::rustls::pki_types::{CertificateDer, ServerName};
use amulet_tls::rustls::{ClientConfig, RootCertStore};
use amulet_tls::{node_server_name, TlsContext, TlsFiles};
use amulet_types::NodeId;
use amulet_wire::{encode_frame, Frame, Hello};
use bytes::BytesMut;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;

const CLUSTER: u64 = 26_100;

fn certificates(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("amulet-certs-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    create_dev(&dir, &[NodeId(1), NodeId(2), NodeId(3)]).unwrap();
    dir
}

fn hello(node: u32) -> BytesMut {
    let mut bytes = BytesMut::new();
    let hello = Hello {
        cluster: CLUSTER,
        node: NodeId(node),
        incarnation: 1,
    };
    encode_frame(&Frame::Hello(hello), &mut bytes);
    bytes
}

/// Whether the node closed the connection (EOF or an error, a TLS alert
/// among them) within five seconds of the Hello; `false`: still open.
async fn closed_by_node<S: AsyncRead + AsyncWrite + Unpin>(mut stream: S, node: u32) -> bool {
    if stream.write_all(&hello(node)).await.is_err() || stream.flush().await.is_err() {
        return true;
    }
    // A node never writes on an inbound connection; what a plain client
    // may read is the TLS alert before the close.
    let mut buffer = [0u8; 512];
    let until_closed = async {
        loop {
            match stream.read(&mut buffer).await {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(5), until_closed)
        .await
        .is_ok()
}

/// Opens a TLS connection to `addr` as whoever `config` presents, expecting
/// node 1's certificate; `None` if the handshake itself failed.
async fn tls_to(
    addr: &str,
    config: Arc<ClientConfig>,
) -> Option<amulet_tls::tokio_rustls::client::TlsStream<TcpStream>> {
    let tcp = TcpStream::connect(addr).await.unwrap();
    let name = ServerName::try_from(node_server_name(NodeId(1))).unwrap();
    amulet_tls::tokio_rustls::TlsConnector::from(config)
        .connect(name, tcp)
        .await
        .ok()
}

fn as_party(ca: &Path, cert: PathBuf, key: PathBuf) -> Arc<ClientConfig> {
    TlsContext::load(TlsFiles {
        ca: ca.join("ca.pem"),
        cert,
        key,
    })
    .unwrap()
    .client()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn security_peer_port_admits_only_the_node_its_certificate_names() {
    let tls = certificates("peers");
    let other = certificates("peers-other-ca");
    // Node 2's certificate from the same CA, expired yesterday.
    let expired_dir = tls.join("expired");
    std::fs::create_dir_all(&expired_dir).unwrap();
    for f in ["ca.pem", "ca.key"] {
        std::fs::copy(tls.join(f), expired_dir.join(f)).unwrap();
    }
    create_node(&expired_dir, NodeId(2), &[], Validity::ended_days_ago(1)).unwrap();
    let dir = std::env::temp_dir().join(format!("amulet-tls-peers-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let ports = free_local_ports(6).unwrap();
    let text = local_dmap_cluster_toml(CLUSTER, &ports[..3], &ports[3..], 1, &dir, 1, "memory")
        + &format!("\n[tls]\ndir = {:?}\n", tls.display().to_string());
    let node = Node::start(NodeConfig::parse(&text).unwrap(), None, None)
        .await
        .unwrap();
    let addr = node.local_addr().to_string();
    let node_2 = |dir: &Path| (dir.join("node-2.pem"), dir.join("node-2.key"));

    // Control: node 2's certificate, saying it is node 2, stays connected.
    let (cert, key) = node_2(&tls);
    let stream = tls_to(&addr, as_party(&tls, cert.clone(), key.clone()))
        .await
        .unwrap();
    assert!(!closed_by_node(stream, 2).await, "node 2 is admitted");

    // Node 2's certificate claiming to be node 3 in its Hello.
    let stream = tls_to(&addr, as_party(&tls, cert, key)).await.unwrap();
    assert!(
        closed_by_node(stream, 3).await,
        "a Hello claiming another node"
    );

    // A user's certificate from the CA on the peer port.
    let admin = as_party(&tls, tls.join("admin.pem"), tls.join("admin.key"));
    let stream = tls_to(&addr, admin).await.unwrap();
    assert!(
        closed_by_node(stream, 2).await,
        "a client certificate on the peer port"
    );

    // Node 2's certificate from another CA.
    let (cert, key) = node_2(&other);
    if let Some(stream) = tls_to(&addr, as_party(&tls, cert, key)).await {
        assert!(
            closed_by_node(stream, 2).await,
            "a certificate from another CA"
        );
    }

    // An expired certificate from the CA.
    let (cert, key) = node_2(&expired_dir);
    let expired = as_party(&tls, cert, key);
    if let Some(stream) = tls_to(&addr, expired).await {
        assert!(closed_by_node(stream, 2).await, "an expired certificate");
    }

    // No certificate: TLS that presents none.
    let mut roots = RootCertStore::empty();
    for cert in CertificateDer::pem_file_iter(tls.join("ca.pem")).unwrap() {
        roots.add(cert.unwrap()).unwrap();
    }
    let anonymous = ClientConfig::builder_with_provider(Arc::new(
        amulet_tls::rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_root_certificates(roots)
    .with_no_client_auth();
    if let Some(stream) = tls_to(&addr, Arc::new(anonymous)).await {
        assert!(closed_by_node(stream, 2).await, "no certificate");
    }

    // Plain TCP, as a node without TLS would speak.
    let plain = TcpStream::connect(&addr).await.unwrap();
    assert!(closed_by_node(plain, 2).await, "plain TCP");

    // Rotation without a restart: node 1's files replaced by a new
    // certificate from the same CA; the next connection gets it.
    let rotated = tls.join("rotated");
    std::fs::create_dir_all(&rotated).unwrap();
    for f in ["ca.pem", "ca.key"] {
        std::fs::copy(tls.join(f), rotated.join(f)).unwrap();
    }
    create_node(&rotated, NodeId(1), &[], Validity::days(1)).unwrap();
    for f in ["node-1.key", "node-1.pem"] {
        std::fs::rename(rotated.join(f), tls.join(f)).unwrap();
    }
    tokio::time::sleep(Duration::from_millis(1_200)).await;
    let (cert, key) = node_2(&tls);
    let stream = tls_to(&addr, as_party(&tls, cert, key)).await.unwrap();
    let presented = stream.get_ref().1.peer_certificates().unwrap()[0].clone();
    let new = CertificateDer::pem_file_iter(tls.join("node-1.pem"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap();
    assert_eq!(presented, new, "the node presents its rotated certificate");
    assert!(!closed_by_node(stream, 2).await, "and still admits node 2");

    node.stop().await.unwrap();
    for d in [dir, tls, other] {
        let _ = std::fs::remove_dir_all(d);
    }
}
