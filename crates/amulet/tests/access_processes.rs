//! Access control on three `amulet node` processes with TLS
//! (docs/security.md): a token made for a user works until it is revoked,
//! and its secret appears nowhere the cluster writes or answers: not in a
//! node's log, not in `/metrics`, not in an error message, not in
//! `GetAccess`, not in any data file (acceptor logs and checkpoints hold
//! its SHA-256 only).

mod common;

use amulet_client::{Client, ClientConfig, Error};
use amulet_smr::{AccessChange, Permission};
use common::{certificates, client_config, Cluster};
use std::path::Path;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

fn runtime() -> tokio::runtime::Runtime {
    common::runtime()
}

/// A TLS connection to `address` as the user `admin`. The cluster answers
/// once any node does; this one may still be starting, so its port may
/// refuse for a moment (CI saw it in the SIGHUP test).
async fn connect_as_admin(
    address: &str,
) -> amulet_tls::tokio_rustls::client::TlsStream<tokio::net::TcpStream> {
    let context =
        amulet_tls::TlsContext::load(amulet_tls::TlsFiles::user(certificates(), "admin")).unwrap();
    let connector = amulet_tls::tokio_rustls::TlsConnector::from(context.client());
    let mut tcp = None;
    for _ in 0..200 {
        match tokio::net::TcpStream::connect(address).await {
            Ok(stream) => {
                tcp = Some(stream);
                break;
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
        }
    }
    let tcp = tcp.expect("the node accepts connections within 10 s");
    let name =
        amulet_tls::rustls::pki_types::ServerName::try_from(amulet_tls::NODE_SERVER_NAME).unwrap();
    connector.connect(name, tcp).await.unwrap()
}

/// `GET /metrics` from `address` over TLS, as the user `admin`.
async fn metrics(address: &str) -> String {
    let mut tls = connect_as_admin(address).await;
    tls.write_all(b"GET /metrics HTTP/1.1\r\nHost: node\r\nConnection: close\r\n\r\n")
        .await
        .unwrap();
    let mut body = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(10), tls.read_to_end(&mut body)).await;
    String::from_utf8_lossy(&body).into_owned()
}

/// Every file under `dir` whose bytes contain `needle`.
fn files_holding(dir: &Path, needle: &[u8]) -> Vec<String> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(path) = stack.pop() {
        if path.is_dir() {
            for entry in std::fs::read_dir(&path).unwrap().flatten() {
                stack.push(entry.path());
            }
        } else if let Ok(bytes) = std::fs::read(&path) {
            if bytes.windows(needle.len()).any(|w| w == needle) {
                found.push(path.display().to_string());
            }
        }
    }
    found
}

#[test]
fn security_a_tokens_secret_is_in_no_log_metric_error_or_file() {
    let cluster = Cluster::start_with("access", Some(200));
    let runtime = runtime();
    let addresses = cluster.addresses();
    let (token, id) = runtime.block_on(async {
        let admin = Client::connect_with(addresses.clone(), client_config())
            .await
            .unwrap();
        let carts = admin.create_map_if_absent("carts").await.unwrap();
        carts.put("k", "v").await.unwrap();
        admin
            .grant("writers", "carts", Permission::Write)
            .await
            .unwrap();
        admin.assign_role("carol", "writers").await.unwrap();
        let created = admin.create_token("carol", 600).await.unwrap();
        // Known at every node before carol uses it (docs/security.md
        // "Where a change takes effect").
        assert!(
            admin
                .wait_until_every_node_caught_up(Duration::from_secs(10))
                .await
        );
        admin.close().await;
        (created.token, created.id)
    });
    let secret = token.rsplit('.').next().unwrap().to_string();
    assert_eq!(secret.len(), 64);

    let mut said = Vec::new();
    runtime.block_on(async {
        let config = ClientConfig {
            tls: None,
            ..client_config()
        }
        .with_token(certificates().join("ca.pem"), &token);
        let carol = Client::connect_with(addresses.clone(), config)
            .await
            .unwrap();
        let carts = carol.map("carts").unwrap();
        carts.put("k", "carol").await.unwrap();
        assert_eq!(
            carts.get("k").await.unwrap().as_deref(),
            Some(&b"carol"[..])
        );
        // Errors a token's user can provoke: a map not granted, a forged
        // secret (one digit changed), then the token replayed after its
        // revocation.
        let denied = carol.map("secret").unwrap().get("x").await.unwrap_err();
        assert!(matches!(denied, Error::PermissionDenied(_)), "{denied}");
        said.push(denied.to_string());
        let mut forged = token.clone();
        let last = forged.pop().unwrap();
        forged.push(if last == '0' { '1' } else { '0' });
        let forged = Client::connect_with(
            addresses.clone(),
            ClientConfig::default().with_token(certificates().join("ca.pem"), &forged),
        )
        .await
        .err()
        .unwrap();
        assert!(matches!(forged, Error::Unauthenticated(_)), "{forged}");
        said.push(forged.to_string());
        let admin = Client::connect_with(addresses.clone(), client_config())
            .await
            .unwrap();
        let access = admin.access().await.unwrap();
        said.push(format!("{access:?}"));
        assert!(access
            .tokens
            .iter()
            .any(|t| t.id == id && t.user == "carol"));
        admin
            .change_access(&AccessChange::RevokeToken { id: id.clone() })
            .await
            .unwrap();
        assert!(
            admin
                .wait_until_every_node_caught_up(Duration::from_secs(10))
                .await
        );
        let replayed = carts.put("k", "again").await.unwrap_err();
        assert!(matches!(replayed, Error::Unauthenticated(_)), "{replayed}");
        said.push(replayed.to_string());
        let mut refused_bad_tokens = 0;
        for address in &addresses {
            let text = metrics(address).await;
            assert!(
                text.contains("amulet_access_version"),
                "metrics answered: {text:.200}"
            );
            refused_bad_tokens += text
                .lines()
                .filter(|l| l.starts_with("amulet_auth_refused_total{reason=\"bad-token\"}"))
                .count();
            said.push(text);
        }
        assert!(
            refused_bad_tokens > 0,
            "the forged and replayed tokens are counted"
        );
        carol.close().await;
        admin.close().await;
    });
    for text in &said {
        assert!(!text.contains(&secret), "the secret is in: {text:.300}");
    }
    // Acceptor logs and checkpoints (written every 200 ms) hold the
    // digest, never the secret; nor does any node's log.
    std::thread::sleep(Duration::from_millis(500));
    let holding = files_holding(&cluster.dir, secret.as_bytes());
    assert!(holding.is_empty(), "the secret is in {holding:?}");
    let raw: Vec<u8> = (0..secret.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&secret[i..i + 2], 16).unwrap())
        .collect();
    let holding = files_holding(&cluster.dir, &raw);
    assert!(holding.is_empty(), "the secret's bytes are in {holding:?}");
    cluster.stop();
}

/// The first certificate `address` presents to the user `admin`.
async fn presented_certificate(address: &str) -> Vec<u8> {
    let tls = connect_as_admin(address).await;
    tls.get_ref().1.peer_certificates().unwrap()[0].to_vec()
}

/// The DER of the first certificate in PEM file `path`.
fn certificate_in(path: &Path) -> Vec<u8> {
    use amulet_tls::rustls::pki_types::pem::PemObject;
    amulet_tls::rustls::pki_types::CertificateDer::pem_file_iter(path)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .to_vec()
}

#[test]
fn security_sighup_reads_the_certificate_files_again_without_a_restart() {
    let cluster = Cluster::start("sighup");
    let runtime = runtime();
    let address = cluster.address(1);
    let dir = certificates();
    let old = certificate_in(&dir.join("node-1.pem"));
    // Wait for the node to serve.
    runtime.block_on(async {
        let admin = Client::connect_with(cluster.addresses(), client_config())
            .await
            .unwrap();
        admin.close().await;
    });
    assert_eq!(runtime.block_on(presented_certificate(&address)), old);
    // A new certificate for node 1 from the same CA, put in place with
    // the old files' modification times: the once-a-second look at them
    // sees no change, so only the SIGHUP can make the node read them.
    let rotated = dir.join("sighup-rotated");
    std::fs::create_dir_all(&rotated).unwrap();
    for f in ["ca.pem", "ca.key"] {
        std::fs::copy(dir.join(f), rotated.join(f)).unwrap();
    }
    amulet_tls::create::create_node(
        &rotated,
        amulet_types::NodeId(1),
        &[],
        amulet_tls::create::Validity::days(1),
    )
    .unwrap();
    for f in ["node-1.key", "node-1.pem"] {
        let modified = std::fs::metadata(dir.join(f)).unwrap().modified().unwrap();
        std::fs::File::options()
            .write(true)
            .open(rotated.join(f))
            .unwrap()
            .set_modified(modified)
            .unwrap();
        std::fs::rename(rotated.join(f), dir.join(f)).unwrap();
    }
    let new = certificate_in(&dir.join("node-1.pem"));
    assert_ne!(new, old);
    std::thread::sleep(Duration::from_millis(1_500));
    assert_eq!(
        runtime.block_on(presented_certificate(&address)),
        old,
        "unchanged stamps: the node keeps its configuration until told"
    );
    let hup = std::process::Command::new("kill")
        .args(["-HUP", &cluster.pid(1).to_string()])
        .status()
        .unwrap();
    assert!(hup.success());
    let mut presented = old.clone();
    for _ in 0..100 {
        presented = runtime.block_on(presented_certificate(&address));
        if presented == new {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(
        presented, new,
        "after SIGHUP new connections get the new certificate"
    );
    // The node is still a working member with its new certificate.
    runtime.block_on(async {
        let admin = Client::connect_with(vec![address.clone()], client_config())
            .await
            .unwrap();
        let map = admin.create_map_if_absent("after-sighup").await.unwrap();
        map.put("k", "v").await.unwrap();
        assert_eq!(map.get("k").await.unwrap().as_deref(), Some(&b"v"[..]));
        admin.close().await;
    });
    let log = std::fs::read_to_string(cluster.dir.join("node-1.log")).unwrap();
    assert!(log.contains("SIGHUP: TLS files read again"), "{log:.2000}");
    let _ = std::fs::remove_dir_all(rotated);
    cluster.stop();
}
