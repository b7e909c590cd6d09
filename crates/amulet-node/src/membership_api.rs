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
                client_address: member.client_address.clone(),
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
    /// `ChangeMembership`: a member's leave or a new node's join, ordered
    /// on the global stream like any configuration change; the replicas
    /// judge it (cluster admin; a leaver is an active member, not the
    /// last; a joiner's peer address is nobody's) and the host at the
    /// edge (a leaver's vote and partitions can move). A join's addresses
    /// are checked here: nothing is ordered for one nobody could reach.
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
                Some(pb::change_membership_request::Change::Join(join)) => {
                    amulet_membership::Command::Join {
                        address: reachable_address("peer_address", &join.peer_address)?,
                        client_address: reachable_address("client_address", &join.client_address)?,
                    }
                }
                None => {
                    return Err(tonic::Status::invalid_argument(
                        "no membership change given (leave or join)",
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
            let reply = self.submit_reply(None, request).await?;
            let node = match reply {
                amulet_smr::ClientReply::Joined(node) => node.0,
                other => {
                    amulet_api::client_reply_to_response(other)?;
                    0
                }
            };
            Ok(tonic::Response::new(pb::ChangeMembershipResponse { node }))
        }
        .await;
        self.record("change_membership", started, &result);
        result
    }
}

/// `address` as a view keeps it (`ip:port`, normalised), if a node there
/// could be reached: a socket address with a specified ip and a port.
/// INVALID_ARGUMENT naming `field` otherwise.
fn reachable_address(field: &str, address: &str) -> Result<String, tonic::Status> {
    let parsed: std::net::SocketAddr = address.parse().map_err(|_| {
        tonic::Status::invalid_argument(format!("join: {field} {address:?} is not ip:port"))
    })?;
    if parsed.ip().is_unspecified() || parsed.port() == 0 {
        return Err(tonic::Status::invalid_argument(format!(
            "join: {field} {address:?} names no reachable node (unspecified ip or port 0)"
        )));
    }
    Ok(parsed.to_string())
}

#[cfg(test)]
mod tests {
    use super::reachable_address;

    #[test]
    fn sconekv_2_a_joins_addresses_must_name_a_reachable_node() {
        assert_eq!(
            reachable_address("peer_address", "127.0.0.1:7400").unwrap(),
            "127.0.0.1:7400"
        );
        assert_eq!(
            reachable_address("peer_address", "[::1]:7400").unwrap(),
            "[::1]:7400"
        );
        for bad in [
            "",
            "node-4",
            "127.0.0.1",
            "0.0.0.0:7400",
            "[::]:7400",
            "127.0.0.1:0",
        ] {
            let refused = reachable_address("peer_address", bad).unwrap_err();
            assert_eq!(refused.code(), tonic::Code::InvalidArgument, "{bad:?}");
        }
    }
}
