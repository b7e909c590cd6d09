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

/// `amulet leave --wait-secs`: polls every node's `Status` until the
/// newest view has removed `node` and the node holds no replica (or
/// stopped: it does once it holds none), printing one progress line per
/// change.
pub async fn wait_until_left(
    client: &amulet_client::Client,
    node: u32,
    wait_secs: u64,
) -> anyhow::Result<()> {
    #[allow(clippy::disallowed_methods)] // a wall-clock bound on the wait, not protocol time
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(wait_secs);
    let addresses = client.node_addresses();
    let mut last = String::new();
    loop {
        let mut removed_in = None;
        let mut held: Option<Vec<u32>> = None;
        for (id, address) in &addresses {
            let Ok(status) = client.status(address).await else {
                continue;
            };
            if let Some(view) = &status.membership {
                if view.removed.contains(&node) {
                    removed_in = removed_in.max(Some(view.view));
                }
            }
            if id.0 == node {
                held = Some(status.replicas.iter().map(|r| r.partition).collect());
            }
        }
        // A leaver that no longer answers has stopped: it stops only once
        // it holds nothing.
        let holding = held.clone().unwrap_or_default();
        let line = match (removed_in, held.is_some()) {
            (None, _) => format!("node {node}: leaving, not removed yet"),
            (Some(view), true) if !holding.is_empty() => format!(
                "node {node}: removed in view {view}; partitions still being handed off from it: {holding:?}"
            ),
            (Some(view), true) => {
                format!("node {node}: removed in view {view}; no replica left, stopping")
            }
            (Some(view), false) => {
                println!("node {node}: removed in view {view}, holds nothing and has stopped: it left");
                return Ok(());
            }
        };
        if line != last {
            println!("{line}");
            last = line;
        }
        if removed_in.is_some() && held.as_ref().is_some_and(Vec::is_empty) {
            println!("node {node} left");
            return Ok(());
        }
        #[allow(clippy::disallowed_methods)]
        let now = std::time::Instant::now();
        if now >= deadline {
            anyhow::bail!("node {node} had not left after {wait_secs} s (last: {last})");
        }
        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    }
}
