//! Access control from a client (docs/security.md): users' roles, roles'
//! grants, bearer tokens, and who the cluster takes this client for. Every
//! change is ordered on the global stream and needs the cluster admin
//! role; none is retried on a refusal.

use crate::{Client, Error};
use amulet_api::pb;
use amulet_smr::{AccessChange, Permission};

/// A bearer token as created: the secret is in `token` only.
#[derive(Clone, PartialEq, Eq)]
pub struct CreatedToken {
    /// `amt1.ID.SECRET`: what a client sends.
    pub token: String,
    /// The token's public id (for `revoke_token`).
    pub id: String,
    /// When it expires, µs since the Unix epoch.
    pub expires_unix_micros: u64,
}

impl std::fmt::Debug for CreatedToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "CreatedToken({}, expires {})",
            self.id, self.expires_unix_micros
        )
    }
}

/// Who a node takes this client for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WhoAmI {
    /// The user (empty on a cluster without TLS).
    pub user: String,
    /// The token's id, when authenticated by one.
    pub token: Option<String>,
    /// The user's roles.
    pub roles: Vec<String>,
    /// Whether the node checks who its clients are (TLS on).
    pub secure: bool,
}

impl Client {
    /// Orders an access change (assign or unassign a role, grant or revoke
    /// a permission, revoke a token); it holds at every replica from its
    /// point of the order on. Needs the cluster admin role.
    pub async fn change_access(&self, change: &AccessChange) -> Result<(), Error> {
        let request = amulet_api::access_change_to_pb(change)
            .ok_or_else(|| Error::InvalidArgument("tokens are created with create_token".into()))?;
        let (mut channel, _) = self.any_node()?;
        self.timed("change access", channel.change_access(request))
            .await?;
        Ok(())
    }

    /// `role` gets `permission` on `map` (`"*"`: every map and log).
    pub async fn grant(&self, role: &str, map: &str, permission: Permission) -> Result<(), Error> {
        self.change_access(&AccessChange::Grant {
            role: role.into(),
            map: map.into(),
            permission,
        })
        .await
    }

    /// `user` gets `role`.
    pub async fn assign_role(&self, user: &str, role: &str) -> Result<(), Error> {
        self.change_access(&AccessChange::AssignRole {
            user: user.into(),
            role: role.into(),
        })
        .await
    }

    /// A bearer token for `user`, valid for `ttl_seconds` (0: a day).
    pub async fn create_token(&self, user: &str, ttl_seconds: u64) -> Result<CreatedToken, Error> {
        let (mut channel, _) = self.any_node()?;
        let reply = self
            .timed(
                "create token",
                channel.create_token(pb::CreateTokenRequest {
                    user: user.into(),
                    ttl_seconds,
                }),
            )
            .await?;
        Ok(CreatedToken {
            token: reply.token,
            id: reply.id,
            expires_unix_micros: reply.expires_unix_micros,
        })
    }

    /// The access configuration, with every change acknowledged before
    /// this call (the node orders a read first; cluster admin only; never
    /// a token's secret).
    pub async fn access(&self) -> Result<pb::AccessConfiguration, Error> {
        let (mut channel, _) = self.any_node()?;
        self.timed("get access", channel.get_access(pb::GetAccessRequest {}))
            .await
    }

    /// Who the cluster takes this client for.
    pub async fn who_am_i(&self) -> Result<WhoAmI, Error> {
        let (mut channel, _) = self.any_node()?;
        let reply = self
            .timed("who am I", channel.who_am_i(pb::WhoAmIRequest {}))
            .await?;
        Ok(WhoAmI {
            user: reply.user,
            token: Some(reply.token).filter(|t| !t.is_empty()),
            roles: reply.roles,
            secure: reply.secure,
        })
    }

    pub(crate) async fn timed<T>(
        &self,
        what: &str,
        call: impl std::future::Future<Output = Result<tonic::Response<T>, tonic::Status>>,
    ) -> Result<T, Error> {
        tokio::time::timeout(self.config().operation_timeout, call)
            .await
            .map_err(|_| Error::OutcomeUnknown(format!("{what}: no answer in time")))?
            .map(tonic::Response::into_inner)
            .map_err(|s| Error::from_status(&s))
    }
}
