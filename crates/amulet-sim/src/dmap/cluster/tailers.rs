//! Log tailers of `amulet-sim --logs` (DLog, thesis §3.5.2; docs/logs.md):
//! each follows one log through the host's tail reads (what the node's
//! `TailLog` stream serves), at one live replica at a time, and "reconnects"
//! to another now and then (a node's stream broke), resuming at the
//! position after the last entry it got.
//!
//! Checked at the end of the seed:
//! - positions are consecutive across reconnects (no gap, no duplicate),
//!   except where the tail fell below a trim and jumped to the log's first
//!   position (a jump only forward, and only to a position some trim
//!   asked for);
//! - every delivered entry is the value an acknowledged append got at
//!   that position, and two tailers of a log never disagree at one;
//! - trimmed entries are never served by the replica that trimmed them
//!   (a tail below its first position is refused: the jump above); a
//!   replica behind the others may still serve an entry a trim has
//!   dropped elsewhere, as a late reader would have read it;
//! - every entry a live replica still holds at the end agrees with what
//!   tailers delivered at the same position.

use super::DmapCluster;
use crate::dmap::{MapOp, Observed};
use crate::harness::Harness;
use crate::rng::Rng;
use crate::violation::{Property, Violation};
use amulet_dmap::{MapCommand, MapError, MapName, MapReply};
use amulet_host::TailAnswer;
use amulet_types::{MapVersion, NodeId};
use bytes::Bytes;
use std::collections::BTreeMap;

/// Bytes a tail read returns at most: a few entries, so a tailer takes
/// several reads to catch up and reconnects fall between them.
const TAIL_READ_BYTES: usize = 24;

/// One follower of one log.
#[derive(Debug)]
pub(super) struct Tailer {
    log: MapName,
    /// The position of the next entry to deliver.
    next: u64,
    /// The replica it reads from ("connected" to), if any.
    at: Option<NodeId>,
    /// Entries delivered: position, value, virtual time of the read.
    delivered: Vec<(u64, Bytes, u64)>,
    /// Jumps over trimmed positions: from, to.
    jumps: Vec<(u64, u64)>,
    reconnects: u64,
}

/// The tailers of a seed and their own random generator (so the other
/// draws of a seed stay as they were).
#[derive(Debug)]
pub(super) struct Tailers {
    tailers: Vec<Tailer>,
    rng: Rng,
}

impl Tailers {
    /// One or two tailers per log.
    pub(super) fn new(logs: &[MapName], seed: u64) -> Tailers {
        let mut rng = Rng::new(seed ^ 0x7461_696C);
        let mut tailers = Vec::new();
        for log in logs {
            for _ in 0..rng.range(1, 2) {
                tailers.push(Tailer {
                    log: log.clone(),
                    next: 0,
                    at: None,
                    delivered: Vec::new(),
                    jumps: Vec::new(),
                    reconnects: 0,
                });
            }
        }
        Tailers { tailers, rng }
    }

    /// Entries delivered, reconnects (for verbose output).
    pub(super) fn totals(&self) -> (usize, u64) {
        self.tailers.iter().fold((0, 0), |(n, r), t| {
            (n + t.delivered.len(), r + t.reconnects)
        })
    }
}

impl DmapCluster {
    /// One step of every tailer: read what its replica has from its
    /// position, or find another replica.
    pub(super) fn tick_tailers(&mut self, harness: &Harness) {
        let now = harness.now.0;
        let live = harness.live_nodes();
        for t in 0..self.tailers.tailers.len() {
            let rng = &mut self.tailers.rng;
            let tailer = &mut self.tailers.tailers[t];
            // A stream breaks now and then, or with its node.
            let broken = tailer.at.is_none_or(|n| !live.contains(&n)) || rng.chance(0.02);
            if broken {
                if tailer.at.is_some() {
                    tailer.reconnects += 1;
                }
                tailer.at = (!live.is_empty()).then(|| live[rng.below(live.len() as u64) as usize]);
            }
            let Some(node) = tailer.at else { continue };
            let Some(host) = harness.host(node) else {
                tailer.at = None;
                continue;
            };
            match host.tail_read(&tailer.log, tailer.next, TAIL_READ_BYTES, MapVersion(0)) {
                TailAnswer::Read(read) => {
                    if read.from != tailer.next {
                        self.violations.push(Violation::new(
                            Property::Linearizability,
                            format!(
                                "tail of {} at node {node} asked for {} and got entries from {}",
                                tailer.log, tailer.next, read.from
                            ),
                        ));
                    }
                    // Positions as the replica labels them, so a gap it
                    // leaves shows in the delivered sequence.
                    let mut position = read.from;
                    for entry in read.entries {
                        tailer.delivered.push((position, entry, now));
                        position += 1;
                    }
                    tailer.next = position;
                }
                // This replica has not got there yet (another had).
                TailAnswer::Behind { .. } => {}
                TailAnswer::Failed(MapError::LogTrimmed { first, .. }) => {
                    tailer.jumps.push((tailer.next, first));
                    tailer.next = first;
                }
                // Another replica then (the node's stream would end).
                TailAnswer::CatchingUp | TailAnswer::MapBehind | TailAnswer::NotHeld(_) => {
                    tailer.at = None
                }
                TailAnswer::Failed(error) => self.violations.push(Violation::new(
                    Property::Linearizability,
                    format!("tail of {} at node {node} failed: {error}", tailer.log),
                )),
            }
        }
    }

    /// The checks of the module comment, at the end of the seed.
    pub(super) fn check_tails(&mut self, harness: &Harness) {
        // Acknowledged appends, and the trims acknowledged.
        let mut appended: BTreeMap<(MapName, u64), Bytes> = BTreeMap::new();
        let mut trims: BTreeMap<MapName, Vec<u64>> = BTreeMap::new();
        for call in &self.calls {
            let (Some(_), Some(Observed::Reply(reply))) = (call.complete, &call.result) else {
                continue;
            };
            let MapOp::Command(command) = &call.op else {
                continue;
            };
            match (command, reply) {
                (MapCommand::Append { log, value }, MapReply::Position(p)) => {
                    appended.insert((log.clone(), *p), value.clone());
                }
                (MapCommand::MultiAppend { appends }, MapReply::Positions(positions)) => {
                    for ((log, value), p) in appends.iter().zip(positions) {
                        if let Some(p) = p {
                            appended.insert((log.clone(), *p), value.clone());
                        }
                    }
                }
                (MapCommand::TrimLog { log, below }, MapReply::LogBounds { .. }) => {
                    trims.entry(log.clone()).or_default().push(*below);
                }
                _ => {}
            }
        }
        let mut problems = Vec::new();
        let mut seen: BTreeMap<(MapName, u64), Bytes> = BTreeMap::new();
        for (t, tailer) in self.tailers.tailers.iter().enumerate() {
            let name = &tailer.log;
            let mut expected = None;
            for (position, value, _) in &tailer.delivered {
                if let Some(e) = expected {
                    if *position != e {
                        let jumped = tailer
                            .jumps
                            .iter()
                            .any(|&(from, to)| from == e && to == *position && to > from);
                        if !jumped {
                            problems.push(format!(
                                "tailer {t} of {name}: position {position} after {}: a gap or a duplicate",
                                e - 1
                            ));
                        }
                    }
                }
                expected = Some(position + 1);
                if let Some(acked) = appended.get(&(name.clone(), *position)) {
                    if acked != value {
                        problems.push(format!(
                            "tailer {t} of {name}: position {position} holds {value:?}, the append acknowledged there was {acked:?}"
                        ));
                    }
                }
                match seen.get(&(name.clone(), *position)) {
                    Some(other) if other != value => problems.push(format!(
                        "tailers of {name} disagree at position {position}: {other:?} and {value:?}"
                    )),
                    Some(_) => {}
                    None => {
                        seen.insert((name.clone(), *position), value.clone());
                    }
                }
            }
            for &(from, to) in &tailer.jumps {
                let asked = trims
                    .get(name)
                    .is_some_and(|ts| ts.iter().any(|below| *below >= to))
                    // A trim whose reply was lost still took effect.
                    || self.calls.iter().any(|c| {
                        matches!(&c.op, MapOp::Command(MapCommand::TrimLog { log, below }) if log == name && *below >= to)
                    });
                if to <= from || !asked {
                    problems.push(format!(
                        "tailer {t} of {name}: jumped from {from} to {to}, no trim asked for that"
                    ));
                }
            }
        }
        // What live replicas hold at the end agrees with the tails.
        for (node, host) in harness.hosts() {
            for (_, name, log) in host.held_logs() {
                let Ok(read) = log.read(log.first(), usize::MAX, usize::MAX) else {
                    continue;
                };
                for (i, value) in read.entries.iter().enumerate() {
                    let position = read.from + i as u64;
                    if let Some(tailed) = seen.get(&(name.clone(), position)) {
                        if tailed != value {
                            problems.push(format!(
                                "node {node} holds {value:?} at {name}:{position}, a tailer got {tailed:?}"
                            ));
                        }
                    }
                }
            }
        }
        for problem in problems.into_iter().take(5) {
            self.violations
                .push(Violation::new(Property::Linearizability, problem));
        }
    }
}
