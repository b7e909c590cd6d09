//! The rustls configurations of one party, built from its [`TlsFiles`]
//! and built again when one of the files changes, so certificates rotate
//! without a restart: each new connection takes the configuration current
//! when it starts; connections already open keep theirs.

use crate::{TlsError, TlsFiles};
use rustls::client::WebPkiServerVerifier;
use rustls::server::WebPkiClientVerifier;
use rustls::{ClientConfig, RootCertStore, ServerConfig};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

/// How often the files' modification times are looked at.
const RELOAD_CHECK_INTERVAL: Duration = Duration::from_secs(1);

/// Configurations for accepting (client certificate required, from the
/// CA) and for connecting (presenting our certificate, trusting only the
/// CA), kept current with the files.
pub struct TlsContext {
    files: TlsFiles,
    loaded: Mutex<Loaded>,
}

struct Loaded {
    stamps: [Option<SystemTime>; 3],
    checked: Instant,
    configs: Configs,
}

/// The configurations built from one set of files.
#[derive(Clone)]
struct Configs {
    /// Peers: a certificate from the CA required.
    server: Arc<ServerConfig>,
    /// The client API: a certificate from the CA, or none (the client then
    /// needs a bearer token; a certificate from elsewhere still fails).
    api_server: Arc<ServerConfig>,
    client: Arc<ClientConfig>,
}

impl TlsContext {
    /// Loads `files`; every problem is an error naming the file.
    #[allow(clippy::disallowed_methods)] // I/O edge: when to look at the files again
    pub fn load(files: TlsFiles) -> Result<TlsContext, TlsError> {
        let stamps = stamps(&files);
        let configs = build(&files)?;
        Ok(TlsContext {
            files,
            loaded: Mutex::new(Loaded {
                stamps,
                checked: Instant::now(),
                configs,
            }),
        })
    }

    /// The files this context follows.
    pub fn files(&self) -> &TlsFiles {
        &self.files
    }

    /// The configuration for accepting a peer's connection (a
    /// certificate from the CA required).
    pub fn server(&self) -> Arc<ServerConfig> {
        self.current().server
    }

    /// The configuration for accepting a client's connection: a
    /// certificate from the CA or none at all (then every request must
    /// carry a bearer token); any other certificate fails the handshake.
    pub fn api_server(&self) -> Arc<ServerConfig> {
        self.current().api_server
    }

    /// The configuration for opening a connection.
    pub fn client(&self) -> Arc<ClientConfig> {
        self.current().client
    }

    /// Reads the files again now, changed or not (an operator's SIGHUP):
    /// new connections use them; if they do not load, the previous ones
    /// stay and the error says why.
    #[allow(clippy::disallowed_methods)] // I/O edge: when to look at the files again
    pub fn reload(&self) -> Result<(), TlsError> {
        let mut loaded = self.loaded.lock().expect("tls context poisoned");
        loaded.checked = Instant::now();
        loaded.stamps = stamps(&self.files);
        loaded.configs = build(&self.files)?;
        Ok(())
    }

    #[allow(clippy::disallowed_methods)] // I/O edge: when to look at the files again
    fn current(&self) -> Configs {
        let mut loaded = self.loaded.lock().expect("tls context poisoned");
        if loaded.checked.elapsed() >= RELOAD_CHECK_INTERVAL {
            loaded.checked = Instant::now();
            let now = stamps(&self.files);
            if now != loaded.stamps {
                // Recorded either way: a half-written set of files is
                // retried at its next change, not logged every second.
                loaded.stamps = now;
                match build(&self.files) {
                    Ok(configs) => {
                        loaded.configs = configs;
                        tracing::info!(cert = %self.files.cert.display(), "TLS files changed; new connections use them");
                    }
                    Err(error) => {
                        tracing::warn!(%error, "TLS files changed but do not load; keeping the previous ones");
                    }
                }
            }
        }
        loaded.configs.clone()
    }
}

fn stamps(files: &TlsFiles) -> [Option<SystemTime>; 3] {
    files
        .paths()
        .map(|p| std::fs::metadata(p).and_then(|m| m.modified()).ok())
}

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// Builds the configurations from `files`.
fn build(files: &TlsFiles) -> Result<Configs, TlsError> {
    let roots = Arc::new(load_roots(&files.ca)?);
    let chain = load_certs(&files.cert)?;
    let key = load_key(&files.key)?;
    let config_error = |e: rustls::Error| TlsError::Config(e.to_string());
    let server_config = |optional: bool| -> Result<Arc<ServerConfig>, TlsError> {
        let builder = WebPkiClientVerifier::builder_with_provider(roots.clone(), provider());
        let builder = if optional {
            builder.allow_unauthenticated()
        } else {
            builder
        };
        let client_verifier = builder
            .build()
            .map_err(|e| TlsError::Config(format!("{}: {e}", files.ca.display())))?;
        let mut server = ServerConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .map_err(config_error)?
            .with_client_cert_verifier(client_verifier)
            .with_single_cert(chain.clone(), key.clone_key())
            .map_err(|e| {
                TlsError::Config(format!(
                    "{} and {}: {e}",
                    files.cert.display(),
                    files.key.display()
                ))
            })?;
        // gRPC clients require HTTP/2 by ALPN; `/metrics` scrapers speak 1.1.
        server.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        Ok(Arc::new(server))
    };
    let (server, api_server) = (server_config(false)?, server_config(true)?);
    let server_verifier = WebPkiServerVerifier::builder_with_provider(roots, provider())
        .build()
        .map_err(|e| TlsError::Config(format!("{}: {e}", files.ca.display())))?;
    let client = ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(config_error)?
        .with_webpki_verifier(server_verifier)
        .with_client_auth_cert(chain, key)
        .map_err(|e| {
            TlsError::Config(format!(
                "{} and {}: {e}",
                files.cert.display(),
                files.key.display()
            ))
        })?;
    Ok(Configs {
        server,
        api_server,
        client: Arc::new(client),
    })
}

fn read(path: &Path) -> Result<Vec<u8>, TlsError> {
    std::fs::read(path).map_err(|error| TlsError::Read {
        path: path.to_path_buf(),
        error,
    })
}

/// The certificates in a PEM file (at least one).
pub(crate) fn load_certs(path: &Path) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let bytes = read(path)?;
    let pem_error = |what: String| TlsError::Pem {
        path: path.to_path_buf(),
        what,
    };
    let certs = CertificateDer::pem_slice_iter(&bytes)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| pem_error(format!("not PEM certificates: {e}")))?;
    if certs.is_empty() {
        return Err(pem_error("holds no CERTIFICATE".into()));
    }
    Ok(certs)
}

fn load_roots(path: &Path) -> Result<RootCertStore, TlsError> {
    let mut roots = RootCertStore::empty();
    for cert in load_certs(path)? {
        roots.add(cert).map_err(|e| TlsError::Pem {
            path: path.to_path_buf(),
            what: format!("not a usable CA certificate: {e}"),
        })?;
    }
    Ok(roots)
}

fn load_key(path: &Path) -> Result<PrivateKeyDer<'static>, TlsError> {
    let bytes = read(path)?;
    PrivateKeyDer::from_pem_slice(&bytes).map_err(|e| TlsError::Pem {
        path: path.to_path_buf(),
        what: format!("holds no usable PRIVATE KEY: {e}"),
    })
}
