//! A join under the DMap workload (issue 22; SCONEKV §2, Rapid's joins):
//! in half of the seeds with a spare node, the spare is not in the first
//! view. It learns the global stream from the start (its learners are
//! fixed for the stream's life: `amulet join` waits for the global
//! stream's replacement, docs/membership.md), and an operator orders
//! `Join { address }` through a live replica's edge at a random time. The
//! view gives the joiner the next id (the spare's own), its expected
//! observers probe it, and a cut admits it; the balancer and self-healing
//! then give it partitions as to any member replicating nothing. Every
//! checker of the swarm runs as before, and the membership agreement
//! checker sees the join's view change at the same global position on
//! every replica.

use super::*;

/// How long the operator waits for a join to show in a view before it
/// asks again (a request lost with a crashed replica, or refused while
/// the map changed).
const ASK_AGAIN_MICROS: u64 = 2_000_000;

/// The joiner's record.
pub(super) struct Joiner {
    /// The spare that joins.
    pub(super) node: NodeId,
    /// When the operator asks first, then again.
    next_ask: TimeMicros,
    /// Set once the newest view names it (joining, active, or refused).
    settled: bool,
    /// Picks the replica asked.
    rng: Rng,
}

impl Joiner {
    /// The joiner of `seed`, if its spare joins (half of the seeds with a
    /// spare; a separate generator, so the rest of the seed draws as
    /// before).
    pub(super) fn of_seed(seed: u64, spare: Option<NodeId>) -> Option<Joiner> {
        let mut rng = Rng::new(seed ^ 0x6A6F_696E);
        let node = spare.filter(|_| super::pinned::new_draws())?;
        rng.chance(0.5).then(|| Joiner {
            node,
            next_ask: TimeMicros(rng.range(500_000, 6_000_000)),
            settled: false,
            rng: rng.fork(),
        })
    }

    /// The joiner, if it does not run the global stream at the start, as a
    /// new machine would not: in half of the map workload's seeds with a
    /// joiner. Once admitted, self-healing replaces the global stream
    /// with it among the learners (docs/membership.md). A separate
    /// generator, so the rest of the seed draws as before.
    pub(super) fn outsider(joiner: Option<&Joiner>, seed: u64, kind: ClientKind) -> Option<NodeId> {
        joiner.map(|j| j.node).filter(|_| {
            kind == ClientKind::Map
                && super::pinned::global_draws()
                && Rng::new(seed ^ 0x6F75_7473).chance(0.5)
        })
    }

    /// The joiner's address in the views.
    pub(super) fn address(node: NodeId) -> String {
        format!("sim-node-{}", node.0)
    }
}

impl DmapCluster {
    /// The operator's turn for the joiner: a `Join` for its address, sent
    /// to a live replica, until the newest view names it.
    pub(super) fn ask_to_join(&mut self, harness: &mut Harness) {
        let now = harness.now;
        let Some(joiner) = self.joiner.as_mut() else {
            return;
        };
        if joiner.settled || now < joiner.next_ask {
            return;
        }
        if let Some(membership) = newest_membership(harness) {
            let view = membership.view();
            if view.state(joiner.node).is_some() || view.removed().contains(&joiner.node) {
                joiner.settled = true;
                if self.verbose {
                    println!(
                        "t={}us joiner {} is in view {}: {:?}",
                        now.0,
                        joiner.node,
                        view.id().0,
                        view.state(joiner.node)
                    );
                }
                return;
            }
        }
        joiner.next_ask = now.plus(ASK_AGAIN_MICROS);
        let Some(map) = newest_map(harness) else {
            return;
        };
        let live: Vec<(NodeId, PartitionId)> = map
            .partitions
            .iter()
            .flat_map(|(p, info)| info.replicas.iter().map(move |n| (*n, *p)))
            .filter(|(n, _)| harness.host(*n).is_some())
            .collect();
        let Some(&(to, partition)) = joiner.rng.pick(&live) else {
            return;
        };
        let address = Joiner::address(joiner.node);
        if self.verbose {
            println!("t={}us operator -> {to}: join {address}", now.0);
        }
        let request = ClientRequest {
            map_version: map.version,
            session: None,
            body: amulet_smr::Body::Membership(amulet_membership::Command::Join {
                client_address: format!("{address}-client"),
                address,
            }),
            principal: None,
        };
        harness.request(OPERATOR_ENDPOINT, to, 0, Some(partition), request);
    }
}
