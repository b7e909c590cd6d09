//! The access-control part of the client API (docs/security.md):
//! `ChangeAccess` and `CreateToken` ordered on the global stream (the
//! replicas check the sender is a cluster admin), `GetAccess` and `WhoAmI`
//! answered from this node's latest access configuration, and the check
//! of the reads this node serves without ordering.

use crate::api_connection::{principal_of, unix_micros_now};
use crate::client_api::Service;
use amulet_api::pb;
use amulet_smr::{AccessChange, AccessControl, Body, ClientRequest, Need, Principal, TokenRecord};
use amulet_types::MapVersion;
use tonic::{Request, Response, Status};

/// A token's lifetime when the request names none, s (a day).
const TOKEN_TTL_SECONDS_DEFAULT: u64 = 86_400;
/// The longest token lifetime, s (a year).
const TOKEN_TTL_SECONDS_MAX: u64 = 365 * 86_400;

/// Judges a request this node serves without ordering (snapshot pages,
/// tails, reads at a version, eventual maps) by `access`, this node's
/// latest configuration, with the replicas' own judgement
/// ([`AccessControl::check`]): UNAUTHENTICATED for a token revoked since
/// the request was authenticated, PERMISSION_DENIED for a missing
/// permission. `None`: a node without TLS, nobody is checked.
#[allow(clippy::result_large_err)] // tonic's Status
pub(crate) fn allowed_by(
    access: &AccessControl,
    principal: Option<&Principal>,
    needs: impl FnOnce(&mut dyn FnMut(Need<'_>)),
) -> Result<(), Status> {
    match principal {
        None => Ok(()),
        Some(principal) => access
            .check(principal, needs)
            .map_err(|refusal| amulet_api::refusal_status(&refusal)),
    }
}

impl Service {
    /// `ChangeAccess`.
    pub(crate) async fn change_access_rpc(
        &self,
        request: Request<pb::ChangeAccessRequest>,
    ) -> Result<Response<pb::ChangeAccessResponse>, Status> {
        let started = tokio::time::Instant::now();
        let principal = principal_of(&request);
        let result = async {
            let change = amulet_api::access_change_from_pb(request.into_inner())?;
            tracing::info!(?change, user = ?principal.as_ref().map(|p| &p.user), "access change requested");
            self.order_access_change(principal, change).await?;
            Ok(Response::new(pb::ChangeAccessResponse {}))
        }
        .await;
        self.record("change_access", started, &result);
        result
    }

    /// `CreateToken`: this node draws the token, orders its digest and
    /// returns the secret in this reply alone.
    pub(crate) async fn create_token_rpc(
        &self,
        request: Request<pb::CreateTokenRequest>,
    ) -> Result<Response<pb::CreateTokenResponse>, Status> {
        let started = tokio::time::Instant::now();
        let principal = principal_of(&request);
        let result = async {
            let r = request.into_inner();
            let ttl_seconds = match r.ttl_seconds {
                0 => TOKEN_TTL_SECONDS_DEFAULT,
                n if n <= TOKEN_TTL_SECONDS_MAX => n,
                n => {
                    return Err(Status::invalid_argument(format!(
                        "token lifetime {n} s outside 1..={TOKEN_TTL_SECONDS_MAX}"
                    )))
                }
            };
            let token = amulet_tls::Token::generate();
            let now = unix_micros_now();
            let expires_unix_micros = now.saturating_add(ttl_seconds * 1_000_000);
            let change = AccessChange::CreateToken {
                id: token.id.clone(),
                record: TokenRecord {
                    user: r.user.clone(),
                    digest: token.digest(),
                    expires_unix_micros,
                },
                now_unix_micros: now,
            };
            // Logged by id only: the secret goes to this reply alone.
            tracing::info!(id = %token.id, user = %r.user, ttl_seconds, "token requested");
            self.order_access_change(principal, change).await?;
            Ok(Response::new(pb::CreateTokenResponse {
                token: token.expose(),
                id: token.id,
                expires_unix_micros,
            }))
        }
        .await;
        self.record("create_token", started, &result);
        result
    }

    /// `GetAccess`: cluster admin only. A read ordered on the global
    /// stream first, so the answer holds every change acknowledged before
    /// it was asked, wherever it was made (read-your-writes across nodes).
    pub(crate) async fn get_access_rpc(
        &self,
        request: Request<pb::GetAccessRequest>,
    ) -> Result<Response<pb::AccessConfiguration>, Status> {
        let principal = principal_of(&request);
        self.order_access_change(principal.clone(), AccessChange::Read)
            .await?;
        let access = self.handle.access();
        allowed_by(&access, principal.as_ref(), |need| need(Need::Cluster))?;
        Ok(Response::new(amulet_api::access_to_pb(&access)))
    }

    /// `WhoAmI`.
    #[allow(clippy::result_large_err)] // tonic's Status
    pub(crate) fn who_am_i_rpc(
        &self,
        request: Request<pb::WhoAmIRequest>,
    ) -> Result<Response<pb::WhoAmIResponse>, Status> {
        let Some(principal) = principal_of(&request) else {
            return Ok(Response::new(pb::WhoAmIResponse::default()));
        };
        let access = self.handle.access();
        allowed_by(&access, Some(&principal), |_| {})?;
        let roles = access
            .users()
            .get(&principal.user)
            .map(|roles| roles.iter().cloned().collect())
            .unwrap_or_default();
        Ok(Response::new(pb::WhoAmIResponse {
            user: principal.user,
            token: principal.token.unwrap_or_default(),
            roles,
            secure: true,
        }))
    }

    /// [`allowed_by`] this node's latest access configuration.
    #[allow(clippy::result_large_err)] // tonic's Status
    pub(crate) fn allowed_here(
        &self,
        principal: Option<&Principal>,
        needs: impl FnOnce(&mut dyn FnMut(Need<'_>)),
    ) -> Result<(), Status> {
        allowed_by(&self.handle.access(), principal, needs)
    }

    /// Orders an access change on the global stream; answered once every
    /// replica judges by it from its position on. An access change is
    /// judged by no partition map (the replicas ignore its version).
    async fn order_access_change(
        &self,
        principal: Option<Principal>,
        change: AccessChange,
    ) -> Result<(), Status> {
        let request = ClientRequest {
            map_version: MapVersion(0),
            session: None,
            body: Body::Access(change),
            principal,
        };
        self.submit(None, request).await?;
        Ok(())
    }
}
