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
