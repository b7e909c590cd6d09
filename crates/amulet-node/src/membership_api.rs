//! The membership part of `Status` (docs/membership.md): the view this
//! node executed, each member's observers and what they report, the
//! subjects in flux, the last view changes.

use amulet_api::pb;
use amulet_membership::{MemberState, Membership};

/// `membership` as the client API carries it.
pub(crate) fn status_pb(membership: &Membership) -> pb::MembershipStatus {
    let view = membership.view();
    let evaluation = membership.evaluate();
    let ids = |nodes: &[amulet_types::NodeId]| nodes.iter().map(|n| n.0).collect::<Vec<u32>>();
    let members = view
        .nodes()
        .iter()
        .map(|(node, member)| {
            let reports = membership.reports(*node);
            pb::MemberStatus {
                node: node.0,
                address: member.address.clone(),
                state: state_name(member.state).to_string(),
                observers: ids(&view.observers_of(*node)),
                change_reports: reports.change.iter().map(|n| n.0).collect(),
                stay_reports: reports.stay.iter().map(|n| n.0).collect(),
            }
        })
        .collect();
    pb::MembershipStatus {
        view: view.id().0,
        members,
        removed: view.removed().iter().map(|n| n.0).collect(),
        history: membership
            .history()
            .iter()
            .map(|change| pb::ViewChangeStatus {
                view: change.view.0,
                joined: ids(&change.joined),
                removed: ids(&change.removed),
            })
            .collect(),
        unstable: ids(&evaluation.unstable),
        stable: ids(&evaluation.stable),
    }
}

/// A member state's name in `Status`.
pub(crate) fn state_name(state: MemberState) -> &'static str {
    match state {
        MemberState::Joining => "joining",
        MemberState::Active => "active",
        MemberState::Leaving => "leaving",
    }
}

impl crate::client_api::Service {
    /// `ChangeMembership`: a member's leave, ordered on the global stream
    /// like any configuration change; the replicas judge it (cluster
    /// admin, an active member, not the last) and the host at the edge
    /// (not a global acceptor, its partitions can move).
    pub(crate) async fn change_membership_rpc(
        &self,
        request: tonic::Request<pb::ChangeMembershipRequest>,
    ) -> Result<tonic::Response<pb::ChangeMembershipResponse>, tonic::Status> {
        let started = tokio::time::Instant::now();
        let principal = crate::api_connection::principal_of(&request);
        let result = async {
            let command = match request.into_inner().change {
                Some(pb::change_membership_request::Change::Leave(node)) if node > 0 => {
                    amulet_membership::Command::Leave {
                        node: amulet_types::NodeId(node),
                    }
                }
                Some(pb::change_membership_request::Change::Leave(_)) => {
                    return Err(tonic::Status::invalid_argument(
                        "leave: node ids start at 1",
                    ))
                }
                None => {
                    return Err(tonic::Status::invalid_argument(
                        "no membership change given (leave)",
                    ))
                }
            };
            tracing::info!(?command, "membership change requested");
            let request = amulet_smr::ClientRequest {
                map_version: amulet_types::MapVersion(0),
                session: None,
                body: amulet_smr::Body::Membership(command),
                principal,
            };
            self.submit(None, request).await?;
            Ok(tonic::Response::new(pb::ChangeMembershipResponse {}))
        }
        .await;
        self.record("change_membership", started, &result);
        result
    }
}
