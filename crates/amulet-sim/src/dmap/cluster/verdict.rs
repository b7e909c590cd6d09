//! How a DMap seed is judged: progress after healing, strict
//! serializability of the transactions, linearizability of the map and
//! log operations.

use super::{newest_map, newest_membership, DmapCluster, CHECK_STEP_BUDGET};
use crate::checker::linearizability::{self, Call, Verdict};
use crate::dmap::client::Phase;
use crate::dmap::{MapOp, Observed, SortedMapModel};
use crate::harness::{Harness, NodeSlot};
use crate::runner::{SeedOutcome, SeedStats};
use crate::violation::{Property, Violation};
use amulet_smr::group_of;

impl DmapCluster {
    pub(super) fn outcome(mut self, harness: &Harness) -> SeedOutcome {
        self.check_progress(harness);
        self.check_removals(harness);
        self.check_no_false_removal(harness);
        self.check_healing(harness);
        if !self.txn_clients.is_empty() {
            self.check_transactions();
        }
        self.check_tails(harness);
        if std::env::var_os("AMULET_SIM_DUMP_CALLS").is_some() {
            let mut sorted: Vec<&Call<MapOp, Observed>> = self.calls.iter().collect();
            sorted.sort_by_key(|c| c.invoke);
            for call in sorted {
                println!("call {call:?}");
            }
        }
        let initial = SortedMapModel::with_logs(&self.logs);
        let verdict = linearizability::check(initial, &self.calls, CHECK_STEP_BUDGET);
        match verdict {
            Verdict::Linearizable => {}
            Verdict::NotLinearizable { deepest, stuck_at } => {
                let mut sorted: Vec<&Call<MapOp, Observed>> = self.calls.iter().collect();
                sorted.sort_by_key(|c| c.invoke);
                let call = sorted.get(stuck_at);
                self.violations.push(Violation::new(
                    Property::Linearizability,
                    format!(
                        "no linearization of {} calls; the deepest order placed {deepest} completed calls, then could not place {call:?}",
                        self.calls.len()
                    ),
                ));
            }
            Verdict::Unknown => self.violations.push(Violation::new(
                Property::Linearizability,
                format!(
                    "checker gave up after {CHECK_STEP_BUDGET} steps on {} calls",
                    self.calls.len()
                ),
            )),
        }
        if self.verbose {
            self.print_end(harness);
            let repairs: u64 = harness
                .hosts()
                .map(|(_, h)| h.membership_counters().repairs_proposed)
                .sum();
            println!(
                "membership: greatest view {}, self-healing repairs proposed by the running hosts {repairs}",
                self.membership.greatest_view
            );
            for (node, host) in harness.hosts() {
                if let Some(membership) = host.membership() {
                    let view = membership.view();
                    let reports: Vec<_> = view
                        .members()
                        .into_iter()
                        .map(|m| (m, membership.reports(m)))
                        .collect();
                    println!(
                        "  {node} view {} members {:?} removed {:?} evaluation {:?} reports {reports:?}",
                        view.id().0,
                        view.members(),
                        view.removed(),
                        membership.evaluate(),
                    );
                }
            }
        }
        let counters: Vec<_> = harness
            .slots
            .values()
            .map(NodeSlot::total_counters)
            .collect();
        SeedOutcome {
            violations: self.violations,
            trace_hash: harness.trace.value(),
            stats: SeedStats {
                values_proposed: self.calls.len() as u64,
                deliveries: self.calls.iter().filter(|c| c.complete.is_some()).count() as u64,
                learner_incarnations: harness
                    .slots
                    .values()
                    .map(|s| u64::from(s.incarnation))
                    .sum(),
                checkpoint_restores: counters.iter().map(|c| c.restores).sum(),
                state_transfers: counters.iter().map(|c| c.transfers).sum(),
                state_transfer_chunks: counters.iter().map(|c| c.transfer_chunks).sum(),
                hand_offs: counters.iter().map(|c| c.hand_offs).sum(),
                balancer_splits: counters.iter().map(|c| c.splits_proposed).sum(),
                balancer_load_splits: counters.iter().map(|c| c.load_splits_proposed).sum(),
                balancer_tail_splits: counters.iter().map(|c| c.tail_splits_proposed).sum(),
                balancer_merges: counters.iter().map(|c| c.merges_proposed).sum(),
                balancer_moves: counters.iter().map(|c| c.moves_proposed).sum(),
                balancer_weight_moves: counters.iter().map(|c| c.weight_moves_proposed).sum(),
                spare_nodes: u64::from(self.spare.is_some()),
                spare_replicas: self
                    .spare
                    .and_then(|n| harness.host(n))
                    .map_or(0, |h| h.replicas().len() as u64),
                joiners: u64::from(self.joiner.is_some()),
                outsider_joiners: u64::from(self.outsider.is_some()),
                outsiders_in_global: u64::from(self.outsider.is_some_and(|node| {
                    newest_map(harness).is_some_and(|map| {
                        harness.hosts().any(|(_, h)| {
                            h.multicast_node()
                                .streams()
                                .get(&map.global_stream)
                                .is_some_and(|s| s.config().members().contains(&node))
                        })
                    })
                })),
                global_stream_replaced: u64::from(
                    newest_map(harness)
                        .is_some_and(|m| m.global_stream != self.initial_map.global_stream),
                ),
                killed_for_good: harness.nemesis.stats().killed_for_good,
                nodes_stopped: harness.nemesis.left().len() as u64,
                stores_lost: 0,
                pauses: harness.pauses_started(),
                flaky_nodes: u64::from(self.flaky.is_some()),
                joiners_admitted: u64::from(self.joiner.as_ref().is_some_and(|j| {
                    newest_membership(harness).is_some_and(|m| {
                        m.view().state(j.node) == Some(amulet_membership::MemberState::Active)
                    })
                })),
                trimmed_instances: harness
                    .hosts()
                    .flat_map(|(_, h)| h.multicast_node().streams().values())
                    .map(|s| s.trimmed_below().0)
                    .sum(),
                subscription_changes: counters.iter().map(|c| c.reconfigured).sum(),
                stale_key_refusals: self.clients.iter().map(|c| c.stale_refusals[0]).sum(),
                stale_other_refusals: self.clients.iter().map(|c| c.stale_refusals[1]).sum(),
                virtual_micros: harness.now.0,
                trace_events: harness.trace.events(),
                network: harness.network.stats(),
                nemesis: harness.nemesis.stats(),
            },
        }
    }

    /// Completeness (SCONEKV §2, Rapid): a node killed for good is
    /// removed from the view by the end of the run (it died before the
    /// heal, and the healed phase is longer than detection).
    fn check_removals(&mut self, harness: &Harness) {
        let Some(membership) = newest_membership(harness) else {
            return;
        };
        let view = membership.view();
        for dead in harness.nemesis.dead() {
            if !view.removed().contains(dead) {
                self.violations.push(Violation::new(
                    Property::Progress,
                    format!(
                        "node {dead} was killed for good, but the newest view {} still has it ({:?})",
                        view.id().0,
                        view.state(*dead)
                    ),
                ));
            }
        }
    }

    /// Accuracy (Rapid §4.1): in a seed without crashes or partitions,
    /// whose only faults are the network's delays and losses, pauses
    /// shorter than failure detection and kills for good, the views
    /// remove no node but those killed for good.
    fn check_no_false_removal(&mut self, harness: &Harness) {
        if !self.without_crashes_or_partitions {
            return;
        }
        let Some(membership) = newest_membership(harness) else {
            return;
        };
        let view = membership.view();
        for removed in view.removed() {
            if !harness.nemesis.dead().contains(removed) {
                self.violations.push(Violation::new(
                    Property::Integrity,
                    format!(
                        "view {} removed node {removed}, which no crash, partition or kill \
                         touched (pauses: {}, flaky: {:?})",
                        view.id().0,
                        harness.pauses_started(),
                        self.flaky
                    ),
                ));
            }
        }
    }

    /// Self-healing (docs/membership.md): by the end of the healed phase,
    /// no partition the hosts could re-home still has a replica, or an
    /// acceptor of its stream, on a node the view removed, and the global
    /// stream has no such acceptor where enough live members could
    /// replace it (seeds with checkpoints only: moves need them).
    fn check_healing(&mut self, harness: &Harness) {
        if self.checkpoints.every_micros == 0 {
            return;
        }
        let (Some(membership), Some(map)) = (newest_membership(harness), newest_map(harness))
        else {
            return;
        };
        let view = membership.view();
        let live: Vec<amulet_types::NodeId> = map
            .hosting_nodes()
            .into_iter()
            .chain(view.members())
            .filter(|n| {
                !view.removed().contains(n)
                    && view.state(*n) != Some(amulet_membership::MemberState::Leaving)
            })
            .collect();
        // A node the view removed never reports that it holds nothing;
        // the repairs' proposer reports for it, else the partition's
        // splits and merges wait for good.
        let stuck: Vec<_> = map
            .handing_off
            .iter()
            .filter(|(_, from)| from.iter().any(|n| view.removed().contains(n)))
            .collect();
        if !stuck.is_empty() {
            self.violations.push(Violation::new(
                Property::Progress,
                format!(
                    "after healing, map version {} still hands partitions off from nodes view {} removed: {stuck:?}",
                    map.version.0,
                    view.id().0,
                ),
            ));
        }
        // A partition stream's acceptors as the hosts that run it have
        // them (the initial streams are in the configurations, not the
        // map).
        let stream_of = |stream| {
            let acceptors = harness
                .hosts()
                .find_map(|(_, h)| {
                    h.multicast_node()
                        .streams()
                        .get(&stream)
                        .map(|s| s.config().acceptors.clone())
                })
                .or_else(|| map.streams.get(&stream).map(|s| s.acceptors.clone()))
                .unwrap_or_default();
            (amulet_types::StorageMode::Memory, acceptors)
        };
        // The global stream is replaced when one of its acceptors was
        // removed (thesis §4.2; issue 22).
        let global = harness.hosts().find_map(|(_, h)| {
            h.multicast_node()
                .streams()
                .get(&map.global_stream)
                .map(|s| (s.config().acceptors.clone(), s.config().members()))
        });
        if let Some((acceptors, members)) = global {
            let current = amulet_smr::GlobalStreamNow {
                storage: amulet_types::StorageMode::Memory,
                acceptors: &acceptors,
                members: &members,
            };
            // Active members of the view not running it (joiners) must
            // have been made learners of it too.
            let joined = view.active_members();
            let repair = amulet_smr::next_global_repair(&map, &live, [], current, &joined);
            if let Some(repair) = repair {
                self.violations.push(Violation::new(
                    Property::Progress,
                    format!(
                        "after healing, map version {}'s global stream {} still has acceptors view {} removed ({:?}), or active members not learning it; the next repair would be {repair:?}",
                        map.version.0,
                        map.global_stream.0,
                        view.id().0,
                        view.removed()
                    ),
                ));
            }
        }
        if let Some(repair) = amulet_smr::next_repair(&map, &live, [], stream_of) {
            self.violations.push(Violation::new(
                Property::Progress,
                format!(
                    "after healing, map version {} still has replicas or stream acceptors on nodes view {} removed ({:?}); the next repair would be {repair:?}",
                    map.version.0,
                    view.id().0,
                    view.removed()
                ),
            ));
        }
    }

    /// After healing every client completes operations, the last one each
    /// started has completed by the end, and no live replica is left
    /// behind a trim point.
    fn check_progress(&mut self, harness: &Harness) {
        for (node, host) in harness.hosts() {
            // A stream retired by a reconfiguration is merged by no group:
            // its learner may stay behind for good.
            let retired = host
                .current_map()
                .map(|m| m.retired_streams.clone())
                .unwrap_or_default();
            for (stream, s) in host.multicast_node().streams() {
                // Nor does a stream no replica here merges any more (the
                // node's replicas of it moved away).
                let merged = host.replicas().keys().any(|p| {
                    host.multicast_node()
                        .merger(group_of(*p))
                        .is_some_and(|m| m.feeds_on(*stream))
                });
                if retired.contains(stream) || !merged {
                    continue;
                }
                if let Some(below) = s.learner_trimmed() {
                    self.violations.push(Violation::new(
                        Property::Progress,
                        format!(
                            "node {node}: stream {stream:?} was trimmed below {below} past its learner; it cannot catch up"
                        ),
                    ));
                }
            }
        }
        for (c, client) in self.clients.iter().enumerate() {
            let idle = matches!(client.phase, Phase::Thinking { .. });
            if client.completed_after_heal == 0 || !idle {
                self.violations.push(Violation::new(
                    Property::Progress,
                    format!(
                        "client {c} completed {} operations after healing and ends in {:?}",
                        client.completed_after_heal, client.phase
                    ),
                ));
            }
        }
    }
}
