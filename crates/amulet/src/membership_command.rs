//! `amulet status`'s view of the cluster's membership (docs/membership.md):
//! the newest view any node answered with, each member's observers and
//! their reports, the subjects in flux and the last view changes.

use amulet_api::pb;

/// Prints `view` under the per-node lines of `amulet status`.
pub fn print_view(view: &pb::MembershipStatus) {
    let list = |ids: &[u32]| {
        let names: Vec<String> = ids.iter().map(u32::to_string).collect();
        format!("[{}]", names.join(", "))
    };
    println!(
        "view {}: {} members; removed {}; unstable {}; stable {}",
        view.view,
        view.members.len(),
        list(&view.removed),
        list(&view.unstable),
        list(&view.stable)
    );
    for member in &view.members {
        let mut line = format!(
            "  node {} {} {}: observers {}",
            member.node,
            member.address,
            member.state,
            list(&member.observers)
        );
        if !member.change_reports.is_empty() {
            line.push_str(&format!(
                "; reported unreachable by {}",
                list(&member.change_reports)
            ));
        }
        if !member.stay_reports.is_empty() {
            line.push_str(&format!("; kept by {}", list(&member.stay_reports)));
        }
        println!("{line}");
    }
    for change in view.history.iter().rev().take(5).rev() {
        println!(
            "  view change to {}: joined {}, removed {}",
            change.view,
            list(&change.joined),
            list(&change.removed)
        );
    }
}
