//! Certificate creation (rcgen, ECDSA P-256) for `amulet cert` and
//! `amulet dev`: a CA, node certificates naming their node id, and user
//! certificates naming their user. Keys are written readable by their
//! owner only; nothing is ever overwritten.

use crate::files::{ca_cert, ca_key, DEV_USER};

/// The user `amulet dev` creates a certificate for.
pub const DEV_USER_NAME: &str = DEV_USER;
use crate::identity::{identity_uri, node_server_name, valid_user, Identity, NODE_SERVER_NAME};
use crate::{TlsError, TlsFiles};
use amulet_types::NodeId;
use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    Issuer, KeyPair, KeyUsagePurpose, SanType,
};
use std::io::Write;
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use time::{Duration, OffsetDateTime};

/// When a certificate is valid.
#[derive(Clone, Copy, Debug)]
pub struct Validity {
    /// Not valid before.
    pub not_before: OffsetDateTime,
    /// Not valid after.
    pub not_after: OffsetDateTime,
}

impl Validity {
    /// From an hour ago (clocks differ a little) for `days` days.
    pub fn days(days: u32) -> Validity {
        let now = OffsetDateTime::now_utc();
        Validity {
            not_before: now - Duration::hours(1),
            not_after: now + Duration::days(i64::from(days)),
        }
    }

    /// A validity that ended `days` days ago (for testing that expired
    /// certificates are refused).
    pub fn ended_days_ago(days: u32) -> Validity {
        let now = OffsetDateTime::now_utc();
        let end = now - Duration::days(i64::from(days));
        Validity {
            not_before: end - Duration::days(30),
            not_after: end,
        }
    }
}

/// Days a CA is valid for by default.
pub const CA_DAYS: u32 = 3650;
/// Days a node or user certificate is valid for by default.
pub const LEAF_DAYS: u32 = 825;

fn create_error(e: rcgen::Error) -> TlsError {
    TlsError::Create(e.to_string())
}

/// Creates `ca.pem` and `ca.key` in `dir` (made if missing).
pub fn create_ca(dir: &Path, name: &str, validity: Validity) -> Result<PathBuf, TlsError> {
    let (cert_path, key_path) = (ca_cert(dir), ca_key(dir));
    refuse_existing(&[&cert_path, &key_path])?;
    let mut params = CertificateParams::default();
    params.distinguished_name = DistinguishedName::new();
    params.distinguished_name.push(DnType::CommonName, name);
    params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
    params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    params.not_before = validity.not_before;
    params.not_after = validity.not_after;
    let key = KeyPair::generate().map_err(create_error)?;
    let cert = params.self_signed(&key).map_err(create_error)?;
    write_new(dir, &key_path, key.serialize_pem().as_bytes(), true)?;
    write_new(dir, &cert_path, cert.pem().as_bytes(), false)?;
    Ok(cert_path)
}

/// Creates node `node`'s certificate and key in `dir`, signed by the CA
/// there. `hosts` are further names or addresses it is reached by
/// (`127.0.0.1`, `::1` and `localhost` are always included).
pub fn create_node(
    dir: &Path,
    node: NodeId,
    hosts: &[String],
    validity: Validity,
) -> Result<TlsFiles, TlsError> {
    let files = TlsFiles::node(dir, node);
    let mut names = vec![
        SanType::DnsName(ia5(NODE_SERVER_NAME)?),
        SanType::DnsName(ia5(&node_server_name(node))?),
        SanType::DnsName(ia5("localhost")?),
        SanType::IpAddress(IpAddr::from([127, 0, 0, 1])),
        SanType::IpAddress("::1".parse().expect("an address")),
        SanType::URI(ia5(&identity_uri(&Identity::Node(node)))?),
    ];
    for host in hosts {
        names.push(match host.parse::<IpAddr>() {
            Ok(ip) => SanType::IpAddress(ip),
            Err(_) => SanType::DnsName(ia5(host)?),
        });
    }
    let usages = vec![
        ExtendedKeyUsagePurpose::ServerAuth,
        ExtendedKeyUsagePurpose::ClientAuth,
    ];
    create_leaf(
        dir,
        &files,
        &format!("amulet node {}", node.0),
        names,
        usages,
        validity,
    )?;
    Ok(files)
}

/// Creates user `user`'s certificate and key in `dir`, signed by the CA
/// there.
pub fn create_user(dir: &Path, user: &str, validity: Validity) -> Result<TlsFiles, TlsError> {
    if !valid_user(user) {
        return Err(TlsError::Create(format!(
            "bad user name {user:?}: 1-64 of [A-Za-z0-9_.-]"
        )));
    }
    let files = TlsFiles::user(dir, user);
    let names = vec![SanType::URI(ia5(&identity_uri(&Identity::User(
        user.to_string(),
    )))?)];
    let usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
    create_leaf(dir, &files, user, names, usages, validity)?;
    Ok(files)
}

/// What `amulet dev` needs in `dir`: a CA, a certificate for each of
/// `nodes` and one for the user `admin`, each created only if missing (a
/// second run keeps the first run's).
pub fn create_dev(dir: &Path, nodes: &[NodeId]) -> Result<(), TlsError> {
    if !ca_cert(dir).exists() {
        create_ca(dir, "amulet dev CA", Validity::days(CA_DAYS))?;
    }
    for &node in nodes {
        if !TlsFiles::node(dir, node).cert.exists() {
            create_node(dir, node, &[], Validity::days(LEAF_DAYS))?;
        }
    }
    if !TlsFiles::user(dir, DEV_USER).cert.exists() {
        create_user(dir, DEV_USER, Validity::days(LEAF_DAYS))?;
    }
    Ok(())
}

fn create_leaf(
    dir: &Path,
    files: &TlsFiles,
    common_name: &str,
    names: Vec<SanType>,
    usages: Vec<ExtendedKeyUsagePurpose>,
    validity: Validity,
) -> Result<(), TlsError> {
    refuse_existing(&[&files.cert, &files.key])?;
    let issuer = load_issuer(dir)?;
    let mut params = CertificateParams::default();
    params.distinguished_name = DistinguishedName::new();
    params
        .distinguished_name
        .push(DnType::CommonName, common_name);
    params.subject_alt_names = names;
    params.extended_key_usages = usages;
    params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
    params.is_ca = IsCa::ExplicitNoCa;
    params.not_before = validity.not_before;
    params.not_after = validity.not_after;
    let key = KeyPair::generate().map_err(create_error)?;
    let cert = params.signed_by(&key, &issuer).map_err(create_error)?;
    write_new(dir, &files.key, key.serialize_pem().as_bytes(), true)?;
    write_new(dir, &files.cert, cert.pem().as_bytes(), false)?;
    Ok(())
}

fn load_issuer(dir: &Path) -> Result<Issuer<'static, KeyPair>, TlsError> {
    let (cert_path, key_path) = (ca_cert(dir), ca_key(dir));
    let read = |path: &Path| {
        std::fs::read_to_string(path).map_err(|error| TlsError::Read {
            path: path.to_path_buf(),
            error,
        })
    };
    let key = KeyPair::from_pem(&read(&key_path)?).map_err(|e| TlsError::Pem {
        path: key_path.clone(),
        what: format!("not a usable CA key: {e}"),
    })?;
    Issuer::from_ca_cert_pem(&read(&cert_path)?, key).map_err(|e| TlsError::Pem {
        path: cert_path,
        what: format!("not a usable CA certificate: {e}"),
    })
}

fn ia5(name: &str) -> Result<rcgen::string::Ia5String, TlsError> {
    rcgen::string::Ia5String::try_from(name).map_err(|e| TlsError::Create(format!("{name:?}: {e}")))
}

fn refuse_existing(paths: &[&Path]) -> Result<(), TlsError> {
    match paths.iter().find(|p| p.exists()) {
        Some(path) => Err(TlsError::Exists(path.to_path_buf())),
        None => Ok(()),
    }
}

/// Writes a new file (never replacing one); keys readable by the owner only.
fn write_new(dir: &Path, path: &Path, bytes: &[u8], secret: bool) -> Result<(), TlsError> {
    let write_error = |error| TlsError::Write {
        path: path.to_path_buf(),
        error,
    };
    std::fs::create_dir_all(dir).map_err(write_error)?;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(if secret { 0o600 } else { 0o644 });
    }
    let mut file = options.open(path).map_err(write_error)?;
    file.write_all(bytes).map_err(write_error)?;
    file.sync_all().map_err(write_error)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::identity_of;

    fn leaf_der(path: &Path) -> Vec<u8> {
        crate::context::load_certs(path).unwrap()[0].to_vec()
    }

    #[test]
    fn created_certificates_name_their_identity() {
        let dir = std::env::temp_dir().join(format!("amulet-tls-create-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        create_dev(&dir, &[NodeId(1), NodeId(2)]).unwrap();
        let node = TlsFiles::node(&dir, NodeId(2));
        assert_eq!(
            identity_of(&leaf_der(&node.cert)).unwrap(),
            Identity::Node(NodeId(2))
        );
        let admin = TlsFiles::user(&dir, DEV_USER);
        assert_eq!(
            identity_of(&leaf_der(&admin.cert)).unwrap(),
            Identity::User("admin".into())
        );
        // A second run keeps what exists; an explicit create refuses.
        create_dev(&dir, &[NodeId(1), NodeId(2), NodeId(3)]).unwrap();
        assert!(matches!(
            create_user(&dir, "admin", Validity::days(1)),
            Err(TlsError::Exists(_))
        ));
        assert!(matches!(
            create_user(&dir, "no/slash", Validity::days(1)),
            Err(TlsError::Create(_))
        ));
        // Both configurations build from what was created.
        crate::TlsContext::load(node).unwrap();
        crate::TlsContext::load(admin).unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(ca_key(&dir))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o077, 0, "the CA key is readable by its owner only");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn missing_files_are_named() {
        let dir = Path::new("/nonexistent-amulet-tls");
        let error = crate::TlsContext::load(TlsFiles::user(dir, "admin"))
            .err()
            .unwrap();
        assert!(
            error.to_string().contains("/nonexistent-amulet-tls/ca.pem"),
            "{error}"
        );
    }
}
