//! `amulet balancer pause|resume|status` (docs/dynatree.md, "Pause and
//! decisions"): the operator's switch for the balancer of every node, and
//! what each node's balancer decided lately. `amulet status` prints the
//! same lines under each node.

use amulet_api::pb;
use amulet_client::Client;

/// What to do with the balancers.
#[derive(clap::Subcommand, Debug, Clone)]
pub enum BalancerOp {
    /// Stop every node's balancer from proposing splits, merges and moves
    /// (one already proposed still takes effect). Kept across restarts.
    Pause,
    /// Let every node's balancer propose again.
    Resume,
    /// Whether each node's balancer runs, and its last decisions.
    Status,
}

/// Runs `op` against every node the map names. Fails if any node could
/// not be switched (the others keep the new setting).
pub async fn run(client: &Client, op: &BalancerOp) -> anyhow::Result<()> {
    let answers = match op {
        BalancerOp::Pause => client.set_balancer_everywhere(false).await,
        BalancerOp::Resume => client.set_balancer_everywhere(true).await,
        BalancerOp::Status => {
            let mut answers = Vec::new();
            for (node, address) in client.node_addresses() {
                let status = client.status(&address).await;
                answers.push((node, status.map(|s| s.balancer.unwrap_or_default())));
            }
            answers
        }
    };
    let mut failed = Vec::new();
    for (node, answer) in &answers {
        match answer {
            Ok(status) => print_balancer(node.0, status),
            Err(e) => {
                println!("node {}: {e}", node.0);
                failed.push(node.0);
            }
        }
    }
    if !failed.is_empty() {
        anyhow::bail!(
            "nodes {failed:?} did not answer; run `amulet balancer {}` again once they are up",
            match op {
                BalancerOp::Pause => "pause",
                BalancerOp::Resume => "resume",
                BalancerOp::Status => "status",
            }
        );
    }
    Ok(())
}

/// One node's balancer: a line, and one line per recent decision.
pub fn print_balancer(node: u32, status: &pb::BalancerStatus) {
    println!("{}", summary(node, status));
    for d in &status.recent {
        println!("  {}", decision(d));
    }
}

fn summary(node: u32, s: &pb::BalancerStatus) -> String {
    format!(
        "node {node} balancer {}: proposed {} splits ({} by load, {} at the tail), {} merges, {} moves",
        if s.enabled { "running" } else { "PAUSED" },
        s.splits_proposed,
        s.load_splits_proposed,
        s.tail_splits_proposed,
        s.merges_proposed,
        s.moves_proposed
    )
}

fn decision(d: &pb::BalancerDecision) -> String {
    format!(
        "{:.1} s ago, on map v{}: {} of p{}: {}",
        d.age_ms as f64 / 1000.0,
        d.map_version,
        d.kind,
        d.partition,
        d.change
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dynatree_oracle_decisions_print_in_one_line_each() {
        let status = pb::BalancerStatus {
            enabled: false,
            splits_proposed: 3,
            load_splits_proposed: 1,
            tail_splits_proposed: 1,
            merges_proposed: 0,
            moves_proposed: 2,
            recent: vec![pb::BalancerDecision {
                age_ms: 1500,
                map_version: 7,
                kind: "tail split".into(),
                partition: 4,
                change: "p4 -> p9, m at \"k0900\"".into(),
            }],
        };
        assert_eq!(
            summary(2, &status),
            "node 2 balancer PAUSED: proposed 3 splits (1 by load, 1 at the tail), 0 merges, 2 moves"
        );
        assert_eq!(
            decision(&status.recent[0]),
            "1.5 s ago, on map v7: tail split of p4: p4 -> p9, m at \"k0900\""
        );
    }
}
