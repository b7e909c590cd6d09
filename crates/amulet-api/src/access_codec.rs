//! Access control on the wire (docs/security.md): `ChangeAccessRequest` to
//! and from [`AccessChange`], the access configuration as
//! `AccessConfiguration` (never a token's digest).

use crate::pb;
use amulet_smr::{AccessChange, AccessControl, Permission};
use tonic::Status;

/// The permission a wire value names.
#[allow(clippy::result_large_err)] // tonic's Status
pub fn permission_from_pb(value: i32) -> Result<Permission, Status> {
    match pb::Permission::try_from(value) {
        Ok(pb::Permission::Read) => Ok(Permission::Read),
        Ok(pb::Permission::Write) => Ok(Permission::Write),
        Ok(pb::Permission::Admin) => Ok(Permission::Admin),
        Ok(pb::Permission::Unspecified) | Err(_) => Err(Status::invalid_argument(
            "a grant needs a permission: read, write or admin",
        )),
    }
}

/// The wire value of a permission.
pub fn permission_to_pb(permission: Permission) -> pb::Permission {
    match permission {
        Permission::Read => pb::Permission::Read,
        Permission::Write => pb::Permission::Write,
        Permission::Admin => pb::Permission::Admin,
    }
}

/// The change a request asks for (names checked by the replica's edge).
#[allow(clippy::result_large_err)] // tonic's Status
pub fn access_change_from_pb(request: pb::ChangeAccessRequest) -> Result<AccessChange, Status> {
    use pb::change_access_request::Change;
    let change = request
        .change
        .ok_or_else(|| Status::invalid_argument("the request names no access change"))?;
    Ok(match change {
        Change::AssignRole(r) => AccessChange::AssignRole {
            user: r.user,
            role: r.role,
        },
        Change::UnassignRole(r) => AccessChange::UnassignRole {
            user: r.user,
            role: r.role,
        },
        Change::Grant(g) => AccessChange::Grant {
            role: g.role,
            map: g.map,
            permission: permission_from_pb(g.permission)?,
        },
        Change::Revoke(g) => AccessChange::Revoke {
            role: g.role,
            map: g.map,
        },
        Change::RevokeToken(id) => AccessChange::RevokeToken { id },
    })
}

/// The request for a change (token creation has its own RPC).
pub fn access_change_to_pb(change: &AccessChange) -> Option<pb::ChangeAccessRequest> {
    use pb::change_access_request::Change;
    let change = match change {
        AccessChange::AssignRole { user, role } => Change::AssignRole(pb::UserRole {
            user: user.clone(),
            role: role.clone(),
        }),
        AccessChange::UnassignRole { user, role } => Change::UnassignRole(pb::UserRole {
            user: user.clone(),
            role: role.clone(),
        }),
        AccessChange::Grant {
            role,
            map,
            permission,
        } => Change::Grant(pb::RoleGrant {
            role: role.clone(),
            map: map.clone(),
            permission: permission_to_pb(*permission) as i32,
        }),
        AccessChange::Revoke { role, map } => Change::Revoke(pb::RoleGrant {
            role: role.clone(),
            map: map.clone(),
            permission: pb::Permission::Unspecified as i32,
        }),
        AccessChange::RevokeToken { id } => Change::RevokeToken(id.clone()),
        AccessChange::CreateToken { .. } | AccessChange::Read => return None,
    };
    Some(pb::ChangeAccessRequest {
        change: Some(change),
    })
}

/// The configuration as `GetAccess` answers it: users, roles, grants and
/// tokens' ids, users and expiries (never their digests).
pub fn access_to_pb(access: &AccessControl) -> pb::AccessConfiguration {
    pb::AccessConfiguration {
        version: access.version(),
        users: access
            .users()
            .iter()
            .map(|(user, roles)| pb::UserRoles {
                user: user.clone(),
                roles: roles.iter().cloned().collect(),
            })
            .collect(),
        roles: access
            .roles()
            .iter()
            .map(|(role, grants)| pb::RoleGrants {
                role: role.clone(),
                grants: grants
                    .iter()
                    .map(|(map, permission)| pb::RoleGrant {
                        role: role.clone(),
                        map: map.clone(),
                        permission: permission_to_pb(*permission) as i32,
                    })
                    .collect(),
            })
            .collect(),
        tokens: access
            .tokens()
            .map(|(id, user, expires)| pb::TokenInfo {
                id: id.clone(),
                user: user.to_string(),
                expires_unix_micros: expires,
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn security_access_changes_round_trip_and_a_grant_needs_a_permission() {
        let changes = [
            AccessChange::AssignRole {
                user: "alice".into(),
                role: "readers".into(),
            },
            AccessChange::UnassignRole {
                user: "alice".into(),
                role: "readers".into(),
            },
            AccessChange::Grant {
                role: "readers".into(),
                map: "*".into(),
                permission: Permission::Read,
            },
            AccessChange::RevokeToken { id: "t".into() },
        ];
        for change in changes {
            let pb = access_change_to_pb(&change).unwrap();
            assert_eq!(access_change_from_pb(pb).unwrap(), change);
        }
        let revoke = AccessChange::Revoke {
            role: "r".into(),
            map: "m".into(),
        };
        assert_eq!(
            access_change_from_pb(access_change_to_pb(&revoke).unwrap()).unwrap(),
            revoke
        );
        let mut bad = access_change_to_pb(&AccessChange::Grant {
            role: "r".into(),
            map: "m".into(),
            permission: Permission::Write,
        })
        .unwrap();
        if let Some(pb::change_access_request::Change::Grant(g)) = &mut bad.change {
            g.permission = 0;
        }
        assert_eq!(
            access_change_from_pb(bad).unwrap_err().code(),
            tonic::Code::InvalidArgument
        );
        assert!(access_change_from_pb(pb::ChangeAccessRequest { change: None }).is_err());
    }
}
