//! Weight reports (docs/dynatree.md, "Moves by bytes and load"): only a
//! partition's replicas know its size and load, so every node sends its
//! replicas' to the node that proposes the cluster's own changes once a
//! balancer turn, and that node plans the moves by weight
//! (`amulet_smr::next_weight_move`) from the reports of the map version
//! it plans on. A report of an older map may weigh a partition split
//! since as the whole: it waits for the next.

use crate::command::Command;
use crate::host::Host;
use amulet_smr::{PartitionMap, PartitionWeight, ReplicaMessage, StateMachine};
use amulet_types::{NodeId, PartitionId, TimeMicros};
use std::collections::BTreeMap;

/// A report older than this is not planned on (its node may be down, or
/// its balancer paused).
const REPORT_FRESH_MICROS: u64 = 5_000_000;

/// One node's last report, as received.
#[derive(Clone, Debug)]
pub(crate) struct WeightReport {
    /// When it came.
    pub(crate) at: TimeMicros,
    /// The map version its replicas executed.
    pub(crate) map_version: u64,
    /// Its replicas' weights.
    pub(crate) partitions: Vec<PartitionWeight>,
}

impl<S: StateMachine> Host<S> {
    /// This node's replicas of `map`'s partitions: their bytes (of every
    /// map) and their commands per second over the last load window.
    fn own_weights(&self, map: &PartitionMap) -> Vec<PartitionWeight> {
        self.replicas
            .iter()
            .filter(|(p, r)| {
                r.map().version == map.version && !r.moved_away() && map.partitions.contains_key(p)
            })
            .map(|(p, r)| PartitionWeight {
                partition: *p,
                bytes: crate::balancer::bytes_of(map, r.state()),
                ops_per_second: self.measured_load(*p).map_or(0, |l| l.ops_per_second),
            })
            .collect()
    }

    /// Sends this node's report to the proposer of the cluster's changes
    /// (kept here when that is this node).
    pub(crate) fn report_weights(&mut self, map: &PartitionMap, now: TimeMicros) {
        let Some(proposer) = self.cluster_proposer(map) else {
            return;
        };
        let partitions = self.own_weights(map);
        let me = self.config.me;
        if proposer == me {
            let report = WeightReport {
                at: now,
                map_version: map.version.0,
                partitions,
            };
            self.balancing.reports.insert(me, report);
            return;
        }
        self.out.push(Command::SendReplica {
            to: proposer,
            message: Box::new(ReplicaMessage::Weights {
                from: me,
                map_version: map.version.0,
                partitions,
            }),
        });
    }

    /// A peer's report. Kept whoever sent it (only the proposer plans, and
    /// only on reports of its map's version); one per node, the last.
    pub(crate) fn on_weights(&mut self, now: TimeMicros, message: ReplicaMessage) {
        let ReplicaMessage::Weights {
            from,
            map_version,
            partitions,
        } = message
        else {
            return;
        };
        if from == self.config.me {
            return;
        }
        self.balancing.reports_received += 1;
        let report = WeightReport {
            at: now,
            map_version,
            partitions,
        };
        self.balancing.reports.insert(from, report);
    }

    /// The weights to plan on under `map`, from the fresh reports (stale
    /// ones dropped), of its partitions: those of its version (for moves
    /// by weight), and those of any version (for choosing which partition
    /// a move by count takes: right after a move by weight, the reports
    /// of the new map are not in yet, and the lightest partition by the
    /// older ones is still not the one that just moved).
    pub(crate) fn reported_weights(
        &mut self,
        map: &PartitionMap,
        now: TimeMicros,
    ) -> (BTreeMap<PartitionId, u64>, BTreeMap<PartitionId, u64>) {
        self.balancing
            .reports
            .retain(|_, r| now.since(r.at) < REPORT_FRESH_MICROS);
        let reports: &BTreeMap<NodeId, WeightReport> = &self.balancing.reports;
        let config = self.config.balancer;
        let weigh = |same_version: bool| {
            amulet_smr::weigh(
                reports
                    .values()
                    .filter(|r| !same_version || r.map_version == map.version.0)
                    .flat_map(|r| r.partitions.iter().copied())
                    .filter(|w| map.partitions.contains_key(&w.partition)),
                config.weigh_bytes_from,
                config.weigh_ops_per_second_from,
            )
        };
        (weigh(true), weigh(false))
    }
}
