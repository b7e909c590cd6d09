//! The nemesis: schedules partitions, crashes and restarts over virtual
//! time during the safety phase, within crash budgets, then heals.
//!
//! The nemesis decides *what* happens and *when*; the cluster driver applies
//! each [`FaultEvent`] (it crashes the process, drops its in-flight
//! messages, crashes its simulated disk, blocks links). Budgets keep the
//! run meaningful: a stream with a majority of its acceptors down, or with
//! a majority that lost its votes, cannot be expected to make progress, so
//! the nemesis never goes there.

use crate::rng::Rng;
use crate::swarm::{FaultOptions, PartitionKind};
use amulet_types::{NodeId, StorageMode, TimeMicros};
use std::collections::{BTreeMap, BTreeSet};

/// One fault for the driver to apply, in the order emitted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FaultEvent {
    /// Block these directed links (`from`, `to`) until `PartitionEnd`.
    PartitionStart {
        /// Which kind of cut this is.
        kind: PartitionKind,
        /// The links to block.
        blocked: Vec<(NodeId, NodeId)>,
    },
    /// Unblock every link.
    PartitionEnd,
    /// Kill the process; the OS keeps what it wrote (even un-fsynced).
    CrashProcess {
        /// The node.
        node: NodeId,
        /// Whether it was chosen because it coordinated a stream.
        coordinator: bool,
    },
    /// Start a crashed process again, as a new incarnation.
    RestartProcess {
        /// The node.
        node: NodeId,
    },
    /// Power off the machine: writes not yet fsynced are lost.
    CrashMachine {
        /// The node.
        node: NodeId,
    },
    /// Power the machine on and start its process as a new incarnation.
    RestartMachine {
        /// The node.
        node: NodeId,
    },
    /// The safety phase is over: heal the network. Every node down has
    /// just been restarted by the events before this one; no fault follows.
    Heal,
}

/// Nodes whose simultaneous failures are bounded together, typically the
/// acceptors of one stream.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CrashGroup {
    /// The members.
    pub members: Vec<NodeId>,
    /// Most members down at once.
    pub down_max: usize,
    /// Most members that may ever lose their state (memory-mode acceptors
    /// after any crash, async-durable ones after a machine crash): they
    /// never vote again, so liveness needs a majority that never lost it.
    pub state_loss_max: usize,
}

impl CrashGroup {
    /// A group where at most a minority may be down at once and at most a
    /// minority may ever lose state.
    pub fn minority(members: Vec<NodeId>) -> CrashGroup {
        let minority = members.len().saturating_sub(1) / 2;
        CrashGroup {
            members,
            down_max: minority,
            state_loss_max: minority,
        }
    }
}

/// What the nemesis may touch and how much.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NemesisConfig {
    /// Every node that may crash or be partitioned.
    pub nodes: Vec<NodeId>,
    /// How each node stores its votes; a node absent here has no state
    /// that matters for budgets (a learner only).
    pub storage: BTreeMap<NodeId, StorageMode>,
    /// Budgets per group.
    pub groups: Vec<CrashGroup>,
    /// Most nodes down at once, over all nodes.
    pub down_max: usize,
}

/// Counts of what the nemesis did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NemesisStats {
    /// Partitions started.
    pub partitions: u64,
    /// Random process crashes.
    pub process_crashes: u64,
    /// Machine crashes.
    pub machine_crashes: u64,
    /// Process crashes aimed at a coordinator.
    pub coordinator_crashes: u64,
    /// Crashes skipped because no node fit the budgets.
    pub skipped_over_budget: u64,
    /// Nodes killed for good (never restarted).
    pub killed_for_good: u64,
}

/// Which kind of crash a down node suffered, to restart it the same way.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum CrashKind {
    Process,
    Machine,
}

/// The fault scheduler of one seed. See the module documentation.
#[derive(Clone, Debug)]
pub struct Nemesis {
    config: NemesisConfig,
    faults: FaultOptions,
    rng: Rng,
    safety_end: TimeMicros,
    healed: bool,
    next_partition: Option<TimeMicros>,
    partition_end: Option<TimeMicros>,
    next_process_crash: Option<TimeMicros>,
    next_machine_crash: Option<TimeMicros>,
    next_coordinator_crash: Option<TimeMicros>,
    down: BTreeMap<NodeId, (TimeMicros, CrashKind)>,
    /// When a node is killed for good, if this seed kills one
    /// ([`Nemesis::kill_for_good_at`]).
    next_kill_for_good: Option<TimeMicros>,
    /// Nodes killed for good: down, and without their state, to the end
    /// of the run (the heal restarts every other node).
    dead: BTreeSet<NodeId>,
    /// Nodes that stopped by themselves, removed from the view with
    /// nothing left to do (`Host::left_cluster`): down to the end of the
    /// run in the budgets of the groups they were in, never crashed or
    /// restarted by the nemesis.
    left: BTreeSet<NodeId>,
    lost_state: BTreeSet<NodeId>,
    /// Per group of `config.groups` (same index), the members that lost
    /// their state since the group was budgeted. A stream's acceptor log
    /// is made when the stream is opened, so a node that lost state before
    /// a stream created at run time is intact in it, and loses it again at
    /// its next crash: counting the node once for every group (as
    /// `lost_state` does) let two members of a balancer-made stream lose
    /// it (simulator seed 7002295 of `--dmap`).
    group_lost: Vec<BTreeSet<NodeId>>,
    stats: NemesisStats,
}

impl Nemesis {
    /// A nemesis for a safety phase from time 0 to `safety_end`.
    pub fn new(
        config: NemesisConfig,
        faults: FaultOptions,
        safety_end: TimeMicros,
        mut rng: Rng,
    ) -> Nemesis {
        let mut first = |mean: Option<u64>| mean.map(|m| TimeMicros(rng.exponential(m)));
        let next_partition = first(faults.partition_interval_micros_mean);
        let next_process_crash = first(faults.process_crash_interval_micros_mean);
        let next_machine_crash = first(faults.machine_crash_interval_micros_mean);
        let next_coordinator_crash = first(faults.coordinator_crash_interval_micros_mean);
        let group_lost = vec![BTreeSet::new(); config.groups.len()];
        Nemesis {
            config,
            group_lost,
            faults,
            rng,
            safety_end,
            healed: false,
            next_partition,
            partition_end: None,
            next_process_crash,
            next_machine_crash,
            next_coordinator_crash,
            down: BTreeMap::new(),
            next_kill_for_good: None,
            dead: BTreeSet::new(),
            left: BTreeSet::new(),
            lost_state: BTreeSet::new(),
            stats: NemesisStats::default(),
        }
    }

    /// When the nemesis next has something to do; `None` once healed.
    pub fn next_event_time(&self) -> Option<TimeMicros> {
        if self.healed {
            return None;
        }
        let restarts = self.down.values().map(|(at, _)| *at);
        [
            self.partition_end,
            self.next_partition,
            self.next_process_crash,
            self.next_machine_crash,
            self.next_coordinator_crash,
            self.next_kill_for_good,
            Some(self.safety_end),
        ]
        .into_iter()
        .flatten()
        .chain(restarts)
        .min()
    }

    /// Fires every fault due at or before `now`, in time order. Ties go
    /// restarts, partition end, heal, partition start, crashes.
    /// `coordinators` names the nodes currently coordinating a stream; it
    /// is asked only when a coordinator crash fires.
    pub fn poll<F>(&mut self, now: TimeMicros, mut coordinators: F) -> Vec<FaultEvent>
    where
        F: FnMut() -> Vec<NodeId>,
    {
        let mut events = Vec::new();
        while let Some(at) = self.next_event_time().filter(|at| *at <= now) {
            self.fire(at, &mut coordinators, &mut events);
        }
        events
    }

    /// Nodes down now.
    pub fn down(&self) -> impl Iterator<Item = NodeId> + '_ {
        self.down.keys().copied()
    }

    /// Budgets `group` too from now on: a stream created at run time (a
    /// partition moved to other nodes) whose acceptors span the groups
    /// the run started with. A member killed for good counts as down and
    /// as lost in it from the start.
    pub fn add_group(&mut self, group: CrashGroup) {
        if !self.config.groups.contains(&group) {
            let lost = group
                .members
                .iter()
                .copied()
                .filter(|m| self.dead.contains(m))
                .collect();
            self.config.groups.push(group);
            self.group_lost.push(lost);
        }
    }

    /// Kills one node for good at `at` (a process crash never followed by
    /// a restart, also not at the heal), if one fits the budgets then:
    /// the membership must remove it and self-healing re-home what it
    /// held (issue 22, SCONEKV §2). Before the heal only.
    pub fn kill_for_good_at(&mut self, at: TimeMicros) {
        if at < self.safety_end {
            self.next_kill_for_good = Some(at);
        }
    }

    /// Whether this run kills a node for good (one is dead, or a kill is
    /// due).
    pub fn kills_for_good(&self) -> bool {
        self.next_kill_for_good.is_some() || !self.dead.is_empty()
    }

    /// `node` stopped by itself: the view removed it and it holds no
    /// replica and no vote in a stream still in use.
    pub fn stopped_by_itself(&mut self, node: NodeId) {
        self.left.insert(node);
    }

    /// Nodes that stopped by themselves.
    pub fn left(&self) -> &BTreeSet<NodeId> {
        &self.left
    }

    /// Nodes killed for good.
    pub fn dead(&self) -> &BTreeSet<NodeId> {
        &self.dead
    }

    /// Nodes that lost their state at some crash (by the budgets' count).
    pub fn lost_state(&self) -> &BTreeSet<NodeId> {
        &self.lost_state
    }

    /// Whether the heal has happened.
    pub fn is_healed(&self) -> bool {
        self.healed
    }

    /// What the nemesis did so far.
    pub fn stats(&self) -> NemesisStats {
        self.stats
    }

    fn fire<F>(&mut self, at: TimeMicros, coordinators: &mut F, events: &mut Vec<FaultEvent>)
    where
        F: FnMut() -> Vec<NodeId>,
    {
        let restart = self.down.iter().find(|(_, (time, _))| *time == at);
        if let Some((&node, &(_, kind))) = restart {
            self.down.remove(&node);
            events.push(restart_event(node, kind));
        } else if self.partition_end == Some(at) {
            self.partition_end = None;
            events.push(FaultEvent::PartitionEnd);
        } else if self.safety_end == at {
            self.heal(events);
        } else if self.next_partition == Some(at) {
            self.next_partition = self.after(at, self.faults.partition_interval_micros_mean);
            self.start_partition(at, events);
        } else if self.next_process_crash == Some(at) {
            self.next_process_crash =
                self.after(at, self.faults.process_crash_interval_micros_mean);
            let candidates = self.config.nodes.clone();
            self.crash_one(at, &candidates, CrashKind::Process, false, events);
        } else if self.next_machine_crash == Some(at) {
            self.next_machine_crash =
                self.after(at, self.faults.machine_crash_interval_micros_mean);
            let candidates = self.config.nodes.clone();
            self.crash_one(at, &candidates, CrashKind::Machine, false, events);
        } else if self.next_kill_for_good == Some(at) {
            self.next_kill_for_good = None;
            self.kill_one_for_good(events);
        } else if self.next_coordinator_crash == Some(at) {
            let mean = self.faults.coordinator_crash_interval_micros_mean;
            self.next_coordinator_crash = self.after(at, mean);
            let mut candidates = coordinators();
            candidates.sort_unstable();
            candidates.dedup();
            self.crash_one(at, &candidates, CrashKind::Process, true, events);
        } else {
            unreachable!("next_event_time returned {at:?}, which no timer holds");
        }
    }

    fn after(&mut self, at: TimeMicros, mean: Option<u64>) -> Option<TimeMicros> {
        mean.map(|m| at.plus(self.rng.exponential(m)))
    }

    fn heal(&mut self, events: &mut Vec<FaultEvent>) {
        if self.partition_end.take().is_some() {
            events.push(FaultEvent::PartitionEnd);
        }
        for (node, (_, kind)) in std::mem::take(&mut self.down) {
            events.push(restart_event(node, kind));
        }
        events.push(FaultEvent::Heal);
        self.healed = true;
        self.next_partition = None;
        self.next_process_crash = None;
        self.next_machine_crash = None;
        self.next_coordinator_crash = None;
        self.next_kill_for_good = None;
    }

    fn start_partition(&mut self, at: TimeMicros, events: &mut Vec<FaultEvent>) {
        if self.partition_end.is_some() || self.config.nodes.len() < 2 {
            return; // One partition at a time.
        }
        let kind = *self
            .rng
            .pick(&self.faults.partition_kinds)
            .expect("swarm options never draw an empty kind list");
        let blocked = self.draw_links(kind);
        let length = self.rng.range(
            self.faults.partition_micros_min,
            self.faults.partition_micros_max,
        );
        self.partition_end = Some(at.plus(length.max(1)));
        self.stats.partitions += 1;
        events.push(FaultEvent::PartitionStart { kind, blocked });
    }

    /// The directed links a partition of `kind` blocks.
    fn draw_links(&mut self, kind: PartitionKind) -> Vec<(NodeId, NodeId)> {
        let mut nodes = self.config.nodes.clone();
        self.rng.shuffle(&mut nodes);
        if kind == PartitionKind::Bridge {
            let (a, b) = (nodes[0], nodes[1]);
            let mut links = vec![(a, b), (b, a)];
            links.sort_unstable();
            return links;
        }
        let split = match kind {
            PartitionKind::Symmetric | PartitionKind::OneWay => {
                self.rng.range(1, nodes.len() as u64 - 1) as usize
            }
            PartitionKind::IsolateOne => 1,
            PartitionKind::MajorityMinority => ((nodes.len() - 1) / 2).max(1),
            PartitionKind::Bridge => unreachable!("drawn above"),
        };
        let (side_a, side_b) = nodes.split_at(split);
        let mut links = Vec::new();
        for &a in side_a {
            for &b in side_b {
                links.push((a, b));
                if kind != PartitionKind::OneWay {
                    links.push((b, a));
                }
            }
        }
        links.sort_unstable();
        links
    }

    fn crash_one(
        &mut self,
        at: TimeMicros,
        candidates: &[NodeId],
        kind: CrashKind,
        coordinator: bool,
        events: &mut Vec<FaultEvent>,
    ) {
        let eligible: Vec<NodeId> = candidates
            .iter()
            .copied()
            .filter(|node| self.fits_budget(*node, kind))
            .collect();
        let Some(&node) = self.rng.pick(&eligible) else {
            self.stats.skipped_over_budget += 1;
            return;
        };
        if self.loses_state(node, kind) {
            self.lost_state.insert(node);
            for (group, lost) in self.config.groups.iter().zip(&mut self.group_lost) {
                if group.members.contains(&node) {
                    lost.insert(node);
                }
            }
        }
        let delay = self.rng.range(
            self.faults.restart_delay_micros_min,
            self.faults.restart_delay_micros_max,
        );
        self.down.insert(node, (at.plus(delay.max(1)), kind));
        events.push(match (kind, coordinator) {
            (CrashKind::Machine, _) => {
                self.stats.machine_crashes += 1;
                FaultEvent::CrashMachine { node }
            }
            (CrashKind::Process, true) => {
                self.stats.coordinator_crashes += 1;
                FaultEvent::CrashProcess { node, coordinator }
            }
            (CrashKind::Process, false) => {
                self.stats.process_crashes += 1;
                FaultEvent::CrashProcess { node, coordinator }
            }
        });
    }

    /// A node that fits the budgets as a state loss in every group it
    /// belongs to (it never votes again) crashes and stays down.
    fn kill_one_for_good(&mut self, events: &mut Vec<FaultEvent>) {
        let eligible: Vec<NodeId> = self
            .config
            .nodes
            .iter()
            .copied()
            .filter(|node| !self.dead.contains(node) && self.fits(*node, true))
            .collect();
        let Some(&node) = self.rng.pick(&eligible) else {
            self.stats.skipped_over_budget += 1;
            return;
        };
        self.lost_state.insert(node);
        for (group, lost) in self.config.groups.iter().zip(&mut self.group_lost) {
            if group.members.contains(&node) {
                lost.insert(node);
            }
        }
        self.dead.insert(node);
        self.stats.killed_for_good += 1;
        events.push(FaultEvent::CrashProcess {
            node,
            coordinator: false,
        });
    }

    fn loses_state(&self, node: NodeId, kind: CrashKind) -> bool {
        matches!(
            (self.config.storage.get(&node), kind),
            (Some(StorageMode::Memory), _) | (Some(StorageMode::AsyncDurable), CrashKind::Machine)
        )
    }

    /// Whether crashing `node` this way keeps every budget.
    fn fits_budget(&self, node: NodeId, kind: CrashKind) -> bool {
        self.fits(node, self.loses_state(node, kind))
    }

    /// Whether `node` may go down now, losing its state if `loses`: a
    /// node killed for good counts as down in every budget.
    fn fits(&self, node: NodeId, loses: bool) -> bool {
        let is_down = |n: &NodeId| {
            self.down.contains_key(n) || self.dead.contains(n) || self.left.contains(n)
        };
        // Nodes that left are no members: the bound over all nodes counts
        // members down.
        if is_down(&node) || self.down.len() + self.dead.len() >= self.config.down_max {
            return false;
        }
        self.config
            .groups
            .iter()
            .zip(&self.group_lost)
            .filter(|(group, _)| group.members.contains(&node))
            .all(|(group, lost)| {
                let down = group.members.iter().filter(|m| is_down(m));
                let new_loss = loses && !lost.contains(&node);
                down.count() < group.down_max && (!new_loss || lost.len() < group.state_loss_max)
            })
    }
}

fn restart_event(node: NodeId, kind: CrashKind) -> FaultEvent {
    match kind {
        CrashKind::Process => FaultEvent::RestartProcess { node },
        CrashKind::Machine => FaultEvent::RestartMachine { node },
    }
}

/// The next instant anything happens in a simulated run: a message is due,
/// the nemesis acts, or the periodic tick at `next_tick`.
pub fn next_instant<M: Clone>(
    network: &crate::network::Network<M>,
    nemesis: &Nemesis,
    next_tick: TimeMicros,
) -> TimeMicros {
    [
        network.next_event_time(),
        nemesis.next_event_time(),
        Some(next_tick),
    ]
    .into_iter()
    .flatten()
    .min()
    .expect("the tick is always scheduled")
}

#[cfg(test)]
#[path = "nemesis_tests.rs"]
mod tests;
