//! Weight reports (docs/dynatree.md, "Moves by bytes and load"): only a
//! partition's replicas know its size and load, so every node sends its
//! replicas' to the node that proposes the cluster's own changes once a
//! balancer turn, and that node plans the moves by weight
//! (`amulet_smr::next_weight_move`) from the reports of the map version
//! it plans on. A report of an older map may weigh a partition split
//! since as the whole: it waits for the next.

use crate::balancer::BALANCE_INTERVAL_MICROS;
use crate::command::Command;
use crate::host::Host;
use amulet_smr::{PartitionMap, PartitionWeight, ReplicaMessage, StateMachine};
use amulet_types::{NodeId, PartitionId, TimeMicros};
use std::collections::BTreeMap;

/// A report older than this is not planned on (its node may be down, or
/// its balancer paused).
const REPORT_FRESH_MICROS: u64 = 5_000_000;

/// The balancer moves a replica only between nodes that reported within
/// this long (a turn and a half: a live node reports once a turn). A node
/// down, paused or crash-looping sends none; giving it a partition could
/// leave the partition's new stream with a majority of acceptors that
/// never run it (simulator, DMap seed 9034457: p3 moved onto nodes 2 and
/// 4 while 2 had been down for 1.8 s and 4 was crash-looping; the view
/// then removed both, and the stream never decided again).
const REPORT_LIVE_MICROS: u64 = BALANCE_INTERVAL_MICROS * 3 / 2;

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

    /// Sends this node's report of its newest map to the proposer of the
    /// cluster's changes (kept here when that is this node), once a
    /// balancer turn ([`BALANCE_INTERVAL_MICROS`]). A node that cannot yet
    /// (it knows no map, or no view: a joiner or a restarted node before
    /// its peers' probes reach it) tries again at its next tick, not a
    /// turn later: its report is what makes it a taker.
    pub(crate) fn report_weights(&mut self, now: TimeMicros) {
        if self
            .balancing
            .reported_at
            .is_some_and(|at| now.since(at) < BALANCE_INTERVAL_MICROS)
        {
            return;
        }
        let Some(map) = self.current_map() else {
            return;
        };
        let Some(proposer) = self.cluster_proposer(map) else {
            return;
        };
        let partitions = self.own_weights(map);
        let map_version = map.version.0;
        let me = self.config.me;
        self.balancing.reported_at = Some(now);
        if proposer == me {
            let report = WeightReport {
                at: now,
                map_version,
                partitions,
            };
            self.balancing.reports.insert(me, report);
            return;
        }
        self.out.push(Command::SendReplica {
            to: proposer,
            message: Box::new(ReplicaMessage::Weights {
                from: me,
                map_version,
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

    /// The nodes whose last report came within [`REPORT_LIVE_MICROS`] of
    /// `now`: those the balancer may move a replica from or to (this
    /// node's own report is kept when it reports).
    pub(crate) fn reporting_lately(&self, now: TimeMicros) -> Vec<NodeId> {
        self.balancing
            .reports
            .iter()
            .filter(|(_, r)| now.since(r.at) < REPORT_LIVE_MICROS)
            .map(|(n, _)| *n)
            .collect()
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
