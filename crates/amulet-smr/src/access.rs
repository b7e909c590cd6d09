//! Who may do what (docs/security.md): users, roles, per-map grants and
//! bearer tokens, held in the replicated configuration and changed only by
//! [`AccessChange`]s ordered on the global stream. Every replica of every
//! partition holds the same [`AccessControl`] at the same global position,
//! so a request is allowed or denied the same way wherever it executes;
//! the check is part of execution, not of the edge that received it.
//!
//! The model (etcd's and CockroachDB's, reduced):
//!
//! - a **user** is a name: the one a client certificate names
//!   (`urn:amulet:user:U`) or the one a token was made for;
//! - a **role** holds grants: a [`Permission`] on a map or log by name, or
//!   on `*` (every map and log); permissions are ordered, admin ⊇ write ⊇
//!   read;
//! - the built-in role [`CLUSTER_ADMIN`] may do everything, including
//!   reconfiguration (split, merge, move, replace-stream), membership and
//!   access changes; in a new cluster the user [`BOOTSTRAP_ADMIN`] holds
//!   it (the certificate `amulet dev` and `amulet cert create-client
//!   admin` make);
//! - a **token** stands for its user until it expires or is revoked; the
//!   configuration holds its SHA-256 digest, never the secret, and a
//!   request made with a token names the token, so a revocation denies it
//!   from the revocation's position on.

use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

/// The role that may do everything.
pub const CLUSTER_ADMIN: &str = "cluster-admin";
/// The user holding [`CLUSTER_ADMIN`] in a new cluster.
pub const BOOTSTRAP_ADMIN: &str = "admin";
/// The grant target meaning every map and log.
pub const EVERY_MAP: &str = "*";
/// Longest user, role, map or token id name in an access change, bytes.
pub const NAME_BYTES_MAX: usize = 256;
/// Most roles, grants or tokens the configuration holds (each), so a
/// cluster admin's script gone wrong cannot grow every replica's state
/// without bound.
pub const ENTRIES_MAX: usize = 100_000;

/// What a grant allows on a map or log; each includes the ones before it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Permission {
    /// Reads, snapshots, tails.
    Read,
    /// Reads and writes (puts, removes, appends, trims, commits).
    Write,
    /// Writes, and creating and dropping the map or log.
    Admin,
}

impl Permission {
    /// Its name in the CLI and the API (`read`, `write`, `admin`).
    pub fn name(self) -> &'static str {
        match self {
            Permission::Read => "read",
            Permission::Write => "write",
            Permission::Admin => "admin",
        }
    }

    /// The permission named `name`.
    pub fn from_name(name: &str) -> Option<Permission> {
        match name {
            "read" => Some(Permission::Read),
            "write" => Some(Permission::Write),
            "admin" => Some(Permission::Admin),
            _ => None,
        }
    }
}

/// Who sent a request, as the edge that received it authenticated them
/// and as it is ordered with the request.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Principal {
    /// The user.
    pub user: String,
    /// The token the request was made with (its id), if not a
    /// certificate: the token must still be valid where it executes.
    pub token: Option<String>,
}

impl Principal {
    /// A user authenticated by a certificate.
    pub fn user(name: impl Into<String>) -> Principal {
        Principal {
            user: name.into(),
            token: None,
        }
    }
}

/// What a command needs of its sender.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Need<'a> {
    /// `Permission` on the map or log named.
    Map(&'a str, Permission),
    /// The cluster admin role (reconfiguration, membership, access).
    Cluster,
}

/// A bearer token as the configuration holds it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenRecord {
    /// The user it stands for.
    pub user: String,
    /// SHA-256 of its secret.
    pub digest: [u8; 32],
    /// When it stops being valid, wall-clock µs since the Unix epoch.
    /// Judged by the edge that authenticates a request (replicas have no
    /// wall clock they agree on); a request ordered with a token that was
    /// valid then executes unless the token is revoked by then.
    pub expires_unix_micros: u64,
}

/// A change of the access configuration: ordered on the global stream,
/// needs [`CLUSTER_ADMIN`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum AccessChange {
    /// `user` gets `role`.
    AssignRole {
        /// The user.
        user: String,
        /// The role.
        role: String,
    },
    /// `user` loses `role`.
    UnassignRole {
        /// The user.
        user: String,
        /// The role.
        role: String,
    },
    /// `role` gets `permission` on `map` (or [`EVERY_MAP`]), replacing
    /// what it had there.
    Grant {
        /// The role.
        role: String,
        /// A map or log name, or `*`.
        map: String,
        /// What it allows.
        permission: Permission,
    },
    /// `role` loses its grant on `map`.
    Revoke {
        /// The role.
        role: String,
        /// A map or log name, or `*`.
        map: String,
    },
    /// A token for `user` (made by the edge that received the request:
    /// random id and secret, only the digest ordered). Tokens expired by
    /// `now_unix_micros` (that edge's clock, ordered with the change, so
    /// every replica forgets the same ones) are forgotten.
    CreateToken {
        /// The token's id (public, in the token string).
        id: String,
        /// What it stands for and until when.
        record: TokenRecord,
        /// The creating edge's wall clock, µs since the Unix epoch.
        now_unix_micros: u64,
    },
    /// The token `id` stops being valid.
    RevokeToken {
        /// The token's id.
        id: String,
    },
    /// Changes nothing: ordered so that the node answering `GetAccess`
    /// has executed every change acknowledged before the read was asked
    /// (a linearizable read of the configuration), and judged like a
    /// change (cluster admin only).
    Read,
}

impl AccessChange {
    /// Checks names and sizes (the edge refuses a bad change before it is
    /// ordered; execution checks again, so a forged one changes nothing).
    pub fn validate(&self) -> Result<(), AccessError> {
        let name = |what: &'static str, s: &str| {
            if s.is_empty() || s.len() > NAME_BYTES_MAX || s.chars().any(char::is_control) {
                Err(AccessError::BadName(what.to_string()))
            } else {
                Ok(())
            }
        };
        match self {
            AccessChange::AssignRole { user, role } | AccessChange::UnassignRole { user, role } => {
                name("user", user)?;
                name("role", role)
            }
            AccessChange::Grant { role, map, .. } | AccessChange::Revoke { role, map } => {
                name("role", role)?;
                if role == CLUSTER_ADMIN {
                    return Err(AccessError::BuiltInRole);
                }
                name("map", map)
            }
            AccessChange::CreateToken { id, record, .. } => {
                name("token id", id)?;
                name("user", &record.user)
            }
            AccessChange::RevokeToken { id } => name("token id", id),
            AccessChange::Read => Ok(()),
        }
    }
}

/// Why an access change or a request was refused.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
pub enum AccessError {
    /// A name is empty, too long or has control characters.
    #[error("bad {0} name: 1 to 256 bytes without control characters")]
    BadName(String),
    /// The built-in role's grants cannot change.
    #[error("the role cluster-admin is built in: its grants cannot change")]
    BuiltInRole,
    /// The configuration holds as many entries as it may.
    #[error("the access configuration is full ({ENTRIES_MAX} entries of a kind)")]
    Full,
    /// A token id already in use.
    #[error("token id already in use")]
    TokenExists,
    /// Unassigning the last holder of the cluster admin role would leave
    /// nobody able to change access again.
    #[error("the last cluster admin cannot lose the role")]
    LastClusterAdmin,
}

/// Users, roles, grants and tokens (see the module docs). Ordered maps
/// throughout: every replica iterates it the same way.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AccessControl {
    /// Each user's roles.
    users: BTreeMap<String, BTreeSet<String>>,
    /// Each role's grants, by map name (or `*`).
    roles: BTreeMap<String, BTreeMap<String, Permission>>,
    /// Tokens by id.
    tokens: BTreeMap<String, TokenRecord>,
    /// Access changes executed: its version, shown by `amulet access`.
    version: u64,
}

impl Default for AccessControl {
    /// A new cluster's: [`BOOTSTRAP_ADMIN`] is cluster admin.
    fn default() -> AccessControl {
        let mut users = BTreeMap::new();
        users.insert(
            BOOTSTRAP_ADMIN.to_string(),
            BTreeSet::from([CLUSTER_ADMIN.to_string()]),
        );
        AccessControl {
            users,
            roles: BTreeMap::new(),
            tokens: BTreeMap::new(),
            version: 0,
        }
    }
}

impl AccessControl {
    /// Applies an ordered change (deterministic: the same on every
    /// replica). A refused change changes nothing.
    pub fn apply(&mut self, change: &AccessChange) -> Result<(), AccessError> {
        change.validate()?;
        match change {
            AccessChange::AssignRole { user, role } => {
                if !self.users.contains_key(user) && self.users.len() >= ENTRIES_MAX {
                    return Err(AccessError::Full);
                }
                self.users
                    .entry(user.clone())
                    .or_default()
                    .insert(role.clone());
            }
            AccessChange::UnassignRole { user, role } => {
                if role == CLUSTER_ADMIN
                    && self.holds(user, CLUSTER_ADMIN)
                    && self
                        .users
                        .values()
                        .filter(|roles| roles.contains(CLUSTER_ADMIN))
                        .count()
                        == 1
                {
                    return Err(AccessError::LastClusterAdmin);
                }
                if let Some(roles) = self.users.get_mut(user) {
                    roles.remove(role);
                    if roles.is_empty() {
                        self.users.remove(user);
                    }
                }
            }
            AccessChange::Grant {
                role,
                map,
                permission,
            } => {
                if !self.roles.contains_key(role) && self.roles.len() >= ENTRIES_MAX {
                    return Err(AccessError::Full);
                }
                let grants = self.roles.entry(role.clone()).or_default();
                if !grants.contains_key(map) && grants.len() >= ENTRIES_MAX {
                    return Err(AccessError::Full);
                }
                grants.insert(map.clone(), *permission);
            }
            AccessChange::Revoke { role, map } => {
                if let Some(grants) = self.roles.get_mut(role) {
                    grants.remove(map);
                    if grants.is_empty() {
                        self.roles.remove(role);
                    }
                }
            }
            AccessChange::CreateToken {
                id,
                record,
                now_unix_micros,
            } => {
                self.tokens
                    .retain(|_, t| t.expires_unix_micros > *now_unix_micros);
                if self.tokens.contains_key(id) {
                    return Err(AccessError::TokenExists);
                }
                if self.tokens.len() >= ENTRIES_MAX {
                    return Err(AccessError::Full);
                }
                self.tokens.insert(id.clone(), record.clone());
            }
            AccessChange::RevokeToken { id } => {
                self.tokens.remove(id);
            }
            AccessChange::Read => return Ok(()),
        }
        self.version += 1;
        Ok(())
    }

    /// Whether `principal` is who it says: a certificate's user always is
    /// (the edge checked the certificate); a token's only while the token
    /// exists and is the user's (revocation takes effect at its position;
    /// expiry is the edge's to judge, see [`TokenRecord`]).
    pub fn authentic(&self, principal: &Principal) -> bool {
        match &principal.token {
            None => true,
            Some(id) => self
                .tokens
                .get(id)
                .is_some_and(|t| t.user == principal.user),
        }
    }

    /// Whether `principal` may do what `need` asks (authenticity checked
    /// separately by [`AccessControl::authentic`]).
    pub fn allows(&self, principal: &Principal, need: Need<'_>) -> bool {
        let Some(roles) = self.users.get(&principal.user) else {
            return false;
        };
        if roles.contains(CLUSTER_ADMIN) {
            return true;
        }
        match need {
            Need::Cluster => false,
            Need::Map(map, wanted) => roles.iter().any(|role| {
                self.roles.get(role).is_some_and(|grants| {
                    [map, EVERY_MAP]
                        .iter()
                        .any(|m| grants.get(*m).is_some_and(|&p| p >= wanted))
                })
            }),
        }
    }

    /// The verdict on a request from `principal` that needs what `needs`
    /// lists: a token no longer valid, or the first permission missing.
    /// The one judgement both the replicas (ordered commands, at their
    /// position) and the node (reads it serves unordered) make.
    pub fn check(
        &self,
        principal: &Principal,
        needs: impl FnOnce(&mut dyn FnMut(Need<'_>)),
    ) -> Result<(), crate::Refusal> {
        if !self.authentic(principal) {
            return Err(crate::Refusal::TokenInvalid);
        }
        let mut missing = None;
        needs(&mut |need| {
            if missing.is_none() && !self.allows(principal, need) {
                missing = Some(match need {
                    Need::Map(map, permission) => format!("{} on {map:?}", permission.name()),
                    Need::Cluster => "cluster admin".to_string(),
                });
            }
        });
        match missing {
            None => Ok(()),
            Some(need) => Err(crate::Refusal::PermissionDenied {
                user: principal.user.clone(),
                need,
            }),
        }
    }

    fn holds(&self, user: &str, role: &str) -> bool {
        self.users.get(user).is_some_and(|r| r.contains(role))
    }

    /// A token for a presented secret's digest: its record if `id` exists
    /// and the digest matches (compared in constant time).
    pub fn token(&self, id: &str, digest: &[u8; 32]) -> Option<&TokenRecord> {
        let record = self.tokens.get(id)?;
        let mut diff = 0u8;
        for (a, b) in record.digest.iter().zip(digest) {
            diff |= a ^ b;
        }
        (diff == 0).then_some(record)
    }

    /// Access changes executed so far.
    pub fn version(&self) -> u64 {
        self.version
    }

    /// Users and their roles.
    pub fn users(&self) -> &BTreeMap<String, BTreeSet<String>> {
        &self.users
    }

    /// Roles and their grants.
    pub fn roles(&self) -> &BTreeMap<String, BTreeMap<String, Permission>> {
        &self.roles
    }

    /// Tokens: id, user and expiry (never the digest outside this crate's
    /// callers that need it).
    pub fn tokens(&self) -> impl Iterator<Item = (&String, &str, u64)> {
        self.tokens
            .iter()
            .map(|(id, t)| (id, t.user.as_str(), t.expires_unix_micros))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grant(role: &str, map: &str, permission: Permission) -> AccessChange {
        AccessChange::Grant {
            role: role.into(),
            map: map.into(),
            permission,
        }
    }

    fn assign(user: &str, role: &str) -> AccessChange {
        AccessChange::AssignRole {
            user: user.into(),
            role: role.into(),
        }
    }

    #[test]
    fn security_a_new_cluster_has_only_its_bootstrap_admin() {
        let acl = AccessControl::default();
        assert!(acl.allows(&Principal::user("admin"), Need::Cluster));
        assert!(acl.allows(&Principal::user("admin"), Need::Map("m", Permission::Admin)));
        assert!(!acl.allows(&Principal::user("alice"), Need::Map("m", Permission::Read)));
    }

    #[test]
    fn security_permissions_include_the_lesser_ones_and_the_wildcard_covers_every_map() {
        let mut acl = AccessControl::default();
        acl.apply(&grant("readers", "carts", Permission::Read))
            .unwrap();
        acl.apply(&grant("writers", EVERY_MAP, Permission::Write))
            .unwrap();
        acl.apply(&assign("alice", "readers")).unwrap();
        acl.apply(&assign("bob", "writers")).unwrap();
        let (alice, bob) = (Principal::user("alice"), Principal::user("bob"));
        assert!(acl.allows(&alice, Need::Map("carts", Permission::Read)));
        assert!(!acl.allows(&alice, Need::Map("carts", Permission::Write)));
        assert!(!acl.allows(&alice, Need::Map("other", Permission::Read)));
        assert!(acl.allows(&bob, Need::Map("anything", Permission::Read)));
        assert!(acl.allows(&bob, Need::Map("anything", Permission::Write)));
        assert!(!acl.allows(&bob, Need::Map("anything", Permission::Admin)));
        assert!(!acl.allows(&bob, Need::Cluster));
        acl.apply(&AccessChange::Revoke {
            role: "writers".into(),
            map: EVERY_MAP.into(),
        })
        .unwrap();
        assert!(!acl.allows(&bob, Need::Map("anything", Permission::Read)));
        assert_eq!(acl.version(), 5);
    }

    #[test]
    fn security_the_last_cluster_admin_keeps_the_role_and_the_built_in_role_is_fixed() {
        let mut acl = AccessControl::default();
        let before = acl.clone();
        let unassign = AccessChange::UnassignRole {
            user: "admin".into(),
            role: CLUSTER_ADMIN.into(),
        };
        assert_eq!(acl.apply(&unassign), Err(AccessError::LastClusterAdmin));
        assert_eq!(
            acl.apply(&grant(CLUSTER_ADMIN, "m", Permission::Read)),
            Err(AccessError::BuiltInRole)
        );
        assert_eq!(
            acl.apply(&assign("", "r")),
            Err(AccessError::BadName("user".into()))
        );
        assert_eq!(acl, before, "a refused change changes nothing");
        acl.apply(&assign("root2", CLUSTER_ADMIN)).unwrap();
        acl.apply(&unassign).unwrap();
        assert!(!acl.allows(&Principal::user("admin"), Need::Cluster));
        assert!(acl.allows(&Principal::user("root2"), Need::Cluster));
    }

    #[test]
    fn security_a_token_is_authentic_until_revoked_or_expired() {
        let mut acl = AccessControl::default();
        let record = TokenRecord {
            user: "alice".into(),
            digest: [7; 32],
            expires_unix_micros: 1_000,
        };
        acl.apply(&AccessChange::CreateToken {
            id: "t1".into(),
            record: record.clone(),
            now_unix_micros: 0,
        })
        .unwrap();
        let p = Principal {
            user: "alice".into(),
            token: Some("t1".into()),
        };
        assert!(acl.authentic(&p));
        let forged = Principal {
            user: "admin".into(),
            token: Some("t1".into()),
        };
        assert!(
            !acl.authentic(&forged),
            "a token stands for its own user only"
        );
        assert!(acl.token("t1", &[7; 32]).is_some());
        assert!(acl.token("t1", &[8; 32]).is_none(), "forged secret");
        assert_eq!(
            acl.apply(&AccessChange::CreateToken {
                id: "t1".into(),
                record: record.clone(),
                now_unix_micros: 0,
            }),
            Err(AccessError::TokenExists)
        );
        acl.apply(&AccessChange::RevokeToken { id: "t1".into() })
            .unwrap();
        assert!(!acl.authentic(&p), "revoked");
        // A later creation forgets the tokens expired by its clock.
        acl.apply(&AccessChange::CreateToken {
            id: "t2".into(),
            record: record.clone(),
            now_unix_micros: 0,
        })
        .unwrap();
        acl.apply(&AccessChange::CreateToken {
            id: "t3".into(),
            record: TokenRecord {
                expires_unix_micros: 5_000,
                ..record
            },
            now_unix_micros: 2_000,
        })
        .unwrap();
        assert_eq!(
            acl.tokens().map(|t| t.0.as_str()).collect::<Vec<_>>(),
            ["t3"]
        );
    }
}
