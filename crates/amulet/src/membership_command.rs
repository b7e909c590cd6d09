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
        if !member.client_address.is_empty() {
            line.push_str(&format!("; clients at {}", member.client_address));
        }
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

/// Self-healing's progress once the view has removed a node or one is
/// leaving: a bar of the partitions whose replicas are all on live members
/// and hold their state, and the ones still waiting (a replica on a gone
/// node, or one `held` shows a live node has not installed yet: its state
/// transfer is running). `held` lists the partitions each node that
/// answered runs. `None` when nothing waits, or nothing was removed.
pub fn rehoming(
    map: &amulet_smr::PartitionMap,
    view: &pb::MembershipStatus,
    held: &std::collections::BTreeMap<u32, Vec<u32>>,
) -> Option<String> {
    let gone: Vec<u32> = view
        .removed
        .iter()
        .copied()
        .chain(
            view.members
                .iter()
                .filter(|m| m.state == "leaving")
                .map(|m| m.node),
        )
        .collect();
    let waiting: Vec<String> = map
        .partitions
        .iter()
        .filter(|(id, p)| {
            p.replicas.iter().any(|n| {
                gone.contains(&n.0) || held.get(&n.0).is_some_and(|parts| !parts.contains(&id.0))
            })
        })
        .map(|(id, p)| {
            let on: Vec<String> = p.replicas.iter().map(|n| n.0.to_string()).collect();
            format!("p{} [{}]", id.0, on.join(", "))
        })
        .collect();
    if waiting.is_empty() || gone.is_empty() {
        return None;
    }
    let total = map.partitions.len();
    let done = total - waiting.len();
    const WIDTH: usize = 20;
    let filled = WIDTH * done / total.max(1);
    Some(format!(
        "re-homing: [{}{}] {done}/{total} partitions on live nodes; waiting: {}",
        "#".repeat(filled),
        "-".repeat(WIDTH - filled),
        waiting.join(" ")
    ))
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

#[cfg(test)]
mod tests {
    use super::*;
    use amulet_smr::{PartitionInfo, PartitionMap};
    use amulet_types::{NodeId, PartitionId, StreamId};

    #[test]
    fn sconekv_2_status_shows_a_bar_only_while_a_partition_waits_on_a_gone_node() {
        let info = |p: u32, replicas: [u32; 3]| {
            (
                PartitionId(p),
                PartitionInfo {
                    stream: StreamId(p + 1),
                    replicas: replicas.into_iter().map(NodeId).collect(),
                },
            )
        };
        let map = PartitionMap::uniform(
            StreamId(1),
            vec![
                info(1, [1, 2, 3]),
                info(2, [4, 5, 1]),
                info(3, [2, 3, 4]),
                info(4, [1, 2, 4]),
            ],
        );
        let mut view = pb::MembershipStatus {
            view: 2,
            removed: vec![5],
            ..Default::default()
        };
        let mut held = std::collections::BTreeMap::new();
        let line = rehoming(&map, &view, &held).expect("p2 waits on node 5");
        assert_eq!(
            line,
            "re-homing: [###############-----] 3/4 partitions on live nodes; waiting: p2 [4, 5, 1]"
        );
        view.members.push(pb::MemberStatus {
            node: 3,
            state: "leaving".into(),
            ..Default::default()
        });
        let line = rehoming(&map, &view, &held).expect("and p1, p3 on leaving node 3");
        assert!(
            line.starts_with("re-homing: [#####---------------] 1/4"),
            "{line}"
        );
        view.members.clear();
        // Node 2 answered without p4: its replica is still fetching.
        held.insert(2, vec![1, 3]);
        let line = rehoming(&map, &view, &held).expect("p4's state is on its way to node 2");
        assert!(
            line.contains("2/4") && line.contains("p4 [1, 2, 4]"),
            "{line}"
        );
        held.insert(2, vec![1, 3, 4]);
        assert!(rehoming(&map, &view, &held).is_some_and(|l| l.contains("3/4")));
        // Nothing removed: a replica catching up is not re-homing.
        view.removed.clear();
        held.insert(2, vec![]);
        assert_eq!(rehoming(&map, &view, &held), None);
    }
}
