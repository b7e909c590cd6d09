//! Client settings.

use amulet_tls::TlsFiles;
use std::time::Duration;

/// How a [`crate::Client`] behaves.
#[derive(Clone, Debug)]
pub struct ClientConfig {
    /// How long one attempt may take before it is resent elsewhere.
    pub attempt_timeout: Duration,
    /// How long an operation may take in all, retries included.
    pub operation_timeout: Duration,
    /// Session lease asked for; an idle pooled session older than half of
    /// it is renewed before use.
    pub session_lease: Duration,
    /// Entries per snapshot page.
    pub page_entries: u32,
    /// Snapshot lease asked for.
    pub snapshot_lease: Duration,
    /// Entries per range read page when iterating a range.
    pub range_entries: u32,
    /// ExecuteBatch calls in flight to one node at once: operations issued
    /// while all are busy ride together in the next one. 0 turns batching
    /// off (one Execute call per operation).
    pub batches_in_flight: usize,
    /// Send every command of a partition to one replica this client
    /// prefers (another while it does not answer), so that concurrent
    /// operations share batches; false: a random replica each time. Each
    /// client draws its own preference, so many clients spread over the
    /// replicas.
    pub one_replica_per_partition: bool,
    /// Lease of a transaction's read version: a transaction that has not
    /// committed this long after its first read conflicts
    /// (`ReadVersionTooOld`) and runs again.
    pub transaction_lease: Duration,
    /// TLS: trust only the cluster CA in `ca`, present the user
    /// certificate `cert` with `key`, and require node certificates
    /// (`amulet-node`). `None`: plain TCP. The default is
    /// `AMULET_TLS_DIR`'s files for user `AMULET_USER` (`admin`) when that
    /// variable is set ([`TlsFiles::from_env`]).
    pub tls: Option<TlsFiles>,
    /// A bearer token (`amt1.ID.SECRET`, from `amulet token create`) sent
    /// with every request, for a client without a certificate of its own
    /// (docs/security.md); with TLS only ([`ClientConfig::with_token`]).
    /// The default is `AMULET_TOKEN` when set.
    pub token: Option<BearerToken>,
}

/// A bearer token; `Debug` never shows it.
#[derive(Clone, PartialEq, Eq)]
pub struct BearerToken(pub String);

impl std::fmt::Debug for BearerToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("BearerToken(<secret>)")
    }
}

/// Environment variable holding a bearer token clients send when given
/// none.
pub const TOKEN_ENV: &str = "AMULET_TOKEN";

impl Default for ClientConfig {
    fn default() -> Self {
        ClientConfig {
            attempt_timeout: Duration::from_secs(2),
            operation_timeout: Duration::from_secs(30),
            session_lease: Duration::from_secs(120),
            page_entries: 1_000,
            snapshot_lease: Duration::from_secs(300),
            range_entries: 1_000,
            batches_in_flight: 2,
            one_replica_per_partition: true,
            transaction_lease: Duration::from_secs(10),
            tls: TlsFiles::from_env(),
            token: std::env::var(TOKEN_ENV)
                .ok()
                .filter(|t| !t.is_empty())
                .map(BearerToken),
        }
    }
}

impl ClientConfig {
    /// With TLS as user `user` of the directory `dir` in `amulet cert`'s
    /// layout (`ca.pem`, `<user>.pem`, `<user>.key`).
    pub fn with_tls_dir(mut self, dir: impl AsRef<std::path::Path>, user: &str) -> ClientConfig {
        self.tls = Some(TlsFiles::user(dir.as_ref(), user));
        self
    }

    /// With TLS trusting the CA certificate `ca` and authenticating with
    /// the bearer token `token` instead of a certificate.
    pub fn with_token(mut self, ca: impl Into<std::path::PathBuf>, token: &str) -> ClientConfig {
        self.tls = Some(TlsFiles::ca_only(ca));
        self.token = Some(BearerToken(token.to_string()));
        self
    }
}
