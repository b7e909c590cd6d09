//! Consistent membership under the fault swarm (`amulet-sim --membership`):
//! every node runs the real [`Monitor`] and applies the global order of
//! membership commands to its own [`Membership`], while nodes crash for
//! good, crash and restart within 3.5 s, pause, lose packets on their
//! links, lose one link for good, sit behind a bridge partition, join and
//! leave.
//!
//! The global stream is modelled as one sequencer (the ordering layer is
//! simulated with its faults elsewhere): a proposal reaches it unless its
//! proposer is down, paused or isolated, and every running, connected node
//! applies the sequence in order a little later. The network carries the
//! probes and their replies with delays, per-link loss and partitions; a
//! paused node's messages wait for it.
//!
//! Checkers:
//! - agreement: every node's sequence of view changes is a prefix of the
//!   longest one (same views, same order);
//! - no false removal: only nodes killed for good or that asked to leave
//!   are removed (restarts within 3.5 s, pauses up to 4 s, 3% loss on one
//!   node's links, a broken link, a bridge partition and short isolations
//!   remove nobody);
//! - completeness (after the faults end): every killed node and every
//!   leaver is removed, every joiner still running is a member;
//! - detection time: a kill with no other fault near it is removed within
//!   5 s; two such kills at one instant leave in one view change.
//!
//! Broken variants caught: `--bug cut-on-first-alert` (false removals),
//! `--bug no-implicit-edges` (two failed nodes observing each other are
//! never removed).

use crate::rng::Rng;
use crate::runner::{SeedOutcome, SeedStats};
use crate::trace::TraceHash;
use crate::violation::{Property, Violation};
use amulet_membership::{
    Command, Membership, MembershipBug, Monitor, MonitorConfig, MonitorOutput, View, ViewChange,
};
use amulet_types::{NodeId, TimeMicros};
use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, BinaryHeap};

/// How often each node's monitor runs.
const TICK_MICROS: u64 = 50_000;
/// The faults end here; the run goes on for [`HEALED_MICROS`] after.
const FAULTS_MICROS: u64 = 40_000_000;
/// The healed phase.
const HEALED_MICROS: u64 = 30_000_000;
/// The fault phase is cut into slots of this length for silences.
const SLOT_MICROS: u64 = 6_000_000;
/// A clean kill is removed within this long.
const DETECTION_MAX_MICROS: u64 = 5_000_000;

#[derive(Clone, Debug, PartialEq, Eq)]
enum Event {
    Tick(NodeId),
    /// A probe or a reply arrives at `to`.
    Message {
        to: NodeId,
        from: NodeId,
        nonce: u64,
        reply: bool,
    },
    /// A proposal reaches the sequencer, with the id of its proposer.
    Sequence(NodeId, Command),
    Kill(NodeId),
    /// A process crash; it restarts after the given micros with a fresh
    /// monitor and its membership rebuilt from the global order.
    Crash(NodeId, u64),
    Restart(NodeId),
    Pause(NodeId, u64),
    Resume(NodeId),
    Start(NodeId),
    Leave(NodeId),
    Isolate(NodeId, u64),
    Reconnect(NodeId),
    Bridge(Vec<NodeId>, Vec<NodeId>, u64),
    Unbridge,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Run {
    NotStarted,
    Running,
    Paused,
    Dead,
}

struct Node {
    address: String,
    run: Run,
    membership: Membership,
    monitor: Option<Monitor>,
    applied: usize,
    /// Messages that arrived while paused, delivered on resume.
    held: Vec<Event>,
    /// A joiner's id once its `Join` is applied, and when it last asked.
    joined_as: Option<NodeId>,
    asked_at: Option<TimeMicros>,
    /// Asked to leave: proposes `Leave` until its view shows it leaving.
    leaving: bool,
}

struct Sim {
    rng: Rng,
    now: TimeMicros,
    /// Due times and sequence numbers; the events themselves by sequence.
    queue: BinaryHeap<Reverse<(TimeMicros, u64)>>,
    events: BTreeMap<u64, Event>,
    sequence: u64,
    /// Nodes by the id they run as (a joiner's id is known once joined; it
    /// is simulated under a provisional id above every real one until then
    /// and answers under its real one after).
    nodes: BTreeMap<NodeId, Node>,
    /// The global order: when each command was sequenced, who proposed
    /// it, the command.
    log: Vec<(TimeMicros, NodeId, Command)>,
    initial: View,
    bug: MembershipBug,
    config: MonitorConfig,
    /// Loss rate on every link of this node.
    flaky: Option<(NodeId, f64)>,
    /// A pair of nodes that never reach each other.
    broken: Option<(NodeId, NodeId)>,
    isolated: BTreeSet<NodeId>,
    bridge: Option<(Vec<NodeId>, Vec<NodeId>)>,
    killed: BTreeMap<NodeId, TimeMicros>,
    leavers: BTreeSet<NodeId>,
    /// Address of each joiner by its provisional id.
    joiners: BTreeMap<NodeId, String>,
    /// Times at which some fault other than a kill was active, as spans.
    other_faults: Vec<(TimeMicros, TimeMicros)>,
    trace: TraceHash,
    messages: u64,
    verbose: bool,
}

/// Runs one membership seed.
pub fn run_membership_seed(seed: u64, verbose: bool, bug: MembershipBug) -> SeedOutcome {
    let mut sim = Sim::new(seed, verbose, bug);
    sim.run(TimeMicros(FAULTS_MICROS + HEALED_MICROS));
    sim.outcome()
}

impl Sim {
    fn new(seed: u64, verbose: bool, bug: MembershipBug) -> Sim {
        let mut rng = Rng::new(seed ^ 0x6D65_6D62);
        let members = *rng.pick(&[3u32, 4, 5, 5, 7]).expect("non-empty");
        let addresses: Vec<String> = (1..=members).map(|i| format!("10.0.0.{i}:7000")).collect();
        let initial = View::initial(&addresses);
        let config = MonitorConfig::default();
        let mut sim = Sim {
            rng,
            now: TimeMicros(0),
            queue: BinaryHeap::new(),
            events: BTreeMap::new(),
            sequence: 0,
            nodes: BTreeMap::new(),
            log: Vec::new(),
            initial: initial.clone(),
            bug,
            config,
            flaky: None,
            broken: None,
            isolated: BTreeSet::new(),
            bridge: None,
            killed: BTreeMap::new(),
            leavers: BTreeSet::new(),
            joiners: BTreeMap::new(),
            other_faults: Vec::new(),
            trace: TraceHash::new(),
            messages: 0,
            verbose,
        };
        for (index, address) in addresses.iter().enumerate() {
            let id = NodeId(index as u32 + 1);
            sim.nodes.insert(id, sim.node(address.clone(), Some(id)));
            let jitter = sim.rng.below(TICK_MICROS);
            sim.schedule(jitter, Event::Tick(id));
        }
        sim.draw_faults(members);
        sim
    }

    fn node(&self, address: String, id: Option<NodeId>) -> Node {
        Node {
            address,
            run: if id.is_some() {
                Run::Running
            } else {
                Run::NotStarted
            },
            membership: Membership::new(self.initial.clone(), self.bug),
            monitor: id.map(|id| Monitor::new(id, self.config)),
            applied: 0,
            held: Vec::new(),
            joined_as: id,
            asked_at: None,
            leaving: false,
        }
    }

    fn schedule(&mut self, after: u64, event: Event) {
        self.sequence += 1;
        self.queue
            .push(Reverse((self.now.plus(after), self.sequence)));
        self.events.insert(self.sequence, event);
    }

    /// Draws this seed's faults. Kills leave a majority of the first view
    /// alive, so that the (modelled) global stream keeps ordering.
    fn draw_faults(&mut self, members: u32) {
        let all: Vec<NodeId> = (1..=members).map(NodeId).collect();
        let mut candidates = all.clone();
        self.rng.shuffle(&mut candidates);
        let max_kills = ((members - 1) / 2).min(2) as u64;
        let kills = self.rng.range(0, max_kills) as usize;
        let together = self.rng.chance(0.6);
        let first_kill = self.rng.range(2_000_000, 25_000_000);
        for (i, &victim) in candidates.iter().take(kills).enumerate() {
            let at = if together || i == 0 {
                first_kill
            } else {
                self.rng.range(2_000_000, 30_000_000)
            };
            self.schedule(at, Event::Kill(victim));
        }
        let survivors: Vec<NodeId> = candidates[kills..].to_vec();
        // Silences (pauses up to 4 s, isolations up to 3.5 s) and the bridge
        // partition each take a slot of their own: two silences of one
        // node back to back would be one long silence, which is a failure
        // and rightly removes it.
        let mut slots: Vec<u64> = (0..(FAULTS_MICROS - 10_000_000) / SLOT_MICROS).collect();
        self.rng.shuffle(&mut slots);
        let mut slots = slots.into_iter();
        for _ in 0..self.rng.range(0, 3) {
            let Some(slot) = slots.next() else { break };
            self.silence(slot, &survivors, (300_000, 4_000_000), Event::Pause);
        }
        if self.rng.chance(0.3) {
            if let Some(slot) = slots.next() {
                self.silence(slot, &survivors, (300_000, 3_500_000), Event::Isolate);
            }
        }
        // A process that crashes and is restarted within 3.5 s (a deploy,
        // an OOM kill and systemd's restart): no removal.
        if self.rng.chance(0.3) {
            if let Some(slot) = slots.next() {
                self.silence(slot, &survivors, (100_000, 3_500_000), Event::Crash);
            }
        }
        // 3% loss on every link of one node, for the whole fault phase.
        if self.rng.chance(0.4) {
            let node = *self.rng.pick(&survivors).expect("a survivor");
            self.flaky = Some((node, 0.03));
        }
        // One link lost for good between two live nodes.
        if self.rng.chance(0.3) && survivors.len() >= 3 {
            let a = survivors[0];
            let b = survivors[1];
            self.broken = Some((a, b));
        }
        // A bridge partition: two sides that only reach each other through
        // one node, for up to 8 s.
        if self.rng.chance(0.25) && members >= 4 {
            if let Some(slot) = slots.next() {
                // The bridge is a node that stays up: with the bridge dead
                // the sides are cut apart, a partition the smaller side is
                // rightly removed for.
                let mut order = all.clone();
                self.rng.shuffle(&mut order);
                let bridge = *self.rng.pick(&survivors).expect("a survivor");
                let at_bridge = order.iter().position(|&n| n == bridge).expect("a node");
                order.swap(0, at_bridge);
                // order[0] is the bridge: it reaches both sides.
                let split = 1 + self.rng.below(members as u64 - 2) as usize;
                let left: Vec<NodeId> = order[1..=split].to_vec();
                let right: Vec<NodeId> = order[split + 1..].to_vec();
                let at = 1_000_000 + slot * SLOT_MICROS;
                let length = self.rng.range(1_000_000, SLOT_MICROS - 1_000_000);
                self.schedule(at, Event::Bridge(left, right, length));
                self.other_faults
                    .push((TimeMicros(at), TimeMicros(at + length)));
            }
        }
        // A graceful leave by a survivor, if three stay: with two members
        // one lost link looks like a failure from both ends.
        if self.rng.chance(0.2) && survivors.len() >= 4 {
            let node = survivors[survivors.len() - 1];
            let at = self.rng.range(1_000_000, FAULTS_MICROS - 5_000_000);
            self.schedule(at, Event::Leave(node));
        }
        // Up to two joiners.
        for j in 0..self.rng.range(0, 2) {
            let provisional = NodeId(1000 + j as u32);
            let address = format!("10.0.1.{j}:7000");
            self.joiners.insert(provisional, address.clone());
            let node = self.node(address, None);
            self.nodes.insert(provisional, node);
            let at = self.rng.range(1_000_000, FAULTS_MICROS - 5_000_000);
            self.schedule(at, Event::Start(provisional));
        }
        // The flaky link and the broken link are faults for the whole phase.
        if self.flaky.is_some() || self.broken.is_some() {
            self.other_faults
                .push((TimeMicros(0), TimeMicros(FAULTS_MICROS)));
        }
    }

    /// Schedules one silence of a survivor early in `slot`, lasting a
    /// draw from `length` (micros), made by `make(node, length)`; recorded
    /// as a fault for the detection-time check.
    fn silence(
        &mut self,
        slot: u64,
        survivors: &[NodeId],
        length: (u64, u64),
        make: fn(NodeId, u64) -> Event,
    ) {
        let node = *self.rng.pick(survivors).expect("a survivor");
        let at = 1_000_000 + slot * SLOT_MICROS + self.rng.below(SLOT_MICROS / 4);
        let length = self.rng.range(length.0, length.1);
        self.schedule(at, make(node, length));
        self.other_faults
            .push((TimeMicros(at), TimeMicros(at + length)));
    }

    fn faults_on(&self) -> bool {
        self.now.0 < FAULTS_MICROS
    }

    /// The id the process `key` answers as: its own, or its joined id.
    fn id_of(&self, key: NodeId) -> Option<NodeId> {
        self.nodes.get(&key).and_then(|node| node.joined_as)
    }

    /// The process key of the node answering as `id`.
    fn key_of(&self, id: NodeId) -> Option<NodeId> {
        self.nodes
            .iter()
            .find(|(_, node)| node.joined_as == Some(id))
            .map(|(&key, _)| key)
    }

    fn connected(&self, a: NodeId, b: NodeId) -> bool {
        if self.isolated.contains(&a) || self.isolated.contains(&b) {
            return false;
        }
        if self.faults_on() {
            if let Some((x, y)) = self.broken {
                if (a, b) == (x, y) || (a, b) == (y, x) {
                    return false;
                }
            }
            if let Some((left, right)) = &self.bridge {
                if (left.contains(&a) && right.contains(&b))
                    || (left.contains(&b) && right.contains(&a))
                {
                    return false;
                }
            }
        }
        true
    }

    fn lost(&mut self, a: NodeId, b: NodeId) -> bool {
        if !self.faults_on() {
            return false;
        }
        match self.flaky {
            Some((node, rate)) if node == a || node == b => self.rng.chance(rate),
            _ => false,
        }
    }

    /// Sends a probe or reply from process `from_key` to the node answering
    /// as `to_id`.
    fn send(&mut self, from_key: NodeId, to_id: NodeId, nonce: u64, reply: bool) {
        let Some(to_key) = self.key_of(to_id) else {
            return;
        };
        let Some(from_id) = self.id_of(from_key) else {
            return;
        };
        self.messages += 1;
        if !self.connected(from_key, to_key) || self.lost(from_key, to_key) {
            return;
        }
        let delay = self.rng.range(200, 3_000);
        self.schedule(
            delay,
            Event::Message {
                to: to_key,
                from: from_id,
                nonce,
                reply,
            },
        );
    }

    fn propose(&mut self, from_key: NodeId, command: Command) {
        if self.isolated.contains(&from_key) {
            return;
        }
        // Its id in the view (a joiner runs under a provisional key until
        // its join is applied).
        let proposer = self.nodes[&from_key].joined_as.unwrap_or(from_key);
        let delay = self.rng.range(500, 5_000);
        self.schedule(delay, Event::Sequence(proposer, command));
    }

    /// Applies every sequenced command `key` has not applied yet, if it
    /// runs and reaches the stream.
    fn catch_up(&mut self, key: NodeId) {
        if self.isolated.contains(&key) {
            return;
        }
        let now = self.now;
        let log_len = self.log.len();
        let node = self.nodes.get_mut(&key).expect("known");
        if node.run != Run::Running {
            return;
        }
        while node.applied < log_len {
            let (at, proposer, command) = &self.log[node.applied];
            if now.since(*at) < 2_000 {
                break;
            }
            node.membership.apply_proposed(*proposer, command);
            node.applied += 1;
        }
        // A joiner learns its id from the view.
        if node.joined_as.is_none() {
            if let Some(id) = node.membership.view().node_at(&node.address) {
                node.joined_as = Some(id);
                node.monitor = Some(Monitor::new(id, self.config));
            }
        } else if let Some(id) = node.joined_as {
            let view = node.membership.view();
            if view.removed().contains(&id) {
                if self.joiners.contains_key(&key) && !self.leavers.contains(&id) {
                    // A refused joiner asks again under a new id.
                    node.joined_as = None;
                    node.monitor = None;
                    node.asked_at = None;
                } else {
                    // Removed for good: the process stops.
                    node.run = Run::Dead;
                }
            }
        }
    }

    fn tick(&mut self, key: NodeId) {
        match self.nodes[&key].run {
            Run::Dead | Run::NotStarted => return,
            Run::Paused | Run::Running => {
                let jitter = self.rng.range(TICK_MICROS - 5_000, TICK_MICROS + 5_000);
                self.schedule(jitter, Event::Tick(key));
            }
        }
        self.catch_up(key);
        let now = self.now;
        let node = self.nodes.get_mut(&key).expect("known");
        if node.run != Run::Running {
            return;
        }
        if node.joined_as.is_none() {
            // A joiner asks a member to propose its join, again after a while.
            if node.asked_at.is_none_or(|at| now.since(at) >= 2_000_000) {
                node.asked_at = Some(now);
                let command = Command::Join {
                    address: node.address.clone(),
                    client_address: String::new(),
                };
                self.propose(key, command);
            }
            return;
        }
        if node.leaving {
            let id = node.joined_as.expect("a member");
            let active =
                node.membership.view().state(id) == Some(amulet_membership::MemberState::Active);
            if active && node.asked_at.is_none_or(|at| now.since(at) >= 2_000_000) {
                node.asked_at = Some(now);
                self.propose(key, Command::Leave { node: id });
            }
        }
        let node = self.nodes.get_mut(&key).expect("known");
        let Some(monitor) = node.monitor.as_mut() else {
            return;
        };
        let outputs = monitor.tick(&node.membership, now);
        for output in outputs {
            match output {
                MonitorOutput::Probe { to, nonce } => self.send(key, to, nonce, false),
                MonitorOutput::Propose(command) => self.propose(key, command),
            }
        }
    }

    fn handle(&mut self, event: Event) {
        self.trace.event(
            self.now,
            0,
            NodeId(0),
            NodeId(0),
            TraceHash::digest_debug(&event),
        );
        if self.verbose
            && !matches!(
                event,
                Event::Tick(_) | Event::Message { .. } | Event::Sequence(..)
            )
        {
            println!("{:>10} {event:?}", self.now.0);
        }
        match event {
            Event::Tick(key) => self.tick(key),
            Event::Message {
                to,
                from,
                nonce,
                reply,
            } => {
                let node = self.nodes.get_mut(&to).expect("known");
                match node.run {
                    Run::Paused => node.held.push(Event::Message {
                        to,
                        from,
                        nonce,
                        reply,
                    }),
                    Run::Running if reply => {
                        if let Some(monitor) = node.monitor.as_mut() {
                            monitor.on_reply(from, nonce);
                        }
                    }
                    Run::Running => self.send(to, from, nonce, true),
                    Run::NotStarted | Run::Dead => {}
                }
            }
            Event::Sequence(proposer, command) => {
                if self.verbose {
                    println!("{:>10} sequenced {command:?} from {proposer}", self.now.0);
                }
                self.log.push((self.now, proposer, command));
            }
            Event::Kill(key) => {
                self.nodes.get_mut(&key).expect("known").run = Run::Dead;
                self.killed.insert(key, self.now);
            }
            Event::Crash(key, down) => {
                let node = self.nodes.get_mut(&key).expect("known");
                if node.run == Run::Running || node.run == Run::Paused {
                    node.run = Run::NotStarted;
                    node.held.clear();
                    self.schedule(down, Event::Restart(key));
                }
            }
            Event::Restart(key) => {
                let (initial, bug, config) = (self.initial.clone(), self.bug, self.config);
                let node = self.nodes.get_mut(&key).expect("known");
                if node.run == Run::NotStarted {
                    // Its state comes back from the global order (a real
                    // node: its checkpoint and the stream after it); its
                    // monitor starts with nothing heard.
                    node.run = Run::Running;
                    node.membership = Membership::new(initial, bug);
                    node.applied = 0;
                    node.monitor = node.joined_as.map(|id| Monitor::new(id, config));
                    node.asked_at = None;
                    self.schedule(0, Event::Tick(key));
                }
            }
            Event::Pause(key, length) => {
                let node = self.nodes.get_mut(&key).expect("known");
                if node.run == Run::Running {
                    node.run = Run::Paused;
                    self.schedule(length, Event::Resume(key));
                }
            }
            Event::Resume(key) => {
                let node = self.nodes.get_mut(&key).expect("known");
                if node.run == Run::Paused {
                    node.run = Run::Running;
                    let held = std::mem::take(&mut node.held);
                    for event in held {
                        self.schedule(0, event);
                    }
                }
            }
            Event::Start(key) => {
                self.nodes.get_mut(&key).expect("known").run = Run::Running;
                // A joiner changes the observers of others when admitted.
                self.other_faults.push((self.now, self.now.plus(3_000_000)));
                self.schedule(0, Event::Tick(key));
            }
            Event::Leave(key) => {
                let node = self.nodes.get_mut(&key).expect("known");
                if let (Run::Running | Run::Paused, Some(id)) = (node.run, node.joined_as) {
                    node.leaving = true;
                    self.leavers.insert(id);
                    // Its view changes while it is admitted or removed.
                    self.other_faults.push((self.now, self.now.plus(2_000_000)));
                }
            }
            Event::Isolate(key, length) => {
                self.isolated.insert(key);
                self.schedule(length, Event::Reconnect(key));
            }
            Event::Reconnect(key) => {
                self.isolated.remove(&key);
            }
            Event::Bridge(left, right, length) => {
                self.bridge = Some((left, right));
                self.schedule(length, Event::Unbridge);
            }
            Event::Unbridge => self.bridge = None,
        }
    }

    fn run(&mut self, end: TimeMicros) {
        while let Some(Reverse((at, sequence))) = self.queue.pop() {
            if at > end {
                break;
            }
            let event = self.events.remove(&sequence).expect("scheduled");
            self.now = at;
            self.handle(event);
        }
        self.now = end;
    }

    /// When `node` was removed, from the longest history.
    fn removed_at(&self, longest: &[ViewChange], node: NodeId) -> Option<(usize, TimeMicros)> {
        let index = longest
            .iter()
            .position(|change| change.removed.contains(&node))?;
        // The time the Cut that installed it was sequenced: replay the log.
        let mut membership = Membership::new(self.initial.clone(), self.bug);
        for (at, proposer, command) in &self.log {
            membership.apply_proposed(*proposer, command);
            if membership.history().len() > index {
                return Some((index, *at));
            }
        }
        None
    }

    fn outcome(&self) -> SeedOutcome {
        let mut violations = Vec::new();
        // Agreement: every node's view changes are a prefix of the longest.
        let histories: Vec<(NodeId, &[ViewChange])> = self
            .nodes
            .iter()
            .map(|(&key, node)| (key, node.membership.history()))
            .collect();
        let (longest_key, longest) = histories
            .iter()
            .max_by_key(|(_, history)| history.len())
            .copied()
            .expect("nodes");
        for (key, history) in &histories {
            if longest[..history.len()] != **history {
                violations.push(Violation::new(
                    Property::Agreement,
                    format!("node {key:?} installed {history:?}, node {longest_key:?} {longest:?}"),
                ));
            }
        }
        // Removed nodes: only the killed and the leavers.
        let killed_ids: BTreeSet<NodeId> = self
            .killed
            .keys()
            .filter_map(|&key| self.id_of(key))
            .collect();
        for change in longest {
            for node in &change.removed {
                if !killed_ids.contains(node) && !self.leavers.contains(node) {
                    violations.push(Violation::new(
                        Property::Integrity,
                        format!(
                            "node {node:?} was removed in view {:?} but neither failed nor left",
                            change.view
                        ),
                    ));
                }
            }
        }
        // Completeness, after the healed phase, in the longest view.
        let reference = &self.nodes[&longest_key].membership;
        for node in killed_ids.iter().chain(&self.leavers) {
            if reference.view().state(*node).is_some() {
                violations.push(Violation::new(
                    Property::Progress,
                    format!(
                        "node {node:?} failed or left but is still in view {:?}",
                        reference.view().id()
                    ),
                ));
            }
        }
        for (key, node) in &self.nodes {
            if self.joiners.contains_key(key) && node.run == Run::Running {
                let member = node
                    .joined_as
                    .is_some_and(|id| reference.view().is_member(id));
                if !member {
                    violations.push(Violation::new(
                        Property::Progress,
                        format!(
                            "joiner {} is running but not a member of view {:?}",
                            node.address,
                            reference.view().id()
                        ),
                    ));
                }
            }
        }
        // Detection time and one view change, for kills with no other
        // fault near them.
        let clean = |at: TimeMicros| {
            let quiet = |from: TimeMicros, to: TimeMicros| {
                to.0 + 1_000_000 < at.0 || from.0 > at.0 + 6_000_000
            };
            self.other_faults.iter().all(|&(from, to)| quiet(from, to))
                && self
                    .killed
                    .values()
                    .all(|&other| other == at || quiet(other, other))
        };
        let mut removals: BTreeMap<NodeId, (usize, TimeMicros, TimeMicros)> = BTreeMap::new();
        for (&key, &at) in &self.killed {
            let Some(id) = self.id_of(key) else { continue };
            if let Some((index, removed)) = self.removed_at(longest, id) {
                removals.insert(id, (index, at, removed));
                if clean(at) && removed.since(at) > DETECTION_MAX_MICROS {
                    violations.push(Violation::new(
                        Property::Progress,
                        format!(
                            "node {id:?} killed at {} µs was removed only {} µs later",
                            at.0,
                            removed.since(at)
                        ),
                    ));
                }
            }
        }
        let kills: Vec<(NodeId, (usize, TimeMicros, TimeMicros))> = removals.into_iter().collect();
        for pair in kills.windows(2) {
            let ((a, (index_a, at_a, _)), (b, (index_b, at_b, _))) = (pair[0], pair[1]);
            if at_a == at_b && clean(at_a) && index_a != index_b {
                violations.push(Violation::new(
                    Property::Progress,
                    format!("nodes {a:?} and {b:?} were killed together but removed in two view changes"),
                ));
            }
        }
        let stats = SeedStats {
            values_proposed: self.log.len() as u64,
            deliveries: self.messages,
            subscription_changes: longest.len() as u64,
            virtual_micros: self.now.0,
            trace_events: self.trace.events(),
            ..SeedStats::default()
        };
        if self.verbose {
            println!(
                "views: {longest:#?}\nkilled: {:?} leavers: {:?}",
                self.killed, self.leavers
            );
        }
        SeedOutcome {
            violations,
            trace_hash: self.trace.value(),
            stats,
        }
    }
}
