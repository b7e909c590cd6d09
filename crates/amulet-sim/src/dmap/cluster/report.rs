//! What a verbose seed prints: the end of the run and every node's
//! replicas, merges and streams (also every `AMULET_SIM_DUMP_MS`).

use super::newest_map;
use super::DmapCluster;
use crate::harness::Harness;
use amulet_smr::group_of;

impl DmapCluster {
    pub(super) fn print_end(&self, harness: &Harness) {
        let completed = self.calls.iter().filter(|c| c.complete.is_some()).count();
        let versions: Vec<u64> = harness.hosts().map(|(_, h)| h.map_version()).collect();
        println!(
            "calls={} completed={completed} violations={} map versions at the end={versions:?}",
            self.calls.len(),
            self.violations.len()
        );
        if let Some(map) = newest_map(harness) {
            println!("newest map: {map:?}");
        }
        let (tailed, reconnects) = self.tailers.totals();
        if tailed > 0 || reconnects > 0 {
            println!("tails: entries delivered={tailed} reconnects={reconnects}");
        }
        if !self.txn_clients.is_empty() {
            let [ok, fail, info] = self.txn_history.ended;
            println!(
                "transactions={} committed={ok} failed={fail} unknown={info}",
                self.txn_history.started()
            );
        }
        Self::print_nodes(harness);
    }

    /// Every node's replicas (with their merge), and streams.
    pub(super) fn print_nodes(harness: &Harness) {
        for node in harness.slots.keys() {
            let Some(host) = harness.host(*node) else {
                println!("node {node}: down");
                continue;
            };
            for (partition, r) in host.replicas() {
                println!(
                    "node {node} {partition}: global_position={} queued={} waiting={} pending={:?} fenced={:?}",
                    r.global_position(),
                    r.queued(),
                    r.is_waiting(),
                    r.pending_reconfiguration(),
                    host.multicast_node().fenced(group_of(*partition)),
                );
                for (position, missing) in r.missing_signals() {
                    println!(
                        "    missing signal at {position} from {missing}: runners by its map {:?}, by the node's newest {:?}",
                        r.map().runners(missing),
                        host.current_map().map(|m| m.runners(missing)),
                    );
                }
                if let Some(merger) = host.multicast_node().merger(group_of(*partition)) {
                    let lanes: Vec<String> = merger
                        .fed_streams()
                        .map(|s| {
                            format!(
                                "{s:?}:{:?}@{:?}",
                                merger.lane_state(s),
                                merger.next_instance(s)
                            )
                        })
                        .collect();
                    println!(
                        "    merge: rounds={} waiting_on={:?} subscription={:?} lanes={lanes:?} behind={}",
                        merger.rounds(),
                        merger.waiting_on(),
                        merger.waiting(),
                        host.catching_up(*partition),
                    );
                }
            }
            for (stream, s) in host.multicast_node().streams() {
                println!(
                    "  {stream:?} trimmed_below={} learner_trimmed={:?} {}",
                    s.trimmed_below(),
                    s.learner_trimmed(),
                    s.debug_state()
                );
            }
        }
    }
}
